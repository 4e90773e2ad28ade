"""Integer expressions of the ISA docs, and their three translations.

One expression written in a doc is evaluated in Python (simulator refusals, parameter
derivation), translated to ASP body literals (KB checks of concrete programs and mappings),
and translated to CP-SAT constraints (tile sizing, in `solvers/`). Keeping the AST here and
the translations side by side is what keeps the three honest with each other.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Union

from zomboss.errors import ZombossError

Expr = Union["Int", "Ref", "Sym", "Bin", "Un", "Call", "Cond", "InSet"]

CMP_OPS = ("==", "!=", "<", "<=", ">", ">=")
BOOL_OPS = ("and", "or", "->")
ARITH_OPS = ("+", "-", "*", "/", "%", "<<", ">>", "&", "|")
FUNCS = {"min": 2, "max": 2, "cdiv": 2, "log2": 1, "abs": 1, "is_pow2": 1}


@dataclass(frozen=True, slots=True)
class Int:
    value: int


@dataclass(frozen=True, slots=True)
class Ref:
    """A name: `dim`, `local.row`, `prev.op`, `rd.val`; unresolved names are symbols."""

    parts: tuple[str, ...]

    @property
    def name(self) -> str:
        return ".".join(self.parts)


@dataclass(frozen=True, slots=True)
class Sym:
    """A quoted symbol, `"bias"`: never a name lookup (for knob values that clash with names)."""

    name: str


@dataclass(frozen=True, slots=True)
class Bin:
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Un:
    op: str  # "neg" | "not"
    arg: Expr


@dataclass(frozen=True, slots=True)
class Call:
    fn: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Cond:
    cond: Expr
    then: Expr
    other: Expr


@dataclass(frozen=True, slots=True)
class InSet:
    arg: Expr
    items: tuple[Expr, ...]


class ExprError(ZombossError):
    """An expression that cannot be evaluated or translated (names the culprit)."""


def is_bool(e: Expr) -> bool:
    return (
        (isinstance(e, Bin) and (e.op in CMP_OPS or e.op in BOOL_OPS))
        or isinstance(e, InSet)
        or (isinstance(e, Un) and e.op == "not")
    )


def refs(e: Expr) -> Iterator[Ref]:
    """Every name an expression mentions."""
    if isinstance(e, Ref):
        yield e
    elif isinstance(e, Bin):
        yield from refs(e.left)
        yield from refs(e.right)
    elif isinstance(e, Un):
        yield from refs(e.arg)
    elif isinstance(e, Call):
        for a in e.args:
            yield from refs(a)
    elif isinstance(e, Cond):
        yield from refs(e.cond)
        yield from refs(e.then)
        yield from refs(e.other)
    elif isinstance(e, InSet):
        yield from refs(e.arg)
        for a in e.items:
            yield from refs(a)


def substitute(e: Expr, env: Mapping[str, Expr]) -> Expr:
    """Replace names by expressions (used to inline an instruction's `let`s)."""
    if isinstance(e, Ref):
        return env.get(e.name, e)
    if isinstance(e, Bin):
        return Bin(e.op, substitute(e.left, env), substitute(e.right, env))
    if isinstance(e, Un):
        return Un(e.op, substitute(e.arg, env))
    if isinstance(e, Call):
        return Call(e.fn, tuple(substitute(a, env) for a in e.args))
    if isinstance(e, Cond):
        return Cond(substitute(e.cond, env), substitute(e.then, env), substitute(e.other, env))
    if isinstance(e, InSet):
        return InSet(substitute(e.arg, env), tuple(substitute(a, env) for a in e.items))
    return e


def show(e: Expr) -> str:
    """Doc-notation text of an expression (for messages and the KB's rule text)."""
    if isinstance(e, Int):
        return str(e.value)
    if isinstance(e, Ref):
        return e.name
    if isinstance(e, Sym):
        return f'"{e.name}"'
    if isinstance(e, Bin):
        return f"({show(e.left)} {e.op} {show(e.right)})"
    if isinstance(e, Un):
        return f"-{show(e.arg)}" if e.op == "neg" else f"not {show(e.arg)}"
    if isinstance(e, Call):
        return f"{e.fn}({', '.join(show(a) for a in e.args)})"
    if isinstance(e, Cond):
        return f"(if {show(e.cond)} then {show(e.then)} else {show(e.other)})"
    return f"{show(e.arg)} in {{{', '.join(show(a) for a in e.items)}}}"


# ---------------------------------------------------------------------------------------
# Python: expressions compile to closures over an environment mapping names to values.
# ---------------------------------------------------------------------------------------


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _log2(a: int) -> int:
    if a <= 0:
        raise ExprError(f"log2 of non-positive value {a}")
    return int(a).bit_length() - 1


def _is_pow2(a: int) -> bool:
    return a > 0 and (a & (a - 1)) == 0


_PY_FUNCS: dict[str, Callable[..., object]] = {
    "min": min,
    "max": max,
    "cdiv": _cdiv,
    "log2": _log2,
    "abs": abs,
    "is_pow2": _is_pow2,
}

_PY_BIN = {
    "+": "({} + {})",
    "-": "({} - {})",
    "*": "({} * {})",
    "/": "({} // {})",
    "%": "({} % {})",
    "<<": "({} << {})",
    ">>": "({} >> {})",
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


# the names `python_source` emits for function calls; generated code evaluates in these globals
PY_GLOBALS: dict[str, Callable[..., object]] = {f"_f_{k}": v for k, v in _PY_FUNCS.items()}


def python_source(e: Expr, resolve: Callable[[Ref], str]) -> str:
    """Python source for `e`; `resolve` turns a name into source (an env lookup or a literal)."""
    if isinstance(e, Int):
        return repr(e.value)
    if isinstance(e, Ref):
        return resolve(e)
    if isinstance(e, Sym):
        return repr(e.name.lower())
    if isinstance(e, Bin):
        return _PY_BIN[e.op].format(python_source(e.left, resolve), python_source(e.right, resolve))
    if isinstance(e, Un):
        inner = python_source(e.arg, resolve)
        return f"(-{inner})" if e.op == "neg" else f"(not {inner})"
    if isinstance(e, Call):
        return f"_f_{e.fn}({', '.join(python_source(a, resolve) for a in e.args)})"
    if isinstance(e, Cond):
        c, a, b = (python_source(x, resolve) for x in (e.cond, e.then, e.other))
        return f"({a} if {c} else {b})"
    items = ", ".join(python_source(a, resolve) for a in e.items)
    return f"({python_source(e.arg, resolve)} in ({items},))"


def compile_python(
    e: Expr, known: Callable[[str], bool], symbols: Callable[[str], bool]
) -> Callable[[Mapping[str, object]], object]:
    """Compile to `f(env)`. Names for which `known` holds are looked up in env; names that are
    `symbols` (mnemonics, knob values) become string literals; anything else is an error."""

    def resolve(r: Ref) -> str:
        if known(r.name):
            return f"env[{r.name!r}]"
        if len(r.parts) == 1 and symbols(r.name):
            return repr(r.name.lower())
        raise ExprError(f"unknown name {r.name!r}")

    src = python_source(e, resolve)
    return eval(compile(f"lambda env: {src}", "<archdoc>", "eval"), dict(PY_GLOBALS))  # noqa: S307 - our own doc AST


def evaluate(e: Expr, env: Mapping[str, object]) -> object:
    """Evaluate directly (parameters at build time); unknown names raise ExprError."""
    if isinstance(e, Int):
        return e.value
    if isinstance(e, Ref):
        if e.name not in env:
            raise ExprError(f"unknown name {e.name!r}")
        return env[e.name]
    f = compile_python(e, lambda n: n in env, lambda n: False)
    try:
        return f(env)
    except ZeroDivisionError:
        raise ExprError(f"division by zero in {show(e)}") from None


# ---------------------------------------------------------------------------------------
# ASP: an expression's negation becomes the bodies of `violation` rules.
# ---------------------------------------------------------------------------------------


class AspContext:
    """Fresh variables and the body literals that bind names, for one ASP rule family."""

    def __init__(self, bind: Callable[[Ref, str], list[str]], symbols: Callable[[str], bool]) -> None:
        self._bind = bind  # (ref, var) -> literals binding var to the ref's value, or [] if unknown
        self._symbols = symbols
        self._counter = itertools.count()
        self.bound: dict[str, tuple[str, list[str]]] = {}

    def fresh(self) -> str:
        return f"V{next(self._counter)}"

    def ref(self, r: Ref) -> tuple[str, list[str]]:
        if r.name in self.bound:
            return self.bound[r.name]
        var = self.fresh()
        lits = self._bind(r, var)
        if lits:
            self.bound[r.name] = (var, lits)
            return var, lits
        if len(r.parts) == 1 and self._symbols(r.name):
            return r.name.lower(), []
        raise ExprError(f"unknown name {r.name!r}")


Alt = tuple[str, tuple[str, ...]]  # (ASP term, body literals it needs)

_ASP_BIN = {"+": "+", "-": "-", "*": "*", "/": "/", "%": "\\", "&": "&", "|": "?"}
_NEG_CMP = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def asp_terms(e: Expr, ctx: AspContext) -> list[Alt]:
    """Alternatives (term, literals) for an integer expression; min/max/if split cases."""
    if isinstance(e, Int):
        return [(str(e.value) if e.value >= 0 else f"({e.value})", ())]
    if isinstance(e, Ref):
        var, lits = ctx.ref(e)
        return [(var, tuple(lits))]
    if isinstance(e, Sym):
        return [(e.name.lower(), ())]
    if isinstance(e, Un) and e.op == "neg":
        return [(f"(-{t})", lits) for t, lits in asp_terms(e.arg, ctx)]
    if isinstance(e, Bin) and e.op in ARITH_OPS:
        out: list[Alt] = []
        for (a, la), (b, lb) in itertools.product(asp_terms(e.left, ctx), asp_terms(e.right, ctx)):
            if e.op == "<<":
                out.append((f"({a}*(2**{b}))", la + lb))
            elif e.op == ">>":
                out.append((f"({a}/(2**{b}))", la + lb))
            else:
                out.append((f"({a}{_ASP_BIN[e.op]}{b})", la + lb))
        return out
    if isinstance(e, Call) and e.fn in ("min", "max"):
        out = []
        pick = "<=" if e.fn == "min" else ">="
        other = _NEG_CMP[pick]
        for (a, la), (b, lb) in itertools.product(asp_terms(e.args[0], ctx), asp_terms(e.args[1], ctx)):
            out.append((a, la + lb + (f"{a}{pick}{b}",)))
            out.append((b, la + lb + (f"{a}{other}{b}",)))
        return out
    if isinstance(e, Call) and e.fn == "cdiv":
        return [
            (f"(({a}+{b}-1)/{b})", la + lb)
            for (a, la), (b, lb) in itertools.product(asp_terms(e.args[0], ctx), asp_terms(e.args[1], ctx))
        ]
    if isinstance(e, Call) and e.fn == "abs":
        return [(f"|{a}|", la) for a, la in asp_terms(e.args[0], ctx)]
    if isinstance(e, Cond):
        out = []
        for conj in asp_dnf(e.cond, ctx, negate=False):
            out += [(t, conj + lits) for t, lits in asp_terms(e.then, ctx)]
        for conj in asp_dnf(e.cond, ctx, negate=True):
            out += [(t, conj + lits) for t, lits in asp_terms(e.other, ctx)]
        return out
    if is_bool(e):
        raise ExprError(f"a condition is used as a number in {show(e)}")
    raise ExprError(f"{show(e)} cannot be translated to ASP (log2/is_pow2 are for parameters only)")


def asp_dnf(e: Expr, ctx: AspContext, negate: bool) -> list[tuple[str, ...]]:
    """Disjunctive normal form of `e` (or of `not e`) as lists of ASP body literals."""
    if isinstance(e, Un) and e.op == "not":
        return asp_dnf(e.arg, ctx, not negate)
    if isinstance(e, Bin) and e.op in BOOL_OPS:
        if e.op == "->":
            return asp_dnf(Bin("or", Un("not", e.left), e.right), ctx, negate)
        conj = (e.op == "and") != negate  # De Morgan
        left, right = asp_dnf(e.left, ctx, negate), asp_dnf(e.right, ctx, negate)
        if conj:
            return [a + b for a, b in itertools.product(left, right)]
        return left + right
    if isinstance(e, Bin) and e.op in CMP_OPS:
        op = _NEG_CMP[e.op] if negate else e.op
        op = "=" if op == "==" else op
        return [
            la + lb + (f"{a}{op}{b}",)
            for (a, la), (b, lb) in itertools.product(asp_terms(e.left, ctx), asp_terms(e.right, ctx))
        ]
    if isinstance(e, InSet):
        if negate:  # x not in {a, b}: x != a and x != b
            acc: list[tuple[str, ...]] = [()]
            for item in e.items:
                acc = [c + d for c, d in itertools.product(acc, asp_dnf(Bin("!=", e.arg, item), ctx, False))]
            return acc
        out: list[tuple[str, ...]] = []
        for item in e.items:
            out += asp_dnf(Bin("==", e.arg, item), ctx, False)
        return out
    if isinstance(e, Call) and e.fn == "is_pow2":
        raise ExprError("is_pow2 is for parameters only")
    # a number in boolean position means "non-zero"
    return asp_dnf(Bin("!=", e, Int(0)), ctx, negate)
