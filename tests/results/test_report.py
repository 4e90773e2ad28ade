"""The bench report's arithmetic (zomboss/results/report.py): speedups, bounds and headroom."""

from __future__ import annotations

import pytest

from zomboss.results import markdown, rows_of


def _result(default: int, best: int, bound: int, space_bound: int | None) -> dict[str, object]:
    return {
        "verified": True,
        "cycles": best,
        "default_cycles": default,
        "bound_cycles": bound,
        "space_bound_cycles": space_bound,
    }


def test_headroom_is_candidate0_over_the_tighter_sound_bound() -> None:
    results = {
        ("t", "a"): _result(1200, 1000, 800, 1000),  # the space bound is the tighter one
        ("t", "b"): _result(1200, 1100, 1000, None),  # no space bound: the roofline holds for all mappings
        ("t", "c"): _result(900, 900, 600, 500),  # a looser space bound does not widen it
    }
    rows = {r["workload"]: r for r in rows_of(results, {k: "op" for k in results})}
    assert rows["a"]["headroom"] == pytest.approx(1.2)
    assert rows["b"]["headroom"] == pytest.approx(1.2)
    assert rows["c"]["headroom"] == pytest.approx(1.5)
    assert rows["a"]["speedup"] == pytest.approx(1.2) and rows["a"]["pct_bound"] == pytest.approx(0.8)


def test_summary_states_the_geomean_headroom() -> None:
    results = {("t", "a"): _result(1200, 1000, 1000, None), ("t", "b"): _result(1000, 1000, 800, None)}
    text = markdown(rows_of(results, {k: "op" for k in results}), "r", {})
    line = next(ln for ln in text.splitlines() if ln.startswith("| t |"))
    assert line.endswith("| 1.22x | - |")  # sqrt(1.2 * 1.25); no simulation counts given


def test_the_winner_is_compared_with_every_other_reference_it_met() -> None:
    results = {
        ("t", "a"): {**_result(1200, 1000, 800, None), "references": {"exo": 1500}},
        ("t", "b"): {**_result(1200, 1100, 800, None), "references": {"exo": 1000}},  # slower than exo: counted
        ("t", "c"): _result(1200, 1100, 800, None),  # exo not simulated: not in the count
    }
    text = markdown(rows_of(results, {k: "op" for k in results}), "r", {})
    assert "- `exo`, t op: the winner is at least as fast on 1/2 instances" in text
    assert "| t | a | 1500 | 1000 |" in text and "| t | c |" not in text.split("## Against")[1]


def test_summary_states_the_median_simulations() -> None:
    results = {
        ("t", w): {**_result(1000, 1000, 800, None), "simulations": n} for w, n in (("a", 3), ("b", 5), ("c", 40))
    }
    text = markdown(rows_of(results, {k: "op" for k in results}), "r", {})
    assert next(ln for ln in text.splitlines() if ln.startswith("| t |")).endswith("| 5 |")
