"""Effects with a loop nest or data reads, compiled once per doc effect (`compiled.compile_effect`
hands them here): the interpreter's `effects.apply` with its doc-only decisions taken when the
simulator is built and its per-instruction work cut where it provably changes nothing.

What is the interpreter's, unchanged: the loop counts and the point limits (`MAX_POINTS`,
`MAX_VALUES`), `lo..hi` loops over a memory, reads whose index depends on the nest, the lets and
every assignment's guard, indices and operands — evaluated by the interpreter's own closures
(`effects.vcompile`) in its order — and, whenever the shortcut below does not apply,
`effects._execute` (rounds per repeated target, one point at a time where points read what
others write, `mac`'s accumulation) or the whole `effects._assign`.

What is cut:
* a read whose index does not depend on the nest (`let p = pre_e[0]`) is one element read, held
  as a NumPy int64 scalar where the interpreter holds a column of that value at every point: the
  NumPy operations the interpreter's closures apply to it give the same values, scalar or column
  (a guard that is one value short-circuits the assignment, as a column all true or all false does);
* a column that depends on the loop counts and on values that are one per instruction only
  (`i * dim + k`, `i < p_rows`) is computed once per distinct (counts, those values) and kept,
  read only, with its bounds and order, while the cache hits;
* an assignment that copies or zeroes plain integer rows on chip at distinct, increasing targets,
  in bounds, with no point reading what another writes, is one gather and one scatter on the flat
  arrays (what `_execute` computes there, without its widening and narrowing round trip).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zomboss import expr as ex
from zomboss.doc import model as dm
from zomboss.machine import effects as fx

Applied = Callable[[fx.Memories, Mapping[str, Any]], int]
Vfn = fx.Vfn

CACHE_ENTRIES = 256  # distinct keys a column cache keeps before it starts afresh
_TRIES = 256  # lookups after which a cache that mostly misses turns itself off


@dataclass
class _Cached:
    """A column expression's values per (loop counts, the one-per-instruction values it reads)."""

    fn: Vfn
    names: tuple[str, ...]
    table: dict[Any, np.ndarray] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    on: bool = True

    def __call__(self, cols: Mapping[str, Any], counts: tuple[int, ...]) -> Any:
        if not self.on:
            return self.fn(cols)
        try:
            vals = tuple([cols[n] for n in self.names])
            key = (counts, vals, tuple([type(v) for v in vals]))
            got = self.table.get(key)
        except (KeyError, TypeError):  # a missing name (the evaluation reports it), an array
            return self.fn(cols)
        if got is not None:
            self.hits += 1
            return got
        self.misses += 1
        if self.misses > _TRIES and self.hits < 4 * self.misses:
            self.on = False
            self.table.clear()
        out = self.fn(cols)
        if type(out) is np.ndarray:
            if len(self.table) >= CACHE_ENTRIES:
                self.table.clear()
            out.flags.writeable = False
            self.table[key] = out
            if out.base is None:  # its own data, never written again: its facts can be kept
                if len(_FACTS) > 4 * CACHE_ENTRIES:
                    _FACTS.clear()
                _FACTS[id(out)] = (out, None)
        return out


Colfn = Callable[[Mapping[str, Any], tuple[int, ...]], Any]


def _plain(f: Vfn) -> Colfn:
    return lambda cols, counts: f(cols)


@dataclass(frozen=True)
class _Ref:
    view: fx.View
    index: Colfn
    twin: bool  # the target's view (or its shape) at the target's index: reads only what its own point writes


@dataclass(frozen=True)
class _Plan:
    """One assignment with its doc-only decisions taken (None `target`: the interpreter's `_assign`)."""

    a: dm.Assign
    target: fx.View | None
    when: Colfn | None = None
    index: Colfn | None = None
    refs: tuple[_Ref, ...] = ()
    vals: tuple[Colfn, ...] = ()
    opts: tuple[tuple[str, Colfn], ...] = ()
    order: tuple[str, ...] = ()
    direct: str = ""  # "copy" or "zero": done on the flat arrays when the run-time conditions hold
    step: int = 1  # points `_execute` computes at once (one chunk)


@dataclass(frozen=True)
class _Read:
    name: str
    view: fx.View | None
    index: Vfn
    uniform: bool  # the index does not depend on the nest, the view holds plain integers: one element read


def _free(e: ex.Expr) -> set[str]:
    return {r.name for r in ex.refs(e)}


def _hooked(v: fx.View) -> bool:
    f = fx.nf.FORMATS.get(v.fmt)
    return f is not None and (f.widen is not None or f.narrow is not None)


def _plain_ints(v: fx.View) -> bool:
    """On chip, integers stored as they are read (no number-format hook)."""
    return not v.external and not _hooked(v) and bool(np.issubdtype(v.dtype, np.integer))


class _Scope:
    """Which names vary over the nest, and what a column's value depends on, binding by binding."""

    def __init__(self, eff: dm.Effect) -> None:
        self.column: set[str] = set()  # names whose value is a column
        self.data: set[str] = set()  # columns of memory data (never cached)
        self.prefixes: tuple[str, ...] = ()  # `v.` of a loop over a memory: its decoded fields
        self.deps: dict[str, frozenset[str]] = {}  # a cacheable column's one-per-instruction inputs
        bound = [lp.var for lp in eff.loops] + [n for n, _, _ in eff.reads] + [n for n, _ in eff.lets]
        exprs = [e for _, _, e in eff.reads] + [e for _, e in eff.lets]
        later = [set(bound[len(eff.loops) + k :]) for k in range(len(exprs))]
        # a name bound twice, or seen before its binding, would make a column's inputs ambiguous
        self.cacheable = len(set(bound)) == len(bound) and not any(
            _free(e) & ls for e, ls in zip(exprs, later, strict=True)
        )
        for lp in eff.loops:
            self.column.add(lp.var)
            self.deps[lp.var] = frozenset()
            if lp.count is None:
                self.data.add(lp.var)
                self.prefixes += (lp.var + ".",)

    def _is_data(self, n: str) -> bool:
        return n in self.data or n.startswith(self.prefixes)

    def varies(self, e: ex.Expr) -> bool:
        return any(n in self.column or self._is_data(n) for n in _free(e))

    def _inputs(self, e: ex.Expr) -> frozenset[str] | None:
        """The one-per-instruction names e's value depends on, or None if it reads data columns."""
        out: set[str] = set()
        for n in _free(e):
            if self._is_data(n):
                return None
            out |= self.deps[n] if n in self.column else {n}
        return frozenset(out)

    def bind(self, name: str, e: ex.Expr, data: bool) -> None:
        """A read (`data`) or let bound to `name`."""
        self.column.discard(name)
        self.data.discard(name)
        if not self.varies(e):
            return
        self.column.add(name)
        inputs = None if data else self._inputs(e)
        if inputs is None:
            self.data.add(name)
        else:
            self.deps[name] = inputs

    def compile(self, e: ex.Expr) -> Colfn:
        """e's closure: a cached one when e is a column of the counts and per-instruction values."""
        fn = fx.vcompile(e)
        inputs = self._inputs(e) if self.cacheable and self.varies(e) else None
        return _plain(fn) if inputs is None else _Cached(fn, tuple(sorted(inputs)))


def _plan(views: Mapping[str, fx.View], a: dm.Assign, sc: _Scope) -> _Plan:
    if a.op not in fx.OPS and a.op != "cast" or a.op == "mac" or a.target not in views:
        return _Plan(a, None)  # an error the interpreter reports, or `mac`'s accumulation
    refs = [x for x in a.args if x.kind == "ref"]
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
        if _plain_ints(src) and src.dtype == tv.dtype and src.rows * src.cols == tv.rows * tv.cols:
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
    )


# ---- facts of cached columns ------------------------------------------------------------------

# columns the caches hold (kept alive here, so an id names one array), with their facts once known
_FACTS: dict[int, tuple[np.ndarray, tuple[int, int, bool] | None]] = {}


def _facts(col: np.ndarray) -> tuple[int, int, bool]:
    """A column's least and greatest value and whether it strictly increases (kept for the
    columns the caches hold)."""
    hit = _FACTS.get(id(col))
    if hit is not None and hit[0] is col and hit[1] is not None:
        return hit[1]
    n = len(col)
    inc = n == 1 or bool((col[1:] > col[:-1]).all())
    out = (int(col[0]), int(col[-1]), inc) if inc else (int(col.min()), int(col.max()), inc)
    if hit is not None and hit[0] is col:
        _FACTS[id(col)] = (col, out)
    return out


def _direct(mem: fx.Memories, p: _Plan, tidx: np.ndarray, ridx: list[np.ndarray]) -> bool:
    """Copy or zero on the flat arrays when that is what `_execute` would do (in bounds, distinct
    increasing targets, one chunk, nothing read that another point writes); False otherwise."""
    tv = p.target
    assert tv is not None
    n = len(tidx)
    if n == 0 or n > p.step:
        return False
    lo, hi, inc = _facts(tidx)
    if not inc or lo < 0 or hi >= tv.count:
        return False
    dst = mem.flat(tv)
    if p.direct == "zero":
        dst[tidx] = 0
        return True
    r, idx = p.refs[0], ridx[0]
    v = r.view
    if v.memory == tv.memory and not r.twin and fx._reads_written(mem, v, idx, tv, tidx):
        return False
    rlo, rhi, _ = _facts(idx)
    if rlo < 0 or rhi >= v.count:
        return False
    dst[tidx] = mem.flat(v)[idx]
    return True


def _run(mem: fx.Memories, p: _Plan, cols: Mapping[str, Any], total: int, counts: tuple[int, ...]) -> None:
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
            if not w.all():
                pick = np.nonzero(w)[0]
                if not len(pick):
                    return
    assert p.index is not None
    col = fx._column
    tidx = col(p.index(cols, counts), total, pick)
    ridx = [col(r.index(cols, counts), total, pick) for r in p.refs]
    vals = [col(f(cols, counts), total, pick) for f in p.vals]
    opts: dict[str, Any] = {k: fx._option(f(cols, counts)) for k, f in p.opts}
    if "fmt" in opts and opts["fmt"] not in fx.nf.HOOKS:
        raise fx.EffectError(f"no number-format hook {opts['fmt']!r} (known: {', '.join(fx.nf.HOOKS)})", a.loc)
    if p.direct and _direct(mem, p, tidx, ridx):
        return
    refs = [(r.view, i) for r, i in zip(p.refs, ridx, strict=True)]
    fx._execute(mem, a, tv, tidx, refs, vals, opts, list(p.order))


def _read_one(mem: fx.Memories, r: _Read, at: Any, total: int) -> Any:
    """A read at an index that is one value: that element's first value (a Python int for a
    one-point nest, else an int64 scalar standing for the interpreter's column of it); None
    where the interpreter's way must run (an index that is not an integer, or out of bounds)."""
    v = r.view
    assert v is not None
    if (type(at) is int or isinstance(at, np.integer)) and 0 <= at < v.count:
        x = mem.flat(v)[int(at), 0]
        return int(x) if total == 1 else np.int64(x)
    return None


def compile_nest(views: Mapping[str, fx.View], eff: dm.Effect) -> Applied:
    """`effects.apply` of `eff` as a closure (any effect: what it cannot shortcut it interprets)."""
    sc = _Scope(eff)
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

    def apply(mem: fx.Memories, env: Mapping[str, Any]) -> int:
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
            raise fx.EffectError(
                f"the effect has {total:,} points, more than the {fx.MAX_POINTS:,} one instruction may", eff.loc
            )
        if total * per > fx.MAX_VALUES:
            raise fx.EffectError(
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
                _loops(mem, eff, env, cols, grids, total)
        for r in reads:
            if r.view is None:
                raise fx.EffectError(f"{eff.reads[reads.index(r)][1]!r} is no memory, tensor or view", eff.loc)
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


def _loops(
    mem: fx.Memories, eff: dm.Effect, env: Mapping[str, Any], cols: dict[str, Any], grids: np.ndarray, total: int
) -> None:
    """The loop columns, `lo..hi` loops decoded from their memory (the interpreter's code)."""
    for lp, g in zip(eff.loops, grids, strict=True):
        if lp.count is not None:
            cols[lp.var] = g
            continue
        assert lp.lo is not None
        rows = g + int(fx.vcompile(lp.lo)(env))
        src = mem.views[lp.memory]
        words = mem.gather(src, rows, eff).reshape(total, -1)[:, 0].astype(np.int64)
        lay = mem.kb.layouts[lp.layout]
        for f, (hi, lo) in lay.bits.items():
            cols[f"{lp.var}.{f}"] = (words >> lo) & ((1 << (hi - lo + 1)) - 1)
        cols[lp.var] = rows
