"""Executable effects: the `effect` clauses of an ISA doc interpreted on NumPy arrays.

An effect is a loop nest, index lets and tensor assignments (`docmodel.Effect`). One call of
`apply` runs one effect of one executed instruction: the loop nest becomes flat int64 index
columns (first loop outermost), the index expressions are evaluated over those columns at
once (`veval`), and each assignment gathers its argument rows, computes, narrows to the
target's element type and scatters — no per-element Python loops. Sequential semantics (a
point sees the writes of the points before it) are kept exactly: accumulations are summed
per target (`zomboss.machine.accumulate`), repeated targets are applied in rounds (the k-th
write of every row at once), and only an assignment that reads rows another point of the same
nest writes falls back to one point at a time (still vectorised over the row).

Effects never reach ASP: the KB keeps the `reads`/`writes` footprints. What they read and
write, memories and their typed views, is `memories.py`. Number formats that need care are
named hooks implemented once in the core: integer element types in `memories.DTYPES`,
`ROUNDING` here, float formats whose writes round (`bf16`, and `bf16_packed` stored in 2 bytes)
in `zomboss.machine.numformats`.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from zomboss import expr as ex
from zomboss.doc import model as dm
from zomboss.expr import COMPARE
from zomboss.machine import numformats as nf
from zomboss.machine.accumulate import accumulate, accumulate_mac
from zomboss.machine.memories import EffectError, Memories, View

MAX_POINTS = 1 << 24  # loop points one effect may have (bounded memory per instruction)
# values one assignment may compute: its points times the values of its largest operand (a VTA
# GEMM point reads a 16x16 weight): bounded time per instruction
MAX_VALUES = 1 << 27
CHUNK_VALUES = 1 << 22  # values computed at once: an assignment's points go in chunks of this many values

ROUNDING = ("floor", "half_even", "half_up")  # cast(..., round=k): index into this tuple


# ---- vectorised expressions ------------------------------------------------------------------

_VBIN: dict[str, Callable[[Any, Any], Any]] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.floor_divide,
    "%": np.mod,
    "&": np.bitwise_and,
    "|": np.bitwise_or,
    "<<": np.left_shift,
    ">>": np.right_shift,
    **COMPARE,
    "and": np.logical_and,
    "or": np.logical_or,
}


def veval(e: ex.Expr, env: Mapping[str, Any]) -> Any:
    """expr.py's integer semantics over int64 columns (index arithmetic: no value of an
    index expression comes near 2**62). Scalars stay scalars; columns broadcast."""
    return vcompile(e)(env)


Vfn = Callable[[Mapping[str, Any]], Any]
# operators whose Python form agrees with the NumPy one on ints and on int64 columns alike
_FAST: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "&": operator.and_,
    "|": operator.or_,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "and": np.logical_and,
    "or": np.logical_or,
}
_COMPILED: dict[int, tuple[ex.Expr, Vfn]] = {}


def vcompile(e: ex.Expr) -> Vfn:
    """`veval` of e as a closure, built once per expression (effects run per instruction)."""
    hit = _COMPILED.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    fn = _vc(e)
    _COMPILED[id(e)] = (e, fn)
    return fn


def _vc(e: ex.Expr) -> Vfn:  # noqa: C901 - one case per expression node
    if isinstance(e, ex.Int):
        v = e.value
        return lambda env: v
    if isinstance(e, ex.Ref):
        name = e.name

        def ref(env: Mapping[str, Any]) -> Any:
            try:
                return env[name]
            except KeyError:
                raise ex.ExprError(f"unknown name {name!r} in an effect") from None

        return ref
    if isinstance(e, ex.Sym):
        low = e.name.lower()
        return lambda env: low
    if isinstance(e, ex.Bin):
        fa, fb, op = vcompile(e.left), vcompile(e.right), e.op
        if op == "->":
            return lambda env: np.logical_or(np.logical_not(fa(env)), fb(env))
        f = _VBIN[op]
        if op in _FAST:
            g = _FAST[op]
            return lambda env: g(fa(env), fb(env))

        def binop(env: Mapping[str, Any]) -> Any:
            a, b = fa(env), fb(env)
            if isinstance(a, str) or isinstance(b, str):
                return (a == b) if op == "==" else (a != b)
            if op in ("/", "%") and np.any(np.asarray(b) == 0):
                raise ex.Undefined(f"division by zero in {ex.show(e)}")
            return f(a, b)

        return binop
    if isinstance(e, ex.Un):
        fx = vcompile(e.arg)
        if e.op == "not":
            return lambda env: np.logical_not(fx(env))
        return lambda env: np.negative(fx(env))
    if isinstance(e, ex.Cond):
        fc, ft, fo = vcompile(e.cond), vcompile(e.then), vcompile(e.other)
        return lambda env: np.where(fc(env), ft(env), fo(env))
    if isinstance(e, ex.InSet):
        fx, items = vcompile(e.arg), [vcompile(x) for x in e.items]
        return lambda env: np.isin(fx(env), [g(env) for g in items])
    if isinstance(e, ex.Call) and e.fn in ("min", "max", "cdiv", "abs"):
        fs = [vcompile(x) for x in e.args]
        if e.fn == "min":
            return lambda env: np.minimum(fs[0](env), fs[1](env))
        if e.fn == "max":
            return lambda env: np.maximum(fs[0](env), fs[1](env))
        if e.fn == "cdiv":
            return lambda env: -np.floor_divide(np.negative(fs[0](env)), fs[1](env))
        return lambda env: np.abs(fs[0](env))

    def bad(env: Mapping[str, Any]) -> Any:
        raise ex.ExprError(f"{ex.show(e)} cannot be evaluated in an effect")

    return bad


# ---- tensor operations -------------------------------------------------------------------------


def _shr(x: Any, s: Any) -> Any:
    """Arithmetic right shift by s >= 0, left shift by -s for s < 0 (VTA fsim's SHR)."""
    s = np.asarray(s, dtype=np.int64)
    right = np.right_shift(x, np.clip(s, 0, 63))
    left = np.left_shift(x, np.clip(-s, 0, 63))
    return np.where(s >= 0, right, left)


def _mac(c: Any, a: Any, b: Any, bt: int = 0) -> Any:
    """c + a @ b (b: k x o), or c + a @ b^T with bt=1 (b stored o x k, as VTA's weights)."""
    return c + (np.einsum("nrk,nok->nro", a, b) if bt else np.einsum("nrk,nko->nro", a, b))


OPS: dict[str, Callable[..., Any]] = {
    "copy": lambda x: x,
    "zero": lambda: 0,
    "fill": lambda v: v,
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
    "shr": _shr,
    "mac": _mac,
    "rsum": lambda x: x.sum(axis=-1, keepdims=True),
    "rmax": lambda x: x.max(axis=-1, keepdims=True),
    "pack": lambda *vs: np.concatenate(vs, axis=-1),
    **nf.FUNCS,
}
OPTIONS = {
    "mac": ("bt",),
    "mac32": ("bt",),
    "cast": ("scale", "shift", "round", "sat", "bits", "fscale", "relu", "fmt"),
}


def f32(bits: int) -> np.float32:
    """The IEEE binary32 value of a 32-bit pattern (scales travel as bit patterns)."""
    return np.array([bits & 0xFFFFFFFF], dtype=np.uint32).view(np.float32)[0]


def _round_float(y: Any, mode: str) -> Any:
    if mode == "half_even":
        return np.rint(y)
    if mode == "half_up":
        return np.floor(y + np.float32(0.5))
    return np.floor(y)


def _cast(
    x: Any,
    dtype: Any,
    scale: int = 1,
    shift: int = 0,
    round: int = 0,
    sat: int = 0,
    bits: int = 0,
    fscale: int = -1,
    relu: int = 0,
    fmt: str = "",
) -> Any:
    """x * scale / 2**shift rounded (ROUNDING[round]), then saturated when sat=1 (to dtype,
    or to a signed `bits`-bit integer: a narrow value staged in a wider tensor); with fscale
    (an fp32 bit pattern): fp32(x) * fscale in fp32 arithmetic, rounded to an integer;
    relu=1 clears negative results (after saturation); fmt="NAME" applies the number-format
    hook `numformats.HOOKS[NAME]` (float32 values in and out) and nothing else."""
    if fmt:
        return nf.HOOKS[fmt](np.asarray(x, dtype=np.float32))
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if bits > 0 else (np.iinfo(dtype).min, np.iinfo(dtype).max)
    if fscale >= 0:
        y = _round_float(np.asarray(x).astype(np.float32) * f32(fscale), ROUNDING[round])
        if sat:
            y = np.clip(y, lo, hi)
        v = y.astype(np.int64)
        return np.maximum(v, 0) if relu else v
    v = np.asarray(x, dtype=np.int64) * scale
    if shift > 0:
        q = np.right_shift(v, shift)
        r = v - np.left_shift(q, shift)
        half = 1 << (shift - 1)
        if ROUNDING[round] == "half_up":
            q = q + (r >= half)
        elif ROUNDING[round] == "half_even":
            q = q + ((r > half) | ((r == half) & (q & 1 == 1)))
        v = q
    if sat:
        v = np.clip(v, lo, hi)
    return np.maximum(v, 0) if relu else v


# ---- applying an effect -------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _grids(counts: tuple[int, ...]) -> np.ndarray:
    """The loop nest's index columns (first loop outermost), shared read-only."""
    total = int(np.prod(counts, dtype=np.int64))
    g = np.indices(counts, dtype=np.int64).reshape(len(counts), total)
    g.flags.writeable = False
    return g


def apply(mem: Memories, eff: dm.Effect, env: Mapping[str, Any]) -> int:
    """Run one effect of an instruction whose scalar names are `env`; returns its loop points."""
    cols: dict[str, Any] = dict(env)
    counts = []
    for lp in eff.loops:
        if lp.count is not None:
            counts.append(int(vcompile(lp.count)(env)))
        else:
            assert lp.lo is not None and lp.hi is not None
            counts.append(int(vcompile(lp.hi)(env)) - int(vcompile(lp.lo)(env)))
    counts = [max(c, 0) for c in counts]
    total = int(np.prod(counts, dtype=np.int64)) if counts else 1
    if total == 0:
        return 0
    if total > MAX_POINTS:
        raise EffectError(f"the effect has {total:,} points, more than the {MAX_POINTS:,} one instruction may", eff.loc)
    per = max((_per_point(mem.views, a) for a in eff.assigns), default=1)
    if total * per > MAX_VALUES:
        raise EffectError(
            f"the effect computes {total * per:,} values ({total:,} points of up to {per}), more than the "
            f"{MAX_VALUES:,} one instruction may",
            eff.loc,
        )
    loop_columns(mem, eff, env, cols, _grids(tuple(counts)) if counts else np.zeros((0, 1), np.int64), total)
    for name, view, e in eff.reads:
        if view not in mem.views:
            raise EffectError(f"{view!r} is no memory, tensor or view", eff.loc)
        at = _column(vcompile(e)(cols), total, None)
        got = mem.gather(mem.views[view], at, eff).reshape(total, -1)[:, 0].astype(np.int64)
        cols[name] = got if total > 1 else int(got[0])
    for name, e in eff.lets:
        cols[name] = vcompile(e)(cols)
    for a in eff.assigns:
        _assign(mem, a, cols, total)
    return total


def loop_columns(
    mem: Memories, eff: dm.Effect, env: Mapping[str, Any], cols: dict[str, Any], grids: np.ndarray, total: int
) -> None:
    """The loop variables' columns into `cols`: a counted loop's from the grid, a `lo..hi` loop's
    rows with the fields of the words they hold decoded by its layout."""
    for lp, g in zip(eff.loops, grids, strict=True):
        if lp.count is not None:
            cols[lp.var] = g
            continue
        assert lp.lo is not None
        rows = g + int(vcompile(lp.lo)(env))
        words = mem.gather(mem.views[lp.memory], rows, eff).reshape(total, -1)[:, 0].astype(np.int64)
        for f, (hi, lo) in mem.kb.layouts[lp.layout].bits.items():
            cols[f"{lp.var}.{f}"] = (words >> lo) & ((1 << (hi - lo + 1)) - 1)
        cols[lp.var] = rows


def _per_point(views: Mapping[str, View], a: dm.Assign) -> int:
    """The values of an assignment's largest operand or target: what one of its points computes."""
    names = [a.target, *(x.name for x in a.args if x.kind == "ref")]
    return max([1, *(views[n].rows * views[n].cols for n in names if n in views)])


def _option(v: Any) -> int | str:
    """An option's value at the nest's first point (a name stays a name: `fmt = "bf16"`)."""
    return v if isinstance(v, str) else int(np.asarray(v).flat[0])


def _column(x: Any, n: int, pick: np.ndarray | None) -> np.ndarray:
    """x (a scalar or a column of the nest) at the picked points (None: all of them)."""
    if type(x) is np.ndarray and x.shape == (n,) and x.dtype == np.int64:
        return x if pick is None else x[pick]
    if np.ndim(x) == 0:
        return np.full(n if pick is None else len(pick), int(x), dtype=np.int64)
    col = np.broadcast_to(np.asarray(x, dtype=np.int64), (n,))
    return col if pick is None else col[pick]


def _assign(mem: Memories, a: dm.Assign, cols: Mapping[str, Any], total: int) -> None:  # noqa: C901
    if a.op not in OPS and a.op != "cast":
        raise EffectError(f"unknown tensor operation {a.op!r} (known: {', '.join([*OPS, 'cast'])})", a.loc)
    if a.target not in mem.views:
        raise EffectError(f"{a.target!r} is no memory, tensor or view", a.loc)
    pick: np.ndarray | None = None
    if a.when is not None:
        w = vcompile(a.when)(cols)
        if np.ndim(w) == 0:
            if not w:
                return
        else:
            w = w if w.shape == (total,) else np.broadcast_to(w, (total,))
            if not w.all():
                pick = np.nonzero(w)[0]
                if not len(pick):
                    return
    tv = mem.views[a.target]
    tidx = _column(vcompile(a.index)(cols), total, pick)
    refs = []
    for x in a.args:
        if x.kind == "ref":
            if x.name not in mem.views:
                raise EffectError(f"{x.name!r} is no memory, tensor or view", a.loc)
            refs.append((mem.views[x.name], _column(vcompile(x.expr)(cols), total, pick)))
    vals = [_column(vcompile(x.expr)(cols), total, pick) for x in a.args if x.kind == "val"]
    opts: dict[str, Any] = {x.name: _option(vcompile(x.expr)(cols)) for x in a.args if x.kind == "opt"}
    allowed = OPTIONS.get(a.op, ())
    for k in opts:
        if k not in allowed:
            raise EffectError(
                f"{a.op} takes no option {k!r}" + (f" (options: {', '.join(allowed)})" if allowed else ""), a.loc
            )
    if "fmt" in opts and opts["fmt"] not in nf.HOOKS:
        raise EffectError(f"no number-format hook {opts['fmt']!r} (known: {', '.join(nf.HOOKS)})", a.loc)
    _execute(mem, a, tv, tidx, refs, vals, opts, [x.kind for x in a.args if x.kind != "opt"])


def _execute(
    mem: Memories,
    a: dm.Assign,
    tv: View,
    tidx: np.ndarray,
    refs: list[tuple[View, np.ndarray]],
    vals: list[np.ndarray],
    opts: dict[str, Any],
    order: list[str],
) -> None:
    """An assignment at its (picked) points, its indices and operands evaluated: gather,
    compute, narrow and scatter in the order sequential semantics needs (`_assign`'s second
    half, shared with `zomboss.machine.nests`)."""
    n = len(tidx)
    n_el = tv.rows * tv.cols
    step = max(1, CHUNK_VALUES // _per_point(mem.views, a))

    def chunks(rows: np.ndarray) -> Iterator[np.ndarray]:
        """`rows` in pieces of at most CHUNK_VALUES values (bounded memory per instruction)."""
        for i in range(0, len(rows), step):
            yield rows[i : i + step]

    def compute(rows: np.ndarray | None) -> np.ndarray:
        """The values of the points `rows` (None: every point)."""
        m = n if rows is None else len(rows)
        ri = iter(refs)
        vi = iter(vals)
        args = []
        for k in order:
            if k == "ref":
                v, idx = next(ri)
                g = mem.gather(v, idx if rows is None else idx[rows], a)
                args.append(g.astype(np.int64) if np.issubdtype(g.dtype, np.integer) else g.astype(np.float64))
            else:
                col = next(vi)
                args.append((col if rows is None else col[rows])[:, None, None])
        with np.errstate(all="ignore"):  # IEEE results (inf, NaN) are values here
            out = _cast(args[0], tv.values, **opts) if a.op == "cast" else OPS[a.op](*args, **opts)
        out = np.broadcast_to(np.asarray(out), (m, *np.shape(out)[1:]) if np.ndim(out) else (m, 1, 1))
        if out[0].size != n_el:
            out = np.broadcast_to(out.reshape(m, -1)[:, :1], (m, n_el)) if out[0].size == 1 else out
            if out.reshape(m, -1).shape[1] != n_el:
                raise EffectError(f"{a.op} yields {out[0].size} values per point; {a.target} holds {n_el}", a.loc)
        return out.reshape(m, n_el)

    same = [(v, idx) for v, idx in refs if v.memory == tv.memory]
    if (
        a.op == "mac"
        and not tv.external
        and np.issubdtype(tv.values, np.integer)
        and refs
        and refs[0][0] is tv
        and np.array_equal(refs[0][1], tidx)
        and len(same) == 1
    ):
        if not (
            order == ["ref"] * 3 and set(opts) <= {"bt"} and accumulate_mac(mem, a, tv, tidx, refs, opts, CHUNK_VALUES)
        ):
            accumulate(mem, a, tv, tidx, compute, chunks)
        return
    if _partial_overlap(mem, tv, tidx) or any(_reads_written(mem, v, idx, tv, tidx) for v, idx in same):
        for r in range(n):  # reads what other points write: one point at a time, in order
            rows = np.array([r])
            mem.scatter(tv, tidx[rows], compute(rows), a)
        return
    # (below, no point reads what another writes: computing a round in chunks changes nothing)
    if n == 1 or bool((tidx[1:] > tidx[:-1]).all()):  # distinct targets: one round
        if n <= step:
            mem.scatter(tv, tidx, compute(None), a)
            return
        for rows in chunks(np.arange(n)):
            mem.scatter(tv, tidx[rows], compute(rows), a)
        return
    occ = _occurrence(tidx)
    for rnd in range(int(occ.max()) + 1):  # the rnd-th write of every target row at once
        for rows in chunks(np.nonzero(occ == rnd)[0]):
            mem.scatter(tv, tidx[rows], compute(rows), a)


def _reads_written(mem: Memories, v: View, idx: np.ndarray, tv: View, tidx: np.ndarray) -> bool:
    """Whether some point reads storage another point writes (same view: another index)."""
    if v is tv or (v.rows, v.cols, v.dtype, v.stride) == (tv.rows, tv.cols, tv.dtype, tv.stride):
        return not np.array_equal(idx, tidx) and bool(np.isin(idx, tidx).any())
    (rs, rn), (ws, wn) = mem.span(v, idx), mem.span(tv, tidx)
    order = np.argsort(ws, kind="stable")
    w_lo = ws[order]
    pos = np.searchsorted(w_lo, rs + rn, side="left")  # writes starting before each read ends
    best_end = np.maximum.accumulate(w_lo + wn) if len(w_lo) else w_lo
    hit = (pos > 0) & (best_end[np.maximum(pos - 1, 0)] > rs)
    if not hit.any():
        return False
    # a point reading exactly the element it alone writes needs no ordering
    return not (np.array_equal(rs, ws) and rn == wn and len(np.unique(tidx)) == len(tidx))


def _partial_overlap(mem: Memories, tv: View, tidx: np.ndarray) -> bool:
    """Whether two written elements share storage without being the same element (an
    external view whose step is smaller than its element): rounds would reorder them."""
    if not tv.external or tv.stride >= tv.elem_bytes or len(tidx) < 2:
        return False
    u = np.unique(tidx) * tv.stride
    return bool(len(u) > 1 and np.diff(u).min() < tv.elem_bytes)


def _occurrence(idx: np.ndarray) -> np.ndarray:
    """For each position, how many earlier positions hold the same value."""
    order = np.argsort(idx, kind="stable")
    s = idx[order]
    start = np.r_[0, np.nonzero(np.diff(s))[0] + 1]
    run = np.repeat(start, np.diff(np.r_[start, len(s)]))
    occ = np.empty_like(idx)
    occ[order] = np.arange(len(s)) - run
    return occ
