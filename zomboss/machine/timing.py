"""The generic timing model: in-order units with doc latencies, issue intervals, command
queues, instructions in flight and token FIFOs.

The doc declares the machine's units (`engine U { queue: D, inflight: N, class: C }`: an
in-order unit fed by a D-deep command queue, with at most N instructions in flight, of class
compute, memory or control) and its dependency-token FIFOs (`queue Q { from: U, to: U, depth:
D }`); each instruction names its unit, its latency, its issue interval (`issue`: the cycles
before its unit takes the next instruction; by default its latency, a unit that is busy until
the instruction completes) and the tokens it pops (before it starts) and pushes (after it
completes). A fetch stage dispatches one instruction per cycle in program order and stalls
while the target unit's command queue is full. A unit starts its next instruction once the
previous one's issue interval has passed and, with `inflight: N`, once the instruction N
before it on the unit has completed: a systolic array or a DMA engine with several requests
outstanding is `issue` short of its `latency`.

Memories and register files the doc declares `interlock`ed are ordered by the hardware: an
instruction starts only once every earlier write of what it reads or writes has completed (read
after write, write after write) and, if it writes, every earlier read of it (write after read),
at the granularity its footprints give (`reads`/`writes` row or byte ranges of a memory; a
register operand is read or written as its effects say). A machine synchronised by tokens
alone (VTA) declares none and is timed exactly as before.

An external memory that declares a channel (`memory dram { external, bandwidth: B, latency: L,
outstanding: N }`) is a resource every unit shares: each access (an instruction's `reads` /
`writes` byte range on it) takes ceil(bytes / B) cycles of the channel, one transfer after the
other, its data L cycles after the transfer, with at most N requests in flight; the instruction
completes at the later of its `latency` and its last access's data. A doc that declares no
channel keeps every memory instruction's latency as written.

A core that waits for each instruction to complete declares `fetch { blocking: 1 }`: the next
instruction is dispatched when the one before it completes (the first at cycle 0), so the clock
is the sum of the latencies (PLENA). A `stall S { after: P, before: C, on: M, dep: raw|waw|war,
cycles: N }` is a pipeline hazard between adjacent instructions: C starts no earlier than N
cycles after the instruction right before it completes, when that one is a P whose footprint on
M meets C's (P wrote what C reads or writes, or read what C writes); the stalls that apply add
up, and any instruction in between clears them.

Every pop must find its token among those pushed by instructions earlier in program order
(the docs' rules say so; a program that breaks this is refused here as a deadlock), so one
pass in program order computes every start and end time exactly.

`schedule` takes `Op`s (the reference); `schedule_rows` computes the same schedule from plain
rows of the same fields (what timing-only runs build), with the doc's machine looked up once
per unit, a short pass for a machine without queue or in-flight limits, interlocks and channels,
and the scoreboards read inline.

The breakdown attributes the cycles: `compute` = time some compute-class instruction runs,
`memory` = time only memory-class ones run, `overhead` = time only control-class ones run,
`stall` = the rest (waiting on tokens, dispatch and idle units). An instruction's class is its
engine's `class`; on an engine that declares none, an instruction whose effects touch an
external memory is memory-class and any other compute-class.
"""

from __future__ import annotations

import bisect
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zomboss import expr as ex
from zomboss.doc.model import name_list
from zomboss.errors import IllegalProgram
from zomboss.knowledge import KB, Violation
from zomboss.knowledge.validate import stall_members
from zomboss.machine.periods import PROBE, Segment, keeps_stalls, relative, skip

UNBOUNDED = 1 << 30
Span = tuple[str, int, int]  # (memory or register file, first row or register, one past the last)


@dataclass(frozen=True, slots=True)
class Op:
    """One executed instruction as the timing model sees it (`issue` None: its latency;
    `reads`/`writes`: what it accesses of interlocked memories and register files)."""

    unit: str
    latency: int
    pops: tuple[str, ...]
    pushes: tuple[str, ...]
    memory: bool
    line: int = 0
    issue: int | None = None
    reads: tuple[Span, ...] = ()
    writes: tuple[Span, ...] = ()
    name: str = ""  # its mnemonic (what `stall` declarations name)


class _Scoreboard:
    """Per interlocked memory or register file, when the last write and the last read of every
    stretch complete: disjoint segments [lo, hi) sorted by lo, split where accesses begin and end."""

    def __init__(self) -> None:
        self.lo: list[int] = []
        self.hi: list[int] = []
        self.wrote: list[int] = []
        self.read: list[int] = []

    def _overlap(self, lo: int, hi: int) -> range:
        return range(bisect.bisect_right(self.hi, lo), bisect.bisect_left(self.lo, hi))

    def ready(self, lo: int, hi: int, write: bool) -> int:
        """The earliest start of an access of [lo, hi): after every earlier write of it completes
        (read after write, write after write) and, for a write, every earlier read (write after
        read)."""
        if hi <= lo:
            return 0  # an empty footprint accesses nothing
        t = 0
        for k in self._overlap(lo, hi):
            t = max(t, self.wrote[k], self.read[k] if write else 0)
        return t

    def mark(self, lo: int, hi: int, end: int, write: bool) -> None:
        """An access of [lo, hi) that completes at `end`."""
        if hi <= lo:
            return
        ks = self._overlap(lo, hi)

        def touched(a: int, b: int, w: int, r: int) -> tuple[int, int, int, int]:
            return (a, b, max(w, end), r) if write else (a, b, w, max(r, end))

        new: list[tuple[int, int, int, int]] = []
        at = lo
        for k in ks:
            slo, shi, w, r = self.lo[k], self.hi[k], self.wrote[k], self.read[k]
            if slo < lo:
                new.append((slo, lo, w, r))  # the part before the access keeps its times
            a, b = max(slo, lo), min(shi, hi)
            if at < a:
                new.append(touched(at, a, 0, 0))  # a stretch nothing accessed before
            new.append(touched(a, b, w, r))
            at = b
            if shi > hi:
                new.append((hi, shi, w, r))  # the part after
        if at < hi:
            new.append(touched(at, hi, 0, 0))
        self._replace(ks.start, ks.stop, new)

    def _replace(self, i: int, j: int, new: list[tuple[int, int, int, int]]) -> None:
        """Segments i..j-1 become `new` (lo, hi, wrote, read), in order."""
        self.lo[i:j] = [s[0] for s in new]
        self.hi[i:j] = [s[1] for s in new]
        self.wrote[i:j] = [s[2] for s in new]
        self.read[i:j] = [s[3] for s in new]


class _Board(_Scoreboard):
    """`_Scoreboard` with the common accesses short-cut (`schedule_rows`, which also reads it
    inline): one that meets no segment (inserted) or exactly one segment (updated in place), and
    a write over several, which leaves one where the reference keeps them all. Every answer is
    the reference's, for accesses marked as the scheduler marks them: ending no earlier than
    they were ready."""

    def mark(self, lo: int, hi: int, end: int, write: bool) -> None:
        if hi <= lo:
            return
        i = bisect.bisect_right(self.hi, lo)
        j = bisect.bisect_left(self.lo, hi)
        if i == j:  # a stretch nothing accessed before
            e = max(0, end)
            self.lo.insert(i, lo)
            self.hi.insert(i, hi)
            self.wrote.insert(i, e if write else 0)
            self.read.insert(i, 0 if write else e)
            return
        if j == i + 1 and self.lo[i] == lo and self.hi[i] == hi:  # exactly one segment
            if write:
                self.wrote[i] = max(self.wrote[i], end)
            else:
                self.read[i] = max(self.read[i], end)
            return
        if write:
            # A write started after every write and read of what it meets completed and ends at
            # `end`, no earlier: from now on any access of [lo, hi) waits for `end` and no more
            # (its reads were no later). One segment answers every later question alike.
            seg = (lo, hi, end, max(self.read[i:j]))
            new = [(self.lo[i], lo, self.wrote[i], self.read[i])] if self.lo[i] < lo else []
            new.append(seg)
            if self.hi[j - 1] > hi:
                new.append((hi, self.hi[j - 1], self.wrote[j - 1], self.read[j - 1]))
            self._replace(i, j, new)
            return
        super().mark(lo, hi, end, write)


@dataclass(frozen=True)
class Unit:
    """An engine as the doc declares it (defaults for a unit no `engine` declares)."""

    queue: int = UNBOUNDED
    inflight: int = UNBOUNDED
    kind: str = ""  # one of zomboss.doc.model.UNIT_CLASSES; "": classed per instruction by its effects


@dataclass(frozen=True)
class Channel:
    """An external memory's channel: `bandwidth` bytes per cycle shared by every access, the
    data `latency` cycles after its request, at most `outstanding` requests in flight."""

    bandwidth: int
    latency: int = 0
    outstanding: int = UNBOUNDED


def channels(kb: KB) -> dict[str, Channel]:
    """The external memories whose doc declares a channel (`bandwidth`, with `latency` and
    `outstanding` optional; the KB validated them)."""
    out = {}
    for m in kb.doc.memories:
        f = m.fields
        if m.external and "bandwidth" in f:
            out[m.name] = Channel(
                _decl_int(kb, f["bandwidth"], 1),
                _decl_int(kb, f.get("latency"), 0),
                _decl_int(kb, f.get("outstanding"), UNBOUNDED),
            )
    return out


def queue_arrays(kb: KB) -> dict[str, int]:
    """The queue arrays the doc declares (`queue Q[N]`) and their sizes."""
    return {
        d.name: _decl_int(kb, d.fields["count"], 1) for d in kb.doc.decls if d.kind == "queue" and "count" in d.fields
    }


def interlocked(kb: KB) -> set[str]:
    """The memories and register files the doc declares `interlock`ed."""
    return {d.name for d in kb.doc.decls if d.kind == "interlock"}


def blocking(kb: KB) -> bool:
    """Whether the doc's fetch stage waits for each instruction to complete (`fetch { blocking: 1 }`)."""
    return any(d.kind == "fetch" and _decl_int(kb, d.fields.get("blocking"), 0) == 1 for d in kb.doc.decls)


@dataclass(frozen=True)
class Stall:
    """A `stall` declaration: an instruction of `before` starts `cycles` after the instruction
    right before it completes when that one, of `after`, wrote what it reads (`raw`) or writes
    (`waw`) of `on`, or read what it writes (`war`)."""

    name: str
    after: frozenset[str]
    before: frozenset[str]
    on: str
    dep: str
    cycles: int


def stalls(kb: KB) -> list[Stall]:
    """The doc's stall declarations, their instruction sets resolved (the KB validated them)."""
    out = []
    for d in kb.doc.decls:
        if d.kind == "stall":
            f = d.fields
            sides = [frozenset(stall_members(kb, name_list(f[k]) or ())) for k in ("after", "before")]
            on, dep = f["on"], f["dep"]
            assert isinstance(on, ex.Ref) and isinstance(dep, ex.Ref)
            out.append(Stall(d.name, sides[0], sides[1], on.name, dep.name, _decl_int(kb, f["cycles"], 0)))
    return out


def _meets(a: tuple[Span, ...], b: tuple[Span, ...], on: str) -> bool:
    """Whether two footprints overlap on `on`."""
    return any(n == on and m == on and lo < hi2 and lo2 < hi for n, lo, hi in a for m, lo2, hi2 in b)


def _stall(rules: Sequence[Stall], prev: Op, cur: Op) -> int:
    """The cycles `cur` waits after `prev` (the instruction right before it) completes: the sum of
    the stalls that apply."""
    n = 0
    for s in rules:
        if cur.name in s.before:
            mine = prev.reads if s.dep == "war" else prev.writes
            theirs = cur.reads if s.dep == "raw" else cur.writes
            if _meets(mine, theirs, s.on):
                n += s.cycles
    return n


@dataclass(frozen=True)
class Schedule:
    cycles: int
    breakdown: dict[str, int]
    busy: dict[str, int]  # unit -> cycles it could take no other instruction (its issue intervals)
    start: np.ndarray = field(repr=False)
    end: np.ndarray = field(repr=False)


def _decl_int(kb: KB, e: ex.Expr | None, default: int) -> int:
    if e is None:
        return default
    v = ex.evaluate(e, kb.params)
    return int(v) if isinstance(v, int) else default


def units(kb: KB) -> dict[str, Unit]:
    """The doc's engines (the KB validated their fields)."""
    out = {}
    for d in kb.doc.decls:
        if d.kind == "engine":
            kind = d.fields.get("class")
            out[d.name] = Unit(
                _decl_int(kb, d.fields.get("queue"), UNBOUNDED),
                _decl_int(kb, d.fields.get("inflight"), UNBOUNDED),
                kind.name.lower() if isinstance(kind, (ex.Ref, ex.Sym)) else "",
            )
    return out


def schedule(kb: KB, ops: Sequence[Op]) -> Schedule:
    engines = units(kb)
    queues = {d.name for d in kb.doc.decls if d.kind == "queue"}
    n = len(ops)
    start = np.zeros(n, dtype=np.int64)
    end = np.zeros(n, dtype=np.int64)
    free: dict[str, int] = {}
    order: dict[str, list[int]] = {}
    tokens: dict[str, deque[int]] = {q: deque() for q in queues}
    dispatch = 0
    busy: dict[str, int] = {}
    plain = Unit()
    boards: dict[str, _Scoreboard] = {}  # interlocked memories and register files
    locked = interlocked(kb)
    chans = channels(kb)
    chan_free: dict[str, int] = {}  # when each channel can start the next transfer
    chan_done: dict[str, list[int]] = {}  # when each channel's requests complete, in request order
    blocks = blocking(kb)
    after: dict[str, list[Stall]] = {}  # the stalls an instruction can cause, by its mnemonic
    for s in stalls(kb):
        for a in s.after:
            after.setdefault(a, []).append(s)
    for i, op in enumerate(ops):
        seen = order.setdefault(op.unit, [])
        unit = engines.get(op.unit, plain)
        d = (int(end[i - 1]) if i else 0) if blocks else dispatch + 1  # blocking: once the one before completes
        if len(seen) >= unit.queue:
            d = max(d, int(start[seen[-unit.queue]]))  # its queue is full until that one starts
        dispatch = d
        t = max(d, free.get(op.unit, 0))
        if len(seen) >= unit.inflight:
            t = max(t, int(end[seen[-unit.inflight]]))  # as many in flight as the unit holds
        ordered = [
            (n, lo, hi, w) for w, spans in ((False, op.reads), (True, op.writes)) for n, lo, hi in spans if n in locked
        ]
        for name, lo, hi, w in ordered:
            t = max(t, boards.setdefault(name, _Scoreboard()).ready(lo, hi, w))
        for q in op.pops:
            fifo = tokens.setdefault(q, deque())
            if not fifo:
                raise IllegalProgram(
                    [
                        Violation(
                            "queue.deadlock",
                            f"{op.unit} pops {q} but no earlier instruction pushed a token on it",
                            "",
                            i,
                            op.line,
                            op.unit,
                        )
                    ]
                )
            t = max(t, fifo.popleft())
        if i and ops[i - 1].name in after:
            wait = _stall(after[ops[i - 1].name], ops[i - 1], op)
            if wait:
                t = max(t, int(end[i - 1]) + wait)
        issue = op.latency if op.issue is None else op.issue
        start[i] = t
        end[i] = t + op.latency
        for name, lo, hi in op.reads + op.writes:
            ch = chans.get(name)
            if ch is None or hi <= lo:
                continue
            done = chan_done.setdefault(name, [])
            c = max(t, chan_free.get(name, 0))
            if len(done) >= ch.outstanding:
                c = max(c, done[-ch.outstanding])  # a request slot frees when an older request completes
            chan_free[name] = c + -(-(hi - lo) // ch.bandwidth)
            done.append(chan_free[name] + ch.latency)
            end[i] = max(end[i], done[-1])  # the instruction completes with its last transfer
        free[op.unit] = t + issue
        busy[op.unit] = busy.get(op.unit, 0) + issue
        for name, lo, hi, w in ordered:
            boards[name].mark(lo, hi, int(end[i]), w)
        for q in op.pushes:
            tokens.setdefault(q, deque()).append(int(end[i]))
        seen.append(i)
    cycles = int(end.max()) if n else 0
    kinds = np.array([_kind(engines.get(o.unit, plain), o) for o in ops], dtype=object)
    comp = kinds == "compute"
    work = comp | (kinds == "memory")
    comp_t = _union(start[comp], end[comp])
    work_t = _union(start[work], end[work])
    all_t = _union(start, end)
    breakdown = {"compute": comp_t, "memory": work_t - comp_t, "stall": cycles - all_t, "overhead": all_t - work_t}
    return Schedule(cycles, breakdown, busy, start, end)


def _kind(unit: Unit, op: Op) -> str:
    return unit.kind or ("memory" if op.memory else "compute")


def _union(lo: np.ndarray, hi: np.ndarray) -> int:
    """The measure of a union of intervals [lo, hi)."""
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if not len(lo):
        return 0
    o = np.argsort(lo, kind="stable")
    lo, hi = lo[o], np.maximum.accumulate(hi[o])
    gaps = np.maximum(lo[1:] - hi[:-1], 0)
    return int(hi[-1] - lo[0] - gaps.sum())


def schedule_rows(kb: KB, rows: Sequence[tuple[Any, ...]], segments: Sequence[Segment] = ()) -> Schedule:
    """`schedule(kb, [Op(*row) for row in rows])` without the `Op`s (a row is an Op's fields in
    order), the same schedule: the same pass with the doc's machine looked up once per unit and
    the checks a machine does not declare (interlocks, channels, stalls, queue limits) skipped."""
    engines = units(kb)
    tokens: dict[str, deque[int]] = {d.name: deque() for d in kb.doc.decls if d.kind == "queue"}
    locked = interlocked(kb)
    chans = channels(kb)
    blocks = blocking(kb)
    after: dict[str, list[Stall]] = {}
    for s in stalls(kb):
        for a in s.after:
            after.setdefault(a, []).append(s)
    n = len(rows)
    all_rows = rows
    start = [0] * n
    end = [0] * n
    free: dict[str, int] = {}
    busy: dict[str, int] = {}
    boards: dict[str, _Board] = {m: _Board() for m in locked}
    chan_free: dict[str, int] = {}
    chan_done: dict[str, list[int]] = {}
    plain = Unit()
    per_unit: dict[str, tuple[list[int], int, int]] = {}  # unit -> (its instructions, queue, inflight)
    dispatch = 0
    prev_name = ""
    prev: tuple[Any, ...] = ()
    footprinted = bool(locked or chans)
    limited = any(e.queue < UNBOUNDED or e.inflight < UNBOUNDED for e in engines.values())
    if not footprinted and not limited:
        _unlimited(rows, start, end, free, busy, tokens, after, blocks, segments)
        per_unit = {r[0]: ([], UNBOUNDED, UNBOUNDED) for r in rows}
        rows = ()  # scheduled
    for i, row in enumerate(rows):
        u, lat, pops, pushes, _, line, iss, reads, writes, name = row
        ent = per_unit.get(u)
        if ent is None:
            e = engines.get(u, plain)
            ent = per_unit[u] = ([], e.queue, e.inflight)
        seen, qdepth, inflight = ent
        d = (end[i - 1] if i else 0) if blocks else dispatch + 1
        k = len(seen)
        if k >= qdepth:
            q0 = start[seen[-qdepth]]  # its queue is full until that one starts
            if q0 > d:
                d = q0
        dispatch = d
        t = free.get(u, 0)
        if d > t:
            t = d
        if k >= inflight:
            f0 = end[seen[-inflight]]  # as many in flight as the unit holds
            if f0 > t:
                t = f0
        if locked:  # the reads, then the writes, of interlocked memories and register files
            for m, lo, hi in reads:  # `_Board.ready`, inline: after the writes it meets
                b = boards.get(m)
                if b is not None and hi > lo:
                    wrote = b.wrote
                    for k in range(bisect_right(b.hi, lo), bisect_left(b.lo, hi)):
                        if wrote[k] > t:
                            t = wrote[k]
            for m, lo, hi in writes:  # after the writes and reads it meets
                b = boards.get(m)
                if b is not None and hi > lo:
                    wrote, read = b.wrote, b.read
                    for k in range(bisect_right(b.hi, lo), bisect_left(b.lo, hi)):
                        if wrote[k] > t:
                            t = wrote[k]
                        if read[k] > t:
                            t = read[k]
        for q in pops:
            fifo = tokens.get(q)
            if fifo is None:
                fifo = tokens[q] = deque()
            if not fifo:
                raise IllegalProgram(
                    [
                        Violation(
                            "queue.deadlock",
                            f"{u} pops {q} but no earlier instruction pushed a token on it",
                            "",
                            i,
                            line,
                            u,
                        )
                    ]
                )
            t = max(t, fifo.popleft())
        if prev_name in after:
            wait = _stall_rows(after[prev_name], prev, row)
            if wait:
                t = max(t, end[i - 1] + wait)
        issue = lat if iss is None else iss
        start[i] = t
        e_i = t + lat
        if chans:
            for m, lo, hi in reads + writes:
                ch = chans.get(m)
                if ch is None or hi <= lo:
                    continue
                done = chan_done.setdefault(m, [])
                c = max(t, chan_free.get(m, 0))
                if len(done) >= ch.outstanding:
                    c = max(c, done[-ch.outstanding])
                chan_free[m] = c + -(-(hi - lo) // ch.bandwidth)
                done.append(chan_free[m] + ch.latency)
                e_i = max(e_i, done[-1])
        end[i] = e_i
        free[u] = t + issue
        busy[u] = busy.get(u, 0) + issue
        if locked:
            for m, lo, hi in reads:
                b = boards.get(m)
                if b is not None:
                    b.mark(lo, hi, e_i, False)
            for m, lo, hi in writes:
                b = boards.get(m)
                if b is not None:
                    b.mark(lo, hi, e_i, True)
        for q in pushes:
            fifo = tokens.get(q)
            if fifo is None:
                fifo = tokens[q] = deque()
            fifo.append(e_i)
        seen.append(i)
        prev_name, prev = name, row
    s_arr = np.array(start, dtype=np.int64)
    e_arr = np.array(end, dtype=np.int64)
    cycles = int(e_arr.max()) if n else 0
    codes = {"compute": 0, "memory": 1, "": -1}  # -1: classed by its effects; 2: control
    kinds = {u: codes.get(engines.get(u, plain).kind, 2) for u in per_unit}
    cls = np.fromiter((k if (k := kinds[r[0]]) >= 0 else (1 if r[4] else 0) for r in all_rows), np.int8, n)
    comp = cls == 0
    work = cls <= 1
    comp_t = _union(s_arr[comp], e_arr[comp])
    work_t = _union(s_arr[work], e_arr[work])
    all_t = _union(s_arr, e_arr)
    breakdown = {"compute": comp_t, "memory": work_t - comp_t, "stall": cycles - all_t, "overhead": all_t - work_t}
    return Schedule(cycles, breakdown, busy, s_arr, e_arr)


def _unlimited(
    rows: Sequence[tuple[Any, ...]],
    start: list[int],
    end: list[int],
    free: dict[str, int],
    busy: dict[str, int],
    tokens: dict[str, deque[int]],
    after: dict[str, list[Stall]],
    blocks: bool,
    segments: Sequence[Segment] = (),
) -> None:
    """`schedule_rows`'s pass on a machine without queue or in-flight limits, interlocks and
    channels (PLENA's): dispatch, the unit's issue interval, tokens and stalls alone. At the
    period boundaries of replayed `segments` it compares the state, and once a period repeats
    the one before it, fills in the rest (`periods.py`)."""
    dispatch = 0
    last = 0  # the end of the instruction before
    prev_name = ""
    prev: tuple[Any, ...] = ()
    segs = [g for g in reversed(segments) if keeps_stalls(rows, g, after)]
    seg = segs.pop() if segs else None
    check = seg.start if seg is not None else -1  # the next period boundary to compare at
    seen: tuple[tuple[Any, ...], int] | None = None  # the state and dispatch clock at the last one
    probes = 0
    n = len(rows)
    i = 0
    while i < n:
        if i == check and seg is not None:
            rel = relative(dispatch, last, free, tokens)
            if seen is not None and seen[0] == rel:
                shift = dispatch - seen[1]
                r = skip(rows, i, seg, shift, dispatch, start, end, free, busy, tokens)
                dispatch += r * shift
                last += r * shift
                i += r * seg.k
                prev = rows[i - 1]
                prev_name = prev[9]
            seen, probes = (rel, dispatch), probes + 1
            if i == check and probes <= PROBE and i + seg.k < seg.stop:
                check = i + seg.k
            else:  # skipped, or not steady soon enough: the next segment
                seg = segs.pop() if segs else None
                check, seen, probes = (seg.start if seg is not None else -1), None, 0
                continue
        row = rows[i]
        u, lat, pops, pushes, _, line, iss, _, _, name = row
        d = last if blocks else dispatch + 1
        dispatch = d
        t = free.get(u, 0)
        if d > t:
            t = d
        for q in pops:
            fifo = tokens.get(q)
            if fifo is None:
                fifo = tokens[q] = deque()
            if not fifo:
                msg = f"{u} pops {q} but no earlier instruction pushed a token on it"
                raise IllegalProgram([Violation("queue.deadlock", msg, "", i, line, u)])
            t = max(t, fifo.popleft())
        if prev_name in after:
            wait = _stall_rows(after[prev_name], prev, row)
            if wait:
                t = max(t, last + wait)
        issue = lat if iss is None else iss
        start[i] = t
        last = end[i] = t + lat
        free[u] = t + issue
        busy[u] = busy.get(u, 0) + issue
        for q in pushes:
            fifo = tokens.get(q)
            if fifo is None:
                fifo = tokens[q] = deque()
            fifo.append(last)
        prev_name, prev = name, row
        i += 1


def _stall_rows(rules: Sequence[Stall], prev: tuple[Any, ...], cur: tuple[Any, ...]) -> int:
    """`_stall` of two rows."""
    k = 0
    for s in rules:
        if cur[9] in s.before:
            mine = prev[7] if s.dep == "war" else prev[8]
            theirs = cur[7] if s.dep == "raw" else cur[8]
            if _meets(mine, theirs, s.on):
                k += s.cycles
    return k
