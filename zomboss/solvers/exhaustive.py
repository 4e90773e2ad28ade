"""`zomboss solve --exhaustive`: branch and bound over the declared legal space, with a proof.

Every legal mapping — each skeleton clingo enumerates, times each legal sizing — is either
simulated (timing-only) or proven unable to beat the best kernel found so far by the doc's
sound `cost bound`. The incumbent starts at Candidate-0 and the reference mappings, then the
pool's best estimates, so pruning bites early. Cost classes are then visited best-first (lowest
class bound first, where CP-SAT proved the minimum of the bound over the class), and the bound
is a constraint of each skeleton's CP-SAT model (`bound < incumbent`, tightened as the
incumbent improves), so CP-SAT never enumerates a sizing that cannot win; the sizings it does
enumerate are simulated lowest bound first, and a mapping whose program was already simulated
is counted once. The run ends with a proof as soon as the lowest remaining class bound reaches
the incumbent.

The answer is a MIP solver's: `optimum_cycles` only when proven, and always the lower bound of
what is left unexplored (`lower_bound_cycles`; the target's roofline stands in for classes whose
bound is unknown) and the relative `gap` of the incumbent over it. `time_limit` is honoured in
every phase (pool, enumeration, simulation; the winner's verification is one or two more
simulations), `gap` stops once the proven gap is at most that. Every simulation goes to the
results store as it completes, so a stopped run resumes without repeating any, and reaches the
same proof state. The winner is verified exactly as in `solve`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ortools.sat.python import cp_model

from zomboss import expr as ex
from zomboss.mapping import KnobMapping, space
from zomboss.results import Store
from zomboss.solvers.guides.base import SearchState, Simulated
from zomboss.solvers.search import Programs, Runner, SolveResult, candidate_zero, result_of, verify_winner
from zomboss.solvers.space import SizingModel, build_pool, fixed_bound
from zomboss.target import Mode, Params, Target
from zomboss.workload import Workload

ENUMERATION_LIMIT = 3600.0  # wall seconds for one skeleton's enumeration when the run has no time limit


@dataclass(frozen=True)
class ExhaustiveProgress:
    """What a progress display shows: the phase, the classes done of all, the simulations,
    the incumbent, the lower bound of what is left and the elapsed time."""

    phase: str
    classes_done: int
    classes: int
    simulations: int
    incumbent: int
    lower_bound: int
    elapsed_s: float


def _sizings(model: SizingModel, time_limit: float) -> tuple[list[dict[str, int]], bool]:
    """Every legal sizing of a skeleton model (and whether CP-SAT finished enumerating)."""
    solver = model.solver(max(0.01, time_limit))  # one worker; Ctrl-C left to the command
    solver.parameters.max_deterministic_time = float("inf")
    solver.parameters.enumerate_all_solutions = True
    solver.parameters.max_time_in_seconds = max(0.01, time_limit)
    out: list[dict[str, int]] = []

    class _Collect(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self) -> None:
            vals = {k: int(self.value(v)) for k, v in model.vars.items()}
            vals.update(model.fixed)
            out.append({k.name: vals[k.name] for k in model.space.integer})

    status = solver.solve(model.model, _Collect())
    return out, status in (cp_model.OPTIMAL, cp_model.INFEASIBLE)


SCREENED_CLASSES = 0  # classes CP-SAT sizes again when the bounds need no CP-SAT (the descent seeds the incumbent)


def relative_gap(incumbent: int, lower_bound: int) -> float:
    """The incumbent's distance above a proven lower bound, as a fraction of the bound."""
    return max(0.0, incumbent / lower_bound - 1.0) if lower_bound > 0 else float("inf")


def exhaustive(
    t: Target,
    wl: Workload,
    params: Params,
    store: Store | None = None,
    time_limit: float | None = None,
    gap: float | None = None,
    progress: Callable[[ExhaustiveProgress], None] | None = None,
) -> SolveResult:
    """Branch and bound over every legal mapping of `wl` (see the module docstring), stopping
    after `time_limit` seconds or once the incumbent is proven within `gap` of the optimum;
    every simulation is written to `store` when given, `progress` is told each phase. Returns
    the SolveResult of the verified winner with the proof state (`optimum_cycles` when proven,
    `lower_bound_cycles`, `gap`, `complete`)."""
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit

    def past() -> bool:
        return deadline is not None and time.perf_counter() > deadline

    def left() -> float:
        return ENUMERATION_LIMIT if deadline is None else deadline - time.perf_counter()

    kb = t.kb(params)
    sp = space(kb, wl.op)
    runner = Runner(t, wl, params, store, "exhaustive")
    refs = t.reference_mappings(wl, params)
    c0 = refs["library"]
    default = candidate_zero(runner, sp, c0)
    if deadline is not None:
        # the winner is verified on two seeds after the search: the time limit covers that too,
        # estimated by what Candidate-0's verified run just took
        deadline -= 2 * default.wall_s
    roof = t.bound(wl, params)  # sound for every legal mapping: the floor where a class bound is unknown
    # CP-SAT sizes every class when that is how its bound is proven; a bound that reads no
    # integer knob is the class's at any sizing, and the screen's sizings seed the incumbent
    sized = SCREENED_CLASSES if fixed_bound(sp) else None
    pool = build_pool(kb, wl.op, wl.shape, k=1, near=c0, budget_s=1e9, sized=sized, deadline=deadline)
    state = SearchState(sp, dict(wl.shape), default, {}, pool.candidates())
    programs = Programs(t, wl, params)
    programs.repeated(c0)
    done: set[str] = {c0.key()}
    sims = legal = pruned_skeletons = 0
    bnd = sp.costs.get("bound")
    classes = sorted((c for c in pool.classes if c.feasible), key=lambda c: (c.bound is None, c.bound or 0, c.key))
    classes_done = 0

    def floor_of(i: int) -> int:
        """The lowest bound of classes[i:] (sorted: the i-th class's, or the roofline if unknown)."""
        if i >= len(classes):
            return state.best().cycles
        b = classes[i].bound
        return max(roof, b) if b is not None else roof

    def show(phase: str, i: int) -> None:
        if progress is not None:
            best = state.best().cycles
            progress(
                ExhaustiveProgress(
                    phase, classes_done, len(classes), sims, best, min(best, floor_of(i)), time.perf_counter() - t0
                )
            )

    def simulate(m: KnobMapping, source: str) -> None:
        nonlocal sims
        done.add(m.key())
        if programs.repeated(m):
            state.duplicate_keys.add(m.key())
            return
        cycles, _, bd, wall, cached = runner.run(m, Mode.TIMING, 0, source)
        sims += 1
        state.simulated.append(
            Simulated(
                m, cycles, bd, source, sp.cost("estimate", m, wl.shape), sp.cost("bound", m, wl.shape), wall, cached
            )
        )

    show("incumbent", 0)
    # a strong incumbent first: the other references, then each class's best estimate
    for name, m in refs.items():
        if not past() and m.key() not in done and not sp.violations(kb, m, wl.shape):
            simulate(m, name)
    for c in state.pool:
        b = c.bound
        if past():
            break
        if c.mapping.key() not in done and (b is None or b < state.best().cycles):
            simulate(c.mapping, "cpsat")
    complete = not past()
    stopped_at = 0  # the first class not fully explored
    for i, cls in enumerate(classes):
        stopped_at = i
        if past():
            complete = False
            break
        if cls.bound is not None and cls.bound >= state.best().cycles:
            pruned_skeletons += sum(len(c.members) for c in classes[i:])
            stopped_at = len(classes)
            break  # every class left has a bound at least this one's: the incumbent is optimal
        if gap is not None and relative_gap(state.best().cycles, floor_of(i)) <= gap:
            complete = False
            break
        show("classes", i)
        for sk in cls.members:
            model = SizingModel(sp, wl.shape, sk)
            if bnd is not None:  # CP-SAT enumerates only the sizings that can still win
                model.tr.require(ex.Bin("<", bnd.expr, ex.Int(state.best().cycles)))
            sizings, finished = _sizings(model, left())
            if not finished:
                complete = False
                break
            legal += len(sizings)
            mappings = [sp.from_skeleton(sk, v, wl.shape) for v in sizings]
            bounds = {m.key(): sp.cost("bound", m, wl.shape) for m in mappings}  # once per mapping
            for m in sorted(mappings, key=lambda m: (bounds[m.key()] or 0, m.key())):
                if m.key() in done:
                    continue
                bound = bounds[m.key()]
                if bound is not None and bound >= state.best().cycles:
                    state.pruned += 1
                    continue
                if past():
                    complete = False
                    break
                simulate(m, "exhaustive")
            if not complete:
                break
        if not complete:
            break
        classes_done += 1
    else:
        stopped_at = len(classes)
    show("verify", stopped_at)
    winner, verification = verify_winner(runner, state)
    lower = winner.cycles if complete else min(winner.cycles, floor_of(stopped_at))
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
        lower_bound_cycles=lower,
        gap=round(relative_gap(winner.cycles, lower), 6),
        pruned_skeletons=pruned_skeletons,
    )
