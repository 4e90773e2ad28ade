"""The columns of a loop-nest effect (`zomboss.machine.nests`): its expressions compiled node by
node as the interpreter's `effects.vcompile` composes them, with the nodes that vary over the nest
but depend otherwise only on values that are one per instruction (`i * dim + k`, `i < p_rows`)
kept per distinct (loop counts, those values) while that pays.

Exactness: a kept column is the value the same closures computed for the same counts and the same
inputs of the same types (the key), so it is the value they would compute again; it is read only,
so nothing downstream changes it. A name bound twice in an effect, or used before its binding,
would make a column's inputs ambiguous: such effects keep nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zomboss import expr as ex
from zomboss.doc import model as dm
from zomboss.machine import effects as fx

Colfn = Callable[[Mapping[str, Any], tuple[int, ...]], Any]  # (names, loop counts) -> value
# the types of the values a key holds: equal values of one of them behave alike in every operation
_KEYS = frozenset({int, bool, str, np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32})
CACHE_ENTRIES = 256  # distinct keys a node keeps before it starts afresh
CACHE_VALUES = 1 << 18  # values a node keeps (its columns together) before it starts afresh
FACT_VALUES = 1 << 21  # values of the columns whose facts are kept, all nodes together
TRIES = 256  # lookups after which a node that mostly misses stops keeping


@dataclass
class Cached:
    """A column node's values per (loop counts, the one-per-instruction values it depends on)."""

    fn: Colfn
    names: tuple[str, ...]
    table: dict[Any, np.ndarray] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    on: bool = True
    size: int = 0  # values the table holds

    def __call__(self, cols: Mapping[str, Any], counts: tuple[int, ...]) -> Any:
        if not self.on:
            return self.fn(cols, counts)
        try:
            vals = tuple([cols[n] for n in self.names])
        except KeyError:  # a missing name: the evaluation reports it
            return self.fn(cols, counts)
        types = tuple([type(v) for v in vals])
        if not _KEYS.issuperset(types):  # an array, a float (-0.0 == 0.0): not a key
            return self.fn(cols, counts)
        key = (counts, vals, types)
        got = self.table.get(key)
        if got is not None:
            self.hits += 1
            return got
        self.misses += 1
        if self.misses > TRIES and self.hits < 4 * self.misses:
            self.on = False
            self.table.clear()
        out = self.fn(cols, counts)
        if type(out) is np.ndarray and out.size <= CACHE_VALUES // 4:
            if len(self.table) >= CACHE_ENTRIES or self.size + out.size > CACHE_VALUES:
                self.table.clear()
                self.size = 0
            out.flags.writeable = False
            self.table[key] = out
            self.size += out.size
            if out.base is None:  # its own data, never written again: its facts can be kept
                _keep(out)
        return out


def _plain(f: fx.Vfn) -> Colfn:
    return lambda cols, counts: f(cols)


# ---- facts of kept columns ------------------------------------------------------------------------

# the columns the nodes keep (held here too, so an id names one array): [column, its bounds, its
# points as a guard, its negation] (_UNKNOWN until computed)
_UNKNOWN: Any = object()
_FACTS: dict[int, list[Any]] = {}
_FACT_SIZE = [0]  # values of the columns in _FACTS


def _keep(col: np.ndarray) -> None:
    """Hold a read-only column (never written again) so that its facts can be kept."""
    if _FACT_SIZE[0] + col.size > FACT_VALUES:
        _FACTS.clear()
        _FACT_SIZE[0] = 0
    _FACTS[id(col)] = [col, _UNKNOWN, _UNKNOWN, _UNKNOWN]
    _FACT_SIZE[0] += col.size


def bounds(col: np.ndarray) -> tuple[int, int, bool]:
    """An int64 column's least and greatest value and whether its values are distinct."""
    hit = _FACTS.get(id(col))
    if hit is not None and hit[0] is col and hit[1] is not _UNKNOWN:
        return hit[1]
    inc = len(col) == 1 or bool((col[1:] > col[:-1]).all())
    if inc:
        out = (int(col[0]), int(col[-1]), True)
    else:
        u = np.unique(col)
        out = (int(u[0]), int(u[-1]), len(u) == len(col))
    if hit is not None and hit[0] is col:
        hit[1] = out
    return out


def extent(col: np.ndarray) -> tuple[int, int]:
    """An int64 column's least and greatest value."""
    hit = _FACTS.get(id(col))
    if hit is not None and hit[0] is col and hit[1] is not _UNKNOWN:
        return hit[1][0], hit[1][1]
    return int(col.min()), int(col.max())


def picked(w: np.ndarray) -> np.ndarray | None | bool:
    """A guard column's points: None for all of them, False for none, else their positions
    (the interpreter's `nonzero`)."""
    hit = _FACTS.get(id(w))
    if hit is not None and hit[0] is w and hit[2] is not _UNKNOWN:
        return hit[2]
    if w.all():
        out: np.ndarray | None | bool = None
    else:
        pick = np.nonzero(w)[0]
        out = pick if len(pick) else False
        if type(out) is np.ndarray:
            out.flags.writeable = False
    if hit is not None and hit[0] is w:
        hit[2] = out
    return out


# ---- logic on kept columns ------------------------------------------------------------------------

_TRUTHS = (bool, np.bool_)


def _fixed(shape: tuple[int, ...], value: bool) -> np.ndarray:
    """A read-only all-`value` guard column, kept with its facts."""
    key = (shape, value)
    got = _FIXED.get(key)
    if got is None:
        got = np.full(shape, value, dtype=bool)
        got.flags.writeable = False
        if len(_FIXED) >= CACHE_ENTRIES:
            _FIXED.clear()
        _FIXED[key] = got
    if id(got) not in _FACTS:
        _keep(got)
    return got


_FIXED: dict[tuple[tuple[int, ...], bool], np.ndarray] = {}


def _logic(fa: Colfn, fb: Colfn, conj: bool) -> Colfn:
    """`np.logical_and` (conj) or `np.logical_or` of a truth value and a boolean column: the
    column itself, or an all-false (all-true) one, the values NumPy computes, without a new array."""
    g = np.logical_and if conj else np.logical_or

    def logic(c: Mapping[str, Any], n: tuple[int, ...]) -> Any:
        a, b = fa(c, n), fb(c, n)
        ta, tb = type(a), type(b)
        if ta in _TRUTHS and tb is np.ndarray and b.dtype == bool and b.ndim == 1:
            return b if bool(a) == conj else _fixed(b.shape, not conj)
        if tb in _TRUTHS and ta is np.ndarray and a.dtype == bool and a.ndim == 1:
            return a if bool(b) == conj else _fixed(a.shape, not conj)
        return g(a, b)

    return logic


def negation(x: Any) -> Any:
    """`np.logical_not(x)`, kept for a kept column."""
    hit = _FACTS.get(id(x))
    if hit is None or hit[0] is not x:
        return np.logical_not(x)
    if hit[3] is _UNKNOWN:
        out = np.logical_not(x)
        out.flags.writeable = False
        hit[3] = out
        _keep(out)
    return hit[3]


# ---- expressions node by node ---------------------------------------------------------------------


def _free(e: ex.Expr) -> set[str]:
    return {r.name for r in ex.refs(e)}


class Scope:
    """Which names vary over an effect's nest, and what a column's value depends on, binding by
    binding (loops, then reads, then lets: the interpreter's order)."""

    def __init__(self, eff: dm.Effect) -> None:
        self.column: set[str] = set()  # names whose value is a column
        self.data: set[str] = set()  # columns of memory data (never kept)
        self.prefixes: tuple[str, ...] = ()  # `v.` of a loop over a memory: its decoded fields
        self.deps: dict[str, frozenset[str]] = {}  # a keepable column's one-per-instruction inputs
        bound = [lp.var for lp in eff.loops] + [n for n, _, _ in eff.reads] + [n for n, _ in eff.lets]
        exprs = [e for _, _, e in eff.reads] + [e for _, e in eff.lets]
        later = [set(bound[len(eff.loops) + k :]) for k in range(len(exprs))]
        self.keeps = len(set(bound)) == len(bound) and not any(
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
        """e's closure (the interpreter's values), its keepable column nodes kept."""
        if isinstance(e, ex.Ref | ex.Int | ex.Sym):
            return _plain(fx.vcompile(e))
        fn = self._node(e)
        inputs = self._inputs(e) if self.keeps and self.varies(e) else None
        return fn if inputs is None else Cached(fn, tuple(sorted(inputs)))

    def _node(self, e: ex.Expr) -> Colfn:  # noqa: C901 - one case per node, as effects._vc
        """`effects._vc` of one node over compiled children (the same NumPy calls, same order)."""
        if isinstance(e, ex.Bin):
            fa, fb, op = self.compile(e.left), self.compile(e.right), e.op
            if op == "->":
                return lambda c, n: np.logical_or(np.logical_not(fa(c, n)), fb(c, n))
            f = fx._VBIN[op]
            if op in ("and", "or"):
                return _logic(fa, fb, op == "and")
            if op in fx._FAST:
                g = fx._FAST[op]
                return lambda c, n: g(fa(c, n), fb(c, n))
            show = ex.show(e)

            def binop(c: Mapping[str, Any], n: tuple[int, ...]) -> Any:
                a, b = fa(c, n), fb(c, n)
                if isinstance(a, str) or isinstance(b, str):
                    return (a == b) if op == "==" else (a != b)
                if op in ("/", "%") and (b == 0 if type(b) is int else np.any(np.asarray(b) == 0)):
                    raise ex.Undefined(f"division by zero in {show}")
                return f(a, b)

            return binop
        if isinstance(e, ex.Un):
            fu = self.compile(e.arg)
            if e.op == "not":
                return lambda c, n: negation(fu(c, n))
            return lambda c, n: np.negative(fu(c, n))
        if isinstance(e, ex.Cond):
            fc, ft, fo = self.compile(e.cond), self.compile(e.then), self.compile(e.other)
            return lambda c, n: np.where(fc(c, n), ft(c, n), fo(c, n))
        if isinstance(e, ex.InSet):
            fi, items = self.compile(e.arg), [self.compile(x) for x in e.items]
            return lambda c, n: np.isin(fi(c, n), [g(c, n) for g in items])
        if isinstance(e, ex.Call) and e.fn in ("min", "max", "cdiv", "abs"):
            fs = [self.compile(x) for x in e.args]
            if e.fn == "min":
                return lambda c, n: np.minimum(fs[0](c, n), fs[1](c, n))
            if e.fn == "max":
                return lambda c, n: np.maximum(fs[0](c, n), fs[1](c, n))
            if e.fn == "cdiv":
                return lambda c, n: -np.floor_divide(np.negative(fs[0](c, n)), fs[1](c, n))
            return lambda c, n: np.abs(fs[0](c, n))
        return _plain(fx.vcompile(e))  # what the interpreter cannot evaluate: its error
