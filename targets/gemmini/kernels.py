"""Evaluate a mapping on an instance: lower it, simulate it in one of the three modes, verify.

TIMING runs the timing model alone (no data moves, no rule checks: what a search ranks by);
CHECKED adds the doc's rule checker on every executed instruction (hardware loops expanded);
VERIFIED runs the functional model too, on a copy of the instance's input image, and compares
the output with the instance's NumPy reference. `bound_cycles` is the roofline lower bound the
results report against.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.instance import GemminiInstance
from zomboss.targets.gemmini.lowering import lower
from zomboss.targets.gemmini.platform import check_mapping
from zomboss.targets.gemmini.presets import DEFAULT_PRESET, Preset, get_preset
from zomboss.targets.gemmini.simulator import SimResult, simulate

from zomboss.errors import WorkloadError
from zomboss.mapping import KnobMapping
from zomboss.program import Program
from zomboss.target import Mode
from zomboss.workload import Workload


@dataclass(frozen=True)
class Run:
    """One lowered and simulated mapping."""

    program: Program
    sim: SimResult
    verified: bool | None  # None unless the mode is VERIFIED
    wall_s: float

    @property
    def cycles(self) -> int:
        return self.sim.cycles


def run(
    inst: GemminiInstance,
    mapping: KnobMapping,
    mode: Mode,
    preset: str | Preset = DEFAULT_PRESET,
    *,
    extrapolate: bool = True,
    program: Program | None = None,
) -> Run:
    """Lower `mapping` for the instance (IllegalMapping if it breaks a constraint; `program`: its
    lowering, already made) and simulate it on the preset's platform (UnsupportedOnRtl if its
    RTL cannot run the mapping's loops).
    TIMING runs extrapolate steady loop periods, CHECKED runs those inside hardware loops
    whose commands the checker vouched for at once, unless `extrapolate` is off."""
    t0 = time.perf_counter()
    check_mapping(mapping, get_preset(preset).rtl)  # e.g. pinned halves on an RTL without spad ids
    if program is None:
        program = lower(mapping, inst.workload, inst.buffers, inst.cfg)
    functional = mode is Mode.VERIFIED
    dram = inst.dram() if functional else None
    sim = simulate(
        program,
        inst.cfg,
        dram,
        functional=functional,
        timing=True,
        preset=preset,
        check=mode is not Mode.TIMING,
        extrapolate=extrapolate and mode is not Mode.VERIFIED,
    )
    verified = inst.verify(sim.dram) if functional and sim.dram is not None else None
    return Run(program, sim, verified, time.perf_counter() - t0)


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
