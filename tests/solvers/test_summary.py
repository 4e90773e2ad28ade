"""`zomboss space`: the skeleton and legal-mapping counts, exact when CP-SAT enumerates every
sizing and said to be a lower bound otherwise, each phase told to the display, and the
counting held to its wall-time budget."""

from __future__ import annotations

import time

from zomboss.solvers.space import describe_space
from zomboss.target import get_target


def test_a_small_space_is_counted_exactly_and_its_phases_reported():
    t = get_target("plena")
    wl = t.workload("lin_60m_kv")
    seen: list[str] = []
    r = describe_space(t.kb({}), wl.id, wl.op, wl.shape, status=seen.append)
    assert r.legal_mappings_exact and r.legal_mappings > 0 and r.skeletons == 16
    assert seen[0] == "space: enumerating skeletons"
    assert any(s.startswith("space: sizing integer problem 1/") for s in seen)
    assert any(s.startswith("space: counting legal sizings 1/") for s in seen)
    assert "at least" not in r.text()


def test_a_large_space_stops_counting_at_its_budget_and_says_so():
    t = get_target("gemmini")
    wl = t.workload("mm512")
    t0 = time.perf_counter()
    r = describe_space(t.kb({}), wl.id, wl.op, wl.shape, count_seconds=1.0)
    assert r.seconds["count"] < 1.0 + 5.0  # the budget, plus one solver start per integer problem
    assert not r.legal_mappings_exact and "at least" in r.text()
    assert time.perf_counter() - t0 < 60
