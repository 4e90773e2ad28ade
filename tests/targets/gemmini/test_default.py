"""The compiler default: tiled_matmul_auto / tiled_conv_auto tilings (reference §6.1, §6.2 tables),
the programs they emit, bit-exact results on the simulator, and the roofline."""

from __future__ import annotations

import pytest
from zomboss.targets.gemmini.default import (
    MatmulCall,
    bound_cycles,
    build_default,
    conv_tiling,
    matmul_program,
    matmul_tiling,
    tiled_matmul_auto,
)
from zomboss.targets.gemmini.presets import DEFAULT_PRESET
from zomboss.targets.gemmini.simulator import simulate

from zomboss.errors import WorkloadError
from zomboss.workload import Workload

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
def test_tiled_matmul_auto_emits_one_loop_ws_per_block(cfg, shape, tiles, outer, spad, acc, reuse):
    p = matmul_program(shape[0], shape[1], shape[2], cfg)
    ops = [i.op for i in p.instrs]
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
    {"M": 100, "N": 200, "K": 300, "bias": 1, "relu": 1},  # padding in every dimension
    {"M": 64, "N": 160, "K": 64},  # a_reuse and b_reuse (I0*K0 = 1, J0*K0 = 2)
    {"M": 200, "N": 64, "K": 64, "bias": 1},  # b_reuse with two i0 blocks
    {"M": 32, "N": 32, "K": 2048, "bias": 1},  # K split in three loop_ws (bias only on the first)
]


@pytest.mark.parametrize("shape", MATMULS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_matmul_default_is_bit_exact(cfg, shape):
    wl = Workload("t", "matmul", shape)
    k = build_default(wl, cfg, seed=7)
    r = simulate(k.program, cfg, k.dram)
    assert k.verify(r.dram)
    assert r.cycles > 0 and r.stats["checked"]


def test_reuse_flags_are_emitted_as_the_library_does(cfg):
    call = MatmulCall(64, 160, 64, 0x1000, 0x3000, 0, 0x8000, 64, 160, 160, 160)
    loops = [i for i in tiled_matmul_auto(call, cfg) if i.op in ("loop_ws", "loop_ws_addrs_ab")]
    addrs = [i.args for i in loops if i.op == "loop_ws_addrs_ab"]
    runs = [i.args for i in loops if i.op == "loop_ws"]
    assert [(r[4], r[5]) for r in runs] == [(1, 1), (1, 2)]  # (a_spad_id, b_spad_id) for j0 = 0, 1
    assert addrs[0][0] != 0 and addrs[1][0] == 0  # A is not reloaded for j0 = 1


CONVS = [
    {"N": 1, "H": 12, "W": 12, "C": 20, "K": 24, "R": 3, "S": 3, "stride": 1, "pad": 1, "relu": 1},
    {"N": 2, "H": 9, "W": 11, "C": 3, "K": 16, "R": 3, "S": 3, "stride": 2, "pad": 1},  # first layer
    {"N": 1, "H": 8, "W": 8, "C": 32, "K": 40, "R": 1, "S": 1, "stride": 2, "pad": 0, "bias": 0},  # downsample
    {"N": 1, "H": 6, "W": 6, "C": 1024, "K": 16, "R": 3, "S": 3, "stride": 1, "pad": 1},  # input channels split
    {"N": 2, "H": 30, "W": 30, "C": 40, "K": 40, "R": 3, "S": 3, "stride": 1, "pad": 0},  # several tiles
]


@pytest.mark.parametrize("shape", CONVS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_conv_default_is_bit_exact(cfg, shape):
    wl = Workload("t", "conv", shape)
    k = build_default(wl, cfg, seed=3)
    r = simulate(k.program, cfg, k.dram)
    assert k.verify(r.dram)


def test_conv_input_channel_split_accumulates_across_tiles(cfg):
    wl = Workload("t", "conv", CONVS[3])
    k = build_default(wl, cfg, seed=3)
    t = k.meta["tiling"]
    assert t.kchs < 1024  # several kch tiles: bias on the first, output on the last
    runs = [i for i in k.program.instrs if i.op == "loop_conv_ws_config6"]
    biases = [i.args[0] for i in runs]
    assert biases[0] != 0 and all(b == 0 for b in biases[1:])


def test_bad_conv_specs_are_refused(cfg):
    with pytest.raises(WorkloadError, match="square kernel"):
        build_default(Workload("t", "conv", {"N": 1, "H": 8, "W": 8, "C": 4, "K": 4, "R": 3, "S": 1}), cfg)
    with pytest.raises(WorkloadError, match="larger than the padding"):
        build_default(Workload("t", "conv", {"N": 1, "H": 8, "W": 8, "C": 4, "K": 4, "R": 1, "S": 1, "pad": 1}), cfg)
    with pytest.raises(WorkloadError, match="no default for op"):
        build_default(Workload("t", "softmax", {"rows": 4}), cfg)


def test_bound_is_a_lower_bound_of_the_default(cfg):
    for wl in (
        Workload("a", "matmul", {"M": 256, "N": 256, "K": 256}),
        Workload("b", "matmul", {"M": 32, "N": 2048, "K": 2048}),
        Workload("c", "conv", {"N": 1, "H": 16, "W": 16, "C": 64, "K": 64, "R": 3, "S": 3, "pad": 1}),
    ):
        k = build_default(wl, cfg)
        r = simulate(k.program, cfg, None, functional=False, check=False)
        bound = bound_cycles(wl, cfg, DEFAULT_PRESET)
        assert 0 < bound <= r.cycles


def test_bound_counts_padded_array_work(cfg):
    wl = Workload("a", "matmul", {"M": 17, "N": 16, "K": 16})
    assert bound_cycles(wl, cfg, DEFAULT_PRESET) >= 2 * 16  # two row tiles of 16 cycles each
