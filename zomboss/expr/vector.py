"""expr.py's semantics over NumPy columns: one expression evaluated for many instructions at once.

The block checker (`legality.block.check_block`) evaluates each rule of a mnemonic for every
command of a hardware-loop expansion in one pass instead of once per command. An expression
is compiled once (closures over its tree, no generated source) into a function of an
environment of columns. A column is an int64 array (or a Python scalar, broadcast) with the
mask of the rows where it is undefined and bounds on its defined values; every operation
keeps expr.py's meaning: floor `/` and `%`, undefined division by zero and shifts out of
0..MAX_SHIFT, `and`/`or`/`->`/`if` that ignore what they skip. What cannot be computed
exactly in int64 — a value whose bounds leave ±2**62, arithmetic or ordering on symbols,
`log2` — raises `Unsupported`, and the caller falls back to the scalar checker, so an answer
from here is always the one `expr.python_source` code would give.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from zomboss import expr as ex

LIMIT = 1 << 62  # |value| bound under which int64 arithmetic on two values is exact

INT, BOOL, SYM = "int", "bool", "sym"


class Unsupported(Exception):
    """The columns cannot be evaluated exactly here: check these instructions one by one."""


Mask = Any  # None (defined everywhere), a bool array or a NumPy bool scalar


@dataclass(frozen=True, slots=True)
class Col:
    """Values of one name or sub-expression over a block's rows."""

    val: Any  # int64 / bool array, or a Python scalar meaning "this value on every row"
    bad: Mask  # rows where the value is undefined; None: none
    lo: int  # bounds of the defined integer values (0..1 for conditions, codes for symbols)
    hi: int
    kind: str = INT


_SYMBOLS: dict[str, int] = {}


def sym_code(name: str) -> int:
    """A symbol as an integer, the same for equal symbols (symbol columns compare codes)."""
    return _SYMBOLS.setdefault(name, len(_SYMBOLS))


def sym_name(code: int) -> str:
    return next(k for k, v in _SYMBOLS.items() if v == code)


def const(v: int | bool | str) -> Col:
    if isinstance(v, str):
        c = sym_code(v)
        return Col(c, None, c, c, SYM)
    if isinstance(v, bool):
        return Col(v, None, 0, 1, BOOL)
    if not -LIMIT < v < LIMIT:
        raise Unsupported(f"the constant {v} is beyond int64 arithmetic")
    return Col(v, None, v, v, INT)


def column(values: Any, bad: Mask = None, kind: str = INT) -> Col:
    """A column of int64 values (their bounds measured; Unsupported beyond LIMIT)."""
    if np.ndim(values) == 0:
        v = values.item() if hasattr(values, "item") else values
        return Col(v, bad, int(v), int(v), kind)
    if len(values) == 0:
        return Col(values, bad, 0, 0, kind)
    lo, hi = int(values.min()), int(values.max())
    if not -LIMIT < lo <= hi < LIMIT:
        raise Unsupported("values beyond int64 arithmetic")
    return Col(values, bad, lo, hi, kind)


class Env(Protocol):
    def col(self, name: str) -> Col: ...

    def memo(self, node: int, compute: Callable[[], Col]) -> Col:
        """The value of compound node `node` (a caller may keep what it knows to be fixed)."""
        ...


Fn = Callable[[Env], Col]


def mask_or(a: Mask, b: Mask) -> Mask:
    if a is None:
        return b
    if b is None:
        return a
    return a | b


def mask_and(cond: Any, m: Mask) -> Mask:
    """Rows of `m` where `cond` holds."""
    return None if m is None else np.logical_and(cond, m)


def any_bad(m: Mask) -> bool:
    return m is not None and bool(np.any(m))


def truth(c: Col) -> Col:
    """A value in boolean position: numbers are true when non-zero, symbols always."""
    if c.kind == BOOL:
        return c
    if c.kind == SYM:
        return Col(True, c.bad, 0, 1, BOOL)
    return Col(c.val != 0, c.bad, 0, 1, BOOL)


def _num(c: Col) -> Col:
    if c.kind != INT:
        raise Unsupported("a symbol or a condition used as a number")
    return c


def _bounded(lo: int, hi: int) -> tuple[int, int]:
    if not -LIMIT < lo <= hi < LIMIT:
        raise Unsupported("a value that may leave int64 arithmetic")
    return lo, hi


def _mag(c: Col) -> int:
    return max(abs(c.lo), abs(c.hi))


def _nonzero_divisor(b: Col) -> tuple[Any, Mask]:
    """The divisor with zeros replaced by 1, and where it was zero (undefined there)."""
    zero = b.val == 0
    if not np.any(zero):
        return b.val, None
    return np.where(zero, 1, b.val), zero


def _shift_amount(b: Col) -> tuple[Any, Mask, int]:
    """The shift with out-of-range amounts replaced by 0, where they were, and the largest."""
    out = (b.val < 0) | (b.val > ex.MAX_SHIFT)
    hi = min(max(b.hi, 0), ex.MAX_SHIFT)
    if not np.any(out):
        return b.val, None, hi
    return np.where(out, 0, b.val), out, hi


def _measured(c: Col) -> Col:
    """`c` with the bounds its values take: static bounds compound through divisions and
    branches far beyond what a column holds, and the values are exact (no earlier operation
    could overflow), so their range is a sound bound for the next operation."""
    if np.ndim(c.val) == 0 or len(c.val) == 0:
        return c
    return Col(c.val, c.bad, max(int(c.val.min()), c.lo), min(int(c.val.max()), c.hi), c.kind)


def _arith(op: str, a: Col, b: Col) -> Col:
    a, b = _num(a), _num(b)
    try:
        return _arith_bounded(op, a, b)
    except Unsupported:
        return _arith_bounded(op, _measured(a), _measured(b))


def _arith_bounded(op: str, a: Col, b: Col) -> Col:
    bad = mask_or(a.bad, b.bad)
    if op == "+":
        lo, hi = _bounded(a.lo + b.lo, a.hi + b.hi)
        return Col(a.val + b.val, bad, lo, hi)
    if op == "-":
        lo, hi = _bounded(a.lo - b.hi, a.hi - b.lo)
        return Col(a.val - b.val, bad, lo, hi)
    if op == "*":
        ends = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
        lo, hi = _bounded(min(ends), max(ends))
        return Col(a.val * b.val, bad, lo, hi)
    if op in ("/", "%"):
        d, zero = _nonzero_divisor(b)
        bad = mask_or(bad, zero)
        if op == "/":  # |a // d| <= |a| for |d| >= 1
            m = _mag(a)
            return Col(np.floor_divide(a.val, d), bad, -m, m)
        m = max(_mag(b) - 1, 0)
        return Col(np.remainder(a.val, d), bad, -m, m)
    if op == "<<":
        s, out, top = _shift_amount(b)
        m = _mag(a)
        if top > 62 and m:
            raise Unsupported("a shift that may leave int64")
        lo, hi = _bounded(-(m << top), m << top)
        return Col(np.left_shift(a.val, s), mask_or(bad, out), lo, hi)
    if op == ">>":
        s, out, _ = _shift_amount(b)
        m = _mag(a)  # shifting by 63 or more gives 0 or -1, as Python's larger shifts do
        return Col(np.right_shift(a.val, np.minimum(s, 63)), mask_or(bad, out), -m, m)
    # & and |: within the smallest power of two above both magnitudes
    p = 1 << max(_mag(a), _mag(b)).bit_length()
    lo, hi = _bounded(-p, p)
    return Col(a.val & b.val if op == "&" else a.val | b.val, bad, lo, hi)


COMPARE: dict[str, Callable[[Any, Any], Any]] = {  # the doc's comparisons on NumPy arrays
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


def _compare(op: str, a: Col, b: Col) -> Col:
    bad = mask_or(a.bad, b.bad)
    if BOOL in (a.kind, b.kind):
        raise Unsupported("a condition compared as a value")
    if a.kind != b.kind:  # a symbol and a number: never equal, and not ordered
        if op not in ("==", "!="):
            raise Unsupported("a symbol ordered against a number")
        return Col(op == "!=", bad, 0, 1, BOOL)
    if a.kind == SYM and op not in ("==", "!="):
        raise Unsupported("symbols ordered")
    return Col(COMPARE[op](a.val, b.val), bad, 0, 1, BOOL)


def _logic(op: str, a: Col, b: Col) -> Col:
    """`and`, `or`, `->`, evaluated left to right: the right side only matters (and is only
    undefined) where the left side does not decide."""
    a, b = truth(a), truth(b)
    if op == "and":
        return Col(np.logical_and(a.val, b.val), mask_or(a.bad, mask_and(a.val, b.bad)), 0, 1, BOOL)
    if op == "or":
        return Col(np.logical_or(a.val, b.val), mask_or(a.bad, mask_and(np.logical_not(a.val), b.bad)), 0, 1, BOOL)
    return Col(np.logical_or(np.logical_not(a.val), b.val), mask_or(a.bad, mask_and(a.val, b.bad)), 0, 1, BOOL)


def _call(fn: str, args: list[Col]) -> Col:
    if fn in ("min", "max"):
        a, b = _num(args[0]), _num(args[1])
        f = np.minimum if fn == "min" else np.maximum
        return Col(f(a.val, b.val), mask_or(a.bad, b.bad), min(a.lo, b.lo), max(a.hi, b.hi))
    if fn == "cdiv":
        a, b = _num(args[0]), _num(args[1])
        d, zero = _nonzero_divisor(b)
        m = _mag(a)
        return Col(-np.floor_divide(-a.val, d), mask_or(mask_or(a.bad, b.bad), zero), -m, m)
    if fn == "abs":
        a = _num(args[0])
        return Col(np.abs(a.val), a.bad, 0, _mag(a))
    if fn == "is_pow2":
        a = _num(args[0])
        return Col(np.logical_and(a.val > 0, (a.val & (a.val - 1)) == 0), a.bad, 0, 1, BOOL)
    raise Unsupported(f"{fn} over columns")


def _cond(c: Col, x: Col, y: Col) -> Col:
    c = truth(c)
    if x.kind != y.kind or BOOL in (x.kind, y.kind):
        raise Unsupported("if-branches of different kinds")
    bad = mask_or(c.bad, mask_or(mask_and(c.val, x.bad), mask_and(np.logical_not(c.val), y.bad)))
    return Col(np.where(c.val, x.val, y.val), bad, min(x.lo, y.lo), max(x.hi, y.hi), x.kind)


def _inset(a: Col, items: list[Col]) -> Col:
    hit: Any = False
    bad = a.bad
    for it in items:  # Python builds the whole tuple: any undefined item makes it undefined
        eq = _compare("==", a, it)
        hit = np.logical_or(hit, eq.val)
        bad = mask_or(bad, it.bad)
    return Col(hit, bad, 0, 1, BOOL)


Resolve = Callable[[ex.Ref], "str | Col"]  # a name to look up, or a constant column


_NODES = itertools.count()


def compile_vec(e: ex.Expr, resolve: Resolve) -> Fn:
    """`e` as a function of an environment of columns (see the module docstring); every
    compound node is evaluated through `Env.memo` under its own number."""
    f = _compile(e, resolve)
    if isinstance(e, ex.Int | ex.Sym | ex.Ref):
        return f
    node = next(_NODES)
    return lambda env: env.memo(node, lambda: f(env))


def _compile(e: ex.Expr, resolve: Resolve) -> Fn:
    if isinstance(e, ex.Int):
        c = const(e.value)
        return lambda env: c
    if isinstance(e, ex.Sym):
        s = const(e.name.lower())
        return lambda env: s
    if isinstance(e, ex.Ref):
        r = resolve(e)
        if isinstance(r, Col):
            return lambda env: r
        return lambda env: env.col(r)
    if isinstance(e, ex.Bin):
        fa, fb, op = compile_vec(e.left, resolve), compile_vec(e.right, resolve), e.op
        if op in ex.BOOL_OPS:
            return lambda env: _logic(op, fa(env), fb(env))
        if op in ex.CMP_OPS:
            return lambda env: _compare(op, fa(env), fb(env))
        return lambda env: _arith(op, fa(env), fb(env))
    if isinstance(e, ex.Un):
        f = compile_vec(e.arg, resolve)
        if e.op == "neg":

            def neg(env: Env) -> Col:
                a = _num(f(env))
                return Col(-a.val, a.bad, -a.hi, -a.lo)

            return neg

        def not_(env: Env) -> Col:
            a = truth(f(env))
            return Col(np.logical_not(a.val), a.bad, 0, 1, BOOL)

        return not_
    if isinstance(e, ex.Call):
        fs, fn = [compile_vec(a, resolve) for a in e.args], e.fn
        return lambda env: _call(fn, [f(env) for f in fs])
    if isinstance(e, ex.Cond):
        fc, fx, fy = (compile_vec(x, resolve) for x in (e.cond, e.then, e.other))
        return lambda env: _cond(fc(env), fx(env), fy(env))
    assert isinstance(e, ex.InSet)
    fa, fis = compile_vec(e.arg, resolve), [compile_vec(x, resolve) for x in e.items]
    return lambda env: _inset(fa(env), [f(env) for f in fis])
