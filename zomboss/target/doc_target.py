"""A target whose simulator is generated from its ISA doc (`zomboss.machine.GenericSim`).

`DocTarget` implements the rest of the `zomboss.target.Target` protocol on `TargetBase` (the
three evaluation modes, bounds, running program files with an export sidecar) so that a
machine described by its doc needs only: its suite and workload schemas, its inputs and NumPy
reference (`make_instance`), a lowering template (`lower_mapping`), Candidate-0
(`library_mapping`) and, for `export`, its native encoding (`write_native`).

The machine's data lives in one external memory (the doc's `external` memory, byte
addressed); an instance is that memory's initial image plus where the output lands, and a
lowering may add bytes to it (e.g. micro-op kernels) through `Program.meta["dram"]`. Any other
external memory the doc declares (a host-side buffer, a register window modelled as memory)
gets the size the instance gives it (`DocInstance.memories`), zeroed at the start of a run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from zomboss.errors import WorkloadError
from zomboss.knowledge import KB
from zomboss.machine import GenericSim, Memories, Run
from zomboss.mapping import KnobMapping, space
from zomboss.program import Instr, Program, parse_program, program_text
from zomboss.results import KernelResult
from zomboss.target.base import SidecarError, TargetBase, read_sidecar, sidecar_path, sidecar_seed
from zomboss.target.protocol import Evaluation, Mode, Params, params_key
from zomboss.util import MAX_INSTRUCTIONS, atomic_write
from zomboss.workload import OpSchema, Workload, parse_spec


@dataclass(frozen=True, eq=False)
class DocInstance:
    """A workload's inputs for one seed: the external memory's image, where the output lies
    and what it must hold (the NumPy reference, as bytes)."""

    workload: Workload
    params: Params
    seed: int
    image: np.ndarray  # uint8, the external memory before the run
    out_offset: int
    reference: np.ndarray  # uint8, the bytes expected at out_offset
    layout: Mapping[str, int] = field(default_factory=dict)  # region -> byte offset (lowering and sidecar)
    memories: Mapping[str, int] = field(default_factory=dict)  # bytes of every other external memory


def pack_image(regions: Mapping[str, np.ndarray | int], align: int = 1) -> tuple[np.ndarray, dict[str, int]]:
    """An external memory's image built from `regions` in order, each at the next multiple of
    `align` bytes: an array's bytes (C order), or a size in bytes left zero (room for what a
    lowering or the run writes). Returns the image (uint8) and each region's offset, the
    `DocInstance.layout` a lowering reads — so a machine lays out its inputs in one call."""
    layout: dict[str, int] = {}
    end = 0
    for name, r in regions.items():
        layout[name] = -(-end // align) * align
        end = layout[name] + (r if isinstance(r, int) else r.nbytes)
    img = np.zeros(end, dtype=np.uint8)
    for name, r in regions.items():
        if not isinstance(r, int):
            img[layout[name] : layout[name] + r.nbytes] = np.ascontiguousarray(r).view(np.uint8).ravel()
    return img, layout


class DocTarget(TargetBase[KB, DocInstance, Program]):
    """The protocol implemented once for doc-driven machines (subclasses add the hooks)."""

    schemas: Mapping[str, OpSchema] = {}
    external = "dram"

    def __init__(self) -> None:
        super().__init__()
        self._sims: dict[str, GenericSim] = {}

    # ---- hooks of a doc-driven machine --------------------------------------------------------
    def suite(self) -> Sequence[Workload]:
        raise NotImplementedError

    def lower_mapping(self, kb: KB, inst: DocInstance, m: KnobMapping) -> Program:
        raise NotImplementedError

    def library_mapping(self, kb: KB, wl: Workload) -> KnobMapping:
        raise NotImplementedError

    def min_cycles(self, kb: KB, wl: Workload) -> int:
        return 1

    def write_native(self, kb: KB, program: Program, out: Path) -> list[Path]:
        return []

    # ---- machine and suite --------------------------------------------------------------------
    def sim(self, kb: KB) -> GenericSim:
        if kb.digest not in self._sims:
            self._sims[kb.digest] = GenericSim(kb)
        return self._sims[kb.digest]

    def workload(self, spec: str) -> Workload:
        for w in self.suite():
            if w.id == spec:
                return w
        if ":" not in spec:
            raise WorkloadError(
                f"{spec!r}: not a {self.name} suite id (see `zomboss workloads {self.name}`) nor OP:KEY=VALUE,..."
            )
        return parse_spec(spec, self.schemas)

    # ---- the search-facing protocol ------------------------------------------------------------
    def reference_mappings(self, wl: Workload, params: Params) -> dict[str, KnobMapping]:
        return {"library": self.library_mapping(self.kb(params), wl)}

    def make_lowering(self, inst: DocInstance, mapping: KnobMapping) -> Program:
        kb = self.kb(inst.params)
        space(kb, inst.workload.op).check(kb, mapping, inst.workload.shape)  # IllegalMapping names the constraint
        return self.lower_mapping(kb, inst, mapping)

    def program_of(self, lowered: Program) -> Program:
        return lowered

    def memories(self, kb: KB, inst: DocInstance, program: Program) -> Memories:
        """The machine's memories at the start of a verified run of `program`: the external
        memory holding the instance's image and the lowering's bytes, every other external
        memory at the size the instance gives it (zeroes), the on-chip ones zeroed."""
        others = {m.name for m in kb.memories.values() if m.external} - {self.external}
        bad = sorted(set(inst.memories) - others)
        if bad:
            raise WorkloadError(
                f"{inst.workload.id}: the instance sizes {bad[0]!r}, which is not an external memory of the doc "
                f"other than {self.external!r}"
            )
        mem = Memories(kb, {**inst.memories, self.external: len(inst.image)})
        img = mem.arrays[self.external]
        img[:] = inst.image
        for off, data in program.meta.get("dram", ()):  # type: ignore[attr-defined]
            img[off : off + len(data)] = np.frombuffer(bytes(data), dtype=np.uint8)
        return mem

    def _run(
        self, inst: DocInstance, program: Program, mode: Mode, budget: int = MAX_INSTRUCTIONS, extrapolate: bool = False
    ) -> tuple[Run, bool | None]:
        kb = self.kb(inst.params)
        if mode is Mode.VERIFIED:
            mem = self.memories(kb, inst, program)
            run = self.sim(kb).run(program.instrs, mem, check=True, max_instructions=budget)
            got = mem.arrays[self.external][inst.out_offset : inst.out_offset + len(inst.reference)]
            return run, bool(np.array_equal(got, inst.reference))
        run = self.sim(kb).run(
            program.instrs,
            check=mode is Mode.CHECKED,
            max_instructions=budget,
            extrapolate=extrapolate and mode is Mode.TIMING,
        )
        return run, None

    def evaluate(self, inst: DocInstance, mapping: KnobMapping, mode: Mode, *, extrapolate: bool = True) -> Evaluation:
        t0 = time.perf_counter()
        program = self.lower(inst, mapping)
        run, verified = self._run(inst, program, mode, extrapolate=extrapolate)
        return Evaluation(
            target=self.name,
            workload=inst.workload.id,
            mapping=mapping,
            mode=mode,
            cycles=run.cycles,
            verified=verified,
            breakdown=dict(run.schedule.breakdown),
            instructions=run.instructions,
            wall_s=time.perf_counter() - t0,
            seed=inst.seed,
            report=self._report(run, program),
        )

    @staticmethod
    def _report(run: Run, program: Program) -> dict[str, Any]:
        """What the run did; `extrapolation` (a timing evaluation whose program has hardware
        loops): the loops watched, replayed and simulated in full, and the iterations and
        instructions replayed rather than executed."""
        out: dict[str, Any] = {
            "static_instructions": len(program),
            "counts": dict(run.counts),
            "unit_busy": dict(run.schedule.busy),
            "effect_points": run.points,
            "sim_wall_s": round(run.wall_s, 3),
            "simulator": "zomboss.generic_sim (from the doc's effects, rules and latencies)",
        }
        if run.extrapolation and run.extrapolation["loops"]:
            out["extrapolation"] = dict(run.extrapolation)
        return out

    def bound(self, wl: Workload, params: Params, mapping: KnobMapping | None = None) -> int:
        """The workload's own bound; for a mapping, also its busiest unit (units run in order)."""
        b = self.min_cycles(self.kb(params), wl)
        if mapping is None:
            return b
        run = self.sim(self.kb(params)).run(self.lower(self.instance(wl, params), mapping).instrs)
        return max(b, max(run.schedule.busy.values(), default=0))

    # ---- programs and files ---------------------------------------------------------------------
    def parse_program(self, kb: KB, text: str, path: str) -> Program:
        return parse_program(kb, text, path)

    def trace(self, program: Program, params: Params) -> Iterator[tuple[Instr, Mapping[int, int]]]:
        return self.sim(self.kb(params)).trace(program.instrs)

    def min_instructions(self, program: Program, params: Params) -> int:
        return len(program.instrs) + len(self.sim(self.kb(params)).end)

    def run_file(self, program: Program, params: Params, budget: int) -> tuple[int, dict[str, int], dict[str, Any]]:
        run = self.sim(self.kb(params)).run(program.instrs, check=True, max_instructions=budget)
        return run.cycles, dict(run.schedule.breakdown), self._report(run, program)

    def verify_file(self, program: Program, side: Path, params: Params, budget: int, t0: float) -> KernelResult:
        """The sidecar names the workload, the seed and the bytes the lowering added."""
        meta = read_sidecar(side)
        if not isinstance(meta["workload"], str):
            raise SidecarError(f"{side}: a sidecar is a JSON object with 'workload', 'seed' and 'dram'")
        try:
            wl = self.workload(meta["workload"])
        except WorkloadError as e:
            raise SidecarError(f"{side}: 'workload': {e}") from None
        inst = self.instance(wl, params, sidecar_seed(side, meta))
        dram = sidecar_dram(side, meta.get("dram", []), len(inst.image))
        program = Program(program.target, program.instrs, {"dram": dram})
        run, verified = self._run(inst, program, Mode.VERIFIED, budget)
        return KernelResult(
            self.name, wl.id, verified, run.cycles, meta.get("mapping") or {}, wall_s=time.perf_counter() - t0,
            bound_cycles=self.min_cycles(self.kb(params), wl),
            extra={"breakdown": dict(run.schedule.breakdown), **self._report(run, program)},
        )  # fmt: skip

    def write_export(
        self, inst: DocInstance, mapping: KnobMapping, lowered: Program, out: Path, params: Params
    ) -> Path:
        """The program text at `out`, the lowering's bytes and the workload in `<out>.json`,
        and the machine's native encoding next to it (`write_native`)."""
        atomic_write(out, program_text(self.kb(params), lowered))  # registers with their prefix, as read back
        files = [p.name for p in self.write_native(self.kb(params), lowered, out)]
        side = {
            "target": self.name,
            "workload": inst.workload.id,
            "seed": 0,
            "params": dict(params_key(params)),
            "mapping": mapping.to_json(),
            "dram": [[o, bytes(d).hex()] for o, d in lowered.meta.get("dram", ())],  # type: ignore[attr-defined]
            "layout": dict(inst.layout),
            "native": files,
        }
        atomic_write(sidecar_path(out), json.dumps(side, indent=1))
        return out

    def describe(self) -> Mapping[str, Any]:
        return {
            "ops": {
                op: list(s.required) + [f"{k}={v}" for k, v in s.optional.items()] for op, s in self.schemas.items()
            },
            "simulator": "generic: the doc's effects (functional), rules (checked) and units/latencies/tokens (timing)",
            "evaluation_modes": {
                "timing": "schedule only",
                "checked": "schedule + rules",
                "verified": "+ effects, bit-exact",
            },
            "breakdown": {
                "compute": "compute-class instructions running (an engine's class, else no external memory touched)",
                "memory": "only memory-class instructions running",
                "overhead": "only control-class instructions running",
                "stall": "idle/waiting",
            },
        }


def sidecar_dram(side: Path, entries: object, size: int) -> list[tuple[int, bytes]]:
    """The bytes a sidecar places in the external memory, `[[offset, "hex"], ...]`: each entry
    a pair, its bytes hex, and the whole range inside the workload's image of `size` bytes
    (a negative offset would index from the end, a long one would not fit), or SidecarError
    naming the entry."""
    if not isinstance(entries, list):
        raise SidecarError(f"{side}: 'dram' must be a list of [offset, hex bytes] pairs, not {type(entries).__name__}")
    out = []
    for i, e in enumerate(entries):
        if not (isinstance(e, list) and len(e) == 2 and isinstance(e[1], str)):
            raise SidecarError(f"{side}: 'dram' entry {i} must be a pair [offset, hex bytes]")
        off = e[0]
        if isinstance(off, bool) or not isinstance(off, int):
            raise SidecarError(f"{side}: 'dram' entry {i}: the offset must be an integer, not {type(off).__name__}")
        try:
            data = bytes.fromhex(e[1])
        except ValueError as err:
            raise SidecarError(f"{side}: 'dram' entry {i}: not hex bytes ({err})") from None
        if not 0 <= off <= size - len(data):
            shown = str(off) if len(str(off)) <= 24 else f"{str(off)[:12]}...({len(str(off))} digits)"
            raise SidecarError(
                f"{side}: 'dram' entry {i}: {len(data):,} bytes at offset {shown} lie outside the workload's "
                f"{size:,}-byte DRAM image (offsets 0..{size - 1:,})"
            )
        out.append((off, data))
    return out
