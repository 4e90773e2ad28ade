"""The Gemmini target (`zomboss.target.Target`): suite, instances, reference mappings, lowering,
evaluation in three modes, roofline bound, program files and the C export.

Everything machine-specific comes from gemmini.md through the KB of the requested parameter
overrides (`kb(params)`): the configuration (`GemminiConfig.from_kb`), the mapping space, the
rules the simulator checks. Candidate-0 is `lower(reference_mappings(wl)["library"])`: the
tiling of the default timing preset's library revision (`tiling.py`, `presets.Library`: the
platform the timing model was fitted to) as a mapping, lowered through the hardware loops.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from zomboss.targets.gemmini.asm import parse_program
from zomboss.targets.gemmini.bounds import bound_cycles
from zomboss.targets.gemmini.breakdown import BREAKDOWN
from zomboss.targets.gemmini.config import DOC, GemminiConfig, machine_kb
from zomboss.targets.gemmini.export import export_c, program_text
from zomboss.targets.gemmini.instance import GemminiInstance, build_instance
from zomboss.targets.gemmini.lowering import lower
from zomboss.targets.gemmini.mapping import exo_style, library_default
from zomboss.targets.gemmini.platform import check_mapping
from zomboss.targets.gemmini.presets import DEFAULT_PRESET, PRESETS, get_preset
from zomboss.targets.gemmini.sampled import verify_sampled
from zomboss.targets.gemmini.simulator import SimResult, dynamic_stream, simulate
from zomboss.targets.gemmini.suite import SCHEMAS, SUITE, workload
from zomboss.targets.gemmini.verify import run

from zomboss.errors import WorkloadError, ZombossError
from zomboss.knowledge import KB
from zomboss.mapping import KnobMapping
from zomboss.program import Instr, Program
from zomboss.results import KernelResult
from zomboss.target import (
    Evaluation,
    Instance,
    Mode,
    Params,
    ParamsKey,
    SidecarError,
    TargetBase,
    params_key,
    read_sidecar,
    sidecar_path,
    sidecar_seed,
)
from zomboss.util import atomic_write
from zomboss.workload import Workload


class GemminiTarget(TargetBase[GemminiConfig, GemminiInstance, Program]):
    name = "gemmini"
    doc = DOC
    program_kind = "a Gemmini program"
    # the latest lowerings: a search lowers a candidate to compare its program with those
    # already simulated, then simulates it (one lowering for both)
    lowerings_kept = 2

    # ---- machine and suite
    def make_kb(self, key: ParamsKey) -> KB:
        return machine_kb(key)

    def make_config(self, key: ParamsKey) -> GemminiConfig:
        return GemminiConfig.from_kb(machine_kb(key))

    def suite(self) -> Sequence[Workload]:
        return SUITE

    def workload(self, spec: str) -> Workload:
        return workload(spec)

    # ---- the search-facing protocol
    def make_instance(self, wl: Workload, params: Params, seed: int) -> GemminiInstance:
        """The placement of `wl`'s operands (inputs and reference built on first verified use)."""
        return build_instance(wl, self.config(params), params, seed)

    def reference_mappings(self, wl: Workload, params: Params) -> dict[str, KnobMapping]:
        """Candidate-0 ("library": tiled_matmul_auto / tiled_conv_auto) first, then "exo"."""
        cfg = self.config(params)
        return {"library": library_default(wl, cfg), "exo": exo_style(wl, cfg)}

    def lower(self, inst: Instance, mapping: KnobMapping) -> Program:
        """The program of `mapping` on the instance's placement (IllegalMapping if it breaks a
        constraint of gemmini.md §11)."""
        return super().lower(_gemmini(inst), mapping)

    def make_lowering(self, inst: GemminiInstance, mapping: KnobMapping) -> Program:
        return lower(mapping, inst.workload, inst.buffers, inst.cfg)

    def program_of(self, lowered: Program) -> Program:
        return lowered

    def evaluate(self, inst: Instance, mapping: KnobMapping, mode: Mode, *, extrapolate: bool = True) -> Evaluation:
        g = _gemmini(inst)
        check_mapping(mapping, get_preset(g.cfg.preset).rtl)  # before lowering, as `run` does
        r = run(g, mapping, mode, extrapolate=extrapolate, program=self.lower(inst, mapping))
        sim = r.sim
        breakdown = dict(sim.breakdown)
        assert tuple(sorted(breakdown)) == tuple(sorted(BREAKDOWN)) and sum(breakdown.values()) == sim.cycles
        return Evaluation(
            target=self.name,
            workload=g.workload.id,
            mapping=mapping,
            mode=mode,
            cycles=sim.cycles,
            verified=r.verified,
            breakdown=breakdown,
            instructions=int(sim.stats["instructions"]),
            wall_s=r.wall_s,
            seed=g.seed,
            report={
                **_report(sim),
                "kernel": _kernel(mapping),
                "static_instructions": len(r.program),
                **({"extrapolation": sim.stats["extrapolation"]} if "extrapolation" in sim.stats else {}),
            },
        )

    def verify_sampled(
        self, inst: Instance, mapping: KnobMapping, samples: int, seed: int
    ) -> tuple[bool, Mapping[str, object]]:
        """`sampled.verify_sampled` on the platform of the instance's configuration."""
        g = _gemmini(inst)
        check = verify_sampled(g, mapping, g.cfg.preset, samples, seed)
        return check.verified, check.to_json()

    def bound(self, wl: Workload, params: Params, mapping: KnobMapping | None = None) -> int:
        """The roofline: max(array cycles (rows unpadded), least DRAM traffic / bandwidth of
        the preset the parameters' RTL describes). It holds for every mapping, so `mapping` does not
        tighten it."""
        cfg = self.config(params)
        return bound_cycles(wl, cfg, cfg.preset)

    # ---- programs and files
    def parse_program(self, kb: KB, text: str, path: str) -> Program:
        return parse_program(kb, text, path)

    def trace(self, program: Program, params: Params) -> Iterator[tuple[Instr, Mapping[int, int]]]:
        """Gemmini has no registers; the stream is the program with its hardware loops expanded
        into the commands their FSMs issue (what the simulator checks)."""
        return dynamic_stream(program, self.config(params))

    def min_instructions(self, program: Program, params: Params) -> int:
        """A lower bound of the instructions `program` executes (each hardware loop at least itself)."""
        return len(program)

    def run_file(self, program: Program, params: Params, budget: int) -> tuple[int, dict[str, int], dict[str, Any]]:
        sim = simulate(program, self.config(params), None, functional=False, timing=True, max_instructions=budget)
        return sim.cycles, dict(sim.breakdown), _report(sim)

    def verify_file(self, program: Program, side: Path, params: Params, budget: int, t0: float) -> KernelResult:
        """The sidecar names the workload, the seed and the operands' placement (which must be
        the instance's)."""
        meta = read_sidecar(side)
        exported = meta.get("params", {})
        if isinstance(exported, dict) and params_key(exported) != params_key(params):
            given = ", ".join(f"{k}={v}" for k, v in params_key(exported)) or "none"
            raise SidecarError(f"{side}: the program was exported for --param overrides {given}; pass the same ones")
        seed = sidecar_seed(side, meta)
        try:
            wl = workload(str(meta["workload"]))
            inst = self.instance(wl, params, seed)
        except WorkloadError as e:
            raise WorkloadError(f"{side}: {e}") from None
        want = inst.buffers.__dict__
        try:
            got = {str(k): int(v) for k, v in dict(meta.get("buffers", {})).items()}
        except (TypeError, ValueError):
            raise SidecarError(f"{side}: 'buffers' must map operand names to integer addresses") from None
        if got != want:
            raise SidecarError(f"{side}: buffers {got} differ from the placement of {wl.id} ({want})")
        try:
            dram = inst.dram()  # the operands' size is checked before they are allocated
        except WorkloadError as e:
            raise WorkloadError(f"{side}: {e}") from None
        sim = simulate(program, self.config(params), dram, functional=True, timing=True, max_instructions=budget)
        assert sim.dram is not None
        return KernelResult(
            target=self.name,
            workload=wl.id,
            verified=inst.verify(sim.dram),
            cycles=sim.cycles,
            mapping=meta.get("mapping") or {},
            wall_s=time.perf_counter() - t0,
            bound_cycles=self.bound(wl, params),
            extra={"breakdown": sim.breakdown, **_report(sim)},
        )

    def write_export(
        self, inst: GemminiInstance, mapping: KnobMapping, lowered: Program, out: Path, params: Params
    ) -> Path:
        """The kernel as a bare-metal C test at `out`, and next to it the program text (`.asm`)
        with its sidecar, which `simulate_file` verifies."""
        if out.suffix == ".asm":
            raise ZombossError(f"{out}: the C test needs another suffix (.c); the .asm program is written next to it")
        wl, bufs = inst.workload, inst.buffers
        addrs = {k: v for k, v in bufs.__dict__.items() if k != "scale_bits"}
        export_c(wl, lowered, out, addrs, bufs.scale_bits)
        asm = out.with_suffix(".asm")
        atomic_write(asm, program_text(lowered, f"{wl.id}: {wl.spec}"))
        side = {
            "target": self.name,
            "workload": wl.id,
            "seed": inst.seed,
            "params": dict(params_key(params)),
            "mapping": mapping.to_json(),
            "buffers": bufs.__dict__,
        }
        atomic_write(sidecar_path(asm), json.dumps(side, indent=2) + "\n")
        return out

    def describe(self) -> Mapping[str, Any]:
        return {
            "ops": {op: list(s.required) + [f"{k}={v}" for k, v in s.optional.items()] for op, s in SCHEMAS.items()},
            "timing_presets": {p.name: p.doc for p in PRESETS.values()},
            "preset_platforms": {p.name: {"library": p.library.name, "rtl": p.rtl.name} for p in PRESETS.values()},
            "default_preset": DEFAULT_PRESET,
            "modes": [m.value for m in Mode],
            "reference_mappings": ["library (tiled_matmul_auto / tiled_conv_auto via loop_ws / loop_conv_ws)", "exo"],
            # the FireSim SoC the timing model is calibrated against runs at 1 GHz
            # (WithFireSimConfigTweaks; docs/targets/gemmini-timing.md)
            "clock_hz": 1_000_000_000,
            "kernel_suffix": ".c",  # `export` writes a bareMetalC test (the assembly beside it)
        }


def _gemmini(inst: Instance) -> GemminiInstance:
    if not isinstance(inst, GemminiInstance):
        raise ZombossError(f"not a Gemmini instance: {type(inst).__name__} (use TARGET.instance)")
    return inst


def _kernel(m: KnobMapping) -> str:
    if m.sym("loop") == "hw":
        return "loop_ws" if m.op == "matmul" else "loop_conv_ws"
    return "unrolled stream"


def _report(sim: SimResult) -> dict[str, Any]:
    return {
        "counts": dict(sorted(sim.counts.items())),
        "dram_read_bytes": sim.dram_read_bytes,
        "dram_write_bytes": sim.dram_write_bytes,
        "preset": sim.stats.get("preset", DEFAULT_PRESET),
    }


TARGET = GemminiTarget()
