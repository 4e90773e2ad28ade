"""What the command line prints and writes (issue #28): every missing knob of a partial mapping
listed, every written file listed in text and JSON, help texts with real defaults, `zomboss
info` and `--version`, tables that never cut an id, plain output when piped, progress on
stderr only."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys

import pytest
from rich.console import Console

from zomboss.app import main
from zomboss.app.arguments import states_default
from zomboss.app.check import Progress
from zomboss.app.cli import build_parser
from zomboss.app.display import print_table
from zomboss.util.version import extras


def _default_mapping(capsys, target: str, wid: str) -> dict:
    assert main(["default", target, wid, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["mapping"]


# ---- kb check: a partial mapping ----------------------------------------------------------


def test_kb_check_lists_every_missing_knob_with_domain_and_default(tmp_path, capsys):
    m = _default_mapping(capsys, "gemmini", "mm256")
    dropped = ["tile_i", "tile_j", "tile_k"]
    knobs = {k: v for k, v in m["knobs"].items() if k not in dropped}
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"workload": "mm256", "mapping": {"op": m["op"], "knobs": knobs}}))
    assert main(["kb", "check", "gemmini", str(f)]) == 2
    err = capsys.readouterr().err
    for k in dropped:
        assert f"  {k}: 1..65535 (Candidate-0: {m['knobs'][k]})" in err
    assert "lacks 3 active knob(s)" in err
    assert "`zomboss default gemmini mm256 --json`" in err


def test_an_omitted_inactive_knob_is_not_asked_for(tmp_path, capsys):
    """Only active knobs are listed: a knob whose `when` is false may be left out."""
    m = _default_mapping(capsys, "gemmini", "mm256")
    knobs = dict(m["knobs"])
    del knobs["tile_i"]
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"workload": "mm256", "mapping": {"op": m["op"], "knobs": knobs}}))
    assert main(["kb", "check", "gemmini", str(f)]) == 2
    err = capsys.readouterr().err
    assert "lacks 1 active knob(s)" in err and "  tile_i: " in err


# ---- files a command writes ---------------------------------------------------------------


@pytest.mark.parametrize(("target", "workload", "name"), [("gemmini", "mm256", "k.c"), ("plena", "rope_4x64", "k.asm")])
def test_export_lists_every_file_it_writes(tmp_path, capsys, target, workload, name):
    out = tmp_path / name
    assert main(["export", target, workload, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    on_disk = sorted(str(p) for p in tmp_path.iterdir())
    assert sorted(line.removeprefix("wrote ") for line in text.splitlines()) == on_disk
    assert text.splitlines()[0] == f"wrote {out}"
    assert main(["export", target, workload, "-o", str(out), "--json"]) == 0  # again: rewritten, listed again
    d = json.loads(capsys.readouterr().out)
    assert sorted(d["files"]) == on_disk and d["files"][0] == str(out) and d["path"] == str(out)
    if target == "gemmini":
        assert {p.name for p in tmp_path.iterdir()} == {"k.c", "k.asm", "k.asm.json"}


def test_kb_build_lists_the_file_it_writes(tmp_path, capsys):
    out = tmp_path / "t.lp"
    umask = os.umask(0o022)
    try:
        assert main(["kb", "build", "plena", "--out", str(out), "--json"]) == 0
    finally:
        os.umask(umask)
    assert json.loads(capsys.readouterr().out)[0]["files"] == [str(out)]
    assert out.stat().st_mode & 0o777 == 0o644  # like any file the user creates, not the temp file's 0600


# ---- help texts ----------------------------------------------------------------------------


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    out, todo = [], [("zomboss", build_parser())]
    while todo:
        name, p = todo.pop()
        out.append((name, p))
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                todo += [(f"{name} {n}", sub) for n, sub in a.choices.items()]
    return out


def test_every_argument_has_help_and_states_its_default():
    for name, p in _parsers():
        for a in p._actions:
            if isinstance(a, argparse._HelpAction | argparse._SubParsersAction):
                continue
            assert a.help, f"{name} {a.option_strings or a.dest}: no help text"
            if states_default(a):
                text = p.formatter_class(name)._get_help_string(a) or ""
                assert "default" in text, f"{name} {a.option_strings or a.dest}: default {a.default!r} not stated"
        positional = [a for a in p._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]
        for a in positional:
            assert a.metavar and a.metavar[:4].isupper(), f"{name} {a.dest}: metavar {a.metavar!r}"


def test_db_help_states_the_real_default(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZOMBOSS_RESULTS", str(tmp_path / "res"))
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    help_text = "".join(capsys.readouterr().out.split())  # argparse wraps at spaces and hyphens
    assert f"(default:{tmp_path / 'res' / 'zomboss.sqlite'}" in help_text
    assert "or results/" not in help_text


# ---- zomboss info and --version ------------------------------------------------------------


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("zomboss ") and "unknown" not in out.split()[1]


def test_info_says_where_things_are_and_what_is_installed(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZOMBOSS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ZOMBOSS_RESULTS", str(tmp_path / "res"))
    assert main(["info", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["kb_cache"] == str(tmp_path / "cache" / "kb") and d["results"] == str(tmp_path / "res")
    assert d["db"] == str(tmp_path / "res" / "zomboss.sqlite")
    assert {"gemmini", "plena", "vta"} <= set(d["targets"])
    assert set(d["extras"]) == {"plot", "llm", "ray"} and d["version"]
    assert "commit" in d
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    assert str(tmp_path / "cache" / "kb") in text and "gemmini" in text and "plot" in text


def test_extras_reports_a_missing_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    assert extras()["plot"] is False


# ---- tables, plain output, progress --------------------------------------------------------


def _ids(capsys) -> list[str]:
    assert main(["workloads", "--json"]) == 0
    return [r["id"] for r in json.loads(capsys.readouterr().out)]


def test_piped_tables_at_100_columns_cut_no_id(monkeypatch, capsys):
    ids = _ids(capsys)
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["workloads"]) == 0  # stdout is captured: not a terminal
    out = capsys.readouterr().out
    words = set(out.split())
    assert all(i in words for i in ids) and "…" not in out
    assert not set(out) & set("│┃━─┏┡└"), "plain output draws no boxes"


def test_terminal_tables_at_100_columns_cut_no_id(capsys):
    ids = _ids(capsys)
    buf = io.StringIO()
    rows = [("gemmini", i, "matmul", "M=1024,N=1024,K=1024,bias=1,relu=1,extra=" + "x" * 40) for i in ids]
    print_table(
        "suite instances",
        ("target", "id", "op", "shape"),
        rows,
        plain=False,
        ids=("target", "id", "op"),
        console=Console(file=buf, width=100),
    )
    out = buf.getvalue()
    assert all(i in out for i in ids) and "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_plain_flag(capsys):
    assert main(["workloads", "plena", "--plain"]) == 0
    out = capsys.readouterr().out
    assert "rope_4x64" in out and not set(out) & set("│┃━─")


def test_check_progress_on_a_terminal_is_rich_progress():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    p = Progress("p.asm", out, every=0.0)
    p(65536)
    p(131072, final=True)
    text = out.getvalue()
    assert "131,072 instructions checked" in text and "\x1b[2K" in text  # rich's live line


def test_bench_progress_goes_to_stderr(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZOMBOSS_RESULTS", str(tmp_path / "res"))
    args = ["bench", "--suite", "plena", "--only", "rope_4x64", "--defaults-only", "--workers", "1"]
    assert main([*args, "--db", str(tmp_path / "s.sqlite")]) == 0
    cap = capsys.readouterr()
    assert "━" not in cap.out and "bench default" not in cap.out
    assert "━" in cap.err or os.environ.get("TERM") == "dumb"


def test_an_incomplete_exhaustive_run_says_so_in_its_text(tmp_path, capsys):
    """Issue #29, item 14: a time-limited exhaustive run printed `legal_mappings: 0` (the
    mappings sized before the stop) and never said it was incomplete."""
    argv = ["solve", "vta", "dense_128", "--exhaustive", "--time-limit", "0.01", "--db", str(tmp_path / "r.db")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "complete: no: stopped before every legal mapping was simulated or pruned" in out
    assert "legal_mappings: incomplete: " in out and "legal_mappings: 0" not in out
    assert main([*argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["complete"] is False and isinstance(d["legal_mappings"], int)  # the JSON keeps its fields
