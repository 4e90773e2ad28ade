"""ASP generation and solving: the KB program, the facts of a program or mapping under
check, and the clingo calls that answer `kb query` and `kb check`.

The violation rules are the doc's rule expressions translated by `zomboss.expr`: a rule on
mnemonic M yields `violation(Id,P) :- instr(P,M), <bindings>, <a disjunct of not Expr>`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import clingo

from zomboss import docmodel as dm
from zomboss import expr as ex
from zomboss import facts as F
from zomboss.errors import ZombossError


def _lets_inlined(ins: dm.Instr, e: ex.Expr) -> ex.Expr:
    env: dict[str, ex.Expr] = {}
    for name, val in ins.lets:
        env[name] = ex.substitute(val, env)
    return ex.substitute(e, env)


def _instr_binder(kb, pos: str = "P"):
    def bind(r: ex.Ref, var: str) -> list[str]:
        name = r.name
        if name in kb.params:
            return [f"param({name},{var})"]
        if name == "op":
            return [f"instr({pos},{var})"]
        if name == "prev.op":
            return [f"prev({pos},Q)", f"instr(Q,{var})"]
        if name.startswith("prev."):
            return [f"prev({pos},Q)", f"val(Q,{F.term(name[5:])},{var})"]
        if len(r.parts) == 1 and name.lower() in kb.symbols:
            return []
        return [f"val({pos},{F.term(name)},{var})"]

    return bind


def _instr_context(kb) -> ex.AspContext:
    """Fresh variables and bindings for one family of rules about an instruction."""
    return ex.AspContext(_instr_binder(kb), lambda n: n.lower() in kb.symbols)


def _dedupe(lits: Iterable[str]) -> list[str]:
    out: list[str] = []
    for lit in lits:
        if lit not in out:
            out.append(lit)
    return out


def _uses_prev(e: ex.Expr) -> bool:
    return any(r.parts[0] == "prev" for r in ex.refs(e))


def rule_asp(kb, rule: dm.Rule) -> list[str]:
    """Violation rules for one doc rule (all mnemonics it applies to)."""
    rid = F.term(F.Text(rule.id))
    out = []
    if not rule.patterns:
        ctx = _instr_context(kb)
        for conj in ex.asp_dnf(rule.expr, ctx, negate=True):
            out.append(f"violation({rid},0) :- {', '.join(_dedupe(conj)) or '#false'}.")
        return out
    for m in kb.applies[rule.id]:
        ins = kb.instrs[m]
        e = _lets_inlined(ins, rule.expr)
        ctx = _instr_context(kb)
        head = f"violation({rid},P) :- instr(P,{F.term(F.Sym(m))})"
        for conj in ex.asp_dnf(e, ctx, negate=True):
            out.append(f"{head}, {', '.join(_dedupe(conj))}." if conj else f"{head}.")
        if _uses_prev(e):
            out.append(f"{head}, not has_prev(P).")
    return out


def access_asp(kb, ins: dm.Instr, acc: dm.Access, kind: str) -> list[str]:
    ctx = _instr_context(kb)
    lo_alts = ex.asp_terms(_lets_inlined(ins, acc.lo), ctx)
    hi_alts = ex.asp_terms(_lets_inlined(ins, acc.hi), ctx)
    whens = ex.asp_dnf(_lets_inlined(ins, acc.when), ctx, negate=False) if acc.when is not None else [()]
    out = []
    for lo, llits in lo_alts:
        for hi, hlits in hi_alts:
            for w in whens:
                body = _dedupe([f"instr(P,{F.term(F.Sym(ins.name))})", *llits, *hlits, *w])
                out.append(f"access(P,{kind},{F.term(F.Sym(acc.memory))},{lo},{hi}) :- {', '.join(body)}.")
    return out


def hazard_asp(h: dm.Hazard) -> str:
    rid = F.term(F.Text(h.id))
    r, w, f = (F.term(F.Sym(x)) for x in (h.reader, h.writer, h.fence))
    rm, wm = F.term(F.Sym(h.read_mem)), F.term(F.Sym(h.write_mem))
    return (
        f"violation({rid},P2) :- instr(P2,{r}), access(P2,read,{rm},L2,H2), instr(P1,{w}), "
        f"access(P1,write,{wm},L1,H1), P1 < P2, epoch(P1,{f},E), epoch(P2,{f},E), L1 < H2, L2 < H1."
    )


def _mapping_context(kb, ms: dm.MappingSpace) -> ex.AspContext:
    """Names of a mapping expression bound to the facts of the mapping under check."""
    symbolic = {k.name for k in ms.knobs if k.values}
    numeric = {k.name for k in ms.knobs if not k.values} | {
        k for w in kb.doc.workloads if w.op == ms.op for k in w.keys
    }

    def bind(r: ex.Ref, var: str) -> list[str]:
        # knobs and workload keys before symbols: a key may share a knob value's name (bias)
        if r.name in kb.params:
            return [f"param({r.name},{var})"]
        if r.name in symbolic:
            return [f"msym({F.term(r.name)},{var})"]
        if r.name in numeric:
            return [f"mval({F.term(r.name)},{var})"]
        if len(r.parts) == 1 and r.name.lower() in kb.symbols:
            return []
        return [f"mval({F.term(r.name)},{var})"]

    return ex.AspContext(bind, lambda n: n.lower() in kb.symbols)


def constraint_asp(kb, ms: dm.MappingSpace, c: dm.Constraint) -> list[str]:
    ctx = _mapping_context(kb, ms)
    head = f"mviolation({F.term(F.Text(c.id))}) :- mapping_op({F.term(F.Sym(ms.op))})"
    return [
        f"{head}, {', '.join(_dedupe(conj))}." if conj else f"{head}." for conj in ex.asp_dnf(c.expr, ctx, negate=True)
    ]


def knob_active_asp(kb, ms: dm.MappingSpace, k: dm.Knob) -> list[str]:
    """`knob_active(Op,"k")` where the knob's condition holds (kb/mapping.lp makes
    unconditional knobs active and gives inactive ones their canonical value)."""
    if k.when is None:
        return []
    ctx = _mapping_context(kb, ms)
    head = f"knob_active({F.term(F.Sym(ms.op))},{F.term(F.Text(k.name))}) :- mapping_op({F.term(F.Sym(ms.op))})"
    return [
        f"{head}, {', '.join(_dedupe(conj))}." if conj else f"{head}." for conj in ex.asp_dnf(k.when, ctx, negate=False)
    ]


def canonical_symbol(k: dm.Knob) -> str:
    """The value a symbolic knob takes outside its condition: the declared one, else the first."""
    d = k.default
    if isinstance(d, ex.Sym | ex.Ref):
        return d.name
    return k.values[0]


def mapping_facts(kb, ms: dm.MappingSpace) -> list[F.Fact]:
    op = F.Sym(ms.op)
    out: list[F.Fact] = []
    for k in ms.knobs:
        out.append(F.KnobFact(op, F.Text(k.name)))
        if k.values:
            out += [F.KnobValueFact(op, F.Text(k.name), F.Sym(v)) for v in k.values]
        else:
            assert k.lo is not None and k.hi is not None
            lo, hi = ex.evaluate(k.lo, kb.params), ex.evaluate(k.hi, kb.params)
            out.append(F.KnobRangeFact(op, F.Text(k.name), int(lo), int(hi)))  # type: ignore[call-overload]
        if k.when is not None:
            out.append(F.KnobConditionalFact(op, F.Text(k.name)))
            if k.values:
                out.append(F.KnobDefaultFact(op, F.Text(k.name), F.Sym(canonical_symbol(k))))
    out += [F.ConstraintFact(op, F.Text(c.id)) for c in ms.constraints]
    return out


def mapping_rules(kb, ms: dm.MappingSpace, constraints: Iterable[dm.Constraint] | None = None) -> list[str]:
    """Violation rules of the constraints (all of them by default) and the knobs' activity rules."""
    rules: list[str] = []
    for c in ms.constraints if constraints is None else constraints:
        rules += constraint_asp(kb, ms, c)
    for k in ms.knobs:
        rules += knob_active_asp(kb, ms, k)
    return rules


def enumeration_program(kb, ms: dm.MappingSpace) -> str:
    """The small program skeleton enumeration grounds: this op's knob facts, the parameters
    its constraints read, the constraints that read no integer knob (the others need tile
    sizes, which CP-SAT decides), the activity rules and kb/mapping.lp."""
    from zomboss.knowledge import library_text

    integer = {k.name for k in ms.knobs if not k.values}
    cons = [c for c in ms.constraints if not {r.name for r in ex.refs(c.expr)} & integer]
    used = {r.name for c in cons for r in ex.refs(c.expr)} | {
        r.name for k in ms.knobs if k.when is not None for r in ex.refs(k.when)
    }
    facts: list[F.Fact] = [F.ParamFact(F.Sym(p), v) for p, v in kb.params.items() if p in used]
    facts += mapping_facts(kb, ms)
    return "\n".join([F.render(facts), *mapping_rules(kb, ms, cons), library_text()]) + "\n"


def kb_facts(kb) -> list[F.Fact]:
    out: list[F.Fact] = [F.TargetFact(F.Sym(kb.target))]
    out += [F.ParamFact(F.Sym(k), v) for k, v in kb.params.items()]
    for m in kb.memories.values():
        out.append(F.MemoryFact(F.Sym(m.name)))
        if m.external:
            out.append(F.ExternalFact(F.Sym(m.name)))
        if m.rows is not None:
            out.append(F.CapacityFact(F.Sym(m.name), m.rows))
        if m.width is not None:
            out.append(F.RowWidthFact(F.Sym(m.name), m.width))
        out += [
            F.ElemTypeFact(F.Sym(m.name), F.Sym(m.type)),
            F.BanksFact(F.Sym(m.name), m.banks),
            F.PortsFact(F.Sym(m.name), m.ports),
        ]
    out += [F.RegFileFact(F.Sym(r.name), r.count, r.width) for r in kb.regfiles.values()]
    for lay in kb.layouts.values():
        out += [F.LayoutFieldFact(F.Sym(lay.name), F.Text(n), hi, lo) for n, (hi, lo) in lay.bits.items()]
    for s, (_, fields) in kb.states.items():
        out += [F.StateFieldFact(F.Sym(s), F.Text(k), v) for k, v in fields.items()]
    for ins in kb.instrs.values():
        m = F.Sym(ins.name)
        out.append(F.InstructionFact(m))
        out.append(F.UnitFact(m, F.Sym(ins.unit or "none")))
        for i, o in enumerate(ins.operands):
            out.append(F.OperandFact(m, i, F.Text(o.name), F.Sym(o.kind)))
            if o.lo is not None and o.hi is not None:
                lo, hi = ex.evaluate(o.lo, kb.params), ex.evaluate(o.hi, kb.params)
                out.append(F.OperandRangeFact(m, F.Text(o.name), int(lo), int(hi)))  # type: ignore[call-overload]
        out += [F.ReadsFact(m, F.Sym(a.memory)) for a in ins.reads]
        out += [F.WritesFact(m, F.Sym(a.memory)) for a in ins.writes]
        out += [F.SetsFact(m, F.Sym(s.state), F.Text(s.field)) for s in ins.sets]
        out += [F.UsesFact(m, F.Sym(u.state)) for u in ins.uses]
    for r in kb.rules:
        rid = F.Text(r.id)
        out += [
            F.RuleFact(rid),
            F.RuleMessageFact(rid, F.Text(r.message)),
            F.RuleSourceFact(rid, F.Text(r.loc.file), r.loc.line),
        ]
        out.append(F.RuleTextFact(rid, F.Text(ex.show(r.expr))))
        out += [F.RuleAppliesFact(rid, F.Sym(m)) for m in kb.applies.get(r.id, [])]
    for h in kb.doc.hazards:
        rid = F.Text(h.id)
        out += [
            F.RuleFact(rid),
            F.RuleMessageFact(rid, F.Text(h.message)),
            F.RuleSourceFact(rid, F.Text(h.loc.file), h.loc.line),
        ]
        out.append(F.HazardFact(rid, F.Sym(h.reader), F.Sym(h.read_mem), F.Sym(h.writer), F.Sym(h.fence)))
        out.append(F.RuleAppliesFact(rid, F.Sym(h.reader)))
    for w in kb.doc.workloads:
        out += [F.WorkloadKeyFact(F.Sym(w.op), F.Text(k)) for k in w.keys]
    for ms in kb.doc.mappings:
        out += mapping_facts(kb, ms)
    return out


def kb_program(kb, library: str) -> tuple[str, dict[str, int]]:
    """The self-contained ASP text of a KB and its fact/rule counts."""
    facts = kb_facts(kb)
    rules: list[str] = []
    for r in kb.rules:
        rules += rule_asp(kb, r)
    hazard_mems = {(h.reader, h.read_mem, "read") for h in kb.doc.hazards} | {
        (h.writer, h.write_mem, "write") for h in kb.doc.hazards
    }
    for ins in kb.instrs.values():
        for acc in ins.reads:
            if (ins.name, acc.memory, "read") in hazard_mems:
                rules += access_asp(kb, ins, acc, "read")
        for acc in ins.writes:
            if (ins.name, acc.memory, "write") in hazard_mems:
                rules += access_asp(kb, ins, acc, "write")
    rules += [hazard_asp(h) for h in kb.doc.hazards]
    for ms in kb.doc.mappings:
        rules += mapping_rules(kb, ms)
    lib_rules = sum(1 for line in library.splitlines() if ":-" in line and not line.lstrip().startswith("%"))
    text = "\n".join(
        [
            f"% Zomboss knowledge base for {kb.target} (generated from {kb.doc.path}; do not edit)",
            "% ---- facts from the ISA doc ----",
            F.render(facts),
            "% ---- legality: one violation rule per disjunct of each doc rule's negation ----",
            *rules,
            library,
        ]
    )
    return text + "\n", {
        "facts": len(facts),
        "rules": len(rules) + lib_rules,
        "doc_rules": len(kb.rules) + len(kb.doc.hazards),
    }


# ---------------------------------------------------------------------------------------
# Solving
# ---------------------------------------------------------------------------------------


class QueryError(ZombossError):
    pass


def solve_atoms(program: str, extra: str = "") -> list[clingo.Symbol]:
    """The atoms of the (unique, stratified) model of program + extra."""
    ctl = clingo.Control(["--warn=none"])
    try:
        ctl.add("base", [], program)
        if extra:
            ctl.add("base", [], extra)
        ctl.ground([("base", [])])
    except RuntimeError as e:
        raise QueryError(f"ASP error: {e}") from None
    atoms: list[clingo.Symbol] = []
    with ctl.solve(yield_=True) as handle:
        for model in handle:
            atoms = list(model.symbols(atoms=True))
            break
        else:
            raise QueryError("the knowledge base is unsatisfiable")
    return atoms


_VAR_ANON = re.compile(r"(?<![A-Za-z0-9_\"])_(?![A-Za-z0-9_])")


def query(program: str, pattern: str) -> list[str]:
    """Atoms of the KB's model matching an ASP atom pattern with variables (`capacity(M,R)`)."""
    pat = pattern.strip().rstrip(".")
    if not re.match(r"^[a-z_][A-Za-z0-9_]*(\(.*\))?$", pat, re.S):
        raise QueryError(f"{pattern!r}: expected an atom such as 'param(dim,V)' or 'capacity(spad,R)'")
    counter = iter(range(10**6))
    pat = _VAR_ANON.sub(lambda _: f"Anon{next(counter)}", pat)
    try:
        atoms = solve_atoms(program, f"zomboss_query({pat}) :- {pat}.\n")
    except QueryError as e:
        raise QueryError(f"{pattern!r}: {e}") from None
    out = [str(a.arguments[0]) for a in atoms if a.name == "zomboss_query" and len(a.arguments) == 1]
    return sorted(out, key=_natural)


def _natural(s: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


@dataclass(frozen=True)
class AspViolation:
    rule: str
    pos: int


ASP_INT_MIN, ASP_INT_MAX = -(1 << 31), (1 << 31) - 1  # clingo integers are 32-bit


def _referenced(kb) -> dict[str, tuple[set[str], set[str]]]:
    """Per mnemonic: names its ASP rules read from itself and from its previous instruction."""
    cached = getattr(kb, "_asp_refs", None)
    if cached is not None:
        return cached
    out: dict[str, tuple[set[str], set[str]]] = {m: (set(), set()) for m in kb.instrs}
    for r in kb.rules:
        for m in kb.applies.get(r.id, ()):
            for ref in ex.refs(_lets_inlined(kb.instrs[m], r.expr)):
                (out[m][1].add(ref.name[5:]) if ref.name.startswith("prev.") else out[m][0].add(ref.name))
    for ins in kb.instrs.values():
        for acc in ins.reads + ins.writes:
            for e in (acc.lo, acc.hi, acc.when):
                if e is not None:
                    out[ins.name][0].update(ref.name for ref in ex.refs(_lets_inlined(ins, e)))
    kb._asp_refs = out
    return out


def _fits(v: int) -> bool:
    return ASP_INT_MIN <= int(v) <= ASP_INT_MAX


def asp_blind(kb, events: Iterable[tuple[int, str, Mapping[str, int], int | None, Mapping[str, int]]]) -> set[int]:
    """Positions whose rules read a value clingo cannot represent (e.g. a u32 register above
    2^31-1). Such values get no fact, so only the Python predicates decide there."""
    refs = _referenced(kb)
    big: dict[int, set[str]] = {}
    blind: set[int] = set()
    for pos, op, vals, prev, _ in events:
        big[pos] = {k for k, v in vals.items() if not _fits(v)}
        own, from_prev = refs.get(op, (set(), set()))
        if big[pos] & own or (prev is not None and big.get(prev, set()) & from_prev):
            blind.add(pos)
    return blind


def _needed(kb) -> dict[str, set[str]]:
    """Per mnemonic: the values any rule can read (its own rules and accesses, plus what the
    next instruction of its unit reads through `prev.`); other values get no fact."""
    cached = getattr(kb, "_asp_needed", None)
    if cached is not None:
        return cached
    refs = _referenced(kb)
    by_unit: dict[str, set[str]] = {}
    for m, ins in kb.instrs.items():
        by_unit.setdefault(ins.unit, set()).update(refs[m][1])
    out = {m: refs[m][0] | by_unit.get(ins.unit, set()) for m, ins in kb.instrs.items()}
    kb._asp_needed = out
    return out


def program_facts(kb, events: Iterable[tuple[int, str, Mapping[str, int], int | None, Mapping[str, int]]]) -> str:
    """Facts for a dynamic instruction stream: (pos, mnemonic, values, prev pos, epochs).

    Only values some rule reads are rendered (a 70k-instruction Gemmini stream would otherwise
    be ~50 MB of facts), and values beyond clingo's integers get no fact (see asp_blind). This is
    the hot path of `kb check`, so it renders with the fact records' term syntax directly."""
    needed = _needed(kb)
    sym = functools.cache(lambda x: F.term(F.Sym(x)))
    text = functools.cache(lambda x: F.term(F.Text(x)))
    lines: list[str] = []
    for pos, op, vals, prev, epochs in events:
        lines.append(f"instr({pos},{sym(op)}).")
        want = needed.get(op, ())
        lines += [f"val({pos},{text(k)},{int(v)})." for k, v in vals.items() if k in want and _fits(v)]
        if prev is not None:
            lines.append(f"prev({pos},{prev}).")
        lines += [f"epoch({pos},{sym(f)},{n})." for f, n in epochs.items()]
    return "\n".join(lines) + "\n"


def check_program(kb, facts: str) -> list[AspViolation]:
    atoms = solve_atoms(kb.asp, facts)
    found = {
        AspViolation(a.arguments[0].string, a.arguments[1].number)
        for a in atoms
        if a.name == "violation" and len(a.arguments) == 2 and a.arguments[1].number > 0
    }
    return sorted(found, key=lambda v: (v.pos, v.rule))


def check_mapping(kb, op: str, values: Mapping[str, int | str]) -> list[str]:
    facts: list[F.Fact] = [F.MappingOpFact(F.Sym(op))]
    for k, v in values.items():
        facts.append(F.MsymFact(F.Text(k), F.Sym(v)) if isinstance(v, str) else F.MvalFact(F.Text(k), int(v)))
    atoms = solve_atoms(kb.asp, F.render(facts))
    return sorted({a.arguments[0].string for a in atoms if a.name == "mviolation"})


def mapping_core(kb, op: str, values: Mapping[str, int | str]) -> list[str]:
    """A minimal set of the mapping's assignments that cannot hold together (clingo's
    unsatisfiable core under assumptions), e.g. ['tile_i=8', 'tile_k=16']."""
    facts: list[str] = [F.MappingOpFact(F.Sym(op)).asp()]
    atoms: dict[str, str] = {}
    for k, v in values.items():
        fact = (F.MsymFact(F.Text(k), F.Sym(v)) if isinstance(v, str) else F.MvalFact(F.Text(k), int(v))).asp()
        atoms[fact[:-1]] = f"{k}={v}"
        facts.append("{" + fact[:-1] + "}.")
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], kb.asp + "\n" + "\n".join(facts) + "\n:- mviolation(_).\n")
    ctl.ground([("base", [])])
    lit_of = {}
    for sa in ctl.symbolic_atoms:
        s = str(sa.symbol)
        if s in atoms:
            lit_of[sa.literal] = atoms[s]
    core: list[int] = []
    result = ctl.solve(assumptions=list(lit_of), on_core=lambda c: core.extend(c))
    if result.satisfiable:
        return []
    # shrink to a minimal core: drop assumptions one at a time while still unsatisfiable
    cur = [lit for lit in core if lit in lit_of]
    for lit in list(cur):
        trial = [x for x in cur if x != lit]
        if not ctl.solve(assumptions=trial).satisfiable:
            cur = trial
    return [lit_of[x] for x in cur]
