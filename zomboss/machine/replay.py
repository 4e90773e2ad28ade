"""Periodic replay of hardware-loop iterations in the generic simulator's timing-only runs.

A doc machine's hardware loop (`macro "loop_start"` / `"loop_end"`) soon repeats itself: every
`p` iterations the machine issues the same timing operations, executes the same instructions
and effect points, and its registers move by the same amounts (addresses advance, the counter
counts down). Once the last two periods agree in all of that (and the machine's other state,
float registers and state records, stays the same), the rest of the loop but its last
iteration is *replayed*: the period's timing operations are appended as many whole periods as
remain, the registers advanced by as many steps, the counts and points scaled, and the
simulation goes on exactly from there. The timing model then schedules every operation, the
replayed ones included, so cycles, breakdown and busy times are those of the operation stream;
what is assumed is only that the stream keeps repeating (as `steady.py` assumes of the
hand-written models' state). A loop that shows no period within `PROBE` iterations is simulated
in full, and once `GIVE_UP` instances of one loop (its body's place in the program) have shown
none (within `PROBE` iterations or before they closed) and none has been replayed, its later
instances are simulated in full without being watched: watching costs more than the
instructions it could skip. Runs with macro hooks (opaque state) or memories (data) never replay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import sub
from typing import Any, TypeVar

import numpy as np

from zomboss.machine import effects as fx
from zomboss.util import LimitError

_Row = TypeVar("_Row")  # a timing operation as the run holds it (an `Op`, or a row of the fast path)

MAX_PERIOD = 8  # iterations of the longest period looked for
PROBE = 2 * MAX_PERIOD + 4  # iterations of a loop watched before it is simulated in full
# a loop whose counter starts its second iteration below this is not watched: the counter counts
# down by at least one per iteration, so fewer are left than two periods seen, one replayed and
# the last one run need
SHORT = 5
GIVE_UP = 2  # instances of one loop that showed no period, none replayed, before it is no longer watched


@dataclass(frozen=True)
class _Mark:
    """The machine at the start of one iteration."""

    ops: int  # timing operations so far
    n: int  # instructions so far
    points: int
    counts: tuple[int, ...]  # per instruction name, in `Replay.names` order
    regs: np.ndarray  # integer registers, as int64
    fixed: bytes  # float registers and state records: must not change


@dataclass
class Replay:
    """The replay state of one run: a watcher per open loop, and what was replayed."""

    names: tuple[str, ...]
    regfiles: tuple[str, ...]  # integer register files, in snapshot order
    floats: tuple[str, ...]  # float register files
    sizes: dict[str, int]  # registers per integer register file
    zeros: tuple[int, ...] = ()  # a 0 per name (the default of a count)
    watch: dict[tuple[int, int, str, int], list[_Mark]] = field(default_factory=dict)
    given_up: set[tuple[int, int, str, int]] = field(default_factory=set)
    # per loop body (its pc): instances that showed no period, and instances replayed
    no_period: dict[int, int] = field(default_factory=dict)
    periodic: set[int] = field(default_factory=set)
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

    def offset(self, key: tuple[int, int, str, int]) -> int:
        """Where a loop's counter register lies in a mark's `regs`."""
        at = 0
        for rf in self.regfiles:
            if rf == key[2]:
                return at + key[3]
            at += self.sizes[rf]
        raise KeyError(key[2])

    def at_loop(
        self,
        regs: fx.Memories,
        loops: Sequence[tuple[int, str, int]],
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
        (`jumped`) the loop at `depth` of the open `loops` (body pc, register file, counter):
        watch the loop's iterations and, once it repeats, replay its whole periods (`ops` and
        `counts` extended in place). Returns the instructions executed so far (the index of the
        last one) and the effect points, the replayed ones included."""
        self.forget(depth + 1 if jumped else depth)
        if not jumped or depth != len(loops) - 1 or loops[depth][1] not in self.sizes:
            return n, points
        key = (depth, *loops[depth])
        _, rf, r = loops[depth]
        counter = int(regs.arrays[rf][r, 0])
        if not self.wants(key, counter):
            return n, points
        m = self.mark(regs, len(ops), n + 1, points, counts, state)
        periods, p = self.boundary(key, m, ops, counter)
        if periods:
            k, dn, dcounts, dpoints = self.advance(key, regs, periods, p)
            ops.extend(ops[len(ops) - k :] * periods)
            n += periods * dn
            if n >= limit:
                raise LimitError(f"the program executes more than {limit:,} instructions")
            points += periods * dpoints
            for name, c in dcounts.items():
                counts[name] = counts.get(name, 0) + periods * c
        return n, points

    def forget(self, depth: int) -> None:
        """Loops at `depth` and deeper closed: their watchers go."""
        for key in [k for k in self.watch if k[0] >= depth]:
            del self.watch[key]  # closed before a period showed: it counts as one without
            self.no_period[key[1]] = self.no_period.get(key[1], 0) + 1
        if any(k[0] >= depth for k in self.given_up):
            self.given_up = {k for k in self.given_up if k[0] < depth}

    def mark(self, regs: fx.Memories, ops: int, n: int, points: int, counts: dict[str, int], state: object) -> _Mark:
        ints = [regs.arrays[rf][:, 0].astype(np.int64) for rf in self.regfiles]
        fixed = b"".join(regs.arrays[rf].tobytes() for rf in self.floats) + repr(state).encode()
        return _Mark(
            ops,
            n,
            points,
            tuple(map(counts.get, self.names, self.zeros)),
            np.concatenate(ints) if ints else np.zeros(0, np.int64),
            fixed,
        )

    def wants(self, key: tuple[int, int, str, int], counter: int) -> bool:
        """Whether to mark this iteration of loop `key` (its counter holding `counter`): not for
        a loop given up or replayed, nor one too short to gain from a replay."""
        if key in self.given_up:
            return False
        if key not in self.watch and self.no_period.get(key[1], 0) >= GIVE_UP and key[1] not in self.periodic:
            self.given_up.add(key)  # its earlier instances showed no period
            return False
        if key not in self.watch and counter < SHORT:
            self.given_up.add(key)  # too few iterations left for a period to be seen and skipped
            return False
        return True

    def boundary(self, key: tuple[int, int, str, int], m: _Mark, ops: Sequence[Any], counter: int) -> tuple[int, int]:
        """At the start of an iteration of loop `key` (depth, body pc, counter register), the
        counter holding `counter`: (whole periods to replay, period length), or (0, 0). The
        iterations left follow from the counter's step per period, which must count it down
        evenly to zero; the last one is never replayed (it closes the loop)."""
        marks = self.watch.setdefault(key, [])
        if not marks:
            self.loops += 1
        marks.append(m)
        j = len(marks) - 1
        for p in range(1, MAX_PERIOD + 1):
            if j < 2 * p:
                break
            a, b, c = marks[j - 2 * p], marks[j - p], marks[j]
            if not (
                a.fixed == b.fixed == c.fixed and c.n - b.n == b.n - a.n and c.points - b.points == b.points - a.points
            ):
                continue
            if tuple(map(sub, c.counts, b.counts)) != tuple(map(sub, b.counts, a.counts)):
                continue
            if not np.array_equal(c.regs - b.regs, b.regs - a.regs):
                continue
            if c.ops - b.ops != b.ops - a.ops or ops[b.ops : c.ops] != ops[a.ops : b.ops]:
                continue
            down = int(b.regs[self.offset(key)] - c.regs[self.offset(key)])  # the counter's step per period
            if down <= 0 or down % p or counter % (down // p):
                return 0, 0
            periods = (counter // (down // p) - 1) // p  # the last iteration runs: it closes the loop
            return (periods, p) if periods >= 1 else (0, 0)
        if j >= PROBE:
            self.fallbacks += 1
            self.no_period[key[1]] = self.no_period.get(key[1], 0) + 1
            self.given_up.add(key)
            del self.watch[key]
        return 0, 0

    def advance(
        self, key: tuple[int, int, str, int], regs: fx.Memories, periods: int, p: int
    ) -> tuple[int, int, dict[str, int], int]:
        """Replay `periods` periods of `p` iterations of loop `key` on the registers; returns
        the period's operation count, instructions, counts and points (per period)."""
        marks = self.watch.pop(key)
        self.given_up.add(key)  # this instance is done: its last iteration closes it
        b, c = marks[-1 - p], marks[-1]
        step = c.regs - b.regs
        at = 0
        for rf in self.regfiles:
            arr = regs.arrays[rf]
            bits = 8 * arr.dtype.itemsize
            signed = arr.dtype.kind == "i"
            for i in np.nonzero(step[at : at + len(arr)])[0]:
                y = (int(arr[i, 0]) + periods * int(step[at + i])) & ((1 << bits) - 1)
                arr[i, 0] = y - (1 << bits) if signed and y >> (bits - 1) else y
            at += len(arr)
        self.replayed += 1
        self.periodic.add(key[1])
        self.iterations += periods * p
        self.instructions += periods * (c.n - b.n)
        counts = {k: y - x for k, x, y in zip(self.names, b.counts, c.counts, strict=True) if y != x}
        return c.ops - b.ops, c.n - b.n, counts, c.points - b.points


def replay_for(regs: fx.Memories, names: tuple[str, ...], regfiles: tuple[str, ...]) -> Replay:
    """A replay of a run whose registers are `regs`. Integer registers are compared as int64
    (an unsigned 64-bit one as its bit pattern: steps modulo 2**64 compare and add alike)."""
    ints: list[str] = []
    floats: list[str] = []
    for rf in regfiles:
        (floats if regs.arrays[rf].dtype.kind == "f" else ints).append(rf)
    return Replay(names, tuple(ints), tuple(floats), {rf: len(regs.arrays[rf]) for rf in ints}, (0,) * len(names))
