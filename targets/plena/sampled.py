"""Sampled functional verification of a PLENA linear too large to verify whole.

`zomboss default plena linear:... --verify sampled` times the whole kernel (timing-only,
extrapolated) and verifies a sample of its output blocks, MLEN×MLEN tiles of Y (one row block
of `lowering.LinearPlan` by one column block; always the first and the last, the others drawn
from the seed). The lowering emits the slice of the kernel that computes them
(`lowering.lower_slice`): for each sampled block every K chunk of its reduction with the
weight loads it needs, and the prefetch and store of the row span it lies in, in program
order, with the kernel's own templates and registers. The functional simulator runs that
slice with every doc rule checked, on an HBM image holding fresh random inputs (drawn from the
seed, distributed as `golden.make_inputs` draws them) exactly in the X rows and W columns the
sampled blocks read, zeros elsewhere (a slice that reads the wrong rows or columns computes a
wrong block). Each block is compared with its NumPy reference, bf16(Xq·Wq) (then MXFP8 when
the kernel stores Y to HBM), under the gates full verification applies (`verify.py`); the
slice must also leave HBM unchanged outside the output and VRAM zero outside its regions.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from zomboss.errors import WorkloadError
from zomboss.mapping import KnobMapping
from zomboss.verify import sample_blocks, sample_json
from zomboss.workload import Workload

from . import hbm as H
from .config import PlenaConfig
from .layout import MX_BLOCK, Geometry, Kernel, KernelLayout
from .lowering import Block, LinearPlan, linear_plan, lower_slice
from .mapping import check
from .numerics import bf16_round, mx_dequantize, mx_quantize
from .simulator import simulate
from .suite import check_shape
from .verify import expected, plena_gate, slack, strict_gate

MAX_SLICE_INSTRUCTIONS = 20_000_000


@dataclass(frozen=True)
class SampleCheck:
    """What a sampled verification checked."""

    verified: bool
    blocks: tuple[Block, ...]  # the sampled output blocks (row block, column block), all compared
    of: int  # output blocks of the kernel
    instructions: int  # executed by the slice, hardware loops expanded
    wrong: tuple[Block, ...]  # sampled blocks that fail a gate (or are not finite)
    exact: int  # sampled blocks bit-identical to their NumPy reference
    exact_elements: float  # share of the sampled elements bit-identical to it
    max_abs_err: float
    untouched: str  # "" or what the slice wrote outside its output and work regions
    hbm_output: bool  # the kernel stores Y to HBM (its row spans do not fit VRAM together)
    wall_s: float  # building (in verify_sampled), simulating and comparing the slice

    def to_json(self) -> dict[str, object]:
        return {
            **sample_json(self.blocks, self.of, self.instructions, self.wrong),
            "bit_exact_blocks": self.exact,
            "bit_exact_elements": round(self.exact_elements, 6),
            "max_abs_err": self.max_abs_err,
            "block": "MLEN x MLEN tile of Y: [row block, column block]",
            "gates": "plena and strict, per block, as --verify full"
            + ("; the HBM output compared after MXFP8, one code of slack" if self.hbm_output else ""),
            "wall_s": round(self.wall_s, 3),
            **({"untouched": self.untouched} if self.untouched else {}),
        }


def verify_sampled(
    cfg: PlenaConfig, mapping: KnobMapping, wl: Workload, samples: int = 8, seed: int = 0
) -> SampleCheck:
    """Verify `samples` output blocks of `mapping`'s kernel for `wl` (see the module doc)."""
    if wl.op != "linear":
        raise WorkloadError(
            f"--verify sampled: PLENA slices linear kernels only (the family that outgrows VRAM), not {wl.op}; "
            "use --verify full or none"
        )
    t0 = time.perf_counter()
    geo = Geometry.from_params(cfg.params)
    check_shape(wl, geo.mlen, geo.blen, geo.mram_tiles)
    check(cfg.kb, mapping, wl)  # legality first: the plan reads the mapping's knobs
    plan = linear_plan(mapping, wl, geo)
    blocks = tuple((r, c) for r, c in sample_blocks((len(plan.row_blocks), plan.col_blocks), samples, seed))
    kernel = lower_slice(cfg.kb, mapping, wl, frozenset(blocks))
    return replace(check_slice(kernel, cfg, wl, plan, blocks, seed), wall_s=time.perf_counter() - t0)


def check_slice(
    kernel: Kernel, cfg: PlenaConfig, wl: Workload, plan: LinearPlan, blocks: tuple[Block, ...], seed: int
) -> SampleCheck:
    """Run a slice (`kernel`, which may be any program with the slice's layout) on fresh inputs
    for `blocks` and compare each block with NumPy."""
    t0 = time.perf_counter()
    layout = kernel.layout
    data = _Inputs(wl, plan, blocks, seed, cfg.mlen)
    hbm0 = data.image(layout)
    fp = np.zeros(max(layout.fp_sram, default=-1) + 1, dtype=np.float32)
    for slot, value in layout.fp_sram.items():
        fp[slot] = value
    run = simulate(
        kernel.program, cfg, hbm0, fpsram_init=fp, modes=(), check=True, max_instructions=MAX_SLICE_INSTRUCTIONS
    )
    wrong, exact, worst, same, total = [], 0, 0.0, 0, 0
    vram_out = None
    for b in blocks:
        r0, rows = plan.row_blocks[b[0]]
        c0 = b[1] * cfg.mlen
        if layout.hbm_output is not None:
            h = layout.hbm_output
            t = H.plan(h.base, r0 * h.cols + c0, h.scale_offset, h.cols, rows, cfg.mlen)
            out = H.load_rows(run.hbm, t, block=cfg.mx_block, hbm_block=cfg.hbm_block)
        else:
            if vram_out is None:
                o = layout.output
                vram_out = run.vram_tensor(o.base, o.rows, o.cols, o.phys_rows)
            out = vram_out[r0 : r0 + rows, c0 : c0 + cfg.mlen]
        ref = expected(layout, data.reference(b))
        extra = slack(layout, out, ref)
        ok = plena_gate(out, ref, extra).passed and strict_gate(out, ref, extra).passed and bool(np.isfinite(out).all())
        if not ok:
            wrong.append(b)
        exact += int(np.array_equal(out, ref))
        same, total = same + int(np.sum(out == ref)), total + out.size
        err = np.abs(out.astype(np.float64) - ref)
        worst = max(worst, float(np.nanmax(err)) if np.isfinite(err).any() else math.inf)
    detail = _untouched(run.vram, run.hbm, layout, hbm0)
    return SampleCheck(
        verified=not wrong and not detail,
        blocks=blocks,
        of=len(plan.row_blocks) * plan.col_blocks,
        instructions=run.instructions,
        wrong=tuple(wrong),
        exact=exact,
        exact_elements=same / total if total else 1.0,
        max_abs_err=worst,
        untouched=detail,
        hbm_output=layout.hbm_output is not None,
        wall_s=time.perf_counter() - t0,
    )


def _untouched(vram: np.ndarray, hbm: H.Hbm, layout: KernelLayout, hbm0: H.Hbm) -> str:
    """ "" when VRAM outside the declared regions is zero and HBM is unchanged but for the output."""
    keep = np.ones(vram.size, dtype=bool)
    for lo, hi in layout.writable():
        keep[lo:hi] = False
    dirty = np.flatnonzero(keep & (vram != 0))
    if dirty.size:
        return f"VRAM outside the declared regions was written ({dirty.size} elements, first at {int(dirty[0])})"
    h = layout.hbm_output
    count, first = hbm.same_as(hbm0, (h.base, h.base + h.nbytes) if h is not None else (0, 0))
    return f"HBM changed outside the output ({count} bytes, first at {first})" if count else ""


class _Inputs:
    """Fresh X rows of the sampled row blocks and W columns of the sampled column blocks, each
    a function of the seed and its block alone, MXFP8-quantized as HBM holds them."""

    def __init__(self, wl: Workload, plan: LinearPlan, blocks: tuple[Block, ...], seed: int, mlen: int) -> None:
        self.wl, self.plan, self.seed, self.mlen = wl, plan, seed, mlen
        self.rows = {b[0]: self._x(b[0]) for b in blocks}
        self.cols = {b[1]: self._w(b[1]) for b in blocks}

    def _x(self, rb: int) -> tuple[np.ndarray, np.ndarray]:
        rows = self.plan.row_blocks[rb][1]
        x = np.random.default_rng((self.seed, 1, rb)).standard_normal((rows, self.wl["K"])).astype(np.float32)
        return mx_quantize(x)

    def _w(self, cb: int) -> tuple[np.ndarray, np.ndarray]:
        k = self.wl["K"]
        w = np.random.default_rng((self.seed, 2, cb)).standard_normal((k, self.mlen)) / math.sqrt(k)
        return mx_quantize(w.astype(np.float32))

    def image(self, layout: KernelLayout) -> H.Hbm:
        """The HBM image: zeros but for the sampled X rows and W columns."""
        x, w = (next(t for t in layout.inputs if t.name == n) for n in ("X", "W"))
        hbm = H.Hbm()
        top = max(t.base + t.nbytes for t in (*layout.inputs, *filter(None, [layout.hbm_output])))
        hbm.write(top - 1, np.zeros(1, np.uint8))  # allocate once
        for rb, (codes, scales) in self.rows.items():
            r0 = self.plan.row_blocks[rb][0]
            hbm.write(x.base + r0 * x.cols, codes)
            hbm.write(x.base + x.scale_offset + r0 * x.cols // MX_BLOCK, scales)
        for cb, (codes, scales) in self.cols.items():
            c0 = cb * self.mlen
            hbm.write_rows(w.base + c0, w.cols, codes)
            hbm.write_rows(w.base + w.scale_offset + c0 // MX_BLOCK, w.cols // MX_BLOCK, scales)
        return hbm

    def reference(self, b: Block) -> np.ndarray:
        """bf16(Xq·Wq) of one block, in float32 as `golden.reference` computes it."""
        xq, wq = mx_dequantize(*self.rows[b[0]]), mx_dequantize(*self.cols[b[1]])
        return bf16_round(xq @ wq)
