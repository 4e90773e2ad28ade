"""Integer expressions of the ISA docs: the AST, its limits, printing and types; the one
semantics below is implemented by each backend beside this module (`python`: evaluation and
folding, `asp`: the translation to ASP body literals, `vector`: NumPy columns).

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

import re
from collections.abc import Callable, Iterator, Mapping
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
        raise Undefined(f"{what} is beyond the {MAX_BITS}-bit integer limit ({short(v)})")


def short(v: int) -> str:
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
