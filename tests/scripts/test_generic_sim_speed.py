"""scripts/generic_sim_speed.py: one small default per target, every simulator and mode in one run."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import load_script


def test_one_default_per_target_gives_every_row_and_the_summary(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    bench = load_script("generic_sim_speed")
    out = tmp_path / "speed.json"
    assert (
        bench.main(
            ["--gemmini", "odd_pad", "--plena", "rope_4x64", "--vta", "dense_128", "--reps", "1", "--json", str(out)]
        )
        == 0
    )
    got = json.loads(out.read_text())
    rows = {(r["target"], r["simulator"], r["mode"]): r for r in got["rows"]}
    for target in ("gemmini", "plena"):
        for sim in ("generic", "hand-written"):
            for mode in ("functional", "timing", "extrapolated"):
                assert (target, sim, mode) in rows, (target, sim, mode)
        generic = [rows[target, "generic", m] for m in ("functional", "timing", "extrapolated")]
        assert len({r["cycles"] for r in generic}) == 1  # one doc, one schedule, whatever the mode
        assert len({r["instructions"] for r in generic[:2]}) == 1
        assert generic[2]["equivalent"] == generic[1]["instructions"] >= generic[2]["instructions"]
        assert rows[target, "hand-written", "functional"]["verified"] is True
    assert rows["gemmini", "generic", "functional"]["verified"] is True
    assert rows["vta", "generic", "functional"]["verified"] is True
    assert {s["target"] for s in got["summary"]} == {"gemmini", "plena", "vta"}
    assert "summary" in capsys.readouterr().out


def test_the_interpreter_rows_time_the_same_schedule(tmp_path: Path) -> None:
    bench = load_script("generic_sim_speed")
    out = tmp_path / "speed.json"
    argv = ["--gemmini", "", "--plena", "rope_4x64", "--vta", "", "--no-hand", "--interpreter", "--json", str(out)]
    assert bench.main(argv) == 0
    rows = json.loads(out.read_text())["rows"]
    modes = {(r["simulator"], r["mode"]) for r in rows}
    assert modes == {(s, m) for s in ("interpreter", "generic") for m in ("functional", "timing")} | {
        ("generic", "extrapolated")
    }
    assert len({r["cycles"] for r in rows}) == 1
    assert len({r["equivalent"] or r["instructions"] for r in rows}) == 1


def test_all_selects_every_suite_default_of_the_three_targets(monkeypatch) -> None:  # noqa: ANN001
    from zomboss.target import get_target

    bench = load_script("generic_sim_speed")
    seen: dict[str, list[str]] = {"gemmini": [], "plena": [], "vta": []}
    for name in seen:  # record what would be simulated, simulate nothing
        monkeypatch.setattr(bench, name, lambda wid, hand, name=name: seen[name].append(wid) or [])
    assert bench.main(["--all", "--gemmini", "odd_pad"]) == 0
    assert seen == {name: [w.id for w in get_target(name).suite()] for name in seen}


def test_timing_only_leaves_out_the_functional_rows(tmp_path: Path) -> None:
    bench = load_script("generic_sim_speed")
    out = tmp_path / "speed.json"
    argv = ["--gemmini", "odd_pad", "--plena", "rope_4x64", "--vta", "dense_128", "--timing-only", "--reps", "1"]
    assert bench.main([*argv, "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert {r["mode"] for r in rows} == {"timing", "extrapolated"}
    assert {(r["target"], r["simulator"]) for r in rows} == {
        ("gemmini", "generic"),
        ("gemmini", "hand-written"),
        ("plena", "generic"),
        ("plena", "hand-written"),
        ("vta", "generic"),
    }
    for r in rows:
        if r["mode"] == "extrapolated":
            timed = next(
                t for t in rows if (t["target"], t["simulator"], t["mode"]) == (r["target"], r["simulator"], "timing")
            )
            assert r["equivalent"] == timed["instructions"] and r["cycles"] == timed["cycles"]
