"""The PLENA target: suite, compiler default, program files, assembly export (zomboss.target.Target).

Beyond the `Target` protocol, `TARGET` exposes the mapping interface the search uses:
`mapping_from_json`, `knobs`, `reference_mappings` (the compiler's choices) and `evaluate`
(lower a mapping, simulate it under the rtl and emu timing modes, verify it on two seeds).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from zomboss.errors import ZombossError
from zomboss.program import Instr, Program
from zomboss.results import KernelResult
from zomboss.workload import Workload

from . import export as X
from .asm import read_program
from .bounds import lower_bound
from .default import default_kernel
from .layout import Geometry, Kernel
from .lowering import lower
from .mapping import MAPPINGS, AnyMapping, describe, from_json, library_default, to_json
from .simulator import PlenaConfig, PlenaRun, simulate
from .simulator import trace as sim_trace
from .suite import SCHEMAS, SUITE, check_shape, workload
from .timing import DEFAULT_MODES
from .verify import PLENA_ATOL, PLENA_MIN_RATE, SEEDS, STRICT_STD, Verification, verify

Params = Mapping[str, int]


class PlenaTarget:
    name = "plena"
    doc = Path(__file__).with_name("plena.md")

    def __init__(self) -> None:
        self._configs: dict[tuple[tuple[str, int], ...], PlenaConfig] = {}

    def config(self, params: Params) -> PlenaConfig:
        """The machine for these parameter overrides (KB built once per distinct set)."""
        key = tuple(sorted((k.lower(), int(v)) for k, v in (params or {}).items()))
        if key not in self._configs:
            self._configs[key] = PlenaConfig.from_params(dict(key))
        return self._configs[key]

    def geometry(self, params: Params) -> Geometry:
        return Geometry.from_params(self.config(params).params)

    # ---- Target protocol
    def suite(self) -> Sequence[Workload]:
        return SUITE

    def workload(self, spec: str) -> Workload:
        return workload(spec)

    def default(self, wl: Workload, params: Params) -> KernelResult:
        """The PLENA compiler's template kernel, simulated (rtl and emu) and verified on two seeds."""
        geo = self.geometry(params)
        kernel = default_kernel(wl, geo)
        ver, wall = self._verify(kernel, wl, params)
        return self._result(
            wl, params, to_json(library_default(wl)), kernel, ver, wall, ver.run.cycles["rtl"], "default"
        )

    def read_program(self, path: Path, params: Params) -> Program:
        return read_program(self.config(params).kb, path)

    def trace(self, program: Program, params: Params) -> Iterator[tuple[Instr, Mapping[int, int]]]:
        """The simulator's dynamic stream (empty HBM: addresses and trip counts do not depend on data)."""
        return sim_trace(program, self.config(params))

    def simulate_file(self, path: Path, params: Params) -> KernelResult:
        """Check and time a program file; verify it when the export sidecar (`<file>.json`)
        says which workload's inputs it reads and where its output lies."""
        path = Path(path)
        cfg = self.config(params)
        program = self.read_program(path, params)
        side = X.sidecar_path(path)
        if not side.exists():
            t0 = time.perf_counter()
            run = simulate(program, cfg, modes=DEFAULT_MODES)
            return KernelResult(
                target=self.name,
                workload=path.name,
                verified=None,
                cycles=run.cycles["rtl"],
                mapping={},
                wall_s=time.perf_counter() - t0,
                extra={
                    "verify_reason": f"no sidecar {side.name}: the program's inputs and output are unknown, "
                    "so it was checked and timed only (on an empty HBM)",
                    **_run_report(run),
                },
            )
        wl, layout, meta = X.read_sidecar(side)
        check_shape(wl, cfg.mlen, cfg.blen, cfg.mram_tiles)
        kernel = Kernel(program, layout)
        ver, wall = self._verify(kernel, wl, params)
        mapping = meta.get("mapping") or {}
        return self._result(wl, params, mapping, kernel, ver, wall, None, "file")

    def export(self, wl: Workload, out: Path, params: Params, mapping: AnyMapping | None = None) -> Path:
        """Write the default kernel (or `mapping`'s lowering) as PLENA assembly at `out`, with
        the layout sidecar `<out>.json` that `simulate_file` verifies against."""
        geo = self.geometry(params)
        m = mapping or library_default(wl)
        kernel = lower(m, wl, geo) if mapping is not None else default_kernel(wl, geo)
        extra = {
            "mapping": to_json(m),
            "verification": {"seeds": list(SEEDS), "golden": "zomboss.targets.plena.golden"},
        }
        return X.write(self.config(params).kb, wl, kernel, geo, Path(out), extra)

    def describe(self) -> Mapping[str, Any]:
        return {
            "ops": {op: list(s.required) + [f"{k}={v}" for k, v in s.optional.items()] for op, s in SCHEMAS.items()},
            "timing_modes": {
                "rtl": "default: RTL-measured opcode costs (Appendix B) + Ramulator-fitted HBM model, blocking, hazards",
                "emu": "PLENA transactional-emulator parity (§3.1)",
            },
            "default_mode": "rtl",
            "default_kernels": "PLENA compiler ATen-path templates (linear, ffn, rmsnorm, softmax, flash attention, rope)",
            "gates": {
                "plena": f">= {PLENA_MIN_RATE:.0%} of elements within atol=rtol={PLENA_ATOL}",
                "strict": f"100% within {STRICT_STD}*std(golden) + {STRICT_STD}*|golden|",
                "seeds": list(SEEDS),
            },
            "outputs": "VRAM (column-block-major BF16); inputs MXFP8 in HBM",
        }

    # ---- mapping interface (used by the search)
    def mapping_from_json(self, data: Mapping[str, Any]) -> AnyMapping:
        return from_json(data)

    def knobs(self, op: str) -> list[dict[str, Any]]:
        if op not in MAPPINGS:
            raise ZombossError(f"no PLENA mapping space for op {op!r} (ops: {', '.join(MAPPINGS)})")
        return describe(MAPPINGS[op])

    def reference_mappings(self, wl: Workload, params: Params) -> dict[str, AnyMapping]:
        return {"library": library_default(wl)}

    def evaluate(
        self,
        wl: Workload,
        mapping: AnyMapping,
        params: Params,
        *,
        functional: bool = True,
        default_cycles: int | None = None,
    ) -> KernelResult:
        """Lower and simulate a mapping (rule-checked); functional runs verify on every seed,
        timing-only runs report `verified: null`."""
        kernel = lower(mapping, wl, self.geometry(params))
        if functional:
            ver, wall = self._verify(kernel, wl, params)
            return self._result(wl, params, to_json(mapping), kernel, ver, wall, default_cycles, "lowered")
        t0 = time.perf_counter()
        run = simulate(kernel.program, self.config(params), modes=DEFAULT_MODES)
        return KernelResult(
            target=self.name,
            workload=wl.id,
            verified=None,
            cycles=run.cycles["rtl"],
            mapping=to_json(mapping),
            wall_s=time.perf_counter() - t0,
            default_cycles=default_cycles,
            bound_cycles=lower_bound(wl, self.config(params).params).cycles,
            extra={"kernel": "lowered", "verify_reason": "timing-only run", **_run_report(run)},
        )

    # ---- helpers
    def _verify(self, kernel: Kernel, wl: Workload, params: Params) -> tuple[Verification, float]:
        t0 = time.perf_counter()
        ver = verify(kernel, wl, self.config(params))
        return ver, time.perf_counter() - t0

    def _result(
        self,
        wl: Workload,
        params: Params,
        mapping: Mapping[str, Any],
        kernel: Kernel,
        ver: Verification,
        wall: float,
        default_cycles: int | None,
        source: str,
    ) -> KernelResult:
        bound = lower_bound(wl, self.config(params).params)
        return KernelResult(
            target=self.name,
            workload=wl.id,
            verified=ver.verified,
            cycles=ver.run.cycles["rtl"],
            mapping=mapping,
            simulations=len(ver.checks),
            wall_s=wall,
            default_cycles=default_cycles,
            bound_cycles=bound.cycles,
            extra={
                "kernel": source,
                "static_instructions": len(kernel.program),
                **_run_report(ver.run),
                "bound": {"matrix": bound.matrix, "vector": bound.vector, "hbm": bound.hbm},
                "gates": ver.to_json()["seeds"],
                **({"verify_reason": ver.reason} if not ver.verified else {}),
            },
        )


def _run_report(run: PlenaRun) -> dict[str, Any]:
    return {
        "emu_cycles": run.cycles.get("emu"),
        "rtl_breakdown": dict(run.rtl_breakdown),
        "instructions": run.instructions,
        "class_counts": dict(run.class_counts),
        "counts": dict(run.counts),
        "hbm_read_bytes": run.hbm_read_bytes,
        "hbm_write_bytes": run.hbm_write_bytes,
        "sim_wall_s": round(run.wall_s, 3),
    }


TARGET = PlenaTarget()
