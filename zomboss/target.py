"""The target interface the CLI and the search talk to, and the registry of targets.

A target is a folder under `targets/` with an ISA doc and a module exposing `TARGET`,
an object satisfying `Target`. The search knows no particular machine; adding a machine
means adding a folder and one line to `_REGISTRY`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from zomboss.errors import ZombossError
from zomboss.program import Instr, Program
from zomboss.results import KernelResult
from zomboss.workload import Workload

Params = Mapping[str, int]


class Target(Protocol):
    name: str
    doc: Path  # the literate ISA doc

    def suite(self) -> Sequence[Workload]:
        """The benchmark instances, in a stable order."""
        ...

    def workload(self, spec: str) -> Workload:
        """A suite id or an inline `OP:KEY=VALUE,...` spec (raises WorkloadError)."""
        ...

    def default(self, wl: Workload, params: Params) -> KernelResult:
        """Candidate-0: the target compiler's default kernel, lowered, simulated, verified."""
        ...

    def read_program(self, path: Path, params: Params) -> Program:
        """Read a program file in the target's text form (raises ZombossError)."""
        ...

    def trace(self, program: Program, params: Params) -> Iterator[tuple[Instr, Mapping[int, int]]]:
        """The dynamic instruction stream with register contents at each operand position
        (empty mapping for targets without registers); used by `kb check` on programs."""
        ...

    def simulate_file(self, path: Path, params: Params) -> KernelResult:
        """Run a program file (checked against the doc's rules) and verify it."""
        ...

    def export(self, wl: Workload, out: Path, params: Params) -> Path:
        """Write the default (or best known) kernel in the target's native form."""
        ...

    def describe(self) -> Mapping[str, Any]:
        """Short facts for `zomboss workloads` (timing presets, modes)."""
        ...


_REGISTRY = {
    "gemmini": "zomboss.targets.gemmini",
    "plena": "zomboss.targets.plena",
}

TARGET_NAMES = tuple(_REGISTRY)


def get_target(name: str) -> Target:
    if name not in _REGISTRY:
        raise ZombossError(f"unknown target {name!r} (targets: {', '.join(_REGISTRY)})")
    mod = importlib.import_module(_REGISTRY[name])
    return mod.TARGET


def doc_path(name: str) -> Path:
    """The ISA doc of a registered target, without importing its simulator."""
    if name not in _REGISTRY:
        raise ZombossError(f"unknown target {name!r} (targets: {', '.join(_REGISTRY)})")
    import importlib.util

    spec = importlib.util.find_spec(_REGISTRY[name])
    if spec is None or not spec.submodule_search_locations:
        raise ZombossError(f"target {name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / f"{name}.md"
