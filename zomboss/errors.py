"""Exceptions that the CLI turns into clear messages (never tracebacks)."""

from __future__ import annotations


class ZombossError(Exception):
    """Base for every user-facing error; `exit_code` is what the CLI returns."""

    exit_code = 2


class WorkloadError(ZombossError):
    """A workload spec or id that cannot be understood; the message names the bad part."""


class IllegalProgram(ZombossError):
    """A program broke an ISA rule; carries the violations (rule id, line, values)."""

    exit_code = 1

    def __init__(self, violations: list) -> None:  # list[Violation]; avoid import cycle
        self.violations = violations
        super().__init__("\n".join(str(v) for v in violations))


class VerificationError(ZombossError):
    """A simulated kernel's output disagrees with the NumPy reference."""

    exit_code = 1
