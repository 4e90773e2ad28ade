"""Replayed periods scheduled as shifted copies (`zomboss.machine.periods`): the short scheduling
pass with segments gives the same start and end of every operation, busy times, units' free
cycles and token queues as scheduling every operation, on random periodic streams with tokens,
issue intervals, a blocking fetch and stall hazards whose footprints move; it does skip; and a
segment whose stall outcomes could change is scheduled in full."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zomboss.machine import periods, timing
from zomboss.machine.periods import Segment, keeps_stalls
from zomboss.machine.replay import _moved
from zomboss.machine.timing import Stall, _unlimited

NAMES = ("LD", "ADD", "MUL", "ST")
STALLS = {
    "LD": [Stall("ld_use", frozenset({"LD"}), frozenset({"ADD", "MUL"}), "m", "raw", 4)],
    "ADD": [Stall("add_add", frozenset({"ADD"}), frozenset({"ADD", "ST"}), "m", "waw", 2)],
    "ST": [Stall("st_ld", frozenset({"ST"}), frozenset({"LD"}), "m", "war", 3)],
}


def _row(
    unit: str,
    lat: int,
    pops: tuple[str, ...],
    pushes: tuple[str, ...],
    iss: int | None,
    reads: tuple,
    writes: tuple,
    name: str,
) -> tuple[Any, ...]:
    return (unit, lat, pops, pushes, False, 0, iss, reads, writes, name)


@st.composite
def _stream(draw: st.DrawFn) -> tuple[list[tuple[Any, ...]], Segment]:
    """A prologue that pushes tokens, a period, `periods` replayed copies of it (spans moved on),
    and an epilogue; the segment is the copies."""
    queues = ("q", "r")
    k = draw(st.integers(1, 6))
    period, moves = [], []
    for x in range(k):
        name = draw(st.sampled_from(NAMES))
        pops = tuple(draw(st.lists(st.sampled_from(queues), max_size=1)))
        # mostly what it pops (a queue that grows every period never repeats its state)
        pushes = pops if draw(st.integers(0, 3)) else tuple(draw(st.lists(st.sampled_from(queues), max_size=2)))
        lat = draw(st.integers(0, 12))
        iss = draw(st.none() | st.integers(0, lat))
        span = ("m", lo := draw(st.integers(0, 40)), lo + draw(st.integers(0, 8)))
        reads, writes = ((span,), ()) if draw(st.booleans()) else ((), (span,))
        period.append(_row(draw(st.sampled_from("abc")), lat, pops, pushes, iss, reads, writes, name))
        step = draw(st.sampled_from([0, 0, 4, 8, 16]))
        grow = step if draw(st.integers(0, 5)) else step + 1  # now and then a span that grows
        if step or grow:
            moves.append((x, ((step, grow),)))
    prologue = [_row("a", 1, (), ("q", "r") * 3, None, (), (), "LD")]
    n = draw(st.integers(2, 30))
    by = dict(moves)
    rows = prologue + [_moved(r, by.get(x, ((0, 0),)), t) for t in range(n + 1) for x, r in enumerate(period)]
    rows.append(_row("b", 3, (), (), None, (), (), "ST"))
    return rows, Segment(len(prologue) + k, k, n, tuple(moves))


def _schedule(rows: list[tuple[Any, ...]], blocks: bool, segments: tuple[Segment, ...], after: int) -> tuple:
    """The schedule and the state it ends in: token times compared from the start of operation
    `after` on (a time before the dispatch clock can delay nothing, and a skip leaves such
    times as they were)."""
    n = len(rows)
    start, end = [0] * n, [0] * n
    free: dict[str, int] = {}
    busy: dict[str, int] = {}
    tokens: dict[str, deque[int]] = {}
    try:
        _unlimited(rows, start, end, free, busy, tokens, STALLS, blocks, segments)
    except Exception as e:  # noqa: BLE001 - the same refusal either way
        return (type(e).__name__, str(e))
    t0 = start[after]
    return start, end, free, busy, {q: [max(t - t0, 0) for t in f] for q, f in tokens.items()}


SKIPPED: list[int] = []


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_stream(), st.booleans())
def test_random_periodic_streams_schedule_as_in_full(
    stream: tuple[list[tuple[Any, ...]], Segment], blocks: bool
) -> None:
    rows, seg = stream
    counted: list[int] = []

    def spy(*args: Any) -> int:
        r = periods.skip(*args)
        counted.append(r)
        return r

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(timing, "skip", spy)
        fast = _schedule(rows, blocks, (seg,), seg.stop)
    assert fast == _schedule(rows, blocks, (), seg.stop)
    if blocks:
        SKIPPED.append(sum(counted))


def test_zz_some_random_streams_were_skipped() -> None:
    """The draws above skip periods (else they would compare the full pass with itself). With a
    blocking fetch most repeat soon; without one, dispatch runs ahead of any unit busier than
    one cycle per operation, and the state never repeats."""
    if SKIPPED:  # run in this process
        assert sum(1 for s in SKIPPED if s) > len(SKIPPED) // 4


def test_a_steady_loop_is_filled_in_and_its_state_advanced() -> None:
    body = [
        _row("dma", 10, (), ("q",), 2, (), (("m", 0, 4),), "LD"),
        _row("alu", 3, ("q",), (), None, (("m", 0, 4),), (), "ADD"),
    ]
    moves = ((0, ((4, 4),)), (1, ((4, 4),)))
    rows = [_moved(r, dict(moves)[x], t) for t in range(101) for x, r in enumerate(body)]
    seg = Segment(2, 2, 100, moves)
    assert keeps_stalls(rows, seg, STALLS)
    calls: list[int] = []

    def spy(*args: Any) -> int:
        calls.append(periods.skip(*args))
        return calls[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(timing, "skip", spy)
        fast = _schedule(rows, True, (seg,), -1)
    assert calls and calls[0] >= 95  # all but the first periods, compared
    assert fast == _schedule(rows, True, (), -1)


def test_a_segment_whose_stalls_could_change_is_scheduled_in_full() -> None:
    """An LD moving on by 4 per period ahead of an ADD that stays: they meet in some periods
    only, so the stall would not repeat."""
    body = [
        _row("dma", 10, (), (), None, (), (("m", 0, 4),), "LD"),
        _row("alu", 3, (), (), None, (("m", 8, 12),), (), "ADD"),
    ]
    moves = ((0, ((4, 4),)),)
    rows = [_moved(r, dict(moves).get(x, ((0, 0),)), t) for t in range(11) for x, r in enumerate(body)]
    seg = Segment(2, 2, 10, moves)
    assert not keeps_stalls(rows, seg, STALLS)
    assert keeps_stalls(rows, seg, {})  # no stall: only the state decides
    grows = Segment(2, 2, 10, ((0, ((4, 5),)), (1, ((4, 5),))))
    assert not keeps_stalls(rows, grows, STALLS)  # spans that grow may come to meet
    assert _schedule(rows, True, (seg,), -1) == _schedule(rows, True, (), -1)
