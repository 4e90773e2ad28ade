"""The one end-to-end run of every suite default (Candidate-0 = lower(library_default)):
verified against NumPy, and identical in program and cycles to the golden table
(tests/data/defaults_golden.json, regenerated only by scripts/golden_defaults.py when a
documented fix changes a default)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zomboss.candidate import default_result
from zomboss.target import get_target, target_names

GOLDEN = json.loads((Path(__file__).parent / "data" / "defaults_golden.json").read_text())
CASES = [(t, w.id) for t in target_names() for w in get_target(t).suite()]


def test_golden_table_covers_every_suite_instance():
    assert {(t, w) for t in GOLDEN for w in GOLDEN[t]} == set(CASES)


@pytest.mark.parametrize(("target", "wid"), CASES)
def test_default_is_verified_and_unchanged(target, wid):
    t = get_target(target)
    wl = t.workload(wid)
    res = default_result(t, wl, {})
    want = GOLDEN[target][wid]
    assert res.verified is True, res.extra.get("verify_reason")
    program = t.lower(t.instance(wl, {}, 0), t.reference_mappings(wl, {})["library"])
    assert (program.digest(), len(program), res.cycles) == (want["program"], want["instructions"], want["cycles"])
    if "emu_cycles" in want:
        assert res.extra["emu_cycles"] == want["emu_cycles"]
