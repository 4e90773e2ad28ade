"""Effects compiled once per doc effect: the interpreter's decisions that depend on the doc
alone (which views, which operation, which options, the order of operands) taken when the
simulator is built, not at every executed instruction.

`compile_effect` handles the effects most instructions have: no loop nest and no data reads
(`let x = VIEW[i]`), every assignment an on-chip one other than `mac`'s in-place accumulation
(the interpreter's `accumulate` path). Such an effect has one point, so every strategy of the
interpreter's `_assign` (one round, rounds per repeated target, one point at a time) comes to
the same thing: evaluate the indices, gather, compute, narrow, scatter. The compiled closure
does exactly that with the interpreter's own numeric steps (`View.widen`/`narrow`, `OPS`,
`_cast`, the same dtypes and shapes), in the interpreter's order of evaluation and bounds
checks, so results and errors are bit for bit those of `effects.apply`
(`tests/machine/test_compiled.py`).

Every other effect — a loop nest (`effect over i < dim, k < dim`), data reads, `mac`, an option
naming a number format, a doc error the interpreter reports at run time — is compiled by
`zomboss.machine.nests` (`tests/machine/test_nests.py`), which keeps the interpreter's semantics
and hands it what it cannot shortcut; `compile_effect` no longer returns None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from zomboss.doc import model as dm
from zomboss.machine import effects as fx
from zomboss.machine.memories import EffectError, Memories, View
from zomboss.machine.nests import compile_nest

Applied = Callable[[Memories, Mapping[str, Any]], int]  # (memories, env) -> loop points
Vfn = fx.Vfn


# ---- expressions at one point ------------------------------------------------------------------


def _int_binop(op: str, f: Callable[[Any, Any], Any], show: str) -> Callable[[Any, Any], Any]:
    """`effects.vcompile`'s binary operator `op` (one not evaluated by Python's operators there):
    `/`, `%`, `<<` and `>>` by Python's integer operators when both operands are Python ints
    (where the NumPy ones give the same value as an int64 scalar), NumPy's otherwise."""

    def on_ints(a: int, b: int) -> Any:
        if op in ("/", "%"):
            if b == 0:
                raise fx.ex.Undefined(f"division by zero in {show}")
            return a // b if op == "/" else a % b
        if 0 <= b < 63 and _I64[0] <= a < _I64[1]:
            y = a >> b if op == ">>" else a << b
            if _I64[0] <= y < _I64[1]:
                return y
        return f(a, b)

    fast = op in ("/", "%", "<<", ">>")

    def binop(a: Any, b: Any) -> Any:
        if fast and type(a) is int and type(b) is int:
            return on_ints(a, b)
        if isinstance(a, str) or isinstance(b, str):
            return (a == b) if op == "==" else (a != b)
        if op in ("/", "%") and np.any(np.asarray(b) == 0):
            raise fx.ex.Undefined(f"division by zero in {show}")
        return f(a, b)

    return binop


_SCOMPILED: dict[int, tuple[fx.ex.Expr, Vfn]] = {}


def scompile(e: fx.ex.Expr) -> Vfn:
    """`effects.vcompile` of an expression evaluated at one point (scalars): the same values,
    with integer division, remainder and shifts of Python ints done by Python (NumPy's scalar
    calls cost microseconds each); for values within int64, as the interpreter assumes."""
    hit = _SCOMPILED.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    ex = fx.ex
    fn: Vfn
    if isinstance(e, ex.Bin) and e.op != "->" and e.op not in fx._FAST:
        fa, fb = scompile(e.left), scompile(e.right)
        g = _int_binop(e.op, fx._VBIN[e.op], ex.show(e))
        fn = lambda env: g(fa(env), fb(env))  # noqa: E731
    elif isinstance(e, ex.Bin) and e.op in fx._FAST:
        fa, fb, h = scompile(e.left), scompile(e.right), fx._FAST[e.op]
        fn = lambda env: h(fa(env), fb(env))  # noqa: E731
    elif isinstance(e, ex.Un) and e.op == "not":
        fu = scompile(e.arg)
        fn = lambda env: np.logical_not(fu(env))  # noqa: E731
    elif isinstance(e, ex.Un):
        fu = scompile(e.arg)
        fn = lambda env: np.negative(fu(env))  # noqa: E731
    elif isinstance(e, ex.Cond):
        fc, ft, fo = scompile(e.cond), scompile(e.then), scompile(e.other)
        fn = lambda env: np.where(fc(env), ft(env), fo(env))  # noqa: E731
    else:
        fn = fx.vcompile(e)  # leaves, and nodes whose operands need no fast path
    _SCOMPILED[id(e)] = (e, fn)
    return fn


@dataclass(frozen=True)
class _Ref:
    """An operand read from a view: the view and its index expression."""

    view: View
    index: Vfn


@dataclass(frozen=True)
class _Step:
    """One assignment with its doc-only decisions taken."""

    a: dm.Assign
    target: View
    index: Vfn
    when: Vfn | None
    order: tuple[bool, ...]  # per non-option operand: True for a view read, False for a value
    refs: tuple[_Ref, ...]
    vals: tuple[Vfn, ...]
    opts: tuple[tuple[str, Vfn], ...]
    fn: Callable[..., Any]
    cast: bool
    n_el: int
    # integer registers alone (one plain integer value per element, no option, an operation
    # exact on Python ints modulo 2**64): computed on ints, wrapped to the target's type
    ints: Callable[..., int] | None = None
    bits: int = 0
    signed: bool = False
    packs: bool = False  # `pack` of values alone into a row of plain integers, one per element


def _step(views: Mapping[str, View], a: dm.Assign) -> _Step | None:
    """The compiled assignment, or None when the interpreter must run it (an error it reports
    at run time, an external view, `mac`'s accumulation)."""
    if a.op == "mac" or (a.op not in fx.OPS and a.op != "cast") or a.target not in views:
        return None
    tv = views[a.target]
    refs = [x for x in a.args if x.kind == "ref"]
    if tv.external or tv.read_only or any(x.name not in views or views[x.name].external for x in refs):
        return None
    allowed = fx.OPTIONS.get(a.op, ())
    opts = [x for x in a.args if x.kind == "opt"]
    if any(x.name not in allowed for x in opts):
        return None
    if any(x.name == "fmt" for x in opts):
        return None  # a format name is checked against the hooks at run time
    ints = None
    f = fx.nf.FORMATS.get(tv.fmt)
    plain = bool(np.issubdtype(tv.dtype, np.integer)) and (f is None or (f.widen is None and f.narrow is None))
    one = [tv, *(views[x.name] for x in refs)]
    if not opts and all(_plain_int(v) for v in one) and a.op in _INT_OPS:
        fn, arity = _INT_OPS[a.op]
        ints = fn if arity == len(a.args) else None
    return _Step(
        a,
        tv,
        scompile(a.index),
        scompile(a.when) if a.when is not None else None,
        tuple(x.kind == "ref" for x in a.args if x.kind != "opt"),
        tuple(_Ref(views[x.name], scompile(x.expr)) for x in refs),
        tuple(scompile(x.expr) for x in a.args if x.kind == "val"),
        tuple((x.name, scompile(x.expr)) for x in opts),
        fx.OPS.get(a.op, fx.OPS["copy"]),
        a.op == "cast",
        tv.rows * tv.cols,
        ints,
        8 * np.dtype(tv.dtype).itemsize,
        bool(np.issubdtype(tv.dtype, np.signedinteger)),
        a.op == "pack" and all(x.kind == "val" for x in a.args) and len(a.args) == tv.rows * tv.cols and plain,
    )


# operations whose int64 result, wrapped to the target's type, equals the exact integer result
# so wrapped (add, sub and mul keep the low bits; min and max do not overflow)
_INT_OPS: dict[str, tuple[Callable[..., int], int]] = {
    "copy": (lambda x: x, 1),
    "fill": (lambda v: v, 1),
    "zero": (lambda: 0, 0),
    "add": (lambda x, y: x + y, 2),
    "sub": (lambda x, y: x - y, 2),
    "mul": (lambda x, y: x * y, 2),
    "min": (min, 2),
    "max": (max, 2),
}
_I64 = (-(1 << 63), 1 << 63)


def _scalar(x: Any) -> bool:
    """Whether x is one value (`np.ndim(x) == 0`, without its cost for the usual Python int)."""
    return type(x) is int or np.ndim(x) == 0


def _plain_int(v: View) -> bool:
    """One integer per element, stored and read as is (no number-format hook)."""
    f = fx.nf.FORMATS.get(v.fmt)
    hooked = f is not None and (f.widen is not None or f.narrow is not None)
    return v.rows * v.cols == 1 and bool(np.issubdtype(v.dtype, np.integer)) and not hooked


def _run_ints(mem: Memories, s: _Step, cols: Mapping[str, Any]) -> bool:
    """`_run` of an integer-register assignment on Python ints (after its condition held);
    False when a value is not a plain scalar and the array path must run it instead."""
    a = s.a
    t = s.index(cols)
    ridx = [r.index(cols) for r in s.refs]
    vals = [f(cols) for f in s.vals]
    for x in vals:
        if (type(x) is not int and np.ndim(x) != 0) or not _I64[0] <= int(x) < _I64[1]:
            return False
    for x in (t, *ridx):
        if type(x) is not int and np.ndim(x) != 0:
            return False
    args: list[int] = []
    ri, vi = 0, 0
    for is_ref in s.order:
        if is_ref:
            v = s.refs[ri].view
            k = _at(mem, v, ridx[ri], a, "reads")
            ri += 1
            args.append(int(_rows(mem, v)[k, 0]))
        else:
            args.append(int(vals[vi]))
            vi += 1
    assert s.ints is not None
    y = s.ints(*args) & ((1 << s.bits) - 1)
    if s.signed and y >> (s.bits - 1):
        y -= 1 << s.bits
    k = _at(mem, s.target, t, a, "writes")
    _rows(mem, s.target)[k, 0] = y
    return True


def _run_pack(mem: Memories, s: _Step, cols: Mapping[str, Any]) -> bool:
    """`_run` of a `pack` of int64 values into a row of plain integers: the values as int64,
    converted to the row's type (what narrowing the concatenated columns does); False when a value
    is not a Python int within int64 (the array path runs it, and refuses what it refuses)."""
    t = s.index(cols)
    xs = [f(cols) for f in s.vals]
    if not all(type(x) is int and _I64[0] <= x < _I64[1] for x in xs):
        return False
    k = _at(mem, s.target, t, s.a, "writes")
    mem.flat(s.target)[k] = np.array(xs, dtype=np.int64).astype(s.target.dtype)
    return True


def _rows(mem: Memories, v: View) -> np.ndarray:
    """`Memories.flat(v)`: for a view that is its memory (a register file), the array itself."""
    arr = mem.arrays[v.memory]
    if v.name == v.memory and arr.dtype == v.dtype and arr.ndim == 2 and arr.shape[1] == v.rows * v.cols:
        return arr
    return mem.flat(v)


def _at(mem: Memories, v: View, i: Any, a: dm.Assign, what: str) -> int:
    """An index of one point as the interpreter's int64 column holds it, bounds checked
    (the interpreter's message on a bad one)."""
    if type(i) is not int and np.ndim(i) != 0:
        i = np.broadcast_to(np.asarray(i, dtype=np.int64), (1,))[0]
    k = int(i)
    if not 0 <= k < v.count:
        mem._check(v, np.array([k], dtype=np.int64), a, what)
    return k


def _run(mem: Memories, s: _Step, cols: Mapping[str, Any]) -> None:
    """One assignment at the effect's one point (the interpreter's `_assign` with n = 1)."""
    a = s.a
    if s.when is not None:
        w = s.when(cols)
        if not _scalar(w):
            fx._assign(mem, a, cols, 1)  # a column-valued condition: the interpreter's way
            return
        if not w:
            return
    if s.ints is not None and _run_ints(mem, s, cols):
        return
    if s.packs and _run_pack(mem, s, cols):
        return
    tv = s.target
    t = s.index(cols)
    ridx = [r.index(cols) for r in s.refs]
    vals = [fx._column(f(cols), 1, None) for f in s.vals]
    opts: dict[str, Any] = {k: fx._option(f(cols)) for k, f in s.opts}
    args: list[Any] = []
    ri, vi = 0, 0
    for is_ref in s.order:
        if is_ref:
            r = s.refs[ri]
            v = r.view
            k = _at(mem, v, ridx[ri], a, "reads")
            ri += 1
            g = v.widen(mem.flat(v)[k : k + 1]).reshape(1, v.rows, v.cols)
            args.append(g.astype(np.int64) if np.issubdtype(g.dtype, np.integer) else g.astype(np.float64))
        else:
            args.append(vals[vi][:, None, None])
            vi += 1
    with np.errstate(all="ignore"):  # IEEE results (inf, NaN) are values here
        out = fx._cast(args[0], tv.values, **opts) if s.cast else s.fn(*args, **opts)
    out = np.broadcast_to(np.asarray(out), (1, *np.shape(out)[1:]) if np.ndim(out) else (1, 1, 1))
    n_el = s.n_el
    if out[0].size != n_el:
        out = np.broadcast_to(out.reshape(1, -1)[:, :1], (1, n_el)) if out[0].size == 1 else out
        if out.reshape(1, -1).shape[1] != n_el:
            raise EffectError(f"{a.op} yields {out[0].size} values per point; {a.target} holds {n_el}", a.loc)
    k = _at(mem, tv, t, a, "writes")
    mem.flat(tv)[k : k + 1] = tv.narrow(out.reshape(1, n_el))


def compile_effect(views: Mapping[str, View], eff: dm.Effect) -> Applied | None:
    """`effects.apply` of `eff` as a closure (this module's for a one-point effect of plain
    assignments, `nests.compile_nest`'s for any other)."""
    if eff.loops or eff.reads or any(fx._per_point(views, a) > fx.MAX_VALUES for a in eff.assigns):
        return compile_nest(views, eff)
    steps = [_step(views, a) for a in eff.assigns]
    if any(s is None for s in steps):
        return compile_nest(views, eff)
    ready = tuple(s for s in steps if s is not None)
    lets = tuple((n, scompile(e)) for n, e in eff.lets)

    def apply(mem: Memories, env: Mapping[str, Any]) -> int:
        cols: Mapping[str, Any] = env
        if lets:
            d = dict(env)
            for name, f in lets:
                d[name] = f(d)
            cols = d
        for s in ready:
            _run(mem, s, cols)
        return 1

    return apply
