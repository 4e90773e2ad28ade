"""Sampled functional verification: a kernel too large to verify whole, checked block by block.

`zomboss default gemmini SPEC --verify sampled` times the whole kernel (timing-only,
extrapolated) and verifies a random sample of its output blocks (one hardware loop's output
each, always with the first and the last, where the edge tiles and the padding are): the
lowering emits only the loops that compute the sampled blocks, every reduction step of them,
and the loops that first load an operand block they reuse pinned (`lowering.slice_closure`),
in program order. The functional simulator runs that slice with every doc rule checked, on a
DRAM image that holds random inputs exactly where those blocks read (drawn from the seed
after the program is built; all other bytes are zero, so a loop reading outside its operands
shows as a wrong block), and each sampled block is compared with its NumPy reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from zomboss.targets.gemmini.dram import Dram, place
from zomboss.targets.gemmini.instance import (
    ConvBuffers,
    GemminiInstance,
    MatmulBuffers,
    conv_reference,
    matmul_reference,
)
from zomboss.targets.gemmini.lowering import Block, lower, output_blocks, slice_closure
from zomboss.targets.gemmini.mapping import ConvView, MatmulView, view
from zomboss.targets.gemmini.platform import check_mapping
from zomboss.targets.gemmini.presets import Preset, get_preset
from zomboss.targets.gemmini.simulator import simulate
from zomboss.targets.gemmini.suite import conv_out_dims

from zomboss.mapping import KnobMapping
from zomboss.util import TooLargeToVerify
from zomboss.verify import sample_blocks, sample_json

MAX_SAMPLED_DRAM = 4 << 30  # the DRAM image is mapped lazily; only what the slice reads is written
MAX_SLICE_INSTRUCTIONS = 20_000_000


@dataclass(frozen=True)
class SampleCheck:
    """What a sampled verification checked."""

    verified: bool
    blocks: tuple[Block, ...]  # the sampled output blocks (all compared)
    of: int  # output blocks of the kernel
    instructions: int  # executed by the slice, hardware loops expanded
    wrong: tuple[Block, ...]  # sampled blocks that differ from the reference

    def to_json(self) -> dict[str, object]:
        return sample_json(self.blocks, self.of, self.instructions, self.wrong)


def verify_sampled(
    inst: GemminiInstance, mapping: KnobMapping, preset: str | Preset, samples: int = 8, seed: int = 0
) -> SampleCheck:
    """Verify `samples` output blocks of `mapping` on `inst`'s placement (see the module doc)."""
    wl, cfg = inst.workload, inst.cfg
    check_mapping(mapping, get_preset(preset).rtl)
    if inst._dram_bytes > MAX_SAMPLED_DRAM:
        raise TooLargeToVerify(
            f"{wl.id}: its operands span {inst._dram_bytes / (1 << 30):.1f} GiB of DRAM, more than the "
            f"{MAX_SAMPLED_DRAM >> 30} GiB image --verify sampled maps (--verify none times it)"
        )
    m = view(mapping)
    grid = output_blocks(m, wl, cfg)
    blocks = sample_blocks(tuple(n for n, _ in grid), samples, seed)
    program = lower(mapping, wl, inst.buffers, cfg, frozenset(blocks))
    addrs = place(list(inst._sizes))
    top = addrs[-1] + inst._sizes[-1]  # the last allocation is slack for padded tiles
    dram = Dram(nbytes=top, limit=top)  # zero pages are mapped on first write
    for size in inst._sizes:  # the allocator state matches the placement
        dram.alloc(size)
    keep = slice_closure(m, frozenset(blocks))
    inputs = _MatmulInputs(inst, m, keep, seed) if isinstance(m, MatmulView) else _ConvInputs(inst, m, keep, seed)
    inputs.write(dram)
    sim = simulate(
        program,
        cfg,
        dram,
        functional=True,
        timing=False,
        preset=preset,
        check=True,
        max_instructions=MAX_SLICE_INSTRUCTIONS,
    )
    wrong = tuple(b for b in blocks if not np.array_equal(inputs.output(dram, b), inputs.reference(b)))
    n_blocks = int(np.prod([n for n, _ in grid]))
    return SampleCheck(not wrong, blocks, n_blocks, int(sim.stats["instructions"]), wrong)


def _i8(seed: int, *key: int, shape: tuple[int, ...]) -> np.ndarray:
    """Random int8 values of one input region, a function of the seed and the region alone."""
    return np.random.default_rng((seed, *key)).integers(-128, 128, size=shape, dtype=np.int8)


def _bias(seed: int, n: int, depth: int) -> np.ndarray:
    span = int(np.sqrt(depth) * 73.9**2)  # as `instance._bias`
    return np.random.default_rng((seed, 0xB1A5)).integers(-span, span + 1, size=n, dtype=np.int32)


class _MatmulInputs:
    """A's rows of the kept i blocks, B's columns of the kept j blocks, the bias."""

    def __init__(self, inst: GemminiInstance, m: MatmulView, keep: frozenset[Block], seed: int) -> None:
        wl = inst.workload
        assert isinstance(inst.buffers, MatmulBuffers)
        self.inst, self.bufs = inst, inst.buffers
        self.M, self.N, self.K = wl["M"], wl["N"], wl["K"]
        (_, self.bi), (_, self.bj) = output_blocks(m, wl, inst.cfg)
        self.seed, self.keep = seed, keep
        self.bias = _bias(seed, self.N, self.K) if wl["bias"] else None

    def _rows(self, i: int) -> slice:
        return slice(i * self.bi, min((i + 1) * self.bi, self.M))

    def _cols(self, j: int) -> slice:
        return slice(j * self.bj, min((j + 1) * self.bj, self.N))

    @cache  # noqa: B019 - one object per verification
    def a(self, i: int) -> np.ndarray:
        r = self._rows(i)
        return _i8(self.seed, 1, i, shape=(r.stop - r.start, self.K))

    @cache  # noqa: B019
    def b(self, j: int) -> np.ndarray:
        c = self._cols(j)
        return _i8(self.seed, 2, j, shape=(self.K, c.stop - c.start))

    def write(self, dram: Dram) -> None:
        K, N = self.K, self.N
        for i in sorted({i for i, _ in self.keep}):
            dram.write(self.bufs.a + self._rows(i).start * K, self.a(i))
        for j in sorted({j for _, j in self.keep}):
            dram.write(self.bufs.b + self._cols(j).start, self.b(j), row_stride_bytes=N)
        if self.bias is not None:
            dram.write(self.bufs.bias, self.bias)

    def reference(self, blk: Block) -> np.ndarray:
        i, j = blk
        d = self.bias[self._cols(j)] if self.bias is not None else None
        return matmul_reference(self.a(i), self.b(j), d, bool(self.inst.workload["relu"]), self.inst.scale)

    def output(self, dram: Dram, blk: Block) -> np.ndarray:
        r, c = self._rows(blk[0]), self._cols(blk[1])
        addr = self.bufs.c + r.start * self.N + c.start
        return dram.read(addr, np.int8, (r.stop - r.start, c.stop - c.start), row_stride_bytes=self.N)


class _ConvInputs:
    """The input images of the kept batch blocks, the weights' columns of the kept channel
    blocks, the bias."""

    def __init__(self, inst: GemminiInstance, m: ConvView, keep: frozenset[Block], seed: int) -> None:
        wl = inst.workload
        assert isinstance(inst.buffers, ConvBuffers)
        self.inst, self.bufs, self.wl = inst, inst.buffers, wl
        self.oh, self.ow = conv_out_dims(wl)
        self.steps = tuple(s for _, s in output_blocks(m, wl, inst.cfg))
        self.seed, self.keep = seed, keep
        depth = wl["R"] * wl["S"] * wl["C"]
        self.bias = _bias(seed, wl["K"], depth) if wl["bias"] else None

    def _span(self, dim: int, t: int, n: int) -> slice:
        return slice(t * self.steps[dim], min((t + 1) * self.steps[dim], n))

    @cache  # noqa: B019 - one object per verification
    def x(self, b: int) -> np.ndarray:
        wl = self.wl
        s = self._span(0, b, wl["N"])
        return _i8(self.seed, 1, b, shape=(s.stop - s.start, wl["H"], wl["W"], wl["C"]))

    @cache  # noqa: B019
    def w(self, o: int) -> np.ndarray:
        wl = self.wl
        s = self._span(3, o, wl["K"])
        return _i8(self.seed, 2, o, shape=(wl["R"], wl["S"], wl["C"], s.stop - s.start))

    @cache  # noqa: B019
    def _conv(self, b: int, o: int) -> np.ndarray:
        wl = self.wl
        d = self.bias[self._span(3, o, wl["K"])] if self.bias is not None else None
        return conv_reference(self.x(b), self.w(o), d, wl["stride"], wl["pad"], bool(wl["relu"]), self.inst.scale)

    def write(self, dram: Dram) -> None:
        wl = self.wl
        H, W, C, K = wl["H"], wl["W"], wl["C"], wl["K"]
        for b in sorted({blk[0] for blk in self.keep}):
            dram.write(self.bufs.input + self._span(0, b, wl["N"]).start * H * W * C, self.x(b))
        for o in sorted({blk[3] for blk in self.keep}):
            w = self.w(o)
            dram.write(self.bufs.weights + self._span(3, o, K).start, w.reshape(-1, w.shape[3]), row_stride_bytes=K)
        if self.bias is not None:
            dram.write(self.bufs.bias, self.bias)

    def reference(self, blk: Block) -> np.ndarray:
        b, r, c, o = blk
        return self._conv(b, o)[:, self._span(1, r, self.oh), self._span(2, c, self.ow)]

    def output(self, dram: Dram, blk: Block) -> np.ndarray:
        wl = self.wl
        b, r, c, o = (
            self._span(k, t, n) for k, (t, n) in enumerate(zip(blk, (wl["N"], self.oh, self.ow, wl["K"]), strict=True))
        )
        full = np.zeros((b.stop - b.start, r.stop - r.start, c.stop - c.start, o.stop - o.start), dtype=np.int8)
        K, ow = wl["K"], self.ow
        for bb in range(b.start, b.stop):
            for rr in range(r.start, r.stop):
                addr = self.bufs.output + ((bb * self.oh + rr) * ow + c.start) * K + o.start
                full[bb - b.start, rr - r.start] = dram.read(
                    addr, np.int8, (c.stop - c.start, o.stop - o.start), row_stride_bytes=K
                )
        return full
