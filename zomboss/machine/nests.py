"""Effects with a loop nest or data reads (and any other effect `compiled._step` declines),
compiled once per doc effect: the interpreter's `effects.apply` with its doc-only decisions taken
when the simulator is built, and its per-instruction work cut where that provably changes nothing.

What stays the interpreter's: the loop counts and the point limits (`MAX_POINTS`, `MAX_VALUES`,
checked at the same moment with the same messages), `lo..hi` loops over a memory, reads whose
index varies over the nest, the order in which lets, guards, indices and operands are evaluated
(by closures that make the interpreter's NumPy calls, `zomboss.machine.columns`), and, where no
shortcut below applies, `effects._execute` (rounds per repeated target, one point at a time where
points read what others write, chunks, `mac`'s accumulation in place) or the whole `effects._assign`
(doc errors: unknown operation, view or option).

What is cut:
* a read at an index that does not vary over the nest (`let p = pre_e[0]`) of plain integers on
  chip is one element read, held as an int64 scalar where the interpreter holds a column of that
  value: NumPy gives the same values scalar or column, and a guard that is one value decides the
  assignment as a column all true or all false does;
* columns that depend only on the loop counts and on values that are one per instruction
  (`i * dim + k`, `i < p_rows`) are kept (`columns.Cached`), with their extents, distinctness,
  guard points and negations;
* an assignment at distinct targets on chip, in one chunk, no point reading what another writes
  (`effects._reads_written`), is one gather, compute and scatter (`_lean`: what `_execute` does
  there, bounds decided by the kept extents); copies and zeroes of plain integers skip the
  widening and narrowing round trip (one integer conversion wraps as the two do); a one-point
  assignment at int indices reads and writes one row by slicing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from zomboss.doc import model as dm
from zomboss.machine import effects as fx
from zomboss.machine.columns import Colfn, Scope, bounds, extent, picked
from zomboss.machine.memories import EffectError, Memories, View

Applied = Callable[[Memories, Mapping[str, Any]], int]
Vfn = fx.Vfn


@dataclass(frozen=True)
class _Ref:
    view: View
    index: Colfn
    twin: bool  # the target's view (or its shape) at the target's index: reads only what its own point writes


@dataclass(frozen=True)
class _Plan:
    """One assignment with its doc-only decisions taken (None `target`: the interpreter's `_assign`)."""

    a: dm.Assign
    target: View | None
    when: Colfn | None = None
    index: Colfn | None = None
    refs: tuple[_Ref, ...] = ()
    vals: tuple[Colfn, ...] = ()
    opts: tuple[tuple[str, Colfn], ...] = ()
    order: tuple[str, ...] = ()
    direct: str = ""  # "copy" or "zero": done on the flat arrays when the run-time conditions hold
    step: int = 1  # points `_execute` computes at once (one chunk)
    lean: bool = False  # on chip and written: `_lean` may run it


@dataclass(frozen=True)
class _Read:
    name: str
    view: View | None
    index: Vfn
    uniform: bool  # the index does not depend on the nest, the view holds plain integers: one element read


def _hooked(v: View) -> bool:
    f = fx.nf.FORMATS.get(v.fmt)
    return f is not None and (f.widen is not None or f.narrow is not None)


def _plain_ints(v: View) -> bool:
    """On chip, integers stored as they are read (no number-format hook)."""
    return not v.external and not _hooked(v) and bool(np.issubdtype(v.dtype, np.integer))


def _plan(views: Mapping[str, View], a: dm.Assign, sc: Scope) -> _Plan:
    if a.op not in fx.OPS and a.op != "cast" or a.target not in views:
        return _Plan(a, None)  # an error the interpreter reports
    refs = [x for x in a.args if x.kind == "ref"]
    if a.op == "mac" and (not refs or refs[0].name not in views or views[refs[0].name] is views[a.target]):
        return _Plan(a, None)  # maybe `mac`'s accumulation in place (`_execute` decides at run time)
    allowed = fx.OPTIONS.get(a.op, ())
    if any(x.name not in views for x in refs) or any(x.name not in allowed for x in a.args if x.kind == "opt"):
        return _Plan(a, None)
    tv = views[a.target]
    ready = []
    for x in refs:
        v = views[x.name]
        shaped = v is tv or (v.rows, v.cols, v.dtype, v.stride) == (tv.rows, tv.cols, tv.dtype, tv.stride)
        ready.append(_Ref(v, sc.compile(x.expr), shaped and x.expr == a.index))
    direct = ""
    if _plain_ints(tv) and a.op == "zero" and not a.args:
        direct = "zero"
    if a.op == "copy" and len(refs) == 1 and len(a.args) == 1 and _plain_ints(tv):
        src = views[refs[0].name]
        # widening to int64 and narrowing to the target's type wraps as one integer conversion does
        wide = np.dtype(src.dtype) != np.uint64
        if _plain_ints(src) and wide and src.rows * src.cols == tv.rows * tv.cols:
            direct = "copy"
    return _Plan(
        a,
        tv,
        sc.compile(a.when) if a.when is not None else None,
        sc.compile(a.index),
        tuple(ready),
        tuple(sc.compile(x.expr) for x in a.args if x.kind == "val"),
        tuple((x.name, sc.compile(x.expr)) for x in a.args if x.kind == "opt"),
        tuple(x.kind for x in a.args if x.kind != "opt"),
        direct,
        max(1, fx.CHUNK_VALUES // fx._per_point(views, a)),
        not tv.external and not tv.read_only,
    )


def _gather(mem: Memories, v: View, idx: np.ndarray | int, a: dm.Assign) -> np.ndarray:
    """The rows `mem.gather` reads before widening (an int: that one row), bounds checked by the
    column's extent (`Memories._check` reports a bad index)."""
    if type(idx) is int:
        if not 0 <= idx < v.count:
            mem._check(v, np.array([idx], dtype=np.int64), a, "reads")
        return mem.flat(v)[idx : idx + 1]
    assert isinstance(idx, np.ndarray)
    lo, hi = extent(idx)
    if lo < 0 or hi >= v.count:
        mem._check(v, idx, a, "reads")
    return mem.flat(v)[idx]


def _lean(
    mem: Memories,
    p: _Plan,
    tidx: np.ndarray | int,
    ridx: list[Any],
    vals: list[np.ndarray],
    opts: dict[str, Any],
) -> bool:
    """`_execute` where it is one gather, compute and scatter (distinct targets, one
    chunk, no point reading what another writes; an int index: the one point, where every way of
    `_execute` is that), its bounds checks decided by the columns' extents; copies and zeroes of
    plain integers straight on the flat arrays. False (nothing done) where `_execute` must run."""
    tv, a = p.target, p.a
    assert tv is not None
    if type(tidx) is int:
        n, lo, hi = 1, tidx, tidx
        at: Any = slice(tidx, tidx + 1)
    else:
        assert isinstance(tidx, np.ndarray)
        n = len(tidx)
        if n > p.step:
            return False
        lo, hi, distinct = bounds(tidx)
        if not distinct:  # rounds: `_execute`'s (distinct targets are its one round, in any order)
            return False
        for r, idx in zip(p.refs, ridx, strict=True):
            if r.view.memory == tv.memory and not r.twin and fx._reads_written(mem, r.view, idx, tv, tidx):
                return False
        at = tidx
    args: list[Any] = []
    ri = vi = 0
    for k in p.order:
        if k == "ref":
            v = p.refs[ri].view
            if v.external:
                g = mem.gather(v, np.asarray(ridx[ri], dtype=np.int64).reshape(-1), a)
            else:
                raw = _gather(mem, v, ridx[ri], a)
                if p.direct == "copy":
                    args.append(raw)
                    ri += 1
                    continue
                g = v.widen(raw).reshape(n, v.rows, v.cols)
            ri += 1
            args.append(g.astype(np.int64) if g.dtype.kind in "iu" else g.astype(np.float64))
        else:
            args.append(vals[vi][:, None, None])
            vi += 1
    n_el = tv.rows * tv.cols
    if p.direct:
        if lo < 0 or hi >= tv.count:
            mem._check(tv, np.asarray(tidx, dtype=np.int64).reshape(-1), a, "writes")
        mem.flat(tv)[at] = args[0] if p.direct == "copy" else 0
        return True
    with np.errstate(all="ignore"):  # IEEE results (inf, NaN) are values here
        out = fx._cast(args[0], tv.values, **opts) if a.op == "cast" else fx.OPS[a.op](*args, **opts)
    out = np.broadcast_to(np.asarray(out), (n, *np.shape(out)[1:]) if np.ndim(out) else (n, 1, 1))
    if out[0].size != n_el:
        out = np.broadcast_to(out.reshape(n, -1)[:, :1], (n, n_el)) if out[0].size == 1 else out
        if out.reshape(n, -1).shape[1] != n_el:
            raise EffectError(f"{a.op} yields {out[0].size} values per point; {a.target} holds {n_el}", a.loc)
    if lo < 0 or hi >= tv.count:
        mem._check(tv, np.asarray(tidx, dtype=np.int64).reshape(-1), a, "writes")
    mem.flat(tv)[at] = tv.narrow(out.reshape(n, n_el))
    return True


_I64 = (-(1 << 63), 1 << 63)


def _run(mem: Memories, p: _Plan, cols: Mapping[str, Any], total: int, counts: tuple[int, ...]) -> None:
    """One assignment over the nest: `effects._assign` with the compiled closures."""
    a = p.a
    tv = p.target
    if tv is None:
        fx._assign(mem, a, cols, total)
        return
    pick: np.ndarray | None = None
    if p.when is not None:
        w = p.when(cols, counts)
        if type(w) is bool or np.ndim(w) == 0:
            if not w:
                return
        else:
            w = w if w.shape == (total,) else np.broadcast_to(w, (total,))
            got = picked(w)
            if got is False:
                return
            pick = got  # type: ignore[assignment]
    assert p.index is not None
    col = fx._column
    if total == 1 and p.lean:  # one point: its indices as ints while they are (converted in order)
        ints = True
        tidx = p.index(cols, counts)
        if not (type(tidx) is int and _I64[0] <= tidx < _I64[1]):
            tidx, ints = col(tidx, total, pick), False
        ridx = []
        for r in p.refs:
            x = r.index(cols, counts)
            if not (type(x) is int and _I64[0] <= x < _I64[1]):
                x, ints = col(x, total, pick), False
            ridx.append(x)
        if not ints:
            tidx = col(tidx, total, pick)
            ridx = [col(x, total, pick) for x in ridx]
    else:
        tidx = col(p.index(cols, counts), total, pick)
        ridx = [col(r.index(cols, counts), total, pick) for r in p.refs]
    vals = [col(f(cols, counts), total, pick) for f in p.vals]
    opts: dict[str, Any] = {k: fx._option(f(cols, counts)) for k, f in p.opts}
    if "fmt" in opts and opts["fmt"] not in fx.nf.HOOKS:
        raise EffectError(f"no number-format hook {opts['fmt']!r} (known: {', '.join(fx.nf.HOOKS)})", a.loc)
    if p.lean and _lean(mem, p, tidx, ridx, vals, opts):
        return
    assert isinstance(tidx, np.ndarray)  # (an int index is one point, which `_lean` always runs)
    refs = [(r.view, i) for r, i in zip(p.refs, ridx, strict=True)]
    fx._execute(mem, a, tv, tidx, refs, vals, opts, list(p.order))


def _read_one(mem: Memories, r: _Read, at: Any, total: int) -> Any:
    """A read at an index that is one value: that element's first value (a Python int for a
    one-point nest, else an int64 scalar standing for the interpreter's column of it); None
    where the interpreter's way must run (an index that is not an integer, or out of bounds)."""
    v = r.view
    assert v is not None
    if (type(at) is int or isinstance(at, np.integer)) and 0 <= at < v.count:
        x = mem.flat(v)[int(at), 0]
        return int(x) if total == 1 else np.int64(x)
    return None


def compile_nest(views: Mapping[str, View], eff: dm.Effect) -> Applied:
    """`effects.apply` of `eff` as a closure (any effect: what it cannot shortcut it interprets)."""
    sc = Scope(eff)
    counters: list[tuple[Vfn | None, Vfn | None]] = []
    for lp in eff.loops:
        if lp.count is not None:
            counters.append((fx.vcompile(lp.count), None))
        else:
            assert lp.lo is not None and lp.hi is not None
            counters.append((fx.vcompile(lp.hi), fx.vcompile(lp.lo)))
    per = max((fx._per_point(views, a) for a in eff.assigns), default=1)
    reads: list[_Read] = []
    for name, view, e in eff.reads:
        v = views.get(view)
        one = v is not None and _plain_ints(v) and (np.dtype(v.dtype).itemsize <= 4 or v.dtype == np.int64)
        reads.append(_Read(name, v, fx.vcompile(e), one and not sc.varies(e)))
        sc.bind(name, e, data=True)
    lets: list[tuple[str, Colfn]] = []
    for name, e in eff.lets:
        lets.append((name, sc.compile(e)))
        sc.bind(name, e, data=False)
    plans = [_plan(views, a, sc) for a in eff.assigns]
    simple = all(lp.count is not None for lp in eff.loops)

    def apply(mem: Memories, env: Mapping[str, Any]) -> int:
        counts = []
        for hi, lo in counters:
            assert hi is not None
            counts.append(int(hi(env)) if lo is None else int(hi(env)) - int(lo(env)))
        counts = [max(c, 0) for c in counts]
        total = math.prod(counts)
        if total >= 1 << 63:
            total = int(np.prod(counts, dtype=np.int64))  # as the interpreter computes it
        if total == 0:
            return 0
        if total > fx.MAX_POINTS:
            raise EffectError(
                f"the effect has {total:,} points, more than the {fx.MAX_POINTS:,} one instruction may", eff.loc
            )
        if total * per > fx.MAX_VALUES:
            raise EffectError(
                f"the effect computes {total * per:,} values ({total:,} points of up to {per}), more than the "
                f"{fx.MAX_VALUES:,} one instruction may",
                eff.loc,
            )
        shape = tuple(counts)
        cols: dict[str, Any] = dict(env)
        if counts:
            grids = fx._grids(shape)
            if simple:
                for lp, g in zip(eff.loops, grids, strict=True):
                    cols[lp.var] = g
            else:
                fx.loop_columns(mem, eff, env, cols, grids, total)
        for r in reads:
            if r.view is None:
                raise EffectError(f"{eff.reads[reads.index(r)][1]!r} is no memory, tensor or view", eff.loc)
            at = r.index(cols)
            got = _read_one(mem, r, at, total) if r.uniform else None
            if got is None:
                col = fx._column(at, total, None)
                got = mem.gather(r.view, col, eff).reshape(total, -1)[:, 0].astype(np.int64)
                got = got if total > 1 else int(got[0])
            cols[r.name] = got
        for name, f in lets:
            cols[name] = f(cols, shape)
        for p in plans:
            _run(mem, p, cols, total, shape)
        return total

    return apply
