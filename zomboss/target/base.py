"""The plumbing every target shares, written once: the KB and configuration per parameter
overrides, the instance and lowering LRUs, reading a program file, `simulate_file` with its
export sidecar (`<file>.json`) and `export`.

A target subclasses `TargetBase` and fills in the hooks (what its configuration, instance
and lowering are, how its text form parses, how it runs a program with and without the
sidecar's inputs, what it writes on export); the protocol methods that only route between
them live here, so the three targets cannot drift apart in how they cache or name files.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

from zomboss.errors import ZombossError
from zomboss.knowledge import KB, load_kb
from zomboss.mapping import KnobMapping
from zomboss.program import Program
from zomboss.results import KernelResult
from zomboss.target.protocol import Params, ParamsKey, params_key
from zomboss.util import MAX_INSTRUCTIONS, Lru, check_budget, read_json, read_text
from zomboss.workload import Workload

C = TypeVar("C")  # the target's configuration (what its simulator reads of the KB)
I = TypeVar("I")  # noqa: E741 - the target's instance
L = TypeVar("L")  # what a lowering produces (a Program, or a program with its memory map)


class SidecarError(ZombossError):
    """A program sidecar that does not describe the program's workload and inputs."""


def sidecar_path(program_path: Path) -> Path:
    """Where a program file's sidecar lives: `kernel.asm` -> `kernel.asm.json`."""
    p = Path(program_path)
    return p.with_name(p.name + ".json")


def read_sidecar(path: Path) -> dict[str, Any]:
    """The sidecar's JSON object (it names at least the workload)."""
    data = read_json(path, "a JSON sidecar")
    if not isinstance(data, dict) or "workload" not in data:
        raise SidecarError(f"{path}: a sidecar is a JSON object naming at least its 'workload' (and 'seed')")
    return data


def sidecar_seed(path: Path, meta: Mapping[str, Any]) -> int:
    """The sidecar's seed (0 when absent), refused unless a non-negative 63-bit integer."""
    seed = meta.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 63:
        raise SidecarError(f"{path}: 'seed' must be an integer in 0..2^63-1, not {seed!r}")
    return seed


def workload_key(wl: Workload) -> tuple[Hashable, ...]:
    return (wl.id, wl.op, tuple(sorted(wl.shape.items())))


class TargetBase(Generic[C, I, L]):
    """Caches and file plumbing of `zomboss.target.Target`; subclasses implement the hooks."""

    name = ""
    doc = Path()
    program_kind = "a program"  # what `read_program` calls the file in its errors
    instances_kept = 8  # a search evaluates many mappings of a few workloads
    lowerings_kept = 16

    def __init__(self) -> None:
        self._kbs: dict[ParamsKey, KB] = {}
        self._configs: dict[ParamsKey, C] = {}
        self._instances: Lru[Hashable, I] = Lru(self.instances_kept)
        self._lowered: Lru[Hashable, tuple[object, L]] = Lru(self.lowerings_kept)

    # ---- hooks --------------------------------------------------------------------------------
    def make_kb(self, key: ParamsKey) -> KB:
        return load_kb(self.doc, dict(key))

    def make_config(self, key: ParamsKey) -> C:
        raise NotImplementedError

    def make_instance(self, wl: Workload, params: Params, seed: int) -> I:
        raise NotImplementedError

    def make_lowering(self, inst: I, mapping: KnobMapping) -> L:
        raise NotImplementedError

    def lowering_key(self, inst: I, mapping: KnobMapping) -> tuple[object, Hashable]:
        """(what the lowering depends on besides the mapping, its hashable identity): by
        default the instance itself, held by the cache entry so that its id stays unique."""
        return inst, (id(inst), mapping)

    def program_of(self, lowered: L) -> Program:
        raise NotImplementedError

    def parse_program(self, kb: KB, text: str, path: str) -> Program:
        raise NotImplementedError

    def run_file(self, program: Program, params: Params, budget: int) -> tuple[int, dict[str, int], dict[str, Any]]:
        """Check and time a program whose inputs are unknown: (cycles, breakdown, report)."""
        raise NotImplementedError

    def verify_file(self, program: Program, side: Path, params: Params, budget: int, t0: float) -> KernelResult:
        """Check, time and verify a program on the inputs its sidecar `side` names."""
        raise NotImplementedError

    def write_export(self, inst: I, mapping: KnobMapping, lowered: L, out: Path, params: Params) -> Path:
        raise NotImplementedError

    # ---- per parameter overrides ------------------------------------------------------------------
    def kb(self, params: Params) -> KB:
        """The doc's KB with these overrides (cached; the KB build refuses unknown or illegal ones)."""
        key = params_key(params)
        if key not in self._kbs:
            self._kbs[key] = self.make_kb(key)
        return self._kbs[key]

    def config(self, params: Params) -> C:
        key = params_key(params)
        if key not in self._configs:
            self._configs[key] = self.make_config(key)
        return self._configs[key]

    # ---- instances and lowerings ----------------------------------------------------------------
    def instance(self, wl: Workload, params: Params, seed: int = 0) -> I:
        """The workload's inputs, placement and reference, kept in a small LRU so that every
        evaluation of `wl` reuses them."""
        key = (workload_key(wl), params_key(params), seed)
        return self._instances.get_or(key, lambda: self.make_instance(wl, params, seed))

    def lowered(self, inst: I, mapping: KnobMapping) -> L:
        """The lowering of `mapping` on `inst`, kept in a small LRU (a search lowers a candidate
        to compare its program with those already simulated, then simulates it)."""
        held, key = self.lowering_key(inst, mapping)
        return self._lowered.get_or(key, lambda: (held, self.make_lowering(inst, mapping)))[1]

    def lower(self, inst: I, mapping: KnobMapping) -> Program:
        return self.program_of(self.lowered(inst, mapping))

    def program_identity(self, inst: I, mapping: KnobMapping) -> Hashable | None:
        """None: no stand-in, a search compares the lowered programs themselves."""
        return None

    def reference_mappings(self, wl: Workload, params: Params) -> dict[str, KnobMapping]:
        raise NotImplementedError

    # ---- programs and files ---------------------------------------------------------------------
    def read_program(self, path: Path, params: Params) -> Program:
        """Parse the text form; mnemonics and operands follow the doc's signatures."""
        kb = self.kb(params)
        path = Path(path)
        return self.parse_program(kb, read_text(path, self.program_kind), str(path))

    def simulate_file(self, path: Path, params: Params, max_instructions: int = MAX_INSTRUCTIONS) -> KernelResult:
        """Check and time a program file; verify it when its sidecar (`<file>.json`, written by
        `export`) names the workload whose inputs the program reads. At most `max_instructions`
        are executed, hardware loops expanded (LimitError beyond)."""
        path = Path(path)
        budget = check_budget(max_instructions)
        program = self.read_program(path, params)
        side = sidecar_path(path)
        t0 = time.perf_counter()
        if side.exists():
            return self.verify_file(program, side, params, budget, t0)
        cycles, breakdown, report = self.run_file(program, params, budget)
        return KernelResult(
            target=self.name,
            workload=path.name,
            verified=None,  # null: nothing to verify against
            cycles=cycles,
            mapping={},
            wall_s=time.perf_counter() - t0,
            extra={
                "verify_reason": f"no sidecar {side.name}: the program's inputs and expected output are unknown, "
                "so it was checked and timed only",
                "breakdown": breakdown,
                **report,
            },
        )

    def export(self, wl: Workload, out: Path, params: Params, mapping: KnobMapping | None = None) -> Path:
        """Write the kernel of `mapping` (default: Candidate-0) in the target's native form at
        `out`, with the sidecar `simulate_file` verifies it against."""
        inst = self.instance(wl, params)
        m = mapping if mapping is not None else self.reference_mappings(wl, params)["library"]
        return self.write_export(inst, m, self.lowered(inst, m), Path(out), params)
