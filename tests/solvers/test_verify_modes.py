"""`solve --verify`: how Candidate-0 and the winner are verified (full, sampled, none, auto), what
the result says about it, and that the store keeps a winner verified otherwise apart from a fully
verified one. The search runs on a one-candidate pool (tests/tiny_pool.py)."""

from __future__ import annotations

import json

import pytest

from tests.tiny_pool import tiny_pool
from zomboss.app import main
from zomboss.errors import ZombossError
from zomboss.results import Store
from zomboss.solvers.search import Runner, SolveConfig, solve
from zomboss.target import config_key, get_target

SPEC = "matmul:M=32,N=32,K=64"


@pytest.fixture(autouse=True)
def _tiny(monkeypatch):
    monkeypatch.setattr("zomboss.solvers.search.build_pool", tiny_pool())


def _solve(tmp_path, verify: str | None, spec: str = SPEC):
    t = get_target("gemmini")
    wl = t.workload(spec)
    cfg = SolveConfig(budget=4) if verify is None else SolveConfig(budget=4, verify=verify)
    return t, wl, solve(t, wl, {}, cfg, store=Store(tmp_path / "s.sqlite"))


def test_sampled_verifies_candidate0_and_the_winner_on_sampled_blocks(tmp_path):
    t, wl, res = _solve(tmp_path, "sampled")
    d = res.to_json()
    assert d["verified"] is True and d["verified_by"] == "sampled" and "verify_reason" not in d
    assert d["candidate"] != "candidate-0" and d["cycles"] < d["default_cycles"] and d["speedup"] > 1
    c0, winner = d["verification"][0], d["verification"][-1]
    assert c0["candidate"] == "candidate-0" and c0["seeds"][0]["verified"] and c0["seeds"][0]["blocks"] >= 1
    assert {s["seed"] for s in winner["seeds"]} == {0, 1} and all(s["verified"] for s in winner["seeds"])
    modes = {tr.mode for tr in Store(tmp_path / "s.sqlite").trials(t.name, wl.id, config_key(t.name, {}))}
    assert modes == {"timing", "sampled:8"}  # nothing simulated whole, nothing stored as `verified`
    again = solve(t, wl, {}, SolveConfig(budget=4, verify="sampled"), store=Store(tmp_path / "s.sqlite"))
    assert again.cached >= again.simulations + 3 and again.to_json()["verification"] == d["verification"]


def test_none_times_only_and_says_so(tmp_path):
    _, _, res = _solve(tmp_path, "none")
    d = res.to_json()
    assert d["verified"] is None and d["verified_by"] == "none"
    assert d["cycles"] < d["default_cycles"] and [v.get("candidate") for v in d["verification"]] == []


def test_full_is_the_default_and_unchanged(tmp_path):
    _, _, res = _solve(tmp_path, None)
    d = res.to_json()
    assert d["verified"] is True and d["verified_by"] == "full" and "verify_reason" not in d
    assert all("cycles" in s for s in d["verification"][-1]["seeds"])


def test_auto_samples_what_is_too_large_to_allocate(tmp_path, monkeypatch):
    monkeypatch.setattr("zomboss.util.inputs.MAX_WORKLOAD_BYTES", 1024)
    spec = "matmul:M=32,N=32,K=64,relu=1"  # an instance no other test in this process has built data for
    _, _, res = _solve(tmp_path, "auto", spec)
    d = res.to_json()
    assert d["verified"] is True and d["verified_by"] == "sampled"
    assert d["verify_reason"].startswith("sampled: ") and "MiB" in d["verify_reason"]
    with pytest.raises(ZombossError, match="operands take"):
        _solve(tmp_path / "full", "full", spec)


def test_the_cli_stores_a_sampled_winner_apart(tmp_path, capsys):
    db = str(tmp_path / "s.sqlite")
    assert main(["solve", "gemmini", SPEC, "--budget", "4", "--verify", "sampled", "--db", db, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["verified_by"] == "sampled"
    kinds = {(r.kind, r.ok) for r in Store(tmp_path / "s.sqlite").rows("gemmini")}
    assert kinds == {("solve:cost:4:0:sampled", True)}
    assert main(["solve", "gemmini", SPEC, "--budget", "4", "--verify", "none", "--db", db]) == 0
    assert "verified_by: none" in capsys.readouterr().out
    kinds = {(r.kind, r.ok) for r in Store(tmp_path / "s.sqlite").rows("gemmini")}
    assert ("solve:cost:4:0:none", False) in kinds
    assert main(["solve", "gemmini", SPEC, "--exhaustive", "--verify", "sampled", "--db", db]) == 2
    assert "exhaustive run verifies its winner whole" in capsys.readouterr().err


def test_a_winner_that_cannot_be_sampled_is_passed_over(tmp_path, monkeypatch):
    """Gemmini slices only hardware-loop kernels: a candidate the target cannot sample is logged
    with the reason and the next one (at worst Candidate-0) is verified instead."""
    real = Runner.sampled

    def sampled(self, m, seed):
        if m["tile_k"] == 2:
            raise ZombossError("only a hardware-loop mapping (loop=hw) can be lowered for some output blocks")
        return real(self, m, seed)

    monkeypatch.setattr(Runner, "sampled", sampled)
    _, _, res = _solve(tmp_path, "sampled")
    d = res.to_json()
    assert d["candidate"] == "candidate-0" and d["verified"] is True and d["verified_by"] == "sampled"
    assert "hardware-loop" in d["verification"][-1]["error"]
