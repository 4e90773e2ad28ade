"""`zomboss solve`: verified design-space search over the legal space the KB declares.

1. Candidate-0 (the target's "library" reference mapping) is lowered, simulated with every
   rule checked and verified against NumPy first, so a verified kernel always exists.
2. clingo enumerates the skeletons, CP-SAT sizes each cost class under the doc's estimate
   and proves its bound (`candidates.build_pool`).
3. The guide proposes knob values; each proposal is checked by the KB (an illegal one is
   recorded with its rule and doc line, never simulated or counted), skipped when the doc's
   sound bound says it cannot beat the best kernel, and otherwise simulated timing-only,
   within the budget, until the guide stops or `patience` simulations bring no gain.
4. The winner is re-run functional + timing with the rule checker on two input seeds and
   verified; only verified kernels are returned (else the next best, at worst Candidate-0).
   A kernel too large to verify whole (`verify="sampled"`, or `"auto"` when its operands
   cannot be allocated) has Candidate-0 and the winner verified on a sample of their output
   blocks instead (two sample seeds for the winner), every candidate still timed only; the
   result's `verified_by` says which ("full", "sampled", or "none" for timing only).

Every simulation is written to the results store as it completes; a rerun with the same
arguments finds them there and repeats nothing (`fresh=True` starts over). The search talks
only to `zomboss.target.Target` and `zomboss.mapping`: it knows no machine.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from zomboss.errors import ZombossError
from zomboss.knowledge import KB
from zomboss.mapping import KnobMapping, MappingError, Space, space
from zomboss.results import Record, Store, speedup
from zomboss.solvers.guides.base import Guide, Proposal, Rejection, SearchState, Simulated
from zomboss.solvers.guides.make import make_guide
from zomboss.solvers.space import Pool, build_pool
from zomboss.solvers.workers import Workers
from zomboss.target import Evaluation, Mode, Params, SampledVerifier, Target, config_key
from zomboss.util import LimitError, TooLargeToVerify
from zomboss.workload import Workload

VERIFY_SEEDS = (0, 1)
VERIFY = ("auto", "full", "sampled", "none")  # how Candidate-0 and the winner are verified (`--verify`)


EXTRAPOLATION_TOLERANCE = 0.01  # timing-only (extrapolated) vs full simulation, tests/test_extrapolation.py


@dataclass
class SolveConfig:
    """The options of one guided search (`zomboss solve`'s flags; `zomboss.solve` takes them as
    keywords with the command line's defaults, e.g. verify="auto" where this record says
    "full"): the guide and its options, the budget of timing-only simulations, the seed, when to
    stop early, how the pool of candidates is sized, and how Candidate-0 and the winner are
    verified."""

    guide: str = "cost"
    budget: int = 32  # timing-only simulations of searched candidates
    seed: int = 0
    patience: int = 12  # stop after this many simulations without a gain of more than `min_gain`
    min_gain: float = 0.001
    batch: int = 4
    k: int = 1  # sizings per cost class
    # CP-SAT work for re-sizing `sized_classes` classes, in its deterministic seconds (machine-independent, so a
    # rerun proposes the same candidates; ~8 wall seconds each on the 2-core reference machine,
    # polish included), classes with the lowest screened estimate first
    pool_seconds: float = 2.5
    # cost classes sized again by CP-SAT, best screened first; the others keep the screen's
    # sizing (see `build_pool`). Zero by default: every guided result of the 69 suite instances
    # was the same with 16 classes re-sized and with none (the screen's descent and the guide's
    # refinements reach what CP-SAT's re-sizing found), and re-sizing took 5-10 s of a Gemmini
    # solve's pool phase (benchmarks/search/solve_times.md)
    sized_classes: int = 0
    guide_options: dict[str, Any] = field(default_factory=dict)
    # full: functional simulation on VERIFY_SEEDS; sampled: `samples` output blocks per seed
    # (SampledVerifier targets); none: timing only; auto: full unless the operands are too
    # large to allocate, then sampled where the target can (else timing only), saying why
    verify: str = "full"
    samples: int = 8
    # simulations run at once (`--jobs`): above 1, worker processes simulate a batch's
    # proposals, Candidate-0 (while the pool is built) and the winner's two verification seeds
    # ahead of the search, which decides exactly as with 1 (`zomboss.solvers.workers`)
    jobs: int = 1


@dataclass(frozen=True)
class SolveProgress:
    """What a progress display shows of a guided search: the phase ("candidate-0", "pool",
    "search", "verify"), the simulations of the budget, the incumbent (None before
    Candidate-0 is timed) and the elapsed time."""

    phase: str
    simulations: int
    budget: int
    incumbent: int | None
    elapsed_s: float


@dataclass
class SolveResult(Record):
    """What a guided (`solve`) or exhaustive (`exhaustive`) search returns: the winner (its
    `cycles`, `mapping`, where it came from, how it was verified) beside Candidate-0's
    `default_cycles`, what the search did (simulations, rejected proposals with the rule they
    broke, pruned candidates, its history) and, for an exhaustive run, the proof state
    (`optimum_cycles` when proven, `lower_bound_cycles`, `gap`, `complete`). `to_json()` is what
    `zomboss solve --json` prints."""

    target: str
    workload: str
    verified: bool | None  # None: timing only (verified_by "none")
    cycles: int
    default_cycles: int
    mapping: KnobMapping
    source: str  # "candidate-0" or where the winner came from
    simulations: int
    cached: int
    rejected: list[Rejection]
    pruned: int
    bound_cycles: int
    space_bound: int | None  # the doc's bound minimised over the whole legal space
    skeletons: int
    wall_s: float
    breakdown_default: Mapping[str, int]
    breakdown_best: Mapping[str, int]
    guide: str
    guide_note: str = ""
    tokens: int | None = None
    verification: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    optimum_cycles: int | None = None
    llm: dict[str, Any] | None = None  # the LLM guide's usage: calls, prompt/completion/cached/reasoning tokens
    # exhaustive runs: the legal mappings CP-SAT enumerated (those a class bound or the in-model
    # bound cut are proven unable to win and not counted), whether the whole space was simulated
    # or proven unable to win, the lowest bound of what was left unexplored and the incumbent's
    # relative gap over it (0 when complete), and the skeletons cut wholesale by their class bound
    legal_mappings: int | None = None
    complete: bool | None = None
    lower_bound_cycles: int | None = None
    gap: float | None = None
    pruned_skeletons: int | None = None
    references: dict[str, int] = field(default_factory=dict)  # timing-only cycles of the other reference mappings run
    duplicates: int = 0  # legal proposals that lowered to the program of one already simulated
    verified_by: str = "full"  # how Candidate-0 and the winner were verified: full | sampled | none
    verify_reason: str = ""  # why not full, when `auto` chose

    OPTIONAL: ClassVar[tuple[str, ...]] = (
        "verify_reason",
        "guide_note",
        "tokens",
        "llm",
        "optimum_cycles",
        "legal_mappings",
        "complete",
        "lower_bound_cycles",
        "gap",
        "pruned_skeletons",
    )

    @property
    def speedup(self) -> float:
        return speedup(self.default_cycles, self.cycles) or 0.0

    def json_fields(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "workload": self.workload,
            "verified": self.verified,
            "verified_by": self.verified_by,
            "verify_reason": self.verify_reason,
            "cycles": self.cycles,
            "default_cycles": self.default_cycles,
            "speedup": round(self.speedup, 4),
            "mapping": self.mapping.to_json(),
            "candidate": self.source,
            "is_default": self.source == "candidate-0",
            "simulations": self.simulations,
            "cached_simulations": self.cached,
            "rejected": [
                {"source": r.proposal.source, "values": dict(r.proposal.values), "violations": r.violations}
                for r in self.rejected
            ],
            "pruned": self.pruned,
            "wall_s": round(self.wall_s, 3),
            "bound_cycles": self.bound_cycles,
            "space_bound_cycles": self.space_bound,
            "skeletons": self.skeletons,
            "guide": self.guide,
            "breakdown_default": dict(self.breakdown_default),
            "breakdown": dict(self.breakdown_best),
            "verification": self.verification,
            "history": self.history,
            "references": dict(self.references),
            "duplicate_programs": self.duplicates,
            "guide_note": self.guide_note,
            "tokens": self.tokens,
            "llm": self.llm,
            "optimum_cycles": self.optimum_cycles,
            "legal_mappings": self.legal_mappings,
            "complete": self.complete,
            "lower_bound_cycles": self.lower_bound_cycles,
            "gap": self.gap,
            "pruned_skeletons": self.pruned_skeletons,
        }


# A search's timing simulation shorter than this (its last one, or Candidate-0's verified run
# before any) runs in the solving process rather than a worker: handing it over (pickling, waking
# a worker that shares 2 cores with the search) costs more than it saves. Measured on VTA's
# dense_128, whose simulations take about 3 ms: 0.16 s of search alone, 0.35 s with 2 workers.
OFFLOAD_S = 0.02


class Runner:
    """Simulations of one instance through the results store (every one committed as it ends),
    and how this search verifies (`verify`: one of VERIFY; `candidate_zero` settles `auto`)."""

    def __init__(
        self,
        t: Target,
        wl: Workload,
        params: Params,
        store: Store | None,
        guide: str,
        verify: str = "full",
        samples: int = 8,
    ) -> None:
        if verify not in VERIFY:
            raise ZombossError(f"--verify {verify!r}: expected one of {', '.join(VERIFY)}")
        if verify == "sampled" and not isinstance(t, SampledVerifier):
            raise ZombossError(f"--verify sampled: the {t.name} target verifies whole kernels only (use full or none)")
        if samples < 1:
            raise ZombossError(f"--samples {samples}: expected at least 1")
        self.t, self.wl, self.params, self.store, self.guide = t, wl, dict(params), store, guide
        self.config = config_key(t.name, params)
        self.cached = 0
        self.verify, self.samples = verify, samples
        self.verify_reason = ""
        self.checks: list[dict[str, Any]] = []  # Candidate-0's sampled check, first in the verification log
        self.workers: Workers | None = None  # simulations run ahead (`prefetch`), taken by `run`
        self.walls: dict[Mode, float] = {}  # the last simulation's wall seconds, per mode

    def prefetch(self, m: KnobMapping, mode: Mode, seed: int = 0) -> None:
        """Have a worker start the simulation `run` will be asked for (nothing when there are
        no workers, the store holds it, or simulations of this mode are too short to gain from
        a worker: see OFFLOAD_S). Where a simulation runs never changes what the search does."""
        if self.workers is None or self.workers.pool is None:
            return
        if mode is not Mode.VERIFIED:
            took = self.walls.get(mode, self.walls.get(Mode.VERIFIED))  # before any: Candidate-0's verified run
            if took is not None and took < OFFLOAD_S:
                return
        if self.store is not None:
            tr = self.store.trial(self.t.name, self.wl.id, self.config, m.key(), mode.value, seed)
            if tr is not None and tr.cycles is not None:
                return
        self.workers.submit(m, mode, seed)

    def run(
        self, m: KnobMapping, mode: Mode, seed: int = 0, source: str = ""
    ) -> tuple[int, bool | None, dict[str, int], float, bool]:
        """(cycles, verified, breakdown, wall_s, from_store)."""
        if self.store is not None:
            tr = self.store.trial(self.t.name, self.wl.id, self.config, m.key(), mode.value, seed)
            if tr is not None and tr.cycles is not None:
                self.cached += 1
                return tr.cycles, tr.verified, dict(tr.payload.get("breakdown", {})), tr.wall_s or 0.0, True
        t0 = time.perf_counter()
        ahead = self.workers.take(m, mode, seed) if self.workers is not None else None
        ev: Evaluation = ahead or self.t.evaluate(self.t.instance(self.wl, self.params, seed), m, mode)
        wall = ev.wall_s if ahead is not None else time.perf_counter() - t0
        self.walls[mode] = ev.wall_s
        self._keep(ev, seed, wall, source or self.guide)
        return ev.cycles, ev.verified, dict(ev.breakdown), wall, False

    def _keep(self, ev: Evaluation, seed: int, wall: float, source: str) -> None:
        """Commit one simulation to the store (if any)."""
        if self.store is not None:
            self.store.put_trial(
                self.t.name,
                self.wl.id,
                self.config,
                ev.mapping.key(),
                ev.mode.value,
                seed,
                cycles=ev.cycles,
                verified=ev.verified,
                guide=source,
                wall_s=wall,
                tokens=None,
                payload={"mapping": ev.mapping.to_json(), "breakdown": dict(ev.breakdown), "report": dict(ev.report)},
            )

    def keep_ahead(self) -> None:
        """Commit the simulations workers finished but the search never took (nothing computed
        is lost: a rerun finds them in the store)."""
        if self.workers is not None:
            for ev in self.workers.finished():
                self._keep(ev, ev.seed, ev.wall_s, "ahead")

    def sampled(self, m: KnobMapping, seed: int) -> tuple[bool, dict[str, Any]]:
        """`samples` output blocks of `m` (chosen by `seed`, on inputs drawn from it) verified
        functionally: (all equal, what was checked). Stored as a trial of mode `sampled:N`, so
        it is never taken for a whole-kernel verification (mode `verified`)."""
        assert isinstance(self.t, SampledVerifier)
        mode = f"sampled:{self.samples}"
        if self.store is not None:
            tr = self.store.trial(self.t.name, self.wl.id, self.config, m.key(), mode, seed)
            if tr is not None and tr.verified is not None:
                self.cached += 1
                return tr.verified, {**tr.payload.get("sampled", {}), "seed": seed}
        t0 = time.perf_counter()
        ok, report = self.t.verify_sampled(self.t.instance(self.wl, self.params, 0), m, self.samples, seed)
        wall = time.perf_counter() - t0
        if self.store is not None:
            self.store.put_trial(
                self.t.name,
                self.wl.id,
                self.config,
                m.key(),
                mode,
                seed,
                cycles=None,
                verified=ok,
                guide="verify",
                wall_s=wall,
                tokens=None,
                payload={"mapping": m.to_json(), "sampled": dict(report)},
            )
        return ok, {**report, "seed": seed}


class Programs:
    """The programs this search has simulated, by content hash. Two legal mappings may lower to
    one program (a block loop order when every dimension has a single block, say): the second
    is the same kernel, so it is neither simulated nor counted against the budget."""

    def __init__(self, t: Target, wl: Workload, params: Params) -> None:
        self.t, self.wl, self.params = t, wl, dict(params)
        self.seen: set[int] = set()

    def repeated(self, m: KnobMapping) -> bool:
        """Whether `m`'s program was seen before (and remember it)."""
        program = self.t.lower(self.t.instance(self.wl, self.params, 0), m)
        h = hash(tuple(program.instrs))
        if h in self.seen:
            return True
        self.seen.add(h)
        return False


def check_proposal(
    kb: KB, sp: Space, shape: Mapping[str, int], state: SearchState, p: Proposal
) -> KnobMapping | Rejection:
    """A legal canonical mapping, or the rejection with every violated rule and its doc line."""
    values = dict(p.values)
    if p.base is not None:
        base = next((s.mapping for s in [state.default, *state.simulated] if s.mapping.key() == p.base), None)
        if base is None:
            return Rejection(
                p, [{"rule": "guide.base", "doc": "", "message": f"no simulated candidate {p.base!r}", "values": {}}]
            )
        values = {**base.as_dict(), **values}
    try:
        m = sp.mapping(values, shape, "proposal")
    except MappingError as e:
        return Rejection(p, [{"rule": "mapping.domain", "doc": str(sp.loc), "message": str(e), "values": {}}])
    found = sp.violations(kb, m, shape)
    if found:
        return Rejection(
            p, [{"rule": v.rule, "doc": v.doc_loc, "message": v.message, "values": dict(v.values)} for v in found]
        )
    return m


def solve(
    t: Target,
    wl: Workload,
    params: Params,
    cfg: SolveConfig | None = None,
    store: Store | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    guide: Guide | None = None,
    status: Callable[[SolveProgress], None] | None = None,
) -> SolveResult:
    """The guided search of one instance (see the module docstring) under `cfg` (default
    SolveConfig()), every simulation written to `store` when given; `progress` is told each
    simulation (the bench's counter), `status` each phase and simulation (a display), `guide`
    replaces the one `cfg.guide` names (tests). Returns the SolveResult of the verified winner
    (Candidate-0 at worst); raises ZombossError for an unknown guide or a Candidate-0 that does
    not verify, and the LLM client's errors for an unusable endpoint."""
    cfg = cfg or SolveConfig()
    t_start = time.perf_counter()

    def show(phase: str, sims: int, best: int | None) -> None:
        if status is not None:
            status(SolveProgress(phase, sims, cfg.budget, best, time.perf_counter() - t_start))

    kb = t.kb(params)
    sp = space(kb, wl.op)
    guide = guide or make_guide(cfg.guide, cfg.seed, **cfg.guide_options)
    runner = Runner(t, wl, params, store, guide.name, cfg.verify, cfg.samples)
    refs = t.reference_mappings(wl, params)
    c0 = refs["library"]
    if cfg.jobs > 1:  # made before the workers fork, so that none of them makes them again
        for seed in VERIFY_SEEDS:
            t.instance(wl, params, seed)
        t.lower(t.instance(wl, params, 0), c0)
    runner.workers = Workers(t, wl, params, cfg.jobs)
    try:
        return _search(t, wl, params, cfg, kb, sp, guide, runner, c0, refs, store, show, progress, t_start)
    finally:
        runner.keep_ahead()
        runner.workers.close()


def _search(
    t: Target,
    wl: Workload,
    params: Params,
    cfg: SolveConfig,
    kb: KB,
    sp: Space,
    guide: Guide,
    runner: Runner,
    c0: KnobMapping,
    refs: Mapping[str, KnobMapping],
    store: Store | None,
    show: Callable[[str, int, int | None], None],
    progress: Callable[[str, int, int], None] | None,
    t_start: float,
) -> SolveResult:
    """`solve` once its runner (and workers) are set up."""
    show("candidate-0", 0, None)

    def build() -> Pool:
        return build_pool(
            kb,
            wl.op,
            wl.shape,
            k=cfg.k,
            near=c0,
            budget_s=cfg.pool_seconds,
            sized=cfg.sized_classes,
            fill=cfg.budget,
        )

    if cfg.jobs > 1:  # Candidate-0 simulated by a worker while the pool is built
        runner.prefetch(c0, Mode.VERIFIED if runner.verify in ("auto", "full") else Mode.TIMING, 0)
        show("pool", 0, None)
        pool = build()
        default = candidate_zero(runner, sp, c0)
    else:
        default = candidate_zero(runner, sp, c0)
        show("pool", 0, default.cycles)
        pool = build()
    others = {n: m for n, m in refs.items() if n != "library"}
    state = SearchState(sp, dict(wl.shape), default, others, pool.candidates(), kb=kb, workload=wl.id)
    programs = Programs(t, wl, params)
    programs.repeated(c0)
    sims = since_gain = 0
    history: list[dict[str, Any]] = []
    while sims < cfg.budget and since_gain < cfg.patience:
        props = guide.propose(state, min(cfg.batch, cfg.budget - sims))
        if not props:
            break
        # each proposal checked once: the batch's checks depend only on the state it was proposed from
        checked = [check_proposal(kb, sp, wl.shape, state, p) for p in props]
        if cfg.jobs > 1:
            ahead(runner, sp, wl.shape, state, checked)
        for p, got in zip(props, checked, strict=True):
            if sims >= cfg.budget:
                break
            if isinstance(got, Rejection):
                state.rejected.append(got)
                with contextlib.suppress(MappingError):  # an ill-formed proposal has no key to remember
                    state.rejected_keys.add(sp.mapping(p.values, wl.shape).key())
                continue
            if got.key() in state.seen():
                continue
            bound = sp.cost("bound", got, wl.shape)
            best = state.best()
            if bound is not None and bound >= best.cycles:
                state.pruned += 1
                state.pruned_keys.add(got.key())
                continue
            try:
                if programs.repeated(got):
                    state.duplicate_keys.add(got.key())
                    continue
            except LimitError as e:  # a program too large to hold (a stream of a huge shape): not a kernel to time
                state.rejected.append(
                    Rejection(p, [{"rule": "limit.program", "doc": "", "message": str(e), "values": {}}])
                )
                state.rejected_keys.add(got.key())
                continue
            cycles, _, bd, wall, cached = runner.run(got, Mode.TIMING, 0, p.source or guide.name)
            sims += 1
            gain = cycles < best.cycles * (1 - cfg.min_gain)
            since_gain = 0 if gain else since_gain + 1
            state.simulated.append(
                Simulated(
                    got, cycles, bd, p.source or guide.name, sp.cost("estimate", got, wl.shape), bound, wall, cached
                )
            )
            history.append({"n": sims, "source": p.source or guide.name, "cycles": cycles, "best": state.best().cycles})
            if progress is not None:
                progress(f"{t.name}:{wl.id}", sims, cfg.budget)
            show("search", sims, state.best().cycles)
    show("verify", sims, state.best().cycles)
    winner, verification = verify_winner(runner, state)
    tokens = getattr(guide, "tokens", None)
    if store is not None and hasattr(guide, "store_calls"):
        guide.store_calls(store, t.name, wl.id, runner.config)  # one row per LLM call, with its usage
    usage = guide.usage() if hasattr(guide, "usage") else None
    return result_of(
        runner,
        state,
        pool,
        winner,
        verification,
        simulations=sims,
        wall_s=time.perf_counter() - t_start,
        guide=guide.name,
        guide_note="; ".join(n for n in (str(getattr(guide, "note", "") or ""), *pool.notes) if n),
        tokens=tokens if isinstance(tokens, int) else None,
        history=history,
        llm=usage if isinstance(usage, dict) else None,
    )


def ahead(
    runner: Runner, sp: Space, shape: Mapping[str, int], state: SearchState, checked: list[KnobMapping | Rejection]
) -> None:
    """Start simulating the batch's proposals the search will simulate unless a kernel found
    earlier in the batch prunes them: legal (`checked`: each proposal's `check_proposal`), new,
    and not pruned by the incumbent as it stands."""
    best = state.best().cycles
    seen = state.seen()
    for got in checked:
        if isinstance(got, Rejection) or got.key() in seen:
            continue
        bound = sp.cost("bound", got, shape)
        if bound is None or bound < best:
            runner.prefetch(got, Mode.TIMING, 0)


def candidate_zero(runner: Runner, sp: Space, c0: KnobMapping) -> Simulated:
    """Candidate-0, simulated functional+timing and verified first, so that every search has a
    verified kernel to return; a Candidate-0 that does not verify stops the search. Under
    `sampled` or `none` (or `auto` on operands too large to allocate, which settles
    `runner.verify` here) it is timed only, with a sample of its output blocks verified."""
    wl = runner.wl
    if runner.verify in ("auto", "full"):
        try:
            cycles, ok, bd, wall, _ = runner.run(c0, Mode.VERIFIED, 0, "candidate-0")
        except TooLargeToVerify as e:
            if runner.verify == "full":
                raise
            runner.verify = "sampled" if isinstance(runner.t, SampledVerifier) else "none"
            runner.verify_reason = f"{'sampled' if runner.verify == 'sampled' else 'timing only'}: {e}"
        else:
            runner.verify = "full"
    if runner.verify != "full":
        cycles, _, bd, wall, _ = runner.run(c0, Mode.TIMING, 0, "candidate-0")
        ok = True
        if runner.verify == "sampled":
            ok, report = runner.sampled(c0, VERIFY_SEEDS[0])
            runner.checks.append(
                {"mapping": c0.key(), "candidate": "candidate-0", "seeds": [{**report, "verified": ok}]}
            )
    if not ok:
        how = " (sampled output blocks)" if runner.verify == "sampled" else ""
        raise ZombossError(f"{runner.t.name}:{wl.id}: Candidate-0 does not verify{how}; refusing to search")
    return Simulated(
        c0, cycles, bd, "candidate-0", sp.cost("estimate", c0, wl.shape), sp.cost("bound", c0, wl.shape), wall
    )


def result_of(
    runner: Runner,
    state: SearchState,
    pool: Pool,
    winner: Simulated,
    verification: list[dict[str, Any]],
    *,
    simulations: int,
    wall_s: float,
    guide: str,
    **extra: Any,
) -> SolveResult:
    """The SolveResult of a finished search (guided or exhaustive)."""
    return SolveResult(
        target=runner.t.name,
        workload=runner.wl.id,
        verified=None if runner.verify == "none" else True,
        verified_by=runner.verify,
        verify_reason=runner.verify_reason,
        cycles=winner.cycles,
        default_cycles=state.default.cycles,
        mapping=winner.mapping,
        source=winner.source,
        simulations=simulations,
        cached=runner.cached,
        rejected=state.rejected,
        pruned=state.pruned,
        bound_cycles=runner.t.bound(runner.wl, runner.params),
        space_bound=pool.lowest_bound(),
        skeletons=pool.skeleton_count,
        wall_s=wall_s,
        breakdown_default=state.default.breakdown,
        breakdown_best=winner.breakdown,
        guide=guide,
        verification=verification,
        references=simulated_references(state),
        duplicates=len(state.duplicate_keys),
        **extra,
    )


def simulated_references(state: SearchState) -> dict[str, int]:
    """Cycles of the target's other reference mappings (Gemmini's Exo-style schedule) that the run
    simulated, so a report can say whether the winner is at least as fast as each of them."""
    cycles = {s.mapping.key(): s.cycles for s in state.simulated}
    return {n: cycles[m.key()] for n, m in state.references.items() if m.key() in cycles}


def verify_winner(runner: Runner, state: SearchState) -> tuple[Simulated, list[dict[str, Any]]]:
    """The fastest candidate that verifies on every seed (Candidate-0 when none beats it); under
    `sampled`, on a sample of its output blocks per seed (its cycles stay the timing-only run's,
    as Candidate-0's do); under `none`, the fastest, unverified."""
    log: list[dict[str, Any]] = list(runner.checks)
    ranked = sorted(state.simulated, key=lambda s: (s.cycles, s.mapping.key()))
    for cand in ranked:
        if cand.cycles >= state.default.cycles:
            break
        if runner.verify == "none":
            return cand, log
        if runner.verify == "sampled":
            try:
                checks = [runner.sampled(cand.mapping, seed) for seed in VERIFY_SEEDS]
            except ZombossError as e:  # a kernel the target cannot slice (Gemmini: an unrolled stream)
                log.append({"mapping": cand.mapping.key(), "seeds": [], "error": str(e)})
                continue
            log.append({"mapping": cand.mapping.key(), "seeds": [{**r, "verified": ok} for ok, r in checks]})
            if all(ok for ok, _ in checks):
                return cand, log
            continue
        results = []
        bd: Mapping[str, int] = {}
        for seed in VERIFY_SEEDS:
            runner.prefetch(cand.mapping, Mode.VERIFIED, seed)
        for seed in VERIFY_SEEDS:
            cycles, ok, bd, _, _ = runner.run(cand.mapping, Mode.VERIFIED, seed, "verify")
            results.append({"seed": seed, "verified": bool(ok), "cycles": cycles})
        log.append({"mapping": cand.mapping.key(), "seeds": results})
        full = {r["cycles"] for r in results}
        # the timing-only ranking may have extrapolated steady loops (within EXTRAPOLATION_TOLERANCE
        # of full simulation); the result carries the verified run's full-simulation cycles
        if not all(r["verified"] for r in results) or len(full) != 1:
            continue
        cycles = full.pop()
        if abs(cycles - cand.cycles) <= EXTRAPOLATION_TOLERANCE * cycles and cycles < state.default.cycles:
            return replace(cand, cycles=cycles, breakdown=dict(bd)), log
    return state.default, log
