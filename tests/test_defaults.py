"""The end-to-end runs of every suite default (Candidate-0 = lower(library_default)): the
program and its cycles are those of the golden table (tests/data/defaults_golden.json,
regenerated only by scripts/golden_defaults.py when a documented fix changes a default), and
the default verifies against NumPy with every doc rule checked.

Every default is lowered and timed here; the full functional verification of the largest
(more than SLOW_CYCLES cycles, a few minutes together) is marked `slow`: `make test` leaves it
to `make test-slow`, which CI runs after it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zomboss.target import Mode, get_target, target_names
from zomboss.verify import default_result

GOLDEN = json.loads((Path(__file__).parent / "data" / "defaults_golden.json").read_text())
CASES = [(t, w.id) for t in target_names() for w in get_target(t).suite()]
SLOW_CYCLES = 700_000


def _verified_cases() -> list:
    return [
        pytest.param(t, w, marks=[pytest.mark.slow] if GOLDEN[t][w]["cycles"] > SLOW_CYCLES else [], id=f"{t}-{w}")
        for t, w in CASES
    ]


def test_golden_table_covers_every_suite_instance():
    assert {(t, w) for t in GOLDEN for w in GOLDEN[t]} == set(CASES)


@pytest.mark.parametrize(("target", "wid"), CASES)
def test_default_lowers_and_times_as_the_golden_table(target, wid):
    t = get_target(target)
    wl = t.workload(wid)
    inst = t.instance(wl, {}, 0)
    library = t.reference_mappings(wl, {})["library"]
    program = t.lower(inst, library)
    want = GOLDEN[target][wid]
    assert (program.digest(), len(program)) == (want["program"], want["instructions"])
    assert t.evaluate(inst, library, Mode.TIMING, extrapolate=False).cycles == want["cycles"]


@pytest.mark.parametrize(("target", "wid"), _verified_cases())
def test_default_is_verified_and_unchanged(target, wid):
    t = get_target(target)
    wl = t.workload(wid)
    res = default_result(t, wl, {})
    want = GOLDEN[target][wid]
    assert res.verified is True, res.extra.get("verify_reason")
    assert res.cycles == want["cycles"]  # functional+timing cycles are the timing-only ones
    if "emu_cycles" in want:
        assert res.extra["emu_cycles"] == want["emu_cycles"]
