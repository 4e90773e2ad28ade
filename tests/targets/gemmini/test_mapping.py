"""Mapping records: knob domains, JSON round trips, readable errors, the reference mappings."""

from __future__ import annotations

import json

import pytest
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.mapping import (
    ConvMapping,
    MappingError,
    MatmulMapping,
    block_loads,
    exo_style,
    from_json,
    knob_table,
)
from zomboss.targets.gemmini.mapping_legality import IllegalMapping, check_mapping, mapping_violations
from zomboss.targets.gemmini.suite import SUITE, workload

CFG = GemminiConfig()


def test_json_round_trip_both_ops() -> None:
    mm = MatmulMapping(tile_i=4, tile_j=2, tile_k=8, order="jik", dataflow="os", weight_reuse=False)
    cv = ConvMapping(tile_b=1, tile_orows=3, tile_ocols=16, tile_och=32, tile_ich=16, tile_krows=3, tile_kcols=3)
    for m in (mm, cv):
        text = json.dumps(m.to_json())
        assert from_json(json.loads(text)) == m


def test_matmul_json_names_tiles_in_dim_blocks() -> None:
    j = MatmulMapping(tile_i=5, tile_j=6, tile_k=32).to_json()
    assert (j["op"], j["tile_i"], j["tile_j"], j["tile_k"]) == ("matmul", 5, 6, 32)


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        ({"order": "ijj"}, "'order' = 'ijj'"),
        ({"tile_i": 0}, "'tile_i' = 0 is outside 1..65535"),
        ({"mvin_blocks_a": 5}, "'mvin_blocks_a' = 5"),
        ({"weight_reuse": 1}, "'weight_reuse' = 1"),
        ({"tile_k": "8"}, "'tile_k' = '8' must be an integer"),
        ({"bogus": 1}, "unknown field 'bogus'"),
        ({"op": "gemv"}, "'op' = 'gemv'"),
    ],
)
def test_bad_field_is_named(patch: dict, needle: str) -> None:
    data = {**MatmulMapping(tile_i=1, tile_j=1, tile_k=1).to_json(), **patch}
    with pytest.raises(MappingError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        from_json(data)


def test_missing_tile_is_named() -> None:
    data = MatmulMapping(tile_i=1, tile_j=1, tile_k=1).to_json()
    del data["tile_j"]
    with pytest.raises(MappingError, match="missing field 'tile_j'"):
        from_json(data)


def test_knob_table_documents_every_field() -> None:
    names = {row["name"] for row in knob_table("matmul")}
    assert names == set(MatmulMapping(tile_i=1, tile_j=1, tile_k=1).to_json()) - {"op"}
    assert all(row["domain"] and row["doc"] for row in knob_table("conv"))


def test_canonical_drops_knobs_the_fsm_decides() -> None:
    a = MatmulMapping(loop="hw", tile_i=2, tile_j=2, tile_k=2, mvin_blocks_a=1, acc_buffers=3)
    b = MatmulMapping(loop="hw", tile_i=2, tile_j=2, tile_k=2)
    assert a != b and a.canonical() == b.canonical()


def test_validator_reports_capacity_with_values() -> None:
    wl = workload("mm512")
    m = MatmulMapping(tile_i=32, tile_j=32, tile_k=32, buffers_a=2, buffers_b=2)
    rules = {v.rule: v for v in mapping_violations(m, wl, CFG)}
    assert rules["map.spad_fit"].values == {
        "loop": "sw",
        "buffers_a": 2,
        "tile_i": 32,
        "tile_k": 32,
        "buffers_b": 2,
        "tile_j": 32,
        "dim": 16,
        "sp_rows": 16384,
    }  # (2*32*32 + 2*32*32) * 16 = 65536 rows
    with pytest.raises(IllegalMapping, match="map.spad_fit"):
        check_mapping(m, wl, CFG)


def test_validator_knows_the_hw_loop_limits() -> None:
    wl = workload("mm512")
    m = MatmulMapping(loop="hw", tile_i=8, tile_j=8, tile_k=8, order="kij")
    rules = {v.rule for v in mapping_violations(m, wl, CFG)}
    assert {"map.hw_acc_fit", "map.hw_k_innermost", "map.hw_reuse_a", "map.hw_reuse_b"} <= rules


def test_validator_conv_rules() -> None:
    wl = workload("conv_s2")
    m = ConvMapping(tile_b=1, tile_orows=4, tile_ocols=28, tile_och=24, tile_ich=128, tile_krows=2, tile_kcols=3)
    rules = {v.rule for v in mapping_violations(m, wl, CFG)}
    assert {"map.conv_sw_kernel", "map.tile_och_chunks"} <= rules


def test_exo_style_is_legal_for_the_whole_suite() -> None:
    for wl in SUITE:
        m = exo_style(wl, CFG)
        assert mapping_violations(m, wl, CFG) == [], wl.id
        assert (m.loop, m.hoist_config, m.ld_states, m.mvin_blocks_a, m.mvout_blocks) == ("sw", True, 3, 4, 1)


def test_exo_style_mm512_is_the_exo_schedule() -> None:
    """Reference §8.1: 256x512 A and 512x256 B blocks fill the scratchpad, A moved once, B twice."""
    m = exo_style(workload("mm512"), CFG)
    assert (m.tile_i, m.tile_j, m.tile_k, m.buffers_a, m.buffers_b) == (16, 16, 32, 1, 1)
    assert (m.tile_i * m.tile_k + m.tile_k * m.tile_j) * CFG.dim == CFG.sp_rows
    blocks = {"i": 2, "j": 2, "k": 1}
    assert block_loads(m.order, blocks, "ik", m.reuse_a, m.buffers_a) == 2  # each A block once
    assert block_loads(m.order, blocks, "kj", m.reuse_b, m.buffers_b) == 4  # each B block twice
    assert m.acc_init == "zero" and not m.weight_reuse


def test_block_loads_counts_reuse() -> None:
    blocks = {"i": 3, "j": 2, "k": 1}
    assert block_loads("ijk", blocks, "ik", True, 1) == 3
    assert block_loads("jik", blocks, "ik", True, 1) == 6
    assert block_loads("jik", blocks, "ik", True, 2) == 6
    assert block_loads("ijk", blocks, "ik", False, 1) == 6
