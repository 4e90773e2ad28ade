"""`zomboss kb check`: a mapping (.json) or a program file against a target's KB.

Programs are checked twice, by the Python checker (which reports values) and by clingo on
the program's facts; a disagreement is an internal error, never silently ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zomboss import asp
from zomboss.errors import WorkloadError, ZombossError
from zomboss.knowledge import KB, load_kb
from zomboss.legality import Checker, Violation, mapping_violations, parse_program
from zomboss.mapping import MappingError, space
from zomboss.target import doc_path, get_target, target_names


@dataclass
class CheckReport:
    kind: str  # "program" | "mapping"
    path: str
    violations: list[Violation] = field(default_factory=list)
    checked: int = 0
    core: list[str] = field(default_factory=list)
    python_only: int = 0  # instructions whose values exceed clingo's 32-bit integers
    asp_checked: int = 0  # instructions clingo cross-checked (a prefix of long programs)

    @property
    def legal(self) -> bool:
        return not self.violations

    def text(self) -> str:
        note = (
            f"; {self.python_only} with values beyond 32 bits checked by the Python predicates only"
            if self.python_only
            else ""
        )
        if self.kind == "program" and self.asp_checked < self.checked:
            note += f"; clingo cross-checked the first {self.asp_checked} (--asp-limit 0 for all)"
        if self.legal:
            return f"{self.path}: legal ({self.checked} {'instructions' if self.kind == 'program' else 'constraints'} checked{note})"
        lines = [str(v) for v in self.violations]
        if self.core:
            lines.append(f"conflicting assignments (unsatisfiable core): {', '.join(self.core)}")
        lines.append(f"{self.path}: illegal: {len(self.violations)} violation(s){note}")
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
            **({"core": self.core} if self.core else {}),
        }


def _kb_for(target: str, overrides: Mapping[str, int]) -> KB:
    if target in target_names():
        return load_kb(doc_path(target), overrides)
    if target.endswith(".md"):
        return load_kb(Path(target), overrides)
    raise ZombossError(f"unknown target {target!r} (targets: {', '.join(target_names())})")


ASP_LIMIT = 20_000  # dynamic instructions clingo cross-checks by default (grounding grows ~quadratically with hazards)


def check_program_text(
    kb: KB, text: str, path: str, target: str | None, overrides: Mapping[str, int], asp_limit: int = ASP_LIMIT
) -> CheckReport:
    """Check every dynamic instruction with the Python predicates, and cross-check the first
    `asp_limit` of them (0: all) with clingo: the facts of a prefix are self-contained, so both
    must find the same violations there."""
    if target in target_names():
        t = get_target(target)
        program = t.read_program(Path(path), overrides) if Path(path).exists() else parse_program(kb, text, path)
        events = list(t.trace(program, overrides))
    else:
        program = parse_program(kb, text, path)
        events = [(i, {}) for i in program.instrs]
    checker = Checker(kb)
    checker.record = True
    found = checker.check(events)
    found = [Violation(v.rule, v.message, v.doc_loc, v.index, v.line, v.op, v.values, path) for v in found]
    prefix = checker.events[:asp_limit] if asp_limit else checker.events
    blind = {p - 1 for p in asp.asp_blind(kb, prefix)}
    by_asp = {(v.rule, v.pos - 1) for v in asp.check_program(kb, asp.program_facts(kb, prefix))}
    by_py = {
        (v.rule, v.index)
        for v in found
        if not v.rule.startswith("isa.") and v.index not in blind and v.index < len(prefix)
    }
    if by_asp != by_py:
        diff = sorted(by_asp ^ by_py)[:5]
        raise ZombossError(f"internal inconsistency between the Python and ASP checkers on {path}: {diff}")
    return CheckReport("program", path, found, len(events), python_only=len(blind), asp_checked=len(prefix))


def mapping_values(kb: KB, data: Mapping[str, Any], path: str, target: str) -> tuple[str, dict[str, int | str]]:
    """The op and the flat knob/workload-key values of a mapping file: `{"workload": ID or
    SPEC, "mapping": {"op": ..., "knobs": {...}}}` (the `mapping` that `default --json`
    prints), or `"op"` and `"shape"` instead of `"workload"` for a doc that is not a target.
    Inactive conditional knobs may be omitted; out-of-domain values are reported by the check."""
    if not isinstance(data, Mapping) or "mapping" not in data:
        raise WorkloadError(f"{path}: expected a JSON object with 'workload' and 'mapping'")
    mapping = data["mapping"]
    if not isinstance(mapping, Mapping) or not isinstance(mapping.get("knobs"), Mapping):
        raise WorkloadError(
            f'{path}: \'mapping\' must be {{"op": ..., "knobs": {{...}}}} (the form `zomboss default --json` prints)'
        )
    if "workload" in data and target in target_names():
        wl = get_target(target).workload(str(data["workload"]))
        op, shape = wl.op, dict(wl.shape)
    elif "op" in data and isinstance(data.get("shape"), Mapping):
        op, shape = str(data["op"]), dict(data["shape"])
    else:
        raise WorkloadError(f"{path}: give 'workload' (a suite id or spec) or 'op' and 'shape'")
    if mapping.get("op") not in (None, op):
        raise WorkloadError(f"{path}: the mapping is for {mapping['op']!r} but the workload is {op!r}")
    sp = space(kb, op)
    for k, v in mapping["knobs"].items():
        if isinstance(v, bool):
            continue
        if not isinstance(v, int | str):
            raise WorkloadError(f"{path}: knob {k!r} must be an integer or a symbol, got {json.dumps(v)}")
    try:
        values = sp.complete(mapping["knobs"], shape, path)
    except MappingError as e:
        raise WorkloadError(str(e)) from None
    flat: dict[str, int | str] = {k: int(v) for k, v in shape.items() if k in sp.keys}
    flat.update(values)
    return op, flat


def check_mapping_values(kb: KB, op: str, values: Mapping[str, int | str], path: str) -> CheckReport:
    space = kb.mapping_space(op)
    assert space is not None
    out = [
        Violation(v.rule, v.message, v.doc_loc, 0, 0, op, v.values, path) for v in mapping_violations(kb, op, values)
    ]
    by_py = {v.rule for v in out if not v.rule.endswith(".range")}  # ASP checks constraints, not knob domains
    by_asp = set(asp.check_mapping(kb, op, values))
    if by_asp != by_py:
        raise ZombossError(
            f"internal inconsistency between the Python and ASP mapping checks: {sorted(by_asp ^ by_py)}"
        )
    core = asp.mapping_core(kb, op, values) if by_asp else []
    return CheckReport("mapping", path, out, len(space.constraints) + len(space.knobs), core)


def check_file(target: str, path: Path, overrides: Mapping[str, int], asp_limit: int = ASP_LIMIT) -> CheckReport:
    kb = _kb_for(target, overrides)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ZombossError(f"{path}: cannot read: {e.strerror}") from None
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise WorkloadError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
        op, values = mapping_values(kb, data, str(path), target)
        return check_mapping_values(kb, op, values, str(path))
    return check_program_text(kb, text, str(path), target if target in target_names() else None, overrides, asp_limit)
