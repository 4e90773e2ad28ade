"""Integer sizing of a skeleton with CP-SAT: the doc's constraints over the integer knobs
(tile sizes, buffer counts) once clingo has fixed the symbolic ones.

Inactive integer knobs (their `when` is false under the skeleton) are fixed to their
canonical value, so counts and optima never see the same kernel twice. Many skeletons share
one integer problem: only the symbolic knobs that some mixed constraint (or an integer knob's
condition) reads can change it, and `sizing_key` is that projection.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ortools.sat.python import cp_model

from zomboss import expr as ex
from zomboss.mapping import Space
from zomboss.solvers.space.cpsat import SizingError, Translator


def relevant_symbolic(sp: Space) -> tuple[str, ...]:
    """Symbolic knobs whose values can change the integer problem."""
    integer = {k.name for k in sp.integer}
    symbolic = {k.name for k in sp.symbolic}
    out: set[str] = set()
    for c in sp.constraints:
        names = {r.name for r in ex.refs(c.expr)}
        if names & integer:
            out |= names & symbolic
    for k in sp.integer:
        if k.when is not None:
            out |= {r.name for r in ex.refs(k.when)} & symbolic
    return tuple(k.name for k in sp.symbolic if k.name in out)


def sizing_key(sp: Space, skeleton: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple((k, skeleton[k]) for k in relevant_symbolic(sp))


@dataclass(frozen=True)
class Sizing:
    values: dict[str, int]
    objective: int | None
    bound: int | None  # CP-SAT's proven lower bound on the objective over this skeleton
    optimal: bool


class SizingModel:
    """The CP-SAT model of one skeleton's integer knobs under every constraint."""

    def __init__(self, sp: Space, shape: Mapping[str, int], skeleton: Mapping[str, str]) -> None:
        self.space, self.shape, self.skeleton = sp, dict(shape), dict(skeleton)
        self.model = cp_model.CpModel()
        consts: dict[str, int | str] = {**sp.params, **self.shape, **self.skeleton}
        self.vars: dict[str, cp_model.IntVar] = {}
        bounds: dict[str, tuple[int, int]] = {}
        for k in sp.integer:
            if sp.active(k, self.skeleton, self.shape):
                self.vars[k.name] = self.model.new_int_var(k.lo, k.hi, k.name)
                bounds[k.name] = (k.lo, k.hi)
            else:
                assert isinstance(k.default, int)
                consts[k.name] = k.default
        self.fixed = {k.name: int(k.default) for k in sp.integer if k.name not in self.vars}
        self.work = 0.0  # CP-SAT deterministic time spent by `solve` (a machine-independent budget)
        self.tr = Translator(self.model, consts, self.vars, bounds)
        try:
            for c in sp.constraints:
                self.tr.require(c.expr)
        except SizingError as e:
            raise SizingError(f"{sp.op}: {e}") from None

    def term(self, e: ex.Expr) -> Any:
        return self.tr.term(e).expr

    def solver(self, time_limit: float) -> cp_model.CpSolver:
        """One worker and a deterministic-time limit, so a sizing (and the pool built from it)
        is the same on a loaded machine as on an idle one: a rerun or a resumed bench proposes
        exactly the candidates the first run did. The wall-clock limit is only a safety net."""
        s = cp_model.CpSolver()
        s.parameters.max_deterministic_time = time_limit
        s.parameters.max_time_in_seconds = 20 * time_limit + 1.0
        s.parameters.num_workers = 1
        # Ctrl-C is the user's, not CP-SAT's: left to CP-SAT it only ends the current solve
        # (one of thousands in a pool), so the command would never stop
        s.parameters.catch_sigint_signal = False
        return s

    def _enumerator(self, time_limit: float) -> cp_model.CpSolver:
        """A solver that enumerates every solution within `time_limit` wall seconds (no
        deterministic limit: an enumeration's caller bounds it by time or count). Without the LP
        relaxation (linearization level 0), which only helps prove optimality, CP-SAT enumerates a
        VTA convolution's 1,023 sizings in 0.03 s instead of 0.6 s (measured, ortools 9)."""
        solver = self.solver(max(0.01, time_limit))
        solver.parameters.max_deterministic_time = float("inf")
        solver.parameters.max_time_in_seconds = max(0.01, time_limit)
        solver.parameters.enumerate_all_solutions = True
        solver.parameters.linearization_level = 0
        return solver

    def _values(self, solver: cp_model.CpSolver) -> dict[str, int]:
        out = {k: int(solver.value(v)) for k, v in self.vars.items()}
        out.update({k: int(v) for k, v in self.fixed.items()})
        return {k.name: out[k.name] for k in self.space.integer}

    def every_sizing(self, time_limit: float, limit: int | None = None) -> tuple[list[dict[str, int]], bool]:
        """Every legal sizing, and whether CP-SAT finished enumerating them: the exhaustive
        search's enumeration, and the guided search's for a small space. It stops after `limit`
        sizings (a count, so the answer does not depend on the machine's load) or `time_limit`
        wall seconds, whichever comes first; `finished` is False after either."""
        solver = self._enumerator(time_limit)
        out: list[dict[str, int]] = []
        model = self

        class _Collect(cp_model.CpSolverSolutionCallback):
            def on_solution_callback(self) -> None:
                vals = {k: int(self.value(v)) for k, v in model.vars.items()}
                vals.update(model.fixed)
                out.append({k.name: vals[k.name] for k in model.space.integer})
                if limit is not None and len(out) >= limit:
                    self.stop_search()

        status = solver.solve(self.model, _Collect())
        return out, status in (cp_model.OPTIMAL, cp_model.INFEASIBLE) and (limit is None or len(out) < limit)

    def solve(self, objective: ex.Expr | None = None, time_limit: float = 5.0) -> Sizing | None:
        """A feasible sizing (None if none), minimising `objective` when given."""
        if objective is not None:
            self.model.minimize(self.term(objective))
        solver = self.solver(time_limit)
        status = solver.solve(self.model)
        self.work += solver.deterministic_time
        if objective is not None:
            self.model.clear_objective()
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None
        vals = self._values(solver)
        if objective is None:
            return Sizing(vals, None, None, status == cp_model.OPTIMAL)
        return Sizing(vals, int(solver.objective_value), int(solver.best_objective_bound), status == cp_model.OPTIMAL)

    def extent(self, knob: str, time_limit: float = 2.0) -> tuple[int, int] | None:
        """The smallest and largest value `knob` takes over the legal sizings."""
        if knob not in self.vars:
            v = int(self.fixed[knob])
            return (v, v) if self.solve(time_limit=time_limit) is not None else None
        out = []
        for sign in (1, -1):
            self.model.minimize(sign * self.vars[knob])
            solver = self.solver(time_limit)
            status = solver.solve(self.model)
            self.model.clear_objective()
            if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                return None
            out.append(int(solver.value(self.vars[knob])))
        return out[0], out[1]

    def count(self, limit: int = 100_000, time_limit: float = 5.0) -> tuple[int, bool]:
        """Legal sizings, counted up to `limit` and `time_limit` wall seconds (a count, unlike a
        sizing, may depend on the machine: it says when it is incomplete); (count, complete)."""
        solver = self._enumerator(time_limit)

        class _Counter(cp_model.CpSolverSolutionCallback):
            def __init__(self) -> None:
                super().__init__()
                self.n = 0

            def on_solution_callback(self) -> None:
                self.n += 1
                if self.n >= limit:
                    self.stop_search()

        cb = _Counter()
        status = solver.solve(self.model, cb)
        complete = status in (cp_model.OPTIMAL, cp_model.INFEASIBLE) and cb.n < limit
        return cb.n, complete


def group_skeletons(
    sp: Space, skeletons: Iterable[Mapping[str, str]]
) -> dict[tuple[tuple[str, str], ...], list[dict[str, str]]]:
    """Skeletons by the integer problem they share (`sizing_key`)."""
    out: dict[tuple[tuple[str, str], ...], list[dict[str, str]]] = {}
    for s in skeletons:
        out.setdefault(sizing_key(sp, s), []).append(dict(s))
    return out
