"""The VTA target: suite, lowering template and Candidate-0 in Python; everything else —
legality, the functional simulator, timing, the mapping spaces — comes from vta.md through
the core's doc-driven target (`zomboss.target.DocTarget`, `zomboss.machine.GenericSim`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from zomboss.knowledge import KB
from zomboss.mapping import KnobMapping
from zomboss.program import Program
from zomboss.target import DocInstance, DocTarget, Params
from zomboss.workload import Workload

from . import export as X
from .lowering import library, lower
from .suite import SCHEMAS, SUITE, conv_shape, make_instance


class VtaTarget(DocTarget):
    name = "vta"
    doc = Path(__file__).with_name("vta.md")
    schemas = SCHEMAS

    def suite(self) -> Sequence[Workload]:
        return SUITE

    def workload(self, spec: str) -> Workload:
        """A suite id or an inline spec, refused at once when VTA cannot run its shape (channels
        not multiples of 16, a kernel larger than the padded image), not only when it is built."""
        wl = super().workload(spec)
        conv_shape(wl)
        return wl

    def describe(self) -> Mapping[str, Any]:
        """The doc target's facts, the Pynq board's 100 MHz clock the TopHub times were measured
        at (docs/targets/vta.md) and the export's file name."""
        return {**super().describe(), "clock_hz": 100_000_000, "kernel_suffix": ".asm"}

    def make_instance(self, wl: Workload, params: Params, seed: int) -> DocInstance:
        return make_instance(self.kb(params), wl, dict(params), seed)

    def lower_mapping(self, kb: KB, inst: DocInstance, m: KnobMapping) -> Program:
        return lower(kb, inst, m)

    def library_mapping(self, kb: KB, wl: Workload) -> KnobMapping:
        return library(kb, wl)

    def min_cycles(self, kb: KB, wl: Workload) -> int:
        """GEMM tensor ops: one per cycle at best (HLS II = 1)."""
        s = conv_shape(wl)
        return s["N"] * s["ho"] * s["wo"] * (s["K"] // 16) * (s["C"] // 16) * s["R"] * s["S"]

    def write_native(self, kb: KB, program: Program, out: Path) -> list[Path]:
        return X.write(kb, program, out)


TARGET = VtaTarget()
