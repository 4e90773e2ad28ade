"""Guides: what to simulate next. A guide sees the search state (the mapping space, the
candidate pool with the doc's estimates and bounds, the simulations so far with their cycle
breakdowns, the rejected proposals with their diagnostics) and answers with proposals —
knob values, or knob edits of a simulated candidate. It never emits instructions, and it is
never trusted: the search checks every proposal against the KB, and an illegal one comes back
in `state.rejected` with the violated rule and its doc line, uncounted and unsimulated.

* `cost` (default): Candidate-0's named siblings, then the pool in the order of the doc's
  cost estimate, then single-knob refinements of the best kernel so far.
* `surrogate`: a ridge regression of log-cycles on knob features, learned online from this
  run's simulations (NumPy), scoring the pool and the refinements of the best kernels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from zomboss.errors import ZombossError
from zomboss.mapping import KnobMapping, Space, iter_knob_edits
from zomboss.solvers.space import Candidate, distance


@dataclass(frozen=True)
class Proposal:
    """Knob values (all of them, or only the changed ones when `base` names a simulated
    candidate's `Mapping.key()`), as a guide suggests them."""

    values: Mapping[str, object]
    base: str | None = None
    source: str = ""
    note: str = ""


@dataclass
class Simulated:
    mapping: KnobMapping
    cycles: int
    breakdown: Mapping[str, int]
    source: str
    estimate: int | None
    bound: int | None
    wall_s: float
    cached: bool = False


@dataclass
class Rejection:
    proposal: Proposal
    violations: list[dict[str, Any]]  # rule, doc (file:line), message, values


@dataclass
class SearchState:
    space: Space
    shape: Mapping[str, int]
    default: Simulated
    references: dict[str, KnobMapping]
    pool: list[Candidate]
    simulated: list[Simulated] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    pruned: int = 0
    kb: Any = None  # the KB, so that guides may ask it before proposing (the search asks again)
    workload: str = ""  # the suite id (or inline spec) being searched
    rejected_keys: set[str] = field(default_factory=set)
    pruned_keys: set[str] = field(default_factory=set)
    duplicate_keys: set[str] = field(default_factory=set)  # legal, but the program of one already simulated

    def legal(self, m: KnobMapping) -> bool:
        """The KB's verdict (guides may filter with it; the search re-checks every proposal)."""
        return self.kb is None or not self.space.violations(self.kb, m, self.shape)

    def best(self) -> Simulated:
        return min([self.default, *self.simulated], key=lambda s: (s.cycles, s.mapping.key()))

    def seen(self) -> set[str]:
        return {self.default.mapping.key(), *(s.mapping.key() for s in self.simulated), *self.duplicate_keys}

    def estimate(self, m: KnobMapping) -> int | None:
        return self.space.cost("estimate", m, self.shape)


class Guide(Protocol):
    name: str

    def propose(self, state: SearchState, n: int) -> list[Proposal]:
        """Up to `n` proposals; an empty list ends the search."""
        ...


def refinements(state: SearchState, base: KnobMapping) -> list[KnobMapping]:
    """Single-knob edits of `base` that stay in the knobs' domains and change the kernel,
    not yet simulated (legality is the search's business, not the guide's)."""
    seen = state.seen() | state.rejected_keys | state.pruned_keys
    out = []
    for name, value in iter_knob_edits(state.space, base, state.shape):
        m = state.space.mapping({**base.as_dict(), name: value}, state.shape)
        if m.key() not in seen:
            out.append(m)
    return out


STALE_AFTER = 3  # edits of a kernel, none faster, before the climb restarts elsewhere


class CostGuide:
    """The doc's cost estimate decides: references first, then the pool alternating with
    single-knob refinements of the best kernel so far (best estimate first), so the search both
    samples the space and climbs from the best point it has. The pool is taken in two orders in
    turn, best estimate first and nearest Candidate-0 first (then best estimate): an estimate
    ranks kernels of one family better than it compares families."""

    name = "cost"

    def __init__(self) -> None:
        self._pool_pos = 0
        self._refs_done = False
        self._picks = 0
        self._orders: list[list[Candidate]] = []
        self._pos = [0, 0]
        self._turn = 0
        self._tries: dict[str, int] = {}  # refinements proposed from each kernel

    def propose(self, state: SearchState, n: int) -> list[Proposal]:
        out: list[Proposal] = []
        seen = state.seen()
        if not self._refs_done:
            self._refs_done = True
            for name, m in state.references.items():
                if m.key() not in seen:
                    out.append(Proposal(m.as_dict(), source=name))
                    seen.add(m.key())
        while len(out) < n:
            self._picks += 1
            if self._picks % 2 == 0 or self._pool_pos >= len(state.pool):
                ref = self._refinement(state, seen)
                if ref is not None:
                    out.append(Proposal(ref.as_dict(), source="refine", note="edit of the best kernel so far"))
                    seen.add(ref.key())
                    continue
                if self._pool_pos >= len(state.pool):
                    break
            c = self._next_from_pool(state, seen)
            if c is not None:
                out.append(Proposal(c.mapping.as_dict(), source="cpsat"))
                seen.add(c.mapping.key())
        return out[:n]

    def _next_from_pool(self, state: SearchState, seen: set[str]) -> Candidate | None:
        """The next unseen pool candidate, from the two orders in turn (None: pool exhausted)."""
        if not self._orders:
            home = state.default.mapping.as_dict()
            near = sorted(
                state.pool, key=lambda c: (distance(c.mapping.as_dict(), home), c.estimate or 0, c.mapping.key())
            )
            self._orders = [list(state.pool), near]
        for _ in range(2):
            order, k = self._orders[self._turn], self._turn
            self._turn = 1 - self._turn
            while self._pos[k] < len(order):
                c = order[self._pos[k]]
                self._pos[k] += 1
                if c.mapping.key() not in seen:
                    self._pool_pos += 1
                    return c
        self._pool_pos = len(state.pool)
        return None

    def _refinement(self, state: SearchState, taken: set[str]) -> KnobMapping | None:
        """The best-estimate legal edit of the fastest kernel that is still worth climbing from:
        a kernel stops being one after STALE_AFTER edits of it (none of which beat it, or the
        best would have moved), and so does every kernel one edit away from it, so the climb
        restarts from a different kernel (another family, often) rather than circling a local
        optimum."""
        stale = [
            s.mapping.as_dict()
            for s in [state.default, *state.simulated]
            if self._tries.get(s.mapping.key(), 0) >= STALE_AFTER
        ]
        for base in sorted([state.default, *state.simulated], key=lambda s: (s.cycles, s.mapping.key())):
            here = base.mapping.as_dict()
            if self._tries.get(base.mapping.key(), 0) >= STALE_AFTER or any(distance(here, x) < 2 for x in stale):
                continue
            cands = [m for m in refinements(state, base.mapping) if m.key() not in taken and state.legal(m)]
            if cands:
                self._tries[base.mapping.key()] = self._tries.get(base.mapping.key(), 0) + 1
                return min(cands, key=lambda m: (state.estimate(m) or 0, m.key()))
        return None


class SurrogateGuide:
    """Ridge regression on knob features, refitted after every batch; proposes the lowest
    predicted cycles among the pool and the refinements of the three best kernels."""

    name = "surrogate"

    def __init__(self, seed: int = 0, warmup: int = 4, ridge: float = 1.0) -> None:
        self.rng = np.random.default_rng(seed)
        self.warmup = warmup
        self.ridge = ridge
        self._cost = CostGuide()

    def features(self, sp: Space, m: KnobMapping, estimate: int | None) -> np.ndarray:
        row: list[float] = [1.0]
        for k in sp.knobs:
            v = m[k.name]
            if k.values:
                row += [1.0 if v == x else 0.0 for x in k.values[1:]]
            else:
                assert isinstance(v, int)
                row.append(math.log2(v + 1))
        row.append(math.log(estimate + 1) if estimate else 0.0)
        return np.array(row)

    def propose(self, state: SearchState, n: int) -> list[Proposal]:
        done = [state.default, *state.simulated]
        if len(done) < self.warmup:
            return self._cost.propose(state, n)
        sp = state.space
        x = np.array([self.features(sp, s.mapping, s.estimate) for s in done])
        y = np.array([math.log(s.cycles) for s in done])
        w = np.linalg.solve(x.T @ x + self.ridge * np.eye(x.shape[1]), x.T @ y)
        seen = state.seen()
        cands: dict[str, KnobMapping] = {}
        for c in state.pool:
            if c.mapping.key() not in seen:
                cands.setdefault(c.mapping.key(), c.mapping)
        for s in sorted(done, key=lambda s: s.cycles)[:3]:
            for m in refinements(state, s.mapping):
                cands.setdefault(m.key(), m)
        if not cands:
            return []
        ms = list(cands.values())
        pred = np.array([self.features(sp, m, state.estimate(m)) @ w for m in ms])
        order = np.argsort(pred + self.rng.normal(0.0, 0.01, size=len(pred)), kind="stable")
        return [
            Proposal(ms[i].as_dict(), source="surrogate", note=f"predicted {math.exp(pred[i]):.0f}") for i in order[:n]
        ]


def make_guide(name: str, seed: int = 0, **options: Any) -> Guide:
    if name == "cost":
        return CostGuide()
    if name == "surrogate":
        return SurrogateGuide(seed)
    if name == "llm":
        from zomboss.solvers.guides.llm import LlmGuide

        return LlmGuide(seed=seed, **options)
    raise ZombossError(f"--guide {name!r}: expected cost, surrogate or llm")


GUIDES: Sequence[str] = ("cost", "surrogate", "llm")
