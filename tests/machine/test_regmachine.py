"""The register-synchronised toy machine of tests/data/regmachine.md: a kernel's loop order and
unrolling change its cycles exactly as its register dependencies dictate.

The kernel sums the rows of a 2 x 2 matrix A (row-major in `mem`) into two accumulators,
out[j] = A[0][j] + A[1][j] in r0 and r1. Its lowering takes the loop order (`ij`: the row
outer, so consecutive adds go to different accumulators; `ji`: the column outer, so they go to
the same one) and the unrolling (how many temporaries, r2 upwards, a group of loads fills before
its adds). Every schedule below was worked out by hand from the doc's numbers: a load issues
every cycle and completes 8 later (at most 4 in flight), an add issues every cycle and completes
3 later, the fetch stage dispatches one instruction per cycle, and the interlocked registers
order reads after writes and writes after reads and writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from zomboss.doc import parse_doc
from zomboss.knowledge import compile_doc
from zomboss.machine import GenericSim
from zomboss.program import Instr

DOC = Path(__file__).resolve().parents[1] / "data" / "regmachine.md"


@pytest.fixture(scope="module")
def sim() -> GenericSim:
    return GenericSim(compile_doc(parse_doc(DOC.read_text(), str(DOC)), "regmachine", {}))


def lower(order: str, unroll: int) -> list[Instr]:
    """The kernel's program: the (i, j) points in loop order, in groups of `unroll` loads (each
    into its own temporary) followed by their adds."""
    points = (
        [(i, j) for i in range(2) for j in range(2)] if order == "ij" else [(i, j) for j in range(2) for i in range(2)]
    )
    out: list[Instr] = []
    for g in range(0, len(points), unroll):
        group = points[g : g + unroll]
        out += [Instr("LD", (2 + k, 2 * i + j)) for k, (i, j) in enumerate(group)]
        out += [Instr("MAC", (j, 2 + k)) for k, (_, j) in enumerate(group)]
    return out


@pytest.mark.parametrize(
    ("order", "unroll", "starts", "cycles"),
    [
        # one temporary: each load waits for the add that read the last value (write after read)
        ("ij", 1, [1, 9, 12, 20, 23, 31, 34, 42], 45),
        ("ji", 1, [1, 9, 12, 20, 23, 31, 34, 42], 45),
        # two: the second group's loads wait for the first group's adds
        ("ij", 2, [1, 2, 9, 10, 12, 13, 20, 21], 24),
        ("ji", 2, [1, 2, 9, 12, 12, 15, 20, 23], 26),
        # four: all loads in flight at once; `ji`'s adds chain on one accumulator at a time
        ("ij", 4, [1, 2, 3, 4, 9, 10, 12, 13], 16),
        ("ji", 4, [1, 2, 3, 4, 9, 12, 13, 16], 19),
    ],
)
def test_loop_order_and_unrolling_change_the_cycles_as_the_dependencies_say(sim, order, unroll, starts, cycles):
    s = sim.run(lower(order, unroll)).schedule
    assert list(s.start) == starts and s.cycles == cycles


def test_without_the_interlock_the_loop_order_makes_no_difference():
    """The doc without `interlock r`: the units only queue, so every add times as if its load
    were done; the loop order, which only moves dependencies, changes nothing, and the cycles
    are what dispatch and the units allow (the search would be optimising noise)."""
    text = DOC.read_text().replace("interlock r\n", "")
    assert text != DOC.read_text()
    plain = GenericSim(compile_doc(parse_doc(text, str(DOC)), "regmachine", {}))
    got = {(o, u): plain.run(lower(o, u)).schedule.cycles for o in ("ij", "ji") for u in (1, 2, 4)}
    assert got == {("ij", 1): 15, ("ji", 1): 15, ("ij", 2): 14, ("ji", 2): 14, ("ij", 4): 12, ("ji", 4): 12}


def test_the_breakdown_counts_the_loads_as_memory_and_the_adds_as_compute(sim):
    s = sim.run(lower("ij", 4)).schedule
    # loads [1, 12), adds [9, 16): compute 7, memory alone [1, 9) = 8, nothing idle but cycle 0
    assert s.breakdown == {"compute": 7, "memory": 8, "stall": 1, "overhead": 0}
