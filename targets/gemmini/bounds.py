"""The roofline lower bound of a Gemmini kernel, which results report against: the array's
cycles or the least DRAM traffic at the preset's bandwidth, whichever is longer."""

from __future__ import annotations

import math

from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.presets import Preset, get_preset

from zomboss.errors import WorkloadError
from zomboss.workload import Workload


def bound_cycles(wl: Workload, cfg: GemminiConfig, preset: str | Preset) -> int:
    """The kernel's fixed invocation overhead (no command issues before it) plus max(array-bound
    cycles, a round trip plus the minimum DRAM traffic / modelled bandwidth)."""
    p = get_preset(preset)
    dim = cfg.dim
    if wl.op == "matmul":
        m, n, k = wl["M"], wl["N"], wl["K"]
        bias = bool(wl.shape.get("bias", 0))
        rows, cols, depth = (m // dim) * dim + (max(m % dim, 4) if m % dim else 0), n, k  # a row tile: >= 4 cycles
        rd = m * k + k * n + (4 * n if bias else 0)
        wr = m * n
    elif wl.op == "conv":
        nb, h, w, c, kk = wl["N"], wl["H"], wl["W"], wl["C"], wl["K"]
        r, s = wl["R"], wl["S"]
        stride, pad = wl.shape.get("stride", 1), wl.shape.get("pad", 0)
        oh, ow = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
        rows, cols, depth = nb * oh * ow, kk, r * s * c
        rd = nb * h * w * c + r * s * c * kk + (4 * kk if wl.shape.get("bias", 1) else 0)
        wr = nb * oh * ow * kk
    else:
        raise WorkloadError(f"{wl.id}: no roofline for op {wl.op!r}")
    # every output row meets every column and reduction tile in the array once, one row per
    # cycle: a compute feeds max(rows, 4) rows (DIM only beside a weight preload, §7), so the
    # rows are not padded to DIM (a ragged row tile fed before a GARBAGE preload is short)
    compute = rows * -(-cols // dim) * -(-depth // dim)
    # the first read request leaves no earlier than the kernel's fixed invocation overhead and its
    # data returns a round trip later; the channel then streams every byte (likewise for writes)
    memory = max(
        p.rd_latency + rd / p.rd_bytes_per_cycle,
        p.wr_latency + wr / p.wr_bytes_per_cycle,
    )
    return int(math.ceil(p.kernel_overhead + max(compute, memory)))
