"""The generic timing model's vocabulary (zomboss/machine/timing.py): issue intervals against
latencies, instructions in flight, and the breakdown by the class each engine declares, on a toy
machine whose schedules are worked out by hand."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zomboss.doc import DocError, parse_doc
from zomboss.errors import IllegalProgram
from zomboss.knowledge import compile_doc
from zomboss.machine import GenericSim
from zomboss.program import Instr

DOC = """
```isa
param lat = 10
engine mxu {{ {mxu} }}
engine dma {{ class: memory }}
engine ctl {{ class: control }}
instr MAC(n: int 0..15)
  unit mxu
  latency lat{issue}
instr LOAD(n: int 0..15)
  unit dma
  latency 4
instr WAIT(n: int 0..15)
  unit ctl
  latency 3
```
"""


def _sim(mxu: str = "class: compute", issue: str = "") -> GenericSim:
    return GenericSim(compile_doc(parse_doc(DOC.format(mxu=mxu, issue=issue), "toy.md"), "toy", {}))


def _run(sim: GenericSim, ops: list[str]):
    return sim.run([Instr(op, (0,)) for op in ops]).schedule


def test_a_unit_without_an_issue_interval_is_busy_for_each_latency():
    # dispatched at 1, 2, ...; each starts when the one before completes: 1, 11, 21, 31, 41
    s = _run(_sim(), ["MAC"] * 5)
    assert list(s.start) == [1, 11, 21, 31, 41] and s.cycles == 51 and s.busy["mxu"] == 50


def test_a_pipelined_unit_takes_one_instruction_per_issue_interval_up_to_its_inflight_bound():
    # issue 2: starts 1, 3, 5, 7; the fifth waits for the first to complete (4 in flight): 11
    s = _run(_sim("class: compute, inflight: 4", "\n  issue 2"), ["MAC"] * 5)
    assert list(s.start) == [1, 3, 5, 7, 11] and list(s.end) == [11, 13, 15, 17, 21]
    assert s.cycles == 21 and s.busy["mxu"] == 10  # busy: the issue intervals, a bound on the cycles
    # without an inflight bound the fifth issues at 9
    s = _run(_sim("class: compute", "\n  issue 2"), ["MAC"] * 5)
    assert list(s.start) == [1, 3, 5, 7, 9] and s.cycles == 19


def test_the_breakdown_follows_each_engines_class():
    # LOAD [1, 5) on dma, MAC [2, 12) on mxu, WAIT [3, 6) on ctl, WAIT [6, 9), LOAD [5, 9)
    s = _run(_sim(), ["LOAD", "MAC", "WAIT", "WAIT", "LOAD"])
    assert s.cycles == 12
    assert s.breakdown == {"compute": 10, "memory": 1, "overhead": 0, "stall": 1}
    # LOAD [1, 5), WAIT [2, 5), [5, 8), [8, 11), LOAD [5, 9): control work alone in [9, 11)
    s = _run(_sim(), ["LOAD", "WAIT", "WAIT", "WAIT", "LOAD"])
    assert s.cycles == 11 and s.breakdown == {"compute": 0, "memory": 8, "overhead": 2, "stall": 1}


@pytest.mark.parametrize(
    ("mxu", "message"),
    [
        ("class: compute, depth: 4", "unknown field 'depth'"),
        ("class: vector", "class vector is not one of compute, memory, control"),
        ("inflight: 0", "inflight must be at least 1"),
        ("queue: -1", "queue must be at least 1"),
    ],
)
def test_an_engine_is_refused_for_a_field_the_timing_model_would_misread(mxu, message):
    with pytest.raises(DocError, match=message):
        _sim(mxu)


REGS = """
```isa
regfile r { count: 8, width: 32 }
memory m { rows: 64, width: 1, type: int32 }
interlock r, m
engine ld { class: memory }
engine alu { class: compute }
engine st { class: memory }
instr LD(rd: r, imm: int 0..255)
  unit ld
  latency 10
  effect { r[rd] = fill(imm) }
instr ADD(rd: r, rs: r)
  unit alu
  latency 2
  effect { r[rd] = add(r[rd], r[rs]) }
instr MUL(rd: r, rs: r)
  unit alu
  latency 6
  effect { r[rd] = mul(r[rs], r[rs]) }
instr STORE(rs: r, row: int 0..63, n: int 1..8)
  unit st
  writes m[row : row + n]
  latency 5
instr LOAD(rd: r, row: int 0..63)
  unit ld
  reads m[row : row + 1]
  latency 3
```
"""


def _regs(program: list[tuple[str, tuple[int, ...]]]):
    sim = GenericSim(compile_doc(parse_doc(REGS, "regs.md"), "regs", {}))
    return sim.run([Instr(op, args) for op, args in program]).schedule


def test_an_interlocked_register_orders_a_read_after_the_write_it_reads():
    # ADD r2, r1 reads r1: it waits for LD r1 (starts 1, ends 11); ADD r2, r3 does not
    s = _regs([("LD", (1, 5)), ("ADD", (2, 1))])
    assert list(s.start) == [1, 11] and s.cycles == 13
    s = _regs([("LD", (1, 5)), ("ADD", (2, 3))])
    assert list(s.start) == [1, 2] and s.cycles == 11


def test_a_write_waits_for_an_older_read_and_an_older_write_of_its_register():
    # MUL r2, r1 reads r1 over [1, 7); LD r1 may not overwrite it before 7 (write after read)
    s = _regs([("MUL", (2, 1)), ("LD", (1, 5))])
    assert list(s.start) == [1, 7]
    # LD r1 then ADD r1, r3 (both write r1): the add waits for the load (write after write)
    s = _regs([("LD", (1, 5)), ("ADD", (1, 3))])
    assert list(s.start) == [1, 11]


def test_an_interlocked_memory_orders_overlapping_rows_only():
    # STORE rows [4, 8) ends at 6; LOAD row 6 overlaps and waits; LOAD row 9 does not
    s = _regs([("STORE", (0, 4, 4)), ("LOAD", (1, 6)), ("LOAD", (2, 9))])
    assert list(s.start) == [1, 6, 9] and list(s.end) == [6, 9, 12]
    s = _regs([("STORE", (0, 4, 4)), ("LOAD", (2, 9))])
    assert list(s.start) == [1, 2]


def test_an_interlock_must_name_a_memory_or_register_file():
    with pytest.raises(DocError, match="interlock q: no memory or register file"):
        compile_doc(parse_doc(REGS.replace("interlock r, m", "interlock r, q"), "regs.md"), "regs", {})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 8), st.integers(1, 50), st.booleans()), max_size=25))
def test_the_scoreboard_answers_as_one_entry_per_row_would(accesses):
    """The segment map against a row-by-row record of the last write and read completions."""
    from zomboss.machine.timing import _Scoreboard

    board, wrote, read = _Scoreboard(), [0] * 40, [0] * 40
    for lo, n, end, write in accesses:
        rows = range(lo, lo + n)
        want = max([0, *(max(wrote[x], read[x] if write else 0) for x in rows)])
        assert board.ready(lo, lo + n, write) == want
        board.mark(lo, lo + n, end, write)
        for x in rows:
            if write:
                wrote[x] = max(wrote[x], end)
            else:
                read[x] = max(read[x], end)
        assert board.lo == sorted(board.lo) and all(a < b for a, b in zip(board.lo, board.hi, strict=True))
        assert all(b <= a for a, b in zip(board.lo[1:], board.hi, strict=False))


CHANNEL = """
```isa
memory dram {{ external, type: int8{channel} }}
engine ld {{ class: memory }}
instr LOAD(addr: int 0..1023, n: int 1..64)
  unit ld
  reads dram[addr : addr + n]
  latency 1
  issue 1
```
"""


def _channel(fields: str):
    return GenericSim(compile_doc(parse_doc(CHANNEL.format(channel=fields), "ch.md"), "ch", {}))


def test_an_external_memorys_channel_is_shared_bandwidth_with_a_latency_and_request_slots():
    # 8 bytes at 4 per cycle: 2 cycles of the channel each, data 10 later, 2 requests in flight:
    # [1, 3) done 13; [3, 5) done 15; the third waits for the first to complete: [13, 15) done 25
    s = _channel(", bandwidth: 4, latency: 10, outstanding: 2").run([Instr("LOAD", (8 * k, 8)) for k in range(3)])
    assert list(s.schedule.start) == [1, 2, 3] and list(s.schedule.end) == [13, 15, 25]
    # no channel declared: each load takes its latency, as before
    s = _channel("").run([Instr("LOAD", (8 * k, 8)) for k in range(3)])
    assert list(s.schedule.end) == [2, 3, 4]


@pytest.mark.parametrize(
    ("fields", "message"),
    [(", bandwidth: 0", "bandwidth must be at least 1"), (", outstanding: 0", "outstanding must be at least 1")],
)
def test_a_channel_field_out_of_range_is_refused(fields, message):
    with pytest.raises(DocError, match=message):
        _channel(fields)


def test_a_channel_belongs_to_an_external_memory():
    doc = "```isa\nmemory spad { rows: 4, width: 4, bandwidth: 8 }\ninstr NOP(n: int 0..1)\n  unit u\n```\n"
    with pytest.raises(DocError, match="bandwidth is a field of an external memory's channel"):
        compile_doc(parse_doc(doc, "s.md"), "s", {})


QUEUES = """
```isa
queue done[4] {{ from: a, to: b, depth: 2 }}
instr MAKE(k: int 0..7, n: int 1..64)
  unit a
  pushes done[k]
  latency n
instr TAKE(k: int 0..7)
  unit b
  pops {pop}
  latency 1
```
"""


def _queues(pop: str = "done[k]") -> GenericSim:
    return GenericSim(compile_doc(parse_doc(QUEUES.format(pop=pop), "q.md"), "q", {}))


def test_a_queue_array_keeps_one_fifo_per_index():
    # MAKE 0 ends at 21, MAKE 1 at 23; TAKE 1 waits only for MAKE 1, TAKE 0 for MAKE 0
    s = _queues().run([Instr("MAKE", (0, 20)), Instr("MAKE", (1, 2)), Instr("TAKE", (1,)), Instr("TAKE", (0,))])
    assert list(s.schedule.start) == [1, 21, 23, 24]
    s = _queues().run([Instr("MAKE", (1, 20)), Instr("MAKE", (0, 2)), Instr("TAKE", (0,))])
    assert list(s.schedule.start) == [1, 21, 23]


def test_a_token_outside_its_queue_array_is_refused_with_the_rule():
    with pytest.raises(IllegalProgram) as e:
        _queues().run([Instr("MAKE", (5, 2)), Instr("TAKE", (5,))])
    assert e.value.violations[0].rule == "queue.index" and "done[5] is outside done[0..3]" in str(e.value)


@pytest.mark.parametrize(
    ("pop", "message"),
    [
        ("done", "TAKE pops done: needs an index: it is an array"),
        ("ready", "TAKE pops ready, which no `queue` declares"),
    ],
)
def test_a_token_must_name_its_queue_as_declared(pop, message):
    with pytest.raises(DocError, match=message):
        _queues(pop)
