"""`--fresh` forgets only the stored runs of the same kind (guided, exhaustive, defaults, direct)
unless `--fresh=all`: a fresh guided search never deletes an exhaustive optimum."""

from __future__ import annotations

import json

import pytest

from tests.tiny_pool import tiny_pool
from zomboss.app import main
from zomboss.app.bench import run_bench
from zomboss.results import Store
from zomboss.results.store import kind_family
from zomboss.target import config_key

SPEC = "matmul:M=32,N=32,K=64"
WID = "matmul:M=32,N=32,K=64,bias=0,relu=0"  # the id `solve` stores it under


@pytest.fixture(autouse=True)
def _tiny(monkeypatch):
    monkeypatch.setattr("zomboss.solvers.search.build_pool", tiny_pool())


def _seed_optimum(db, workload: str = WID) -> str:
    """An exhaustive optimum and its trial in the store, as `solve --exhaustive` leaves them."""
    key = config_key("gemmini", {})
    store = Store(db)
    store.put("gemmini", workload, "exhaustive", key, True, {"cycles": 1000, "optimum_cycles": 1000})
    store.put_trial(
        "gemmini", workload, key, "m-exh", "timing", 0, cycles=1000, verified=None, guide="exhaustive",
        wall_s=0.1, tokens=None, payload={},
    )  # fmt: skip
    store.close()
    return key


def _kinds(db, key: str, workload: str = WID) -> set[str]:
    store = Store(db)
    try:
        return {r.kind for r in store.rows("gemmini") if r.workload == workload and r.config == key}
    finally:
        store.close()


def test_a_fresh_guided_solve_keeps_the_exhaustive_optimum(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    key = _seed_optimum(db)
    args = ["solve", "gemmini", SPEC, "--budget", "2", "--verify", "none", "--db", str(db), "--json"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["files"] == [str(db)]  # what solve wrote
    assert _kinds(db, key) == {"exhaustive", "solve:cost:2:0:none"}
    assert main([*args, "--fresh"]) == 0  # forgets the guided run, not the optimum
    capsys.readouterr()
    assert "exhaustive" in _kinds(db, key)
    store = Store(db)
    assert [t.guide for t in store.trials("gemmini", WID, key) if t.mapping == "m-exh"] == ["exhaustive"]
    store.close()
    assert main([*args, "--fresh=all"]) == 0  # every kind
    capsys.readouterr()
    assert _kinds(db, key) == {"solve:cost:2:0:none"}


def test_fresh_takes_only_kind_or_all(capsys):
    with pytest.raises(SystemExit) as e:
        main(["solve", "gemmini", SPEC, "--fresh=some"])
    assert e.value.code == 2 and "--fresh" in capsys.readouterr().err


def test_forget_one_family_of_runs(tmp_path):
    db = tmp_path / "s.sqlite"
    store = Store(db)
    for kind in ("default", "solve:cost:32:0", "solve:llm:8:1", "exhaustive", "direct"):
        store.put("t", "w", kind, "c", True, {"cycles": 1})
    store.put("t", "other", "solve:cost:32:0", "c", True, {"cycles": 1})
    for guide in ("cost", "verify", "exhaustive", "direct"):
        store.put_trial(
            "t", "w", "c", f"m-{guide}", "timing", 0, cycles=1, verified=None, guide=guide, wall_s=0.0,
            tokens=None, payload={},
        )  # fmt: skip
    store.forget("t", "w", "c", "guided")
    assert {r.kind for r in store.rows("t") if r.workload == "w"} == {"default", "exhaustive", "direct"}
    assert {t.guide for t in store.trials("t", "w", "c")} == {"exhaustive", "direct"}
    assert [r.workload for r in store.rows("t") if r.kind.startswith("solve:")] == ["other"]
    store.forget("t", "w", "c", "exhaustive")
    assert {r.kind for r in store.rows("t") if r.workload == "w"} == {"default", "direct"}
    store.forget("t", "w", "c", "all")
    assert not [r for r in store.rows("t") if r.workload == "w"] and not store.trials("t", "w", "c")
    with pytest.raises(ValueError, match="unknown family"):
        store.forget("t", "w", "c", "bogus")
    store.close()
    assert [kind_family(k) for k in ("solve:cost:1:0:none", "exhaustive", "default", "direct")] == [
        "guided",
        "exhaustive",
        "default",
        "direct",
    ]


def test_a_fresh_bench_of_defaults_keeps_the_searches(tmp_path):
    db = tmp_path / "s.sqlite"
    key = config_key("plena", {})
    store = Store(db)
    store.put("plena", "rope_4x64", "exhaustive", key, True, {"cycles": 300, "optimum_cycles": 300})
    store.put("plena", "rope_4x64", "default", key, True, {"cycles": 322, "verified": True, "stale": 1})
    store.close()
    out = run_bench([("plena", "rope_4x64")], db, kind="default", fresh="kind", progress=False)
    assert "stale" not in out[("plena", "rope_4x64")]  # recomputed
    store = Store(db)
    assert {r.kind for r in store.rows("plena")} == {"exhaustive", "default"}
    store.close()
    run_bench([("plena", "rope_4x64")], db, kind="default", fresh="all", progress=False)
    store = Store(db)
    assert {r.kind for r in store.rows("plena")} == {"default"}
    store.close()
