"""What the command line shows besides its results: progress on stderr (a rich status line a
long command updates with the phase, simulations, incumbent, bound, gap and elapsed time, shown
only on a terminal and never under --json, so a log or a pipe gets the result alone), tables
that never cut an id (rich on a terminal, plain aligned columns when piped or under --plain),
and the list of files a command wrote."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (the commands that only show a status line do not load the solvers, nor rich)
    from rich.console import Console

    from zomboss.solvers.exhaustive import ExhaustiveProgress
    from zomboss.solvers.search import SolveProgress


@contextlib.contextmanager
def status_line(enabled: bool, first: str) -> Iterator[Callable[[str], None] | None]:
    """A rich status line on stderr that the caller updates; nothing under --json or when
    stderr is not a terminal (a log or a pipe gets the result only)."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console  # (rich is loaded only when something is drawn: 20 ms of start-up)

    with Console(stderr=True).status(first) as status:
        yield status.update


@contextlib.contextmanager
def working(enabled: bool, what: str, note: str = "", every: float = 1.0) -> Iterator[None]:
    """The status line of a long command that has no phases to report (a long simulation or
    check, a large doc's build): what it does and for how long, updated every `every` seconds,
    so a slow input is visibly working, not hung (on a terminal, never under --json)."""
    with status_line(enabled, f"{what}: starting") as update:
        if update is None:
            yield
            return
        stop = threading.Event()
        t0 = time.monotonic()

        def tick() -> None:
            while not stop.wait(every):
                update(f"{what}: {time.monotonic() - t0:.0f} s{note}")

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            yield
        finally:
            stop.set()
            ticker.join()


def exhaustive_text(p: ExhaustiveProgress) -> str:
    from zomboss.solvers.exhaustive import relative_gap

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


def plain_wanted(plain: bool) -> bool:
    """Plain text (no box drawing, no colour, no folding) under --plain or when stdout is not a
    terminal, so a pipe or a file gets every cell whole, one row a line."""
    return plain or not sys.stdout.isatty()


def print_table(
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    plain: bool,
    ids: Sequence[str] = (),
    right: Sequence[str] = (),
    console: Console | None = None,
) -> None:
    """A table on stdout. The `ids` and the (numeric) `right` columns are never cut: plain
    output pads every column to its widest cell; a rich table keeps those columns as wide as
    their widest cell and folds the other cells (never an ellipsis) when the terminal is
    narrow."""
    if plain:
        widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]

        def line(cells: Sequence[str]) -> str:
            return "  ".join(
                cell.rjust(w) if col in right else cell.ljust(w)
                for col, cell, w in zip(columns, cells, widths, strict=True)
            ).rstrip()

        print("\n".join([title, line(columns), *(line(r) for r in rows)]))
        return
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)  # no side borders: room for the cells
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    need = sum(w if c in ids or c in right else len(c) for c, w in zip(columns, widths, strict=True))
    numbers_whole = need + 3 * len(columns) <= console.width  # else numbers fold too, ids never
    for col, widest in zip(columns, widths, strict=True):
        whole = col in ids or (col in right and numbers_whole)  # ids and numbers read whole; text may fold
        table.add_column(
            col,
            justify="right" if col in right else "left",
            overflow="fold",
            no_wrap=whole,
            min_width=widest if whole else None,
        )
    for r in rows:
        table.add_row(*r)
    console.print(table)


def files_text(files: Sequence[Path | str]) -> str:
    """The files a command wrote, one a line, for its text output (its JSON has them as `files`)."""
    return "\n".join(f"wrote {f}" for f in files)


def result_value(key: str, d: dict[str, object]) -> str:
    """One field of a `solve` result as its text output shows it. An exhaustive run that
    stopped early (--time-limit, --gap) says it is incomplete, and its `legal_mappings`
    counts only the mappings sized before the stop, which the text says instead of a bare
    number (a 0 read as "no legal mapping")."""
    v = d[key]
    if d.get("complete") is False:
        if key == "complete":
            return "no: stopped before every legal mapping was simulated or pruned; the optimum is not proven"
        if key == "legal_mappings":
            return f"incomplete: {v} sized before the stop" if v else "incomplete: none sized before the stop"
    return str(v)
