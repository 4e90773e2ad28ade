"""Replayed periods in the schedule: once one period is scheduled like the one before it, the
rest are that period shifted in time.

A replay (`replay.py`) appends whole periods of a hardware loop's operations to the stream: each
a copy of the period before it, its footprints perhaps moved on. The timing model schedules
operations one at a time, so the replayed periods still cost a pass each. But the schedule of
a period depends only on the operations and on the model's state when it starts, taken relative
to the dispatch clock `D` there: every unit's next free cycle, every token queue's pending
times, the end of the operation before. A time at or before `D` can never delay anything again
(dispatch only moves on), so it counts as 0. When that relative state is the same at two
consecutive period boundaries, the next period is scheduled exactly as the last one shifted by
the clock's advance over it, and so is every period after it: they are filled in as shifted
copies, the busy times added per period, and the state advanced. Exact, not approximate: the
full pass gives the same start and end of every operation (`tests/machine/test_periods.py`).

One thing besides the state decides a period's schedule on a machine with `stall` hazards:
whether adjacent operations' footprints meet. A period whose spans move keeps those outcomes
only if the two spans of every pair a stall looks at move alike (neither grows); a segment
where they might change is scheduled in full.

Only the short pass of `timing.schedule_rows` (a machine without queue or in-flight limits,
interlocks and channels: PLENA's) skips; scoreboards and channels hold state this does not
compare.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, MutableSequence, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from zomboss.machine.timing import Stall

Row = tuple[Any, ...]  # an operation as `timing.schedule_rows` takes it: `timing.Op`'s fields in order
Moves = tuple[tuple[int, tuple[tuple[int, int], ...]], ...]  # as `replay._Moves`, frozen
PROBE = 4  # period boundaries of a segment compared before it is scheduled in full


@dataclass(frozen=True)
class Segment:
    """`periods` periods of `k` operations a replay appended at `start`: each a copy of the `k`
    before it, the operations in `moves` moved on by their move (per span: reads, then writes)."""

    start: int
    k: int
    periods: int
    moves: Moves = ()

    @property
    def stop(self) -> int:
        return self.start + self.k * self.periods


def keeps_stalls(rows: Sequence[Row], seg: Segment, after: Mapping[str, Sequence[Stall]]) -> bool:
    """Whether every stall outcome between adjacent operations is the same in every period of
    `seg`: each pair a stall looks at (the period's own, and its last operation with the next
    period's first) has its spans on the stall's memory move alike, by the same amount at both
    ends."""
    if not seg.moves or not after:
        return True
    by = dict(seg.moves)
    k, base = seg.k, seg.start - seg.k  # the period the replay copied
    for x in range(k):
        px = (x - 1) % k
        prev, cur = rows[base + px], rows[base + x]
        for s in after.get(prev[9], ()):
            if cur[9] not in s.before:
                continue
            spans = _moved_spans(prev, by.get(px), s.dep != "war") + _moved_spans(cur, by.get(x), s.dep != "raw")
            moved = {m for span, m in spans if span[0] == s.on}
            if len(moved) > 1 or any(lo != hi for lo, hi in moved):
                return False
    return True


def _moved_spans(op: Row, by: tuple[tuple[int, int], ...] | None, writes: bool) -> list[tuple[Any, tuple[int, int]]]:
    """An operation's write (or read) spans, each with its move per period."""
    spans, at = (op[8], len(op[7])) if writes else (op[7], 0)
    return [(sp, by[at + j] if by else (0, 0)) for j, sp in enumerate(spans)]


def relative(d: int, last: int, free: Mapping[str, int], tokens: Mapping[str, deque[int]]) -> tuple[Any, ...]:
    """The state that decides what follows, relative to the dispatch clock `d` (times at or
    before it count as 0: they can delay nothing)."""
    return (
        last - d,
        tuple((u, t - d if t > d else 0) for u, t in free.items()),
        tuple((q, tuple(t - d if t > d else 0 for t in fifo)) for q, fifo in tokens.items()),
    )


def skip(
    rows: Sequence[Row],
    i: int,
    seg: Segment,
    shift: int,
    d: int,
    start: MutableSequence[int],
    end: MutableSequence[int],
    free: dict[str, int],
    busy: dict[str, int],
    tokens: Mapping[str, deque[int]],
) -> int:
    """At `i`, a boundary of `seg`'s periods where the state repeats the last boundary's moved on
    by `shift` cycles (the dispatch clock at `d`): schedule the whole periods left as copies of
    the last one, `shift` later each, and advance the state. Returns the periods skipped."""
    k = seg.k
    r = (seg.stop - i) // k
    if r <= 0:
        return 0
    steps = np.arange(1, r + 1, dtype=np.int64)[:, None] * shift
    start[i : i + r * k] = (np.asarray(start[i - k : i], dtype=np.int64) + steps).ravel().tolist()
    end[i : i + r * k] = (np.asarray(end[i - k : i], dtype=np.int64) + steps).ravel().tolist()
    per: dict[str, int] = {}
    for row in rows[i - k : i]:
        per[row[0]] = per.get(row[0], 0) + (row[1] if row[6] is None else row[6])
    for u, b in per.items():
        busy[u] += r * b
    by = r * shift
    for u in per:  # a unit the period uses is next free where its last operation left it
        free[u] += by
    for fifo in tokens.values():  # what is at or before `d` stays irrelevant: it may stay as it is
        if any(t > d for t in fifo):
            moved = [t + by if t > d else t for t in fifo]
            fifo.clear()
            fifo.extend(moved)
    return r
