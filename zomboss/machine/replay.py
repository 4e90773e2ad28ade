"""Periodic replay of hardware-loop iterations in the generic simulator's timing-only runs.

A doc machine's hardware loop (`macro "loop_start"` / `"loop_end"`) soon repeats itself: every
`p` iterations the machine issues the same timing operations, executes the same instructions
and effect points, and its registers move by the same amounts (addresses advance, the counter
counts down). Once the last two periods agree in all of that (and the machine's other state,
float registers and state records, stays the same), the rest of the loop but its last
iteration is *replayed*: the period's timing operations are appended as many whole periods as
remain, the registers advanced by as many steps, the counts and points scaled, and the
simulation goes on exactly from there. Operations whose footprints move with the registers (a
loop streaming through memory) may differ from period to period only in where they access, by
the same amounts over the last three periods; they are replayed moved on as far each period.

The timing model then schedules every operation, the replayed ones included (as shifted copies
once their schedule repeats: `periods.py`), so cycles, breakdown and busy times are those of
the operation stream; what is assumed is only that the stream keeps repeating (as `steady.py`
assumes of the hand-written models' state).

Watching costs a mark per iteration, so it is spent where it can pay. A loop that shows no
period within `PROBE` iterations is simulated in full; once `GIVE_UP` instances of one loop
(its body's place in the program) have shown none and none has been replayed, its later
instances are not watched; and a loop is marked only if its first iteration's length and
counter step promise `MIN_GAIN` instructions skipped. Runs with macro hooks (opaque state) or
memories (data) never replay.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from operator import sub
from typing import Any, TypeVar

from zomboss.machine.memories import Memories
from zomboss.machine.periods import Segment
from zomboss.machine.timing import Op, Span
from zomboss.util import LimitError

_Row = TypeVar("_Row")  # a timing operation as the run holds it (an `Op`, or a row of the fast path)

MAX_PERIOD = 8  # iterations of the longest period looked for
PROBE = 2 * MAX_PERIOD + 4  # iterations of a loop watched before it is simulated in full
# a loop whose counter starts its second iteration below this is not watched: the counter counts
# down by at least one per iteration, so fewer are left than two periods seen, one replayed and
# the last one run need
SHORT = 5
GIVE_UP = 2  # instances of one loop that showed no period, none replayed, before it is no longer watched
# instructions a replay must be expected to skip, judged at a loop's second jump back, for it to be
# watched: a mark and its comparisons cost about what five or ten instructions do
MIN_GAIN = 64


@dataclass(frozen=True)
class _Mark:
    """The machine at the start of one iteration."""

    ops: int  # timing operations so far
    n: int  # instructions so far
    points: int
    regs: tuple[int, ...]  # integer registers, in `Replay.regfiles` order
    fixed: bytes  # float registers and state records (pickled): must not change


Loop = tuple[int, str, int]  # an open hardware loop: its body's pc and its counter (register file, register)


@dataclass
class _Watch:
    """What the replay knows of the open loop at one depth."""

    loop: Loop
    first: tuple[int, int] = (0, 0)  # instructions so far and its counter at its first jump back
    marks: list[_Mark] = field(default_factory=list)  # the iterations marked since
    done: bool = False  # given up or replayed: no longer watched


@dataclass
class Replay:
    """The replay state of one run: a watcher per depth of the open loops (None: that loop has
    not jumped back yet), and what was replayed."""

    regfiles: tuple[str, ...]  # integer register files, in snapshot order
    floats: tuple[str, ...]  # float register files
    sizes: dict[str, int]  # registers per integer register file
    open: list[_Watch | None] = field(default_factory=list)
    # per loop body (its pc): instances that showed no period, and instances replayed
    no_period: dict[int, int] = field(default_factory=dict)
    periodic: set[int] = field(default_factory=set)
    segments: list[Segment] = field(default_factory=list)  # the periods replayed, where in the stream
    loops: int = 0  # loop instances watched
    replayed: int = 0  # loop instances replayed
    fallbacks: int = 0  # loop instances simulated in full (no period)
    iterations: int = 0  # iterations replayed
    instructions: int = 0  # instructions replayed

    def report(self) -> dict[str, int]:
        return {
            "loops": self.loops,
            "replayed": self.replayed,
            "fallbacks": self.fallbacks,
            "iterations": self.iterations,
            "instructions": self.instructions,
        }

    def offset(self, loop: Loop) -> int:
        """Where a loop's counter register lies in a mark's `regs`."""
        at = 0
        for rf in self.regfiles:
            if rf == loop[1]:
                return at + loop[2]
            at += self.sizes[rf]
        raise KeyError(loop[1])

    def at_loop(
        self,
        regs: Memories,
        loops: Sequence[Loop],
        depth: int,
        jumped: bool,
        ops: list[_Row],
        n: int,
        points: int,
        counts: dict[str, int],
        state: object,
        limit: int,
    ) -> tuple[int, int]:
        """After a hardware-loop macro that opened, closed (`jumped` False) or jumped back to
        (`jumped`) the loop at `depth` of the open `loops`: watch the loop's iterations and, once
        it repeats, replay its whole periods (`ops` and `counts` extended in place). Returns the
        instructions executed so far (the index of the last one) and the effect points, the
        replayed ones included."""
        self.forget(depth + 1 if jumped else depth)
        if not jumped or depth != len(loops) - 1 or loops[depth][1] not in self.sizes:
            return n, points
        loop = loops[depth]
        counter = int(regs.arrays[loop[1]][loop[2], 0])
        w = self.wants(depth, loop, counter, n + 1)
        if w is None:
            return n, points
        m = self.mark(regs, len(ops), n + 1, points, state)
        periods, p, moves = self.boundary(w, m, ops, counter)
        if periods:
            k, dn, dpoints = self.advance(w, regs, periods, p)
            for op in ops[len(ops) - k :]:  # an instruction's operation bears its name
                name = op[9] if isinstance(op, tuple) else op.name  # type: ignore[attr-defined]
                counts[name] = counts.get(name, 0) + periods
            self.segments.append(Segment(len(ops), k, periods, tuple(moves)))
            _extend(ops, k, periods, moves)
            n += periods * dn
            if n >= limit:
                raise LimitError(f"the program executes more than {limit:,} instructions")
            points += periods * dpoints
        return n, points

    def forget(self, depth: int) -> None:
        """Loops at `depth` and deeper closed: their watchers go (one that saw the loop jump
        back but was neither given up nor replayed counts as an instance without a period)."""
        if len(self.open) <= depth:
            return
        for w in self.open[depth:]:
            if w is not None and not w.done:
                self.no_period[w.loop[0]] = self.no_period.get(w.loop[0], 0) + 1
        del self.open[depth:]

    def mark(self, regs: Memories, ops: int, n: int, points: int, state: object) -> _Mark:
        ints: list[int] = []
        for rf in self.regfiles:
            ints += regs.arrays[rf][:, 0].tolist()
        fixed = b"".join(regs.arrays[rf].tobytes() for rf in self.floats) + pickle.dumps(state, pickle.HIGHEST_PROTOCOL)
        return _Mark(ops, n, points, tuple(ints), fixed)

    def wants(self, depth: int, loop: Loop, counter: int, n: int) -> _Watch | None:
        """The watcher of `loop`, open at `depth` and jumping back (its counter holding
        `counter`, `n` instructions so far), if this iteration is to be marked: not for a loop
        given up or replayed, nor one too short to gain from a replay. The first jump back is
        only noted: at the second, the first whole iteration's length and counter step tell what
        a replay could skip, and marking starts if that is worth it (MIN_GAIN)."""
        w = self.open[depth] if depth < len(self.open) else None
        if w is None:
            if counter < SHORT:
                return None  # too few iterations left for a period to be seen and skipped
            self.open.extend([None] * (depth + 1 - len(self.open)))
            w = self.open[depth] = _Watch(loop, (n, counter))
            # its earlier instances showed no period: it is not watched
            w.done = self.no_period.get(loop[0], 0) >= GIVE_UP and loop[0] not in self.periodic
            return None
        if w.done:
            return None
        if not w.marks:
            step = w.first[1] - counter  # the counter's step per iteration
            left = counter // step if step > 0 else 0
            if (left - 5) * (n - w.first[0]) < MIN_GAIN:  # the marked iterations and the last one run
                w.done = True
                return None
        return w

    def boundary(self, w: _Watch, m: _Mark, ops: Sequence[Any], counter: int) -> tuple[int, int, _Moves]:
        """At the start of an iteration of the loop `w` watches, the counter holding `counter`:
        (whole periods to replay, period length, how each period moves its operations'
        footprints), or (0, 0, []). The iterations left follow from the counter's step per
        period, which must count it down evenly to zero; the last one is never replayed (it
        closes the loop). A period whose operations differ from the last one's only by where
        they access (addresses that advance with the registers) must have moved them alike over
        two periods, three periods seen."""
        marks = w.marks
        if not marks:
            self.loops += 1
        marks.append(m)
        j = len(marks) - 1
        for p in range(1, MAX_PERIOD + 1):
            if j < 2 * p:
                break
            a, b, c = marks[j - 2 * p], marks[j - p], marks[j]
            if not _alike(a, b, c):
                continue
            moves: _Moves = []
            if ops[b.ops : c.ops] != ops[a.ops : b.ops]:
                if j < 3 * p:
                    continue
                z = marks[j - 3 * p]
                moved = _moves(ops[a.ops : b.ops], ops[b.ops : c.ops])
                if not moved or not _alike(z, a, b) or _moves(ops[z.ops : a.ops], ops[a.ops : b.ops]) != moved:
                    continue
                moves = moved
            at = self.offset(w.loop)
            down = b.regs[at] - c.regs[at]  # the counter's step per period
            if down <= 0 or down % p or counter % (down // p):
                return 0, 0, []
            periods = (counter // (down // p) - 1) // p  # the last iteration runs: it closes the loop
            return (periods, p, moves) if periods >= 1 else (0, 0, [])
        if j >= PROBE:
            self.fallbacks += 1
            self.no_period[w.loop[0]] = self.no_period.get(w.loop[0], 0) + 1
            w.done = True
            w.marks = []
        return 0, 0, []

    def advance(self, w: _Watch, regs: Memories, periods: int, p: int) -> tuple[int, int, int]:
        """Replay `periods` periods of `p` iterations of the loop `w` watches on the registers;
        returns the period's operation count, instructions and points (per period)."""
        marks = w.marks
        w.done = True  # this instance is done: its last iteration closes it
        w.marks = []
        b, c = marks[-1 - p], marks[-1]
        step = tuple(map(sub, c.regs, b.regs))
        at = 0
        for rf in self.regfiles:
            arr = regs.arrays[rf]
            bits = 8 * arr.dtype.itemsize
            signed = arr.dtype.kind == "i"
            for i in range(len(arr)):
                if not step[at + i]:
                    continue
                y = (int(arr[i, 0]) + periods * step[at + i]) & ((1 << bits) - 1)
                arr[i, 0] = y - (1 << bits) if signed and y >> (bits - 1) else y
            at += len(arr)
        self.replayed += 1
        self.periodic.add(w.loop[0])
        self.iterations += periods * p
        self.instructions += periods * (c.n - b.n)
        return c.ops - b.ops, c.n - b.n, c.points - b.points


# per operation of a period that moves: its index in the period and, per footprint span (its
# reads, then its writes), how far the span's first and one-past-last rows move per period
_Moves = list[tuple[int, tuple[tuple[int, int], ...]]]


def _alike(a: _Mark, b: _Mark, c: _Mark) -> bool:
    """Whether the machine moved alike over the two periods from mark `a` to `b` and `b` to `c`
    (its operations aside): the same instructions, counts and points, registers stepped by the
    same amounts, the other state unchanged."""
    return (
        a.fixed == b.fixed == c.fixed
        and c.n - b.n == b.n - a.n
        and c.points - b.points == b.points - a.points
        and c.ops - b.ops == b.ops - a.ops
        and tuple(map(sub, c.regs, b.regs)) == tuple(map(sub, b.regs, a.regs))
    )


def _spans(op: Any) -> tuple[Span, ...]:
    """An operation's footprint spans, reads then writes (an `Op`, or a fast-path row: `Op`'s
    fields in order)."""
    return (*op[7], *op[8]) if isinstance(op, tuple) else (*op.reads, *op.writes)


def _moved(op: _Row, by: tuple[tuple[int, int], ...], times: int) -> _Row:
    """`op` with each footprint span moved `times` times by its move in `by`."""
    spans = [(m, lo + times * dlo, hi + times * dhi) for (m, lo, hi), (dlo, dhi) in zip(_spans(op), by, strict=True)]
    if isinstance(op, tuple):
        k = len(op[7])
        return op[:7] + (tuple(spans[:k]), tuple(spans[k:])) + op[9:]  # type: ignore[return-value]
    assert isinstance(op, Op)
    k = len(op.reads)
    return replace(op, reads=tuple(spans[:k]), writes=tuple(spans[k:]))


def _moves(x: Sequence[Any], y: Sequence[Any]) -> _Moves | None:
    """How the operations of period `y` moved from those of the period before, `x`: per
    operation that differs, its footprint spans' moves; None where one differs otherwise (another
    unit, latency or token, another memory, or another count of spans)."""
    out: _Moves = []
    for i, (u, v) in enumerate(zip(x, y, strict=True)):
        if u == v:
            continue
        su, sv = _spans(u), _spans(v)
        if len(su) != len(sv) or any(a[0] != b[0] for a, b in zip(su, sv, strict=True)):
            return None
        by = tuple((b[1] - a[1], b[2] - a[2]) for a, b in zip(su, sv, strict=True))
        if _moved(u, by, 1) != v:
            return None
        out.append((i, by))
    return out


def _extend(ops: list[_Row], k: int, periods: int, moves: _Moves) -> None:
    """Append `periods` more periods of the last `k` operations, those in `moves` moved on by one
    period's move each period."""
    last = ops[len(ops) - k :]
    if not moves:
        ops.extend(last * periods)
        return
    for t in range(1, periods + 1):
        period = last.copy()
        for i, by in moves:
            period[i] = _moved(last[i], by, t)
        ops.extend(period)


def replay_for(regs: Memories, regfiles: tuple[str, ...]) -> Replay:
    """A replay of a run whose registers are `regs`. Integer registers are compared as their
    values: a step that wraps around is not the step before it, and that loop is not replayed."""
    ints: list[str] = []
    floats: list[str] = []
    for rf in regfiles:
        (floats if regs.arrays[rf].dtype.kind == "f" else ints).append(rf)
    return Replay(tuple(ints), tuple(floats), {rf: len(regs.arrays[rf]) for rf in ints})
