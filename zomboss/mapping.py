"""Mappings: what a search decides for one workload, in the terms of the doc's mapping space.

The doc's `mapping OP { knob ... constraint ... }` block is the only declaration of the
knobs, their domains, their conditions and the constraints; `Space` is its evaluated form
for one KB (parameters known), and `KnobMapping` one point of it. Every target, the CLI, the
solvers and the guides speak this one form; a target turns a `KnobMapping` into its lowering's
input and never declares knobs of its own.

JSON (what `default --json` prints and `kb check` reads): `{"op": "matmul", "knobs": {...}}`
with symbolic knobs as strings (the doc's names: `"hw"`, `"true"`) and integer knobs as
integers. JSON booleans are accepted for `{false, true}` knobs.

A knob declared `when COND` matters only where COND holds; elsewhere it takes its canonical
value (`= V` in the doc, else its first value or its lower bound). Mappings are always kept
canonical, so two mappings are equal exactly when they describe the same kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from zomboss import expr as ex
from zomboss.doc import model as dm
from zomboss.errors import ZombossError
from zomboss.knowledge import KB, Violation

Value = int | str
Shape = Mapping[str, int]


class MappingError(ZombossError):
    """A mapping that cannot be read: wrong op, unknown knob, ill-typed or out-of-domain value."""


class IllegalMapping(ZombossError):
    """A well-formed mapping that breaks a constraint of the doc for this workload."""

    exit_code = 1

    def __init__(self, violations: Iterable[Violation]) -> None:
        self.violations = list(violations)
        lines = []
        for v in self.violations:
            vals = ", ".join(f"{k}={x}" for k, x in v.values.items())
            lines.append(f"{v.rule} ({v.doc_loc}): {v.message}" + (f" [{vals}]" if vals else ""))
        super().__init__("illegal mapping:\n  " + "\n  ".join(lines))


@dataclass(frozen=True)
class Knob:
    """One knob of a mapping space with its domain evaluated for the KB's parameters."""

    name: str
    values: tuple[str, ...]  # symbolic knobs: the symbols, in doc order; () for integer knobs
    lo: int
    hi: int
    default: Value  # canonical value (taken wherever `when` is false)
    when: ex.Expr | None
    doc: str
    loc: dm.Loc

    @property
    def symbolic(self) -> bool:
        return bool(self.values)

    @property
    def boolean(self) -> bool:
        return set(self.values) == {"false", "true"}

    def domain(self) -> str:
        return "{" + ", ".join(self.values) + "}" if self.values else f"{self.lo}..{self.hi}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "doc": self.doc, "line": self.loc.line}
        if self.values:
            out["values"] = list(self.values)
        else:
            out["range"] = [self.lo, self.hi]
        out["canonical"] = self.default
        if self.when is not None:
            out["when"] = ex.show(self.when)
        return out

    def coerce(self, v: object, where: str) -> Value:
        """The knob's value for a JSON/Python value, or MappingError naming the field."""
        if self.values:
            if isinstance(v, bool) and self.boolean:
                return "true" if v else "false"
            if not isinstance(v, str) or v not in self.values:
                raise MappingError(f"{where}: knob {self.name!r} = {_show(v)} is not one of {self.domain()}")
            return v
        if isinstance(v, bool) or not isinstance(v, int):
            raise MappingError(f"{where}: knob {self.name!r} = {_show(v)} must be an integer ({self.domain()})")
        if not self.lo <= v <= self.hi:
            raise MappingError(f"{where}: knob {self.name!r} = {v} is outside {self.domain()}")
        return v


def _show(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, str) else str(v)


@dataclass(frozen=True)
class KnobMapping:
    """One point of a mapping space: a value for every knob, canonical, in doc order."""

    op: str
    values: tuple[tuple[str, Value], ...]

    def __getitem__(self, name: str) -> Value:
        for k, v in self.values:
            if k == name:
                return v
        raise KeyError(name)

    def get(self, name: str, default: Value | None = None) -> Value | None:
        try:
            return self[name]
        except KeyError:
            return default

    def int(self, name: str) -> int:
        v = self[name]
        assert isinstance(v, int), f"knob {name} is symbolic"
        return v

    def sym(self, name: str) -> str:
        v = self[name]
        assert isinstance(v, str), f"knob {name} is an integer"
        return v

    def flag(self, name: str) -> bool:
        """A `{false, true}` knob as a Python bool."""
        v = self[name]
        assert v in ("false", "true"), f"knob {name} is not boolean"
        return v == "true"

    def as_dict(self) -> dict[str, Value]:
        return dict(self.values)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "knobs": dict(self.values)}

    def key(self) -> str:
        """A stable text key (results store, de-duplication)."""
        return self.op + ":" + ",".join(f"{k}={v}" for k, v in self.values)


@dataclass(frozen=True)
class Space:
    """The mapping space of one op family on one KB (parameters evaluated)."""

    target: str
    op: str
    keys: tuple[str, ...]  # workload keys, as the doc's `workload OP(...)` declares them
    knobs: tuple[Knob, ...]
    constraints: tuple[dm.Constraint, ...]
    lets: tuple[tuple[str, ex.Expr], ...]
    params: Mapping[str, int]
    symbols: frozenset[str]
    loc: dm.Loc
    costs: Mapping[str, dm.Cost]  # "estimate", "bound" (either may be absent)

    @classmethod
    def of(cls, kb: KB, op: str) -> Space:
        ms = kb.mapping_space(op)
        if ms is None:
            ops = ", ".join(m.op for m in kb.doc.mappings) or "none"
            raise MappingError(f"{kb.target} has no mapping space for op {op!r} (ops: {ops})")
        decl = next(w for w in kb.doc.workloads if w.op == op)
        knobs = []
        for k in ms.knobs:
            if k.values:
                d = k.default
                default: Value = d.name if isinstance(d, ex.Sym | ex.Ref) else k.values[0]
                lo = hi = 0
            else:
                assert k.lo is not None and k.hi is not None
                lo, hi = _int(k.lo, kb.params), _int(k.hi, kb.params)
                default = _int(k.default, kb.params) if k.default is not None else lo
            knobs.append(Knob(k.name, k.values, lo, hi, default, k.when, k.doc, k.loc))
        costs = {c.name: c for c in ms.costs}
        return cls(
            kb.target, op, decl.keys, tuple(knobs), ms.constraints, ms.lets, dict(kb.params), kb.symbols, ms.loc, costs
        )

    # -- knobs ------------------------------------------------------------------------------
    def knob(self, name: str) -> Knob:
        for k in self.knobs:
            if k.name == name:
                return k
        raise MappingError(f"{self.op} has no knob {name!r} (knobs: {', '.join(k.name for k in self.knobs)})")

    @property
    def symbolic(self) -> tuple[Knob, ...]:
        return tuple(k for k in self.knobs if k.values)

    @property
    def integer(self) -> tuple[Knob, ...]:
        return tuple(k for k in self.knobs if not k.values)

    def active(self, knob: Knob, values: Mapping[str, Value], shape: Shape) -> bool:
        """Whether `knob` matters for a mapping with these (symbolic) values on `shape`."""
        if knob.when is None:
            return True
        env = self._env(values, shape)
        try:
            return bool(self._compiled(knob.when, env)(env))
        except ex.EVAL_ERRORS:
            return False  # an undefined condition does not hold (as knob_active in ASP)

    @cached_property
    def _compiled_exprs(self) -> dict[tuple[int, frozenset[str]], Callable[[Mapping[str, object]], object]]:
        return {}

    def _compiled(self, e: ex.Expr, env: Mapping[str, object]) -> Callable[[Mapping[str, object]], object]:
        """`ex.compile_python(e)` for an env with these names, compiled once per Space (the
        expressions are the Space's own, so their ids are stable while it lives)."""
        key = (id(e), frozenset(env))
        f = self._compiled_exprs.get(key)
        if f is None:
            names = key[1]
            f = ex.compile_python(e, lambda n: n in names, lambda n: n.lower() in self.symbols)
            self._compiled_exprs[key] = f
        return f

    def _env(self, values: Mapping[str, Value], shape: Shape) -> dict[str, object]:
        env: dict[str, object] = {**self.params, **{k: int(v) for k, v in shape.items()}}
        env.update({k: (v.lower() if isinstance(v, str) else v) for k, v in values.items()})
        return env

    # -- constructing -------------------------------------------------------------------------
    def mapping(self, values: Mapping[str, object], shape: Shape, where: str = "mapping") -> KnobMapping:
        """A canonical mapping from knob values: domains checked, inactive knobs set to their
        canonical value (they may be omitted), active knobs required. Constraints are not
        checked here (see `violations`), so a guide can be told everything wrong at once."""
        got = {k.name: k.coerce(values[k.name], where) for k in self.knobs if k.name in values}
        out = self.complete({**values, **got}, shape, where)
        return KnobMapping(self.op, tuple((k.name, out[k.name]) for k in self.knobs))

    def complete(self, values: Mapping[str, object], shape: Shape, where: str = "mapping") -> dict[str, Value]:
        """Knob values with every inactive knob at its canonical value. An active knob's value is
        not checked against its domain here (`kb check` reports it as a violation of the knob's
        range rule); an inactive knob's given value is, by `Knob.coerce` as in `mapping`, since
        it is replaced and would otherwise pass unseen (`loop=hw` with `"dataflow": "xs"`).
        Unknown knobs and missing active knobs are errors."""
        self._check_shape(shape, where)
        unknown = sorted(set(values) - {k.name for k in self.knobs})
        if unknown:
            names = ", ".join(k.name for k in self.knobs)
            raise MappingError(f"{where}: {self.op} has no knob {unknown[0]!r} (knobs: {names})")
        out: dict[str, Value] = {}
        env: dict[str, object] = {**self.params, **{k: int(v) for k, v in shape.items()}}
        for k in self._settle_order:
            if k.when is not None and not self._holds(k.when, env):
                if k.name in values:
                    k.coerce(values[k.name], where)  # the one domain check, as for an active knob in `mapping`
                out[k.name] = k.default
            elif k.name in values:
                v = values[k.name]
                out[k.name] = ("true" if v else "false") if isinstance(v, bool) and k.boolean else v  # type: ignore[assignment]
            else:
                raise MappingError(f"{where}: {self.op} mapping lacks knob {k.name!r} ({k.domain()})")
            v = out[k.name]
            env[k.name] = v.lower() if isinstance(v, str) else v
        return {k.name: out[k.name] for k in self.knobs}

    @cached_property
    def _settle_order(self) -> tuple[Knob, ...]:
        """Knobs in the order `complete` settles them: conditions read only symbolic knobs, which
        the doc orders acyclically, so every knob comes after the knobs its condition reads."""
        symbolic = {s.name for s in self.symbolic}
        order: list[Knob] = []
        done: set[str] = set()
        pending = list(self.symbolic) + list(self.integer)
        while pending:
            ready = [
                k for k in pending if not (({r.name for r in ex.refs(k.when)} & symbolic) - done if k.when else set())
            ]
            assert ready, "knob conditions are acyclic (checked when the KB is built)"
            for k in ready:
                pending.remove(k)
                order.append(k)
                done.add(k.name)
        return tuple(order)

    def _holds(self, when: ex.Expr, env: Mapping[str, object]) -> bool:
        """A knob's condition over the knobs settled so far (as `active`; undefined: false)."""
        try:
            return bool(self._compiled(when, env)(env))
        except ex.EVAL_ERRORS:
            return False

    def from_json(self, data: object, shape: Shape, where: str = "mapping") -> KnobMapping:
        """Read `{"op": ..., "knobs": {...}}`; every error names the field."""
        if not isinstance(data, Mapping):
            raise MappingError(f'{where}: a mapping is a JSON object {{"op": ..., "knobs": {{...}}}}')
        extra = sorted(set(data) - {"op", "knobs"})
        if extra:
            raise MappingError(f"{where}: field {extra[0]!r} is not part of a mapping (expected 'op' and 'knobs')")
        if data.get("op") != self.op:
            raise MappingError(f"{where}: field 'op' = {_show(data.get('op'))}, but the workload's op is {self.op!r}")
        knobs = data.get("knobs")
        if not isinstance(knobs, Mapping):
            raise MappingError(f"{where}: field 'knobs' must be an object of knob values")
        return self.mapping(knobs, shape, where)

    def from_skeleton(self, skeleton: Mapping[str, str], sizes: Mapping[str, int], shape: Shape) -> KnobMapping:
        """A clingo skeleton (symbolic knob values) completed by CP-SAT's integer values."""
        return self.mapping({**skeleton, **sizes}, shape, "skeleton")

    def skeleton(self, m: KnobMapping) -> tuple[tuple[str, str], ...]:
        return tuple((k.name, m.sym(k.name)) for k in self.symbolic)

    # -- legality -----------------------------------------------------------------------------
    def flat(self, m: KnobMapping, shape: Shape) -> dict[str, int | str]:
        """Knob values and workload keys as the KB's checks read them."""
        return {**{k: int(v) for k, v in shape.items() if k in self.keys}, **m.as_dict()}

    def violations(self, kb: KB, m: KnobMapping, shape: Shape) -> list[Violation]:
        """Every constraint of the doc that `m` breaks on `shape` (empty: legal)."""
        if m.op != self.op:
            return [Violation("map.op", f"a {m.op} mapping cannot map a {self.op} workload", str(self.loc), 0, 0, m.op)]
        flat = self.flat(m, shape)
        if self._legal(kb, flat):
            return []
        ms = kb.mapping_space(self.op)  # the constraints this Space compiled (its cache is keyed by their ids)
        same = ms is not None and ms.constraints is self.constraints and kb.params == self.params
        return mapping_violations(kb, self.op, flat, compiled=self._compiled if same else None)

    def _legal(self, kb: KB, flat: Mapping[str, int | str]) -> bool:
        """A fast test that `mapping_violations` finds nothing (same env, same checks, with the
        constraints compiled once); anything it cannot vouch for goes the full way."""
        if kb.params != self.params:
            return False
        for k in self.knobs:
            v = flat.get(k.name)
            if v is None or (v not in k.values if k.values else not k.lo <= v <= k.hi):  # type: ignore[operator]
                return False
        env: dict[str, object] = {**kb.params, **{k: (v.lower() if isinstance(v, str) else v) for k, v in flat.items()}}
        try:
            return all(self._compiled(c.expr, env)(env) for c in self.constraints)
        except ex.EVAL_ERRORS + (ZeroDivisionError,):
            return False  # the full check decides (and reports) what the fast one cannot

    def check(self, kb: KB, m: KnobMapping, shape: Shape) -> None:
        found = self.violations(kb, m, shape)
        if found:
            raise IllegalMapping(found)

    def cost(self, name: str, m: KnobMapping, shape: Shape) -> int | None:
        """The doc's `cost estimate` or `cost bound` of a mapping (None when the doc has none)."""
        c = self.costs.get(name)
        if c is None:
            return None
        env = self._env(m.as_dict(), shape)
        v = self._compiled(c.expr, env)(env)  # compiled once: guides and the sizing polish call this in loops
        assert isinstance(v, int)
        return v

    def _check_shape(self, shape: Shape, where: str) -> None:
        missing = [k for k in self.keys if k not in shape]
        if missing:
            raise MappingError(f"{where}: the workload gives no value for key {missing[0]!r} of {self.op}")

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "op": self.op,
            "workload_keys": list(self.keys),
            "knobs": [k.to_json() for k in self.knobs],
            "constraints": [
                {"id": c.id, "message": c.message, "line": c.loc.line, "expr": ex.show(c.expr)}
                for c in self.constraints
            ],
        }


def _int(e: ex.Expr, params: Mapping[str, int]) -> int:
    v = ex.evaluate(e, params)
    assert isinstance(v, int) and not isinstance(v, bool)
    return v


_SPACES: dict[tuple[str, str], Space] = {}


def space(kb: KB, op: str) -> Space:
    """`Space.of`, memoised per KB digest."""
    key = (kb.digest or str(id(kb)), op)
    if key not in _SPACES:
        _SPACES[key] = Space.of(kb, op)
    return _SPACES[key]


def iter_knob_edits(sp: Space, m: KnobMapping, shape: Shape) -> Iterator[tuple[str, Value]]:
    """Every single-knob change of `m` that stays inside the knob's domain and changes the
    kernel (an edit of an inactive knob is no change at all): the neighbourhood guides refine in."""
    vals = m.as_dict()
    for k in sp.knobs:
        if not sp.active(k, vals, shape):
            continue
        if k.values:
            for v in k.values:
                if v != vals[k.name]:
                    yield k.name, v
        else:
            cur = vals[k.name]
            assert isinstance(cur, int)
            for n in sorted({cur - 1, cur + 1, cur * 2, cur // 2}):
                if k.lo <= n <= k.hi and n != cur:
                    yield k.name, n


def mapping_violations(
    kb: KB,
    op: str,
    values: Mapping[str, int | str],
    params: Mapping[str, int] | None = None,
    compiled: Callable[[ex.Expr, Mapping[str, object]], Callable[[Mapping[str, object]], object]] | None = None,
) -> list[Violation]:
    """The doc's constraints (and integer knob ranges) that a mapping breaks, evaluated in
    Python. `values` holds knob values and workload keys (symbolic knobs as their names);
    `params` defaults to the KB's parameters (a target may evaluate other sizes). `compiled`
    (a Space's cache of compiled expressions) saves compiling each constraint again: a guide
    checks hundreds of illegal neighbours."""
    space = kb.mapping_space(op)
    if space is None:
        raise ZombossError(f"{kb.target} has no mapping space for op {op!r}")
    params = kb.params if params is None else params
    env: dict[str, object] = {**params, **{k: (v.lower() if isinstance(v, str) else v) for k, v in values.items()}}
    out: list[Violation] = []
    for k in space.knobs:
        if k.name not in values:
            out.append(
                Violation(
                    f"{op}.{k.name}.missing", f"the mapping gives no value for knob {k.name}", str(k.loc), 0, 0, op, {}
                )
            )
        elif k.values:
            if str(values[k.name]).lower() not in {v.lower() for v in k.values}:
                out.append(
                    Violation(
                        f"{op}.{k.name}.range",
                        f"knob {k.name} must be one of {', '.join(k.values)}",
                        str(k.loc),
                        0,
                        0,
                        op,
                        {k.name: values[k.name]},
                    )
                )
        else:
            assert k.lo is not None and k.hi is not None
            lo, hi = ex.evaluate(k.lo, params), ex.evaluate(k.hi, params)
            v = values[k.name]
            if isinstance(v, str) or not lo <= v <= hi:  # type: ignore[operator]
                out.append(
                    Violation(
                        f"{op}.{k.name}.range",
                        f"knob {k.name} must be in {lo}..{hi}",
                        str(k.loc),
                        0,
                        0,
                        op,
                        {k.name: values[k.name]},
                    )
                )
    if any(v.rule.endswith(".missing") for v in out):
        return out
    for c in space.constraints:
        if compiled is not None:
            f = compiled(c.expr, env)
        else:
            f = ex.compile_python(c.expr, lambda n: n in env, lambda n: n.lower() in kb.symbols)
        try:
            ok = f(env)
        except ex.EVAL_ERRORS:  # undefined: the constraint is violated (as on the ASP side)
            ok = False
        if not ok:
            names = dict.fromkeys(r.name for r in ex.refs(c.expr) if r.name in env)
            out.append(Violation(c.id, c.message, str(c.loc), 0, 0, op, {n: env[n] for n in names}))
    return out
