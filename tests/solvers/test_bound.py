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


def _check_many(t, wl, params: dict[str, int], n: int, seed: str) -> None:  # noqa: ANN001
    """`n` legal mappings of `wl` under the KB with `params` (drawn deterministically from `seed`,
    so a counterexample reproduces), each bound at most its simulated cycles."""
    sp = space(t.kb(params), wl.op)
    if "bound" not in sp.costs:
        pytest.skip(f"{t.name} {wl.op} has no cost bound in its doc")
    rng = random.Random(seed)
    checked, tries = 0, 0
    while checked < n:
        tries += 1
        assert tries <= 20 * n, f"only {checked} legal mappings in {tries} draws"
        m = random_mapping(
            t, wl, rng.randint(0, 10_000), [rng.randint(-3, 3) for _ in range(16)], within=8.0, params=params
        )
        if m is None:
            continue
        bound = sp.cost("bound", m, wl.shape)
        ev = t.evaluate(t.instance(wl, params, 0), m, Mode.TIMING, extrapolate=False)
        assert bound is not None and bound <= ev.cycles, f"bound {bound} > simulated {ev.cycles} for {m.key()}"
        checked += 1


# Gemmini's suite instances take seconds a simulation (a conv's most), so its families are
# checked on small inline shapes below instead
@pytest.mark.slow
@pytest.mark.parametrize(("target", "wid"), [f for f in FAMILIES if f[0] != "gemmini"])
def test_bound_holds_on_many_random_mappings(target, wid):
    """The property of `test_bound_never_exceeds_simulated_cycles` on SLOW_MAPPINGS legal mappings
    of each family, with the tightness (bound / simulated cycles) they reach: the numbers of
    benchmarks/bounds/report.md."""
    t = get_target(target)
    _check_many(t, t.workload(wid), {}, SLOW_MAPPINGS, f"{target}/{wid}")


# Gemmini: SLOW_MAPPINGS per family and RTL, split over small shapes with ragged edges (odd sizes, a
# ragged row tile, bias), a first-layer-like conv (3 channels, stride 2: first-layer packing under
# the current RTL), a 1x1 stride-2 conv (the downsample path) and an even one, each on the doc's
# own RTL (firesim-f1-llc) and on the current RTL's parameters (firesim-f1-llc-current: pinned
# halves under the hardware loops, first-layer packing, OS); plus a few of a suite instance
GEMMINI_CURRENT = {"loop_spad_ids": 1, "first_layer_opts": 1, "os_dataflow": 1}
GEMMINI_SHAPES = {
    "matmul": ("matmul:M=37,N=50,K=71,bias=1", "matmul:M=100,N=33,K=129"),
    "conv": (
        "conv:N=1,H=15,W=15,C=3,K=20,R=3,S=3,stride=2,pad=1",
        "conv:N=2,H=9,W=11,C=20,K=18,R=3,S=3,stride=1,pad=1",
        "conv:N=1,H=14,W=14,C=24,K=20,R=1,S=1,stride=2,pad=0,bias=0",
        "conv:N=1,H=8,W=8,C=32,K=32,R=3,S=3,stride=1,pad=1",
    ),
}
GEMMINI_SUITE = {"matmul": ("odd_pad", 25), "conv": ("conv_s2", 8)}  # (instance, mappings per RTL)


@pytest.mark.slow
@pytest.mark.parametrize("op", sorted(GEMMINI_SHAPES))
@pytest.mark.parametrize("rtl", ["dosa", "current"])
def test_gemmini_bound_holds_on_many_random_mappings(op, rtl):
    t = get_target("gemmini")
    params = GEMMINI_CURRENT if rtl == "current" else {}
    shapes = GEMMINI_SHAPES[op]
    per = -(-SLOW_MAPPINGS // len(shapes))  # SLOW_MAPPINGS per RTL
    for spec in shapes:
        _check_many(t, t.workload(spec), params, per, f"gemmini/{rtl}/{spec}")
    wid, n = GEMMINI_SUITE[op]
    _check_many(t, t.workload(wid), params, n, f"gemmini/{rtl}/{wid}")
