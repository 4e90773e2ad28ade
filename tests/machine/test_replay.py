"""Replayed hardware-loop iterations (`zomboss.machine.replay`) in the generic simulator's
timing-only runs: the same cycles, breakdown, busy times, instruction counts and effect points as
simulating every instruction, on PLENA defaults and random register programs with long loops;
the instruction budget refuses the same programs; VTA's evaluations are unchanged."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.targets.plena.test_generic import _line
from zomboss.knowledge import KB
from zomboss.machine import GenericSim, Run
from zomboss.program import Instr
from zomboss.target import Mode, get_target
from zomboss.util import LimitError


@functools.cache
def _plena() -> tuple[KB, GenericSim]:
    from zomboss.targets.plena.config import PlenaConfig

    kb = PlenaConfig.from_params().kb
    return kb, GenericSim(kb)


def _timed(run: Run) -> tuple:
    """What a timing-only run found, its final registers included."""
    s = run.schedule
    assert run.registers is not None
    regs = sorted((k, a.tobytes()) for k, a in run.registers.arrays.items())
    return (s.cycles, s.breakdown, s.busy, run.instructions, run.counts, run.points, regs)


def _parse(asm: str) -> list[Instr]:
    from zomboss.targets.plena.asm import parse_program

    return list(parse_program(_plena()[0], asm, "t.asm").instrs)


def _plena_default(wid: str) -> list[Instr]:
    from zomboss.targets.plena import TARGET

    inst = TARGET.instance(TARGET.workload(wid), {})
    return list(TARGET.kernel(inst, None).program.instrs)


# under half a second each (the rest take 1 to 80 s: `make test-slow`)
FAST = (
    "rope_4x64",
    "rope_64x64",
    "rope_256x64",
    "rope_64x128",
    "rope_512x128",
    "rms_4x384",
    "rms_64x384",
    "rms_64x576",
    "rms_16x2048",
    "rms_4x4096",
    "sm_64x64",
    "sm_16x64",
    "sm_64x128",
    "sm_32x256",
    "attn_64",
)


def _suite() -> list[str]:
    from zomboss.targets.plena.suite import SUITE

    return [w.id for w in SUITE]


@pytest.mark.parametrize("wid", [pytest.param(w, marks=() if w in FAST else pytest.mark.slow) for w in _suite()])
def test_plena_defaults_replayed_time_as_simulated(wid: str) -> None:
    """Every suite default (the slow ones in `make test-slow`)."""
    sim = _plena()[1]
    instrs = _plena_default(wid)
    full, ext = sim.run(instrs), sim.run(instrs, extrapolate=True)
    assert _timed(ext) == _timed(full)
    assert full.extrapolation is None and ext.extrapolation is not None
    if wid == "attn_64":
        assert ext.extrapolation["replayed"] > 0 and ext.extrapolation["instructions"] > 4000


@st.composite
def _looped(draw: st.DrawFn, depth: int = 0) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        if depth < 2 and draw(st.integers(0, 2)) == 0:
            k = 10 + depth
            body = draw(_looped(depth + 1))
            lines.append(f"C_LOOP_START gp{k}, {draw(st.integers(1, 60))}\n{body}C_LOOP_END gp{k}")
        else:
            lines.append(_line(draw))
    return "\n".join(lines) + "\n"


REPLAYED: list[int] = []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_looped())
def test_random_looped_register_programs_replay_as_simulated(asm: str) -> None:
    """Final registers included: a wrong step would show there even where timing hides it."""
    sim = _plena()[1]
    instrs = _parse(asm)

    def outcome(extrapolate: bool) -> Any:
        try:
            run = sim.run(instrs, extrapolate=extrapolate)
        except Exception as e:  # noqa: BLE001 - the same refusal either way
            return (type(e).__name__, str(e))
        if run.extrapolation:
            REPLAYED.append(run.extrapolation["replayed"])
        return _timed(run)

    assert outcome(True) == outcome(False)


def test_zz_some_random_programs_replayed() -> None:
    """The draws above replay loops (they would compare full simulation with itself otherwise)."""
    if REPLAYED:  # run in this process
        assert sum(REPLAYED) > 0


def test_a_replayed_loop_counts_against_the_instruction_budget() -> None:
    sim = _plena()[1]
    instrs = _parse("C_LOOP_START gp10, 500\nS_ADDI_INT gp1, gp1, 3\nS_ADDI_INT gp2, gp1, 1\nC_LOOP_END gp10\n")
    total = sim.run(instrs).instructions
    ext = sim.run(instrs, extrapolate=True, max_instructions=total)
    assert ext.instructions == total and ext.extrapolation is not None and ext.extrapolation["replayed"] == 1
    for extrapolate in (False, True):
        with pytest.raises(LimitError, match=f"more than {total - 1:,} instructions"):
            sim.run(instrs, extrapolate=extrapolate, max_instructions=total - 1)


def test_vta_timing_evaluations_do_not_change() -> None:
    """VTA has no hardware loops: nothing replays and the report gains nothing."""
    t = get_target("vta")
    inst = t.instance(t.workload("dense_128"), {}, 0)
    m = t.reference_mappings(inst.workload, {})["library"]
    a, b = t.evaluate(inst, m, Mode.TIMING), t.evaluate(inst, m, Mode.TIMING, extrapolate=False)
    assert (a.cycles, a.breakdown, a.instructions) == (b.cycles, b.breakdown, b.instructions)
    assert "extrapolation" not in a.report and a.report.keys() == b.report.keys()


def test_a_loop_whose_instances_show_no_period_is_no_longer_watched():
    """Watching costs more than it skips on a loop that never repeats: after GIVE_UP instances of
    one loop body closed without a period (none replayed), later instances are not watched; a
    loop body that was replayed once stays watched."""
    from zomboss.machine.replay import GIVE_UP, Replay

    rep = Replay(("gp",), (), {"gp": 16})
    for instance in range(GIVE_UP):
        loop = (7, "gp", instance)
        assert rep.wants(1, loop, 100, 10) is None  # its first jump back is only noted
        assert rep.wants(1, loop, 99, 20) is not None  # watched from the second
        rep.forget(1)  # closed before a period showed
    assert rep.wants(1, (7, "gp", 9), 100, 10) is None
    assert rep.wants(1, (7, "gp", 9), 99, 20) is None  # given up
    rep.forget(1)
    assert rep.wants(1, (8, "gp", 9), 100, 10) is None and rep.wants(1, (8, "gp", 9), 99, 20) is not None
    rep.forget(1)
    rep.periodic.add(7)  # an instance of it was replayed: it is worth watching
    assert rep.wants(1, (7, "gp", 9), 100, 10) is None and rep.wants(1, (7, "gp", 9), 99, 20) is not None


def test_a_loop_too_short_to_gain_from_a_replay_is_not_watched():
    """At a loop's second jump back, its first iteration's length and counter step tell what a
    replay could skip: under MIN_GAIN instructions, it is not marked (a mark costs what several
    instructions do); a loop whose counter is under SHORT is not even noted."""
    from zomboss.machine.replay import MIN_GAIN, SHORT, Replay

    rep = Replay(("gp",), (), {"gp": 16})
    assert rep.wants(0, (3, "gp", 1), SHORT - 1, 10) is None and not rep.open
    assert rep.wants(0, (3, "gp", 1), 10, 10) is None and rep.open
    assert rep.wants(0, (3, "gp", 1), 9, 12) is None  # 2 instructions per iteration, 9 iterations left
    assert rep.wants(0, (3, "gp", 1), 8, 14) is None  # and not again
    rep.forget(0)
    assert not rep.open and not rep.no_period  # given up for its length, not for want of a period
    long = 10 * MIN_GAIN
    assert rep.wants(0, (3, "gp", 1), long, 10) is None
    assert rep.wants(0, (3, "gp", 1), long - 1, 12) is not None


def test_loops_whose_accesses_advance_are_replayed():
    """PLENA's loops stream through memory: each period's operations access further on. They
    are replayed with their footprints moved on, period by period, and time as simulated."""
    sim = _plena()[1]
    asm = (
        "S_ADDI_INT gp1, gp0, 0\nC_SET_ADDR_REG a0, gp0, gp1\nS_ADDI_INT gp2, gp0, 128\nC_SET_STRIDE_REG gp2\n"
        "S_ADDI_INT gp3, gp0, 0\nS_ADDI_INT gp2, gp0, 0\n"
        "C_LOOP_START gp5, 60\nH_PREFETCH_V gp3, gp2, a0, 1, 0\nS_ADDI_INT gp3, gp3, 256\n"
        "S_ADDI_INT gp2, gp2, 512\nC_LOOP_END gp5\n"
    )
    instrs = _parse(asm)
    full, ext = sim.run(instrs), sim.run(instrs, extrapolate=True)
    assert _timed(ext) == _timed(full)
    assert ext.extrapolation is not None and ext.extrapolation["replayed"] == 1
    assert ext.extrapolation["instructions"] > 150


def test_moves_are_found_only_where_operations_differ_by_their_footprints():
    from zomboss.machine.replay import _moved, _moves
    from zomboss.machine.timing import Op

    a = Op("dma", 4, (), (), True, 1, None, (("vram", 0, 4),), (("hbm", 8, 9),), "LD")
    b = Op("dma", 4, (), (), True, 1, None, (("vram", 4, 8),), (("hbm", 8, 9),), "LD")
    assert _moves([a], [b]) == [(0, ((4, 4), (0, 0)))]
    assert _moved(b, ((4, 4), (0, 0)), 2).reads == (("vram", 12, 16),)
    row = ("dma", 4, (), (), True, 1, None, (("vram", 0, 4),), (), "LD")
    assert _moved(row, ((4, 5),), 3) == ("dma", 4, (), (), True, 1, None, (("vram", 12, 19),), (), "LD")
    for other in (
        Op("dma", 5, (), (), True, 1, None, (("vram", 4, 8),), (("hbm", 8, 9),), "LD"),  # another latency
        Op("dma", 4, (), (), True, 1, None, (("sram", 4, 8),), (("hbm", 8, 9),), "LD"),  # another memory
        Op("dma", 4, (), (), True, 1, None, (), (("hbm", 8, 9),), "LD"),  # another count of spans
    ):
        assert _moves([a], [other]) is None
    assert _moves([a, a], [a, a]) == []


def test_plena_defaults_watch_fewer_loops_with_the_same_cycles():
    t = get_target("plena")
    wl = t.workload("rms_64x384")
    inst = t.instance(wl, {})
    k = t.kernel(inst, None)
    sim = GenericSim(inst.cfg.kb)
    full, ext = sim.run(k.program.instrs), sim.run(k.program.instrs, extrapolate=True)
    assert ext.cycles == full.cycles and ext.schedule.breakdown == full.schedule.breakdown
    assert ext.extrapolation is not None and ext.extrapolation["loops"] < 71  # 71 watched without the give-up
