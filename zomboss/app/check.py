"""`zomboss kb check FILE`: which KB (a target or a doc), which kind of file (a mapping .json or a
program), and the report of `zomboss.legality` on it, with progress on long programs."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zomboss.legality import ASP_LIMIT, CheckReport, check_mapping_values, check_program_text, mapping_values
from zomboss.target import get_target, resolve_kb, target_names
from zomboss.util import MAX_INSTRUCTIONS, load_json, read_text

PROGRESS_SECONDS = 2.0  # a check running longer reports its progress on stderr this often


class Progress:
    """Progress of a long check on stderr: silent for the first PROGRESS_SECONDS, then a line
    every PROGRESS_SECONDS on a terminal (rewritten in place), every 10 s otherwise."""

    def __init__(self, path: str, stream: Any = None, every: float | None = None) -> None:
        self.path, self.stream = path, stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        # a line every PROGRESS_SECONDS on a terminal (rewritten in place), every 5x that in a log
        self.every = every if every is not None else PROGRESS_SECONDS * (1 if self.tty else 5)
        self.t0 = time.monotonic()
        self.next = self.t0 + PROGRESS_SECONDS if every is None else self.t0 + every
        self.shown = False

    def __call__(self, n: int, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now < self.next:
            return
        if final and not self.shown:
            return
        self.next = now + self.every
        rate = n / max(now - self.t0, 1e-9)
        msg = f"zomboss: {self.path}: {n:,} instructions checked ({rate:,.0f}/s)"
        end = "\n" if final or not self.tty else ""
        self.stream.write(("\r" if self.tty else "") + msg + end)
        self.stream.flush()
        self.shown = True


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
        op, values = mapping_values(kb, data, str(path), registered.workload if registered else None)
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
