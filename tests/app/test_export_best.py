"""`zomboss export TARGET WORKLOAD --best`: the verified winner the results store holds for the
instance under the current KB and preset (the config key `solve` stores under), written exactly
as `--mapping` writes that mapping; one clear refusal when there is none. The search runs on a
one-candidate pool (tests/tiny_pool.py)."""

from __future__ import annotations

import json

import pytest

from tests.tiny_pool import tiny_pool
from zomboss.app import main
from zomboss.results import Store

SPEC = "matmul:M=32,N=32,K=64"


@pytest.fixture(autouse=True)
def _tiny(monkeypatch):
    monkeypatch.setattr("zomboss.solvers.search.build_pool", tiny_pool())


def _refusal(capsys, *args: str) -> str:
    assert main(["export", "gemmini", SPEC, *args]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and len(cap.err.strip().splitlines()) == 1 and "Traceback" not in cap.err
    return cap.err


def test_refused_without_a_verified_winner(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    out = tmp_path / "k.c"
    assert "no results store" in _refusal(capsys, "--best", "--db", str(db), "-o", str(out))
    assert not db.exists() and not out.exists()
    assert main(["solve", "gemmini", SPEC, "--budget", "4", "--verify", "none", "--db", str(db)]) == 0
    capsys.readouterr()
    err = _refusal(capsys, "--best", "--db", str(db), "-o", str(out))  # timed only: not a verified winner
    assert "no verified winner of gemmini matmul:M=32,N=32,K=64" in err and "run `zomboss solve" in err
    assert main(["solve", "gemmini", SPEC, "--budget", "4", "--db", str(db)]) == 0
    capsys.readouterr()
    # another KB (a parameter override) has its own results: the winner above is not its winner
    assert "--param overrides" in _refusal(capsys, "--best", "--db", str(db), "-o", str(out), "--param", "dim=8")
    assert not out.exists()


def test_best_and_mapping_exclude_each_other(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:  # argparse's usage error
        main(["export", "gemmini", SPEC, "--best", "--mapping", "m.json", "-o", str(tmp_path / "k.c")])
    assert e.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_exports_the_winner_of_a_solve(tmp_path, capsys):
    db = str(tmp_path / "s.sqlite")
    assert main(["solve", "gemmini", SPEC, "--budget", "4", "--db", db, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["verified_by"] == "full" and res["candidate"] != "candidate-0"
    (tmp_path / "res.json").write_text(json.dumps(res))
    best, given = tmp_path / "best.c", tmp_path / "given.c"
    assert main(["export", "gemmini", SPEC, "--best", "--db", db, "-o", str(best), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["best"]["kind"] == "solve:cost:4:0" and d["best"]["cycles"] == res["cycles"]
    assert main(["export", "gemmini", SPEC, "--mapping", str(tmp_path / "res.json"), "-o", str(given)]) == 0
    capsys.readouterr()
    assert best.read_text() == given.read_text()
    assert best.with_suffix(".asm").read_text() == given.with_suffix(".asm").read_text()
    default = tmp_path / "c0.c"
    assert main(["export", "gemmini", SPEC, "-o", str(default)]) == 0
    assert default.read_text() != best.read_text()


def test_a_fully_verified_winner_before_a_sampled_one(tmp_path, capsys):
    db = str(tmp_path / "s.sqlite")
    out = str(tmp_path / "k.c")
    assert main(["solve", "gemmini", SPEC, "--budget", "4", "--verify", "sampled", "--db", db]) == 0
    capsys.readouterr()
    assert main(["export", "gemmini", SPEC, "--best", "--db", db, "-o", out]) == 0
    assert "verified on sampled output blocks only" in capsys.readouterr().out
    # a faster row verified by sampling does not beat a fully verified one
    store = Store(tmp_path / "s.sqlite")
    row = next(store.rows("gemmini"))
    store.put("gemmini", row.workload, "solve:cost:9:0:sampled", row.config, True, {**row.payload, "cycles": 1})
    assert main(["solve", "gemmini", SPEC, "--budget", "4", "--db", db]) == 0
    capsys.readouterr()
    assert main(["export", "gemmini", SPEC, "--best", "--db", db, "-o", out, "--json"]) == 0
    best = json.loads(capsys.readouterr().out)["best"]
    assert best["verified_by"] == "full" and best["kind"] == "solve:cost:4:0"
    winner = store.winner("gemmini", row.workload, row.config)
    assert winner is not None and winner.kind == "solve:cost:4:0"
    store.close()
