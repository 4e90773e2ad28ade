"""Timing model: the sanity anchors of reference §5.2, DMA splitting, queues, and calibration."""

from __future__ import annotations

import dataclasses

import pytest
from zomboss.targets.gemmini.asm import acc_addr
from zomboss.targets.gemmini.presets import DEFAULT_PRESET, PRESETS, UnknownPreset, get_preset
from zomboss.targets.gemmini.simulator import simulate

from .conftest import GARB, ONE, library_program, prog

P = get_preset(DEFAULT_PRESET)


def split_packets(offset: int, nbytes: int, max_packet: int) -> tuple[tuple[int, int], ...]:
    """(offset, size) of the aligned power-of-two pieces exactly covering [offset, offset+nbytes).

    The largest aligned piece that fits the remaining bytes each time, never over-fetching.
    This is NOT what the DMA sends (it over-fetches and never goes below one beat): the timing
    model uses `dma.dma_packets`; the test pins the exact split the two are compared with. `offset` is the start address modulo max_packet.
    """
    out = []
    a, end = offset, offset + nbytes
    while a < end:
        size = max_packet
        while size > 1 and (a % size or a + size > end):
            size //= 2
        out.append((a - offset, size))
        a += size
    return tuple(out)


def cycles(lines, cfg, **kw) -> int:
    return simulate(prog(*lines), cfg, None, functional=False, check=kw.pop("check", False), **kw).cycles


def _blocks(n: int, *, new_weights: bool, config_between: bool = False, c_tiles: int = 8) -> list[tuple]:
    """n 16x16x16 WS blocks on resident operands, accumulating into c_tiles accumulator tiles."""
    out = [
        ("config_ex", 1, 0, 0, 0, 1, 1, 0, ONE, 0),
        ("preload", 0, acc_addr(0), 16, 16, 16, 16),
        ("compute_preloaded", 16, GARB, 16, 16, 16, 16),
    ]
    for i in range(n - 1):
        c = acc_addr(16 * ((i + 1) % c_tiles), accumulate=True)
        if config_between:
            out.append(("config_ex", 1, 0, 0, 0, 1, 1, 0, ONE, 0))
        if new_weights or config_between:
            b_row = 4096 + 32 * (i % 4)  # B in another bank than A: no read conflict
            out += [("preload", b_row, c, 16, 16, 16, 16), ("compute_preloaded", 16, GARB, 16, 16, 16, 16)]
        else:
            out += [
                ("preload", GARB, c, 16, 16, 16, 16),
                ("compute_accumulated", 16 * (i % 8) + 256, GARB, 16, 16, 16, 16),
            ]
    return out


def _per_block(cfg, **kw) -> float:
    """Marginal cycles per block under the default preset itself (its CPU issue cost included)."""
    return (cycles(_blocks(201, **kw), cfg) - cycles(_blocks(101, **kw), cfg)) / 100


@pytest.mark.parametrize("new_weights", [False, True])
def test_anchor_full_rate_stream_is_one_block_per_dim_cycles(cfg, new_weights):
    """Anchors (a) and (b): resident operands stream at DIM cycles per 16x16x16 block, whether
    the weights stay (compute_accumulated) or change every block (overlapped preloads)."""
    assert _per_block(cfg, new_weights=new_weights) == pytest.approx(cfg.dim, abs=0.5)


@pytest.mark.parametrize("c_tiles", [1, 2, 4])
def test_accumulating_into_rows_still_in_the_array_does_not_wait(cfg, c_tiles):
    """No execute-execute dependency in the RS (reference §5.1): consecutive preloads that
    accumulate into the accumulator rows an in-flight compute still writes (Exo's 4-tile
    rotation, or one tile over K) stream at full rate."""
    assert _per_block(cfg, new_weights=True, c_tiles=c_tiles) == pytest.approx(cfg.dim, abs=0.5)


def test_anchor_config_ex_between_blocks_costs_an_array_drain(cfg):
    plain = _per_block(cfg, new_weights=True)
    with_cfg = _per_block(cfg, new_weights=True, config_between=True)
    assert 30 <= with_cfg - plain <= 60  # ~ 2*DIM + 8 array latency (reference §5.2 anchor c: ~ +40)


def test_anchor_block_mvins_beat_single_tile_mvins(cfg):
    """Anchor (d): 16-byte rows are latency-bound (max_rd_inflight requests per round trip),
    64-byte block rows reach the channel bandwidth."""
    ld = [("config_ld", 0, 1024, 0, 16, 1, ONE)]
    tiles = 64
    single = ld + [("mvin", 0x10000 + 16 * t, 16 * t, 16, 16) for t in range(tiles)] + [("fence",)]
    block = ld + [("mvin", 0x10000 + 64 * t, 64 * t, 64, 16) for t in range(tiles // 4)] + [("fence",)]
    nbytes = tiles * 16 * 16

    def rate(lines: list[tuple]) -> float:
        return nbytes / (cycles(lines, cfg) - P.kernel_overhead)

    latency_bound = P.max_rd_inflight * 16 / (P.rd_latency + 1)
    assert rate(single) == pytest.approx(latency_bound, rel=0.15)
    assert rate(block) == pytest.approx(min(P.rd_bytes_per_cycle, 4 * latency_bound), rel=0.15)
    assert rate(block) > 1.5 * rate(single)


def test_anchor_zero_fill_is_one_row_per_cycle(cfg):
    tiles = 64
    lines = [("mvin", 0, acc_addr(16 * (t % 32)), 16, 16) for t in range(tiles)] + [("fence",)]
    short = cycles(lines[:32] + [("fence",)], cfg)
    per_tile = (cycles(lines, cfg) - short) / (tiles - 32)
    assert per_tile == pytest.approx(cfg.dim, abs=0.5)


def test_16_byte_mvins_are_latency_bound(cfg):
    """Reference §5.1: a plain 16x16 int8 mvin stream sustains about 16 requests per latency."""
    n = 128
    lines = (
        [("config_ld", 0, 1024, 0, 16, 1, ONE)]
        + [("mvin", 0x10000 + 16 * t, (16 * t) % 8192, 16, 16) for t in range(n)]
        + [("fence",)]
    )
    fast = P.with_(cpu_cpi=0.0, kernel_overhead=0.0, dram_row_miss=0.0)
    per_mvin = cycles(lines, cfg, preset=fast) / n
    expect = 16 * (P.rd_latency + 16 / P.rd_bytes_per_cycle) / P.max_rd_inflight
    assert 0.8 * expect <= per_mvin <= 1.3 * expect + 2


@pytest.mark.parametrize(
    ("offset", "n", "want"),
    [(0, 64, [64]), (0, 16, [16]), (48, 64, [16, 32, 16]), (8, 8, [8]), (4, 64, [4, 8, 16, 32, 4])],
)
def test_dma_requests_are_aligned_powers_of_two(offset, n, want):
    sizes = [s for _, s in split_packets(offset, n, 64)]
    assert sizes == want
    offs = [o for o, _ in split_packets(offset, n, 64)]
    assert all((offset + o) % s == 0 for o, s in zip(offs, sizes, strict=True))


def test_misaligned_rows_cost_more_requests(cfg):
    def stream(base):
        return (
            [("config_ld", 0, 1024, 0, 16, 1, ONE)]
            + [("mvin", base + 1024 * 16 * t, 64 * t, 64, 16) for t in range(32)]
            + [("fence",)]
        )

    aligned = simulate(prog(*stream(0x10000)), cfg, None, functional=False, check=False)
    skewed = simulate(prog(*stream(0x10030)), cfg, None, functional=False, check=False)
    # a 64-byte row 48 bytes into a block: a 16-byte Get, then a 64-byte Get for the last 48 bytes
    # (the DMA over-fetches, `dma.dma_packets`), so twice the requests and 80 bytes per row
    assert skewed.stats["rd_packets"] == 2 * aligned.stats["rd_packets"]
    assert skewed.stats["rd_fetched_bytes"] * 64 == aligned.stats["rd_fetched_bytes"] * 80
    assert skewed.cycles > aligned.cycles


def test_mvouts_are_serialised(cfg):
    st = [("config_st", 16, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
    one = cycles(st + [("mvout", 0x10000, acc_addr(0), 16, 16), ("fence",)], cfg)
    eight = cycles(st + [("mvout", 0x10000 + 256 * t, acc_addr(16 * t), 16, 16) for t in range(8)] + [("fence",)], cfg)
    assert eight - one >= 7 * 16  # each waits for the previous one's 16 SRAM reads at least


def test_fence_waits_for_outstanding_writes(cfg):
    st = [("config_st", 16, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0), ("mvout", 0x10000, acc_addr(0), 16, 16)]
    with_fence = cycles(st + [("fence",)], cfg)
    assert with_fence >= P.kernel_overhead + P.store_fixed_acc + 16 + P.wr_latency


def test_reservation_station_capacity_throttles_loads(cfg):
    """With one load queue entry, loads cannot overlap their memory latency."""
    lines = (
        [("config_ld", 0, 1024, 0, 16, 1, ONE)]
        + [("mvin", 0x10000 + 64 * t, 64 * t, 64, 16) for t in range(32)]
        + [("fence",)]
    )
    normal = cycles(lines, cfg)
    narrow = cycles(lines, dataclasses.replace(cfg, rs_ld=1))
    assert narrow > 1.3 * normal


def test_a_and_b_from_one_bank_take_two_cycles_per_row(cfg):
    fast = P.with_(cpu_cpi=0.0, kernel_overhead=0.0)

    def stream(b_base: int) -> list[tuple]:
        out: list[tuple] = [("config_ex", 1, 0, 0, 0, 1, 1, 0, ONE, 0)]
        for i in range(100):
            out += [
                ("preload", b_base + 32 * (i % 4), acc_addr(16 * (i % 8), accumulate=True), 16, 16, 16, 16),
                ("compute_preloaded", 16, GARB, 16, 16, 16, 16),
            ]
        return out

    assert cycles(stream(0), cfg, preset=fast) > 1.8 * cycles(stream(4096), cfg, preset=fast)


def test_loads_wait_for_the_computes_reading_their_rows(cfg):
    """WAR through the scratchpad: reloading A's rows must wait for the compute that reads them
    (ReservationStation.scala, gemmini-dosa lines 314-316: a load depends on older ex entries whose
    operand ranges overlap its destination until they complete)."""
    base = [
        ("config_ld", 0, 16, 0, 16, 1, ONE),
        ("config_ex", 1, 0, 0, 0, 1, 1, 0, ONE, 0),
        ("mvin", 0x10000, 0, 16, 16),
        ("mvin", 0x10100, 16, 16, 16),
        ("preload", 16, acc_addr(0), 16, 16, 16, 16),
        ("compute_preloaded", 0, GARB, 16, 16, 16, 16),
    ]
    same = cycles(base + [("mvin", 0x10200, 0, 16, 16), ("fence",)], cfg)
    other = cycles(base + [("mvin", 0x10200, 32, 16, 16), ("fence",)], cfg)
    assert same > other


def test_presets_are_named_and_documented():
    assert DEFAULT_PRESET == "firesim-f1-llc"
    for p in PRESETS.values():
        assert p.doc and p.name
    assert "NOT FITTED" in PRESETS["dram"].doc
    with pytest.raises(UnknownPreset, match="unknown Gemmini timing preset 'nope'"):
        get_preset("nope")


@pytest.mark.parametrize("shape", [(128, 64, 128), (100, 200, 300)])
def test_kernel_overhead_shifts_a_kernel_exactly(cfg, shape):
    """The fitting script solves the per-kernel overhead in closed form because it only shifts
    every event of a kernel (all engines start idle at time 0); loop_ws kernels included."""
    m, n, k = shape
    program = library_program(f"matmul:M={m},N={n},K={k}")

    def run(overhead: float) -> int:
        preset = P.with_(kernel_overhead=overhead)
        return simulate(program, cfg, None, functional=False, check=False, preset=preset).cycles

    assert run(1234.0) - run(0.0) == 1234


def _breakdown(lines, cfg, **kw) -> dict[str, int]:
    r = simulate(prog(*lines), cfg, None, functional=False, check=False, **kw)
    assert sum(r.breakdown.values()) == r.cycles and min(r.breakdown.values()) >= 0
    return r.breakdown


def test_breakdown_attributes_the_array_stream_to_compute(cfg):
    b = _breakdown(_blocks(200, new_weights=True) + [("fence",)], cfg)
    assert b["compute"] > 0.8 * (sum(b.values()) - P.kernel_overhead)
    assert b["overhead"] >= P.kernel_overhead  # the invocation before the first command


def test_breakdown_attributes_loads_and_stores_to_memory(cfg):
    lines = (
        [("config_ld", 0, 64, 0, 16, 1, ONE), ("config_st", 16, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
        + [("mvin", 0x10000 + 1024 * t, 16 * t, 16, 16) for t in range(64)]  # 16-byte rows: latency bound
        + [("mvout", 0x80000 + 256 * t, acc_addr(0), 16, 16) for t in range(8)]
        + [("fence",)]
    )
    b = _breakdown(lines, cfg)
    assert b["compute"] == 0 and b["memory"] > 0.8 * (sum(b.values()) - b["overhead"])


def test_breakdown_of_a_kernel_shifts_only_its_overhead(cfg):
    program = library_program("matmul:M=128,N=64,K=128")

    def parts(overhead: float) -> dict[str, int]:
        return simulate(
            program, cfg, None, functional=False, check=False, preset=P.with_(kernel_overhead=overhead)
        ).breakdown

    a, b = parts(0.0), parts(1000.0)
    assert b["overhead"] - a["overhead"] == 1000 and {k: a[k] for k in ("compute", "memory")} == {
        k: b[k] for k in ("compute", "memory")
    }
