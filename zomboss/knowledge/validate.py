"""Validating a KB before it is compiled to ASP: names that become ASP constants, every
expression's names, sizes and types, rules, hazards, knobs and memory sizes; each refusal a
located DocError.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping

from zomboss import expr as ex
from zomboss.doc import DocError
from zomboss.doc import model as dm
from zomboss.expr import is_constant
from zomboss.knowledge.records import KB, MemoryInfo, scope_names


def number(e: ex.Expr, params: Mapping[str, int], where: dm.Loc, what: str) -> int:
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


def check_names(doc: dm.Doc) -> None:
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
        for tok in ins.pops + ins.pushes:
            for what, part in (("index", tok.index), ("condition", tok.when)):
                if part is not None:
                    check(_lets_inlined(ins, part), ins.loc, f"{ins.name}: the {what} of its token on {tok.queue}", sym)
        for what, timed in (("latency", ins.latency), ("issue", ins.issue)):
            if timed is not None:
                check(_lets_inlined(ins, timed), ins.loc, f"{ins.name} {what}", sym)
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


def validate(kb: KB, overrides: Mapping[str, int] | None = None) -> None:
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
    _validate_engines(kb)
    _validate_interlocks(kb)
    _validate_fetch(kb)
    _validate_stalls(kb)
    _validate_queues(kb)
    _check_exprs(kb)


def _validate_interlocks(kb: KB) -> None:
    """`interlock NAME, ...` names memories and register files, each once."""
    seen: set[str] = set()
    for d in kb.doc.decls:
        if d.kind != "interlock":
            continue
        if d.name not in kb.memories and d.name not in kb.regfiles:
            raise DocError(f"{d.loc}: interlock {d.name}: no memory or register file of that name")
        if d.name in seen:
            raise DocError(f"{d.loc}: interlock {d.name}: given twice")
        seen.add(d.name)


def _validate_fetch(kb: KB) -> None:
    """`fetch { blocking: B }`: once, known fields, B 0 or 1."""
    fetch = [d for d in kb.doc.decls if d.kind == "fetch"]
    if len(fetch) > 1:
        raise DocError(f"{fetch[1].loc}: fetch: given twice")
    for d in fetch:
        for k, e in d.fields.items():
            if k not in dm.FETCH_FIELDS:
                raise DocError(f"{d.loc}: fetch: unknown field {k!r} (fields: {', '.join(dm.FETCH_FIELDS)})")
            if number(e, kb.params, d.loc, f"fetch {k}") not in (0, 1):
                raise DocError(f"{d.loc}: fetch: {k} must be 0 or 1")


def stall_members(kb: KB, names: tuple[str, ...]) -> set[str]:
    """The instructions a stall's `after`/`before` names: an instruction, or every instruction of
    a unit."""
    out: set[str] = set()
    for n in names:
        out |= {n} if n in kb.instrs else {i.name for i in kb.instrs.values() if i.unit == n}
    return out


def _touches(kb: KB, ins: dm.Instr, on: str, write: bool) -> bool:
    """Whether an instruction declares an access of `on`: a `reads`/`writes` footprint of a
    memory, or any operand of a register file (which of its operands it reads or writes the
    effects say)."""
    if on in kb.regfiles:
        return any(o.kind == on for o in ins.operands)
    return any(a.memory == on for a in (ins.writes if write else ins.reads))


def _validate_stalls(kb: KB) -> None:
    """`stall S { after: P, before: C, on: M, dep: D, cycles: N }`: every field given and known; P
    and C `|`-joined instructions or units; M a memory or register file that some P writes (reads,
    for war) and some C reads (writes, for waw and war); D raw, waw or war; N a number >= 0.
    A stall that can never apply is a misspelling, refused here."""
    units = {i.unit for i in kb.instrs.values()}
    for d in kb.doc.decls:
        if d.kind != "stall":
            continue
        what = f"{d.loc}: stall {d.name}"
        for k in d.fields:
            if k not in dm.STALL_FIELDS:
                raise DocError(f"{what}: unknown field {k!r} (fields: {', '.join(dm.STALL_FIELDS)})")
        missing = [k for k in dm.STALL_FIELDS if k not in d.fields]
        if missing:
            raise DocError(f"{what}: needs {', '.join(missing)}")
        dep = d.fields["dep"]
        if not isinstance(dep, ex.Ref) or dep.name not in dm.STALL_DEPS:
            raise DocError(f"{what}: dep {ex.show(dep)} is not one of {', '.join(dm.STALL_DEPS)}")
        on = d.fields["on"]
        if not isinstance(on, ex.Ref) or (on.name not in kb.memories and on.name not in kb.regfiles):
            raise DocError(f"{what}: on {ex.show(on)} is not a memory or register file")
        sides = {}
        for k in ("after", "before"):
            names = dm.name_list(d.fields[k])
            if names is None:
                raise DocError(f"{what}: {k} must name instructions or units, `A | B`")
            for n in names:
                if n not in kb.instrs and n not in units:
                    raise DocError(f"{what}: {k} {n!r} is not an instruction or a unit")
            sides[k] = stall_members(kb, names)
        w_after, w_before = dep.name != "war", dep.name != "raw"
        if not any(_touches(kb, kb.instrs[i], on.name, w_after) for i in sides["after"]):
            raise DocError(f"{what}: no instruction of after {'writes' if w_after else 'reads'} {on.name}")
        if not any(_touches(kb, kb.instrs[i], on.name, w_before) for i in sides["before"]):
            raise DocError(f"{what}: no instruction of before {'writes' if w_before else 'reads'} {on.name}")
        if number(d.fields["cycles"], kb.params, d.loc, f"stall {d.name} cycles") < 0:
            raise DocError(f"{what}: cycles must be at least 0")


def _validate_queues(kb: KB) -> None:
    """Every `pops`/`pushes` names a declared queue, with an index exactly when it is an array
    (`queue Q[N]`, N at least 1)."""
    arrays = {}
    for d in kb.doc.decls:
        if d.kind == "queue":
            n = d.fields.get("count")
            if n is not None and number(n, kb.params, d.loc, f"queue {d.name} size") < 1:
                raise DocError(f"{d.loc}: queue {d.name}: an array needs at least 1 queue")
            arrays[d.name] = n is not None
    for ins in kb.instrs.values():
        for verb, toks in (("pops", ins.pops), ("pushes", ins.pushes)):
            for tok in toks:
                if tok.queue not in arrays:
                    raise DocError(f"{ins.loc}: {ins.name} {verb} {tok.queue}, which no `queue` declares")
                if arrays[tok.queue] != (tok.index is not None):
                    how = (
                        "needs an index: it is an array" if arrays[tok.queue] else "takes no index: it is not an array"
                    )
                    raise DocError(f"{ins.loc}: {ins.name} {verb} {tok.queue}: {how}")


def _validate_engines(kb: KB) -> None:
    """`engine U { queue: D, inflight: N, class: C }`: known fields, positive sizes, a known class
    (a misspelt field would otherwise be ignored, and the unit timed as if it were not there)."""
    for d in kb.doc.decls:
        if d.kind != "engine":
            continue
        for k, e in d.fields.items():
            if k not in dm.ENGINE_FIELDS:
                raise DocError(f"{d.loc}: engine {d.name}: unknown field {k!r} (fields: {', '.join(dm.ENGINE_FIELDS)})")
            if k == "class":
                if not isinstance(e, (ex.Ref, ex.Sym)) or e.name.lower() not in dm.UNIT_CLASSES:
                    raise DocError(
                        f"{d.loc}: engine {d.name}: class {ex.show(e)} is not one of {', '.join(dm.UNIT_CLASSES)}"
                    )
            elif number(e, kb.params, d.loc, f"engine {d.name} {k}") < 1:
                raise DocError(f"{d.loc}: engine {d.name}: {k} must be at least 1")


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
                v = number(k.default, kb.params, k.loc, f"canonical value of knob {k.name}")
                lo = number(k.lo, kb.params, k.loc, f"lower bound of knob {k.name}")
                hi = number(k.hi, kb.params, k.loc, f"upper bound of knob {k.name}")
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


MAX_MEMORY_ELEMENTS = 1 << 26  # an on-chip memory's rows x width: the simulators allocate it


def check_memory_size(mem: MemoryInfo, loc: dm.Loc, overrides: Mapping[str, int]) -> None:
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
