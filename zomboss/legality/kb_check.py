"""What `zomboss kb check` decides: a mapping's values or a program's text against a KB.

Programs are checked twice, by the Python checker (which reports values) and by clingo on
the program's facts; a disagreement is an internal error, never silently ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from zomboss import expr as ex
from zomboss.errors import WorkloadError, ZombossError
from zomboss.knowledge import KB, Violation
from zomboss.knowledge.asp import program_facts
from zomboss.knowledge.query import asp_blind, check_mapping, check_program, mapping_blind, mapping_core
from zomboss.legality.checker import Checker
from zomboss.mapping import MappingError, mapping_violations, space
from zomboss.program import Instr, Program, parse_program
from zomboss.util import MAX_INSTRUCTIONS, LimitError, over_budget
from zomboss.workload import Workload


@dataclass
class CheckReport:
    kind: str  # "program" | "mapping"
    path: str
    violations: list[Violation] = field(default_factory=list)  # the first MAX_REPORTED of them
    checked: int = 0
    core: list[str] = field(default_factory=list)
    python_only: int = 0  # instructions (constraints) whose values exceed clingo's 32-bit integers
    asp_checked: int = 0  # instructions clingo cross-checked (a prefix of long programs)
    total: int = 0  # violations found (more than `violations` holds when there are very many)

    def __post_init__(self) -> None:
        self.total = max(self.total, len(self.violations))

    @property
    def legal(self) -> bool:
        return not self.violations

    def text(self) -> str:
        what = "instructions" if self.kind == "program" else "constraints"
        note = (
            f"; {self.python_only} {what} with values beyond 32 bits checked by Python only" if self.python_only else ""
        )
        if self.kind == "program" and self.asp_checked < self.checked:
            note += f"; clingo cross-checked the first {self.asp_checked} (--asp-limit 0 for all)"
        if self.legal:
            return f"{self.path}: legal ({self.checked} {what} checked{note})"
        lines = [str(v) for v in self.violations]
        if self.total > len(self.violations):
            lines.append(f"... and {self.total - len(self.violations)} more violation(s) not shown")
        if self.core:
            lines.append(f"conflicting assignments (unsatisfiable core): {', '.join(self.core)}")
        lines.append(f"{self.path}: illegal: {self.total} violation(s){note}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.path,
            "legal": self.legal,
            "checked": self.checked,
            "python_only": self.python_only,
            "asp_checked": self.asp_checked,
            "violations": [v.to_json() for v in self.violations],
            "violations_total": self.total,
            **({"core": self.core} if self.core else {}),
        }


class ProgramSource(Protocol):
    """What a check needs of a target to read and trace its programs (a registered target
    satisfies it; a bare doc has none, and its programs are read as written)."""

    def read_program(self, path: Path, overrides: Mapping[str, int]) -> Program: ...

    def min_instructions(self, program: Program, overrides: Mapping[str, int]) -> int: ...

    def trace(
        self, program: Program, overrides: Mapping[str, int]
    ) -> Iterable[tuple[Instr, Mapping[int, int] | None]]: ...


ASP_LIMIT = 20_000  # dynamic instructions clingo cross-checks by default (grounding grows ~quadratically with hazards)
ASP_MAX = 1_000_000  # what clingo cross-checks at most, even with --asp-limit 0 (the facts take ~1 KB each)
MAX_REPORTED = 1000  # violations a report keeps (the rest are counted)


def check_program_text(
    kb: KB,
    text: str,
    path: str,
    source: ProgramSource | None,
    overrides: Mapping[str, int],
    asp_limit: int = ASP_LIMIT,
    max_instructions: int = MAX_INSTRUCTIONS,
    progress: Callable[..., None] | None = None,
) -> CheckReport:
    """Check every dynamic instruction with the Python predicates as the target's tracer
    produces them (streamed: memory does not grow with the program's length), and cross-check
    the first `asp_limit` of them (0: all, up to ASP_MAX) with clingo: the facts of a prefix
    are self-contained, so both must find the same violations there. At most
    `max_instructions` are executed (LimitError beyond)."""
    if max_instructions < 1:
        raise ZombossError(f"--max-instructions {max_instructions}: must be at least 1")
    if asp_limit < 0:
        raise ZombossError(f"--asp-limit {asp_limit}: must be 0 (all) or more")
    limit = min(asp_limit or ASP_MAX, ASP_MAX, max_instructions)
    if source is not None and Path(path).exists():
        program = source.read_program(Path(path), overrides)
    else:
        program = parse_program(kb, text, path)
    least = source.min_instructions(program, overrides) if source is not None else len(program.instrs)
    if least > len(program.instrs) and least > max_instructions:
        raise over_budget(path, f"its hardware loops execute at least {least:,} instructions", max_instructions)
    if len(program.instrs) > max_instructions:
        raise LimitError(
            f"{path}: {len(program.instrs):,} instructions, more than the {max_instructions:,} kb check executes "
            "(raise it with --max-instructions N)"
        )
    events: Iterable[tuple[Any, Mapping[int, int] | None]] = (
        source.trace(program, overrides) if source is not None else ((i, {}) for i in program.instrs)
    )
    checker = Checker(kb, record=True)
    checker.record_limit = limit
    shown: list[Violation] = []
    total = 0
    in_prefix: set[tuple[str, int]] = set()  # Python's (rule, position) in the cross-checked prefix
    n = 0
    recording = True  # clingo cross-checks the instructions stepped while events are recorded
    for instr, regs in events:
        if n >= max_instructions:
            raise LimitError(
                f"{path}: the program executes more than {max_instructions:,} instructions, the kb check budget "
                "(raise it with --max-instructions N)"
            )
        for v in checker.step(instr, regs):
            total += 1
            if len(shown) < MAX_REPORTED:
                shown.append(Violation(v.rule, v.message, v.doc_loc, v.index, v.line, v.op, v.values, path))
            if recording:
                in_prefix.add((v.rule, v.index))
        n += 1
        if recording and len(checker.events) >= limit:
            recording = False
        if progress is not None and not n & 0xFFFF:
            progress(n)
    if progress is not None:
        progress(n, final=True)
    prefix = checker.events
    blind = {p - 1 for p in asp_blind(kb, prefix)}
    # isa.* checks (arity, evaluation failures, state indexes) are the Python checker's own
    isa = {i for r, i in in_prefix if r.startswith("isa.")}
    by_asp = {(v.rule, v.pos - 1) for v in check_program(kb, program_facts(kb, prefix))}
    by_asp = {(r, i) for r, i in by_asp if i not in blind and i not in isa}
    by_py = {(r, i) for r, i in in_prefix if i not in blind and i not in isa}
    if by_asp != by_py:
        diff = sorted(by_asp ^ by_py)[:5]
        raise ZombossError(f"internal inconsistency between the Python and ASP checkers on {path}: {diff}")
    return CheckReport("program", path, shown, n, python_only=len(blind), asp_checked=len(prefix), total=total)


def _shape(data: Any, path: str) -> dict[str, int]:
    if not isinstance(data, Mapping):
        raise WorkloadError(f"{path}: 'shape' must be an object of integer workload keys")
    out = {}
    for k, v in data.items():
        if isinstance(v, bool) or not isinstance(v, int):
            raise WorkloadError(f"{path}: workload key {k!r} must be an integer, got {_show_json(v)}")
        if not 0 <= v <= MAX_SHAPE:
            raise WorkloadError(f"{path}: workload key {k!r} = {v} is outside 0..{MAX_SHAPE}")
        out[str(k)] = v
    return out


MAX_SHAPE = (1 << 31) - 1  # workload keys are sizes: they must fit 32 bits


def _show_json(v: Any) -> str:
    try:
        text = json.dumps(v)
    except (TypeError, ValueError, RecursionError):
        text = type(v).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def mapping_values(
    kb: KB, data: Mapping[str, Any], path: str, workload_of: Callable[[str], Workload] | None
) -> tuple[str, dict[str, int | str]]:
    """The op and the flat knob/workload-key values of a mapping file: `{"workload": ID or
    SPEC, "mapping": {"op": ..., "knobs": {...}}}` (the `mapping` that `default --json`
    prints; `workload_of` resolves it), or `"op"` and `"shape"` instead of `"workload"` for a
    doc that is not a target.
    Inactive conditional knobs may be omitted; out-of-domain values of active knobs are reported
    by the check, of inactive ones (whose value is replaced) refused by `Space.complete` with the
    message `export --mapping` gives, and ill-typed ones (a string for an integer knob) are errors."""
    if not isinstance(data, Mapping) or "mapping" not in data:
        raise WorkloadError(f"{path}: expected a JSON object with 'workload' and 'mapping'")
    mapping = data["mapping"]
    if not isinstance(mapping, Mapping) or not isinstance(mapping.get("knobs"), Mapping):
        raise WorkloadError(
            f'{path}: \'mapping\' must be {{"op": ..., "knobs": {{...}}}} (the form `zomboss default --json` prints)'
        )
    if "workload" in data and workload_of is not None:
        if not isinstance(data["workload"], str):
            raise WorkloadError(f"{path}: 'workload' must be a suite id or spec, got {_show_json(data['workload'])}")
        wl = workload_of(data["workload"])
        op, shape = wl.op, dict(wl.shape)
    elif "op" in data and isinstance(data.get("shape"), Mapping):
        op, shape = str(data["op"]), _shape(data["shape"], path)
    else:
        raise WorkloadError(f"{path}: give 'workload' (a suite id or spec) or 'op' and 'shape'")
    if mapping.get("op") not in (None, op):
        raise WorkloadError(f"{path}: the mapping is for {_show_json(mapping['op'])} but the workload is {op!r}")
    if kb.mapping_space(op) is None:
        ops = ", ".join(m.op for m in kb.doc.mappings) or "none"
        raise WorkloadError(f"{path}: {kb.target} has no mapping space for op {op!r} (ops: {ops})")
    sp = space(kb, op)
    kinds = {k.name: k for k in sp.knobs}
    for k, v in mapping["knobs"].items():
        knob = kinds.get(k)
        if isinstance(v, bool) and (knob is None or knob.boolean):
            continue
        if knob is not None and knob.symbolic and not isinstance(v, str):
            raise WorkloadError(f"{path}: knob {k!r} must be one of {knob.domain()}, got {_show_json(v)}")
        if knob is not None and not knob.symbolic and (isinstance(v, bool) or not isinstance(v, int)):
            raise WorkloadError(f"{path}: knob {k!r} must be an integer ({knob.domain()}), got {_show_json(v)}")
        if not isinstance(v, int | str):
            raise WorkloadError(f"{path}: knob {k!r} must be an integer or a symbol, got {_show_json(v)}")
        if isinstance(v, int) and abs(v).bit_length() > ex.MAX_BITS:
            raise WorkloadError(f"{path}: knob {k!r} is beyond the {ex.MAX_BITS}-bit integer limit")
    try:
        values = sp.complete(mapping["knobs"], shape, path)
    except MappingError as e:
        raise WorkloadError(str(e)) from None
    flat: dict[str, int | str] = {k: int(v) for k, v in shape.items() if k in sp.keys}
    flat.update(values)
    return op, flat


def check_mapping_values(kb: KB, op: str, values: Mapping[str, int | str], path: str) -> CheckReport:
    """The constraints a mapping breaks, by the Python predicates and by clingo (which must
    agree, except on constraints whose values exceed clingo's integers: Python decides those)."""
    space = kb.mapping_space(op)
    if space is None:
        raise ZombossError(f"{kb.target} has no mapping space for op {op!r}")
    out = [
        Violation(v.rule, v.message, v.doc_loc, 0, 0, op, v.values, path) for v in mapping_violations(kb, op, values)
    ]
    if any(v.rule.endswith(".missing") for v in out):
        return CheckReport("mapping", path, out, len(space.constraints) + len(space.knobs))
    blind = mapping_blind(kb, op, values)
    # ASP checks constraints, not knob domains
    constraints = {c.id for c in space.constraints}
    by_py = {v.rule for v in out if v.rule in constraints} - blind
    by_asp = set(check_mapping(kb, op, values)) - blind
    if by_asp != by_py:
        raise ZombossError(
            f"internal inconsistency between the Python and ASP mapping checks: {sorted(by_asp ^ by_py)}"
        )
    core = mapping_core(kb, op, values) if by_asp and not blind else []
    return CheckReport("mapping", path, out, len(space.constraints) + len(space.knobs), core, python_only=len(blind))
