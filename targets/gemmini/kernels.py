"""Evaluate a kernel for a workload: place data, lower the mapping, simulate, verify.

The data, its DRAM placement and the NumPy reference come from `default.build_default`, so
the compiler default and every searched mapping run on the same inputs at the same
addresses and are checked against the same reference. Timing-only evaluation (what a search
uses to rank candidates) skips the data movement; verification always runs the functional
model on the full data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache

from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.default import DefaultKernel, build_default
from zomboss.targets.gemmini.lowering import ConvBuffers, MatmulBuffers, lower
from zomboss.targets.gemmini.mapping import GemminiMapping
from zomboss.targets.gemmini.numerics import f32_bits
from zomboss.targets.gemmini.presets import DEFAULT_PRESET, Preset
from zomboss.targets.gemmini.simulator import SimResult, simulate

from zomboss.program import Program
from zomboss.workload import Workload


@dataclass(frozen=True)
class Evaluation:
    program: Program
    sim: SimResult
    verified: bool | None  # None: timing-only, nothing was computed
    wall_s: float

    @property
    def cycles(self) -> int:
        return self.sim.cycles


def placed(wl: Workload, cfg: GemminiConfig, seed: int = 0) -> DefaultKernel:
    """`build_default`, cached: a search evaluates many mappings of one workload, and building
    the inputs and the NumPy reference of a large instance takes seconds."""
    return _placed(wl.id, wl.op, tuple(wl.shape.items()), cfg, seed)


@lru_cache(maxsize=4)
def _placed(wid: str, op: str, shape: tuple[tuple[str, int], ...], cfg: GemminiConfig, seed: int) -> DefaultKernel:
    return build_default(Workload(wid, op, dict(shape)), cfg, seed)


def buffers(wl: Workload, kernel: DefaultKernel) -> MatmulBuffers | ConvBuffers:
    """The lowering's view of where `build_default` put the operands."""
    a = kernel.meta["addrs"]
    scale_bits = f32_bits(kernel.meta["scale"])
    if wl.op == "matmul":
        return MatmulBuffers(a["A"], a["B"], a["C"], a["D"], scale_bits)
    return ConvBuffers(a["input"], a["weights"], a["output"], a["bias"], scale_bits)


def program_for(wl: Workload, mapping: GemminiMapping | None, cfg: GemminiConfig, kernel: DefaultKernel) -> Program:
    """The library's own program (mapping None) or the lowering of `mapping` on kernel's data."""
    if mapping is None:
        return kernel.program
    return lower(mapping, wl, buffers(wl, kernel), cfg)


def evaluate(
    wl: Workload,
    mapping: GemminiMapping | None,
    cfg: GemminiConfig,
    *,
    preset: str | Preset = DEFAULT_PRESET,
    functional: bool = True,
    check: bool = True,
    seed: int = 0,
) -> Evaluation:
    """Simulate `mapping` (None: the compiler default) on `wl`; verify when `functional`."""
    t0 = time.perf_counter()
    kernel = build_default(wl, cfg, seed)
    program = program_for(wl, mapping, cfg, kernel)
    sim = simulate(
        program,
        cfg,
        kernel.dram if functional else None,
        functional=functional,
        timing=True,
        preset=preset,
        check=check,
    )
    verified = kernel.verify(sim.dram) if functional and sim.dram is not None else None
    return Evaluation(program, sim, verified, time.perf_counter() - t0)
