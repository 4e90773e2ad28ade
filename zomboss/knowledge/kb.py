"""The knowledge base: a parsed ISA doc with its parameters evaluated, validated, and
compiled to ASP (facts + violation rules + the `zomboss/knowledge/lp/*.lp` library), cached by content hash.

`load_kb` is the entry point for everything downstream: the CLI's `kb` commands, the
simulators' rule checks (`zomboss.legality.Checker(kb)`), and the search's mapping constraints.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from zomboss import expr as ex
from zomboss.doc import NAME, DocError, grammar_text, parse_doc
from zomboss.doc import model as dm
from zomboss.expr import is_constant
from zomboss.util import RecordCodec, RecordError, atomic_write, cache_root, warn_once

CACHE_FORMAT = 3  # 2: JSON records (1 was a pickle, never read again); 3: effects carry scalar reads
# The compiler's sources: a change to any of them makes a new cache entry.
_SOURCE_PACKAGES = ("zomboss.doc", "zomboss.expr", "zomboss.knowledge")
_SOURCE_FILES = (("zomboss.util", "files.py"),)
MAX_CACHE_BYTES = 64 << 20  # a cache entry larger than this is not read


@dataclass(frozen=True)
class MemoryInfo:
    name: str
    rows: int | None  # None for external memories
    width: int | None
    type: str
    banks: int
    ports: int
    external: bool


@dataclass(frozen=True)
class LayoutInfo:
    """A bit layout with its field positions evaluated for this KB's parameters."""

    name: str
    width: int
    bits: dict[str, tuple[int, int]]  # field -> (hi, lo)


@dataclass(frozen=True)
class RegFileInfo:
    name: str
    count: int
    width: int
    type: str


@dataclass
class KB:
    """A built knowledge base (the cache stores its records as JSON, `_kb_to_json`)."""

    target: str
    doc: dm.Doc
    params: dict[str, int]
    memories: dict[str, MemoryInfo]
    regfiles: dict[str, RegFileInfo]
    layouts: dict[str, LayoutInfo]
    states: dict[str, tuple[int | None, dict[str, int]]]
    instrs: dict[str, dm.Instr]
    rules: list[dm.Rule]  # doc rules plus the generated operand-range rules
    applies: dict[str, list[str]]  # rule id -> mnemonics it applies to
    asp: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    digest: str = ""
    from_cache: bool = False

    @property
    def hazards(self) -> list[dm.Hazard]:
        return self.doc.hazards

    @property
    def examples(self) -> list[dm.Example]:
        return self.doc.examples

    @cached_property
    def rule_by_id(self) -> dict[str, dm.Rule]:
        return {r.id: r for r in self.rules}

    @cached_property
    def symbols(self) -> frozenset[str]:
        """Names that stand for themselves in expressions: mnemonics, units, knob values."""
        out = {i.name.lower() for i in self.instrs.values()} | {i.unit.lower() for i in self.instrs.values()}
        for m in self.doc.mappings:
            for k in m.knobs:
                out |= {v.lower() for v in k.values}
        return frozenset(out)

    def mapping_space(self, op: str) -> dm.MappingSpace | None:
        return next((m for m in self.doc.mappings if m.op == op), None)


# ---------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------


def library_text() -> str:
    """The workload-invariant rule library (`zomboss/knowledge/lp/*.lp`), concatenated in name order."""
    root = resources.files("zomboss.knowledge").joinpath("lp")
    parts = []
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".lp"):
            parts.append(f"% ---- kb/{entry.name} ----\n" + entry.read_text())
    return "\n".join(parts)


def _eval_params(doc: dm.Doc, overrides: Mapping[str, int]) -> dict[str, int]:
    known = {p.name for p in doc.params}
    for k in overrides:
        if k.lower() not in known:
            raise DocError(f"--param {k}: no parameter {k!r} in {doc.path} (parameters: {', '.join(sorted(known))})")
    over = {k.lower(): v for k, v in overrides.items()}
    for k, v in over.items():
        try:
            ex.bounded(v, f"the value {v}")
        except ex.ExprError as e:
            raise DocError(f"--param {k}: {e}") from None
    env: dict[str, int] = {}
    for p in doc.params:
        if p.name in env:
            raise DocError(f"{p.loc}: parameter {p.name!r} defined twice")
        if p.name in over:
            env[p.name] = over[p.name]
            continue
        for r in ex.refs(p.expr):
            if r.name not in env:
                raise DocError(f"{p.loc}: parameter {p.name!r} uses unknown parameter {r.name!r} (define it above)")
        try:
            ex.check_limits(p.expr)
            val = ex.evaluate(p.expr, env)
        except ex.ExprError as e:
            raise DocError(f"{p.loc}: parameter {p.name!r}: {e}") from None
        if not isinstance(val, int):
            raise DocError(f"{p.loc}: parameter {p.name!r}: expected a number, got {ex.show(p.expr)}")
        env[p.name] = int(val)
    return env


def _num(e: ex.Expr, params: Mapping[str, int], where: dm.Loc, what: str) -> int:
    try:
        for r in ex.refs(e):
            if r.name not in params:
                raise ex.ExprError(f"unknown parameter {r.name!r}")
        v = ex.evaluate(e, params)
    except ex.ExprError as err:
        raise DocError(f"{where}: {what}: {err}") from None
    if isinstance(v, bool) or not isinstance(v, int):
        raise DocError(f"{where}: {what}: expected a number, got {ex.show(e)}")
    return v


def _sym(e: ex.Expr, where: dm.Loc, what: str) -> str:
    if isinstance(e, ex.Ref) and len(e.parts) == 1:
        return e.name
    raise DocError(f"{where}: {what} must be a type name, got {ex.show(e)}")


def _range_rules(doc: dm.Doc, regfiles: Mapping[str, RegFileInfo]) -> list[dm.Rule]:
    """Operand ranges and register indices become ordinary rules with generated ids."""
    out = []
    for ins in doc.instrs:
        for o in ins.operands:
            if o.kind == "int" and o.lo is not None and o.hi is not None:
                e = ex.Bin("and", ex.Bin(">=", ex.Ref((o.name,)), o.lo), ex.Bin("<=", ex.Ref((o.name,)), o.hi))
                msg = f"{o.name} of {ins.name} must be in {ex.show(o.lo)}..{ex.show(o.hi)}"
                out.append(dm.Rule(f"{ins.name}.{o.name}.range", (ins.name,), msg, e, ins.loc))
            elif o.kind in regfiles:
                e = ex.Bin("<", ex.Ref((o.name,)), ex.Int(regfiles[o.kind].count))
                msg = f"{o.name} of {ins.name} must name a register of {o.kind} (0..{regfiles[o.kind].count - 1})"
                out.append(dm.Rule(f"{ins.name}.{o.name}.reg", (ins.name,), msg, e, ins.loc))
    return out


def scope_names(kb: KB, ins: dm.Instr) -> set[str]:
    """Names a rule on `ins` may use, besides parameters and `prev.*`."""
    names = {"op"}
    for o in ins.operands:
        names.add(o.name)
        if o.kind in kb.layouts:
            names |= {f"{o.name}.{f}" for f in kb.layouts[o.kind].bits}
        if o.kind in kb.regfiles:
            names.add(f"{o.name}.val")
    names |= {n for n, _ in ins.lets}
    for u in ins.uses:
        names |= {f"{u.alias}.{f}" for f in kb.states[u.state][1]}
    return names


def _check_names(doc: dm.Doc) -> None:
    """Names that become ASP constants (instructions, units, memories, states, layouts,
    register files, parameters, knob values, ops, element types) must be clingo constants
    once lower-cased, and distinct once lower-cased: `MVIN` and `mvin` would be one atom."""
    if not doc.blocks:
        raise DocError(f"{doc.path}:1: no ```isa blocks: nothing to build (an ISA doc writes its machine in them)")
    if not doc.instrs:
        raise DocError(f"{doc.path}:1: the ```isa blocks declare no instruction: nothing to check programs against")

    def constant(name: str, what: str, loc: dm.Loc) -> None:
        if not is_constant(name):
            raise DocError(
                f"{loc.pos}: {what} {name!r} cannot be an ASP constant "
                "(names that become constants start with a letter and are not 'not')"
            )

    def distinct(items: list[tuple[str, dm.Loc]], what: str) -> None:
        seen: dict[str, tuple[str, dm.Loc]] = {}
        for name, loc in items:
            constant(name, what, loc)
            low = name.lower()
            if low in seen and seen[low][0] != name:
                first, where = seen[low]
                raise DocError(
                    f"{loc.pos}: {what} {name!r} differs from {what} {first!r} ({where}) only by case; "
                    "the KB writes both as the ASP constant " + repr(low)
                )
            seen.setdefault(low, (name, loc))

    distinct([(i.name, i.loc) for i in doc.instrs], "instruction")
    distinct([(i.unit, i.loc) for i in doc.instrs if i.unit], "unit")
    distinct([(p.name, p.loc) for p in doc.params], "parameter")
    for what, recs in (
        ("memory", doc.memories),
        ("register file", doc.regfiles),
        ("layout", doc.layouts),
        ("state", doc.states),
    ):
        distinct([(r.name, r.loc) for r in recs], what)
    for m in doc.memories:
        t = m.fields.get("type")
        if isinstance(t, ex.Ref) and len(t.parts) == 1:
            constant(t.name, "element type", m.loc)
    distinct([(w.op, w.loc) for w in doc.workloads], "op")
    distinct([(ms.op, ms.loc) for ms in doc.mappings], "op")
    for ms in doc.mappings:
        for k in ms.knobs:
            distinct([(v, k.loc) for v in k.values], f"value of knob {k.name}")


def _check_exprs(kb: KB) -> None:
    """Every expression, with its instruction's lets inlined, stays within the size limits
    and mixes no symbols into arithmetic (ExprError -> located DocError)."""
    _lets_inlined = dm.inline_lets

    def check(e: ex.Expr | None, where: dm.Loc, what: str, is_symbol: Callable[[ex.Ref], bool]) -> None:
        if e is None:
            return
        try:
            ex.check_limits(e)
            ex.typecheck(e, is_symbol)
        except ex.ExprError as err:
            raise DocError(f"{where}: {what}: {err}") from None

    def instr_symbol(ins: dm.Instr, scope: set[str]) -> Callable[[ex.Ref], bool]:
        return lambda r: (
            r.name in ("op", "prev.op") or (len(r.parts) == 1 and r.name not in scope and r.name.lower() in kb.symbols)
        )

    for ins in kb.instrs.values():
        scope = scope_names(kb, ins) | set(kb.params)
        sym = instr_symbol(ins, scope)
        for name, e in ins.lets:
            check(_lets_inlined(ins, e), ins.loc, f"{ins.name}: let {name}", sym)
        for a in ins.reads + ins.writes:
            for x in (a.lo, a.hi, a.when):
                check(_lets_inlined(ins, x) if x is not None else None, a.loc, f"{ins.name} accesses {a.memory}", sym)
        for st in ins.sets:
            check(_lets_inlined(ins, st.value), ins.loc, f"{ins.name} sets {st.state}.{st.field}", sym)
            check(_lets_inlined(ins, st.index) if st.index else None, ins.loc, f"{ins.name} sets {st.state}", sym)
        for u in ins.uses:
            check(_lets_inlined(ins, u.index) if u.index else None, ins.loc, f"{ins.name} uses {u.state}", sym)
        if ins.latency is not None:
            check(_lets_inlined(ins, ins.latency), ins.loc, f"{ins.name} latency", sym)
    for rule in kb.rules:
        if not rule.patterns:
            check(rule.expr, rule.loc, f"rule {rule.id}", lambda r: False)
        for m in kb.applies.get(rule.id, ()):
            ins = kb.instrs[m]
            sym = instr_symbol(ins, scope_names(kb, ins) | set(kb.params))
            check(_lets_inlined(ins, rule.expr), rule.loc, f"rule {rule.id} (on {m})", sym)
    for ms in kb.doc.mappings:
        symbolic = {k.name for k in ms.knobs if k.values}
        keys = {k for w in kb.doc.workloads if w.op == ms.op for k in w.keys}
        known = keys | {k.name for k in ms.knobs} | set(kb.params)

        def msym(r: ex.Ref, symbolic: set[str] = symbolic, known: set[str] = known) -> bool:
            return r.name in symbolic or (r.name not in known and r.name.lower() in kb.symbols)

        for c in ms.constraints:
            check(c.expr, c.loc, f"constraint {c.id}", msym)
        for cost in ms.costs:
            check(cost.expr, cost.loc, f"cost {cost.name}", msym)
        for k in ms.knobs:
            check(k.when, k.loc, f"the condition of knob {k.name}", msym)
        for name, e in ms.lets:
            check(e, ms.loc, f"let {name} of mapping {ms.op}", msym)


def _validate(kb: KB, overrides: Mapping[str, int] | None = None) -> None:
    doc = kb.doc
    mnems = list(kb.instrs)
    seen: dict[str, dm.Loc] = {}
    for ins in doc.instrs:
        if ins.name in seen and seen[ins.name] != ins.loc:
            raise DocError(f"{ins.loc}: instruction {ins.name!r} defined twice (first at {seen[ins.name]})")
        seen[ins.name] = ins.loc
        for o in ins.operands:
            if o.kind not in ("int", "addr") and o.kind not in kb.layouts and o.kind not in kb.regfiles:
                raise DocError(
                    f"{ins.loc}: operand {o.name!r} of {ins.name} has unknown kind {o.kind!r} (int, addr, a layout or a regfile)"
                )
        for acc in ins.reads + ins.writes:
            if acc.memory not in kb.memories:
                raise DocError(
                    f"{acc.loc}: {ins.name} accesses unknown memory {acc.memory!r} (memories: {', '.join(kb.memories)})"
                )
        for u in ins.uses:
            if u.state not in kb.states:
                raise DocError(f"{ins.loc}: {ins.name} uses unknown state {u.state!r}")
        for s in ins.sets:
            if s.state not in kb.states:
                raise DocError(f"{ins.loc}: {ins.name} sets unknown state {s.state!r}")
            if s.field not in kb.states[s.state][1]:
                raise DocError(f"{ins.loc}: {ins.name} sets unknown field {s.state}.{s.field}")
        # every expression of the instruction must resolve
        scope = scope_names(kb, ins) | set(kb.params)
        exprs = [e for _, e in ins.lets] + [
            x for a in ins.reads + ins.writes for x in (a.lo, a.hi, a.when) if x is not None
        ]
        exprs += [s.value for s in ins.sets] + [s.index for s in ins.sets if s.index is not None]
        exprs += [u.index for u in ins.uses if u.index is not None]
        for e in exprs:
            for r in ex.refs(e):
                if r.name not in scope and not (len(r.parts) == 1 and r.name.lower() in kb.symbols):
                    raise DocError(f"{ins.loc}: {ins.name} uses unknown name {r.name!r}")
    rule_ids: dict[str, dm.Loc] = {}
    prev_scopes: dict[str, set[str]] = {}  # unit -> names `prev.` may read there (computed once per unit)
    for rule in kb.rules:
        if rule.id in rule_ids and rule_ids[rule.id] != rule.loc:
            raise DocError(f"{rule.loc}: rule id {rule.id!r} used twice (first at {rule_ids[rule.id]})")
        rule_ids[rule.id] = rule.loc
        if not rule.patterns:
            _check_invariant(kb, rule, overrides or {})
            continue
        targets = [m for m in mnems if any(fnmatch.fnmatchcase(m, p) for p in rule.patterns)]
        for p in rule.patterns:
            if not any(fnmatch.fnmatchcase(m, p) for m in mnems):
                raise DocError(f"{rule.loc}: rule {rule.id} applies to {p!r}, which matches no instruction")
        kb.applies[rule.id] = targets
        for m in targets:
            ins = kb.instrs[m]
            if ins.unit not in prev_scopes:
                prev_scopes[ins.unit] = _prev_scope(kb, ins.unit)
            unit_scope = prev_scopes[ins.unit]
            scope = scope_names(kb, ins) | set(kb.params)
            for r in ex.refs(rule.expr):
                if r.name in scope or r.name in unit_scope:
                    continue
                if len(r.parts) == 1 and r.name.lower() in kb.symbols:
                    continue
                raise DocError(f"{rule.loc}: rule {rule.id} uses unknown name {r.name!r} (on {m})")
    for h in doc.hazards:
        for role, name in (("reader", h.reader), ("writer", h.writer), ("fence", h.fence)):
            if name not in kb.instrs:
                raise DocError(f"{h.loc}: hazard {h.id}: {role} {name!r} is not an instruction")
        if not any(a.memory == h.read_mem for a in kb.instrs[h.reader].reads):
            raise DocError(f"{h.loc}: hazard {h.id}: {h.reader} declares no reads of {h.read_mem!r}")
        if not any(a.memory == h.write_mem for a in kb.instrs[h.writer].writes):
            raise DocError(f"{h.loc}: hazard {h.id}: {h.writer} declares no writes of {h.write_mem!r}")
        kb.applies[h.id] = [h.reader]
    all_ids = set(rule_ids) | {h.id for h in doc.hazards}
    for exm in doc.examples:
        if exm.rule not in all_ids:
            raise DocError(f"{exm.loc}: example names unknown rule {exm.rule!r}")
    wl_keys = {w.op: set(w.keys) for w in doc.workloads}
    for ms in doc.mappings:
        if ms.op not in wl_keys:
            raise DocError(f"{ms.loc}: mapping for {ms.op!r} has no 'workload {ms.op}(...)' declaration")
        names = set(wl_keys[ms.op]) | {k.name for k in ms.knobs} | set(kb.params)
        for c in ms.constraints:
            for r in ex.refs(c.expr):
                if r.name not in names and r.name.lower() not in kb.symbols:
                    raise DocError(f"{c.loc}: constraint {c.id} uses unknown name {r.name!r}")
        _validate_knobs(kb, ms, set(wl_keys[ms.op]))
        seen_costs: set[str] = set()
        for cost in ms.costs:
            if cost.name not in ("estimate", "bound"):
                raise DocError(
                    f"{cost.loc}: unknown cost {cost.name!r} (a mapping has a cost estimate and a cost bound)"
                )
            if cost.name in seen_costs:
                raise DocError(f"{cost.loc}: cost {cost.name} given twice in mapping {ms.op}")
            seen_costs.add(cost.name)
            for r in ex.refs(cost.expr):
                if r.name not in names and r.name.lower() not in kb.symbols:
                    raise DocError(f"{cost.loc}: cost {cost.name} uses unknown name {r.name!r}")
    _check_exprs(kb)


def _validate_knobs(kb: KB, ms: dm.MappingSpace, keys: set[str]) -> None:
    """Knob names unique; a condition reads only symbolic knobs, workload keys and parameters
    (so that clingo decides it without tile sizes) and no knob depends on itself through
    conditions; a canonical value lies in the knob's domain."""
    seen: dict[str, dm.Loc] = {}
    symbolic = {k.name for k in ms.knobs if k.values}
    for k in ms.knobs:
        if k.name in seen:
            raise DocError(f"{k.loc}: knob {k.name!r} declared twice in mapping {ms.op} (first at {seen[k.name]})")
        seen[k.name] = k.loc
        if k.name in keys:
            raise DocError(f"{k.loc}: knob {k.name!r} has the name of a workload key of {ms.op}")
        if k.when is not None:
            for r in ex.refs(k.when):
                if r.name in symbolic or r.name in keys or r.name in kb.params:
                    continue
                if r.name in seen or any(r.name == o.name for o in ms.knobs):
                    raise DocError(
                        f"{k.loc}: the condition of knob {k.name} reads integer knob {r.name!r}; "
                        "conditions may read symbolic knobs, workload keys and parameters only"
                    )
                if r.name.lower() not in kb.symbols:
                    raise DocError(f"{k.loc}: the condition of knob {k.name} uses unknown name {r.name!r}")
        if k.default is not None:
            if k.values:
                d = k.default
                name = d.name if isinstance(d, ex.Sym | ex.Ref) else None
                if name is None or name not in k.values:
                    raise DocError(
                        f"{k.loc}: the canonical value of knob {k.name} must be one of {', '.join(k.values)}, "
                        f"got {ex.show(d)}"
                    )
            else:
                assert k.lo is not None and k.hi is not None
                v = _num(k.default, kb.params, k.loc, f"canonical value of knob {k.name}")
                lo = _num(k.lo, kb.params, k.loc, f"lower bound of knob {k.name}")
                hi = _num(k.hi, kb.params, k.loc, f"upper bound of knob {k.name}")
                if not lo <= v <= hi:
                    raise DocError(f"{k.loc}: the canonical value {v} of knob {k.name} is outside {lo}..{hi}")
    deps = {k.name: {r.name for r in ex.refs(k.when)} & symbolic if k.when is not None else set() for k in ms.knobs}
    state: dict[str, int] = {}

    def visit(n: str, path: tuple[str, ...]) -> None:
        if state.get(n) == 2:
            return
        if state.get(n) == 1:
            cyc = " -> ".join((*path, n))
            raise DocError(f"{seen[n]}: knob conditions of mapping {ms.op} form a cycle: {cyc}")
        state[n] = 1
        for m in sorted(deps.get(n, ())):
            visit(m, (*path, n))
        state[n] = 2

    for k in ms.knobs:
        visit(k.name, ())


def _prev_scope(kb: KB, unit: str) -> set[str]:
    out = {"prev.op"}
    for other in kb.instrs.values():
        if other.unit == unit:
            out |= {f"prev.{n}" for n in scope_names(kb, other)}
    return out


def _check_invariant(kb: KB, rule: dm.Rule, overrides: Mapping[str, int]) -> None:
    try:
        ok = ex.evaluate(rule.expr, kb.params)
    except ex.ExprError as e:
        raise DocError(f"{rule.loc}: rule {rule.id}: {e}") from None
    if not ok:
        used = sorted({r.name for r in ex.refs(rule.expr)})
        vals = ", ".join(f"{n}={kb.params[n]}" for n in used if n in kb.params)
        locs = ", ".join(f"{n} at {p.loc}" for p in kb.doc.params for n in used if p.name == n)
        given = ", ".join(f"{k.lower()}={v}" for k, v in sorted(overrides.items()))
        whose = f"the parameters with --param {given}" if given else "the doc's own parameters"
        raise DocError(f"{rule.loc}: rule {rule.id} ({rule.message}) fails for {whose}: {vals} (defined: {locs})")


def _layout(lay: dm.Layout, params: Mapping[str, int]) -> LayoutInfo:
    width = _num(lay.width, params, lay.loc, f"layout {lay.name} width")
    bits: dict[str, tuple[int, int]] = {}
    for name, (hi_e, lo_e) in lay.bits.items():
        hi = _num(hi_e, params, lay.loc, f"layout {lay.name} field {name}")
        lo = _num(lo_e, params, lay.loc, f"layout {lay.name} field {name}")
        if not 0 <= lo <= hi < width:
            raise DocError(
                f"{lay.loc}: layout {lay.name} field {name}: bits {hi}..{lo} must satisfy {width - 1} >= hi >= lo >= 0"
            )
        bits[name] = (hi, lo)
    return LayoutInfo(lay.name, width, bits)


MAX_MEMORY_ELEMENTS = 1 << 26  # an on-chip memory's rows x width: the simulators allocate it


def _check_memory_size(mem: MemoryInfo, loc: dm.Loc, overrides: Mapping[str, int]) -> None:
    """On-chip memories have at least one row and element per row, and at most
    MAX_MEMORY_ELEMENTS elements (docs/archdoc.md, Limits), refused at their declaration."""
    if mem.external:
        return
    rows, width = mem.rows or 0, mem.width or 0
    given = ", ".join(f"{k.lower()}={v}" for k, v in sorted(overrides.items()))
    why = f" (with --param {given})" if given else ""
    if rows < 1 or width < 1 or mem.banks < 1 or mem.ports < 1:
        raise DocError(
            f"{loc}: memory {mem.name}: rows, width, banks and ports must be at least 1, not "
            f"{rows}, {width}, {mem.banks}, {mem.ports}{why}"
        )
    if rows * width > MAX_MEMORY_ELEMENTS:
        raise DocError(
            f"{loc}: memory {mem.name}: {rows} rows x {width} elements is more than the "
            f"{MAX_MEMORY_ELEMENTS:,} elements an on-chip memory may have{why}"
        )


def compile_doc(doc: dm.Doc, target: str, overrides: Mapping[str, int]) -> KB:
    _check_names(doc)
    params = _eval_params(doc, overrides)
    memories: dict[str, MemoryInfo] = {}
    for m in doc.memories:
        f = m.fields
        unknown = set(f) - {"rows", "width", "type", "banks", "ports"}
        if unknown:
            raise DocError(
                f"{m.loc}: memory {m.name}: unknown field {sorted(unknown)[0]!r} (rows, width, type, banks, ports)"
            )
        if not m.external and ("rows" not in f or "width" not in f):
            raise DocError(f"{m.loc}: memory {m.name} needs rows and width (or 'external')")
        memories[m.name] = MemoryInfo(
            m.name,
            _num(f["rows"], params, m.loc, f"memory {m.name} rows") if "rows" in f else None,
            _num(f["width"], params, m.loc, f"memory {m.name} width") if "width" in f else None,
            _sym(f["type"], m.loc, "type") if "type" in f else "int8",
            _num(f["banks"], params, m.loc, "banks") if "banks" in f else 1,
            _num(f["ports"], params, m.loc, "ports") if "ports" in f else 1,
            m.external,
        )
        _check_memory_size(memories[m.name], m.loc, overrides)
    regfiles = {
        r.name: RegFileInfo(
            r.name,
            _num(r.fields.get("count", ex.Int(0)), params, r.loc, "count"),
            _num(r.fields.get("width", ex.Int(32)), params, r.loc, "width"),
            _sym(r.fields["type"], r.loc, "type") if "type" in r.fields else "u32",
        )
        for r in doc.regfiles
    }
    states = {
        s.name: (
            _num(s.size, params, s.loc, "state size") if s.size is not None else None,
            {k: _num(v, params, s.loc, f"reset value of {s.name}.{k}") for k, v in s.fields.items()},
        )
        for s in doc.states
    }
    kb = KB(
        target=target,
        doc=doc,
        params=params,
        memories=memories,
        regfiles=regfiles,
        layouts={lay.name: _layout(lay, params) for lay in doc.layouts},
        states=states,
        instrs={i.name: i for i in doc.instrs},
        rules=_range_rules(doc, regfiles) + list(doc.rules),
        applies={},
    )
    _validate(kb, overrides)
    from zomboss.knowledge.asp import kb_program  # ASP generation lives in one module

    kb.asp, kb.counts = kb_program(kb, library_text())
    return kb


# ---------------------------------------------------------------------------------------
# Cache
# ---------------------------------------------------------------------------------------


def cache_dir() -> Path:
    return cache_root() / "kb"


def _digest(doc_text: str, overrides: Mapping[str, int], where: str) -> str:
    """Content hash of everything a KB depends on, plus the doc's location (diagnostics carry
    file:line, so two checkouts of the same doc keep their own entries)."""
    h = hashlib.sha256(where.encode())
    h.update(f"format={CACHE_FORMAT}\n".encode())
    for pkg in _SOURCE_PACKAGES:
        for entry in sorted(resources.files(pkg).iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".py"):
                h.update(entry.read_bytes())
    for pkg, name in _SOURCE_FILES:
        h.update(resources.files(pkg).joinpath(name).read_bytes())
    h.update(grammar_text().encode())
    h.update(library_text().encode())
    h.update(doc_text.encode())
    h.update(repr(sorted((k.lower(), int(v)) for k, v in overrides.items())).encode())
    return h.hexdigest()


# ---- the stored form: JSON of the typed records, decoded against their declared types -----

_NAME = re.compile(NAME)


_BIN_OPS = frozenset(ex.CMP_OPS + ex.BOOL_OPS + ex.ARITH_OPS)


class _ExprTable:
    """The expressions of a stored KB, each distinct one once (children before parents), and
    references to them by index: inlined lets repeat sub-expressions many times over."""

    def __init__(self) -> None:
        self.rows: list[list[Any]] = []
        self._index: dict[ex.Expr, int] = {}
        self.built: list[ex.Expr] = []

    def put(self, e: ex.Expr) -> int:
        i = self._index.get(e)
        if i is not None:
            return i
        if isinstance(e, ex.Int):
            row: list[Any] = ["Int", e.value]
        elif isinstance(e, ex.Ref):
            row = ["Ref", list(e.parts)]
        elif isinstance(e, ex.Sym):
            row = ["Sym", e.name]
        elif isinstance(e, ex.Bin):
            row = ["Bin", e.op, self.put(e.left), self.put(e.right)]
        elif isinstance(e, ex.Un):
            row = ["Un", e.op, self.put(e.arg)]
        elif isinstance(e, ex.Call):
            row = ["Call", e.fn, [self.put(a) for a in e.args]]
        elif isinstance(e, ex.Cond):
            row = ["Cond", self.put(e.cond), self.put(e.then), self.put(e.other)]
        else:
            row = ["InSet", self.put(e.arg), [self.put(a) for a in e.items]]
        self._index[e] = len(self.rows)
        self.rows.append(row)
        return len(self.rows) - 1

    def load(self, rows: Any) -> None:
        """Build the stored expressions exactly as the parser could have built them (names
        and operators flow into generated Python and ASP); a child must precede its parent."""
        if type(rows) is not list:
            raise RecordError("expected the expression table")
        built = self.built = []
        for v in rows:
            built.append(_expr_row(v, built))

    def get(self, i: Any) -> ex.Expr:
        if type(i) is not int or not 0 <= i < len(self.built):
            raise RecordError(f"not an expression reference: {str(i)[:20]}")
        return self.built[i]


def _expr_row(v: Any, built: list[ex.Expr]) -> ex.Expr:
    n = len(built)

    def ref(i: Any) -> ex.Expr:
        if type(i) is not int or not 0 <= i < n:
            raise RecordError(f"bad expression reference {str(i)[:20]}")
        return built[i]

    if type(v) is list and v:
        tag, k = v[0], len(v)
        if tag == "Ref" and k == 2 and type(v[1]) is list and v[1]:
            if all(type(p) is str and _NAME.fullmatch(p) for p in v[1]):
                return ex.Ref(tuple(v[1]))
        elif tag == "Int" and k == 2 and type(v[1]) is int:
            if abs(v[1]).bit_length() <= ex.MAX_BITS:
                return ex.Int(v[1])
        elif tag == "Bin" and k == 4 and v[1] in _BIN_OPS:
            return ex.Bin(v[1], ref(v[2]), ref(v[3]))
        elif tag == "Un" and k == 3 and v[1] in ex.UN_OPS:
            return ex.Un(v[1], ref(v[2]))
        elif tag == "Call" and k == 3 and type(v[2]) is list and ex.FUNCS.get(v[1]) == len(v[2]):
            return ex.Call(v[1], tuple(ref(a) for a in v[2]))
        elif tag == "Cond" and k == 4:
            return ex.Cond(ref(v[1]), ref(v[2]), ref(v[3]))
        elif tag == "InSet" and k == 3 and type(v[2]) is list and v[2]:
            return ex.InSet(ref(v[1]), tuple(ref(a) for a in v[2]))
        elif tag == "Sym" and k == 2 and type(v[1]) is str and _NAME.fullmatch(v[1]):
            return ex.Sym(v[1])
    raise RecordError(f"not an expression: {str(v)[:60]}")


_TABLES: list[_ExprTable] = []  # the table of the KB being stored or loaded (innermost last)
_EXPR_CLASSES = (ex.Int, ex.Ref, ex.Sym, ex.Bin, ex.Un, ex.Call, ex.Cond, ex.InSet)
_CODEC = RecordCodec(
    (*dm.RECORDS, *_EXPR_CLASSES, MemoryInfo, LayoutInfo, RegFileInfo),
    aliases={"Expr": ex.Expr},
    unions={frozenset(_EXPR_CLASSES): lambda v: _TABLES[-1].get(v)},
    encoders=dict.fromkeys(_EXPR_CLASSES, lambda e: _TABLES[-1].put(e)),
)
# what a stored KB holds: everything but the fields derived from the doc on load
_STORED = ("target", "doc", "params", "memories", "regfiles", "layouts", "states", "applies", "asp", "counts")


def _kb_to_json(kb: KB) -> bytes:
    n_range = len(kb.rules) - len(kb.doc.rules)
    table = _ExprTable()
    _TABLES.append(table)
    try:
        payload = {name: _CODEC.encode(getattr(kb, name)) for name in _STORED}
        payload["range_rules"] = _CODEC.encode(kb.rules[:n_range])
    finally:
        _TABLES.pop()
    payload["exprs"] = table.rows
    body = json.dumps(payload, separators=(",", ":")).encode()
    header = {"format": CACHE_FORMAT, "digest": kb.digest, "sha256": hashlib.sha256(body).hexdigest()}
    return json.dumps(header).encode() + b"\n" + body


def _kb_from_json(data: bytes, digest: str) -> KB:
    """The KB of a cache entry; RecordError (or ValueError) for anything that is not exactly a
    stored KB of this digest. Nothing in the entry is executed."""
    head, sep, body = data.partition(b"\n")
    header = json.loads(head)
    if not sep or not isinstance(header, dict) or header.get("format") != CACHE_FORMAT:
        raise RecordError("not a KB cache entry of this version")
    if header.get("digest") != digest or header.get("sha256") != hashlib.sha256(body).hexdigest():
        raise RecordError("digest mismatch")
    payload = json.loads(body)
    if not isinstance(payload, dict) or set(payload) != {*_STORED, "range_rules", "exprs"}:
        raise RecordError("unexpected fields")
    table = _ExprTable()
    table.load(payload["exprs"])
    _TABLES.append(table)
    try:
        vals = {name: _CODEC.decode(payload[name], _KB_HINTS[name]) for name in _STORED}
        range_rules = _CODEC.decode(payload["range_rules"], list[dm.Rule])
    finally:
        _TABLES.pop()
    doc: dm.Doc = vals["doc"]
    problem = unsafe_asp(vals["asp"])
    if problem:
        raise RecordError(f"the stored ASP program contains {problem}")
    return KB(
        **vals,
        instrs={i.name: i for i in doc.instrs},
        rules=range_rules + list(doc.rules),
        digest=digest,
        from_cache=True,
    )


_SAFE_DIRECTIVES = frozenset({"defined", "show", "false", "true"})
_LINE_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|%[^\n]*|#[A-Za-z_]*|@|"')
_SPECIAL = re.compile(r"[#@]")


def unsafe_asp(text: str) -> str | None:
    """The first construct of an ASP text that could run code or read files (`#script`,
    `#include`, `@f(...)`, any directive other than #defined/#show/#false/#true), or None.
    The KB cache is data: a loaded KB's program must pass this.

    clingo strings and `%` comments end with their line, so only the lines holding a `#` or
    `@` are lexed; a block comment (`%*`, which this module never writes) is refused."""
    if "%*" in text:
        return "a block comment"
    done = -1
    for m in _SPECIAL.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        if start <= done:
            continue  # this line was lexed already
        end = text.find("\n", m.start())
        end = len(text) if end < 0 else end
        done = end
        for t in _LINE_TOKENS.finditer(text, start, end):
            tok = t.group(0)
            if tok[0] == "%" or (tok[0] == '"' and len(tok) > 1):
                continue
            if tok == '"':
                return "an unterminated string"
            if tok == "@" or tok[1:] not in _SAFE_DIRECTIVES:
                return repr(tok)
    return None


_KB_HINTS = typing.get_type_hints(KB, globalns={**vars(dm), **globals()})
_LOADED: dict[str, KB] = {}  # in-process memo by cache file (content digest): a KB is immutable once built
_IN_MEMORY: dict[str, KB] = {}  # KBs built where the cache folder cannot be written


def load_kb(
    doc_path: str | os.PathLike[str], overrides: Mapping[str, int] | None = None, *, use_cache: bool = True
) -> KB:
    """Parse, validate and compile a doc (or load it from the cache). An unusable cache folder
    (read-only, not a folder, ...) means building in memory, with one warning."""
    path = Path(doc_path)
    try:
        if path.stat().st_size > dm.MAX_DOC_BYTES:
            raise DocError(f"{path}: larger than the {dm.MAX_DOC_BYTES >> 20} MB a doc may have")
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DocError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise DocError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    overrides = dict(overrides or {})
    digest = _digest(text, overrides, str(path.resolve()))
    cfile = cache_dir() / f"{path.stem}-{digest[:24]}.json"
    if use_cache and str(cfile) in _IN_MEMORY:
        return _IN_MEMORY[str(cfile)]
    if use_cache and str(cfile) in _LOADED and cfile.exists():
        return _LOADED[str(cfile)]
    if use_cache:
        kb = _read_entry(cfile, digest)
        if kb is not None:
            _LOADED[str(cfile)] = kb
            return kb
    kb = compile_doc(parse_doc(text, str(path)), path.stem, overrides)
    kb.digest = digest
    if kb.counts.get("wide_facts"):
        from zomboss.knowledge.asp import kb_facts

        shown = [f.asp(wide=True) for f in kb_facts(kb) if f.is_wide()][:2]
        warn_once(
            f"wide:{digest}",
            f"{path}: {kb.counts['wide_facts']} KB fact(s) hold integers beyond clingo's 32 bits, "
            f"written as strings: {' '.join(shown)}{' ...' if kb.counts['wide_facts'] > 2 else ''}",
        )
    if use_cache:
        try:
            atomic_write(cfile, _kb_to_json(kb))
        except OSError as e:
            _IN_MEMORY[str(cfile)] = kb
            warn_once(
                "cache-write", f"cannot write the KB cache in {cfile.parent} ({e.strerror or e}); building in memory"
            )
    return kb


def _read_entry(cfile: Path, digest: str) -> KB | None:
    """A cached KB, or None (missing, unreadable, foreign or corrupt entries are rebuilt)."""
    try:
        if not cfile.is_file() or cfile.stat().st_size > MAX_CACHE_BYTES:
            return None
        data = cfile.read_bytes()
    except OSError:
        return None
    try:
        return _kb_from_json(data, digest)
    except (ValueError, TypeError, KeyError, RecursionError, ex.ExprError):  # RecordError is a ValueError
        return None
