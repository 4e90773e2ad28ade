"""scripts/gemmini_wins.py: each win's mechanism and its dependence on the assumed CPI, read
from a results store (the report itself is a script run, benchmarks/search/gemmini_wins.md)."""

from __future__ import annotations

import json

import pytest

from tests.support import load_script
from zomboss.results import Store
from zomboss.target import config_key, get_target

SPEC = "mm256"


@pytest.fixture(scope="module")
def wins():
    return load_script("gemmini_wins")


def test_a_cpu_issued_stream_depends_on_the_cpi_and_candidate0_does_not(wins):
    t = get_target("gemmini")
    wl = t.workload(SPEC)
    refs = t.reference_mappings(wl, {})
    stream = wins.win_of(t, wl, refs["exo"].to_json())
    assert stream.issued_by == "CPU, straight C" and stream.commands > 1000
    assert stream.by_cpi[0] == pytest.approx(stream.speedup)
    assert stream.by_cpi[-1] < stream.by_cpi[0]  # a slower core makes the CPU-issued stream slower
    assert "loop" in stream.changed
    same = wins.win_of(t, wl, refs["library"].to_json())
    assert same.speedup == 1.0 and same.changed == () and not same.sensitive and same.issued_by == "loops"
    moved = wins.Win("w", 1.3, ("loop",), {"memory": (10, 5)}, "CPU, table C", 30000, (1.3, 1.1, 0.9, 0.7))
    assert moved.sensitive and not same.sensitive
    text = wins.markdown([moved, same], "firesim-f1-llc")
    assert "on `firesim-f1-llc`" in text
    assert "| w | 1.30x | CPU, table C | 30,000 |" in text and "| yes | memory -5 cycles; knobs: loop |" in text
    assert "| mm256 | 1.00x | loops |" in text and "| no | - |" in text


def test_main_reads_the_winner_under_the_current_kb_and_skips_instances_without_one(wins, tmp_path, capsys):
    t = get_target("gemmini")
    wl = t.workload(SPEC)
    db = tmp_path / "s.sqlite"
    store = Store(db)
    knobs = t.reference_mappings(wl, {})["exo"].to_json()["knobs"]
    store.put(
        "gemmini",
        wl.id,
        "solve:cost:32:0",
        config_key("gemmini", {}),
        True,
        {"verified": True, "cycles": 1, "mapping": {"op": wl.op, "knobs": knobs}},
    )
    store.close()
    assert wins.main(["--db", str(db), "--only", SPEC, "mm512"]) == 0
    out, err = capsys.readouterr()
    assert "| mm256 | " in out and "CPU, straight C" in out
    assert "mm512: no verified winner" in err
    with pytest.raises(SystemExit, match="no results store"):
        wins.main(["--db", str(tmp_path / "missing.sqlite")])


def test_current_reads_the_current_rtl_run_on_its_preset(wins, tmp_path, capsys):
    t = get_target("gemmini")
    wl = t.workload(SPEC)
    params = {"loop_spad_ids": 1, "first_layer_opts": 1, "os_dataflow": 1}
    db = tmp_path / "s.sqlite"
    store = Store(db)
    m = t.reference_mappings(wl, params)["library"].to_json()
    store.put("gemmini", wl.id, "solve:cost:32:0", config_key("gemmini", params), True,
              {"verified": True, "cycles": 1, "mapping": m})  # fmt: skip
    store.close()
    out_json = tmp_path / "w.json"
    assert wins.main(["--db", str(db), "--current", "--only", SPEC, "--mappings", str(out_json)]) == 0
    saved = json.loads(out_json.read_text())
    assert saved["preset"] == "firesim-f1-llc-current" and saved["params"] == params
    assert saved["winners"] == {"mm256": m}
    out = capsys.readouterr().out
    assert "on `firesim-f1-llc-current`" in out and "| mm256 | 1.00x | loops |" in out
    assert wins.main(["--db", str(db), "--only", SPEC]) == 0  # the default preset's run: none stored
    assert "| mm256 |" not in capsys.readouterr().out
