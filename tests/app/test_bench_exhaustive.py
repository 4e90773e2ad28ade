"""`bench --exhaustive` reuses a stored exhaustive result only when it answers the run asked
for: a complete one always, an incomplete (time-limited) one only under a limit no longer than
its own; otherwise the instance runs again, resuming from its stored simulations."""

from __future__ import annotations

import json
from pathlib import Path

from zomboss.app import main
from zomboss.app.bench import reusable

WID = "dense_48x256x256_wrap"


def _bench(db, capsys, *extra: str, kind: str = "--exhaustive") -> dict:
    args = ["bench", "--suite", "vta", "--only", WID, kind, "--workers", "1", "--db", str(db), "--json"]
    assert main([*args, "--report", str(db.parent / "report"), *extra]) == 0
    out = json.loads(capsys.readouterr().out)
    (row,) = out["results"]
    return {**row, "report_md": Path(out["report"]).read_text()}


def _same(a: dict, b: dict) -> bool:
    """The same stored result (the reports differ in their run's wall time)."""
    return {k: v for k, v in a.items() if k != "report_md"} == {k: v for k, v in b.items() if k != "report_md"}


def test_an_incomplete_result_is_not_taken_for_a_proof(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    cut = _bench(db, capsys, "--time-limit", "0.001")
    assert cut["complete"] is False and cut["optimum"] is None and cut["lower_bound"] < cut["best"]
    again = _bench(db, capsys, "--time-limit", "0.001")  # the same limit: the stored answer
    assert _same(again, cut)
    full = _bench(db, capsys)  # no limit: run again to the proof
    assert full["complete"] is True and full["optimum"] == full["best"] == full["lower_bound"] < cut["best"]
    assert _same(_bench(db, capsys, "--time-limit", "0.001"), full)  # a proof answers any limit
    proof = f"| vta | {WID} | yes | {full['best']} | {full['best']} | {full['best']} | 0.00% |"
    assert proof in full["report_md"]
    guided = _bench(db, capsys, "--budget", "2", kind="--guide=cost")  # held to the proven optimum
    dist = guided["best"] / full["best"] - 1
    assert f"| vta | {WID} | {guided['best']} | {full['best']} | {full['best']} | {dist:.2%} |" in guided["report_md"]


def test_reuse_rule():
    assert reusable({"cycles": 5}, None)  # a guided result
    assert reusable({"complete": True}, None)
    assert not reusable({"complete": False, "time_limit_s": 10.0}, None)
    assert reusable({"complete": False, "time_limit_s": 10.0}, 5.0)
    assert not reusable({"complete": False, "time_limit_s": 10.0}, 20.0)
    assert not reusable({"complete": False}, 5.0)  # stored before limits were recorded
