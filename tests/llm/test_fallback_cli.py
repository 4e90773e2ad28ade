"""`solve --guide llm` against an endpoint that cannot answer: the fallback to the cost guide is
said on stderr and in the text output, `guide_ran` says what proposed the kernels, and
`--strict-llm` makes it an error (exit 3) while the verified kernel is still stored."""

from __future__ import annotations

import json

import pytest

from zomboss.app import main

UNREACHABLE = ["--guide", "llm", "--llm-base-url", "http://127.0.0.1:9", "--llm-timeout", "0.3", "--budget", "2"]


def test_a_fallback_is_said_and_strict_llm_makes_it_an_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    db = tmp_path / "z.sqlite"
    assert main(["solve", "plena", "rope_4x64", *UNREACHABLE, "--db", str(db), "--strict-llm"]) == 3
    out, err = capsys.readouterr()
    assert "zomboss: llm guide: fell back to the cost guide" in err and "--strict-llm" in err
    assert "guide_ran: llm→cost" in out and "guide_note: fell back" in out
    assert "sk-test-not-a-key" not in out + err


@pytest.mark.slow
def test_without_strict_llm_the_fallback_exits_0_and_the_json_says_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    assert main(["solve", "plena", "rope_4x64", *UNREACHABLE, "--db", str(tmp_path / "z.sqlite"), "--json"]) == 0
    out, err = capsys.readouterr()
    d = json.loads(out)
    assert d["guide"] == "llm" and d["guide_ran"] == "llm→cost" and d["verified"] is True
    assert "fell back" in err
