"""The cost guide's choices, on odd_pad's space without simulating: the pool taken in two orders
in turn, a climb that restarts elsewhere once a kernel's edits stop paying, and never proposes
what the bound rules out."""

from __future__ import annotations

from zomboss.mapping import space
from zomboss.solvers.guides.base import SearchState, Simulated
from zomboss.solvers.guides.cost import STALE_AFTER, CostGuide, line_edits
from zomboss.solvers.space import Candidate, distance
from zomboss.target import get_target

T = get_target("gemmini")
WL = T.workload("odd_pad")
KB = T.kb({})
SP = space(KB, WL.op)
C0 = T.reference_mappings(WL, {})["library"]


def _sim(m, cycles: int) -> Simulated:
    return Simulated(m, cycles, {}, "test", SP.cost("estimate", m, WL.shape), None, 0.0)


def _state(pool: list[Candidate], c0_cycles: int = 38_942) -> SearchState:
    return SearchState(SP, dict(WL.shape), _sim(C0, c0_cycles), {}, pool, kb=KB, workload=WL.id)


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
    state = _state([], c0_cycles=500_000)
    # (cycles far above every bound, so the bound rules no edit out)
    state.simulated += [_sim(best, 300_000), _sim(other, 350_000)]
    guide = CostGuide()
    guide._refs_done = True
    for _ in range(STALE_AFTER + 1):
        m = guide._refinement(state, state.seen())
        assert m is not None
        state.simulated.append(_sim(m, 400_000))  # no edit beats its base
    # the first STALE_AFTER edits are of the fastest kernel; the next is an edit of the other one
    assert all(distance(e.mapping.as_dict(), best.as_dict()) == 1 for e in state.simulated[2 : 2 + STALE_AFTER])
    last = state.simulated[-1].mapping.as_dict()
    assert distance(last, other.as_dict()) == 1 and distance(last, best.as_dict()) > 1


def test_the_climb_proposes_no_edit_the_bound_rules_out() -> None:
    state = _state([])
    state.simulated.append(_sim(_edit(C0, tile_j=7), SP.cost("bound", C0, WL.shape) + 1))
    guide = CostGuide()
    guide._refs_done = True
    for _ in range(2 * STALE_AFTER):
        m = guide._refinement(state, state.seen()) or guide._line(state, state.seen())
        if m is None:
            break
        assert SP.cost("bound", m, WL.shape) < state.best().cycles
        state.simulated.append(_sim(m, state.best().cycles + 1))


def test_once_the_climb_is_stuck_every_legal_value_of_an_integer_knob_is_offered() -> None:
    state = _state([])  # Candidate-0 the best kernel
    best = C0
    edits = line_edits(state, best)
    assert edits and all(distance(e.as_dict(), best.as_dict()) == 1 for e in edits)
    assert all(not SP.violations(KB, e, WL.shape) for e in edits)
    tile_j = {e["tile_j"] for e in edits if e["tile_j"] != best["tile_j"]}
    assert len(tile_j) > 2  # not only the neighbouring values a single-knob edit steps to
    estimates = [SP.cost("estimate", e, WL.shape) for e in edits]
    assert estimates == sorted(estimates)
    guide = CostGuide()
    assert guide._line(state, state.seen()).key() == edits[0].key()
