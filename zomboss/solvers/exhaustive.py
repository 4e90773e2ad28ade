"""`zomboss solve --exhaustive`: exact branch and bound over the declared legal space.

Every legal mapping — each skeleton clingo enumerates, times each legal sizing CP-SAT
enumerates — is either simulated (timing-only) or proven unable to beat the best kernel found
so far by the doc's sound `cost bound` (a whole cost class at once when CP-SAT's minimum of
the bound over the class already reaches the incumbent). The incumbent starts at Candidate-0
and the reference mappings, then the pool's best estimates, so pruning bites early. The
winner is verified exactly as in `solve`. With `time_limit` the run may stop early; it then
says it is incomplete and `optimum_cycles` is not claimed.
"""

from __future__ import annotations

import time

from ortools.sat.python import cp_model

from zomboss.mapping import space
from zomboss.results import Store
from zomboss.solvers.guides.base import SearchState, Simulated
from zomboss.solvers.search import Runner, SolveResult, candidate_zero, result_of, verify_winner
from zomboss.solvers.space import SizingModel, build_pool
from zomboss.target import Mode, Params, Target
from zomboss.workload import Workload


def _sizings(model: SizingModel, time_limit: float) -> tuple[list[dict[str, int]], bool]:
    """Every legal sizing of a skeleton (and whether CP-SAT finished enumerating)."""
    solver = cp_model.CpSolver()
    solver.parameters.enumerate_all_solutions = True
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = max(0.01, time_limit)
    out: list[dict[str, int]] = []

    class _Collect(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self) -> None:
            vals = {k: int(self.value(v)) for k, v in model.vars.items()}
            vals.update(model.fixed)
            out.append({k.name: vals[k.name] for k in model.space.integer})

    status = solver.solve(model.model, _Collect())
    return out, status in (cp_model.OPTIMAL, cp_model.INFEASIBLE)


def exhaustive(
    t: Target, wl: Workload, params: Params, store: Store | None = None, time_limit: float | None = None
) -> SolveResult:
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    kb = t.kb(params)
    sp = space(kb, wl.op)
    runner = Runner(t, wl, params, store, "exhaustive")
    refs = t.reference_mappings(wl, params)
    c0 = refs["library"]
    default = candidate_zero(runner, sp, c0)
    pool = build_pool(kb, wl.op, wl.shape, k=1, near=c0, budget_s=1e9)
    state = SearchState(sp, dict(wl.shape), default, {}, pool.candidates())
    done: set[str] = {c0.key()}
    sims = legal = 0
    complete = True

    def simulate(m, source: str) -> None:  # noqa: ANN001 - a core Mapping
        nonlocal sims
        cycles, _, bd, wall, cached = runner.run(m, Mode.TIMING, 0, source)
        sims += 1
        done.add(m.key())
        state.simulated.append(
            Simulated(
                m, cycles, bd, source, sp.cost("estimate", m, wl.shape), sp.cost("bound", m, wl.shape), wall, cached
            )
        )

    # a strong incumbent first: the other references, then each class's best estimate
    for name, m in refs.items():
        if m.key() not in done and not sp.violations(kb, m, wl.shape):
            simulate(m, name)
    for c in state.pool:
        b = c.bound
        if c.mapping.key() not in done and (b is None or b < state.best().cycles):
            simulate(c.mapping, "cpsat")
    for cls in sorted((c for c in pool.classes if c.feasible), key=lambda c: (c.bound is None, c.bound or 0)):
        for sk in cls.members:
            if deadline is not None and time.perf_counter() > deadline:
                complete = False
                break
            model = SizingModel(sp, wl.shape, sk)
            left = None if deadline is None else deadline - time.perf_counter()
            sizings, finished = _sizings(model, 3600.0 if left is None else left)
            complete &= finished
            legal += len(sizings)
            if cls.bound is not None and cls.bound >= state.best().cycles:
                state.pruned += len(sizings)
                continue
            for values in sizings:
                m = sp.from_skeleton(sk, values, wl.shape)
                if m.key() in done:
                    continue
                bound = sp.cost("bound", m, wl.shape)
                if bound is not None and bound >= state.best().cycles:
                    state.pruned += 1
                    continue
                if deadline is not None and time.perf_counter() > deadline:
                    complete = False
                    break
                simulate(m, "exhaustive")
        if not complete:
            break
    winner, verification = verify_winner(runner, state)
    return result_of(
        runner,
        state,
        pool,
        winner,
        verification,
        simulations=sims,
        wall_s=time.perf_counter() - t0,
        guide="exhaustive",
        optimum_cycles=winner.cycles if complete else None,
        legal_mappings=legal,
        complete=complete,
    )
