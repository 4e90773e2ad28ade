"""The platform's last-level cache, as far as DMA timing needs it: which blocks a request hits.

FireSim's FASED memory model puts an LLC in front of its DRAM model (firesim-dosa
`LastLevelCache.scala`, `LLCParams`: up to 4096 sets x 8 ways x 128-byte blocks; the DOSA image
`..._l2_llc4mb_ddr3` runs 4 MiB). A hit returns without touching DRAM; a miss waits for the DRAM
and opens its row. FASED replaces a random way; LRU is the deterministic stand-in, so that a
simulation stays reproducible. The cache is an object of its own so that one can outlive a
kernel: the DOSA binaries run each tiled kernel right after the library run of the same layer,
and what that run left in the cache is part of what the platform measured.
"""

from __future__ import annotations


class Llc:
    """Set-associative LRU tags (no data): `touch` says whether a block hits and inserts it."""

    __slots__ = ("sets", "ways", "shift", "lines")

    def __init__(self, sets: int, ways: int, block_bytes: int) -> None:
        if sets < 1 or ways < 1 or block_bytes < 1 or block_bytes & (block_bytes - 1):
            raise ValueError(f"bad LLC shape: {sets} sets x {ways} ways x {block_bytes}-byte blocks")
        self.sets, self.ways = sets, ways
        self.shift = block_bytes.bit_length() - 1
        self.lines: list[list[int]] = [[] for _ in range(sets)]  # per set: tags, most recent last

    @property
    def capacity(self) -> int:
        return self.sets * self.ways << self.shift

    def touch(self, block: int) -> bool:
        """Access block (= address >> shift): True on a hit; a miss fills it, evicting the set's
        least recently used block."""
        ways = self.lines[block % self.sets]
        tag = block // self.sets
        if ways and ways[-1] == tag:
            return True
        if tag in ways:
            ways.remove(tag)
            ways.append(tag)
            return True
        ways.append(tag)
        if len(ways) > self.ways:
            del ways[0]
        return False

    def touch_range(self, addr: int, nbytes: int) -> None:
        """Access every block of [addr, addr + nbytes) (a write allocates: write-back cache)."""
        for b in range(addr >> self.shift, ((addr + nbytes - 1) >> self.shift) + 1):
            self.touch(b)

    def copy(self) -> Llc:
        out = Llc(self.sets, self.ways, 1 << self.shift)
        out.lines = [list(w) for w in self.lines]
        return out
