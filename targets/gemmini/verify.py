"""Evaluate a mapping on an instance: lower it, simulate it in one of the three modes, verify.

TIMING runs the timing model alone (no data moves, no rule checks: what a search ranks by);
CHECKED adds the doc's rule checker on every executed instruction (hardware loops expanded);
VERIFIED runs the functional model too, on a copy of the instance's input image, and compares
the output with the instance's NumPy reference.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from zomboss.targets.gemmini.instance import GemminiInstance
from zomboss.targets.gemmini.lowering import lower
from zomboss.targets.gemmini.platform import check_mapping
from zomboss.targets.gemmini.presets import Preset, get_preset
from zomboss.targets.gemmini.simulator import SimResult, simulate

from zomboss.mapping import KnobMapping
from zomboss.program import Program
from zomboss.target import Mode


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
    preset: str | Preset | None = None,
    *,
    extrapolate: bool = True,
    program: Program | None = None,
) -> Run:
    """Lower `mapping` for the instance (IllegalMapping if it breaks a constraint; `program`: its
    lowering, already made) and simulate it on the preset's platform (None: the one the instance's
    configuration describes, `GemminiConfig.preset`; UnsupportedOnRtl if its
    RTL cannot run the mapping's loops).
    TIMING runs extrapolate steady loop periods, CHECKED runs those inside hardware loops
    whose commands the checker vouched for at once, unless `extrapolate` is off."""
    t0 = time.perf_counter()
    preset = preset if preset is not None else inst.cfg.preset
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
