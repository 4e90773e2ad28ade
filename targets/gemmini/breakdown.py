"""The cycle breakdown of a timing run (`Timing.breakdown`): every cycle of the makespan
`[0, cycles)` is attributed to one of four parts, by priority:

* compute: the array is busy: feeding a preload's weights or a compute's rows, or draining a
  result into its destination (`array_latency`);
* memory: the array is idle and the load or the store engine works: an mvin from the moment
  its dependences are met until its data is written (DRAM latency and bandwidth included,
  zero fills too), an mvout until its last write is acknowledged;
* overhead: none of those, but fixed costs run: the per-kernel invocation overhead, config
  instructions (config_ex's array reconfiguration, config_ld/st) and fences;
* stall: everything else: the CPU issuing, the reservation station full, config_ex waiting
  for the array to drain, engines waiting on each other.

The four parts are integers summing to `cycles()`. The accounting only records intervals the
scoreboard already computes (one `Busy` per engine and one for the fixed costs); it never
changes a time. A timing-only run that skips steady periods (`Timing.skip`) keeps its
breakdown with its cycles: the skipped stretch counts the busy time of its periods
(`Skipped`), and the busy time pending at the skip moves behind the stretch, as the pending
times do (`skip_busy`).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from zomboss.machine import Skip

BREAKDOWN = ("compute", "memory", "stall", "overhead")


class Busy:
    """The union of an engine's busy intervals, merged as they arrive (almost always in start
    order; out-of-order intervals are sorted in once, at the end)."""

    __slots__ = ("ivs", "ordered", "_length")

    def __init__(self) -> None:
        self.ivs: list[list[float]] = []
        self.ordered = True
        self._length = 0.0  # of the union, while ordered

    def add(self, s: float, e: float) -> None:
        if e <= s:
            return
        ivs = self.ivs
        if ivs:
            last = ivs[-1]
            if s <= last[1]:
                if s >= last[0]:
                    if e > last[1]:
                        self._length += e - last[1]
                        last[1] = e
                    return
                self.ordered = False
        ivs.append([s, e])
        self._length += e - s

    def merged(self) -> list[list[float]]:
        if not self.ordered:
            self.ivs = _union(sorted(self.ivs))
            self.ordered = True
            self._length = sum(e - s for s, e in self.ivs)
        return self.ivs

    def length(self) -> float:
        """The union's total length."""
        self.merged()
        return self._length

    def shift(self, at: float, dt: float) -> None:
        """Move the busy time from `at` on later by `dt` (splitting an interval across `at`):
        a skip moves the work pending at its mark behind the skipped periods."""
        ivs = self.merged()
        i = len(ivs)
        while i and ivs[i - 1][1] > at:
            i -= 1
        if i < len(ivs) and ivs[i][0] < at:
            ivs.insert(i + 1, [at, ivs[i][1]])
            ivs[i][1] = at
            i += 1
        for iv in ivs[i:]:
            iv[0] += dt
            iv[1] += dt

    def within(self, lo: float, hi: float) -> list[list[float]]:
        """The busy intervals clipped to [lo, hi), in order."""
        ivs = self.merged()
        out = []
        for iv in reversed(ivs):
            if iv[1] <= lo:
                break
            if iv[0] < hi:
                out.append([max(iv[0], lo), min(iv[1], hi)])
        out.reverse()
        return out


class Skipped:
    """The skipped periods of a timing-only run (`Timing.skip`): disjoint spans of the makespan
    in order, each with the lengths of the compute, compute-or-memory and any-busy unions its
    periods had, measured on the period before the skip. The work pending at a skip moves
    behind its span, as its times do, but work of another stream may overlap a span (the next
    hardware loop's loads, issued by a CPU clock that the skip did not move): a span counts
    as busy in the proportion its periods were, except where a recorded interval is."""

    __slots__ = ("spans", "compute")

    def __init__(self) -> None:
        self.spans: list[list[float]] = []  # [start, end, compute, busy, busy or fixed]
        self.compute = 0.0  # the spans' compute lengths, summed

    def shift(self, at: float, dt: float) -> None:
        """Move the spans from `at` on later by `dt` (one across `at` split in proportion)."""
        spans = self.spans
        i = len(spans)
        while i and spans[i - 1][1] > at:
            i -= 1
        if i < len(spans) and spans[i][0] < at:
            s, e, *ls = spans[i]
            f = (at - s) / (e - s)
            spans[i] = [s, at, *(x * f for x in ls)]
            spans.insert(i + 1, [at, e, *(x * (1 - f) for x in ls)])
            i += 1
        for sp in spans[i:]:
            sp[0] += dt
            sp[1] += dt

    def add(self, start: float, end: float, lengths: Sequence[float]) -> None:
        """A new span (after `shift(start, end - start)`: no span lies inside it)."""
        spans = self.spans
        i = len(spans)
        while i and spans[i - 1][0] >= start:
            i -= 1
        spans.insert(i, [start, end, *lengths])
        self.compute += lengths[0]

    def within(self, lo: float, hi: float) -> list[list[float]]:
        """The spans that overlap [lo, hi), in order."""
        out = []
        for sp in reversed(self.spans):
            if sp[1] <= lo:
                break
            if sp[0] < hi:
                out.append(sp)
        out.reverse()
        return out


def _uncovered(ivs: list[list[float]], spans: list[list[float]], k: int, lo: float, hi: float) -> float:
    """The busy length (lengths[k]) of the spans inside [lo, hi) outside the sorted disjoint
    intervals `ivs`: each span's length there times the fraction of its periods that was busy."""
    total = 0.0
    j, n = 0, len(ivs)
    for s, e, *lengths in spans:
        a, b = max(s, lo), min(e, hi)
        if b <= a:
            continue
        while j < n and ivs[j][1] <= a:
            j += 1
        free = b - a
        i = j
        while i < n and ivs[i][0] < b:
            free -= max(0.0, min(ivs[i][1], b) - max(ivs[i][0], a))
            i += 1
        total += lengths[k] / (e - s) * free
    return total


def _busy_lengths(lo: float, hi: float, ivs: Sequence[list[list[float]]], spans: list[list[float]]) -> list[float]:
    """Lengths inside [lo, hi) of the compute, memory-or-compute and any-busy unions of the
    execute, load, store and fixed-cost busy intervals `ivs` and the skipped spans (`Skipped`)."""
    ex, ld, st, fx = ivs
    compute = _union(ex)
    busy = _union(compute, ld, st)
    unions = (compute, busy, _union(busy, fx))
    return [_length(u, hi, lo) + _uncovered(u, spans, k, lo, hi) for k, u in enumerate(unions)]


def _union(*parts: list[list[float]]) -> list[list[float]]:
    """The union of interval lists, as sorted disjoint intervals."""
    out: list[list[float]] = []
    for s, e in heapq.merge(*parts):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return out


def _length(ivs: list[list[float]], end: float, start: float = 0.0) -> float:
    """Total length of sorted disjoint intervals inside [start, end)."""
    total = 0.0
    for s, e in ivs:
        lo, hi = max(s, start), min(e, end)
        if hi > lo:
            total += hi - lo
    return total


def skip_busy(busy: Sequence[Busy], skipped: Skipped, s: Skip) -> None:
    """The breakdown's part of a skip: the skipped periods become a span of `skipped`, and
    the busy time recorded after the mark (the pending work) moves behind it, as the
    pending times did. A span's busy time is a period's, `periods` times over: the array's
    is what the marks' tallies say the last periods' commands kept it busy (its intervals
    arrive in program order, so each command's share is its own, where the window before
    the mark may still hold an earlier loop's tail); the unions with the memory and fixed
    costs, which no command owns (a load timed earlier may cover the time), are the last
    period's window's. `busy`: the execute, load, store and fixed-cost intervals."""
    lo, hi = s.since - s.dt / s.periods, s.since
    window = _busy_lengths(lo, hi, [b.within(lo, hi) for b in busy], skipped.within(lo, hi))
    compute = min(float(s.tally[0]) / s.periods, s.dt / s.periods)  # (a drain may outlast its period)
    either = max(window[1], compute)
    lengths = [x * s.periods for x in (compute, either, max(window[2], either))]
    for b in busy:
        b.shift(s.since, s.dt)
    skipped.shift(s.since, s.dt)
    skipped.add(s.since, s.since + s.dt, lengths)


def parts(busy: Sequence[Busy], skipped: Skipped, end: float, total: int) -> dict[str, int]:
    """The `total` cycles of a makespan ending at `end` split into the four parts (module
    docstring), from the execute, load, store and fixed-cost intervals `busy`."""
    lengths = _busy_lengths(0.0, end, [b.merged() for b in busy], skipped.spans)
    cmo = min(total, round(lengths[2]))
    cm = min(cmo, round(lengths[1]))
    c = min(cm, round(lengths[0]))
    return {"compute": c, "memory": cm - c, "stall": total - cmo, "overhead": cmo - cm}
