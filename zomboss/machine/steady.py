"""Steady-state extrapolation of repeated program regions in timing-only simulation.

A lowering knows the loops it emits; when a timing model runs a run of *alike* iterations
(same instructions up to address offsets), the machine soon settles into a periodic regime:
every `p` iterations the clock advances by the same amount and the timing-relevant state,
taken relative to the clock, repeats. From then on simulating more iterations only repeats
the measured period, so the model advances the clock (and every pending time, and the event
counters) by the period times the number of whole periods left, and simulates the remainder
and whatever follows exactly.

This module is target-neutral: a target's timing model supplies `Mark`s (its clock, its
state relative to the clock as a float vector, its event counters, and any integer state
that advances linearly, such as address registers) and applies `Skip`s. Detection requires,
for a period `p`, that the last two periods took the same time (within `rtol`), moved the
same counters and linear state, and left the same relative state (within `state_tol` cycles
or `rtol` of the period). A run where no period appears within `probe` iterations is
simulated in full, and the report says so. A mark's `tally` is scaled like its counters but not
compared: what a target only reports with it (a cycle breakdown's busy time) cannot change what
is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Mark:
    """The timing state at the start of one iteration."""

    time: float  # the model's clock when the iteration starts
    state: np.ndarray  # timing-relevant state relative to `time` (float vector, fixed length per run)
    counters: np.ndarray  # event counters (bytes moved, packets, ...): added per skipped period
    linear: tuple[int, ...] = ()  # integer state that must advance by the same step every period
    key: Hashable = None  # discrete state that must repeat exactly (configuration, parities)
    # quantities a skip adds per period like `counters` but that steadiness does not compare:
    # what a target only reports (a breakdown's busy time) must not decide whether it skips
    tally: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass(frozen=True)
class Skip:
    """What skipping `periods` whole periods of `iterations` iterations does to the model."""

    iterations: int
    periods: int
    dt: float  # clock advance
    counters: np.ndarray  # counter increments
    linear: tuple[int, ...]  # linear-state increments
    since: float  # the clock at the last mark: pending times at or after it move by dt
    tally: np.ndarray = field(default_factory=lambda: np.zeros(0))  # tally increments


@dataclass(frozen=True)
class Policy:
    """When a regime counts as steady."""

    max_period: int = 8
    rtol: float = 1e-3  # relative agreement of two consecutive periods' durations
    counter_rtol: float = 0.05  # ... and of their event counters (DRAM row misses jitter) ...
    counter_atol: float = 1.0  # ... or this absolute difference (0 with counter_rtol 0: exact counters)
    state_tol: float = 2.0  # absolute agreement (cycles) of the relative state ...
    state_rtol: float = 1e-3  # ... or this fraction of the period, whichever is larger
    probe: int = 40  # iterations of a run watched before giving up on it (full simulation)
    min_skip: int = 1  # skip only when at least this many whole periods remain


@dataclass
class Report:
    """What the extrapolation did over one simulation (reported in the result's stats)."""

    runs: int = 0  # runs of alike iterations seen (long enough to try)
    extrapolated: int = 0  # runs where a steady state was found
    fallbacks: int = 0  # runs simulated in full: no steady state appeared within `probe` (or the run's end)
    simulated: int = 0  # iterations simulated
    skipped: int = 0  # iterations advanced over
    periods: dict[int, int] = field(default_factory=dict)  # period length -> times used

    def to_json(self) -> dict[str, object]:
        return {
            "runs": self.runs,
            "extrapolated": self.extrapolated,
            "fallbacks": self.fallbacks,
            "simulated_iterations": self.simulated,
            "skipped_iterations": self.skipped,
            "periods": {str(k): v for k, v in sorted(self.periods.items())},
        }


def _close(a: float, b: float, rtol: float, atol: float = 1e-6) -> bool:
    return abs(a - b) <= max(atol, rtol * max(abs(a), abs(b)))


def find_period(marks: list[Mark], policy: Policy) -> int | None:
    """The smallest period `p` over which the last 2p+1 marks are steady, if any."""
    n = len(marks)
    for p in range(1, policy.max_period + 1):
        if n < 2 * p + 1:
            return None
        a, b, c = marks[-1], marks[-1 - p], marks[-1 - 2 * p]
        d1, d2 = a.time - b.time, b.time - c.time
        if d1 <= 0 or not _close(d1, d2, policy.rtol):
            continue
        if a.key != b.key or a.state.shape != b.state.shape or len(a.linear) != len(b.linear):
            continue
        tol = max(policy.state_tol, policy.state_rtol * d1)
        if a.state.size and float(np.max(np.abs(a.state - b.state))) > tol:
            continue
        if any(x - y != y - z for x, y, z in zip(a.linear, b.linear, c.linear, strict=True)):
            continue
        dc1, dc2 = a.counters - b.counters, b.counters - c.counters
        if dc1.size and not np.allclose(dc1, dc2, rtol=policy.counter_rtol, atol=policy.counter_atol):
            continue
        return p
    return None


def plan_skip(marks: list[Mark], p: int, remaining: int, policy: Policy) -> Skip | None:
    """The skip over the whole periods among `remaining` iterations, measured on the last two
    periods of `marks` (their mean, so a period that alternates slightly is averaged)."""
    periods = remaining // p
    if periods < policy.min_skip:
        return None
    a, b, c = marks[-1], marks[-1 - p], marks[-1 - 2 * p]
    dt = (a.time - c.time) / 2
    counters = (a.counters - c.counters) / 2
    linear = tuple(x - y for x, y in zip(a.linear, b.linear, strict=True))
    return Skip(
        iterations=periods * p,
        periods=periods,
        dt=dt * periods,
        counters=counters * periods,
        linear=tuple(v * periods for v in linear),
        since=a.time,
        tally=(a.tally - c.tally) / 2 * periods,
    )


def runs(trips: int, alike: Callable[[int], Hashable]) -> list[tuple[int, int]]:
    """Maximal runs [start, end) of consecutive iterations with equal `alike` keys."""
    out: list[tuple[int, int]] = []
    start, key = 0, None
    for t in range(trips):
        k = alike(t)
        if t == 0:
            key = k
        elif k != key:
            out.append((start, t))
            start, key = t, k
    if trips:
        out.append((start, trips))
    return out


def repeat(
    trips: int,
    alike: Callable[[int], Hashable],
    body: Callable[[int], None],
    mark: Callable[[], Mark],
    skip: Callable[[Skip], None],
    policy: Policy,
    report: Report,
) -> None:
    """Run iterations 0..trips-1 of a loop, simulating each with `body(t)` except whole
    periods of a steady state inside a run of alike iterations, which `skip` advances over."""
    for start, end in runs(trips, alike):
        t = start
        if end - start < 3:  # too short to measure two periods: simulate
            for t in range(start, end):
                body(t)
            report.simulated += end - start
            continue
        report.runs += 1
        marks: list[Mark] = []
        watching, found = True, False
        while t < end:
            if watching:
                marks.append(mark())
                p = find_period(marks, policy)
                if p is not None:
                    s = plan_skip(marks, p, end - t, policy)
                    if s is not None:
                        skip(s)
                        report.extrapolated += 1
                        report.skipped += s.iterations
                        report.periods[p] = report.periods.get(p, 0) + 1
                        t += s.iterations
                        watching, found = False, True
                        continue
                if t - start >= policy.probe:
                    watching = False
            body(t)
            report.simulated += 1
            t += 1
        if not found:
            report.fallbacks += 1
