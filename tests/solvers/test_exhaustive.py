"""`solve --exhaustive`: the proven optimum equals brute force (every legal mapping simulated),
the answer carries its proof state (bound, gap, completeness), `--time-limit` is honoured in
every phase, and a rerun repeats no simulation."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.solvers.interrupt import interrupt
from zomboss.mapping import space
from zomboss.results import Store
from zomboss.solvers.exhaustive import exhaustive, relative_gap
from zomboss.solvers.search import Programs
from zomboss.solvers.space import SizingModel
from zomboss.solvers.space.enumerate import skeletons
from zomboss.target import Mode, get_target

# small spaces of every PLENA and VTA op family, whose every legal mapping the test can simulate
# (Gemmini's smallest matmul has 2,690 skeletons, tens of thousands of legal mappings: brute
# force does not fit a test's time)
SMALL = [
    ("plena", "lin_60m_kv"),
    ("plena", "rms_4x384"),
    ("plena", "sm_16x64"),
    ("plena", "rope_4x64"),
    ("plena", "attn_64"),
    ("plena", "ffn_16x128x256"),
    ("vta", "dense_128"),
    ("vta", "r18_c7"),
]


def brute_force(target: str, wid: str) -> tuple[int, int]:
    """(the fastest timing-only cycles over every legal mapping, legal mappings): every skeleton
    times every sizing, each distinct program simulated."""
    t = get_target(target)
    wl = t.workload(wid)
    kb = t.kb({})
    sp = space(kb, wl.op)
    inst = t.instance(wl, {}, 0)
    programs = Programs(t, wl, {})
    best, legal = None, 0
    for sk in skeletons(kb, wl.op, wl.shape):
        sizings, finished = SizingModel(sp, wl.shape, sk.as_dict()).every_sizing(600.0)
        assert finished
        for values in sizings:
            m = sp.from_skeleton(sk.as_dict(), values, wl.shape)
            assert not sp.violations(kb, m, wl.shape), m.key()
            legal += 1
            if programs.repeated(m):
                continue
            cycles = t.evaluate(inst, m, Mode.TIMING).cycles
            best = cycles if best is None else min(best, cycles)
    assert best is not None
    return best, legal


@pytest.mark.slow
@pytest.mark.parametrize(("target", "wid"), SMALL)
def test_exhaustive_optimum_equals_brute_force(target, wid, tmp_path):
    best, legal = brute_force(target, wid)
    t = get_target(target)
    res = exhaustive(t, t.workload(wid), {}, store=Store(tmp_path / "s.sqlite"))
    assert res.complete and res.optimum_cycles is not None
    assert res.legal_mappings is not None and res.legal_mappings <= legal
    assert res.gap == 0.0 and res.lower_bound_cycles == res.optimum_cycles
    # the winner is verified on full simulation, which the timing-only ranking matches within 1 %
    assert abs(res.optimum_cycles - best) <= 0.01 * best, (res.optimum_cycles, best)


@pytest.mark.slow
@settings(max_examples=6, deadline=None, derandomize=True)
@given(
    op=st.sampled_from(["rmsnorm", "softmax"]),
    rows=st.sampled_from([4, 8, 16, 32]),
    cols=st.sampled_from([64, 128, 192, 256]),
)
def test_pruning_never_loses_the_optimum_on_random_small_workloads(op, rows, cols, tmp_path_factory):
    wid = f"rmsnorm:rows={rows},hidden={cols}" if op == "rmsnorm" else f"softmax:rows={rows},cols={cols}"
    best, _ = brute_force("plena", wid)
    t = get_target("plena")
    res = exhaustive(t, t.workload(wid), {}, store=Store(tmp_path_factory.mktemp("s") / "s.sqlite"))
    assert res.complete and res.optimum_cycles is not None
    assert abs(res.optimum_cycles - best) <= 0.01 * best, (wid, res.optimum_cycles, best)


def test_relative_gap():
    assert relative_gap(102, 100) == pytest.approx(0.02)
    assert relative_gap(100, 100) == 0.0
    assert relative_gap(100, 0) == float("inf")


def run_cli(*args: str, env_tmp) -> tuple[int, dict, float]:
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "zomboss", *args, "--json", "--db", str(env_tmp / "z.sqlite")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return p.returncode, json.loads(p.stdout) if p.stdout.strip() else {}, time.perf_counter() - t0


@pytest.mark.slow
def test_exhaustive_cli_reports_its_proof_state_and_resumes(tmp_path):
    rc, first, _ = run_cli("solve", "plena", "lin_60m_kv", "--exhaustive", env_tmp=tmp_path)
    assert rc == 0, first
    assert first["complete"] is True and first["optimum_cycles"] == first["cycles"]
    assert first["lower_bound_cycles"] == first["cycles"] and first["gap"] == 0.0
    for key in ("legal_mappings", "pruned", "simulations", "pruned_skeletons"):
        assert key in first
    rc, again, _ = run_cli("solve", "plena", "lin_60m_kv", "--exhaustive", env_tmp=tmp_path)
    assert rc == 0
    # the rerun finds every simulation in the store: nothing is simulated twice
    assert again["cached_simulations"] >= first["simulations"]
    assert again["optimum_cycles"] == first["optimum_cycles"]


def test_gap_flag_rejects_a_non_fraction(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "zomboss", "solve", "plena", "lin_60m_kv", "--exhaustive", "--gap", "5"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and "between 0 and 1" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.slow
def test_time_limit_is_honoured_on_a_large_space(tmp_path):
    limit = 20.0
    rc, res, wall = run_cli("solve", "gemmini", "mm512", "--exhaustive", "--time-limit", str(limit), env_tmp=tmp_path)
    assert rc == 0, res
    assert res["complete"] is False and "optimum_cycles" not in res
    assert res["lower_bound_cycles"] <= res["cycles"] and res["gap"] >= 0.0
    # interpreter and KB start-up, Candidate-0 before the clock, verification after it
    assert wall < limit + 25.0, wall


@pytest.mark.slow
def test_gap_stops_once_proven(tmp_path):
    # lin_60m_kv: the doc's bound over the whole space is 45,288 against an optimum of 51,467
    # (a 13.6 % gap), so a 20 % gap is proven before the classes are explored
    rc, res, _ = run_cli("solve", "plena", "lin_60m_kv", "--exhaustive", "--gap", "0.2", env_tmp=tmp_path)
    assert rc == 0, res
    assert res["complete"] is False and "optimum_cycles" not in res
    assert res["gap"] <= 0.2 and res["lower_bound_cycles"] >= 45_288


@pytest.mark.slow
def test_ctrl_c_stops_promptly_with_exit_130(tmp_path):
    rc, err, took = interrupt(["solve", "gemmini", "mm512", "--exhaustive", "--db", str(tmp_path / "z.sqlite")], 20)
    assert rc == 130, err
    assert took < 15.0
    assert "Traceback" not in err


@pytest.mark.parametrize(("target", "wid"), [("vta", "dense_128"), ("plena", "lin_60m_kv")])
def test_lazy_class_bounds_prove_the_same_optimum(target, wid, monkeypatch):
    """A pool too large to prove every class bound first (Gemmini's) visits classes by estimate
    and proves each bound when it reaches it: the same proven optimum as the eager order."""
    t = get_target(target)
    wl = t.workload(wid)
    eager = exhaustive(t, wl, {})
    monkeypatch.setattr("zomboss.solvers.exhaustive.EAGER_CLASSES", 0)
    lazy = exhaustive(t, wl, {})
    assert eager.complete and lazy.complete
    assert lazy.optimum_cycles == eager.optimum_cycles == lazy.lower_bound_cycles


def test_the_stored_verified_winner_is_the_first_incumbent(tmp_path):
    from zomboss.solvers.search import SolveConfig, solve
    from zomboss.target import config_key

    t = get_target("vta")
    wl = t.workload("dense_128")
    store = Store(tmp_path / "z.sqlite")
    guided = solve(t, wl, {}, SolveConfig(budget=8), store=store)
    store.put(t.name, wl.id, "solve:cost:8:0", config_key(t.name, {}), True, guided.to_json())
    res = exhaustive(t, wl, {}, store=store)
    store.close()
    assert res.complete and res.cycles <= guided.cycles
    if res.cycles == guided.cycles:  # the stored winner came first, so no later tie replaces it
        assert res.source == "stored winner"


def test_a_stored_winner_the_kb_rejects_is_skipped_with_a_warning(tmp_path, capsys):
    from zomboss.target import config_key

    t = get_target("vta")
    wl = t.workload("dense_128")
    c0 = t.reference_mappings(wl, {})["library"].to_json()
    illegal = {**c0, "knobs": {**c0["knobs"], "tile_b": 5}}  # tile_b must divide M = 128
    store = Store(tmp_path / "z.sqlite")
    payload = {"verified": True, "verified_by": "full", "cycles": 1, "mapping": illegal}
    store.put(t.name, wl.id, "solve:cost:8:0", config_key(t.name, {}), True, payload)
    res = exhaustive(t, wl, {}, store=store)
    store.close()
    assert res.complete and res.source != "stored winner"
    assert "stored solve:cost:8:0 winner breaks map.tile_b" in capsys.readouterr().err
