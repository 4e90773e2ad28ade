"""The doc's `cost bound` is a lower bound on the simulator's cycles for every legal mapping:
hypothesis draws a random skeleton and a random sizing (CP-SAT minimising a random linear
objective over the integer knobs) of each op family's smallest suite instance, on every
target; a counterexample is a bug in the bound (or in the simulator)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from zomboss.solvers.enumerate import skeletons
from zomboss.solvers.sizing import SizingModel

from zomboss import expr as ex
from zomboss.mapping import space
from zomboss.target import Mode, get_target, target_names


def _families():
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


FAMILIES = _families()


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
    kb = t.kb({})
    sp = space(kb, wl.op)
    if "bound" not in sp.costs:
        pytest.skip(f"{target} {wl.op} has no cost bound in its doc")
    sks = [s.as_dict() for s in skeletons(kb, wl.op, wl.shape)]
    model = SizingModel(sp, wl.shape, sks[pick % len(sks)])
    terms = [ex.Bin("*", ex.Int(w), ex.Ref((k.name,))) for k, w in zip(sp.integer, weights, strict=False) if w]
    objective = None
    for term in terms:
        objective = term if objective is None else ex.Bin("+", objective, term)
    sol = model.solve(objective, time_limit=2.0)
    if sol is None:
        return  # an infeasible skeleton for this workload: nothing to check
    m = sp.from_skeleton(sks[pick % len(sks)], sol.values, wl.shape)
    # absurd corners (1-element tiles: millions of instructions) say nothing the others do not,
    # and cost minutes to simulate: keep mappings the doc's estimate puts within 8x of Candidate-0
    est, est0 = sp.cost("estimate", m, wl.shape), sp.cost("estimate", t.reference_mappings(wl, {})["library"], wl.shape)
    assume(est is None or est0 is None or est <= 8 * est0)
    bound = sp.cost("bound", m, wl.shape)
    ev = t.evaluate(t.instance(wl, {}, 0), m, Mode.TIMING, extrapolate=False)  # the bound is of the full model
    assert bound is not None and bound <= ev.cycles, f"bound {bound} > simulated {ev.cycles} for {m.key()}"
