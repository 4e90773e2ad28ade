"""A one-candidate pool for fast search tests: Candidate-0 with a few knobs changed, in place of
the CP-SAT pool (screening every cost class of a Gemmini matmul takes minutes on a loaded
2-core machine). Tests of what the search does with its candidates (verification, the store,
export) need a search, not a pool; tests/solvers/test_search.py covers the real pool."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from zomboss.mapping import KnobMapping, space
from zomboss.solvers.space import Pool
from zomboss.solvers.space.pool import CostClass

# matmul:M=32,N=32,K=64: Candidate-0 takes 2,028 timing-only cycles, with tile_k = 2 it takes 2,015
FASTER = {"tile_k": 2}


def tiny_pool(changes: Mapping[str, Any] = FASTER) -> Callable[..., Pool]:
    """A stand-in for `build_pool` offering Candidate-0 (`near`) with `changes` applied."""

    def build(kb: Any, op: str, shape: Mapping[str, int], *, near: KnobMapping, **_: Any) -> Pool:
        sp = space(kb, op)
        m = sp.mapping({**near.as_dict(), **changes}, shape)
        values = m.as_dict()
        skeleton = {k.name: str(values[k.name]) for k in sp.symbolic}
        sizes = {k.name: int(values[k.name]) for k in sp.integer}
        return Pool(sp, dict(shape), [CostClass((), [skeleton], [sizes])], 1, {}, near)

    return build
