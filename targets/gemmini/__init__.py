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
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from zomboss.targets.gemmini.config import DOC, GemminiConfig, machine_kb
from zomboss.targets.gemmini.export import export_c, program_text, sidecar_path
from zomboss.targets.gemmini.instance import GemminiInstance, build_instance
from zomboss.targets.gemmini.kernels import bound_cycles, run
from zomboss.targets.gemmini.lowering import lower
from zomboss.targets.gemmini.mapping import exo_style, library_default
from zomboss.targets.gemmini.platform import check_mapping
from zomboss.targets.gemmini.presets import DEFAULT_PRESET, PRESETS, get_preset
from zomboss.targets.gemmini.sampled import verify_sampled
from zomboss.targets.gemmini.simulator import SimResult, dynamic_stream, simulate
from zomboss.targets.gemmini.suite import SCHEMAS, SUITE, workload
from zomboss.targets.gemmini.timing import BREAKDOWN

from zomboss.errors import WorkloadError, ZombossError
from zomboss.knowledge import KB
from zomboss.mapping import KnobMapping
from zomboss.program import Instr, Program, ProgramSyntaxError, parse_lines
from zomboss.results import KernelResult
from zomboss.target import Evaluation, Instance, Mode
from zomboss.util import MAX_INSTRUCTIONS, Lru, check_budget, read_json, read_text
from zomboss.workload import Workload

Params = Mapping[str, int]
_INSTANCES = 8  # instances kept (LRU): a search evaluates many mappings of a few workloads


class SidecarError(ZombossError):
    """A program sidecar that does not describe the program's workload and buffers."""


def _key(params: Params) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((k.lower(), int(v)) for k, v in params.items()))


class GemminiTarget:
    name = "gemmini"
    doc = DOC

    def __init__(self) -> None:
        self._instances: OrderedDict[tuple[Any, ...], GemminiInstance] = OrderedDict()
        self._configs: dict[tuple[tuple[str, int], ...], GemminiConfig] = {}
        # the latest lowerings: a search lowers a candidate to compare its program with those
        # already simulated, then simulates it (one lowering for both)
        self._lowered = Lru(2)

    # ---- machine and suite
    def kb(self, params: Params) -> KB:
        """The doc's KB with these overrides (cached; the KB build refuses unknown or illegal ones)."""
        return machine_kb(_key(params))

    def config(self, params: Params) -> GemminiConfig:
        key = _key(params)
        if key not in self._configs:
            self._configs[key] = GemminiConfig.from_kb(machine_kb(key))
        return self._configs[key]

    def suite(self) -> Sequence[Workload]:
        return SUITE

    def workload(self, spec: str) -> Workload:
        return workload(spec)

    # ---- the search-facing protocol
    def instance(self, wl: Workload, params: Params, seed: int = 0) -> GemminiInstance:
        """The placement of `wl`'s operands (inputs and reference built on first verified use),
        kept in a small LRU so that every evaluation of `wl` reuses it."""
        key = (wl.id, wl.op, tuple(wl.shape.items()), _key(params), seed)
        inst = self._instances.get(key)
        if inst is None:
            inst = build_instance(wl, self.config(params), params, seed)
            self._instances[key] = inst
            while len(self._instances) > _INSTANCES:
                self._instances.popitem(last=False)
        else:
            self._instances.move_to_end(key)
        return inst

    def reference_mappings(self, wl: Workload, params: Params) -> dict[str, KnobMapping]:
        """Candidate-0 ("library": tiled_matmul_auto / tiled_conv_auto) first, then "exo"."""
        cfg = self.config(params)
        return {"library": library_default(wl, cfg), "exo": exo_style(wl, cfg)}

    def lower(self, inst: Instance, mapping: KnobMapping) -> Program:
        """The program of `mapping` on the instance's placement (IllegalMapping if it breaks a
        constraint of gemmini.md §11)."""
        g = _gemmini(inst)
        held, program = self._lowered.get_or(
            (id(g), mapping.key()), lambda: (g, lower(mapping, g.workload, g.buffers, g.cfg))
        )
        if held is not g:  # (an id reused by a later instance)
            program = lower(mapping, g.workload, g.buffers, g.cfg)
            self._lowered[(id(g), mapping.key())] = (g, program)
        return program

    def evaluate(self, inst: Instance, mapping: KnobMapping, mode: Mode, *, extrapolate: bool = True) -> Evaluation:
        g = _gemmini(inst)
        check_mapping(mapping, get_preset(DEFAULT_PRESET).rtl)  # before lowering, as `run` does
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
        """`sampled.verify_sampled` on the default preset's platform."""
        check = verify_sampled(_gemmini(inst), mapping, DEFAULT_PRESET, samples, seed)
        return check.verified, check.to_json()

    def bound(self, wl: Workload, params: Params, mapping: KnobMapping | None = None) -> int:
        """The roofline: max(array cycles (rows unpadded), least DRAM traffic / bandwidth of
        the default preset). It holds for every mapping, so `mapping` does not tighten it."""
        return bound_cycles(wl, self.config(params), DEFAULT_PRESET)

    # ---- programs and files
    def read_program(self, path: Path, params: Params) -> Program:
        """Parse the text form; mnemonics and operand counts follow the doc's signatures."""
        path = Path(path)
        text = read_text(path, "a Gemmini program")
        signatures = {name: tuple(op.name for op in ins.operands) for name, ins in self.kb(params).instrs.items()}
        instrs: list[Instr] = []
        for ins, _ in parse_lines(text, str(path), ()):
            names = signatures.get(ins.op)
            if names is None:
                raise ProgramSyntaxError(f"{path}:{ins.line}: unknown Gemmini instruction {ins.op!r}")
            if len(ins.args) != len(names):
                raise ProgramSyntaxError(
                    f"{path}:{ins.line}: {ins.op} takes {len(names)} operand(s) ({', '.join(names)}), "
                    f"got {len(ins.args)}"
                )
            instrs.append(ins)
        return Program("gemmini", tuple(instrs), {"path": str(path)})

    def trace(self, program: Program, params: Params) -> Iterator[tuple[Instr, Mapping[int, int]]]:
        """Gemmini has no registers; the stream is the program with its hardware loops expanded
        into the commands their FSMs issue (what the simulator checks)."""
        return dynamic_stream(program, self.config(params))

    def min_instructions(self, program: Program, params: Params) -> int:
        """A lower bound of the instructions `program` executes (each hardware loop at least itself)."""
        return len(program)

    def simulate_file(self, path: Path, params: Params, max_instructions: int = MAX_INSTRUCTIONS) -> KernelResult:
        """Check and time a program file; verify it when its sidecar (`<file>.json`, written by
        export) names the workload whose inputs the program reads. At most `max_instructions`
        are executed, hardware loops expanded (LimitError beyond)."""
        path = Path(path)
        budget = check_budget(max_instructions)
        cfg = self.config(params)
        program = self.read_program(path, params)
        side = sidecar_path(path)
        t0 = time.perf_counter()
        if not side.exists():
            sim = simulate(program, cfg, None, functional=False, timing=True, max_instructions=budget)
            return KernelResult(
                target=self.name,
                workload=path.name,
                verified=None,  # null: nothing to verify against
                cycles=sim.cycles,
                mapping={},
                wall_s=time.perf_counter() - t0,
                extra={
                    "verify_reason": f"no sidecar {side.name}: the program's inputs and expected output are "
                    "unknown, so it was checked and timed only",
                    "breakdown": sim.breakdown,
                    **_report(sim),
                },
            )
        meta = _read_sidecar(side)
        exported = meta.get("params", {})
        if isinstance(exported, dict) and _key(exported) != _key(params):
            given = ", ".join(f"{k}={v}" for k, v in _key(exported)) or "none"
            raise SidecarError(f"{side}: the program was exported for --param overrides {given}; pass the same ones")
        seed = meta.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 63:
            raise SidecarError(f"{side}: 'seed' must be an integer in 0..2^63-1, not {seed!r}")
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
        sim = simulate(program, cfg, dram, functional=True, timing=True, max_instructions=budget)
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

    def export(self, wl: Workload, out: Path, params: Params, mapping: KnobMapping | None = None) -> Path:
        """Write the kernel of `mapping` (default: Candidate-0) as a bare-metal C test at `out`,
        and next to it the program text (`.asm`) with its sidecar, which `simulate_file` verifies."""
        out = Path(out)
        if out.suffix == ".asm":
            raise ZombossError(f"{out}: the C test needs another suffix (.c); the .asm program is written next to it")
        inst = self.instance(wl, params)
        m = mapping if mapping is not None else self.reference_mappings(wl, params)["library"]
        program = self.lower(inst, m)
        bufs = inst.buffers
        addrs = {k: v for k, v in bufs.__dict__.items() if k != "scale_bits"}
        export_c(wl, program, out, addrs, bufs.scale_bits)
        asm = out.with_suffix(".asm")
        asm.write_text(program_text(program, f"{wl.id}: {wl.spec}"))
        side = {
            "target": self.name,
            "workload": wl.id,
            "seed": inst.seed,
            "params": dict(_key(params)),
            "mapping": m.to_json(),
            "buffers": bufs.__dict__,
        }
        sidecar_path(asm).write_text(json.dumps(side, indent=2) + "\n")
        return out

    def describe(self) -> Mapping[str, Any]:
        return {
            "ops": {op: list(s.required) + [f"{k}={v}" for k, v in s.optional.items()] for op, s in SCHEMAS.items()},
            "timing_presets": {p.name: p.doc for p in PRESETS.values()},
            "preset_platforms": {p.name: {"library": p.library.name, "rtl": p.rtl.name} for p in PRESETS.values()},
            "default_preset": DEFAULT_PRESET,
            "modes": [m.value for m in Mode],
            "reference_mappings": ["library (tiled_matmul_auto / tiled_conv_auto via loop_ws / loop_conv_ws)", "exo"],
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


def _read_sidecar(path: Path) -> dict[str, Any]:
    data = read_json(path, "a JSON sidecar")
    if not isinstance(data, dict) or "workload" not in data:
        raise SidecarError(f"{path}: a sidecar needs at least 'workload' (and 'buffers', 'seed')")
    return data


TARGET = GemminiTarget()
