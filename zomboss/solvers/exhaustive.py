"""`zomboss solve --exhaustive`: branch and bound over the declared legal space, with a proof.

Every legal mapping — each skeleton clingo enumerates, times each legal sizing — is either
simulated (timing-only) or proven unable to beat the best kernel found so far by the doc's
sound `cost bound`. The incumbent starts at Candidate-0 and the reference mappings, then the
pool's best estimates, so pruning bites early. Cost classes are then visited best-first (lowest
class bound first, where CP-SAT proved the minimum of the bound over the class; a pool of
thousands of classes proves each class's bound when it reaches it, `EAGER_CLASSES`), and the bound
is a constraint of each skeleton's CP-SAT model (`bound < incumbent`, tightened as the
incumbent improves), so CP-SAT never enumerates a sizing that cannot win; the sizings it does
enumerate are simulated lowest bound first, and a mapping whose program was already simulated
is counted once (told without lowering it when the target's `program_identity` equals one
already lowered: most of a linear's sizings repeat a few programs, and lowering each took
far longer than the few simulations). The run ends with a proof as soon as the lowest
remaining class bound reaches the incumbent.

The answer is a MIP solver's: `optimum_cycles` only when proven, and always the lower bound of
what is left unexplored (`lower_bound_cycles`; the target's roofline stands in for classes whose
bound is unknown) and the relative `gap` of the incumbent over it. `time_limit` is honoured in
every phase (pool, enumeration, simulation; the winner's verification is one or two more
simulations), `gap` stops once the proven gap is at most that. Every simulation goes to the
results store as it completes, so a stopped run resumes without repeating any, and reaches the
same proof state. The winner is verified exactly as in `solve`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

from ortools.sat.python import cp_model

from zomboss import expr as ex
from zomboss.knowledge import KB
from zomboss.mapping import KnobMapping, MappingError, Space, space
from zomboss.results import Store
from zomboss.solvers.guides.base import SearchState, Simulated
from zomboss.solvers.search import Programs, Runner, SolveResult, candidate_zero, result_of, verify_winner
from zomboss.solvers.space import CostClass, SizingModel, build_pool, fixed_bound
from zomboss.target import Mode, Params, Target
from zomboss.util import warn_once
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


EAGER_CLASSES = 500
"""A pool of at most this many cost classes has every class's bound proven by CP-SAT before the
search, so classes are visited lowest bound first and the run stops once the lowest bound left
reaches the incumbent. A larger pool (a Gemmini matmul has about 2,700 classes, whose bounds
take minutes) gets each class's bound when the search reaches it, visiting classes best
screened estimate first: a time-limited run simulates from the start instead of spending its
limit on bounds, and what it leaves unexplored is bounded by the target's roofline."""

CLASS_BOUND_LIMIT = 0.3  # CP-SAT's deterministic seconds to prove one class's bound


def _estimate(c: CostClass) -> float:
    """The screened estimate of a class's offered sizing (infinite when unknown)."""
    est = c.offered[0].estimate if c.offered else None
    return float("inf") if est is None else float(est)


def _prove_bound(sp: Space, shape: Mapping[str, int], c: CostClass, bound: ex.Expr | None, left: float) -> None:
    """Set `c.bound` to CP-SAT's proven minimum of the doc's bound over the class's legal sizings
    (left None when no bound is proven in CLASS_BOUND_LIMIT deterministic seconds, or `left`
    wall seconds); a class with no legal sizing is marked infeasible."""
    if bound is None or left <= 0:
        return
    model = SizingModel(sp, shape, c.members[0])
    model.model.minimize(model.term(bound))
    solver = model.solver(CLASS_BOUND_LIMIT)
    solver.parameters.max_time_in_seconds = min(solver.parameters.max_time_in_seconds, max(0.01, left))
    status = solver.solve(model.model)
    if status == cp_model.INFEASIBLE:
        c.feasible = False
    elif status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        c.bound = int(math.floor(solver.best_objective_bound))


def stored_winner(store: Store | None, target: str, config: str, sp: Space, kb: KB, wl: Workload) -> KnobMapping | None:
    """The verified winner the store holds for this instance and config (a guided search's, or
    an earlier exhaustive run's), if it is a legal mapping of today's space: a row is data, so a
    mapping that no longer parses or that the KB rejects is skipped with a warning."""
    row = None if store is None else store.winner(target, wl.id, config)
    if row is None:
        return None
    try:
        m = sp.from_json(row.payload["mapping"], wl.shape, f"the stored {row.kind} winner")
    except MappingError as e:
        warn_once(f"winner:{target}:{wl.id}", f"{e}; not used as the exhaustive search's first incumbent")
        return None
    found = sp.violations(kb, m, wl.shape)
    if found:
        warn_once(
            f"winner:{target}:{wl.id}",
            f"the stored {row.kind} winner breaks {found[0].rule}; not used as the exhaustive search's first incumbent",
        )
        return None
    return m


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
    # the screen sizes every class (its sizings seed the incumbent); a bound that reads no
    # integer knob is the class's at any sizing, others are proven by CP-SAT below
    pool = build_pool(kb, wl.op, wl.shape, k=1, near=c0, budget_s=1e9, sized=0, deadline=deadline)
    state = SearchState(sp, dict(wl.shape), default, {}, pool.candidates())
    programs = Programs(t, wl, params)
    programs.repeated(c0)
    done: set[str] = {c0.key()}
    sims = legal = pruned_skeletons = 0
    bnd = sp.costs.get("bound")
    feasible = [c for c in pool.classes if c.feasible]
    lazy = bnd is not None and not fixed_bound(sp) and len(feasible) > EAGER_CLASSES
    if bnd is not None and not fixed_bound(sp) and not lazy:
        for each in feasible:
            if past():
                break
            _prove_bound(sp, wl.shape, each, bnd.expr, left())
        feasible = [c for c in feasible if c.feasible]  # CP-SAT may find a class without a legal sizing
    if lazy:  # best screened estimate first; bounds when reached
        classes = sorted(feasible, key=lambda c: (_estimate(c), c.key))
    else:
        classes = sorted(feasible, key=lambda c: (c.bound is None, c.bound or 0, c.key))
    classes_done = 0

    def floor_of(i: int) -> int:
        """The lowest bound of classes[i:]: sorted by bound, the i-th class's (the roofline if
        unknown); visited lazily, the roofline while any class is left (their bounds unknown)."""
        if i >= len(classes):
            return state.best().cycles
        b = classes[i].bound
        return max(roof, b) if b is not None and not lazy else roof

    def show(phase: str, i: int) -> None:
        if progress is not None:
            best = state.best().cycles
            progress(
                ExhaustiveProgress(
                    phase, classes_done, len(classes), sims, best, min(best, floor_of(i)), time.perf_counter() - t0
                )
            )

    inst = t.instance(wl, params, 0)
    identities: set[Hashable] = set()  # the target's program identities already lowered

    def simulate(m: KnobMapping, source: str) -> None:
        nonlocal sims
        done.add(m.key())
        ident = t.program_identity(inst, m)
        if ident is not None and ident in identities:  # the same program as one lowered before
            state.duplicate_keys.add(m.key())
            return
        if ident is not None:
            identities.add(ident)
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
    # a strong incumbent first: the store's verified winner (a guided search's, typically), the
    # other references, then each class's best estimate
    seed = stored_winner(store, t.name, runner.config, sp, kb, wl)
    if seed is not None and not past() and seed.key() not in done:
        simulate(seed, "stored winner")
    for name, m in refs.items():
        if not past() and m.key() not in done and not sp.violations(kb, m, wl.shape):
            simulate(m, name)
    for cand in state.pool:
        b = cand.bound  # the mapping's own
        if past():
            break
        if cand.mapping.key() not in done and (b is None or b < state.best().cycles):
            simulate(cand.mapping, "cpsat")
    complete = not past()
    stopped_at = 0  # the first class not fully explored
    for i, cls in enumerate(classes):
        stopped_at = i
        if past():
            complete = False
            break
        if lazy and cls.bound is None:
            _prove_bound(sp, wl.shape, cls, bnd.expr if bnd is not None else None, left())
            if not cls.feasible:  # no legal sizing at all
                classes_done += 1
                continue
        if lazy and cls.bound is not None and cls.bound >= state.best().cycles:
            pruned_skeletons += len(cls.members)  # this class cannot win; the next may
            classes_done += 1
            continue
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
            sizings, finished = model.every_sizing(left())
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
