"""Python evaluation of doc expressions (the semantics of `zomboss.expr.ast`): generated
source and compiled closures (`python_source`, `compile_python`, `evaluate`), the wide-value
detector that says where clingo's 32-bit integers would not hold a value, and constant
folding (`fold`), which every translation applies first.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence

from zomboss.expr.ast import (
    ARITH_OPS,
    ASP_MAX,
    ASP_MIN,
    BOOL_OPS,
    EVAL_ERRORS,
    FALSE,
    MAX_SHIFT,
    TRUE,
    Bin,
    Call,
    Cond,
    Expr,
    ExprError,
    InSet,
    Int,
    Ref,
    Sym,
    Un,
    Undefined,
    bounded,
    check_limits,
    children,
    is_bool,
    show,
)

# ---------------------------------------------------------------------------------------
# Python: expressions compile to closures over an environment mapping names to values.
# ---------------------------------------------------------------------------------------


def cdiv(a: int, b: int) -> int:
    """Ceiling division of integers (the docs' `cdiv`): exact, for any signs."""
    return -(-a // b)


def _shl(a: int, b: int) -> int:
    if not 0 <= b <= MAX_SHIFT:
        raise Undefined(f"shift by {b} (defined for 0..{MAX_SHIFT})")
    return a << b


def _shr(a: int, b: int) -> int:
    if not 0 <= b <= MAX_SHIFT:
        raise Undefined(f"shift by {b} (defined for 0..{MAX_SHIFT})")
    return a >> b


def _log2(a: int) -> int:
    if a <= 0:
        raise Undefined(f"log2 of non-positive value {a}")
    return int(a).bit_length() - 1


def _is_pow2(a: int) -> bool:
    return a > 0 and (a & (a - 1)) == 0


# -- the wide-value detector: the same evaluation, raising Wide where clingo's 32-bit
#    integers would not hold a value the ASP translation computes


class Wide(Exception):
    """A value the ASP translation computes does not fit clingo's 32-bit integers."""


def _w(x: object) -> object:
    if x.__class__ is int and not ASP_MIN <= x <= ASP_MAX:
        raise Wide
    return x


def _crem(a: int, b: int) -> int:
    """clingo's `\\`: the remainder of truncating division (sign of the dividend)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _w_div(a: int, b: int) -> int:
    q = a // b  # ZeroDivisionError first, as in Python
    _w(_crem(a, b) + b)
    _w(a - a % b)
    return q


def _w_mod(a: int, b: int) -> int:
    m = a % b
    _w(_crem(a, b) + b)
    return m


def _w_cdiv(a: int, b: int) -> int:
    c = cdiv(a, b)
    s = _w(b - _crem(a, b))
    _w(a + _crem(s, b))  # type: ignore[arg-type]
    return c


def _w_shl(a: int, b: int) -> int:
    r = _shl(a, b)
    _w(1 << b)
    return r


def _w_shr(a: int, b: int) -> int:
    _shr(a, b)  # the domain of the shift
    return _w_div(a, _w(1 << b))  # type: ignore[arg-type]


_PY_FUNCS: dict[str, Callable[..., object]] = {
    "min": min,
    "max": max,
    "cdiv": cdiv,
    "log2": _log2,
    "abs": abs,
    "is_pow2": _is_pow2,
    "shl": _shl,
    "shr": _shr,
    "w": _w,
    "w_div": _w_div,
    "w_mod": _w_mod,
    "w_cdiv": _w_cdiv,
    "w_shl": _w_shl,
    "w_shr": _w_shr,
}

_PY_BIN = {
    "+": "({} + {})",
    "-": "({} - {})",
    "*": "({} * {})",
    "/": "({} // {})",
    "%": "({} % {})",
    "<<": "_f_shl({}, {})",
    ">>": "_f_shr({}, {})",
    "&": "({} & {})",
    "|": "({} | {})",
    "==": "({} == {})",
    "!=": "({} != {})",
    "<": "({} < {})",
    "<=": "({} <= {})",
    ">": "({} > {})",
    ">=": "({} >= {})",
    "and": "({} and {})",
    "or": "({} or {})",
    "->": "((not {}) or {})",
}
_PY_WIDE = {"/": "_f_w_div({}, {})", "%": "_f_w_mod({}, {})", "<<": "_f_w_shl({}, {})", ">>": "_f_w_shr({}, {})"}


# the names `python_source` emits for function calls; generated code evaluates in these globals
PY_GLOBALS: dict[str, Callable[..., object]] = {f"_f_{k}": v for k, v in _PY_FUNCS.items()}


def python_source(e: Expr, resolve: Callable[[Ref], str], wide: bool = False) -> str:
    """Python source for `e`; `resolve` turns a name into source (an env lookup or a literal).

    With `wide`, the code also raises `Wide` whenever a value the ASP translation of `e`
    computes (including its own intermediate terms) would not fit clingo's integers."""
    if isinstance(e, Int):
        return repr(e.value)
    if isinstance(e, Ref):
        return f"_f_w({resolve(e)})" if wide else resolve(e)
    if isinstance(e, Sym):
        return repr(e.name.lower())
    if isinstance(e, Bin):
        a, b = python_source(e.left, resolve, wide), python_source(e.right, resolve, wide)
        if wide and e.op in ARITH_OPS:
            return f"_f_w({_PY_WIDE.get(e.op, _PY_BIN[e.op]).format(a, b)})"
        return _PY_BIN[e.op].format(a, b)
    if isinstance(e, Un):
        inner = python_source(e.arg, resolve, wide)
        if e.op == "neg":
            return f"_f_w(-{inner})" if wide else f"(-{inner})"
        return f"(not {inner})"
    if isinstance(e, Call):
        args = ", ".join(python_source(a, resolve, wide) for a in e.args)
        if wide and e.fn == "cdiv":
            return f"_f_w(_f_w_cdiv({args}))"
        src = f"_f_{e.fn}({args})"
        return f"_f_w({src})" if wide and e.fn != "is_pow2" else src
    if isinstance(e, Cond):
        c, a, b = (python_source(x, resolve, wide) for x in (e.cond, e.then, e.other))
        return f"({a} if {c} else {b})"
    items = ", ".join(python_source(a, resolve, wide) for a in e.items)
    return f"({python_source(e.arg, resolve, wide)} in ({items},))"


def compile_python(
    e: Expr, known: Callable[[str], bool], symbols: Callable[[str], bool]
) -> Callable[[Mapping[str, object]], object]:
    """Compile to `f(env)`. Names for which `known` holds are looked up in env; names that are
    `symbols` (mnemonics, knob values) become string literals; anything else is an error.
    The function raises one of UNDEFINED where the expression is undefined."""

    def resolve(r: Ref) -> str:
        if known(r.name):
            return f"env[{r.name!r}]"
        if len(r.parts) == 1 and symbols(r.name):
            return repr(r.name.lower())
        raise ExprError(f"unknown name {r.name!r}")

    check_limits(e)
    src = python_source(e, resolve)
    return eval(compile(f"lambda env: {src}", "<archdoc>", "eval"), dict(PY_GLOBALS))  # noqa: S307 - our own doc AST


def evaluate(e: Expr, env: Mapping[str, object]) -> object:
    """Evaluate directly (parameters at build time); unknown names raise ExprError, an
    undefined expression Undefined, and a result beyond MAX_BITS Undefined."""
    if isinstance(e, Int):
        return e.value
    if isinstance(e, Ref):
        if e.name not in env:
            raise ExprError(f"unknown name {e.name!r}")
        return env[e.name]
    f = compile_python(e, lambda n: n in env, lambda n: False)
    try:
        v = f(env)
    except ZeroDivisionError:
        raise Undefined(f"division by zero in {show(e)}") from None
    except Undefined as err:
        raise Undefined(f"{err} in {show(e)}") from None
    bounded(v, "the value")
    return v


def fold(e: Expr, consts: Mapping[str, int]) -> Expr:
    """`e` with the names in `consts` (parameters) replaced by their values, constant
    sub-expressions evaluated (with the semantics above; undefined ones are left alone) and
    constant conditions simplified the way evaluation would skip them."""
    if isinstance(e, Ref):
        return Int(consts[e.name]) if e.name in consts else e
    if isinstance(e, Int | Sym):
        return e
    if isinstance(e, Bin) and e.op in BOOL_OPS:
        left, right = fold(e.left, consts), fold(e.right, consts)
        lv = _const_truth(left)
        if lv is not None:  # the left side decides, or hands over to the right side
            if e.op == "and":
                return right if lv else FALSE
            if e.op == "or":
                return TRUE if lv else right
            return right if lv else TRUE
        return Bin(e.op, left, right)
    if isinstance(e, Cond):
        c = fold(e.cond, consts)
        cv = _const_truth(c)
        if cv is not None:
            return fold(e.then if cv else e.other, consts)
        return Cond(c, fold(e.then, consts), fold(e.other, consts))
    if isinstance(e, Un) and e.op == "not":
        a = fold(e.arg, consts)
        av = _const_truth(a)
        return Un("not", a) if av is None else (FALSE if av else TRUE)
    if isinstance(e, Bin):
        out: Expr = Bin(e.op, fold(e.left, consts), fold(e.right, consts))
    elif isinstance(e, Un):
        out = Un(e.op, fold(e.arg, consts))
    elif isinstance(e, Call):
        out = Call(e.fn, tuple(fold(a, consts) for a in e.args))
    else:
        assert isinstance(e, InSet)
        out = InSet(fold(e.arg, consts), tuple(fold(a, consts) for a in e.items))
    kids = children(out)
    if all(isinstance(k, Int | Sym) for k in kids) and (is_bool(out) or all(isinstance(k, Int) for k in kids)):
        vals = [k.value if isinstance(k, Int) else k.name.lower() for k in kids]  # type: ignore[union-attr]
        try:
            v = apply(out, vals)
        except EVAL_ERRORS:
            return out  # undefined: the translations say so where it is evaluated
        if isinstance(v, bool):
            return TRUE if v else FALSE
        assert isinstance(v, int)
        return Int(v)
    return out


_APPLY: dict[str, Callable[..., object]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.floordiv,
    "%": operator.mod,
    "<<": _shl,
    ">>": _shr,
    "&": operator.and_,
    "|": operator.or_,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "neg": operator.neg,
    "not": operator.not_,
}


def apply(e: Expr, vals: Sequence[object]) -> object:
    """One step of evaluation: the operator of `e` applied to its children's values (what
    the code of `python_source` computes for a strict operator)."""
    if isinstance(e, Bin | Un):
        return _APPLY[e.op](*vals)
    if isinstance(e, Call):
        return _PY_FUNCS[e.fn](*vals)
    if isinstance(e, InSet):
        return vals[0] in vals[1:]
    raise ExprError(f"{show(e)} is not an operator")


def _const_truth(e: Expr) -> bool | None:
    if e == TRUE:
        return True
    if e == FALSE:
        return False
    if isinstance(e, Int):
        return e.value != 0
    return None
