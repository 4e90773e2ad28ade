"""scripts/validate_dosa_tilings.py: its statistics and options (the validation itself is a script
run, reported in docs/targets/gemmini-timing.md)."""

from __future__ import annotations

import json
import math

import pytest

from tests.support import load_script


@pytest.fixture(scope="module")
def v():
    return load_script("validate_dosa_tilings")


def test_spearman_is_undefined_rather_than_a_crash_for_one_row(v):
    assert v.spearman([1.0, 2.0, 3.0], [10.0, 30.0, 20.0]) == pytest.approx(0.5)
    assert math.isnan(v.spearman([5.0], [7.0]))
    assert math.isnan(v.spearman([1.0, 1.0], [2.0, 3.0]))


def _row(n, network, cycles, tile_k):
    return {
        "row": n,
        "network": network,
        "op": "conv",
        **dict.fromkeys("CKPQRS", 8),
        "stride": 1,
        **{f"tile_{d}": 1 for d in "NQPSRC"},
        "tile_K": tile_k,
        "perm": "CRSKPQN",
        "tiled_cycles": cycles,
    }


def test_pairs_across_networks_count_under_the_first_rows_network(v):
    # one layer shape run by two networks: the cross pair (0, 2) counts under resnet50
    rows = [_row(0, "resnet50", 100, 1), _row(1, "resnet50", 100, 1), _row(2, "retinanet", 200, 2)]
    model = {0: 10, 1: 10, 2: 5}  # orders both pairs wrongly
    assert v.pair_agreement(rows, model) == (0, 2)
    assert v.pair_agreement(rows, model, distinct=True) == (0, 2)
    assert v.pair_agreement(rows, model, distinct=True, network="resnet50") == (0, 2)
    assert v.pair_agreement(rows, model, distinct=True, network="retinanet") == (0, 0)
    repeat = [_row(0, "unet", 100, 1), _row(1, "unet", 150, 1)]  # one binary run twice
    assert v.pair_agreement(repeat, {0: 1, 1: 2}) == (1, 1)
    assert v.pair_agreement(repeat, {0: 1, 1: 2}, distinct=True) == (0, 0)


def test_set_changes_a_constant_and_names_a_bad_one(v):
    p = v.with_overrides("firesim-f1-llc", ["rd_latency=125", "max_rd_inflight=8"])
    assert (p.rd_latency, p.max_rd_inflight) == (125.0, 8)
    assert p.wr_latency == v.get_preset("firesim-f1-llc").wr_latency
    assert v.label("firesim-f1-llc", ["rd_latency=125"]) == "firesim-f1-llc[rd_latency=125]"
    assert v.label("firesim-f1-llc", []) == "firesim-f1-llc"
    for bad, said in (("rd_latncy=1", "rd_latncy"), ("rd_latency", "KEY=NUMBER"), ("max_rd_inflight=x", "'x'")):
        with pytest.raises(SystemExit, match=said):
            v.with_overrides("firesim-f1-llc", [bad])


def test_one_row_runs_and_caches_under_its_override_key(v, tmp_path, capsys):
    cache, out = tmp_path / "c.jsonl", tmp_path / "r.json"
    argv = ["--rows", "1-1", "--networks", "bert", "--auto-networks", "bert", "--workers", "1"]
    assert v.main([*argv, "--cache", str(cache), "--json", str(out), "--set", "rd_latency=100"]) == 0
    lines = [json.loads(x) for x in cache.read_text().splitlines()]
    assert {(c["row"], c["kind"], c["preset"]) for c in lines} == {
        (1, "tiled", "firesim-f1-llc[rd_latency=100]"),
        (1, "auto", "firesim-f1-llc[rd_latency=100]"),
    }
    report = json.loads(out.read_text())
    assert report["preset"] == "firesim-f1-llc[rd_latency=100]"
    slower = report["tiled_rows"]["1"][1]
    assert v.main([*argv, "--cache", str(cache), "--json", str(out)]) == 0  # the base preset: not cached
    assert json.loads(out.read_text())["tiled_rows"]["1"][1] < slower
    assert "2 simulations" in capsys.readouterr().out


def test_repeatability_groups_runs_of_one_program(v):
    rows = [_row(0, "resnet50", 100, 1), _row(1, "resnet50", 130, 1), _row(2, "resnet50", 90, 2)]
    for r, auto in zip(rows, (50, 55, 60), strict=True):
        r["auto_cycles"] = auto
    tiled = v.repeatability(rows, "tiled")  # rows 0 and 1 ran one tiling; row 2 another, once
    assert (tiled["groups"], tiled["over_10pct"]) == (1, 1)
    assert tiled["max_spread"] == pytest.approx(0.30)
    auto = v.repeatability(rows, "auto")  # one layer: the library default ran three times
    assert auto["groups"] == 1 and auto["median_spread"] == pytest.approx(0.20)
    assert v.repeatability(rows[2:], "tiled") == {"groups": 0}
