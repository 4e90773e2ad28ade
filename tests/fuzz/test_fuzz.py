"""The fuzzing suite, briefly (a few examples per class, about 30 s in all on two cores): every
class of hostile input from issue 12, each example in a forked child under a memory and a
time limit. `scripts/fuzz.py --minutes N` runs the same properties for longer."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz.props import PROPERTIES

# examples per class under `make test` (the expensive classes build KBs or run tracers)
BUDGET = {
    "expressions": 10,  # tests/legality/test_one_semantics.py runs 100 more in-process
    "bombs": 6,
    "generated rules": 3,
    "parameters": 3,
    "corrupted docs": 3,
    "names": 4,
    "programs (toy)": 5,
    "programs (gemmini)": 3,
    "programs (plena)": 3,
    "hostile loops": 2,
    "mappings (toy)": 4,
    "mappings (gemmini)": 2,
    "mappings (plena)": 2,
    "overrides (toy)": 3,
    "overrides (gemmini)": 2,
    "overrides (plena)": 2,
    "target overrides (gemmini)": 2,
    "target overrides (plena)": 2,
    "cache entries": 2,
    "query patterns": 10,
    "stores": 10,
    "special files (inputs)": 6,
    "special files (outputs)": 4,
    "recordings": 8,
    "recordings (key echoes)": 30,
    "target overrides (vta)": 2,
    "CLI arguments": 25,
    "VTA sidecars": 4,
}


@pytest.mark.parametrize("name", sorted(PROPERTIES))
def test_fuzz(name):
    strategies, prop = PROPERTIES[name]
    test = settings(
        max_examples=BUDGET.get(name, 5),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )(given(*strategies)(prop))
    test()
