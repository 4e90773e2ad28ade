"""The VTA target: suite, lowering template and Candidate-0 in Python; everything else —
legality, the functional simulator, timing, the mapping spaces — comes from vta.md through
the core's doc-driven target (`zomboss.target.DocTarget`, `zomboss.machine.GenericSim`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

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
