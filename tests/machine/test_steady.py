"""The target-neutral steady-state detector (zomboss.steady) on synthetic machines."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zomboss.machine import steady as steady


class _Machine:
    """A toy timing model: each iteration costs `cost(t)` cycles and leaves a backlog of
    `lag(t)` cycles (the relative state); skips advance its clock and counters."""

    def __init__(self, cost, lag=lambda t: 0.0):  # noqa: ANN001
        self.cost, self.lag = cost, lag
        self.clock, self.events, self.reg, self.t = 0.0, 0.0, 0, 0

    def body(self, t: int) -> None:
        self.t = t
        self.clock += self.cost(t)
        self.events += 1
        self.reg += 3

    def mark(self) -> steady.Mark:
        return steady.Mark(self.clock, np.array([self.lag(self.t)]), np.array([self.events]), (self.reg,))

    def skip(self, s: steady.Skip) -> None:
        self.clock += s.dt
        self.events += float(s.counters[0])
        self.reg += s.linear[0]


def _run(m: _Machine, trips: int, alike=lambda t: 0, policy: steady.Policy | None = None):  # noqa: ANN001
    report = steady.Report()
    steady.repeat(trips, alike, m.body, m.mark, m.skip, policy or steady.Policy(), report)
    return report


def test_a_constant_period_is_skipped_exactly():
    m = _Machine(lambda t: 100.0)
    r = _run(m, 1000)
    assert (m.clock, m.events, m.reg) == (100_000.0, 1000, 3000)
    assert r.extrapolated == 1 and r.skipped > 990 and r.simulated + r.skipped == 1000


@given(pattern=st.lists(st.integers(50, 150), min_size=2, max_size=3, unique=True), trips=st.integers(20, 400))
@settings(max_examples=60, deadline=None)
def test_a_periodic_pattern_is_extrapolated_by_whole_periods(pattern, trips):
    # (distinct costs: a pattern whose windows coincide by chance, 50 50 59, fools any detector
    # that confirms a period twice; the timing models' relative state is what guards them)
    m = _Machine(lambda t: float(pattern[t % len(pattern)]))
    r = _run(m, trips)
    want = sum(pattern[t % len(pattern)] for t in range(trips))
    assert abs(m.clock - want) <= max(pattern)  # the mean of two periods times whole periods
    assert r.simulated + r.skipped == trips and m.events == trips and m.reg == 3 * trips


def test_a_drifting_state_is_never_extrapolated():
    m = _Machine(lambda t: 100.0, lag=lambda t: 10.0 * t)  # a backlog that grows every iteration
    r = _run(m, 200)
    assert r.skipped == 0 and r.fallbacks == 1 and m.clock == 20_000.0


def test_runs_of_alike_iterations_are_extrapolated_separately():
    # the first and last iterations are edges; the two halves differ in cost
    cost = lambda t: 5.0 if t in (0, 99) else (10.0 if t < 50 else 20.0)  # noqa: E731
    alike = lambda t: (t == 0, t == 99, t < 50)  # noqa: E731
    m = _Machine(cost)
    r = _run(m, 100, alike)
    assert m.clock == sum(cost(t) for t in range(100))
    assert steady.runs(100, alike) == [(0, 1), (1, 50), (50, 99), (99, 100)]
    assert r.runs == 2 and r.extrapolated == 2


def test_a_key_change_blocks_a_period():
    m = _Machine(lambda t: 100.0)
    marks = [m.mark() for _ in range(3)]
    for i, mk in enumerate(marks):
        object.__setattr__(mk, "time", 100.0 * i)
    assert steady.find_period(marks, steady.Policy()) == 1
    keyed = [steady.Mark(k.time, k.state, k.counters, k.linear, key=i % 2) for i, k in enumerate(marks)]
    assert steady.find_period(keyed, steady.Policy()) is None


def test_a_tally_is_scaled_like_the_counters_but_never_blocks_a_period():
    """A tally (what a target only reports, e.g. its breakdown's busy time) may drift between
    periods where the counters do not: the period is still found, and the skip adds the
    tally's mean increment over the last two periods, times the periods skipped."""
    marks = [
        steady.Mark(100.0 * i, np.zeros(1), np.array([float(i)]), tally=np.array([60.0 * i + 5.0 * i * i]))
        for i in range(3)
    ]
    assert steady.find_period(marks, steady.Policy()) == 1
    s = steady.plan_skip(marks, 1, 10, steady.Policy())
    assert s is not None and s.periods == 10
    assert np.allclose(s.counters, [10.0]) and np.allclose(s.tally, [(marks[2].tally - marks[0].tally) / 2 * 10])
