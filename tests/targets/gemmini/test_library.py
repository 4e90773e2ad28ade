"""Candidate-0: the library's tilings (reference §6.1, §6.2 tables), the mapping they make, the
program its lowering emits, and bit-exact results on edge-case shapes."""

from __future__ import annotations

import pytest
from zomboss.targets.gemmini import TARGET
from zomboss.targets.gemmini.mapping import library_default
from zomboss.targets.gemmini.presets import CURRENT_LIBRARY
from zomboss.targets.gemmini.tiling import conv_tiling, matmul_tiling

from zomboss.errors import WorkloadError
from zomboss.target import Mode
from zomboss.workload import Workload

from .conftest import RTL_FEATURES, dev_library_program, library_program

# I x J x K -> (tile_I, tile_J, tile_K), (I0, J0, K0), spad rows, acc rows, reuse (reference §6.1 table)
MATMUL_TABLE = [
    ((512, 512, 512), (5, 6, 32), (7, 6, 1), 5632, 480, ""),
    ((12544, 256, 64), (5, 6, 4), (157, 3, 1), 704, 480, ""),
    ((12544, 64, 256), (8, 4, 16), (98, 1, 1), 3072, 512, "b"),
    ((3136, 512, 128), (5, 6, 8), (40, 6, 1), 1408, 480, ""),
    ((3136, 128, 512), (5, 6, 32), (40, 2, 1), 5632, 480, "b"),
    ((784, 1024, 256), (5, 6, 16), (10, 11, 1), 2816, 480, ""),
    ((1024, 1024, 1024), (5, 5, 51), (13, 13, 2), 8160, 400, ""),
    ((256, 256, 256), (5, 6, 16), (4, 3, 1), 2816, 480, ""),
    ((32, 2048, 2048), (2, 7, 56), (1, 19, 3), 8064, 224, ""),
    ((64, 1024, 1024), (4, 6, 51), (1, 11, 2), 8160, 384, "a"),
    ((1, 1000, 2048), (1, 8, 56), (1, 8, 3), 8064, 128, ""),
]


@pytest.mark.parametrize(("shape", "tiles", "outer", "spad", "acc", "reuse"), MATMUL_TABLE, ids=lambda v: str(v))
def test_tiled_matmul_auto_tiling_table(cfg, shape, tiles, outer, spad, acc, reuse):
    t = matmul_tiling(*shape, cfg)
    assert (t.tile_i, t.tile_j, t.tile_k) == tiles
    assert (t.i0, t.j0, t.k0) == outer
    assert (t.spad_rows, t.acc_rows) == (spad, acc)
    assert (t.a_reuse, t.b_reuse) == ("a" in reuse, "b" in reuse)


@pytest.mark.parametrize(("shape", "tiles", "outer", "spad", "acc", "reuse"), MATMUL_TABLE, ids=lambda v: str(v))
def test_library_mapping_emits_one_loop_ws_per_block(cfg, shape, tiles, outer, spad, acc, reuse):
    wl = TARGET.workload(f"matmul:M={shape[0]},N={shape[1]},K={shape[2]}")
    m = library_default(wl, cfg)  # the default preset's library (dosa): the same tiles, never pinned
    assert (m.sym("loop"), m.int("tile_i"), m.int("tile_j"), m.int("tile_k")) == ("hw", *tiles)
    assert (m.flag("reuse_a"), m.flag("reuse_b")) == (False, False)
    dev = library_default(wl, TARGET.config(RTL_FEATURES), CURRENT_LIBRARY)
    assert (dev.flag("reuse_a"), dev.flag("reuse_b")) == ("a" in reuse, "b" in reuse)
    ops = [i.op for i in library_program(wl.spec).instrs]
    assert ops.count("loop_ws") == outer[0] * outer[1] * outer[2]
    assert ops[:5] == ["config_ex", "config_st", "config_ld", "config_ld", "config_ld"] and ops[-1] == "fence"
    assert len(ops) == 5 + 6 * ops.count("loop_ws") + 1


# (N, H, W, Cin, Cout, k, stride, pad) -> [batches, porows, pocols, pochs, krows, kcols, kchs], spad / acc rows
CONV_TABLE = [
    ((4, 58, 58, 64, 64, 3, 1, 0), (4, 8, 16, 16, 3, 3, 64), 3456, 512),
    ((4, 30, 30, 128, 128, 3, 1, 0), (4, 8, 16, 16, 3, 3, 128), 6912, 512),
    ((4, 16, 16, 256, 256, 3, 1, 0), (4, 9, 14, 16, 3, 3, 144), 7632, 504),
    ((1, 56, 56, 64, 64, 3, 1, 1), (1, 22, 23, 16, 3, 3, 64), 2976, 506),
    ((1, 14, 14, 256, 256, 3, 1, 1), (1, 14, 14, 32, 3, 3, 240), 8160, 392),
    ((1, 224, 224, 3, 64, 7, 2, 3), (1, 22, 23, 16, 7, 7, 3), 2747, 506),
]


@pytest.mark.parametrize(("conv", "args", "spad", "acc"), CONV_TABLE, ids=lambda v: str(v))
def test_tiled_conv_auto_tiling_table(cfg, conv, args, spad, acc):
    n, h, w, c, k, kd, s, p = conv
    oh, ow = (h + 2 * p - kd) // s + 1, (w + 2 * p - kd) // s + 1
    t = conv_tiling(n, h, w, c, k, oh, ow, s, p, kd, cfg)
    assert t.args == args
    assert (t.spad_rows, t.acc_rows) == (spad, acc)


MATMULS = [
    "matmul:M=100,N=200,K=300,bias=1,relu=1",  # padding in every dimension
    "matmul:M=64,N=160,K=64",  # a_reuse and b_reuse (I0*K0 = 1, J0*K0 = 2)
    "matmul:M=200,N=64,K=64,bias=1",  # b_reuse with two i0 blocks
    "matmul:M=32,N=32,K=2048,bias=1",  # K split in three loop_ws (bias only on the first)
]
CONVS = [
    "conv:N=1,H=12,W=12,C=20,K=24,R=3,S=3,stride=1,pad=1,relu=1",
    "conv:N=2,H=9,W=11,C=3,K=16,R=3,S=3,stride=2,pad=1",  # first layer
    "conv:N=1,H=8,W=8,C=32,K=40,R=1,S=1,stride=2,pad=0,bias=0",  # downsample
    "conv:N=1,H=6,W=6,C=1024,K=16,R=3,S=3,stride=1,pad=1",  # input channels split
    "conv:N=2,H=30,W=30,C=40,K=40,R=3,S=3,stride=1,pad=0",  # several tiles
]


@pytest.mark.parametrize("spec", MATMULS + CONVS)
def test_library_default_is_bit_exact(spec):
    wl = TARGET.workload(spec)
    ev = TARGET.evaluate(TARGET.instance(wl, {}, seed=7), TARGET.reference_mappings(wl, {})["library"], Mode.VERIFIED)
    assert ev.verified is True and ev.cycles > 0 and ev.report["kernel"] in ("loop_ws", "loop_conv_ws")


def test_reuse_flags_are_emitted_as_the_library_does():
    """The dev library pins A and B (gemmini.h dev a_spad_id / b_spad_id)."""
    loops = [i for i in dev_library_program("matmul:M=64,N=160,K=64").instrs if i.op in ("loop_ws", "loop_ws_addrs_ab")]
    addrs = [i.args for i in loops if i.op == "loop_ws_addrs_ab"]
    runs = [i.args for i in loops if i.op == "loop_ws"]
    assert [(r[4], r[5]) for r in runs] == [(1, 1), (1, 2)]  # (a_spad_id, b_spad_id) for j0 = 0, 1
    assert addrs[0][0] != 0 and addrs[1][0] == 0  # A is not reloaded for j0 = 1


def test_conv_input_channel_split_accumulates_across_tiles(cfg):
    wl = TARGET.workload(CONVS[3])
    assert library_default(wl, cfg).int("tile_ich") < 1024  # several kch tiles: bias on the first, output on the last
    biases = [i.args[0] for i in library_program(CONVS[3]).instrs if i.op == "loop_conv_ws_config6"]
    assert biases[0] != 0 and all(b == 0 for b in biases[1:])


def test_the_library_has_no_kernel_for_what_gemmini_h_refuses(cfg):
    with pytest.raises(WorkloadError, match="square kernel"):
        library_default(TARGET.workload("conv:N=1,H=8,W=8,C=4,K=4,R=3,S=1"), cfg)
    with pytest.raises(WorkloadError, match="no library kernel for op"):
        library_default(Workload("t", "softmax", {"rows": 4}), cfg)
    with pytest.raises(WorkloadError, match="no kernels for op"):
        TARGET.instance(Workload("t", "softmax", {"rows": 4}), {})
