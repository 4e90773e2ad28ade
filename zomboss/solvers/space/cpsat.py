"""Doc constraint expressions as OR-Tools CP-SAT constraints over integer knobs.

The third translation of `zomboss.expr` (after Python and ASP): a mapping space's
constraints, with the symbolic knobs fixed by a skeleton and the workload keys known, become
CP-SAT constraints over the integer knobs (tile sizes). Products of two variables use
multiplication equalities, divisions division equalities, and every intermediate gets bounds
from interval arithmetic so the model stays small.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ortools.sat.python import cp_model

from zomboss import expr as ex
from zomboss.errors import ZombossError

BIG = 1 << 40


class SizingError(ZombossError):
    pass


@dataclass
class _Term:
    expr: Any  # a CP-SAT linear expression or an int (ortools' stubs are too narrow to name it)
    lo: int
    hi: int


def _iv_mul(a: _Term, b: _Term) -> tuple[int, int]:
    c = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
    return min(c), max(c)


_T = TypeVar("_T")
_NAMES: dict[Hashable, tuple[ex.Expr, Any]] = {}
_FUNCTIONS: dict[Hashable, tuple[ex.Expr, Any]] = {}
_REWRITTEN: dict[Hashable, tuple[ex.Expr, Any]] = {}
_CACHE_LIMIT = 200_000  # nodes of the loaded spaces' constraint trees; cleared beyond


def _per_node(table: dict[Hashable, tuple[ex.Expr, Any]], key: Hashable, e: ex.Expr, make: Callable[[], _T]) -> _T:
    """`make()` once per node `e` (and `key`, which holds `id(e)`): the entry keeps the node, so
    an id reused by a later node is a miss, not a stale hit."""
    hit = table.get(key)
    if hit is not None and hit[0] is e:
        return hit[1]
    if len(table) > _CACHE_LIMIT:
        table.clear()
    value = make()
    table[key] = (e, value)
    return value


def _names(e: ex.Expr) -> frozenset[str]:
    return _per_node(_NAMES, id(e), e, lambda: frozenset(r.name for r in ex.refs(e)))


def _compiled(e: ex.Expr, known: frozenset[str]) -> Callable[[Mapping[str, object]], object]:
    """`e` compiled with `known` names read from the environment and the others as symbols."""
    return _per_node(_FUNCTIONS, (id(e), known), e, lambda: ex.compile_python(e, known.__contains__, lambda n: True))


def _rewritten(e: ex.Expr, make: Callable[[], ex.Expr]) -> ex.Expr:
    """The tree `make` builds in place of node `e` (cdiv as a division, a shift as a product, a
    set membership as a disjunction), built once per node, so that the folding and compile
    caches, keyed by node, hit for every skeleton's model rather than missing on fresh trees."""
    return _per_node(_REWRITTEN, id(e), e, make)


def _truth(e: ex.Expr) -> ex.Expr:
    """`x in {a, b}` as `x == a or x == b`; any other number `e` as `e != 0`."""
    if isinstance(e, ex.InSet):
        return _or_all([ex.Bin("==", e.arg, i) for i in e.items])
    return ex.Bin("!=", e, ex.Int(0))


class Translator:
    """Adds constraints to a CP-SAT model; `consts` are fixed names (params, workload keys,
    symbolic knob values as lower-case strings), `vars` the integer knobs."""

    def __init__(
        self,
        model: cp_model.CpModel,
        consts: Mapping[str, int | str],
        variables: Mapping[str, cp_model.IntVar],
        bounds: Mapping[str, tuple[int, int]],
    ) -> None:
        self.m = model
        self.consts = dict(consts)
        self.vars = dict(variables)
        self.bounds = dict(bounds)
        self._n = 0
        self._env: dict[str, object] = {k: (v.lower() if isinstance(v, str) else v) for k, v in self.consts.items()}
        self._var_names = frozenset(self.vars)
        self._folded: dict[Hashable, tuple[ex.Expr, Any]] = {}  # id -> (node, value): see _per_node

    def _new(self, lo: int, hi: int) -> cp_model.IntVar:
        self._n += 1
        return self.m.new_int_var(max(lo, -BIG), min(hi, BIG), f"t{self._n}")

    # -- constant folding ----------------------------------------------------------------
    def const(self, e: ex.Expr) -> int | str | bool | None:
        """The value of `e` when it reads no integer knob (else None), once per node: `term`
        asks every node of a tree, and each skeleton's model asks the same trees."""

        def fold() -> object:
            names = _names(e)
            if names & self._var_names:
                return None
            f = _compiled(e, frozenset(names & self._env.keys()))
            try:
                return f(self._env)
            except ZeroDivisionError:
                raise SizingError(f"division by zero in {ex.show(e)}") from None

        return _per_node(self._folded, id(e), e, fold)  # type: ignore[return-value]

    # -- integer terms --------------------------------------------------------------------
    def term(self, e: ex.Expr) -> _Term:
        c = self.const(e)
        if c is not None:
            if isinstance(c, str):
                raise SizingError(f"symbol {c!r} used as a number in {ex.show(e)}")
            return _Term(int(c), int(c), int(c))
        if isinstance(e, ex.Ref):
            lo, hi = self.bounds[e.name]
            return _Term(self.vars[e.name], lo, hi)
        if isinstance(e, ex.Un) and e.op == "neg":
            t = self.term(e.arg)
            return _Term(-t.expr, -t.hi, -t.lo)
        if isinstance(e, ex.Bin) and e.op in ("+", "-"):
            a, b = self.term(e.left), self.term(e.right)
            if e.op == "+":
                return _Term(a.expr + b.expr, a.lo + b.lo, a.hi + b.hi)
            return _Term(a.expr - b.expr, a.lo - b.hi, a.hi - b.lo)
        if isinstance(e, ex.Bin) and e.op == "*":
            a, b = self.term(e.left), self.term(e.right)
            lo, hi = _iv_mul(a, b)
            if a.lo == a.hi:
                return _Term(a.lo * b.expr, lo, hi)
            if b.lo == b.hi:
                return _Term(b.lo * a.expr, lo, hi)
            v = self._new(lo, hi)
            self.m.add_multiplication_equality(v, [a.expr, b.expr])
            return _Term(v, lo, hi)
        if isinstance(e, ex.Bin) and e.op in ("<<", ">>"):
            k = self.const(e.right)
            if not isinstance(k, int):
                raise SizingError(f"shift by a variable amount in {ex.show(e)}")
            factor = 1 << k
            return self.term(_rewritten(e, lambda: ex.Bin("*" if e.op == "<<" else "/", e.left, ex.Int(factor))))
        if isinstance(e, ex.Bin) and e.op in ("/", "%"):
            a, b = self.term(e.left), self.term(e.right)
            if b.lo <= 0 <= b.hi:
                raise SizingError(f"divisor of {ex.show(e)} may be zero")
            if a.lo < 0:
                raise SizingError(f"dividend of {ex.show(e)} may be negative (floor and truncation differ)")
            if e.op == "/":
                cands = [a.lo // b.lo, a.lo // b.hi, a.hi // b.lo, a.hi // b.hi]
                v = self._new(min(cands), max(cands))
                self.m.add_division_equality(v, a.expr, b.expr)
                return _Term(v, min(cands), max(cands))
            v = self._new(0, max(abs(b.lo), abs(b.hi)) - 1)
            self.m.add_modulo_equality(v, a.expr, b.expr)
            return _Term(v, 0, max(abs(b.lo), abs(b.hi)) - 1)
        if isinstance(e, ex.Call) and e.fn == "cdiv":
            num, den = e.args
            return self.term(_rewritten(e, lambda: ex.Bin("/", ex.Bin("-", ex.Bin("+", num, den), ex.Int(1)), den)))
        if isinstance(e, ex.Call) and e.fn in ("min", "max"):
            a, b = self.term(e.args[0]), self.term(e.args[1])
            lo = min(a.lo, b.lo) if e.fn == "min" else max(a.lo, b.lo)
            hi = min(a.hi, b.hi) if e.fn == "min" else max(a.hi, b.hi)
            v = self._new(lo, hi)
            (self.m.add_min_equality if e.fn == "min" else self.m.add_max_equality)(v, [a.expr, b.expr])
            return _Term(v, lo, hi)
        if isinstance(e, ex.Call) and e.fn == "abs":
            a = self.term(e.args[0])
            hi = max(abs(a.lo), abs(a.hi))
            v = self._new(0, hi)
            self.m.add_abs_equality(v, a.expr)
            return _Term(v, 0, hi)
        if isinstance(e, ex.Cond):
            cond = self.boolean(e.cond)
            a, b = self.term(e.then), self.term(e.other)
            v = self._new(min(a.lo, b.lo), max(a.hi, b.hi))
            self.m.add(v == a.expr).only_enforce_if(cond)
            self.m.add(v == b.expr).only_enforce_if(cond.negated())
            return _Term(v, min(a.lo, b.lo), max(a.hi, b.hi))
        raise SizingError(f"{ex.show(e)} cannot be translated to CP-SAT")

    # -- conditions -------------------------------------------------------------------------
    def boolean(self, e: ex.Expr) -> Any:
        """A Boolean variable equal to the truth of `e`."""
        c = self.const(e)
        b = self.m.new_bool_var("b")
        if c is not None:
            self.m.add(b == int(bool(c)))
            return b
        if isinstance(e, ex.Bin) and e.op in ex.CMP_OPS:
            lhs, rhs = self.term(e.left).expr, self.term(e.right).expr
            pos = _compare(lhs, e.op, rhs)
            neg = _compare(lhs, ex.NEGATED_CMP[e.op], rhs)
            self.m.add(pos).only_enforce_if(b)
            self.m.add(neg).only_enforce_if(b.negated())
            return b
        if isinstance(e, ex.Un) and e.op == "not":
            inner = self.boolean(e.arg)
            self.m.add(b == 1 - inner)
            return b
        if isinstance(e, ex.Bin) and e.op in ("and", "or", "->"):
            left, right = self.boolean(e.left), self.boolean(e.right)
            if e.op == "->":
                left = left.negated()
            if e.op == "and":
                self.m.add_bool_and([left, right]).only_enforce_if(b)
                self.m.add_bool_or([left.negated(), right.negated()]).only_enforce_if(b.negated())
            else:
                self.m.add_bool_or([left, right]).only_enforce_if(b)
                self.m.add_bool_and([left.negated(), right.negated()]).only_enforce_if(b.negated())
            return b
        return self.boolean(_rewritten(e, lambda: _truth(e)))

    def require(self, e: ex.Expr) -> None:
        """Add `e` as a hard constraint."""
        c = self.const(e)
        if c is not None:
            if not c:
                self.m.add_bool_or([])  # infeasible: a constant constraint that does not hold
            return
        if isinstance(e, ex.Bin) and e.op == "and":
            self.require(e.left)
            self.require(e.right)
            return
        self.m.add_bool_and([self.boolean(e)])


def _compare(lhs: Any, op: str, rhs: Any) -> Any:
    """A CP-SAT linear constraint `lhs op rhs`."""
    if op == "==":
        return lhs == rhs
    if op == "!=":
        return lhs != rhs
    if op == "<":
        return lhs < rhs
    if op == "<=":
        return lhs <= rhs
    if op == ">":
        return lhs > rhs
    return lhs >= rhs


def _or_all(items: list[ex.Expr]) -> ex.Expr:
    out = items[0]
    for x in items[1:]:
        out = ex.Bin("or", out, x)
    return out
