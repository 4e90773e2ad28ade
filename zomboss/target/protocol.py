"""The target interface the CLI and the search talk to (`zomboss.target.registry` finds them).

The search-facing half of the protocol works on *instances* (a workload with its inputs,
their placement and the NumPy reference, built once and reused by every evaluation) and on
core `zomboss.mapping.Mapping`s. An evaluation runs in one of three modes: timing-only (what
a search ranks candidates by), checked (timing plus the doc's rule checker on every executed
instruction) and verified (functional + timing + checker, compared with NumPy).
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from zomboss.knowledge import KB
from zomboss.mapping import KnobMapping
from zomboss.program import Instr, Program
from zomboss.results import KernelResult
from zomboss.workload import Workload

Params = Mapping[str, int]  # doc parameter overrides (`--param NAME=VALUE`)
ParamsKey = tuple[tuple[str, int], ...]


def params_key(params: Params | None) -> ParamsKey:
    """The hashable identity of parameter overrides (names lower-cased, sorted): what every
    per-parameters cache is keyed by."""
    return tuple(sorted((k.lower(), int(v)) for k, v in (params or {}).items()))


# The parts of a kernel's cycles every timing model reports (they sum to `cycles`).
BREAKDOWN_KEYS = ("compute", "memory", "stall", "overhead")


class Mode(enum.Enum):
    TIMING = "timing"  # timing model only: no data moves, no rule checks (search ranking)
    CHECKED = "checked"  # timing + the doc's rules on every executed instruction
    VERIFIED = "verified"  # functional + timing + rules, output compared with the NumPy reference


class Instance(Protocol):
    """A workload made concrete: inputs for one seed, their placement, the NumPy reference."""

    @property
    def workload(self) -> Workload: ...

    @property
    def params(self) -> Params: ...

    @property
    def seed(self) -> int: ...


@dataclass(frozen=True)
class Evaluation:
    """One simulation of one mapping on one instance."""

    target: str
    workload: str
    mapping: KnobMapping
    mode: Mode
    cycles: int
    verified: bool | None  # None unless mode is VERIFIED
    breakdown: Mapping[str, int]  # BREAKDOWN_KEYS -> cycles, as the timing model attributes them
    instructions: int  # executed instructions (hardware loops expanded)
    wall_s: float
    seed: int = 0
    report: Mapping[str, Any] = field(default_factory=dict)  # target facts: counts, bytes, gates, other timing modes


@runtime_checkable
class SampledVerifier(Protocol):
    """A target that can verify a sample of a kernel's output blocks (`--verify sampled`)."""

    def verify_sampled(
        self, inst: Instance, mapping: KnobMapping, samples: int, seed: int
    ) -> tuple[bool, Mapping[str, object]]:
        """Functionally simulate the part of the kernel that computes `samples` output blocks
        (seed-chosen, always the first and the last) on fresh random inputs and compare them
        with NumPy: (all equal, what was checked)."""
        ...


class Target(Protocol):
    name: str
    doc: Path  # the literate ISA doc

    # ---- machine and suite
    def kb(self, params: Params) -> KB:
        """The KB for these parameter overrides (refuses unknown or illegal overrides)."""
        ...

    def suite(self) -> Sequence[Workload]:
        """The benchmark instances, in a stable order."""
        ...

    def workload(self, spec: str) -> Workload:
        """A suite id or an inline `OP:KEY=VALUE,...` spec (raises WorkloadError)."""
        ...

    # ---- the search-facing protocol
    def instance(self, wl: Workload, params: Params, seed: int = 0) -> Instance:
        """Inputs, placement and reference for `wl` (cached: every evaluation reuses it)."""
        ...

    def reference_mappings(self, wl: Workload, params: Params) -> dict[str, KnobMapping]:
        """Named expert points; the first, "library", is Candidate-0 (the compiler default)."""
        ...

    def lower(self, inst: Instance, mapping: KnobMapping) -> Program:
        """The program of a legal mapping (raises IllegalMapping naming the doc constraint)."""
        ...

    def program_identity(self, inst: Instance, mapping: KnobMapping) -> Hashable | None:
        """A cheap stand-in for the program of a legal mapping: equal identities lower to equal
        instructions (unequal ones may too), None when the target offers none. A search tells
        a repeated program by it without lowering the mapping."""
        ...

    def evaluate(self, inst: Instance, mapping: KnobMapping, mode: Mode, *, extrapolate: bool = True) -> Evaluation:
        """Lower and simulate; VERIFIED compares the output with the instance's reference.
        In TIMING mode `extrapolate` lets the timing model skip steady periods of the
        lowering's loops (`zomboss.steady`; the report says what was skipped); False, and
        the other modes, simulate every instruction."""
        ...

    def bound(self, wl: Workload, params: Params, mapping: KnobMapping | None = None) -> int:
        """A lower bound on the cycles of any legal mapping (of `mapping`, when given)."""
        ...

    # ---- programs and files
    def read_program(self, path: Path, params: Params) -> Program:
        """Read a program file in the target's text form (raises ZombossError)."""
        ...

    def trace(self, program: Program, params: Params) -> Iterator[tuple[Instr, Mapping[int, int]]]:
        """The dynamic instruction stream with register contents at each operand position
        (empty mapping for targets without registers); used by `kb check` on programs."""
        ...

    def min_instructions(self, program: Program, params: Params) -> int:
        """A lower bound of the instructions `program` executes (hardware loops multiplied
        out where the program fixes their trip counts): what the instruction budget of
        `kb check` and `simulate` refuses before a run starts."""
        ...

    def simulate_file(self, path: Path, params: Params, max_instructions: int = ...) -> KernelResult:
        """Run a program file (checked against the doc's rules) and verify it, executing at
        most `max_instructions` (zomboss.inputs.MAX_INSTRUCTIONS by default; LimitError beyond)."""
        ...

    def export(self, wl: Workload, out: Path, params: Params, mapping: KnobMapping | None = None) -> Path:
        """Write the kernel of `mapping` (default: Candidate-0) in the target's native form."""
        ...

    def describe(self) -> Mapping[str, Any]:
        """Short facts for `zomboss workloads` (timing presets, modes)."""
        ...
