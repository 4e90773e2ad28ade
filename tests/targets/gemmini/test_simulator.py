"""Bit-exact functional tests of every instruction family against NumPy (Spike's semantics)."""

from __future__ import annotations

import numpy as np
import pytest
from zomboss.targets.gemmini.asm import UnknownInstruction, acc_addr
from zomboss.targets.gemmini.dram import Dram
from zomboss.targets.gemmini.numerics import f32_bits, rounding_right_shift, sat8, scale_and_sat, scale_sat8
from zomboss.targets.gemmini.simulator import dynamic_stream, simulate

from zomboss.errors import IllegalProgram

from .conftest import CURRENT, GARB, ONE, prog, put, rand_i8

ACC = 0x80000000


def run(p, cfg, dram, **kw):
    """Simulate on the current RTL's preset, which builds every feature tested here (pixel
    repeats and the OS dataflow included; the default preset's RTL refuses those)."""
    kw.setdefault("preset", CURRENT)
    return simulate(p, cfg, dram, timing=kw.pop("timing", False), **kw)


# ------------------------------------------------------------------------------------------
# mvin / mvout
# ------------------------------------------------------------------------------------------


def test_block_mvin_and_block_mvout_round_trip(cfg):
    rng = np.random.default_rng(1)
    dram = Dram()
    a = rand_i8(rng, 16, 64)
    src, dst = put(dram, a), dram.alloc(16 * 64)
    p = prog(
        ("config_ld", 0, 64, 0, 16, 1, ONE),
        ("config_st", 64, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("mvin", src, 100, 64, 16),
        ("mvout", dst, 100, 64, 16),
        ("fence",),
    )
    r = run(p, cfg, dram, timing=True)
    assert np.array_equal(dram.read(dst, np.int8, (16, 64)), a)
    assert r.counts == {"config_ld": 1, "config_st": 1, "mvin": 1, "mvout": 1, "fence": 1}
    assert r.dram_read_bytes == 1024 and r.dram_write_bytes == 1024


def test_block_stride_places_blocks_apart(cfg):
    rng = np.random.default_rng(2)
    dram = Dram()
    a = rand_i8(rng, 8, 32)
    src, d0, d1 = put(dram, a), dram.alloc(8 * 16), dram.alloc(8 * 16)
    p = prog(
        ("config_ld", 0, 32, 0, 40, 1, ONE),
        ("config_st", 16, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("mvin", src, 0, 32, 8),
        ("mvout", d0, 0, 16, 8),
        ("mvout", d1, 40, 16, 8),
    )
    run(p, cfg, dram)
    assert np.array_equal(dram.read(d0, np.int8, (8, 16)), a[:, :16])
    assert np.array_equal(dram.read(d1, np.int8, (8, 16)), a[:, 16:])


def test_mvin_scale_rounds_and_saturates(cfg):
    dram = Dram()
    a = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    src, dst = put(dram, a), dram.alloc(256)
    scale = 0.75
    p = prog(
        ("config_ld", 1, 16, 0, 16, 1, f32_bits(scale)),
        ("config_st", 16, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("mvin2", src, 0, 16, 16),
        ("mvout", dst, 0, 16, 16),
    )
    run(p, cfg, dram)
    assert np.array_equal(dram.read(dst, np.int8, (16, 16)), scale_sat8(a, np.float32(scale)))


def test_stride_zero_broadcasts_one_row_into_the_accumulator(cfg):
    dram = Dram()
    bias = np.arange(16, dtype=np.int32) * 1000 - 7000
    src, dst = put(dram, bias), dram.alloc(16 * 16 * 4)
    p = prog(
        ("config_ld", 2, 0, 0, 16, 1, ONE),
        ("config_st", 64, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("mvin3", src, acc_addr(32), 16, 16),
        ("mvout", dst, acc_addr(32, read_full=True), 16, 16),
    )
    run(p, cfg, dram)
    assert np.array_equal(dram.read(dst, np.int32, (16, 16)), np.broadcast_to(bias, (16, 16)))


def test_shrunk_int8_into_the_accumulator_is_scaled_and_accumulates(cfg):
    rng = np.random.default_rng(3)
    dram = Dram()
    a, b = rand_i8(rng, 16, 16), rand_i8(rng, 16, 16)
    pa, pb, dst = put(dram, a), put(dram, b), dram.alloc(16 * 16 * 4)
    p = prog(
        ("config_ld", 0, 16, 1, 16, 1, f32_bits(0.5)),
        ("config_ld", 1, 16, 1, 16, 1, ONE),
        ("config_st", 64, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("mvin", pa, acc_addr(0), 16, 16),
        ("mvin2", pb, acc_addr(0, accumulate=True), 16, 16),
        ("mvout", dst, acc_addr(0, read_full=True), 16, 16),
    )
    run(p, cfg, dram)
    want = scale_sat8(a, np.float32(0.5)).astype(np.int32) + b
    assert np.array_equal(dram.read(dst, np.int32, (16, 16)), want)


def test_mvin_from_address_zero_writes_zeros(cfg):
    dram = Dram()
    ones = np.full((16, 16), 7, dtype=np.int32)
    src, dst = put(dram, ones), dram.alloc(1024)
    p = prog(
        ("config_ld", 0, 64, 0, 16, 1, ONE),
        ("config_st", 64, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("mvin", src, acc_addr(0), 16, 16),
        ("mvin", 0, acc_addr(0), 16, 8),
        ("mvout", dst, acc_addr(0, read_full=True), 16, 16),
    )
    run(p, cfg, dram)
    got = dram.read(dst, np.int32, (16, 16))
    assert (got[:8] == 0).all() and (got[8:] == 7).all()


def test_mvout_from_the_accumulator_scales_saturates_and_relus(cfg):
    rng = np.random.default_rng(4)
    dram = Dram()
    acc = rng.integers(-(1 << 20), 1 << 20, size=(16, 48), dtype=np.int32)
    scale = 2.0**-12
    srcs = [put(dram, np.ascontiguousarray(acc[:, 16 * b : 16 * b + 16])) for b in range(3)]
    dst = dram.alloc(16 * 48)
    lines: list[tuple] = [
        ("config_ld", 2, 64, 0, 16, 1, ONE),
        ("config_st", 48, 1, f32_bits(scale), 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ]
    lines += [("mvin3", s, acc_addr(100 + 16 * b), 16, 16) for b, s in enumerate(srcs)]
    lines += [("mvout", dst, acc_addr(100), 48, 16)]  # a 3-block mvout: blocks DIM rows apart
    run(prog(*lines), cfg, dram)
    assert np.array_equal(dram.read(dst, np.int8, (16, 48)), scale_and_sat(acc, 1, scale))


def test_pooled_mvout_takes_window_maxima(cfg):
    rng = np.random.default_rng(5)
    dram = Dram()
    orows = ocols = 6
    tile = rng.integers(-200, 200, size=(orows * ocols, 16), dtype=np.int32)
    src = put(dram, tile)
    porows = pocols = 3
    dst = dram.alloc(porows * pocols * 16)
    p = prog(
        ("config_ld", 2, 64, 0, 16, 1, ONE),
        *[("mvin3", src + 64 * r, acc_addr(r), 16, 1) for r in range(orows * ocols)],
        ("config_st", 16, 0, ONE, 2, 3, pocols, porows, pocols, orows, ocols, 1, 1),
        ("mvout", dst, acc_addr(0), 16, 0),
    )
    run(p, cfg, dram)
    x = np.clip(tile, -128, 127).astype(np.int8).reshape(orows, ocols, 16)
    padded = np.zeros((8, 8, 16), dtype=np.int8)  # window positions outside the tile count as 0
    padded[1:7, 1:7] = x
    want = np.full((porows, pocols, 16), -128, dtype=np.int8)
    for r in range(porows):
        for c in range(pocols):
            want[r, c] = padded[2 * r : 2 * r + 3, 2 * c : 2 * c + 3].reshape(-1, 16).max(axis=0)
    assert np.array_equal(dram.read(dst, np.int8, (porows, pocols, 16)), want)


def test_pixel_repeats_build_the_first_layer_im2col(cfg):
    dram = Dram()
    pix = np.arange(1, 3 * 10 + 1, dtype=np.int8).reshape(10, 3)  # 10 pixels x 3 channels
    src, dst = put(dram, pix), dram.alloc(16 * 16)
    p = prog(
        ("config_ld", 0, 3, 0, 16, 3, ONE),
        ("config_st", 16, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("mvin", src, 0, 3, 10),
        ("mvout", dst, 0, 16, 10),
    )
    run(p, cfg, dram)
    got = dram.read(dst, np.int8, (10, 16))
    for r in range(10):  # row r holds pixels r, r+1, r+2 (where they exist)
        for q in range(3):
            want = pix[r + q] if r + q < 10 else np.zeros(3, dtype=np.int8)
            assert np.array_equal(got[r, 3 * q : 3 * q + 3], want)


# ------------------------------------------------------------------------------------------
# the array
# ------------------------------------------------------------------------------------------


def _load(dram: Dram, row: int, arr: np.ndarray) -> list[tuple]:
    """mvins (state 0, whose stride must be the array's row bytes) of arr to scratchpad rows from `row`."""
    src = put(dram, arr)
    width = arr.shape[1] * arr.itemsize
    return [
        ("mvin", src + r * width, row + r, arr.shape[1], min(16, arr.shape[0] - r)) for r in range(0, arr.shape[0], 16)
    ]


@pytest.mark.parametrize(("a_t", "b_t"), [(0, 0), (1, 0), (0, 1)])
def test_ws_preload_compute_with_transposes_and_partial_tiles(cfg, a_t, b_t):
    rng = np.random.default_rng(10 + 2 * a_t + b_t)
    dram = Dram()
    m, k, n = 11, 13, 9
    a, b = rand_i8(rng, m, k), rand_i8(rng, k, n)
    d = rand_i8(rng, 16, 16)
    a_st = np.ascontiguousarray(a.T) if a_t else a
    b_st = np.ascontiguousarray(b.T) if b_t else b
    dst = dram.alloc(16 * 16 * 4)
    lines: list[tuple] = [("config_ld", 0, a_st.shape[1], 0, 16, 1, ONE)]
    lines += _load(dram, 0, a_st)
    lines += [("config_ld", 0, b_st.shape[1], 0, 16, 1, ONE)] + _load(dram, 64, b_st)
    lines += [("config_ld", 0, 16, 0, 16, 1, ONE)] + _load(dram, 128, d)
    lines += [
        ("config_ex", 1, 0, a_t, b_t, 1, 1, 0, ONE, 0),
        ("config_st", 64, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("preload", 64, acc_addr(0), n, k, n, m),
        ("compute_preloaded", 0, 128, k, m, 16, 16),
        ("mvout", dst, acc_addr(0, read_full=True), 16, 16),
    ]
    run(prog(*lines), cfg, dram)
    got = dram.read(dst, np.int32, (16, 16))
    want = a.astype(np.int32) @ b + d[:m, :n]
    assert np.array_equal(got[:m, :n], want)
    assert (got[m:] == 0).all() and (got[:, n:] == 0).all()


def test_ws_accumulated_reuses_weights_and_accumulates_with_strides(cfg):
    rng = np.random.default_rng(20)
    dram = Dram()
    a0, a1, b = rand_i8(rng, 16, 16), rand_i8(rng, 16, 16), rand_i8(rng, 16, 16)
    big = np.zeros((32, 16), dtype=np.int8)
    big[0::2], big[1::2] = a0, a1  # A rows interleaved: read with A stride 2
    dst = dram.alloc(32 * 16 * 4)
    lines: list[tuple] = [("config_ld", 0, 16, 0, 16, 1, ONE)] + _load(dram, 0, big) + _load(dram, 64, b)
    lines += [
        ("config_ex", 1, 0, 0, 0, 2, 2, 0, ONE, 0),  # A stride 2, C stride 2
        ("config_st", 64, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("preload", 64, acc_addr(0), 16, 16, 16, 16),
        ("compute_preloaded", 0, GARB, 16, 16, 16, 16),
        ("preload", GARB, acc_addr(0, accumulate=True), 16, 16, 16, 16),
        ("compute_accumulated", 1, GARB, 16, 16, 16, 16),
        ("mvout", dst, acc_addr(0, read_full=True), 16, 16),
        ("mvout", dst + 16 * 64, acc_addr(16, read_full=True), 16, 16),
    ]
    run(prog(*lines), cfg, dram)
    got = dram.read(dst, np.int32, (32, 16))
    want = np.zeros((32, 16), dtype=np.int32)
    want[0::2] = a0.astype(np.int32) @ b + a1.astype(np.int32) @ b  # C row i at 0 + 2*i
    assert np.array_equal(got, want)


def _a_b_loaded(seed: int, out_bytes: int) -> tuple[Dram, np.ndarray, np.ndarray, int, list[tuple]]:
    """Random 16x16 int8 A and B, the mvins that put them at scratchpad rows 0 and 16, and an
    output buffer of `out_bytes` in DRAM."""
    rng = np.random.default_rng(seed)
    dram = Dram()
    a, b = rand_i8(rng, 16, 16), rand_i8(rng, 16, 16)
    dst = dram.alloc(out_bytes)
    return dram, a, b, dst, [("config_ld", 0, 16, 0, 16, 1, ONE)] + _load(dram, 0, a) + _load(dram, 16, b)


def test_c_stride_zero_accumulates_every_row_into_one(cfg):
    """C stride 0 sends every result row to the same accumulator row: with the accumulate bit
    each adds in turn (Spike's loop; NumPy's fancy-index `+=` would keep only the last)."""
    dram, a, b, dst, lines = _a_b_loaded(23, 64)
    lines += [
        ("config_ex", 1, 0, 0, 0, 1, 0, 0, ONE, 0),
        ("config_st", 64, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("preload", 16, acc_addr(0, accumulate=True), 16, 16, 16, 4),
        ("compute_preloaded", 0, GARB, 16, 4, 16, 16),
        ("mvout", dst, acc_addr(0, read_full=True), 16, 1),
    ]
    run(prog(*lines), cfg, dram, check=True)
    want = (a[:4].astype(np.int64) @ b).sum(axis=0).astype(np.int32)
    assert np.array_equal(dram.read(dst, np.int32, (16,)), want)


def test_ws_output_to_the_scratchpad_saturates_and_relus(cfg):
    dram, a, b, dst, lines = _a_b_loaded(21, 256)
    lines += [
        ("config_ex", 1, 1, 0, 0, 1, 1, 0, ONE, 0),
        ("config_st", 16, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("preload", 16, 200, 16, 16, 16, 16),
        ("compute_preloaded", 0, GARB, 16, 16, 16, 16),
        ("mvout", dst, 200, 16, 16),
    ]
    run(prog(*lines), cfg, dram)
    want = np.maximum(sat8(a.astype(np.int32) @ b), 0)
    assert np.array_equal(dram.read(dst, np.int8, (16, 16)), want)


def test_os_accumulates_in_the_pes_and_shifts_into_the_scratchpad(cfg):
    rng = np.random.default_rng(22)
    dram = Dram()
    a0, b0, a1, b1 = (rand_i8(rng, 16, 16) for _ in range(4))
    d = rand_i8(rng, 16, 16)
    dst, dst_acc = dram.alloc(256), dram.alloc(1024)
    lines: list[tuple] = [("config_ld", 0, 16, 0, 16, 1, ONE)]
    for row, arr in ((0, a0), (16, b0), (32, a1), (48, b1), (64, d)):
        lines += _load(dram, row, arr)
    lines += [
        ("config_ex", 0, 0, 0, 0, 1, 1, 9, ONE, 0),  # OS, shift 9
        ("config_st", 16, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("preload", 64, GARB, 16, 16, 16, 16),
        ("compute_preloaded", 0, 16, 16, 16, 16, 16),
        ("preload", GARB, 200, 16, 16, 16, 16),
        ("compute_accumulated", 32, 48, 16, 16, 16, 16),
        ("preload", GARB, acc_addr(0), 16, 16, 16, 16),
        ("compute_accumulated", 32, 48, 16, 16, 16, 16),
        ("mvout", dst, 200, 16, 16),
        ("config_st", 64, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("mvout", dst_acc, acc_addr(0, read_full=True), 16, 16),
    ]
    run(prog(*lines), cfg, dram)
    s1 = d.astype(np.int64) + a0.astype(np.int64) @ b0 + a1.astype(np.int64) @ b1
    assert np.array_equal(dram.read(dst, np.int8, (16, 16)), sat8(rounding_right_shift(s1, 9)))
    s2 = s1 + a1.astype(np.int64) @ b1  # the accumulator gets the raw PE sums
    assert np.array_equal(dram.read(dst_acc, np.int32, (16, 16)), s2.astype(np.int32))


# ------------------------------------------------------------------------------------------
# loop_ws
# ------------------------------------------------------------------------------------------


def _loop_ws_program(dram, a, b, d, full_c, low_d, act, scale, c_present=True):
    m, k = a.shape
    n = b.shape[1]
    pa, pb = put(dram, a), put(dram, b)
    pd = put(dram, d) if d is not None else 0
    pc = dram.alloc(m * n * (4 if full_c else 1)) if c_present else 0
    tiles = [-(-x // 16) for x in (m, n, k)]
    pads = [16 * t - x for t, x in zip(tiles, (m, n, k), strict=True)]
    dsz = 1 if low_d else 4
    lines = [
        ("config_ex", 1, 0, 0, 0, 1, 1, 0, ONE, 0),
        ("config_st", n * (4 if full_c else 1), act, f32_bits(scale), 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("config_ld", 0, k, 0, 16, 1, ONE),
        ("config_ld", 1, n, 0, 16, 1, ONE),
        ("config_ld", 2, n * dsz, low_d, 16, 1, ONE),
        ("loop_ws_bounds", *tiles, *pads),
        ("loop_ws_addrs_ab", pa, pb),
        ("loop_ws_addrs_dc", pd, pc),
        ("loop_ws_strides_ab", k, n),
        ("loop_ws_strides_dc", n, n),
        ("loop_ws", int(d is not None), full_c, low_d, act, 0, 0, 0, 0, 0),  # accumulate onto the bias
        ("fence",),
    ]
    return lines, pc


@pytest.mark.parametrize(
    ("m", "n", "k", "bias", "full_c", "low_d", "act"),
    [
        (40, 50, 70, True, 0, 0, 1),
        (64, 80, 33, False, 0, 0, 0),
        (17, 96, 48, True, 1, 0, 0),
        (48, 64, 16, True, 0, 1, 1),
    ],
)
def test_loop_ws_matches_numpy(cfg, m, n, k, bias, full_c, low_d, act):
    rng = np.random.default_rng(m * n + k)
    dram = Dram()
    a, b = rand_i8(rng, m, k), rand_i8(rng, k, n)
    d = None
    if bias:
        d = rand_i8(rng, m, n) if low_d else rng.integers(-5000, 5000, size=(m, n), dtype=np.int32)
    scale = 2.0**-9
    lines, pc = _loop_ws_program(dram, a, b, d, full_c, low_d, act, scale)
    r = run(prog(*lines), cfg, dram, check=True)
    acc = a.astype(np.int64) @ b + (d.astype(np.int64) if d is not None else 0)
    if full_c:
        assert np.array_equal(dram.read(pc, np.int32, (m, n)), acc.astype(np.int32))
    else:
        assert np.array_equal(dram.read(pc, np.int8, (m, n)), scale_and_sat(acc, act, scale))
    assert r.stats["checked"]
    assert r.counts["preload"] == r.counts["compute_preloaded"] + r.counts["compute_accumulated"]


def test_loop_ws_k_split_accumulates_across_calls(cfg):
    """Two loops over halves of K: the first keeps C in the accumulator (C = 0), the second adds."""
    rng = np.random.default_rng(30)
    dram = Dram()
    a, b = rand_i8(rng, 32, 64), rand_i8(rng, 64, 32)
    pa, pb, pc = put(dram, a), put(dram, b), dram.alloc(32 * 32)
    base = [
        ("config_ex", 1, 0, 0, 0, 1, 1, 0, ONE, 0),
        ("config_st", 32, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("config_ld", 0, 64, 0, 16, 1, ONE),
        ("config_ld", 1, 32, 0, 16, 1, ONE),
    ]
    first = [
        ("loop_ws_bounds", 2, 2, 2, 0, 0, 0),
        ("loop_ws_addrs_ab", pa, pb),
        ("loop_ws_addrs_dc", 0, 0),
        ("loop_ws_strides_ab", 64, 32),
        ("loop_ws_strides_dc", 0, 32),
        ("loop_ws", 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ]
    second = [
        ("loop_ws_bounds", 2, 2, 2, 0, 0, 0),
        ("loop_ws_addrs_ab", pa + 32, pb + 32 * 32),
        ("loop_ws_addrs_dc", 0, pc),
        ("loop_ws_strides_ab", 64, 32),
        ("loop_ws_strides_dc", 0, 32),
        ("loop_ws", 1, 0, 0, 0, 0, 0, 0, 0, 0),
    ]
    run(prog(*base, *first, *second, ("fence",)), cfg, dram, check=True)
    assert np.array_equal(dram.read(pc, np.int8, (32, 32)), scale_and_sat(a.astype(np.int64) @ b, 0, 1.0))


def test_loop_ws_resadd_adds_scaled_inputs(cfg):
    rng = np.random.default_rng(31)
    dram = Dram()
    a, b = rand_i8(rng, 20, 40), rand_i8(rng, 20, 40)
    pa, pb, pc = put(dram, a), put(dram, b), dram.alloc(20 * 40)
    lines = [
        ("config_st", 40, 1, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("config_ld", 0, 40, 1, 16, 1, f32_bits(0.5)),
        ("config_ld", 1, 40, 1, 16, 1, ONE),
        ("loop_ws_bounds", 2, 3, 1, 12, 8, 0),
        ("loop_ws_addrs_ab", pa, pb),
        ("loop_ws_addrs_dc", 0, pc),
        ("loop_ws_strides_ab", 40, 40),
        ("loop_ws_strides_dc", 0, 40),
        ("loop_ws", 0, 0, 0, 1, 0, 0, 0, 0, 1),
        ("fence",),
    ]
    run(prog(*lines), cfg, dram, check=True)
    want = scale_and_sat(scale_sat8(a, np.float32(0.5)).astype(np.int64) + b, 1, 1.0)
    assert np.array_equal(dram.read(pc, np.int8, (20, 40)), want)


def test_timing_only_mode_moves_no_data_and_agrees_on_cycles(cfg):
    rng = np.random.default_rng(32)
    dram = Dram()
    a, b = rand_i8(rng, 48, 48), rand_i8(rng, 48, 48)
    lines, pc = _loop_ws_program(dram, a, b, None, 0, 0, 0, 1.0)
    both = simulate(prog(*lines), cfg, dram)
    before = dram.read(pc, np.int8, (48, 48)).copy()
    only = simulate(prog(*lines), cfg, None, functional=False)
    assert only.dram is None and only.cycles == both.cycles and only.counts == both.counts
    assert np.array_equal(dram.read(pc, np.int8, (48, 48)), before)


def test_dynamic_stream_expands_loops_like_the_simulator(cfg):
    rng = np.random.default_rng(33)
    dram = Dram()
    a, b = rand_i8(rng, 32, 32), rand_i8(rng, 32, 32)
    lines, _ = _loop_ws_program(dram, a, b, None, 0, 0, 0, 1.0)
    p = prog(*lines)
    stream = [i.op for i, _ in dynamic_stream(p, cfg)]
    counts = simulate(p, cfg, None, functional=False).counts
    assert {op: stream.count(op) for op in set(stream)} == counts


# ------------------------------------------------------------------------------------------
# refusals
# ------------------------------------------------------------------------------------------


def test_a_rule_broken_inside_a_hardware_loop_is_refused_with_its_location(cfg):
    # a loop_ws whose C stride makes its mvouts write DRAM address 0 + ... is fine; one whose
    # B tile needs more scratchpad than half is refused before any command runs
    lines = [
        ("config_ex", 1, 0, 0, 0, 1, 1, 0, ONE, 0),
        ("loop_ws_bounds", 1, 1, 600, 0, 0, 0),
        ("loop_ws_addrs_ab", 0x10000, 0x20000),
        ("loop_ws_addrs_dc", 0, 0x30000),
        ("loop_ws_strides_ab", 16, 16),
        ("loop_ws_strides_dc", 0, 16),
        ("loop_ws", 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ]
    with pytest.raises(IllegalProgram) as e:
        simulate(prog(*lines), cfg, None, functional=False)
    v = e.value.violations[0]
    assert v.rule == "loop_ws.capacity" and v.line == 7 and "gemmini.md" in v.doc_loc


def test_generated_commands_are_checked(cfg):
    """An mvout of a loop whose config_st was never set writes rows with stride 0: legal; but a
    loop whose D tile is read with a block stride smaller than its rows is caught in the loop."""
    lines = [
        ("config_ex", 1, 0, 0, 0, 1, 1, 0, ONE, 0),
        ("config_ld", 2, 64, 1, 4, 1, ONE),  # int8 D (low_d): 4-tile mvin3s with block stride 4 < 16 rows
        ("loop_ws_bounds", 1, 4, 1, 0, 0, 0),
        ("loop_ws_addrs_ab", 0x10000, 0x20000),
        ("loop_ws_addrs_dc", 0x30000, 0),
        ("loop_ws_strides_ab", 16, 64),
        ("loop_ws_strides_dc", 64, 64),
        ("loop_ws", 1, 0, 1, 0, 0, 0, 0, 0, 0),
    ]
    with pytest.raises(IllegalProgram) as e:
        simulate(prog(*lines), cfg, None)
    v = e.value.violations[0]
    assert v.rule == "mvin.block_stride" and v.op == "mvin3" and v.line == 8


def test_unknown_instruction_and_arity_are_refused(cfg):
    with pytest.raises(UnknownInstruction, match="unknown Gemmini instruction 'matmul'"):
        simulate(prog(("matmul", 1, 2)), cfg, None, check=False)
    with pytest.raises(UnknownInstruction, match="mvin takes 4 operand"):
        simulate(prog(("mvin", 1, 2)), cfg, None, check=False)
