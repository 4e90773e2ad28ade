"""ASP generation: the KB program (facts, one violation rule per way a doc rule can be false
or undefined, hazards, mapping constraints, the rule library `lp/*.lp`), the smaller programs
that check programs (`check_asp`) and enumerate mappings (`enumeration_program`), and the facts
of a program under check (`program_facts`).

The violation rules are the doc's rule expressions translated by `zomboss.expr`: a rule on
mnemonic M yields `violation(Id,P) :- instr(P,M), <bindings>, <one way Expr is false or
undefined>` (parameters inlined as numbers). Values clingo's 32-bit integers cannot hold get
no `val` fact but a `wide` marker (`zomboss.knowledge.query` says where clingo therefore
cannot decide).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from zomboss import expr as ex
from zomboss.doc import DocError
from zomboss.doc import model as dm
from zomboss.knowledge import facts as F
from zomboss.knowledge.records import KB


@functools.cache
def library_files() -> dict[str, str]:
    """The workload-invariant rule library (`zomboss/knowledge/lp/*.lp`) by file name, in name
    order: read once per process, whichever part of the KB asks first."""
    root = resources.files("zomboss.knowledge").joinpath("lp")
    entries = sorted((e for e in root.iterdir() if e.name.endswith(".lp")), key=lambda e: e.name)
    return {e.name: e.read_text() for e in entries}


def library_text() -> str:
    """The whole rule library, concatenated in name order."""
    return "\n".join(f"% ---- kb/{name} ----\n" + text for name, text in library_files().items())


WideCheck = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]  # (values, previous values) -> beyond 32 bits
MappingWideCheck = Callable[[Mapping[str, Any]], bool]  # a mapping's values -> beyond 32 bits


@dataclass
class Derived:
    """What the ASP layers derive from one KB on first use (not stored in the cache): built
    once per KB, dropped with it."""

    exprs: dict[str, list[ex.Expr]] | None = None
    needed: dict[str, set[str]] | None = None
    check: str | None = None
    wide: dict[str, WideCheck] | None = None
    mapping_wide: dict[str, dict[str, MappingWideCheck]] = field(default_factory=dict)


_DERIVED: dict[int, Derived] = {}  # by id(kb); an entry leaves with its KB (weakref.finalize)


def derived(kb: KB) -> Derived:
    d = _DERIVED.get(id(kb))
    if d is None:
        d = _DERIVED[id(kb)] = Derived()
        weakref.finalize(kb, _DERIVED.pop, id(kb), None)
    return d


_lets_inlined = dm.inline_lets


def prepared(kb: KB, ins: dm.Instr | None, e: ex.Expr) -> ex.Expr:
    """What the ASP translation (and the wide-value check) of `e` works on: the instruction's
    lets inlined, parameters replaced by their values, constant parts folded."""
    return ex.fold(_lets_inlined(ins, e) if ins is not None else e, kb.params)


def _const(name: str) -> str:
    return F.term(F.Sym(name))


def _instr_binder(kb: KB, pos: str = "P") -> Callable[[ex.Ref, str], list[str]]:
    def bind(r: ex.Ref, var: str) -> list[str]:
        name = r.name
        if name in kb.params:
            return [f"param({_const(name)},{var})"]
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


def _instr_absent(kb: KB, ins: dm.Instr | None, pos: str = "P") -> Callable[[ex.Ref], list[ex.Conj]]:
    """Where a value the Python checker may lack is missing (the rule then fails in both):
    anything of the previous instruction, and register contents. A value withheld because
    it is beyond 32 bits is marked wide/2 instead; the checker leaves such places to Python."""
    regs = {f"{o.name}.val" for o in ins.operands if o.kind in kb.regfiles} if ins is not None else set()

    def absent(r: ex.Ref) -> list[ex.Conj]:
        name = r.name
        if name == "prev.op":
            return [(f"not has_prev({pos})",)]
        if name.startswith("prev."):
            t = F.term(name[5:])
            return [(f"not has_prev({pos})",), (f"prev({pos},Q)", f"not val(Q,{t},_)", f"not wide(Q,{t})")]
        if name in regs:
            t = F.term(name)
            return [(f"not val({pos},{t},_)", f"not wide({pos},{t})")]
        return []

    return absent


def _instr_context(kb: KB, ins: dm.Instr | None = None) -> ex.AspContext:
    """Fresh variables and bindings for one family of rules about an instruction."""
    return ex.AspContext(
        _instr_binder(kb), lambda n: n.lower() in kb.symbols, absent=_instr_absent(kb, ins), constant=_const
    )


def _dedupe(lits: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(lits))


def _located(where: dm.Loc, what: str, err: Exception) -> DocError:
    return DocError(f"{where}: {what}: {err}")


def rule_asp(kb: KB, rule: dm.Rule) -> list[str]:
    """Violation rules for one doc rule (all mnemonics it applies to): one per way the rule's
    expression can be false or undefined."""
    rid = F.term(F.Text(rule.id))
    out = []
    if not rule.patterns:
        e = prepared(kb, None, rule.expr)
        try:
            conjs = ex.asp_violated(e, _instr_context(kb))
        except ex.ExprError as err:
            raise _located(rule.loc, f"rule {rule.id}", err) from None
        return _dedupe(f"violation({rid},0) :- {', '.join(_dedupe(c)) or '#true'}." for c in conjs)
    for m in kb.applies[rule.id]:
        ins = kb.instrs[m]
        head = f"violation({rid},P) :- instr(P,{_const(m)})"
        try:
            conjs = ex.asp_violated(prepared(kb, ins, rule.expr), _instr_context(kb, ins))
        except ex.ExprError as err:
            raise _located(rule.loc, f"rule {rule.id} (on {m})", err) from None
        out += [f"{head}, {', '.join(_dedupe(c))}." if c else f"{head}." for c in conjs]
    return _dedupe(out)


def access_asp(kb: KB, ins: dm.Instr, acc: dm.Access, kind: str) -> list[str]:
    ctx = _instr_context(kb, ins)
    try:
        lo_alts = ex.asp_terms(prepared(kb, ins, acc.lo), ctx)
        hi_alts = ex.asp_terms(prepared(kb, ins, acc.hi), ctx)
        whens = ex.asp_truth(prepared(kb, ins, acc.when), ctx, True) if acc.when is not None else [()]
        ctx.check(len(lo_alts) * len(hi_alts) * len(whens), acc.lo)
    except ex.ExprError as err:
        raise _located(acc.loc, f"{ins.name} {kind}s {acc.memory}", err) from None
    out = []
    for lo, llits in lo_alts:
        for hi, hlits in hi_alts:
            for w in whens:
                body = _dedupe([f"instr(P,{_const(ins.name)})", *llits, *hlits, *w])
                out.append(f"access(P,{kind},{_const(acc.memory)},{lo},{hi}) :- {', '.join(body)}.")
    return _dedupe(out)


def hazard_asp(h: dm.Hazard) -> str:
    rid = F.term(F.Text(h.id))
    r, w, f = (F.term(F.Sym(x)) for x in (h.reader, h.writer, h.fence))
    rm, wm = F.term(F.Sym(h.read_mem)), F.term(F.Sym(h.write_mem))
    return (
        f"violation({rid},P2) :- instr(P2,{r}), access(P2,read,{rm},L2,H2), instr(P1,{w}), "
        f"access(P1,write,{wm},L1,H1), P1 < P2, epoch(P1,{f},E), epoch(P2,{f},E), L1 < H2, L2 < H1."
    )


def _mapping_context(kb: KB, ms: dm.MappingSpace) -> ex.AspContext:
    """Names of a mapping expression bound to the facts of the mapping under check."""
    symbolic = {k.name for k in ms.knobs if k.values}
    numeric = {k.name for k in ms.knobs if not k.values} | {
        k for w in kb.doc.workloads if w.op == ms.op for k in w.keys
    }

    def bind(r: ex.Ref, var: str) -> list[str]:
        # knobs and workload keys before symbols: a key may share a knob value's name (bias)
        if r.name in kb.params:
            return [f"param({_const(r.name)},{var})"]
        if r.name in symbolic:
            return [f"msym({F.term(r.name)},{var})"]
        if r.name in numeric:
            return [f"mval({F.term(r.name)},{var})"]
        if len(r.parts) == 1 and r.name.lower() in kb.symbols:
            return []
        return [f"mval({F.term(r.name)},{var})"]

    return ex.AspContext(bind, lambda n: n.lower() in kb.symbols, constant=_const)


def constraint_asp(kb: KB, ms: dm.MappingSpace, c: dm.Constraint) -> list[str]:
    ctx = _mapping_context(kb, ms)
    head = f"mviolation({F.term(F.Text(c.id))}) :- mapping_op({_const(ms.op)})"
    try:
        conjs = ex.asp_violated(prepared(kb, None, c.expr), ctx)
    except ex.ExprError as err:
        raise _located(c.loc, f"constraint {c.id}", err) from None
    return _dedupe(f"{head}, {', '.join(_dedupe(conj))}." if conj else f"{head}." for conj in conjs)


def knob_active_asp(kb: KB, ms: dm.MappingSpace, k: dm.Knob) -> list[str]:
    """`knob_active(Op,"k")` where the knob's condition holds (zomboss/knowledge/lp/mapping.lp makes
    unconditional knobs active and gives inactive ones their canonical value)."""
    if k.when is None:
        return []
    ctx = _mapping_context(kb, ms)
    head = f"knob_active({_const(ms.op)},{F.term(F.Text(k.name))}) :- mapping_op({_const(ms.op)})"
    try:
        conjs = ex.asp_truth(prepared(kb, None, k.when), ctx, True)
    except ex.ExprError as err:
        raise _located(k.loc, f"the condition of knob {k.name}", err) from None
    return _dedupe(f"{head}, {', '.join(_dedupe(conj))}." if conj else f"{head}." for conj in conjs)


def canonical_symbol(k: dm.Knob) -> str:
    """The value a symbolic knob takes outside its condition: the declared one, else the first."""
    d = k.default
    if isinstance(d, ex.Sym | ex.Ref):
        return d.name
    return k.values[0]


def mapping_facts(kb: KB, ms: dm.MappingSpace) -> list[F.Fact]:
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


def mapping_rules(kb: KB, ms: dm.MappingSpace, constraints: Iterable[dm.Constraint] | None = None) -> list[str]:
    """Violation rules of the constraints (all of them by default) and the knobs' activity rules."""
    rules: list[str] = []
    for c in ms.constraints if constraints is None else constraints:
        rules += constraint_asp(kb, ms, c)
    for k in ms.knobs:
        rules += knob_active_asp(kb, ms, k)
    return rules


def enumeration_program(kb: KB, ms: dm.MappingSpace) -> str:
    """The small program skeleton enumeration grounds: this op's knob facts, the parameters
    its constraints read, the constraints that read no integer knob (the others need tile
    sizes, which CP-SAT decides), the activity rules and zomboss/knowledge/lp/mapping.lp."""
    integer = {k.name for k in ms.knobs if not k.values}
    cons = [c for c in ms.constraints if not {r.name for r in ex.refs(c.expr)} & integer]
    used = {r.name for c in cons for r in ex.refs(c.expr)} | {
        r.name for k in ms.knobs if k.when is not None for r in ex.refs(k.when)
    }
    facts: list[F.Fact] = [F.ParamFact(F.Sym(p), v) for p, v in kb.params.items() if p in used]
    facts += mapping_facts(kb, ms)
    return "\n".join([F.render(facts, wide=True), *mapping_rules(kb, ms, cons), library_text()]) + "\n"


def kb_facts(kb: KB, *, mappings: bool = True) -> list[F.Fact]:
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
        mn = F.Sym(ins.name)
        out.append(F.InstructionFact(mn))
        out.append(F.UnitFact(mn, F.Sym(ins.unit or "none")))
        for i, o in enumerate(ins.operands):
            out.append(F.OperandFact(mn, i, F.Text(o.name), F.Sym(o.kind)))
            if o.lo is not None and o.hi is not None:
                lo, hi = ex.evaluate(o.lo, kb.params), ex.evaluate(o.hi, kb.params)
                out.append(F.OperandRangeFact(mn, F.Text(o.name), int(lo), int(hi)))  # type: ignore[call-overload]
        out += [F.ReadsFact(mn, F.Sym(a.memory)) for a in ins.reads]
        out += [F.WritesFact(mn, F.Sym(a.memory)) for a in ins.writes]
        out += [F.SetsFact(mn, F.Sym(s.state), F.Text(s.field)) for s in ins.sets]
        out += [F.UsesFact(mn, F.Sym(u.state)) for u in ins.uses]
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
    for ms in kb.doc.mappings if mappings else ():
        out += mapping_facts(kb, ms)
    return out


def _hazard_accesses(kb: KB) -> set[tuple[str, str, str]]:
    """(mnemonic, memory, read|write) of the accesses some hazard reads."""
    return {(h.reader, h.read_mem, "read") for h in kb.doc.hazards} | {
        (h.writer, h.write_mem, "write") for h in kb.doc.hazards
    }


def kb_program(kb: KB, library: str, *, mappings: bool = True) -> tuple[str, dict[str, int]]:
    """The self-contained ASP text of a KB and its fact/rule counts. Integers beyond clingo's
    32 bits appear in facts as strings of their digits (counted as `wide_facts`). Without
    `mappings`, the mapping spaces' facts and rules are left out (see `check_asp`)."""
    facts = kb_facts(kb, mappings=mappings)
    rules: list[str] = []
    for r in kb.rules:
        rules += rule_asp(kb, r)
    hazard_mems = _hazard_accesses(kb)
    for ins in kb.instrs.values():
        for acc in ins.reads:
            if (ins.name, acc.memory, "read") in hazard_mems:
                rules += access_asp(kb, ins, acc, "read")
        for acc in ins.writes:
            if (ins.name, acc.memory, "write") in hazard_mems:
                rules += access_asp(kb, ins, acc, "write")
    rules += [hazard_asp(h) for h in kb.doc.hazards]
    for ms in kb.doc.mappings if mappings else ():
        rules += mapping_rules(kb, ms)
    lib_rules = sum(1 for line in library.splitlines() if ":-" in line and not line.lstrip().startswith("%"))
    origin = " ".join(f"{kb.target} (generated from {kb.doc.path}; do not edit)".split())  # one comment line
    text = "\n".join(
        [
            f"% Zomboss knowledge base for {origin}",
            "% ---- facts from the ISA doc (integers beyond 32 bits are strings) ----",
            F.render(facts, wide=True),
            "% ---- legality: one violation rule per way each doc rule can be false or undefined ----",
            "#defined wide/2.",
            *rules,
            library,
        ]
    )
    return text + "\n", {
        "facts": len(facts),
        "rules": len(rules) + lib_rules,
        "doc_rules": len(kb.rules) + len(kb.doc.hazards),
        "wide_facts": sum(1 for f in facts if f.is_wide()),
    }


Event = tuple[int, str, Mapping[str, int], "int | None", Mapping[str, int]]


def asp_exprs(kb: KB) -> dict[str, list[ex.Expr]]:
    """Per mnemonic: every expression its ASP rules evaluate (prepared as translated)."""
    memo = derived(kb)
    if memo.exprs is not None:
        return memo.exprs
    out: dict[str, list[ex.Expr]] = {m: [] for m in kb.instrs}
    for r in kb.rules:
        for m in kb.applies.get(r.id, ()):
            out[m].append(prepared(kb, kb.instrs[m], r.expr))
    hazard_mems = _hazard_accesses(kb)
    for ins in kb.instrs.values():
        for kind, accs in (("read", ins.reads), ("write", ins.writes)):
            for acc in accs:
                if (ins.name, acc.memory, kind) in hazard_mems:
                    out[ins.name] += [prepared(kb, ins, x) for x in (acc.lo, acc.hi, acc.when) if x is not None]
    memo.exprs = out
    return out


def needed(kb: KB) -> dict[str, set[str]]:
    """Per mnemonic: the values any rule can read (its own rules and accesses, plus what the
    next instruction of its unit reads through `prev.`); other values get no fact."""
    memo = derived(kb)
    if memo.needed is not None:
        return memo.needed
    own: dict[str, set[str]] = {m: set() for m in kb.instrs}
    by_unit: dict[str, set[str]] = {}
    for m, exprs in asp_exprs(kb).items():
        for e in exprs:
            for r in ex.refs(e):
                if r.name.startswith("prev."):
                    by_unit.setdefault(kb.instrs[m].unit, set()).add(r.name[5:])
                else:
                    own[m].add(r.name)
    out = {m: own[m] | by_unit.get(ins.unit, set()) for m, ins in kb.instrs.items()}
    memo.needed = out
    return out


def program_facts(kb: KB, events: Iterable[Event]) -> str:
    """Facts for a dynamic instruction stream: (pos, mnemonic, values, prev pos, epochs).

    Only values some rule reads are rendered (a 70k-instruction Gemmini stream would otherwise
    be ~50 MB of facts); a value beyond clingo's integers gets `wide(P,"name")` instead of a
    `val` fact (see asp_blind). This is the hot path of `kb check`, so it renders with the
    fact records' term syntax directly."""
    wanted = needed(kb)
    sym = functools.cache(lambda x: F.term(F.Sym(x)))
    text = functools.cache(lambda x: F.term(F.Text(x)))
    lines: list[str] = []
    for pos, op, vals, prev, epochs in events:
        lines.append(f"instr({pos},{sym(op)}).")
        want = wanted.get(op, ())
        for k, v in vals.items():
            if k in want:
                lines.append(f"val({pos},{text(k)},{int(v)})." if F.fits(int(v)) else f"wide({pos},{text(k)}).")
        if prev is not None:
            lines.append(f"prev({pos},{prev}).")
        lines += [f"epoch({pos},{sym(f)},{n})." for f, n in epochs.items()]
    return "\n".join(lines) + "\n"


def check_asp(kb: KB) -> str:
    """The part of the KB's program that checks programs: every fact and rule but the mapping
    spaces' (whose per-constraint violation rules are about three quarters of a target's KB
    and would be grounded for nothing), with the legality library alone. Built once per KB."""
    memo = derived(kb)
    if memo.check is None:
        memo.check = kb_program(kb, library_files()["legality.lp"], mappings=False)[0]
    return memo.check
