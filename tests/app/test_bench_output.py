"""`zomboss bench` writes each report into a folder of its own under the results folder, named
after the run, with `latest` pointing at the newest, and lists every file it wrote."""

from __future__ import annotations

import json

from zomboss.app import main

ARGS = ["bench", "--suite", "plena", "--only", "rope_4x64", "--defaults-only", "--workers", "1"]


def test_benches_do_not_overwrite_each_other(tmp_path, monkeypatch, capsys):
    res = tmp_path / "res"
    monkeypatch.setenv("ZOMBOSS_RESULTS", str(res))
    assert main([*ARGS, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main([*ARGS, "--fresh"]) == 0
    text = capsys.readouterr().out
    second = [line.removeprefix("wrote ") for line in text.splitlines() if line.startswith("wrote ")]
    one, two = (res / "bench" / p for p in sorted(p.name for p in (res / "bench").iterdir() if p.name != "latest"))
    assert first["report"] == str(one / "report.md") and str(two / "report.md") in second
    assert one.name.endswith("_default_plena") and "T" in one.name.split("_")[0]
    assert (res / "bench" / "latest").resolve() == two.resolve()
    assert not (res / "report.md").exists()  # nothing at the top level to overwrite
    for files, folder in ((first["files"], one), (second, two)):
        assert str(res / "zomboss.sqlite") in files and str(folder / "report.md") in files
        assert {str(p) for p in folder.iterdir()} <= set(files)
        assert str(res / "bench" / "latest") in files


def test_report_flag_writes_where_it_is_told(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZOMBOSS_RESULTS", str(tmp_path / "res"))
    out = tmp_path / "mine"
    assert main([*ARGS, "--report", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["report"] == str(out / "report.md") and not (tmp_path / "res" / "bench").exists()
    assert {str(p) for p in out.iterdir()} <= set(d["files"])
