"""The fuzzing suite, briefly (a few examples per class, well under a minute in all): every
class of hostile input from issue 12, each example in a forked child under a memory and a
time limit. `scripts/fuzz.py --minutes N` runs the same properties for longer."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz.props import PROPERTIES

# examples per class under `make test` (the expensive classes build KBs or run tracers)
BUDGET = {
    "expressions": 60,
    "bombs": 10,
    "generated rules": 8,
    "parameters": 8,
    "corrupted docs": 8,
    "names": 8,
    "programs (toy)": 10,
    "programs (gemmini)": 5,
    "programs (plena)": 5,
    "hostile loops": 3,
    "mappings (toy)": 6,
    "mappings (gemmini)": 4,
    "mappings (plena)": 4,
    "overrides (toy)": 5,
    "overrides (gemmini)": 2,
    "overrides (plena)": 2,
    "cache entries": 4,
    "query patterns": 15,
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
