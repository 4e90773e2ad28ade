"""The DMA's TileLink requests: how a row of DRAM bytes is cut into aligned power-of-two
requests (`dma_packets`), and the request plan of a strided load built from them once per shape
(`read_plan`, `row_ends`). The DRAM these requests reach is `dram.py` (functional) and the
timing model's row buffers and LLC (`engines.py`); this module only says which requests a
transfer is, which both the timing model and the RTL-fidelity tests pin."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=4096)
def dma_packets(offset: int, nbytes: int, max_packet: int, beat_bytes: int) -> tuple[tuple[int, int, int], ...]:
    """(request start relative to the row, request size, useful bytes) of the TileLink requests the
    DMA sends for one row of `nbytes` bytes starting `offset` bytes into a max_packet block.

    Both StreamReader and StreamWriter (`DMA.scala`: read_sizes / read_packets.reduce, lines
    180-199; write_sizes / best_write_packet, lines 420-465 in gemmini-dosa 67ca2f9e and 426-471
    in ucb-bar/gemmini 8c3f9923) consider every power-of-two size from one beat to max_packet,
    aligned down to that size, and pick the one covering the most useful bytes (ties: the
    smallest); the next request starts where the useful bytes ended (`next_vaddr = vaddr +
    read_bytes_read`). A request may therefore fetch bytes outside the row (a 48-byte row at a
    64-byte boundary is one 64-byte Get; the writer masks the extra bytes of its Put), and
    nothing is ever smaller than one beat.
    """
    sizes = []
    s = beat_bytes
    while s <= max_packet:
        sizes.append(s)
        s *= 2
    out = []
    a, left = offset, nbytes
    while left > 0:
        best = (0, 0, 0)
        for size in sizes:
            o = a % size
            got = size - o if size - o < left else left
            if got > best[2]:
                best = (a - o - offset, size, got)
        out.append(best)
        a += best[2]
        left -= best[2]
    return tuple(out)


@lru_cache(maxsize=4096)
def read_plan(
    offset: int, nrows: int, nbytes: int, stride: int, max_packet: int, beat_bytes: int, cyc_per_beat: float
) -> tuple[tuple[tuple[int, float], ...], int]:
    """The read requests of `nrows` DRAM rows of `nbytes` bytes, `stride` bytes apart, the first
    starting `offset` bytes into a max_packet block: (request start relative to the first row,
    cycles its beats hold the channel) of each request in issue order (`dma_packets` per row),
    and the bytes they fetch.

    What a load's requests are depends only on these, so the DMA loop of the timing model
    replays a plan built once per shape. A request's DRAM row (page) is that of its start,
    which lies in the page of the useful bytes it begins with (requests are aligned to their
    power-of-two size, which divides the page size)."""
    out = []
    fetched = 0
    for r in range(nrows):
        a = offset + r * stride
        for off, size, _useful in dma_packets(a % max_packet, nbytes, max_packet, beat_bytes):
            out.append((r * stride + off, -(-size // beat_bytes) * cyc_per_beat))
            fetched += size
    return tuple(out), fetched


@lru_cache(maxsize=4096)
def row_ends(offset: int, nrows: int, nbytes: int, stride: int, max_packet: int, beat_bytes: int) -> tuple[int, ...]:
    """The index in `read_plan`'s request list of the last request of each DRAM row: the row's
    data are in once that request's beats have arrived."""
    out, n = [], 0
    for r in range(nrows):
        n += len(dma_packets((offset + r * stride) % max_packet, nbytes, max_packet, beat_bytes))
        out.append(n - 1)
    return tuple(out)
