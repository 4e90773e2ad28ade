"""`zomboss kb check FILE`: which KB (a target or a doc), which kind of file (a mapping .json or a
program), and the report of `zomboss.legality` on it, with progress on long programs."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from rich.console import Console
from rich.progress import Progress as RichProgress
from rich.progress import TaskID, TaskProgressColumn, TextColumn, TimeElapsedColumn

from zomboss.errors import WorkloadError, ZombossError
from zomboss.knowledge import KB
from zomboss.legality import ASP_LIMIT, CheckReport, check_mapping_values, check_program_text, mapping_values
from zomboss.mapping import space
from zomboss.target import Target, get_target, resolve_kb, target_names
from zomboss.util import MAX_INSTRUCTIONS, load_json, read_text

PROGRESS_SECONDS = 2.0  # a check running longer reports its progress on stderr this often


class Progress:
    """Progress of a long check on stderr, silent for the first PROGRESS_SECONDS: on a terminal
    a rich.progress line (count, rate, elapsed) updated in place; in a log a plain line every
    5 x PROGRESS_SECONDS, since a live display writes nothing readable there."""

    def __init__(self, path: str, stream: IO[str] | None = None, every: float | None = None) -> None:
        self.path = path
        self.console = Console(file=stream if stream is not None else sys.stderr, highlight=False)
        self.tty = self.console.is_terminal
        self.every = every if every is not None else PROGRESS_SECONDS * (1 if self.tty else 5)
        self.t0 = time.monotonic()
        self.next = self.t0 + (PROGRESS_SECONDS if every is None else every)
        self.live: RichProgress | None = None
        self.task: TaskID | None = None
        self.shown = False

    def __call__(self, n: int, final: bool = False) -> None:
        now = time.monotonic()
        if (not final and now < self.next) or (final and not self.shown):
            return
        self.next = now + self.every
        self.shown = True
        if not self.tty:
            rate = n / max(now - self.t0, 1e-9)
            self.console.print(f"zomboss: {self.path}: {n:,} instructions checked ({rate:,.0f}/s)", soft_wrap=True)
            return
        if self.live is None:
            self.live = RichProgress(
                TextColumn(f"zomboss: {self.path}:"),
                TextColumn("{task.completed:,} instructions checked"),
                TaskProgressColumn(show_speed=True),
                TimeElapsedColumn(),
                console=self.console,
            )
            self.live.start()
            self.task = self.live.add_task("check", total=None)
        assert self.task is not None
        self.live.update(self.task, completed=n)
        if final:
            self.live.stop()


@dataclass(frozen=True)
class MissingKnob:
    """An active knob a partial mapping does not name: its domain, and the value to start
    from (Candidate-0's for a registered target and workload, else the knob's canonical one)."""

    name: str
    domain: str
    default: int | str
    default_is: str  # "Candidate-0" | "canonical"


def missing_knobs(
    kb: KB, data: object, registered: Target | None, overrides: Mapping[str, int]
) -> tuple[str, str, list[MissingKnob]] | None:
    """(op, workload, every active knob the mapping of a `kb check` file lacks), or None when
    it lacks none or the file is malformed otherwise (then `mapping_values` says what is
    wrong). A knob is active as the doc's `when` says, with the missing knobs at the values
    shown, so the list is complete for the mapping that fills them in."""
    if not isinstance(data, Mapping) or not isinstance(data.get("mapping"), Mapping):
        return None
    given = data["mapping"].get("knobs")
    if not isinstance(given, Mapping):
        return None
    try:
        if isinstance(data.get("workload"), str) and registered is not None:
            wl = registered.workload(data["workload"])
            op, shape, name = wl.op, dict(wl.shape), wl.id
            start = dict(registered.reference_mappings(wl, overrides)["library"].as_dict())
            default_is = "Candidate-0"
        elif isinstance(data.get("op"), str) and isinstance(data.get("shape"), Mapping):
            op, shape = data["op"], {str(k): int(v) for k, v in data["shape"].items()}
            name, start, default_is = f"{op} {shape}", {}, "canonical"
        else:
            return None
        if kb.mapping_space(op) is None:
            return None
        sp = space(kb, op)
        if set(map(str, given)) - {k.name for k in sp.knobs}:
            return None  # an unknown knob: mapping_values names it
        filled = {k.name: start.get(k.name, k.default) for k in sp.knobs} | {
            str(k): v for k, v in given.items() if isinstance(v, int | str)
        }
        missing = [
            MissingKnob(
                k.name,
                k.domain(),
                start.get(k.name, k.default),
                default_is if k.name in start else "canonical",
            )
            for k in sp.knobs
            if k.name not in given and sp.active(k, filled, shape)
        ]
    except (ZombossError, ValueError, TypeError, KeyError):
        return None
    return (op, name, missing) if missing else None


def missing_text(path: str, target: str | None, op: str, workload: str, missing: list[MissingKnob]) -> str:
    """Every missing knob on a line of its own, and, for a registered target, where a complete
    mapping comes from."""
    lines = [
        f"{path}: the {op} mapping lacks {len(missing)} active knob(s) (a mapping names every active knob; "
        "inactive ones may be omitted):"
    ]
    lines += [f"  {m.name}: {m.domain} ({m.default_is}: {m.default})" for m in missing]
    if target is not None:
        where = workload if " " not in workload else "WORKLOAD"
        lines.append(
            f'a complete mapping to start from: `zomboss default {target} {where} --json` prints it (its "mapping")'
        )
    return "\n".join(lines)


def read_input(path: Path) -> str:
    """The text of a program or mapping file, or one clear error naming it."""
    return read_text(path, "a program or a mapping")


def check_file(
    target: str,
    path: Path,
    overrides: Mapping[str, int],
    asp_limit: int = ASP_LIMIT,
    max_instructions: int = MAX_INSTRUCTIONS,
    progress: bool = True,
) -> CheckReport:
    """Check FILE against TARGET (a registered target or the path of a doc)."""
    kb = resolve_kb(target, overrides)
    text = read_input(path)
    registered = get_target(target) if target in target_names() else None
    if path.suffix == ".json":
        data = load_json(text, str(path))
        try:
            op, values = mapping_values(kb, data, str(path), registered.workload if registered else None)
        except ZombossError as e:
            # the first missing knob (Space.complete's error) becomes the list of them all
            missing = missing_knobs(kb, data, registered, overrides) if "lacks knob" in str(e) else None
            if missing is None:
                raise
            raise WorkloadError(missing_text(str(path), target if registered else None, *missing)) from e
        return check_mapping_values(kb, op, values, str(path))
    return check_program_text(
        kb,
        text,
        str(path),
        registered,
        overrides,
        asp_limit,
        max_instructions,
        Progress(str(path)) if progress else None,
    )
