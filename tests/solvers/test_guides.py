"""The cost guide's choices, on odd_pad's space without simulating: the pool taken in two orders
in turn, and a climb that restarts elsewhere once a kernel's edits stop paying."""

from __future__ import annotations

from zomboss.mapping import space
from zomboss.solvers.guides.base import SearchState, Simulated
from zomboss.solvers.guides.cost import STALE_AFTER, CostGuide
from zomboss.solvers.space import Candidate, distance
from zomboss.target import get_target

T = get_target("gemmini")
WL = T.workload("odd_pad")
KB = T.kb({})
SP = space(KB, WL.op)
C0 = T.reference_mappings(WL, {})["library"]


def _sim(m, cycles: int) -> Simulated:
    return Simulated(m, cycles, {}, "test", SP.cost("estimate", m, WL.shape), None, 0.0)


def _state(pool: list[Candidate]) -> SearchState:
    return SearchState(SP, dict(WL.shape), _sim(C0, 38_942), {}, pool, kb=KB, workload=WL.id)


def _edit(m, **kw):
    return SP.mapping({**m.as_dict(), **kw}, WL.shape)


def test_pool_picks_alternate_best_estimate_and_nearest_candidate0() -> None:
    near = _edit(C0, tile_j=5)  # one knob from Candidate-0
    far = [_edit(C0, loop="sw", tile_j=j, prefetch="true") for j in (6, 7)]
    pool = [Candidate(far[0], 1, None, "cpsat"), Candidate(far[1], 2, None, "cpsat"), Candidate(near, 3, None, "cpsat")]
    guide = CostGuide()
    picks = [p for p in guide.propose(_state(pool), 8) if p.source == "cpsat"]
    keys = [SP.mapping(dict(p.values), WL.shape).key() for p in picks]
    assert keys[:2] == [far[0].key(), near.key()]  # best estimate, then nearest Candidate-0
    assert keys[2] == far[1].key()


def test_the_climb_leaves_a_kernel_whose_edits_stopped_paying() -> None:
    best = _edit(C0, tile_j=7)
    other = _edit(C0, loop="sw", prefetch="true", tile_i=5, tile_j=13)
    state = _state([])
    state.simulated += [_sim(best, 30_000), _sim(other, 35_000)]
    guide = CostGuide()
    guide._refs_done = True
    for _ in range(STALE_AFTER + 1):
        m = guide._refinement(state, state.seen())
        assert m is not None
        state.simulated.append(_sim(m, 40_000))  # no edit beats its base
    # the first STALE_AFTER edits are of the fastest kernel; the next is an edit of the other one
    assert all(distance(e.mapping.as_dict(), best.as_dict()) == 1 for e in state.simulated[2 : 2 + STALE_AFTER])
    last = state.simulated[-1].mapping.as_dict()
    assert distance(last, other.as_dict()) == 1 and distance(last, best.as_dict()) > 1
