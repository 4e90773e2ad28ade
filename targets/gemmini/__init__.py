"""The Gemmini target: suite, compiler default, program files, C export (zomboss.target.Target).

Beyond the `Target` protocol, `TARGET` exposes the mapping interface the search uses:
`mapping_from_json`, `reference_mappings` (library default and Exo-style) and `evaluate`
(lower a mapping, simulate it timing-only or functional + timing, verify).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.default import bound_cycles, build_default
from zomboss.targets.gemmini.export import export_c, program_text, sidecar_path
from zomboss.targets.gemmini.isa import OPERANDS
from zomboss.targets.gemmini.kernels import Evaluation, buffers, evaluate, program_for
from zomboss.targets.gemmini.mapping import GemminiMapping, exo_style, from_json, knob_table, library_default
from zomboss.targets.gemmini.presets import DEFAULT_PRESET, PRESETS
from zomboss.targets.gemmini.simulator import dynamic_stream, simulate
from zomboss.targets.gemmini.suite import SCHEMAS, SUITE, workload

from zomboss.errors import ZombossError
from zomboss.program import Instr, Program, ProgramSyntaxError, parse_lines
from zomboss.results import KernelResult
from zomboss.workload import Workload

Params = Mapping[str, int]


class SidecarError(ZombossError):
    """A program sidecar that does not describe the program's workload and buffers."""


class GemminiTarget:
    name = "gemmini"
    doc = Path(__file__).with_name("gemmini.md")

    # ---- Target protocol
    def suite(self) -> Sequence[Workload]:
        return SUITE

    def workload(self, spec: str) -> Workload:
        return workload(spec)

    def default(self, wl: Workload, params: Params) -> KernelResult:
        """tiled_matmul_auto / tiled_conv_auto, simulated functional + timing, verified."""
        cfg = GemminiConfig.from_params(params)
        ev = evaluate(wl, None, cfg)
        return self._result(
            wl,
            cfg,
            library_default(wl, cfg),
            ev,
            default_cycles=ev.cycles,
            kernel="tiled_matmul_auto" if wl.op == "matmul" else "tiled_conv_auto",
        )

    def read_program(self, path: Path, params: Params) -> Program:
        """Parse the text form; mnemonics and operand counts follow the doc's signatures (the
        KB's when the doc builds, else the signature contract in isa.py)."""
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as e:
            raise ZombossError(f"{path}: {e.strerror}") from None
        signatures = _signatures(params)
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
        return dynamic_stream(program, GemminiConfig.from_params(params))

    def simulate_file(self, path: Path, params: Params) -> KernelResult:
        """Check and time a program file; verify it when its sidecar (`<file>.json`, written by
        export) names the workload whose inputs the program reads."""
        path = Path(path)
        cfg = GemminiConfig.from_params(params)
        program = self.read_program(path, params)
        side = sidecar_path(path)
        t0 = time.perf_counter()
        if not side.exists():
            sim = simulate(program, cfg, None, functional=False, timing=True)
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
                    **_report(sim),
                },
            )
        meta = _read_sidecar(side)
        wl = workload(str(meta["workload"]))
        kernel = build_default(wl, cfg, int(meta.get("seed", 0)))
        want = buffers(wl, kernel).__dict__
        try:
            got = {str(k): int(v) for k, v in dict(meta.get("buffers", {})).items()}
        except (TypeError, ValueError):
            raise SidecarError(f"{side}: 'buffers' must map operand names to integer addresses") from None
        if got != want:
            raise SidecarError(f"{side}: buffers {got} differ from the placement of {wl.id} ({want})")
        sim = simulate(program, cfg, kernel.dram, functional=True, timing=True)
        assert sim.dram is not None
        ok = kernel.verify(sim.dram)
        mapping = meta.get("mapping") or {}
        return KernelResult(
            target=self.name,
            workload=wl.id,
            verified=ok,
            cycles=sim.cycles,
            mapping=mapping,
            wall_s=time.perf_counter() - t0,
            bound_cycles=bound_cycles(wl, cfg, DEFAULT_PRESET),
            extra=_report(sim),
        )

    def export(self, wl: Workload, out: Path, params: Params, mapping: GemminiMapping | None = None) -> Path:
        """Write the default kernel (or `mapping`'s) as a bare-metal C test at `out`, and next to
        it the program text (`.asm`) with its sidecar, which `simulate_file` verifies."""
        cfg = GemminiConfig.from_params(params)
        out = Path(out)
        if out.suffix == ".asm":
            raise ZombossError(f"{out}: the C test needs another suffix (.c); the .asm program is written next to it")
        kernel = build_default(wl, cfg)
        m = mapping or library_default(wl, cfg)
        program = program_for(wl, mapping, cfg, kernel)
        bufs = buffers(wl, kernel)
        addrs = {k: v for k, v in bufs.__dict__.items() if k != "scale_bits"}
        export_c(wl, program, out, addrs, bufs.scale_bits)
        asm = out.with_suffix(".asm")
        asm.write_text(program_text(program, f"{wl.id}: {wl.spec}"))
        sidecar_path(asm).write_text(
            json.dumps(
                {"target": self.name, "workload": wl.id, "seed": 0, "mapping": m.to_json(), "buffers": bufs.__dict__},
                indent=2,
            )
            + "\n"
        )
        return out

    def describe(self) -> Mapping[str, Any]:
        return {
            "ops": {op: list(s.required) + [f"{k}={v}" for k, v in s.optional.items()] for op, s in SCHEMAS.items()},
            "timing_presets": {p.name: p.doc for p in PRESETS.values()},
            "default_preset": DEFAULT_PRESET,
            "modes": ["functional+timing (verification)", "timing-only (search)"],
            "default_kernels": ["tiled_matmul_auto (loop_ws)", "tiled_conv_auto (loop_conv_ws)"],
        }

    # ---- mapping interface (used by the search)
    def mapping_from_json(self, data: Mapping[str, Any]) -> GemminiMapping:
        return from_json(data)

    def knobs(self, op: str) -> list[dict[str, str]]:
        return knob_table(op)

    def reference_mappings(self, wl: Workload, params: Params) -> dict[str, GemminiMapping]:
        cfg = GemminiConfig.from_params(params)
        return {"library": library_default(wl, cfg), "exo": exo_style(wl, cfg)}

    def evaluate(
        self,
        wl: Workload,
        mapping: GemminiMapping,
        params: Params,
        *,
        functional: bool = True,
        default_cycles: int | None = None,
    ) -> KernelResult:
        """Lower and simulate a mapping; functional runs verify against NumPy, timing-only runs
        report `verified: null`."""
        cfg = GemminiConfig.from_params(params)
        ev = evaluate(wl, mapping, cfg, functional=functional)
        return self._result(wl, cfg, mapping, ev, default_cycles=default_cycles, kernel="lowered")

    def _result(
        self,
        wl: Workload,
        cfg: GemminiConfig,
        m: GemminiMapping,
        ev: Evaluation,
        *,
        default_cycles: int | None,
        kernel: str,
    ) -> KernelResult:
        return KernelResult(
            target=self.name,
            workload=wl.id,
            verified=ev.verified,
            cycles=ev.cycles,
            mapping=m.to_json(),
            simulations=1,
            wall_s=ev.wall_s,
            default_cycles=default_cycles,
            bound_cycles=bound_cycles(wl, cfg, DEFAULT_PRESET),
            extra={"kernel": kernel, "instructions": len(ev.program.instrs), **_report(ev.sim)},
        )


def _report(sim: Any) -> dict[str, Any]:
    return {
        "counts": dict(sorted(sim.counts.items())),
        "dram_read_bytes": sim.dram_read_bytes,
        "dram_write_bytes": sim.dram_write_bytes,
        "preset": sim.stats.get("preset", DEFAULT_PRESET),
    }


def _signatures(params: Params) -> dict[str, tuple[str, ...]]:
    """Operand names per mnemonic from the KB when the doc builds, else the contract."""
    try:
        from zomboss.knowledge import load_kb

        kb = load_kb(TARGET.doc, dict(params))
    except (ImportError, ZombossError, OSError):
        return dict(OPERANDS)
    return {name: tuple(op.name for op in ins.operands) for name, ins in kb.instrs.items()}


def _read_sidecar(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise SidecarError(f"{path}: not a readable JSON sidecar ({e})") from None
    if not isinstance(data, dict) or "workload" not in data:
        raise SidecarError(f"{path}: a sidecar needs at least 'workload' (and 'buffers', 'seed')")
    return data


TARGET = GemminiTarget()
