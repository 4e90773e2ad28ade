"""Skeleton enumeration (clingo) and integer sizing (CP-SAT) from the KB's mapping space,
cross-checked against the Python and ASP mapping checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zomboss import expr as ex
from zomboss.knowledge import load_kb
from zomboss.legality import check_mapping_values
from zomboss.mapping import space
from zomboss.solvers.space import SizingModel, skeletons

TOY = Path(__file__).parents[1] / "data" / "toy.md"


@pytest.fixture(scope="module")
def kb():
    return load_kb(TOY)


def test_enumerates_every_symbolic_choice(kb):
    sk = list(skeletons(kb, "matmul", {"M": 64, "N": 64, "K": 64}))
    assert sorted(s.as_dict()["df"] for s in sk) == ["os", "ws"]


def test_sizing_respects_all_constraints_and_minimises(kb):
    shape = {"M": 64, "N": 64, "K": 64}
    for sk in skeletons(kb, "matmul", shape):
        # maximise the tile volume (minimise its negation)
        obj = ex.Un("neg", ex.Bin("*", ex.Ref(("tile_i",)), ex.Ref(("tile_k",))))
        s = SizingModel(space(kb, "matmul"), shape, sk.as_dict()).solve(obj)
        assert s is not None and s.optimal
        values = {**shape, **s.values, **sk.as_dict()}
        assert check_mapping_values(kb, "matmul", values, "m").legal
        # optimum: tile_i*tile_k*4 <= 256 -> 64; tile_i <= 16 (cover); os caps tile_i at 4
        assert -s.objective == 64
        if sk.as_dict()["df"] == "os":
            assert s.values["tile_i"] <= 4


def test_infeasible_skeleton_returns_none(kb):
    shape = {"M": 1, "N": 1, "K": 1}
    (sk, *_) = list(skeletons(kb, "matmul", shape))
    # tile_i*4 <= M+3 = 4 forces tile_i = 1; require tile_i >= 2 through the objective-free check
    s = SizingModel(space(kb, "matmul"), shape, sk.as_dict()).solve()
    assert s is not None and s.values["tile_i"] == 1


@settings(max_examples=40, deadline=None)
@given(M=st.integers(1, 300), ti=st.integers(1, 64), tk=st.integers(1, 64), df=st.sampled_from(["ws", "os"]))
def test_cpsat_feasibility_agrees_with_checkers(kb, M, ti, tk, df):
    """Fixing every knob in CP-SAT is feasible exactly when both checkers call it legal."""
    from zomboss.solvers.space import Skeleton

    shape = {"M": M, "N": 16, "K": 16}
    values = {**shape, "tile_i": ti, "tile_k": tk, "df": df}
    legal = check_mapping_values(kb, "matmul", values, "m").legal
    pin = ex.Bin("and", ex.Bin("==", ex.Ref(("tile_i",)), ex.Int(ti)), ex.Bin("==", ex.Ref(("tile_k",)), ex.Int(tk)))
    space = kb.mapping_space("matmul")
    from ortools.sat.python import cp_model

    from zomboss.solvers.space import Translator

    m = cp_model.CpModel()
    vars_ = {k: m.new_int_var(1, 64, k) for k in ("tile_i", "tile_k")}
    tr = Translator(m, {**kb.params, **shape, "df": df}, vars_, dict.fromkeys(vars_, (1, 64)))
    for c in space.constraints:
        tr.require(c.expr)
    tr.require(pin)
    status = cp_model.CpSolver().solve(m)
    assert (status in (cp_model.OPTIMAL, cp_model.FEASIBLE)) == legal
    assert Skeleton("matmul", (("df", df),)).as_dict() == {"df": df}


def _translate_costs(target: str, every_class: bool) -> None:
    from zomboss.solvers.space import cost_relevant
    from zomboss.target import get_target

    t = get_target(target)
    kb = t.kb({})
    for wl in t.suite():
        sp = space(kb, wl.op)
        rel = cost_relevant(sp)
        seen = set()
        for sk in skeletons(kb, wl.op, wl.shape):
            d = sk.as_dict()
            key = tuple(d[n] for n in rel)
            if key in seen:
                continue
            seen.add(key)
            model = SizingModel(sp, wl.shape, d)
            for cost in sp.costs.values():
                model.term(cost.expr)  # raises SizingError when a term cannot be translated
            if not every_class:
                break


@pytest.mark.parametrize("target", ["gemmini", "plena", "vta"])
def test_the_docs_costs_translate_to_cpsat_on_every_suite_instance(target):
    """The doc's estimate and bound become CP-SAT terms for every suite instance (a divisor that
    may be zero for one shape, as a packing factor of 0 kernel columns per row once was, made
    `solve` fail on the convolutions with many channels only)."""
    _translate_costs(target, every_class=False)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["gemmini", "plena", "vta"])
def test_the_docs_costs_translate_for_every_cost_class(target):
    _translate_costs(target, every_class=True)
