"""`zomboss bench --guide llm --compare-direct` against one loopback server: the guide's rounds
and the direct agent's turns both run, every token the server reported is accounted to the
right side, the report compares them, and the key appears nowhere."""

from __future__ import annotations

import json
from typing import Any

from tests.llm.conftest import KEY
from tests.llm.direct_policy import direct_policy
from tests.llm.server import Loopback, both, is_direct, sensible
from zomboss.app import main

WID = "rms_4x384"


def test_compare_direct_accounts_both_sides(tmp_path, capsys, monkeypatch):
    served: list[tuple[bool, int]] = []

    def policy(body: dict[str, Any], i: int):
        action = both(sensible, direct_policy)(body, i)
        served.append((is_direct(body), action["json"]["usage"]["total_tokens"]))
        return action

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    db, report = tmp_path / "r.sqlite", tmp_path / "report"
    with Loopback(policy) as srv:
        args = ["bench", "--suite", "plena", "--only", WID, "--guide", "llm", "--budget", "3", "--compare-direct"]
        args += ["--llm-base-url", srv.base_url, "--llm-model", "m", "--llm-record", str(tmp_path / "run.jsonl")]
        rc = main([*args, "--db", str(db), "--report", str(report), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    (row,) = out["direct"]
    guide_tokens = sum(n for d, n in served if not d)
    direct_tokens = sum(n for d, n in served if d)
    assert guide_tokens > 0 and direct_tokens > 0
    assert (row["zomboss_tokens"], row["direct_tokens"]) == (guide_tokens, direct_tokens)
    assert row["zomboss_verified"] and not row["direct_verified"] and row["direct_reason"]
    assert row["reduction"] == 1 - guide_tokens / direct_tokens
    text = (report / "report.md").read_text()
    assert "against direct generation" in text and f"{direct_tokens:,}" in text
    # one recording per instance and run, and the key in none of them nor in the store
    recordings = sorted(p.name for p in tmp_path.glob("run.*.jsonl"))
    assert recordings == [f"run.plena.{WID}.direct.jsonl", f"run.plena.{WID}.solve.jsonl"]
    for p in [db, *tmp_path.glob("run.*.jsonl"), report / "report.md"]:
        assert KEY.encode() not in p.read_bytes()
