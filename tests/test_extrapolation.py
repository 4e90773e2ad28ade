"""Steady-state extrapolation (zomboss.steady) agrees with full simulation.

Timing-only evaluations skip steady periods of the lowering's loops; these tests hold every
target to the issue's contract: on every suite default the extrapolated cycles are within 1%
of the full simulation's (the golden table's), on random legal mappings of every op family
too, and two candidates more than 2% apart in full simulation are never reordered.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from zomboss.solvers.enumerate import skeletons
from zomboss.solvers.sizing import SizingModel

from zomboss import expr as ex
from zomboss.mapping import Mapping, space
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


def _families() -> list[tuple[str, str]]:
    """Each target's op families, on the suite instance with the smallest bound."""
    out = []
    for name in target_names():
        t = get_target(name)
        smallest: dict[str, object] = {}
        for wl in t.suite():
            cur = smallest.get(wl.op)
            if cur is None or (t.bound(wl, {}), wl.id) < (t.bound(cur, {}), cur.id):  # type: ignore[attr-defined]
                smallest[wl.op] = wl
        out += [(name, wl.id) for wl in smallest.values()]  # type: ignore[attr-defined]
    return out


def _mapping(t, wl, pick: int, weights: list[int]) -> Mapping | None:  # noqa: ANN001
    """A random legal mapping: a skeleton, sized by CP-SAT under a random linear objective,
    within 8x of Candidate-0 by the doc's estimate (absurd corners cost minutes to simulate)."""
    kb = t.kb({})
    sp = space(kb, wl.op)
    sks = [s.as_dict() for s in skeletons(kb, wl.op, wl.shape)]
    sk = sks[pick % len(sks)]
    terms = [ex.Bin("*", ex.Int(w), ex.Ref((k.name,))) for k, w in zip(sp.integer, weights, strict=False) if w]
    objective = None
    for term in terms:
        objective = term if objective is None else ex.Bin("+", objective, term)
    sol = SizingModel(sp, wl.shape, sk).solve(objective, time_limit=2.0)
    if sol is None:
        return None
    m = sp.from_skeleton(sk, sol.values, wl.shape)
    if "estimate" in sp.costs:
        est, est0 = (
            sp.cost("estimate", m, wl.shape),
            sp.cost("estimate", t.reference_mappings(wl, {})["library"], wl.shape),
        )
        if est is not None and est0 is not None and est > 8 * est0:
            return None
    return m


_draws = st.tuples(st.integers(0, 10_000), st.lists(st.integers(-3, 3), min_size=16, max_size=16))


@pytest.mark.parametrize(("target", "wid"), _families())
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(a=_draws, b=_draws)
def test_extrapolation_agrees_and_keeps_rankings_on_random_mappings(target, wid, a, b):
    t = get_target(target)
    wl = t.workload(wid)
    inst = t.instance(wl, {}, 0)
    ms = [_mapping(t, wl, *d) for d in (a, b)]
    assume(all(m is not None for m in ms))
    full = [t.evaluate(inst, m, Mode.TIMING, extrapolate=False).cycles for m in ms]
    fast = [t.evaluate(inst, m, Mode.TIMING).cycles for m in ms]
    for f, x in zip(full, fast, strict=True):
        assert abs(x - f) <= TOLERANCE * f, f"extrapolated {x} vs full {f}"
    if abs(full[0] - full[1]) > 0.02 * min(full):
        assert (fast[0] < fast[1]) == (full[0] < full[1]), f"full {full} reordered as {fast}"
