"""Compiling a parsed doc to a KB: parameters evaluated (with `--param` overrides), memories,
register files, layouts and states sized, operand ranges turned into rules, the whole
validated and translated to ASP.
"""

from __future__ import annotations

from collections.abc import Mapping

from zomboss import expr as ex
from zomboss.doc import DocError
from zomboss.doc import model as dm
from zomboss.knowledge.asp import kb_program, library_text
from zomboss.knowledge.records import KB, LayoutInfo, MemoryInfo, RegFileInfo
from zomboss.knowledge.validate import check_memory_size, check_names, number, validate


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
            _check_domain(p, env, over)
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
        _check_domain(p, env, over)
    return env


def _check_domain(p: dm.Param, env: Mapping[str, int], over: Mapping[str, int]) -> None:
    """A parameter's value must lie in its declared domain (`param NAME in LO..HI = ...`): an
    override outside it is named as the user wrote it; a derived value, with the overrides
    that moved it."""
    if p.lo is None or p.hi is None:
        return
    bounds = []
    for b in (p.lo, p.hi):
        for r in ex.refs(b):
            if r.name not in env:
                raise DocError(f"{p.loc}: the domain of {p.name!r} uses unknown parameter {r.name!r} (define it above)")
        try:
            ex.check_limits(b)
            v = ex.evaluate(b, env)
        except ex.ExprError as e:
            raise DocError(f"{p.loc}: the domain of {p.name!r}: {e}") from None
        if not isinstance(v, int):
            raise DocError(f"{p.loc}: the domain of {p.name!r}: expected a number, got {ex.show(b)}")
        bounds.append(int(v))
    lo, hi = bounds
    v = env[p.name]
    if lo <= v <= hi:
        return
    domain = (
        f"{lo}..{hi}"
        if (ex.show(p.lo), ex.show(p.hi)) == (str(lo), str(hi))
        else (f"{ex.show(p.lo)}..{ex.show(p.hi)} = {lo}..{hi}")
    )
    if p.name in over:
        raise DocError(f"--param {p.name}={v}: outside the domain of {p.name}, {domain} ({p.loc})")
    with_ = ", ".join(f"--param {k}={x}" for k, x in over.items())
    raise DocError(
        f"{p.loc}: parameter {p.name} = {v} is outside its domain {domain}" + (f" (with {with_})" if with_ else "")
    )


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
                out.append(dm.Rule(f"{ins.name}.{o.name}.range", (ins.name,), msg, e, ins.loc, generated=True))
            elif o.kind in regfiles:
                e = ex.Bin("<", ex.Ref((o.name,)), ex.Int(regfiles[o.kind].count))
                msg = f"{o.name} of {ins.name} must name a register of {o.kind} (0..{regfiles[o.kind].count - 1})"
                out.append(dm.Rule(f"{ins.name}.{o.name}.reg", (ins.name,), msg, e, ins.loc, generated=True))
    return out


def _layout(lay: dm.Layout, params: Mapping[str, int]) -> LayoutInfo:
    width = number(lay.width, params, lay.loc, f"layout {lay.name} width")
    bits: dict[str, tuple[int, int]] = {}
    for name, (hi_e, lo_e) in lay.bits.items():
        hi = number(hi_e, params, lay.loc, f"layout {lay.name} field {name}")
        lo = number(lo_e, params, lay.loc, f"layout {lay.name} field {name}")
        if not 0 <= lo <= hi < width:
            raise DocError(
                f"{lay.loc}: layout {lay.name} field {name}: bits {hi}..{lo} must satisfy {width - 1} >= hi >= lo >= 0"
            )
        bits[name] = (hi, lo)
    return LayoutInfo(lay.name, width, bits)


def compile_doc(doc: dm.Doc, target: str, overrides: Mapping[str, int]) -> KB:
    check_names(doc)
    params = _eval_params(doc, overrides)
    memories: dict[str, MemoryInfo] = {}
    for m in doc.memories:
        f = m.fields
        unknown = set(f) - {"rows", "width", "type", "banks", "ports", *dm.CHANNEL_FIELDS}
        if unknown:
            raise DocError(
                f"{m.loc}: memory {m.name}: unknown field {sorted(unknown)[0]!r} "
                f"(rows, width, type, banks, ports{', ' + ', '.join(dm.CHANNEL_FIELDS) if m.external else ''})"
            )
        for k in dm.CHANNEL_FIELDS:
            if k in f and not m.external:
                raise DocError(f"{m.loc}: memory {m.name}: {k} is a field of an external memory's channel")
            if k in f and number(f[k], params, m.loc, f"memory {m.name} {k}") < (0 if k == "latency" else 1):
                raise DocError(f"{m.loc}: memory {m.name}: {k} must be at least {0 if k == 'latency' else 1}")
        if not m.external and ("rows" not in f or "width" not in f):
            raise DocError(f"{m.loc}: memory {m.name} needs rows and width (or 'external')")
        memories[m.name] = MemoryInfo(
            m.name,
            number(f["rows"], params, m.loc, f"memory {m.name} rows") if "rows" in f else None,
            number(f["width"], params, m.loc, f"memory {m.name} width") if "width" in f else None,
            _sym(f["type"], m.loc, "type") if "type" in f else "int8",
            number(f["banks"], params, m.loc, "banks") if "banks" in f else 1,
            number(f["ports"], params, m.loc, "ports") if "ports" in f else 1,
            m.external,
        )
        check_memory_size(memories[m.name], m.loc, overrides)
    regfiles = {
        r.name: RegFileInfo(
            r.name,
            number(r.fields.get("count", ex.Int(0)), params, r.loc, "count"),
            number(r.fields.get("width", ex.Int(32)), params, r.loc, "width"),
            _sym(r.fields["type"], r.loc, "type") if "type" in r.fields else "u32",
        )
        for r in doc.regfiles
    }
    states = {
        s.name: (
            number(s.size, params, s.loc, "state size") if s.size is not None else None,
            {k: number(v, params, s.loc, f"reset value of {s.name}.{k}") for k, v in s.fields.items()},
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
    validate(kb, overrides)

    kb.asp, kb.counts = kb_program(kb, library_text())
    return kb
