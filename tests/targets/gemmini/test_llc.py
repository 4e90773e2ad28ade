"""The modelled LLC (`llc.py`) and what the `firesim-f1-llc-cache` preset does with it: hits skip
the DRAM, misses pay for it, writes allocate, and a cache can carry over from one kernel to the
next as in the DOSA binaries (a tiled run right after its layer's library run)."""

from __future__ import annotations

import pytest
from zomboss.targets.gemmini.asm import acc_addr
from zomboss.targets.gemmini.llc import Llc
from zomboss.targets.gemmini.presets import DEFAULT_PRESET, FIRESIM_F1_LLC_CACHE, get_preset
from zomboss.targets.gemmini.simulator import simulate

from .conftest import ONE, prog

CACHED = FIRESIM_F1_LLC_CACHE.with_(cpu_cpi=0.0, kernel_overhead=0.0)


def test_lru_within_a_set():
    c = Llc(sets=4, ways=2, block_bytes=128)
    assert c.capacity == 4 * 2 * 128
    assert not c.touch(0) and not c.touch(4)  # both map to set 0
    assert c.touch(0)  # 0 is now the most recent, 4 the least
    assert not c.touch(8)  # evicts 4
    assert c.touch(0) and not c.touch(4)
    assert not c.touch(1) and c.touch(1)  # another set is independent
    d = c.copy()
    d.touch(12)
    assert c.lines[0] != d.lines[0]


def test_touch_range_allocates_every_block_it_spans():
    c = Llc(sets=64, ways=8, block_bytes=128)
    c.touch_range(100, 200)  # bytes 100..299: blocks 0, 1, 2
    assert all(c.touch(b) for b in (0, 1, 2)) and not c.touch(3)


@pytest.mark.parametrize("shape", [(0, 8, 128), (16, 0, 128), (16, 8, 96)])
def test_a_bad_shape_is_refused(shape):
    with pytest.raises(ValueError, match="bad LLC shape"):
        Llc(*shape)


def _loads(base: int, n: int) -> list[tuple]:
    """n mvins of 16 rows x 64 bytes, 1 KiB apart in DRAM."""
    return [
        ("config_ld", 0, 64, 0, 16, 1, ONE),
        *[("mvin", base + 1024 * t, 64 * t, 64, 16) for t in range(n)],
        ("fence",),
    ]


def _run(lines, cfg, llc=None, preset=CACHED, **kw):
    return simulate(prog(*lines), cfg, None, functional=False, check=False, preset=preset, llc=llc, **kw)


def test_a_warm_cache_saves_the_miss_latency(cfg):
    llc = CACHED.new_llc()
    cold = _run(_loads(0x10000, 8), cfg, llc)
    warm = _run(_loads(0x10000, 8), cfg, llc)  # the same data again: every request hits
    assert cold.stats["llc_read_misses"] == cold.stats["rd_packets"] and cold.stats["llc_read_hits"] == 0
    assert warm.stats["llc_read_hits"] == warm.stats["rd_packets"] and warm.stats["llc_read_misses"] == 0
    assert warm.stats["dram_row_misses"] == 0 < cold.stats["dram_row_misses"]
    assert cold.cycles - warm.cycles >= CACHED.llc_miss_latency
    fresh = _run(_loads(0x10000, 8), cfg)  # no cache given: each run starts empty
    assert fresh.cycles == cold.cycles


def test_a_cache_too_small_for_the_data_misses_again(cfg):
    tiny = Llc(sets=1, ways=2, block_bytes=128)  # 256 bytes
    _run(_loads(0x10000, 8), cfg, tiny)
    again = _run(_loads(0x10000, 8), cfg, tiny)
    assert again.stats["llc_read_hits"] == 0


def test_a_mvout_allocates_its_blocks(cfg):
    llc = CACHED.new_llc()
    store = [("config_st", 64, 0, ONE, 0, 0, 0, 0, 0, 0, 0, 0, 0), ("mvout", 0x40000, acc_addr(0), 64, 16), ("fence",)]
    _run(store, cfg, llc)
    back = _run([("config_ld", 0, 64, 0, 16, 1, ONE), ("mvin", 0x40000, 0, 64, 16), ("fence",)], cfg, llc)
    assert back.stats["llc_read_hits"] == back.stats["rd_packets"] > 0


def test_without_an_llc_nothing_changes_and_a_cached_preset_never_extrapolates(cfg):
    plain = get_preset(DEFAULT_PRESET)
    assert plain.llc_sets == 0
    r = _run(_loads(0x10000, 8), cfg, preset=plain.with_(cpu_cpi=0.0, kernel_overhead=0.0), llc=Llc(1, 1, 128))
    assert "llc_read_hits" not in r.stats
    fast = plain.with_(cpu_cpi=0.0, kernel_overhead=0.0)
    assert "extrapolation" in _run(_loads(0x10000, 8), cfg, preset=fast, extrapolate=True).stats
    assert "extrapolation" not in _run(_loads(0x10000, 8), cfg, extrapolate=True).stats  # stale cache otherwise


def test_blocks_smaller_than_a_dma_request_are_refused(cfg):
    with pytest.raises(ValueError, match="smaller than a DMA request"):
        _run(_loads(0x10000, 1), cfg, preset=CACHED.with_(llc_block_bytes=32))
