"""Integer expressions of the ISA docs: one semantics, and its translations.

One expression written in a doc is evaluated in Python (simulator refusals, parameter
derivation), translated to ASP body literals (KB checks of concrete programs and mappings),
and translated to CP-SAT constraints (tile sizing, in `solvers/`). Keeping the AST, the
semantics and the translations side by side is what keeps them honest with each other.

The semantics (docs/archdoc.md, "Arithmetic and limits"):

* integers are exact; `/` and `%` are floor division and modulo (Python's), `cdiv` ceiling
  division; `a << b` and `a >> b` need `0 <= b <= MAX_SHIFT`;
* an operation without a value — division by zero, a shift out of range, `log2` of a
  non-positive number, a missing value (`prev.x` with no previous instruction) — makes the
  expression *undefined*; `and`, `or`, `->` and `if` evaluate left to right and skip what
  they do not need, so `x != 0 -> y / x > 1` is defined everywhere;
* a rule or constraint whose expression is undefined is violated (reported with its values);
  a parameter whose expression is undefined is refused at build.

The ASP translation (`asp_violated`, `asp_truth`, `asp_terms`) computes exactly this on
clingo's 32-bit integers whenever every value the Python evaluation computes fits in 32 bits
(clingo truncates divisions and wraps on overflow; the translation corrects the former and
`python_source(..., wide=True)` detects the latter, so a checker can leave such cases to
Python). Every translation step is bounded (`MAX_CASES`), and expressions are bounded in
depth and size (`check_limits`).
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Union

from zomboss.errors import ZombossError

Expr = Union["Int", "Ref", "Sym", "Bin", "Un", "Call", "Cond", "InSet"]

CMP_OPS = ("==", "!=", "<", "<=", ">", ">=")
BOOL_OPS = ("and", "or", "->")
ARITH_OPS = ("+", "-", "*", "/", "%", "<<", ">>", "&", "|")
UN_OPS = ("neg", "not")
FUNCS = {"min": 2, "max": 2, "cdiv": 2, "log2": 1, "abs": 1, "is_pow2": 1}

# ---- limits (docs/archdoc.md, "Limits") --------------------------------------------------
MAX_DEPTH = 48  # nesting depth of one expression, `let`s inlined
MAX_NODES = 4096  # nodes of one expression, `let`s inlined (a let used twice counts twice)
MAX_BITS = 128  # literals and named values (parameters, operands, lets, state): |v| < 2**128
MAX_SHIFT = 128  # `a << b` and `a >> b` are defined for 0 <= b <= MAX_SHIFT
MAX_CASES = 1024  # ASP rules (case splits of min/max/if/or/in) one expression may become
ASP_MIN, ASP_MAX = -(1 << 31), (1 << 31) - 1  # clingo's integers


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


_CONST = re.compile(r"^[a-z][A-Za-z0-9_']*$")
ASP_KEYWORDS = frozenset({"not"})


def is_constant(name: str) -> bool:
    """Whether `name`, lower-cased, is a clingo constant (what doc names become in the KB)."""
    s = name.lower()
    return bool(_CONST.match(s)) and s not in ASP_KEYWORDS


# constant conditions produced by folding (plain nodes, so every translation handles them)
TRUE = Bin("==", Int(1), Int(1))
FALSE = Bin("==", Int(1), Int(0))


class ExprError(ZombossError):
    """An expression that cannot be evaluated or translated (names the culprit)."""


class Undefined(ExprError):
    """An evaluation without a value (division by zero, shift out of range, log2 of <= 0)."""


# what an evaluation raises when the expression is undefined (KeyError: a missing value)
UNDEFINED: tuple[type[BaseException], ...] = (ZeroDivisionError, Undefined, KeyError)
EVAL_ERRORS: tuple[type[BaseException], ...] = (*UNDEFINED, TypeError)  # undefined, or symbols misused


def is_bool(e: Expr) -> bool:
    return (
        (isinstance(e, Bin) and (e.op in CMP_OPS or e.op in BOOL_OPS))
        or isinstance(e, InSet)
        or (isinstance(e, Un) and e.op == "not")
        or (isinstance(e, Call) and e.fn == "is_pow2")
    )


def children(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, Bin):
        return (e.left, e.right)
    if isinstance(e, Un):
        return (e.arg,)
    if isinstance(e, Call):
        return e.args
    if isinstance(e, Cond):
        return (e.cond, e.then, e.other)
    if isinstance(e, InSet):
        return (e.arg, *e.items)
    return ()


def refs(e: Expr) -> Iterator[Ref]:
    """Every name an expression mentions (iterative: safe on any depth)."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Ref):
            yield x
        else:
            stack.extend(reversed(children(x)))


def measure(e: Expr) -> tuple[int, int]:
    """(nodes, depth) of an expression as a tree — shared sub-expressions (inlined lets)
    count every time they occur — in time linear in the number of distinct nodes."""
    memo: dict[int, tuple[int, int]] = {}
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        x, ready = stack.pop()
        if id(x) in memo:
            continue
        kids = children(x)
        if ready or not kids:
            memo[id(x)] = (
                1 + sum(memo[id(k)][0] for k in kids),
                1 + max((memo[id(k)][1] for k in kids), default=0),
            )
        else:
            stack.append((x, True))
            stack.extend((k, False) for k in kids if id(k) not in memo)
    return memo[id(e)]


def check_limits(e: Expr) -> None:
    """ExprError when an expression is deeper than MAX_DEPTH or larger than MAX_NODES."""
    nodes, depth = measure(e)
    if depth > MAX_DEPTH:
        raise ExprError(f"expression nested {depth} deep (limit {MAX_DEPTH}, lets inlined)")
    if nodes > MAX_NODES:
        raise ExprError(f"expression of {nodes} nodes (limit {MAX_NODES}, lets inlined)")


def bounded(v: object, what: str) -> None:
    """ExprError when a named value (parameter, let, state) is beyond MAX_BITS."""
    if isinstance(v, int) and not isinstance(v, bool) and abs(v).bit_length() > MAX_BITS:
        raise Undefined(f"{what} is beyond the {MAX_BITS}-bit integer limit ({_short(v)})")


def _short(v: int) -> str:
    s = str(v) if abs(v).bit_length() <= 256 else f"a {abs(v).bit_length()}-bit number"
    return s if len(s) <= 48 else s[:20] + "..." + s[-8:]


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
# Types: numbers, symbols and conditions do not mix (checked when a KB is built)
# ---------------------------------------------------------------------------------------


def typecheck(e: Expr, is_symbol: Callable[[Ref], bool]) -> str:
    """The kind of `e` ("int", "sym" or "bool"); ExprError for arithmetic or ordering on a
    symbol, or a condition used as a number. `is_symbol(ref)` says which names hold symbols."""
    if isinstance(e, Int):
        return "int"
    if isinstance(e, Sym):
        return "sym"
    if isinstance(e, Ref):
        return "sym" if is_symbol(e) else "int"
    kinds = [typecheck(k, is_symbol) for k in children(e)]
    if (isinstance(e, Bin) and e.op in BOOL_OPS) or (isinstance(e, Un) and e.op == "not"):
        return "bool"
    if isinstance(e, Bin) and e.op in ("==", "!="):
        if "bool" in kinds:
            raise ExprError(f"a condition is compared as a value in {show(e)}")
        return "bool"
    if isinstance(e, InSet):
        if "bool" in kinds:
            raise ExprError(f"a condition is used as a value in {show(e)}")
        return "bool"
    if isinstance(e, Cond):
        a, b = kinds[1], kinds[2]
        if "bool" in (a, b):
            raise ExprError(f"an if-expression must give values, not conditions: {show(e)}")
        if a != b:
            raise ExprError(f"the branches of {show(e)} mix a symbol and a number")
        return a
    # arithmetic, ordering, functions: numbers only
    for k, x in zip(kinds, children(e), strict=True):
        if k == "bool":
            raise ExprError(f"a condition is used as a number in {show(e)}")
        if k == "sym":
            raise ExprError(f"symbol {show(x)} is used as a number in {show(e)}")
    if (isinstance(e, Bin) and e.op in CMP_OPS) or (isinstance(e, Call) and e.fn == "is_pow2"):
        return "bool"
    return "int"


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


# ---------------------------------------------------------------------------------------
# ASP: three-valued translation. For an expression E over the facts of one instruction or
# mapping: asp_terms(E) are its values with the literals under which E has them (defined),
# asp_truth(E, want) the conjunctions under which E is defined and true (false), and
# asp_undefined(E) those under which E is undefined. A rule is violated where E is false or
# undefined (asp_violated).
# ---------------------------------------------------------------------------------------

Alt = tuple[str, tuple[str, ...]]  # (ASP term, body literals it needs)
Conj = tuple[str, ...]


class AspContext:
    """Fresh variables, the body literals that bind names, and the translation budget, for
    one ASP rule family."""

    def __init__(
        self,
        bind: Callable[[Ref, str], list[str]],
        symbols: Callable[[str], bool],
        *,
        absent: Callable[[Ref], list[Conj]] | None = None,
        constant: Callable[[str], str] | None = None,
        limit: int = MAX_CASES,
    ) -> None:
        self._bind = bind  # (ref, var) -> literals binding var to the ref's value, or [] if unknown
        self._symbols = symbols
        self._absent = absent  # ref -> conjunctions under which its value is missing
        self.constant = constant or (lambda n: n.lower())  # a symbol as an ASP constant
        self.limit = limit
        self._counter = itertools.count()
        self.bound: dict[str, tuple[str, list[str]]] = {}
        self._memo: dict[tuple[int, str], tuple[Expr, object]] = {}  # keeps each expression alive

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
            return self.constant(r.name), []
        raise ExprError(f"unknown name {r.name!r}")

    def absent(self, r: Ref) -> list[Conj]:
        _, lits = self.ref(r)
        if not lits or self._absent is None:
            return []  # a symbol, or nothing is ever missing
        return self._absent(r)

    def check(self, n: int, e: Expr) -> None:
        if n > self.limit:
            text = show(e)
            raise ExprError(
                f"{text if len(text) <= 80 else text[:77] + '...'} needs more than {self.limit} ASP rules "
                "(case splits of min/max/if/or/in)"
            )

    def cap(self, xs: list, e: Expr) -> list:
        self.check(len(xs), e)
        return xs


def _and(ctx: AspContext, e: Expr, *dnfs: Sequence[Conj]) -> list[Conj]:
    """Conjunction of DNFs (the product of their disjuncts), within the budget."""
    acc: list[Conj] = [()]
    for d in dnfs:
        acc = ctx.cap([a + b for a in acc for b in d], e)
    return acc


def _or(ctx: AspContext, e: Expr, *dnfs: Sequence[Conj]) -> list[Conj]:
    out: list[Conj] = []
    for d in dnfs:
        out += d
    return ctx.cap(out, e)


def _pairs(ctx: AspContext, e: Expr, a: list[Alt], b: list[Alt]) -> list[tuple[str, str, Conj]]:
    ctx.check(len(a) * len(b), e)
    return [(x, y, lx + ly) for (x, lx), (y, ly) in itertools.product(a, b)]


_ASP_BIN = {"+": "+", "-": "-", "*": "*", "&": "&", "|": "?"}
# The comparison that holds exactly when `a OP b` does not (every translation negates with it).
NEGATED_CMP = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def _asp_int(v: int) -> str:
    if not ASP_MIN <= v <= ASP_MAX:
        raise ExprError(f"the constant {_short(v)} does not fit clingo's 32-bit integers")
    return str(v) if v >= 0 else f"({v})"


def _literal_value(t: str) -> int | None:
    """The value of an ASP integer literal as this module renders them (`5`, `(-5)`)."""
    body = t[1:-1] if t.startswith("(") and t.endswith(")") else t
    return int(body) if body.lstrip("-").isdigit() else None


_PY_CMP = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


_HAS_VAR = re.compile(r"\bV\d+\b")


def _opaque(t: str) -> str:
    """`t`, hidden from gringo's interval reasoning when it holds a variable: given
    `V < 0, V >= -8388608` gringo enumerates the whole interval (seconds per million values,
    even where V is bound by a fact), but it never reasons about `(V?0)` (bitwise or with 0:
    the same value)."""
    return f"({t}?0)" if _HAS_VAR.search(t) else t


def _with(lits: Conj, a: str, op: str, b: str) -> Conj | None:
    """`lits` plus the comparison `a op b`; None if that is false for constants, `lits`
    alone if it is true for constants."""
    x, y = _literal_value(a), _literal_value(b)
    if x is not None and y is not None:
        return lits if _PY_CMP[op](x, y) else None
    if op in ("=", "!="):  # no interval to reason about (and the sides may be symbols)
        return (*lits, f"{a}{op}{b}")
    return (*lits, f"{_opaque(a)}{op}{_opaque(b)}")


def _atom(ctx: AspContext, t: str, lits: Conj) -> tuple[str, Conj]:
    """A variable (or number) standing for term t, so that formulas can repeat it."""
    if t.lstrip("(-").rstrip(")").isdigit() or (t[:1] == "V" and t[1:].isdigit()):
        return t, lits
    v = ctx.fresh()
    return v, (*lits, f"{v}={t}")


def _memo(ctx: AspContext, e: Expr, tag: str, make: Callable[[], object]) -> object:
    """A translation memoised per expression object. The entry holds the expression: keyed by
    id() alone, a temporary (a let inlined, a case split) freed during the translation could
    pass its id on to a new expression, which would then get the old one's translation."""
    key = (id(e), tag)
    hit = ctx._memo.get(key)
    if hit is None or hit[0] is not e:
        hit = (e, make())
        ctx._memo[key] = hit
    return hit[1]


def asp_terms(e: Expr, ctx: AspContext) -> list[Alt]:
    """Alternatives (term, literals) for an integer expression where it is defined;
    min/max/if split cases."""
    return _memo(ctx, e, "terms", lambda: _terms(e, ctx))  # type: ignore[return-value]


def _terms(e: Expr, ctx: AspContext) -> list[Alt]:
    if isinstance(e, Int):
        return [(_asp_int(e.value), ())]
    if isinstance(e, Ref):
        var, binding = ctx.ref(e)
        return [(var, tuple(binding))]
    if isinstance(e, Sym):
        return [(ctx.constant(e.name), ())]
    if isinstance(e, Un) and e.op == "neg":
        return [(f"(-{t})", ls) for t, ls in asp_terms(e.arg, ctx)]
    if isinstance(e, Bin) and e.op in ARITH_OPS:
        out: list[Alt] = []
        for a, b, lits in _pairs(ctx, e, asp_terms(e.left, ctx), asp_terms(e.right, ctx)):
            if e.op in _ASP_BIN:
                out.append((f"({a}{_ASP_BIN[e.op]}{b})", lits))
            elif e.op == "<<":
                y, lits = _atom(ctx, b, lits)
                guard = _with(lits, y, ">=", "0")
                guard = _with(guard, y, "<=", str(MAX_SHIFT)) if guard is not None else None
                if guard is not None:
                    out.append((f"({a}*(2**{y}))", guard))
            else:
                x, lits = _atom(ctx, a, lits)
                y, lits = _atom(ctx, b, lits)
                if e.op == ">>":
                    guard = _with(lits, y, ">=", "0")
                    guard = _with(guard, y, "<=", str(MAX_SHIFT)) if guard is not None else None
                    if guard is None:
                        continue
                    p = ctx.fresh()
                    lits, y = (*guard, f"{p}=(2**{y})"), p
                out.append((_floor(x, y) if e.op in ("/", ">>") else _fmod(x, y), lits))
        return out
    if isinstance(e, Call) and e.fn in ("min", "max"):
        pick = "<=" if e.fn == "min" else ">="
        other = NEGATED_CMP[pick]
        out = []
        for a, b, lits in _pairs(ctx, e, asp_terms(e.args[0], ctx), asp_terms(e.args[1], ctx)):
            out += [(t, c) for t, op in ((a, pick), (b, other)) if (c := _with(lits, a, op, b)) is not None]
        return ctx.cap(out, e)
    if isinstance(e, Call) and e.fn == "cdiv":
        out = []
        for a, b, lits in _pairs(ctx, e, asp_terms(e.args[0], ctx), asp_terms(e.args[1], ctx)):
            x, lits = _atom(ctx, a, lits)
            y, lits = _atom(ctx, b, lits)
            out.append((f"(({x}+(({y}-({x}\\{y}))\\{y}))/{y})", lits))
        return out
    if isinstance(e, Call) and e.fn == "abs":
        return [(f"|{a}|", la) for a, la in asp_terms(e.args[0], ctx)]
    if isinstance(e, Cond):
        out = []
        for conj in asp_truth(e.cond, ctx, True):
            out += [(t, conj + lits) for t, lits in asp_terms(e.then, ctx)]
        for conj in asp_truth(e.cond, ctx, False):
            out += [(t, conj + lits) for t, lits in asp_terms(e.other, ctx)]
        return ctx.cap(out, e)
    if is_bool(e) and not (isinstance(e, Call) and e.fn == "is_pow2"):
        raise ExprError(f"a condition is used as a number in {show(e)}")
    raise ExprError(f"{show(e)} cannot be translated to ASP (log2/is_pow2 are for parameters only)")


def _floor(x: str, y: str) -> str:
    """Floor division from clingo's truncating `/` and `\\`: (x - fmod(x,y)) / y (exact)."""
    return f"(({x}-{_fmod(x, y)})/{y})"


def _fmod(x: str, y: str) -> str:
    """Floor modulo (sign of the divisor) from clingo's remainder: ((x \\ y) + y) \\ y."""
    return f"((({x}\\{y})+{y})\\{y})"


def asp_undefined(e: Expr, ctx: AspContext) -> list[Conj]:
    """Conjunctions under which `e` is undefined (evaluated left to right, skipping what
    `and`/`or`/`->`/`if` do not need)."""
    return _memo(ctx, e, "undef", lambda: _undefined(e, ctx))  # type: ignore[return-value]


def _undefined(e: Expr, ctx: AspContext) -> list[Conj]:
    if isinstance(e, Int | Sym):
        return []
    if isinstance(e, Ref):
        return ctx.absent(e)
    if isinstance(e, Cond):
        return _or(
            ctx,
            e,
            asp_undefined(e.cond, ctx),
            _and(ctx, e, asp_truth(e.cond, ctx, True), asp_undefined(e.then, ctx)),
            _and(ctx, e, asp_truth(e.cond, ctx, False), asp_undefined(e.other, ctx)),
        )
    if isinstance(e, Bin) and e.op in BOOL_OPS:
        guard = asp_truth(e.left, ctx, e.op != "or")  # the left value that evaluates the right side
        return _or(ctx, e, asp_undefined(e.left, ctx), _and(ctx, e, guard, asp_undefined(e.right, ctx)))
    out = _or(ctx, e, *(asp_undefined(k, ctx) for k in children(e)))
    if (isinstance(e, Bin) and e.op in ("/", "%")) or (isinstance(e, Call) and e.fn == "cdiv"):
        divisor = e.right if isinstance(e, Bin) else e.args[1]
        out = _or(ctx, e, out, _where(asp_terms(divisor, ctx), "=", "0"))
    elif isinstance(e, Bin) and e.op in ("<<", ">>"):
        alts = asp_terms(e.right, ctx)
        out = _or(ctx, e, out, _where(alts, "<", "0"), _where(alts, ">", str(MAX_SHIFT)))
    elif isinstance(e, Call) and e.fn in ("log2", "is_pow2"):
        raise ExprError(f"{show(e)} cannot be translated to ASP (log2/is_pow2 are for parameters only)")
    return out


def _where(alts: list[Alt], op: str, value: str) -> list[Conj]:
    return [c for t, lits in alts if (c := _with(lits, t, op, value)) is not None]


def asp_truth(e: Expr, ctx: AspContext, want: bool) -> list[Conj]:
    """Conjunctions under which condition `e` is defined and has truth value `want`."""
    return _memo(ctx, e, f"truth{want}", lambda: _truth(e, ctx, want))  # type: ignore[return-value]


def _truth(e: Expr, ctx: AspContext, want: bool) -> list[Conj]:
    if isinstance(e, Un) and e.op == "not":
        return asp_truth(e.arg, ctx, not want)
    if isinstance(e, Bin) and e.op in BOOL_OPS:
        lt, lf = asp_truth(e.left, ctx, True), asp_truth(e.left, ctx, False)
        r = asp_truth(e.right, ctx, want)
        if e.op == "->":  # not left or right
            lt, lf = lf, lt
        if (e.op == "and") == want:  # all true (and) / all false (or, ->)
            return _and(ctx, e, lt if want else lf, r)
        # decided by the left side, else by the right side (which is only evaluated then; when
        # the left side is always defined, "else" needs no literal: the first case covers it)
        decided, passes = (lt, lf) if want else (lf, lt)
        if not asp_undefined(e.left, ctx):
            return _or(ctx, e, decided, r)
        return _or(ctx, e, decided, _and(ctx, e, passes, r))
    if isinstance(e, Bin) and e.op in CMP_OPS:
        op = e.op if want else NEGATED_CMP[e.op]
        for side, other, flip in ((e.right, e.left, False), (e.left, e.right, True)):
            if isinstance(side, Int) and not ASP_MIN <= side.value <= ASP_MAX:
                # against a constant beyond 32 bits the answer is known for every 32-bit value
                holds = _holds(op, side.value, flip)
                return [lits for _, lits in asp_terms(other, ctx)] if holds else []
        asp_op = "=" if op == "==" else op
        pairs = _pairs(ctx, e, asp_terms(e.left, ctx), asp_terms(e.right, ctx))
        return [c for a, b, lits in pairs if (c := _with(lits, a, asp_op, b)) is not None]
    if isinstance(e, InSet):
        alts = [asp_terms(e.arg, ctx)] + [asp_terms(x, ctx) for x in e.items]
        n = 1
        for a in alts:
            n *= len(a)
            ctx.check(n, e)
        out: list[Conj] = []
        for combo in itertools.product(*alts):
            lits = tuple(lit for _, ls in combo for lit in ls)
            x = combo[0][0]
            if want:
                out += [c for t, _ in combo[1:] if (c := _with(lits, x, "=", t)) is not None]
            else:
                conj: Conj | None = lits
                for t, _ in combo[1:]:
                    conj = _with(conj, x, "!=", t) if conj is not None else None
                if conj is not None:
                    out.append(conj)
        return ctx.cap(out, e)
    if isinstance(e, Call) and e.fn == "is_pow2":
        raise ExprError(f"{show(e)} cannot be translated to ASP (log2/is_pow2 are for parameters only)")
    # a number in boolean position means "non-zero"
    return asp_truth(Bin("!=", e, Int(0)), ctx, want)


def _holds(op: str, big: int, big_on_left: bool) -> bool:
    """`t op big` (or `big op t`) for every 32-bit t, where big is beyond 32 bits."""
    t_below = big > 0  # every 32-bit t is below a big positive constant, above a big negative one
    if big_on_left:
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
    return {
        "==": False,
        "!=": True,
        "<": t_below,
        "<=": t_below,
        ">": not t_below,
        ">=": not t_below,
    }[op]


def asp_violated(e: Expr, ctx: AspContext) -> list[Conj]:
    """Conjunctions under which a rule with expression `e` is violated: false or undefined.
    (`a and b` is violated exactly where a or b is; `a -> b` where a is undefined, or true
    and b violated; `a or b` where a is undefined, or false and b violated.)"""
    return _memo(ctx, e, "violated", lambda: _violated(e, ctx))  # type: ignore[return-value]


def _violated(e: Expr, ctx: AspContext) -> list[Conj]:
    if isinstance(e, Bin) and e.op == "and":
        return _or(ctx, e, asp_violated(e.left, ctx), asp_violated(e.right, ctx))
    if isinstance(e, Bin) and e.op in ("or", "->"):
        passes = asp_truth(e.left, ctx, e.op == "->")
        return _or(ctx, e, asp_undefined(e.left, ctx), _and(ctx, e, passes, asp_violated(e.right, ctx)))
    return _or(ctx, e, asp_truth(e, ctx, False), asp_undefined(e, ctx))


def asp_dnf(e: Expr, ctx: AspContext, negate: bool) -> list[Conj]:
    """Where `e` is violated (negate) or defined and true (not negate)."""
    return asp_violated(e, ctx) if negate else asp_truth(e, ctx, True)
