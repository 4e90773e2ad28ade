"""The doc's `cost bound`, and the target's own roofline (`Target.bound`, what a report's headroom
divides by), are lower bounds on the simulator's cycles for every legal mapping:
hypothesis draws a random skeleton and a random sizing (CP-SAT minimising a random linear
objective over the integer knobs) of each op family's smallest suite instance, on every
target; a counterexample is a bug in the bound (or in the simulator)."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.random_mappings import families, random_mapping
from zomboss.mapping import space
from zomboss.target import Mode, get_target

FAMILIES = families()


@pytest.mark.parametrize(("target", "wid"), FAMILIES)
@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
)
@given(pick=st.integers(0, 10_000), weights=st.lists(st.integers(-3, 3), min_size=16, max_size=16))
def test_bound_never_exceeds_simulated_cycles(target, wid, pick, weights):
    t = get_target(target)
    wl = t.workload(wid)
    sp = space(t.kb({}), wl.op)
    if "bound" not in sp.costs:
        pytest.skip(f"{target} {wl.op} has no cost bound in its doc")
    m = random_mapping(t, wl, pick, weights, within=8.0)
    if m is None:
        return  # an infeasible skeleton for this workload, or an absurd corner: nothing to check
    bound = sp.cost("bound", m, wl.shape)
    ev = t.evaluate(t.instance(wl, {}, 0), m, Mode.TIMING, extrapolate=False)  # the bound is of the full model
    assert bound is not None and bound <= ev.cycles, f"bound {bound} > simulated {ev.cycles} for {m.key()}"
    roof = t.bound(wl, {}, m)
    assert roof <= ev.cycles, f"roofline {roof} > simulated {ev.cycles} for {m.key()}"


SLOW_MAPPINGS = 200  # random legal mappings per op family per target (the acceptance)


# Gemmini's families are left to the fast property test: a conv simulation takes seconds, so
# 200 of them per family do not fit in CI's time
@pytest.mark.slow
@pytest.mark.parametrize(("target", "wid"), [f for f in FAMILIES if f[0] != "gemmini"])
def test_bound_holds_on_many_random_mappings(target, wid):
    """The property of `test_bound_never_exceeds_simulated_cycles` on SLOW_MAPPINGS legal mappings
    of each family (drawn deterministically, so a counterexample reproduces), with the tightness
    (bound / simulated cycles) they reach: the numbers of benchmarks/bounds/report.md."""
    t = get_target(target)
    wl = t.workload(wid)
    sp = space(t.kb({}), wl.op)
    if "bound" not in sp.costs:
        pytest.skip(f"{target} {wl.op} has no cost bound in its doc")
    rng = random.Random(f"{target}/{wid}")
    checked, tries = 0, 0
    while checked < SLOW_MAPPINGS:
        tries += 1
        assert tries <= 20 * SLOW_MAPPINGS, f"only {checked} legal mappings in {tries} draws"
        m = random_mapping(t, wl, rng.randint(0, 10_000), [rng.randint(-3, 3) for _ in range(16)], within=8.0)
        if m is None:
            continue
        bound = sp.cost("bound", m, wl.shape)
        ev = t.evaluate(t.instance(wl, {}, 0), m, Mode.TIMING, extrapolate=False)
        assert bound is not None and bound <= ev.cycles, f"bound {bound} > simulated {ev.cycles} for {m.key()}"
        checked += 1
