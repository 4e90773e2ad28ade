"""Timing behaviours pinned to the RTL: reservation-station load ordering, DMA request selection,
the store pipeline of the measured platform (each test's docstring names the RTL file and line).

RTL revisions: ucb-bar/gemmini 8c3f9923 (current) and charleshong3/gemmini-dosa 67ca2f9e (the
DOSA FireSim platform, `presets.DOSA_RTL`); both have the same ReservationStation and DMA logic.
"""

from __future__ import annotations

import pytest
from zomboss.targets.gemmini import TARGET
from zomboss.targets.gemmini.asm import acc_addr
from zomboss.targets.gemmini.dma import dma_packets
from zomboss.targets.gemmini.lowering import lower
from zomboss.targets.gemmini.mapping import library_default
from zomboss.targets.gemmini.presets import CURRENT_LIBRARY, DEFAULT_PRESET, get_preset
from zomboss.targets.gemmini.simulator import simulate

from .conftest import CURRENT, ONE, RTL_FEATURES, prog

P = get_preset(DEFAULT_PRESET)
FAST = P.with_(cpu_cpi=0.0, kernel_overhead=0.0)


CURRENT_FAST = get_preset(CURRENT).with_(cpu_cpi=0.0, kernel_overhead=0.0)


def _run(lines, cfg, preset=FAST):
    return simulate(prog(*lines), cfg, None, functional=False, check=False, preset=preset)


# ---------------------------------------------------------------------------- reservation station


def _conv_input_loads(block_stride: int) -> list[tuple]:
    """Eight conv-style input mvins of 64 channels (4 blocks) one pixel-row apart; with a large
    block stride every mvin's conservative row range overlaps the next ones'."""
    out: list[tuple] = [("config_ld", 0, 64, 0, block_stride, 1, ONE)]
    out += [("mvin", 0x10000 + 1024 * t, 16 * t, 64, 16) for t in range(8)]
    return [*out, ("fence",)]


def test_a_load_waits_for_older_loads_only_until_they_issue(cfg):
    """ReservationStation.scala (gemmini-dosa 67ca2f9e line 312; ucb-bar/gemmini 8c3f9923 line 329):
    a new load's `deps_ld` are `entries_ld.map { e => e.valid && !e.bits.issued }`, cleared when the
    older load issues, not when it completes; address ranges only order a load after older ex
    and st entries. So loads whose ranges overlap stream like disjoint ones instead of each
    waiting a memory round trip for the previous one's data."""
    overlapping = _run(_conv_input_loads(block_stride=1024), cfg)  # range of mvin t: 16t .. 16t + 3*1024 + 16
    separate = _run(
        [("config_ld", 0, 64, 0, 16, 1, ONE)]
        + [("mvin", 0x10000 + 1024 * t, 64 * t, 64, 16) for t in range(8)]  # no two ranges overlap
        + [("fence",)],
        cfg,
    )
    assert overlapping.cycles == separate.cycles
    # the loads overlap their round trips: well under eight (latency + transfer) in a chain
    chain = 8 * (P.rd_latency + 16 * 64 / P.rd_bytes_per_cycle)
    assert overlapping.cycles < 0.8 * chain


def test_an_accumulator_load_waits_for_the_store_reading_its_rows(cfg):
    """ReservationStation.scala (gemmini-dosa line 318-319): a load's deps_st are older stores whose
    source overlaps its destination (WAR), until the store completes."""
    st = [
        ("config_st", 16, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("config_ld", 2, 64, 0, 16, 1, ONE),
        ("mvin3", 0x10000, acc_addr(0), 16, 16),
        ("mvout", 0x20000, acc_addr(0), 16, 16),
    ]
    same = _run([*st, ("mvin3", 0x10400, acc_addr(0), 16, 16), ("fence",)], cfg)
    other = _run([*st, ("mvin3", 0x10400, acc_addr(64), 16, 16), ("fence",)], cfg)
    assert same.cycles > other.cycles


def _small_loads(n: int) -> list[tuple]:
    """`n` mvins of one 16-byte row each, to disjoint rows (nothing orders them but the DMA)."""
    out: list[tuple] = [("config_ld", 0, 16, 0, 16, 1, ONE)]
    out += [("mvin", 0x10000 + 64 * t, 16 * t, 16, 1) for t in range(n)]
    return [*out, ("fence",)]


def test_at_most_two_loads_have_requests_in_flight(cfg):
    """LoadController.scala (gemmini-dosa 67ca2f9e and ucb-bar/gemmini 8c3f9923, lines 84 and 99):
    `nCmds = (max_in_flight_mem_reqs / block_rows) + 1` = 16 / 16 + 1 = 2 DMACommandTracker
    entries, and a mvin sends its first request only when `cmd_tracker.io.alloc.ready`. An
    entry is held until the command's last byte is in the scratchpad, so one-row mvins run two
    round trips at a time, not sixteen (the reader's request limit)."""
    n = 32
    small = _run(_small_loads(n), cfg)
    # two at a time: about n / 2 round trips in a chain
    assert small.cycles >= n / 2 * P.rd_latency
    # the request limit alone would allow 16 in flight: about n / 16 round trips
    assert small.cycles > 4 * (n / 16) * P.rd_latency
    # large mvins keep the channel busy with two in flight: the data, not the latency, sets the time
    big = _run(
        [("config_ld", 0, 64, 0, 16, 1, ONE)]
        + [("mvin", 0x10000 + 1024 * t, 64 * t, 64, 16) for t in range(8)]
        + [("fence",)],
        cfg,
    )
    assert big.cycles < 8 * 1024 / P.rd_bytes_per_cycle + 3 * P.rd_latency


def _pixel_loads(repeats: int, n: int = 8) -> list[tuple]:
    """`n` first-layer input mvins: 16 pixels of 3 channels each, loaded with `repeats` pixel repeats."""
    out: list[tuple] = [("config_ld", 0, 3, 0, 16, repeats, ONE)]
    out += [("mvin", 0x10000 + 48 * t, 64 + 16 * t, 3, 16) for t in range(n)]
    return [*out, ("fence",)]


def test_pixel_repeats_write_each_loaded_row_that_many_times(cfg):
    """ucb-bar/gemmini 8c3f9923 src/main/scala/gemmini/PixelRepeater.scala: the repeater takes a
    new row only once the held one's repeat count is 0 (`io.req.ready`, line 46) and writes one
    repeat per cycle, stepping the count down (lines 74-85); Scratchpad.scala (lines 430-441)
    puts it between the mvin scale unit and the SRAM banks for every scratchpad load, and
    LoadController.scala line 111 hands it the state's pixel repeats with each DMA request. So a
    load of 16 rows with 5 repeats holds the write path 80 cycles, and the repeater serves one
    load at a time: eight such loads take at least 8 x 80 cycles, where without repeats the
    DMA's round trips bound them (the current RTL's preset: the default one has no repeats)."""
    n, rows, reps = 8, 16, 5
    plain = _run(_pixel_loads(1, n), cfg, CURRENT_FAST).cycles
    repeated = _run(_pixel_loads(reps, n), cfg, CURRENT_FAST).cycles
    assert plain < n * rows * reps <= repeated < n * rows * reps + 2 * CURRENT_FAST.rd_latency
    # the writes of a load that follows a repeated one wait for the repeater
    after = _run([*_pixel_loads(reps, n)[:-1], ("config_ld", 0, 3, 0, 16, 1, ONE), ("mvin", 0x20000, 4000, 3, 16),
                  ("fence",)], cfg, CURRENT_FAST).cycles  # fmt: skip
    assert after >= repeated + rows


def test_a_first_layer_conv_extrapolates_to_its_full_simulation():
    """conv1_r50 as the dev library runs it on the current RTL (5 pixel repeats per input row):
    the steady-state extrapolation inside its loops, which now carries the repeater's clock,
    gives the full simulation's cycles."""
    wl = TARGET.workload("conv1_r50")
    inst = TARGET.instance(wl, RTL_FEATURES)
    program = lower(library_default(wl, inst.cfg, CURRENT_LIBRARY), wl, inst.buffers, inst.cfg)
    assert any(i.op == "loop_conv_ws" and i.args[7] == 5 for i in program.instrs)
    full, fast = (
        simulate(program, inst.cfg, None, functional=False, check=False, preset=CURRENT, extrapolate=x)
        for x in (False, True)
    )
    assert fast.cycles == full.cycles and fast.stats["extrapolation"]["loops"]["extrapolated"] > 0


def test_a_zero_fill_between_loads_does_not_serialise_them(cfg):
    """LoadController.scala line 114 (both revisions): zero fills (DRAM address 0, served by the
    Scratchpad's ZeroWriter) also allocate a tracker entry, and an entry is free again as soon
    as its own command's bytes are in, whatever order the commands were sent in. A load after
    a zero fill therefore takes the zero fill's entry and streams beside the DRAM load before
    it, as a convolution's padded input rows do."""
    loads = [("mvin", 0x10000 + 1024 * t, 64 * t, 64, 16) for t in range(12)]
    plain = [("config_ld", 0, 64, 0, 16, 1, ONE), *loads, ("fence",)]
    zeros = [("config_ld", 0, 64, 0, 16, 1, ONE)]
    for t, ld in enumerate(loads):
        zeros.append(ld)
        if t % 2:
            zeros.append(("mvin", 0, 1024 + 64 * t, 64, 1))  # one zero row in a separate region
    zeros.append(("fence",))
    a, b = _run(plain, cfg), _run(zeros, cfg)
    assert b.cycles < a.cycles + 6 * 8  # each zero fill costs a few cycles, not a round trip


# ---------------------------------------------------------------------------- DMA requests


@pytest.mark.parametrize(
    ("offset", "n", "want"),
    [
        (0, 64, [(0, 64, 64)]),
        (0, 48, [(0, 64, 48)]),  # over-fetch: one 64-byte Get, not 32 + 16
        (16, 48, [(-16, 64, 48)]),  # the 64-byte block holds all 48 bytes
        (32, 48, [(0, 32, 32), (32, 16, 16)]),  # crosses a block: 32 then 16
        (0, 3, [(0, 16, 3)]),  # nothing below one 16-byte beat
        (8, 16, [(-8, 32, 16)]),  # an aligned 16 would hold 8 of the bytes, an aligned 32 all 16
        (16, 16, [(0, 16, 16)]),  # ties keep the smallest request
        (48, 64, [(0, 16, 16), (16, 64, 48)]),
    ],
)
def test_dma_requests_cover_the_most_useful_bytes(offset, n, want):
    """DMA.scala StreamReader (gemmini-dosa 67ca2f9e lines 180-199 and 276): `read_sizes` are the
    powers of two from one beat (16 B) to 64 B; each request is the size, aligned down, whose
    `bytes_read = min(s - offset, bytesLeft)` is largest (`Mux(p.bytes_read > acc.bytes_read, p, acc)`:
    ties keep the smaller), and the next starts at `vaddr + read_bytes_read`."""
    assert list(dma_packets(offset, n, 64, 16)) == want
    for start, size, _ in want:
        assert (offset + start) % size == 0


def test_48_byte_rows_take_one_read_request_each(cfg):
    """DMA.scala StreamReader (lines 180-199): a 48-byte row (3 int8 blocks) at a 64-byte boundary
    is one 64-byte Get carrying 16 bytes nobody asked for."""
    lines = [("config_ld", 0, 64, 0, 16, 1, ONE)] + [("mvin", 0x10000 + 1024 * t, 64 * t, 48, 16) for t in range(4)]
    r = _run([*lines, ("fence",)], cfg)
    assert r.stats["rd_packets"] == 4 * 16
    assert r.stats["rd_fetched_bytes"] == 4 * 16 * 64 and r.stats["rd_bytes"] == 4 * 16 * 48


def test_48_byte_rows_take_one_write_request_each(cfg):
    """DMA.scala StreamWriter (gemmini-dosa 67ca2f9e lines 420-465): the same selection
    (`best_write_packet`), with a byte mask for the bytes outside the row: one 64-byte Put."""
    lines = [
        ("config_st", 64, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        ("mvout", 0x20000, acc_addr(0), 48, 16),
        ("fence",),
    ]
    assert _run(lines, cfg).stats["wr_packets"] == 16


# ---------------------------------------------------------------------------- store pipeline


def test_the_platforms_acc_scale_pipeline_sets_the_mvout_cost(cfg):
    """Configs.scala (gemmini-dosa 67ca2f9e line 207): dummyConfig's acc_scale_args latency is 1
    (defaultConfig, ucb-bar/gemmini 8c3f9923 line 151: 8), so a mvout from the accumulator on the
    DOSA platform starts its SRAM reads 7 cycles earlier than on the default configuration."""
    lines = [("config_st", 16, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0), ("mvout", 0x20000, acc_addr(0), 16, 16), ("fence",)]
    dosa = FAST
    current = FAST.with_(rtl=get_preset("firesim-f1-llc-current").rtl)
    assert dosa.store_fixed_acc == 5 and current.store_fixed_acc == 12
    assert _run(lines, cfg, current).cycles - _run(lines, cfg, dosa).cycles == 7


# ---------------------------------------------------------------------------- DRAM row buffers


def _strided_loads(stride: int, n: int = 16) -> list[tuple]:
    """n one-row mvins of 64 bytes, `stride` bytes apart in DRAM."""
    return [("config_ld", 0, stride, 0, 16, 1, ONE), *[("mvin", 0x100000 + stride * t, 16 * t, 64, 1) for t in range(n)],
            ("fence",)]  # fmt: skip


def test_a_request_into_another_row_of_its_bank_pays_a_row_miss(cfg):
    """FASED's open-page DDR3 of the DOSA platform (firesim-dosa sim/custom-runtime-configs/
    ddr3-FRFCFS-16G-4R-2133-OP.conf: column bits 0-12, bank 13-15, rank 16-17, row 18+): rows
    8 KiB x 32 (one per rank and bank) apart all map to one bank and each open another row; rows
    64 bytes apart share one open row. The model stalls the DMA dram_row_miss cycles per miss
    (no TLB: the bare-metal M-mode binaries never translate, so a 4 KiB page stride costs nothing
    by itself)."""
    same_bank = _run(_strided_loads(8192 * 32), cfg)
    one_row = _run(_strided_loads(64), cfg)
    pages = _run(_strided_loads(4096), cfg)  # two 4 KiB pages per 8 KiB row: 8 rows in 8 banks
    assert same_bank.stats["dram_row_misses"] == 16
    assert one_row.stats["dram_row_misses"] == 1
    assert pages.stats["dram_row_misses"] == 8
    free = FAST.with_(dram_row_miss=0.0)
    assert _run(_strided_loads(8192 * 32), cfg, free).cycles == _run(_strided_loads(64), cfg, free).cycles
    assert same_bank.cycles - one_row.cycles >= 15 * P.dram_row_miss * 0.5
