"""The clingo calls: the model of a KB program with extra facts (`solve_atoms`), `kb query`
patterns, and `kb check`'s cross-checks of programs and mappings, with the places where
clingo's 32-bit integers cannot decide (`asp_blind`, `mapping_blind`), left to Python.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import clingo

from zomboss import expr as ex
from zomboss.errors import ZombossError
from zomboss.knowledge import facts as F
from zomboss.knowledge.asp import Event, MappingWideCheck, WideCheck, asp_exprs, check_asp, derived, prepared
from zomboss.knowledge.records import KB


class QueryError(ZombossError):
    pass


class NoFunctions:
    """Grounding context without functions: `@f(...)` terms can never call Python."""


def solve_atoms(program: str, extra: str = "") -> list[clingo.Symbol]:
    """The atoms of the (unique, stratified) model of program + extra."""
    ctl = clingo.Control(["--warn=none"])
    try:
        ctl.add("base", [], program)
        if extra:
            ctl.add("base", [], extra)
        ctl.ground([("base", [])], context=NoFunctions())
    except (RuntimeError, AttributeError) as e:
        raise QueryError(f"ASP error: {e}") from None
    return first_model(ctl)


def first_model(ctl: clingo.Control) -> list[clingo.Symbol]:
    """The atoms of a grounded program's (unique, stratified) model."""
    atoms: list[clingo.Symbol] = []
    with ctl.solve(yield_=True) as handle:
        for model in handle:
            atoms = list(model.symbols(atoms=True))
            break
        else:
            raise QueryError("the knowledge base is unsatisfiable")
    return atoms


_PATTERN_TOKEN = re.compile(
    r"\s*(?:(?P<num>-?\d+)|(?P<var>[A-Z_][A-Za-z0-9_\']*)|(?P<name>[a-z][A-Za-z0-9_\']*)"
    r'|(?P<str>"(?:[^"\\\n]|\\["\\n])*")|(?P<punct>[(),]))'
)
MAX_PATTERN = 1000  # characters of a query pattern


def parse_pattern(pattern: str) -> str:
    """A `kb query` pattern as ASP text: one atom whose arguments are terms built from
    constants, numbers, strings, variables (upper case, `_`) and tuples; anything else (a
    rule, a directive such as `#include`, `@f`, arithmetic) is refused. `_` becomes a fresh
    variable each time."""
    pat = pattern.strip()
    if pat.endswith("."):
        pat = pat[:-1].rstrip()
    example = "expected an atom such as 'param(dim,V)' or 'capacity(spad,R)'"
    if len(pat) > MAX_PATTERN:
        raise QueryError(f"the pattern is longer than {MAX_PATTERN} characters; {example}")
    toks: list[tuple[str, str]] = []
    i = 0
    while i < len(pat):
        m = _PATTERN_TOKEN.match(pat, i)
        if not m or m.end() == i:
            rest = pat[i:].lstrip()
            raise QueryError(f"{pattern!r}: unexpected {rest[:12]!r}; {example}")
        kind = m.lastgroup
        assert kind is not None
        toks.append((kind, m.group(kind)))
        i = m.end()
        while i < len(pat) and pat[i].isspace():
            i += 1
    anon = itertools.count()
    out: list[str] = []
    pos = 0

    def peek() -> tuple[str, str]:
        return toks[pos] if pos < len(toks) else ("end", "")

    def take(kind: str, value: str | None = None) -> str:
        nonlocal pos
        k, v = peek()
        if k != kind or (value is not None and v != value):
            got = "the end" if k == "end" else repr(v)
            raise QueryError(f"{pattern!r}: expected {value or kind} at {got}; {example}")
        pos += 1
        return v

    def args(depth: int) -> None:
        take("punct", "(")
        out.append("(")
        term(depth)
        while peek() == ("punct", ","):
            take("punct", ",")
            out.append(",")
            term(depth)
        take("punct", ")")
        out.append(")")

    def term(depth: int) -> None:
        if depth > 16:
            raise QueryError(f"{pattern!r}: terms nested too deep; {example}")
        k, v = peek()
        if k == "name":
            out.append(take("name"))
            if peek() == ("punct", "("):
                args(depth + 1)
        elif k == "var":
            take("var")
            out.append(f"Anon{next(anon)}" if v == "_" else v)
        elif k in ("num", "str"):
            if k == "num" and not F.fits(int(v)):
                raise QueryError(f"{pattern!r}: {v} does not fit clingo's 32-bit integers")
            out.append(take(k))
        elif (k, v) == ("punct", "("):
            args(depth + 1)  # a tuple
        else:
            take("a term")

    if peek()[0] != "name":
        raise QueryError(f"{pattern!r}: {example}")
    out.append(take("name"))
    if peek() == ("punct", "("):
        args(0)
    if peek()[0] != "end":
        raise QueryError(f"{pattern!r}: unexpected {peek()[1]!r} after the atom; {example}")
    return "".join(out)


def query(program: str, pattern: str) -> list[str]:
    """Atoms of the KB's model matching an ASP atom pattern with variables (`capacity(M,R)`)."""
    pat = parse_pattern(pattern)
    ctl = clingo.Control(["--warn=none"])
    try:
        ctl.add("base", [], program)
        ctl.ground([("base", [])], context=NoFunctions())
        known = {(n, a) for n, a, _ in ctl.symbolic_atoms.signatures}
        # the query grounded on its own, after the KB: the predicates it adds are the ones the
        # KB does not have (a misspelling answers nothing rather than an error otherwise)
        ctl.add("query", [], f"zomboss_query({pat}) :- {pat}.\n")
        ctl.ground([("query", [])], context=NoFunctions())
    except (RuntimeError, AttributeError) as e:
        raise QueryError(f"{pattern!r}: ASP error: {e}") from None
    unknown = sorted({(n, a) for n, a, _ in ctl.symbolic_atoms.signatures} - known - {("zomboss_query", 1)})
    if unknown:
        name, arity = unknown[0]
        names = sorted({f"{n}/{a}" for n, a in known if not n.startswith("_")})
        close = difflib.get_close_matches(f"{name}/{arity}", names, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise QueryError(
            f"{pattern!r}: the KB has no predicate {name}/{arity}{hint}; its predicates: {', '.join(names)}"
        )
    try:
        atoms = first_model(ctl)
    except QueryError as e:
        raise QueryError(f"{pattern!r}: {e}") from None
    out = [str(f.atom) for f in F.decode(F.QueryAnswerFact, atoms)]
    return sorted(out, key=_natural)


def _natural(s: str) -> list[int | str]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _wide_checkers(kb: KB) -> dict[str, WideCheck]:
    """Per mnemonic: f(values, previous values) -> whether some value its ASP rules compute
    (operands, intermediate terms) is beyond 32 bits, i.e. where clingo cannot decide and the
    Python predicates decide alone."""
    memo = derived(kb)
    if memo.wide is not None:
        return memo.wide

    def resolve(r: ex.Ref) -> str:
        if r.name.startswith("prev."):
            return f"prev[{r.name[5:]!r}]"
        if r.name == "op" or (len(r.parts) == 1 and r.name.lower() in kb.symbols):
            return "0"  # symbols are never wide
        return f"env[{r.name!r}]"

    out: dict[str, WideCheck] = {}
    for m, exprs in asp_exprs(kb).items():
        lines = ["def wide(env, prev):"]
        for e in exprs:
            lines += [
                "    try:",
                f"        {ex.python_source(e, resolve, wide=True)}",
                "    except _Wide:",
                "        return True",
                "    except _Undefined:",
                "        pass",
            ]
        lines.append("    return False")
        ns: dict[str, Any] = {**ex.PY_GLOBALS, "_Wide": ex.Wide, "_Undefined": ex.EVAL_ERRORS}
        exec(compile("\n".join(lines), "<wide>", "exec"), ns)  # noqa: S102 - generated from our own doc AST
        out[m] = ns["wide"]
    memo.wide = out
    return out


def asp_blind(kb: KB, events: Iterable[Event]) -> set[int]:
    """Positions where clingo cannot decide: a value the position's rules read, or one they
    compute on the way, is beyond clingo's 32-bit integers (e.g. a u32 register above 2^31-1),
    or an earlier write a hazard compares with was. Such values get no fact (`wide/2` marks
    them), so only the Python predicates decide there."""
    checkers = _wide_checkers(kb)
    seen: dict[int, Mapping[str, int]] = {}
    blind: set[int] = set()
    tainted: dict[str, bool] = {}  # hazard id -> an undecidable write since its last fence
    readers: dict[str, list[str]] = {}
    writers: dict[str, list[str]] = {}
    fences: dict[str, list[str]] = {}
    for h in kb.doc.hazards:
        readers.setdefault(h.reader, []).append(h.id)
        writers.setdefault(h.writer, []).append(h.id)
        fences.setdefault(h.fence, []).append(h.id)
    for pos, op, vals, prev, _ in events:
        seen[pos] = vals
        f = checkers.get(op)
        if f is not None and f(vals, seen.get(prev, {}) if prev is not None else {}):
            blind.add(pos)
        for hid in readers.get(op, ()):
            if tainted.get(hid):
                blind.add(pos)
        for hid in writers.get(op, ()):
            if pos in blind:
                tainted[hid] = True
        for hid in fences.get(op, ()):
            tainted[hid] = False
    return blind


def check_program(kb: KB, facts: str) -> list[F.ViolationFact]:
    """The violations clingo finds in a program's facts (`program_facts`), by position."""
    found = {v for v in F.decode(F.ViolationFact, solve_atoms(check_asp(kb), facts)) if v.pos > 0}
    return sorted(found, key=lambda v: (v.pos, v.rule))


def _mapping_wide(kb: KB, op: str) -> dict[str, MappingWideCheck]:
    """Per constraint of op's mapping space: env -> whether its ASP check needs a value
    beyond 32 bits."""
    cache = derived(kb).mapping_wide
    if op in cache:
        return cache[op]
    ms = kb.mapping_space(op)
    out: dict[str, MappingWideCheck] = {}
    names = {k.name for k in ms.knobs} | {k for w in kb.doc.workloads if w.op == op for k in w.keys} if ms else set()

    def resolve(r: ex.Ref) -> str:
        return f"env[{r.name!r}]" if r.name in names else repr(r.name.lower())  # else a symbol

    for c in ms.constraints if ms is not None else ():
        src = ex.python_source(prepared(kb, None, c.expr), resolve, wide=True)
        fn = eval(compile(f"lambda env: {src}", "<wide>", "eval"), dict(ex.PY_GLOBALS))  # noqa: S307 - our own doc AST

        def wide(env: Mapping[str, Any], fn: Callable[[Mapping[str, Any]], object] = fn) -> bool:
            try:
                fn(env)
            except ex.Wide:
                return True
            except ex.EVAL_ERRORS:
                pass
            return False

        out[c.id] = wide
    cache[op] = out
    return out


def mapping_blind(kb: KB, op: str, values: Mapping[str, int | str]) -> set[str]:
    """Constraints of op that clingo cannot decide for these values (a value, or one the
    constraint computes, is beyond 32 bits): the Python check decides them alone."""
    env = {k: (v.lower() if isinstance(v, str) else v) for k, v in values.items()}
    return {cid for cid, wide in _mapping_wide(kb, op).items() if wide(env)}


def _mapping_fact(k: str, v: int | str) -> F.Fact | None:
    if isinstance(v, str):
        return F.MsymFact(F.Text(k), F.Sym(v))
    return F.MvalFact(F.Text(k), int(v)) if F.fits(int(v)) else None  # beyond 32 bits: no fact (mapping_blind)


def check_mapping(kb: KB, op: str, values: Mapping[str, int | str]) -> list[str]:
    facts: list[F.Fact] = [F.MappingOpFact(F.Sym(op))]
    facts += [f for k, v in values.items() if (f := _mapping_fact(k, v)) is not None]
    atoms = solve_atoms(kb.asp, F.render(facts))
    return sorted({str(f.constraint) for f in F.decode(F.MviolationFact, atoms)})


def mapping_core(kb: KB, op: str, values: Mapping[str, int | str]) -> list[str]:
    """A minimal set of the mapping's assignments that cannot hold together (clingo's
    unsatisfiable core under assumptions), e.g. ['tile_i=8', 'tile_k=16']. Values beyond
    32 bits take no part."""
    facts: list[str] = [F.MappingOpFact(F.Sym(op)).asp()]
    atoms: dict[str, str] = {}
    for k, v in values.items():
        f = _mapping_fact(k, v)
        if f is None:
            continue
        fact = f.asp()
        atoms[fact[:-1]] = f"{k}={v}"
        facts.append("{" + fact[:-1] + "}.")
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], kb.asp + "\n" + "\n".join(facts) + "\n:- mviolation(_).\n")
    ctl.ground([("base", [])], context=NoFunctions())
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
