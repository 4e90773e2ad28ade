"""The generic timing model's blocking fetch and adjacent-pair stalls (`fetch { blocking: 1 }`,
`stall S { after, before, on, dep, cycles }`: zomboss/machine/timing.py), on a toy in-order
machine whose schedules are worked out by hand; and the doc validation of both."""

from __future__ import annotations

import pytest

from zomboss.doc import DocError, parse_doc
from zomboss.knowledge import compile_doc
from zomboss.machine import GenericSim
from zomboss.program import Instr

DOC = """
```isa
regfile f { count: 4, width: 32 }
memory v { rows: 16, width: 4, type: int32 }
{fetch}
{stalls}
instr LOADV(row: int 0..15, n: int 1..4)
  unit dma
  writes v[row : row + n]
  latency 20
instr VADD(rd: int 0..15, rs: int 0..15)
  unit vector
  reads v[rs : rs + 1]
  writes v[rd : rd + 1]
  latency 10
instr VRED(fd: f, rs: int 0..15)
  unit vector
  reads v[rs : rs + 1]
  latency 8
  effect { f[fd] = fill(1) }
instr SADD(fd: f, fs: f)
  unit scalar
  latency 3
  effect { f[fd] = add(f[fd], f[fs]) }
instr NOP(n: int 0..1)
  unit scalar
  latency 1
```
"""

STALLS = """
stall pf { after: LOADV, before: vector, on: v, dep: raw, cycles: 4 }
stall red { after: VRED, before: SADD, on: f, dep: raw, cycles: 6 }
stall wr { after: VADD, before: VADD | VRED, on: v, dep: waw, cycles: 3 }
"""


def _kb(fetch: str = "fetch { blocking: 1 }", stalls: str = STALLS):
    return compile_doc(parse_doc(DOC.replace("{fetch}", fetch).replace("{stalls}", stalls), "toy.md"), "toy", {})


def _run(program: list[tuple[str, tuple[int, ...]]], **kw: str):
    return GenericSim(_kb(**kw)).run([Instr(op, args) for op, args in program]).schedule


def test_a_blocking_fetch_runs_one_instruction_at_a_time_from_cycle_0():
    # 20 + 10 + 1: the clock is the sum of the latencies (VADD reads row 9, LOADV wrote 0..3)
    s = _run([("LOADV", (0, 4)), ("VADD", (8, 9)), ("NOP", (0,))])
    assert list(s.start) == [0, 20, 30] and s.cycles == 31
    # without it the units overlap: dispatched at 1, 2, 3
    s = _run([("LOADV", (0, 4)), ("VADD", (8, 9)), ("NOP", (0,))], fetch="")
    assert list(s.start) == [1, 2, 3] and s.cycles == 21


def test_a_stall_charges_the_consumer_right_after_a_producer_of_what_it_reads():
    # VADD reads row 2, which LOADV wrote: 4 cycles after the load completes
    s = _run([("LOADV", (0, 4)), ("VADD", (8, 2))])
    assert list(s.start) == [0, 24] and s.cycles == 34
    # an instruction in between (even one cycle) clears it: adjacent pairs only
    s = _run([("LOADV", (0, 4)), ("NOP", (0,)), ("VADD", (8, 2))])
    assert list(s.start) == [0, 20, 21] and s.cycles == 31
    # a register: VRED writes f1, SADD reads f1 (as its accumulator) -> 6; reading f2 only -> 0
    s = _run([("VRED", (1, 0)), ("SADD", (1, 3))])
    assert list(s.start) == [0, 14]
    s = _run([("VRED", (1, 0)), ("SADD", (2, 3))])
    assert list(s.start) == [0, 8]


def test_a_waw_stall_needs_both_to_write_the_same_rows_and_stalls_add_up():
    s = _run([("VADD", (5, 0)), ("VADD", (5, 1)), ("VADD", (6, 1))])
    assert list(s.start) == [0, 13, 23]  # the second writes row 5 again; the third row 6
    # VRED after a VADD writes nothing of v: no write-after-write
    s = _run([("VADD", (5, 0)), ("VRED", (0, 5))])
    assert list(s.start) == [0, 10]
    # two stalls on one pair add: a load writing rows 0..3, then VADD writing row 1 and reading row 2
    both = STALLS + "stall pfw { after: LOADV, before: VADD, on: v, dep: waw, cycles: 5 }\n"
    s = _run([("LOADV", (0, 4)), ("VADD", (1, 2))], stalls=both)
    assert list(s.start) == [0, 29]


def test_a_stall_without_a_blocking_fetch_delays_the_consumer_past_the_producers_end():
    # the units overlap, but VADD may not start before LOADV ends + 4
    s = _run([("LOADV", (0, 4)), ("VADD", (8, 2))], fetch="")
    assert list(s.start) == [1, 25]
    s = _run([("LOADV", (0, 4)), ("VADD", (8, 9))], fetch="")
    assert list(s.start) == [1, 2]


@pytest.mark.parametrize(
    ("fetch", "stalls", "message"),
    [
        ("fetch { blocking: 2 }", "", "blocking must be 0 or 1"),
        ("fetch { width: 2 }", "", "unknown field 'width'"),
        ("fetch { blocking: 1 }\nfetch { blocking: 1 }", "", "fetch: given twice"),
        ("", "stall s { after: LOADV, before: vector, on: v, dep: raw }", "needs cycles"),
        ("", "stall s { after: LOADV, before: vector, on: v, dep: rar, cycles: 1 }", "dep rar is not one of"),
        ("", "stall s { after: LOADV, before: vector, on: w, dep: raw, cycles: 1 }", "on w is not a memory"),
        ("", "stall s { after: LOADW, before: vector, on: v, dep: raw, cycles: 1 }", "after 'LOADW' is not"),
        ("", "stall s { after: LOADV + 1, before: vector, on: v, dep: raw, cycles: 1 }", "must name instructions"),
        ("", "stall s { after: NOP, before: vector, on: v, dep: raw, cycles: 1 }", "no instruction of after writes v"),
        ("", "stall s { after: LOADV, before: scalar, on: v, dep: raw, cycles: 1 }", "of before reads v"),
        ("", "stall s { after: LOADV, before: vector, on: v, dep: raw, cycles: 0 - 1 }", "at least 0"),
        ("", "stall s { after: LOADV, before: vector, on: v, dep: raw, cycles: 1, when: 1 }", "unknown field 'when'"),
    ],
)
def test_a_fetch_or_stall_the_model_would_misread_is_refused(fetch: str, stalls: str, message: str) -> None:
    with pytest.raises(DocError, match=message):
        _kb(fetch, stalls)
