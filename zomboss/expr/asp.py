"""The ASP translation of doc expressions: three-valued, so a rule is violated where its
expression is false or undefined, exactly as the Python evaluation (`zomboss.expr.python`)
decides whenever every value fits clingo's 32-bit integers.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Callable, Sequence

from zomboss.expr.ast import (
    ARITH_OPS,
    ASP_MAX,
    ASP_MIN,
    BOOL_OPS,
    CMP_OPS,
    MAX_CASES,
    MAX_SHIFT,
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
    children,
    is_bool,
    short,
    show,
)

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
        raise ExprError(f"the constant {short(v)} does not fit clingo's 32-bit integers")
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
