"""Gemmini mappings are points of the doc's space: the lowering's view declares nothing of its
own, mappings round-trip through JSON and come out of clingo + CP-SAT ready to lower, the
constraints refuse what the lowering cannot do (naming rule, line and values), the reference
mappings are legal, and every skeleton clingo counts is a different kernel."""

from __future__ import annotations

import functools
import itertools
import json
from collections import defaultdict
from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zomboss.targets.gemmini import TARGET
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.mapping import ConvView, MatmulView, block_loads, exo_style, library_default, view

from zomboss import expr as ex
from zomboss.mapping import IllegalMapping, MappingError, space
from zomboss.solvers.space import SizingModel, skeletons
from zomboss.target import Mode
from zomboss.workload import Workload

from .conftest import RTL_FEATURES

CFG = GemminiConfig.default()
# the skeleton tests cover pinned halves under hardware loops, first-layer pixels and the OS
# dataflow, which need an RTL with them: the current RTL's KB
KB_ALL = TARGET.kb(RTL_FEATURES)
KB = CFG.kb()


def sp(op: str = "matmul"):  # noqa: ANN201 - zomboss.mapping.Space
    return space(KB, op)


def rules(wl: Workload, values: dict[str, object]) -> dict[str, dict]:
    m = sp(wl.op).mapping(values, wl.shape)
    return {v.rule: dict(v.values) for v in sp(wl.op).violations(KB, m, wl.shape)}


def stream(**kw: object) -> dict[str, object]:
    """A complete unrolled-stream matmul mapping (the doc's canonical values, then `kw`)."""
    base = {k.name: k.default for k in sp().knobs}
    return {**base, "loop": "sw", "order": "ijk", "reuse_a": "true", "reuse_b": "true", "acc_init": "zero", **kw}


# ---------------------------------------------------------------------------- one declaration


@pytest.mark.parametrize(("op", "cls"), [("matmul", MatmulView), ("conv", ConvView)])
def test_the_lowering_reads_exactly_the_docs_knobs(op: str, cls: type) -> None:
    assert {f.name for f in fields(cls)} - {"mapping"} == {k.name for k in sp(op).knobs}


def test_mvin_widths_follow_max_block_len() -> None:
    for params, width in (({}, 4), ({"dim": 8}, 8), ({"dim": 32}, 2)):
        knob = space(TARGET.kb(params), "matmul").knob("mvin_blocks_a")
        assert (knob.lo, knob.hi, knob.default) == (1, width, width)


def test_json_round_trip_both_ops() -> None:
    for spec in ("mm512", "odd_pad", "conv_s2", "matmul:M=40,N=33,K=20,bias=1"):
        wl = TARGET.workload(spec)
        for m in TARGET.reference_mappings(wl, {}).values():
            data = json.loads(json.dumps(m.to_json()))
            assert data["op"] == wl.op and sp(wl.op).from_json(data, wl.shape) == m
            assert isinstance(data["knobs"]["loop"], str) and isinstance(data["knobs"]["reuse_a"], str)
            assert view(sp(wl.op).from_json(data, wl.shape)) == view(m)


def test_the_library_mapping_is_the_papers_tiling() -> None:
    d = TARGET.reference_mappings(TARGET.workload("mm256"), {})["library"].to_json()
    assert d["op"] == "matmul" and d["knobs"]["loop"] == "hw"
    assert (d["knobs"]["tile_i"], d["knobs"]["tile_j"], d["knobs"]["tile_k"]) == (5, 6, 16)  # reference §6.1


def test_knobs_the_hardware_loops_ignore_take_their_canonical_value() -> None:
    wl = TARGET.workload("mm512")
    lib = library_default(wl, CFG)
    same = sp().mapping({**lib.as_dict(), "mvin_blocks_a": 1, "acc_buffers": 3, "dataflow": "os"}, wl.shape)
    assert same == lib and same.int("mvin_blocks_a") == 4 and same.sym("dataflow") == "ws"
    conv = TARGET.workload("conv_s2")
    lib_c = library_default(conv, CFG)
    assert sp("conv").mapping({**lib_c.as_dict(), "order": "kji"}, conv.shape) == lib_c  # loop_conv_ws: one order


def test_bad_values_are_named() -> None:
    wl = TARGET.workload("mm512")
    base = stream(tile_i=1, tile_j=1, tile_k=1)
    for patch, needle in (
        ({"order": "ijj"}, "'order' = 'ijj'"),
        ({"tile_i": 0}, "'tile_i' = 0 is outside 1..65535"),
        ({"mvin_blocks_a": 5}, "'mvin_blocks_a' = 5 is outside 1..4"),
        ({"tile_k": "8"}, "'tile_k' = '8' must be an integer"),
        ({"bogus": 1}, "no knob 'bogus'"),
    ):
        with pytest.raises(MappingError, match=needle):
            sp().mapping({**base, **patch}, wl.shape)
    with pytest.raises(MappingError, match="'op'"):
        sp().from_json({"op": "conv", "knobs": base}, wl.shape)


# ---------------------------------------------------------------------------- legality


def test_capacity_is_reported_with_values_and_line() -> None:
    wl = TARGET.workload("mm512")
    m = sp().mapping(stream(tile_i=32, tile_j=32, tile_k=32, acc_j=4, mvin_blocks_a=4, mvin_blocks_b=4), wl.shape)
    found = {v.rule: v for v in sp().violations(KB, m, wl.shape)}
    assert found["map.spad_fit"].values == {
        "loop": "sw",
        "buffers_a": 2,
        "tile_i": 32,
        "tile_k": 32,
        "buffers_b": 2,
        "tile_j": 32,
        "dim": 16,
        "sp_rows": 16384,
    }  # (2*32*32 + 2*32*32) * 16 = 65536 rows
    assert "gemmini.md:" in found["map.spad_fit"].doc_loc
    with pytest.raises(IllegalMapping, match="map.spad_fit"):
        TARGET.lower(TARGET.instance(wl, {}), m)


def test_the_hardware_loop_limits() -> None:
    wl = TARGET.workload("mm512")
    hw = {"loop": "hw", "tile_i": 8, "tile_j": 8, "tile_k": 8, "order": "kij", "reuse_a": "true", "reuse_b": "true"}
    found = set(rules(wl, {**hw, "acc_init": "overwrite"}))
    assert {"map.hw_acc_fit", "map.hw_order", "map.hw_reuse_a", "map.hw_reuse_b"} <= found


def test_the_conv_stream_rules() -> None:
    wl = TARGET.workload("conv_s2")
    base = {k.name: k.default for k in sp("conv").knobs}
    values = {**base, "loop": "sw", "reuse_a": "true", "reuse_b": "true", "acc_init": "bias", "acc_j": 1}
    tiles = dict(tile_b=1, tile_orows=4, tile_ocols=28, tile_och=24, tile_ich=128, tile_krows=2, tile_kcols=3)
    assert {"map.conv_sw_kernel", "map.tile_och_chunks"} <= set(rules(wl, {**values, **tiles}))


def test_values_beyond_a_bound_are_written_as_the_bound() -> None:
    """The stream treats a sub-tile wider than its block, or a block mvin wider than the block
    row, as the bound; the doc keeps only the bound (one mapping per kernel)."""
    wl = TARGET.workload("matmul:M=64,N=64,K=64")
    ok = stream(tile_i=2, tile_j=2, tile_k=4, acc_i=2, acc_j=2, mvin_blocks_a=4, mvin_blocks_b=2, mvout_blocks=2)
    assert rules(wl, ok) == {}
    assert set(rules(wl, {**ok, "acc_i": 3})) == {"map.acc_sub_tile"}
    assert set(rules(wl, {**ok, "mvin_blocks_b": 3})) == {"map.block_len_fit"}
    split = {**ok, "tile_k": 2, "mvin_blocks_a": 2}  # two reduction blocks: the whole block stays live
    assert set(rules(wl, split)) == {"map.acc_sub_tile"}
    assert rules(wl, {**split, "acc_i": 1, "acc_j": 1, "mvout_blocks": 2}) == {}


def test_the_exo_style_mapping_is_legal_for_the_whole_suite() -> None:
    for wl in TARGET.suite():
        m = exo_style(wl, CFG)
        assert sp(wl.op).violations(KB, m, wl.shape) == [], wl.id
        assert (m.sym("loop"), m.sym("hoist_config"), m.int("ld_states"), m.int("mvout_blocks")) == ("sw", "true", 3, 1)
        assert library_default(wl, CFG).sym("loop") == "hw"


def test_the_exo_style_mm512_is_the_exo_schedule() -> None:
    """Reference §8.1: 256x512 A and 512x256 B blocks fill the scratchpad, A moved once, B twice."""
    m = view(exo_style(TARGET.workload("mm512"), CFG))
    assert isinstance(m, MatmulView)
    assert (m.tile_i, m.tile_j, m.tile_k, m.buffers_a, m.buffers_b, m.mvin_blocks_a) == (16, 16, 32, 1, 1, 4)
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


def _replayed_loads(order: str, blocks: dict[str, int], dims: str, reuse: bool, buffers: int) -> int:
    """The lowering's buffer policy replayed block by block: a FIFO of `buffers` held blocks."""
    held: list[tuple[int, ...] | None] = [None] * buffers
    cur, loads = buffers - 1, 0
    for blk in itertools.product(*(range(blocks[x]) for x in order)):
        key = tuple(dict(zip(order, blk, strict=True))[x] for x in dims)
        if reuse and key in held:
            continue
        cur = (cur + 1) % buffers
        held[cur] = key
        loads += 1
    return loads


@settings(max_examples=300, deadline=None)
@given(
    order=st.sampled_from(["ijk", "ikj", "jik", "jki", "kij", "kji"]),
    ni=st.integers(1, 5),
    nj=st.integers(1, 5),
    nk=st.integers(1, 5),
    dims=st.sampled_from(["ik", "kj"]),
    reuse=st.booleans(),
    buffers=st.integers(1, 8),
)
def test_block_loads_closed_form_equals_the_replayed_buffers(order, ni, nj, nk, dims, reuse, buffers) -> None:
    blocks = {"i": ni, "j": nj, "k": nk}
    assert block_loads(order, blocks, dims, reuse, buffers) == _replayed_loads(order, blocks, dims, reuse, buffers)


# ---------------------------------------------------------------------------- clingo + CP-SAT


@pytest.mark.parametrize(
    "spec", ["matmul:M=48,N=64,K=80", "matmul:M=40,N=24,K=72,bias=1", "conv:N=1,H=6,W=6,C=20,K=24,R=3,S=3,pad=1"]
)
def test_solver_mappings_lower(spec: str) -> None:
    """A clingo skeleton completed by CP-SAT's sizing (the largest tiles: small programs) is a
    mapping the lowering accepts."""
    wl = TARGET.workload(spec)
    s = sp(wl.op)
    inst = TARGET.instance(wl, {})
    tiles = [ex.Ref((k.name,)) for k in s.integer if k.name.startswith("tile_")]
    largest = ex.Un("neg", functools.reduce(lambda a, b: ex.Bin("+", a, b), tiles))
    sks = [k.as_dict() for k in skeletons(KB, wl.op, wl.shape)]
    lowered = 0
    for i, sk in enumerate(sks[:: max(1, len(sks) // 24)]):
        sizing = SizingModel(s, wl.shape, sk).solve(largest, time_limit=5.0)
        if sizing is None:  # (e.g. loop_ws pinning both operands needs tiles that do not fit)
            assert sk["loop"] == "hw"
            continue
        m = s.from_skeleton(sk, sizing.values, wl.shape)
        assert s.skeleton(m) == tuple(sk.items()) and s.violations(KB, m, wl.shape) == []
        assert s.from_json(json.loads(json.dumps(m.to_json())), wl.shape) == m
        program = TARGET.lower(inst, m)
        if i % 8 == 0:  # and the simulator accepts it, rule by rule
            assert TARGET.evaluate(inst, m, Mode.CHECKED).cycles > 0 and len(program) > 0
        lowered += 1
    assert lowered >= 12


# ---------------------------------------------------------------------------- distinct skeletons


def _clashes(spec: str, sizings: list[dict[str, int]]) -> tuple[int, list[tuple[dict, dict]]]:
    """Skeletons of `spec`, and every pair of them that no sizing legal for both tells apart."""
    wl = TARGET.workload(spec)
    s = space(KB_ALL, wl.op)
    inst = TARGET.instance(wl, RTL_FEATURES)
    sks = [k.as_dict() for k in skeletons(KB_ALL, wl.op, wl.shape)]
    digests = []
    for sk in sks:
        row: list[str | None] = []
        for sz in sizings:
            try:
                row.append(TARGET.lower(inst, s.mapping({**sk, **sz}, wl.shape)).digest())
            except IllegalMapping:
                row.append(None)
        digests.append(tuple(row))
    by_legal: dict[tuple[bool, ...], list[int]] = defaultdict(list)
    for i, row in enumerate(digests):
        by_legal[tuple(d is not None for d in row)].append(i)
    out: list[tuple[dict, dict]] = []
    patterns = list(by_legal)
    for a, pa in enumerate(patterns):
        for pb in patterns[a:]:
            common = [n for n in range(len(sizings)) if pa[n] and pb[n]]
            seen: dict[tuple, int] = {}
            for i in by_legal[pa]:
                key = tuple(digests[i][n] for n in common)
                if pa == pb and key in seen:
                    out.append((sks[seen[key]], sks[i]))
                seen.setdefault(key, i)
            if pa != pb:
                for j in by_legal[pb]:
                    key = tuple(digests[j][n] for n in common)
                    if key in seen:
                        out.append((sks[seen[key]], sks[j]))
    return len(sks), out


def _stream(**kw: int) -> dict[str, int]:
    return {"buffers_a": 2, "buffers_b": 2, "acc_buffers": 2, "mvout_blocks": 1, "ld_states": 3, **kw}


def test_mm512_has_fewer_skeletons_than_the_flat_product() -> None:
    wl = TARGET.workload("mm512")
    count = sum(1 for _ in skeletons(KB, "matmul", wl.shape))
    assert count < 3840  # the flat product of the symbolic domains (prefetch included)
    small = TARGET.workload("matmul:M=48,N=48,K=32")  # the same skeletons (no bias): what the next test lowers
    assert {tuple(s.choices) for s in skeletons(KB, "matmul", wl.shape)} == {
        tuple(s.choices) for s in skeletons(KB, "matmul", small.shape)
    }


def test_every_matmul_skeleton_is_a_different_kernel() -> None:
    """Two sizings of a 3x3x2-tile matmul: one with the reduction in one block (2x2 blocks of
    2x2x2 tiles, 2x2 sub-tiles, double-buffered: every residency and inner-order choice shows),
    one splitting it (2x2x2 blocks: the outer order's k position shows)."""
    sizings = [
        _stream(tile_i=2, tile_j=2, tile_k=2, acc_i=2, acc_j=2, mvin_blocks_a=2, mvin_blocks_b=2),
        _stream(tile_i=2, tile_j=2, tile_k=1, acc_i=1, acc_j=1, acc_buffers=1, mvin_blocks_a=1, mvin_blocks_b=1),
    ]
    n, clashes = _clashes("matmul:M=48,N=48,K=32", sizings)
    assert n == 2696 and clashes == [], clashes[:5]


def test_every_conv_skeleton_is_a_different_kernel() -> None:
    """The same for a small conv with bias (the suite's convs have the same skeletons): two
    output-row blocks of two pixel groups, two och blocks, the input channels in one block or
    split in two."""
    common = {"tile_b": 1, "tile_orows": 2, "tile_ocols": 3, "tile_och": 32, "tile_krows": 2, "tile_kcols": 2}
    sizings = [
        _stream(**common, tile_ich=20, acc_i=2, acc_j=2, mvin_blocks_a=2, mvin_blocks_b=2),
        _stream(**common, tile_ich=16, acc_i=1, acc_j=1, acc_buffers=1, mvin_blocks_a=1, mvin_blocks_b=1),
    ]
    spec = "conv:N=1,H=4,W=4,C=20,K=36,R=2,S=2"
    suite = {tuple(s.choices) for s in skeletons(KB_ALL, "conv", TARGET.workload("conv_s2").shape)}
    assert {tuple(s.choices) for s in skeletons(KB_ALL, "conv", TARGET.workload(spec).shape)} == suite
    n, clashes = _clashes(spec, sizings)
    assert n == len(suite) and clashes == [], clashes[:5]
