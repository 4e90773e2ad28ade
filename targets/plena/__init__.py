"""The PLENA target (`zomboss.target.Target`): suite, instances, lowering of plena.md §8
mappings, the three evaluation modes, program files and assembly export.

Evaluations (`evaluate`):
* TIMING runs the simulator timing-only: no data moves and nothing is computed, only the
  registers, CSRs, loop counters and DMA addresses that costs and control flow depend on;
  its `rtl` and `emu` cycles, counts and HBM bytes are those of the functional run. It
  extrapolates over the steady iterations of hardware loops (`run._Steady`; cycles
  within a fraction of a percent of the full run's, `report["steady"]` says what was
  skipped) unless `evaluate(..., extrapolate=False)` asks for full simulation.
* CHECKED adds the doc's rule checker on every executed instruction (still without data).
* VERIFIED runs functionally, timed and checked, on the instance's seed, and compares the
  output with the golden reference under both gates (PLENA's and the strict one); it also
  verifies `extra_seeds` further seeds functionally (unchecked, untimed: legality and timing
  do not depend on the data), because the gates are statistical and one seed's inputs can
  pass by luck. `report["gates"]` has one entry per seed verified.
* `verify_sampled` (`zomboss default --verify sampled`, linears only) verifies a sample of a
  linear's output tiles, each computed by its slice of the kernel on fresh inputs, with every
  rule checked (`sampled.py`): what a linear too large to verify whole gets.

A linear whose activations and output do not fit VRAM is processed in row spans, each stored to
HBM (`lowering.linear_plan`); its result is then that HBM tensor (`KernelLayout.hbm_output`).

Every evaluation's `breakdown` splits the `rtl` cycles into compute (matrix and vector units,
scalar FP arithmetic), memory (HBM DMA and the scalar SRAM moves), stall (pipeline hazards)
and overhead (integer address/counter arithmetic and control); `report["rtl_breakdown"]` has
the per-unit figures they are summed from (`decode.breakdown_part`).
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from zomboss.errors import WorkloadError
from zomboss.knowledge import KB
from zomboss.mapping import KnobMapping
from zomboss.program import Instr, Program
from zomboss.results import KernelResult
from zomboss.target import (
    Evaluation,
    Mode,
    Params,
    ParamsKey,
    TargetBase,
    params_key,
    sidecar_seed,
    workload_key,
)
from zomboss.util import check_workload_bytes
from zomboss.workload import Workload

from . import export as X
from .asm import parse_program
from .bounds import Bound, lower_bound, program_bound
from .config import DOC, PlenaConfig
from .hwloop import min_executed
from .instance import PlenaInstance
from .layout import Geometry, Kernel
from .lowering import identity, lower
from .mapping import library_default
from .run import PlenaRun
from .sampled import verify_sampled
from .simulator import simulate
from .simulator import trace as sim_trace
from .suite import SCHEMAS, SUITE, check_shape, data_bytes, workload
from .timing import DEFAULT_MODES
from .verify import PLENA_ATOL, PLENA_MIN_RATE, STRICT_STD, Verification, output_diff, verify


class PlenaTarget(TargetBase[PlenaConfig, PlenaInstance, Kernel]):
    name = "plena"
    doc = DOC
    program_kind = "PLENA assembly"
    extra_seeds = 1  # VERIFIED also verifies seeds seed+1 .. seed+extra_seeds (see the module doc)
    instances_kept = 4  # an instance of the largest FFN holds ~130 MB of inputs and images
    lowerings_kept = 8

    # ---- machine and suite
    def make_config(self, key: ParamsKey) -> PlenaConfig:
        """The machine for these parameter overrides (KB built once per distinct set; unknown
        parameters and values that break a rule of plena.md §1 are refused with the doc's message)."""
        return PlenaConfig.from_params(dict(key))

    def make_kb(self, key: ParamsKey) -> KB:
        return self.config(dict(key)).kb

    def geometry(self, params: Params) -> Geometry:
        return Geometry.from_params(self.kb(params).params)

    def suite(self) -> Sequence[Workload]:
        return SUITE

    def workload(self, spec: str) -> Workload:
        return workload(spec)

    # ---- the search-facing protocol
    def make_instance(self, wl: Workload, params: Params, seed: int) -> PlenaInstance:
        cfg = self.config(params)
        geo = Geometry.from_params(cfg.params)
        check_shape(wl, geo.mlen, geo.blen, geo.mram_tiles)
        return PlenaInstance(wl, params, seed, cfg)

    def reference_mappings(self, wl: Workload, params: Params) -> dict[str, KnobMapping]:
        return {"library": library_default(self.kb(params), wl)}

    def kernel(self, inst: PlenaInstance, mapping: KnobMapping | None = None) -> Kernel:
        """The lowered kernel (program and memory map) of a mapping (default: Candidate-0's),
        legality checked first."""
        if mapping is None:
            mapping = library_default(inst.cfg.kb, inst.workload)
        return self.lowered(inst, mapping)

    def lowering_key(self, inst: PlenaInstance, mapping: KnobMapping) -> tuple[object, Hashable]:
        """A kernel depends on the workload and the machine, not on the seed's inputs."""
        return None, (workload_key(inst.workload), params_key(inst.params), mapping)

    def make_lowering(self, inst: PlenaInstance, mapping: KnobMapping) -> Kernel:
        return lower(inst.cfg.kb, mapping, inst.workload)

    def program_identity(self, inst: PlenaInstance, mapping: KnobMapping) -> Hashable | None:
        """`lowering.identity`: a linear's effective knob values (its lowering is the costly one)."""
        return identity(inst.cfg.kb, mapping, inst.workload)

    def program_of(self, lowered: Kernel) -> Program:
        return lowered.program

    def evaluate(
        self, inst: PlenaInstance, mapping: KnobMapping, mode: Mode, *, extrapolate: bool = True
    ) -> Evaluation:
        t0 = time.perf_counter()
        if mode is Mode.VERIFIED:  # refuse what cannot be allocated before lowering it (TooLargeToVerify)
            check_workload_bytes(inst.workload.id or inst.workload.op, data_bytes(inst.workload))
        kernel = self.kernel(inst, mapping)
        bound = lower_bound(inst.workload, inst.cfg.params)
        report: dict[str, Any] = {"static_instructions": len(kernel.program), "bound": _bound_json(bound)}
        verified: bool | None = None
        if mode is Mode.VERIFIED:
            wl, params = inst.workload, inst.params
            others = [self.instance(wl, params, inst.seed + i) for i in range(1, self.extra_seeds + 1)]
            ver = verify(kernel, [inst, *others])
            run, verified = ver.run, ver.verified
            report.update(_gates(ver))
        else:
            run = simulate(
                kernel.program, inst.cfg, modes=DEFAULT_MODES, check=mode is Mode.CHECKED, functional=False,
                extrapolate=mode is Mode.TIMING and extrapolate,
            )  # fmt: skip
        report.update(_run_report(run))
        report["verify"] = "full" if mode is Mode.VERIFIED else "none"  # every output element, or not run
        return Evaluation(
            target=self.name,
            workload=inst.workload.id,
            mapping=mapping,
            mode=mode,
            cycles=run.cycles["rtl"],
            verified=verified,
            breakdown=dict(run.breakdown),
            instructions=run.instructions,
            wall_s=time.perf_counter() - t0,
            seed=inst.seed,
            report=report,
        )

    def verify_sampled(
        self, inst: PlenaInstance, mapping: KnobMapping, samples: int, seed: int
    ) -> tuple[bool, Mapping[str, Any]]:
        """`sampled.verify_sampled`: `samples` output tiles of a linear, each computed by its
        slice of the kernel on fresh inputs, rule-checked, against NumPy (other families refuse)."""
        check = verify_sampled(inst.cfg, mapping, inst.workload, samples, seed)
        return check.verified, check.to_json()

    def bound(self, wl: Workload, params: Params, mapping: KnobMapping | None = None) -> int:
        """The roofline bound of `wl` (bounds.py); for a mapping, at least its program's static
        costs plus the cheapest cost of each of its transfers (the rtl model is in order)."""
        b = lower_bound(wl, self.kb(params).params).cycles
        if mapping is None:
            return b
        kernel = self.kernel(self.instance(wl, params), mapping)
        return max(b, program_bound(kernel.program, self.config(params)))

    # ---- programs and files
    def parse_program(self, kb: KB, text: str, path: str) -> Program:
        return parse_program(kb, text, path)

    def trace(self, program: Program, params: Params) -> Iterator[tuple[Instr, Mapping[int, int]]]:
        """The simulator's dynamic stream (empty HBM: addresses and trip counts do not depend on data)."""
        return sim_trace(program, self.config(params))

    def min_instructions(self, program: Program, params: Params) -> int:
        """A lower bound of the instructions `program` executes (its hardware loops multiplied out)."""
        return min_executed(program, self.kb(params))

    def run_file(self, program: Program, params: Params, budget: int) -> tuple[int, dict[str, int], dict[str, Any]]:
        run = simulate(program, self.config(params), modes=DEFAULT_MODES, functional=False, max_instructions=budget)
        return run.cycles["rtl"], dict(run.breakdown), _run_report(run)

    def verify_file(self, program: Program, side: Path, params: Params, budget: int, t0: float) -> KernelResult:
        """The sidecar says which workload's inputs the program reads and where its output lies."""
        cfg = self.config(params)
        wl, layout, meta = X.read_sidecar(side)
        written_for = {k: v for k, v in (meta.get("params") or {}).items() if cfg.params.get(k) != v}
        seed = sidecar_seed(side, meta)  # the direct-generation baseline asks for unseen seeds
        try:
            inst = self.instance(wl, params, seed)
            check_workload_bytes(wl.id or wl.op, data_bytes(wl))  # it is verified: before allocating
        except WorkloadError as e:
            raise WorkloadError(f"{side}: {e}") from None
        shapes = {name: tuple(x.shape) for name, x in inst.inputs.items()}
        X.check_layout(side, layout, wl, shapes, tuple(inst.reference.shape), cfg.vlen)
        others = [self.instance(wl, params, seed + i) for i in range(1, self.extra_seeds + 1)]
        ver = verify(Kernel(program, layout), [inst, *others], max_instructions=budget)
        bound = lower_bound(wl, cfg.params)
        return KernelResult(
            target=self.name,
            workload=wl.id,
            verified=ver.verified,
            cycles=ver.run.cycles["rtl"],
            mapping=meta.get("mapping") or {},
            simulations=len(ver.checks),
            wall_s=time.perf_counter() - t0,
            bound_cycles=bound.cycles,
            extra={
                "static_instructions": len(program),
                "breakdown": dict(ver.run.breakdown),
                **_run_report(ver.run),
                **_gates(ver),
                **output_diff(ver.run, layout, inst.reference),
                "seed": seed,
                "bound": _bound_json(bound),
                **({"written_for_other_params": written_for} if written_for else {}),
            },
        )

    def write_export(
        self, inst: PlenaInstance, mapping: KnobMapping, lowered: Kernel, out: Path, params: Params
    ) -> Path:
        """The kernel as PLENA assembly at `out`, with the layout sidecar `<out>.json` that
        `simulate_file` verifies against."""
        extra = {
            "mapping": mapping.to_json(),
            "verification": {
                "seeds": list(range(self.extra_seeds + 1)),
                "golden": "zomboss.targets.plena.golden",
            },
        }
        return X.write(self.kb(params), inst.workload, lowered, self.geometry(params), out, extra)

    def describe(self) -> Mapping[str, Any]:
        return {
            "ops": {op: list(s.required) + [f"{k}={v}" for k, v in s.optional.items()] for op, s in SCHEMAS.items()},
            "timing_modes": {
                "rtl": "default: RTL-measured opcode costs (Appendix B) + Ramulator-fitted HBM model, blocking, hazards",
                "emu": "PLENA transactional-emulator parity (§3.1)",
            },
            "default_mode": "rtl",
            "evaluation_modes": {
                "timing": "timing-only simulation: addresses, trip counts and costs, no data",
                "checked": "timing-only + the doc's rules on every executed instruction",
                "verified": f"functional + timing + rules on the instance's seed, then {self.extra_seeds} more "
                "seed(s) functionally; both gates on each",
            },
            "breakdown": {
                "compute": "matrix and vector units, scalar FP arithmetic",
                "memory": "HBM DMA and scalar moves between registers and the SRAMs",
                "stall": "RTL pipeline hazards",
                "overhead": "integer address/counter arithmetic and control (CSRs, loops)",
            },
            "kernel_suffix": ".asm",  # no clock_hz: the PLENA sources state none
            "default_kernels": "PLENA compiler ATen-path templates (linear, ffn, rmsnorm, softmax, flash attention, "
            "rope) = the lowering of plena.md §8's canonical knob values",
            "gates": {
                "plena": f">= {PLENA_MIN_RATE:.0%} of elements within atol=rtol={PLENA_ATOL}",
                "strict": f"100% within {STRICT_STD}*std(golden) + {STRICT_STD}*|golden|",
                "seeds": f"the instance's seed and the next {self.extra_seeds}",
            },
            "outputs": "VRAM (column-block-major BF16); inputs MXFP8 in HBM",
        }


def _run_report(run: PlenaRun) -> dict[str, Any]:
    return {
        "emu_cycles": run.cycles.get("emu"),
        "rtl_breakdown": dict(run.rtl_breakdown),
        "class_counts": dict(run.class_counts),
        "counts": dict(run.counts),
        "hbm_read_bytes": run.hbm_read_bytes,
        "hbm_write_bytes": run.hbm_write_bytes,
        "sim_wall_s": round(run.wall_s, 3),
        **({"steady": dict(run.steady)} if run.steady is not None else {}),
    }


def _gates(ver: Verification) -> dict[str, Any]:
    out: dict[str, Any] = {"gates": ver.to_json()["seeds"], "verified_seeds": [c.seed for c in ver.checks]}
    if not ver.verified:
        out["verify_reason"] = ver.reason
    return out


def _bound_json(b: Bound) -> dict[str, int]:
    return {"matrix": b.matrix, "vector": b.vector, "hbm": b.hbm}


TARGET = PlenaTarget()
