"""`zomboss.solvers.guides.surrogate.SurrogateGuide`, on odd_pad's space without simulating:
the cost guide's picks until it has seen enough kernels, then the pool and the refinements of
the best kernels ranked by a ridge regression of log-cycles on the knobs."""

from __future__ import annotations

import math

import numpy as np

from zomboss.mapping import KnobMapping, space
from zomboss.solvers.guides.base import SearchState, Simulated
from zomboss.solvers.guides.cost import CostGuide
from zomboss.solvers.guides.surrogate import SurrogateGuide
from zomboss.solvers.space import Candidate
from zomboss.target import get_target

T = get_target("gemmini")
WL = T.workload("odd_pad")
KB = T.kb({})
SP = space(KB, WL.op)
C0 = T.reference_mappings(WL, {})["library"]


def _edit(m: KnobMapping, **kw: int | str) -> KnobMapping:
    return SP.mapping({**m.as_dict(), **kw}, WL.shape)


def _sim(m: KnobMapping, cycles: int) -> Simulated:
    return Simulated(m, cycles, {}, "test", SP.cost("estimate", m, WL.shape), None, 0.0)


def _cycles(m: KnobMapping) -> int:
    """A made-up machine where cycles grow with tile_j (what the regression has to learn)."""
    return int(1000 * (m.int("tile_j") + 1) ** 2)


def _state(pool: list[Candidate], simulated: list[Simulated]) -> SearchState:
    return SearchState(SP, dict(WL.shape), _sim(C0, _cycles(C0)), {}, pool, simulated, kb=KB, workload=WL.id)


def test_features_one_hot_the_symbols_and_log_the_integers() -> None:
    f = SurrogateGuide().features(SP, C0, 99)
    expected = 1 + sum(len(k.values) - 1 if k.values else 1 for k in SP.knobs) + 1
    assert f.shape == (expected,) and f[0] == 1.0 and f[-1] == math.log(100)
    assert SurrogateGuide().features(SP, C0, None)[-1] == 0.0
    assert np.all(f[1:-1] >= 0.0)


def test_before_warmup_it_proposes_what_the_cost_guide_does() -> None:
    pool = [Candidate(_edit(C0, tile_j=j), j, None, "cpsat") for j in (3, 5, 7)]
    mine = SurrogateGuide(warmup=4).propose(_state(pool, []), 3)
    cost = CostGuide().propose(_state(pool, []), 3)
    assert [p.values for p in mine] == [p.values for p in cost] and mine


def test_after_warmup_it_ranks_by_the_learned_cycles() -> None:
    done = [_sim(_edit(C0, tile_j=j), _cycles(_edit(C0, tile_j=j))) for j in (2, 4, 9, 12, 15)]
    pool = [Candidate(_edit(C0, tile_j=j), 0, None, "cpsat") for j in (14, 1, 13)]
    state = _state(pool, done)
    props = SurrogateGuide(warmup=4).propose(state, 10_000)
    assert props and all(p.source == "surrogate" for p in props)
    picked = [SP.mapping(dict(p.values), WL.shape) for p in props]
    assert not {m.key() for m in picked} & state.seen()  # nothing simulated twice
    preds = [float(p.note.split()[1]) for p in props]
    assert preds == sorted(preds) or max(a / b for a, b in zip(preds, preds[1:], strict=False)) < 1.05
    # the smallest tile_j of the pool beats the large ones: the regression learned the trend
    ranks = {m.int("tile_j"): i for i, m in enumerate(picked) if m.key() in {c.mapping.key() for c in pool}}
    assert ranks[1] < ranks[13] and ranks[1] < ranks[14]
