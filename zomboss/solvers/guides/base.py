"""What every guide shares: the search state a guide reads (the mapping space, the candidate
pool with the doc's estimates and bounds, the simulations so far with their cycle breakdowns,
the rejected proposals with their diagnostics), the proposal it answers with (knob values, or
knob edits of a simulated candidate), and the `Guide` protocol. A guide never emits
instructions and is never trusted: the search checks every proposal against the KB, and an
illegal one comes back in `state.rejected` with the violated rule and its doc line, uncounted
and unsimulated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from zomboss.knowledge import KB
from zomboss.mapping import KnobMapping, Space, iter_knob_edits
from zomboss.solvers.space import Candidate


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
    kb: KB | None = None  # the KB, so that guides may ask it before proposing (the search asks again)
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

    def can_win(self, m: KnobMapping) -> bool:
        """Whether the doc's sound bound leaves `m` a chance to beat the best kernel so far (the
        search prunes it otherwise, so a guide's proposal of it is spent on nothing)."""
        bound = self.space.cost("bound", m, self.shape)
        return bound is None or bound < self.best().cycles


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
