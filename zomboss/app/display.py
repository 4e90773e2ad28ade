"""Progress on stderr: a rich status line a long command updates (the phase, simulations,
incumbent, bound, gap, elapsed time), shown only on a terminal and never under --json, so a
log or a pipe gets the result alone."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from zomboss.solvers.exhaustive import ExhaustiveProgress, relative_gap
from zomboss.solvers.search import SolveProgress


@contextlib.contextmanager
def status_line(enabled: bool, first: str) -> Iterator[Callable[[str], None] | None]:
    """A rich status line on stderr that the caller updates; nothing under --json or when
    stderr is not a terminal (a log or a pipe gets the result only)."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console

    with Console(stderr=True).status(first) as status:
        yield status.update


def exhaustive_text(p: ExhaustiveProgress) -> str:
    return (
        f"exhaustive: {p.phase}, classes {p.classes_done}/{p.classes}, {p.simulations} simulations, "
        f"incumbent {p.incumbent:,}, bound {p.lower_bound:,}, gap "
        f"{relative_gap(p.incumbent, p.lower_bound):.2%}, {p.elapsed_s:.0f} s"
    )


def solve_text(p: SolveProgress) -> str:
    best = "" if p.incumbent is None else f", best {p.incumbent:,} cycles"
    return f"solve: {p.phase}, {p.simulations}/{p.budget} simulations{best}, {p.elapsed_s:.0f} s"


@contextlib.contextmanager
def exhaustive_display(enabled: bool) -> Iterator[Callable[[ExhaustiveProgress], None] | None]:
    """The exhaustive run's status line (phase, classes, simulations, incumbent, bound, gap,
    elapsed)."""
    with status_line(enabled, "exhaustive: starting") as update:
        yield None if update is None else (lambda p: update(exhaustive_text(p)))


@contextlib.contextmanager
def solve_display(enabled: bool) -> Iterator[Callable[[SolveProgress], None] | None]:
    """The guided search's status line (phase, simulations of the budget, best, elapsed)."""
    with status_line(enabled, "solve: starting") as update:
        yield None if update is None else (lambda p: update(solve_text(p)))
