"""The progress lines of `solve`, `solve --exhaustive` and the long commands without phases (`simulate`,
`kb check`, `kb build`): on stderr, only on a terminal and
never under --json, saying the phase, the simulations, the incumbent and the time."""

from __future__ import annotations

import sys

from zomboss.app.display import exhaustive_display, exhaustive_text, solve_display, solve_text
from zomboss.solvers.exhaustive import ExhaustiveProgress
from zomboss.solvers.search import SolveProgress


def test_a_status_line_only_on_a_terminal_and_not_under_json(monkeypatch):
    for display in (solve_display, exhaustive_display):
        monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
        with display(enabled=True) as show:
            assert show is None
        monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
        with display(enabled=False) as show:
            assert show is None
        with display(enabled=True) as show:
            assert show is not None


def test_the_lines_say_phase_simulations_incumbent_bound_and_time(monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert solve_text(SolveProgress("search", 7, 32, 67623, 3.2)) == (
        "solve: search, 7/32 simulations, best 67,623 cycles, 3 s"
    )
    assert solve_text(SolveProgress("candidate-0", 0, 32, None, 0.1)) == "solve: candidate-0, 0/32 simulations, 0 s"
    assert exhaustive_text(ExhaustiveProgress("classes", 3, 10, 7, 1020, 1000, 1.5)) == (
        "exhaustive: classes, classes 3/10, 7 simulations, incumbent 1,020, bound 1,000, gap 2.00%, 2 s"
    )
    with solve_display(enabled=True) as show:
        assert show is not None
        show(SolveProgress("pool", 0, 32, 70072, 1.0))


def test_a_long_command_without_phases_shows_what_it_does_and_for_how_long(monkeypatch):
    import contextlib
    import time

    from zomboss.app import display

    seen: list[str] = []

    @contextlib.contextmanager
    def fake_status(enabled, first):  # a terminal's status line, recorded
        seen.append(first)
        yield seen.append if enabled else None

    monkeypatch.setattr(display, "status_line", fake_status)
    with display.working(True, "simulate k.asm", " (at most 20,000,000 instructions)", every=0.02):
        time.sleep(0.2)
    assert seen[0] == "simulate k.asm: starting"
    assert len(seen) >= 3 and seen[-1] == "simulate k.asm: 0 s (at most 20,000,000 instructions)"
    seen.clear()
    with display.working(False, "simulate k.asm", every=0.02):  # --json, or not a terminal
        time.sleep(0.1)
    assert seen == ["simulate k.asm: starting"]
