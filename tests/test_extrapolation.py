"""Steady-state extrapolation (zomboss.steady) agrees with full simulation.

Timing-only evaluations skip steady periods of the lowering's loops; these tests hold every
target to the issue's contract: on every suite default the extrapolated cycles are within 1%
of the full simulation's (the golden table's), on random legal mappings of every op family
too, and two candidates more than 2% apart in full simulation are never reordered. Gemmini's
cycle breakdown is extrapolated with them: every component of every default within 1% of the
full simulation's cycles.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.random_mappings import families, random_mapping
from zomboss.mapping import space
from zomboss.target import Mode, get_target, target_names

GOLDEN = json.loads((Path(__file__).parent / "data" / "defaults_golden.json").read_text())
CASES = [(t, w.id) for t in target_names() for w in get_target(t).suite()]
TOLERANCE = 0.01


@pytest.mark.parametrize(("target", "wid"), CASES)
def test_extrapolated_default_is_within_one_percent_of_full_simulation(target, wid):
    t = get_target(target)
    wl = t.workload(wid)
    ev = t.evaluate(t.instance(wl, {}, 0), t.reference_mappings(wl, {})["library"], Mode.TIMING)
    full = GOLDEN[target][wid]["cycles"]
    assert abs(ev.cycles - full) <= TOLERANCE * full, f"extrapolated {ev.cycles} vs full {full}"
    assert sum(ev.breakdown.values()) == ev.cycles


GEMMINI = [w.id for w in get_target("gemmini").suite()]


def _breakdowns(wid: str) -> tuple:
    """The timing-only (extrapolated) and the full simulation's evaluation of a Gemmini
    workload's default."""
    t = get_target("gemmini")
    wl = t.workload(wid)
    inst = t.instance(wl, {}, 0)
    m = t.reference_mappings(wl, {})["library"]
    return t.evaluate(inst, m, Mode.TIMING), t.evaluate(inst, m, Mode.TIMING, extrapolate=False)


def _assert_components_close(fast, full) -> None:  # noqa: ANN001
    """Every breakdown component within 1 % of the full simulation's cycles: the yardstick of
    the totals (a component smaller than the totals' own error cannot be held to 1 % of
    itself: the extrapolated cycles missing or extra are some component's)."""
    assert set(fast.breakdown) == set(full.breakdown)
    for k, v in full.breakdown.items():
        assert abs(fast.breakdown[k] - v) <= TOLERANCE * full.cycles, (
            f"{k}: extrapolated {fast.breakdown[k]} vs full {v}"
        )


@pytest.mark.parametrize("wid", GEMMINI)
def test_extrapolated_breakdown_of_every_gemmini_default_agrees_with_full_simulation(wid):
    """The breakdown scales with the skipped periods like the cycles: a skipped stretch counts
    the busy time of its periods and the work pending at the skip moves behind it. Counting
    the last period's busy time without moving the pending work (which then sat in the
    stretch, while the time after it lost its compute to the next loop's loads) made conv_s2
    317,027 compute and 467,026 memory cycles against 483,617 and 295,055, and capped
    overhead and stall to 0."""
    fast, full = _breakdowns(wid)
    _assert_components_close(fast, full)


@pytest.mark.slow
def test_extrapolated_breakdown_of_a_large_matmul_agrees_with_full_simulation():
    """A nest whose extrapolated iterations hold extrapolated hardware loops (a skip's
    measured period contains skipped stretches of its own) agrees too (full simulation:
    about 20 s)."""
    fast, full = _breakdowns("matmul:M=1024,N=3584,K=1024")
    assert fast.report["extrapolation"]["nest"]["skipped_iterations"] > 0
    _assert_components_close(fast, full)


@pytest.mark.slow
def test_a_kernel_too_large_to_simulate_in_full_keeps_the_array_busy_at_least_its_bound():
    """8192x28672x8192's default: the compute cycles are at least what every output row needs
    in the array (7.5 G), where the breakdown used to say 188 M compute and 27.6 G stall."""
    t = get_target("gemmini")
    wl = t.workload("matmul:M=8192,N=28672,K=8192")
    inst = t.instance(wl, {}, 0)
    ev = t.evaluate(inst, t.reference_mappings(wl, {})["library"], Mode.TIMING)
    dim = inst.cfg.dim
    array = 8192 * (28672 // dim) * (8192 // dim)
    assert array <= ev.breakdown["compute"] < ev.cycles
    assert ev.breakdown["stall"] < 0.01 * ev.cycles
    assert sum(ev.breakdown.values()) == ev.cycles


_draws = st.tuples(st.integers(0, 10_000), st.lists(st.integers(-3, 3), min_size=16, max_size=16))


@pytest.mark.parametrize(("target", "wid"), families())
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(a=_draws, b=_draws)
def test_extrapolation_agrees_and_keeps_rankings_on_random_mappings(target, wid, a, b):
    t = get_target(target)
    wl = t.workload(wid)
    inst = t.instance(wl, {}, 0)
    ms = [random_mapping(t, wl, *d, within=3.0) for d in (a, b)]
    assume(all(m is not None for m in ms))
    full_evs = [t.evaluate(inst, m, Mode.TIMING, extrapolate=False) for m in ms]
    fast_evs = [t.evaluate(inst, m, Mode.TIMING) for m in ms]
    full, fast = [e.cycles for e in full_evs], [e.cycles for e in fast_evs]
    for f, x in zip(full, fast, strict=True):
        assert abs(x - f) <= TOLERANCE * f, f"extrapolated {x} vs full {f}"
    for fe, xe in zip(full_evs, fast_evs, strict=True):
        _assert_components_close(xe, fe)
    if abs(full[0] - full[1]) > 0.02 * min(full):
        assert (fast[0] < fast[1]) == (full[0] < full[1]), f"full {full} reordered as {fast}"


def test_a_skip_inside_a_loop_leaves_earlier_commands_rows_alone():
    """A run of 1-channel conv groups (each reads other input rows) extrapolated while the
    previous loop's stores still hold rows: a skip must move only the run's own pending rows,
    to their counterparts' rows. Shifting the previous loop's rows (and the run's rows in
    place) left them busy into the future, delayed the loop after next and made this 12.6 %
    slower than full simulation."""
    t = get_target("gemmini")
    wl = t.workload("conv_s2")
    base = t.reference_mappings(wl, {})["library"].to_json()["knobs"]
    knobs = {"tile_b": 1, "tile_orows": 1, "tile_ocols": 28, "tile_och": 128, "tile_ich": 1, "tile_krows": 3}
    m = space(t.kb({}), "conv").mapping({**base, **knobs, "tile_kcols": 3}, wl.shape)
    inst = t.instance(wl, {}, 0)
    full = t.evaluate(inst, m, Mode.TIMING, extrapolate=False).cycles
    fast = t.evaluate(inst, m, Mode.TIMING)
    assert fast.report["extrapolation"]["loops"]["skipped_iterations"] > 0  # the case arises
    assert abs(fast.cycles - full) <= TOLERANCE * full, f"extrapolated {fast.cycles} vs full {full}"
