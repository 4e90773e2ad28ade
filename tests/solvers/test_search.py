"""The search loop on real targets (smallest instances, tiny budgets): Candidate-0 first,
only verified kernels out, illegal proposals rejected with their rule and doc line, the
store making a rerun repeat nothing, and every pool candidate lowering to a program the
simulator accepts."""

from __future__ import annotations

import pytest

from tests.solvers.interrupt import interrupt
from zomboss.mapping import space
from zomboss.results import Store
from zomboss.solvers.guides.base import Proposal, SearchState
from zomboss.solvers.search import SolveConfig, solve
from zomboss.solvers.space import build_pool
from zomboss.target import Mode, get_target, target_names


def _smallest(t):
    return min(t.suite(), key=lambda w: (t.bound(w, {}), w.id))


@pytest.fixture(scope="module", params=target_names())
def case(request):
    t = get_target(request.param)
    return t, _smallest(t)


def test_solve_returns_a_verified_kernel_no_slower_than_candidate0(case, tmp_path):
    t, wl = case
    res = solve(t, wl, {}, SolveConfig(budget=4, pool_seconds=0.4), store=Store(tmp_path / "s.sqlite"))
    d = res.to_json()
    assert d["verified"] is True and d["cycles"] <= d["default_cycles"]
    assert 0 < d["simulations"] <= 4
    for key in ("target", "workload", "mapping", "wall_s", "bound_cycles", "breakdown", "breakdown_default"):
        assert key in d
    if d["candidate"] != "candidate-0":
        assert all(v["verified"] for v in d["verification"][-1]["seeds"])
        assert {s["seed"] for s in d["verification"][-1]["seeds"]} == {0, 1}


def test_rerun_repeats_no_simulation(case, tmp_path):
    t, wl = case
    db = tmp_path / "s.sqlite"
    first = solve(t, wl, {}, SolveConfig(budget=3, pool_seconds=0.4), store=Store(db))
    again = solve(t, wl, {}, SolveConfig(budget=3, pool_seconds=0.4), store=Store(db))
    assert again.cached >= again.simulations + 1  # every trial (and Candidate-0) came from the store
    assert (again.cycles, again.mapping) == (first.cycles, first.mapping)


class _Scripted:
    """A guide that proposes an illegal mapping, then a legal one, then stops."""

    name = "scripted"

    def __init__(self, illegal, legal):
        self.batches = [[illegal, legal]]

    def propose(self, state: SearchState, n: int) -> list[Proposal]:
        return self.batches.pop(0) if self.batches else []


def test_illegal_proposal_comes_back_with_rule_and_doc_line(case):
    t, wl = case
    kb = t.kb({})
    sp = space(kb, wl.op)
    base = t.reference_mappings(wl, {})["library"]
    bad = None
    for k in sp.integer:
        m = sp.mapping({**base.as_dict(), k.name: k.hi}, wl.shape)
        if sp.violations(kb, m, wl.shape):
            bad = m
            break
    if bad is None:
        pytest.skip(f"no single integer knob at its maximum is illegal for {wl.id}")
    guide = _Scripted(Proposal(bad.as_dict(), source="test"), Proposal({"no_such_knob": 1}, source="test"))
    res = solve(t, wl, {}, SolveConfig(budget=4, pool_seconds=0.4), guide=guide)
    assert res.simulations == 0 and len(res.rejected) == 2
    v = res.rejected[0].violations[0]
    assert v["rule"] and ":" in v["doc"] and v["doc"].split(":")[-1].isdigit()
    assert res.rejected[1].violations[0]["rule"] == "mapping.domain"
    assert res.to_json()["is_default"] is True


def test_every_pool_candidate_lowers_to_an_accepted_program(case):
    t, wl = case
    kb = t.kb({})
    inst = t.instance(wl, {}, 0)
    pool = build_pool(kb, wl.op, wl.shape, k=1, near=t.reference_mappings(wl, {})["library"], budget_s=0.6)
    cands = pool.candidates()
    assert cands, "the pool is empty"
    for c in cands[:: max(1, len(cands) // 12)][:12]:
        ev = t.evaluate(inst, c.mapping, Mode.CHECKED)
        assert ev.cycles > 0
        if c.bound is not None:
            assert c.bound <= ev.cycles, f"the doc's bound {c.bound} exceeds simulated {ev.cycles}: {c.mapping.key()}"


def test_a_mapping_that_lowers_to_a_simulated_program_is_not_simulated_again():
    """odd_pad in one block per dimension: the block loop order cannot change the program, so
    two mappings that differ only there are one kernel, simulated once."""
    t = get_target("gemmini")
    wl = t.workload("odd_pad")
    sp = space(t.kb({}), wl.op)
    one_block = {**t.reference_mappings(wl, {})["library"].as_dict(), "tile_i": 7, "tile_j": 13, "tile_k": 19}
    a, b = (sp.mapping({**one_block, "loop": "sw", "order": o}, wl.shape) for o in ("ijk", "kji"))
    assert a.key() != b.key() and not sp.violations(t.kb({}), a, wl.shape)
    guide = _Scripted(Proposal(a.as_dict(), source="test"), Proposal(b.as_dict(), source="test"))
    res = solve(t, wl, {}, SolveConfig(budget=4, pool_seconds=0.1), guide=guide)
    assert res.simulations == 1 and res.to_json()["duplicate_programs"] == 1


def test_classes_beyond_the_sizing_budget_still_offer_their_screened_sizing(case):
    t, wl = case
    kb = t.kb({})
    pool = build_pool(kb, wl.op, wl.shape, k=1, near=t.reference_mappings(wl, {})["library"], budget_s=0.0)
    unsized = [c for c in pool.classes if c.bound is None]
    assert all(len(c.sizings) <= 1 for c in unsized)
    assert not unsized or any(c.sizings for c in unsized)  # (without the screen, none would have one)
    offered = {c.mapping.key() for c in pool.candidates()}
    for c in unsized:
        for s in c.sizings:
            assert pool.space.from_skeleton(c.members[0], s, pool.shape).key() in offered


def test_solve_reports_each_phase_and_simulation_to_its_status_callback():
    t = get_target("plena")
    wl = t.workload("rope_64x64")
    seen = []
    res = solve(t, wl, {}, SolveConfig(budget=3), status=seen.append)
    phases = [p.phase for p in seen]
    assert phases[:2] == ["candidate-0", "pool"] and phases[-1] == "verify"
    assert phases.count("search") == res.simulations
    assert seen[0].incumbent is None and seen[1].incumbent == res.default_cycles
    assert seen[-1].incumbent == res.cycles and seen[-1].simulations == res.simulations
    assert all(p.budget == 3 for p in seen) and seen == sorted(seen, key=lambda p: p.elapsed_s)


def _count(db, table: str) -> int:
    import sqlite3

    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as c:
            return c.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    except sqlite3.Error:  # its tables not created yet
        return 0


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("phase", ["early", "later"])
def test_ctrl_c_stops_a_guided_solve_promptly_and_keeps_its_simulations(phase, jobs, tmp_path):
    """Interrupted early (Candidate-0, the pool's CP-SAT or NumPy screen) or later (once
    Candidate-0's verified run is stored, while it searches), with and without workers: exit 130
    within seconds, no traceback, and every simulation that ended is in the store."""
    db = tmp_path / "z.sqlite"
    # conv1_r50: the longest guided solve (about 30 s of simulations after a 4 s Candidate-0),
    # still searching long after its first trial is stored
    args = ["solve", "gemmini", "conv1_r50", "--jobs", jobs, "--db", str(db)]
    if phase == "early":
        rc, err, took = interrupt(args, 3.0)
    else:
        rc, err, took = interrupt(args, 120.0, until=lambda: _count(db, "trials") >= 1)
    assert rc == 130, err
    assert took < 15.0
    assert "Traceback" not in err
    assert _count(db, "results") == 0  # no summary of a run cut short
    if phase == "later":
        assert _count(db, "trials") >= 1
