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

    rep = Replay((), (), (), {})
    for instance in range(GIVE_UP):
        key = (1, 7, "gp", instance)
        assert rep.wants(key, 10)
        rep.watch[key] = []  # watched, then closed before a period showed
        rep.forget(1)
    assert not rep.wants((1, 7, "gp", 99), 10)
    assert rep.wants((1, 8, "gp", 0), 10)  # another loop body
    rep.periodic.add(7)  # an instance of it was replayed: it is worth watching
    rep.given_up.clear()
    assert rep.wants((1, 7, "gp", 100), 10)


def test_plena_defaults_watch_fewer_loops_with_the_same_cycles():
    t = get_target("plena")
    wl = t.workload("rms_64x384")
    inst = t.instance(wl, {})
    k = t.kernel(inst, None)
    sim = GenericSim(inst.cfg.kb)
    full, ext = sim.run(k.program.instrs), sim.run(k.program.instrs, extrapolate=True)
    assert ext.cycles == full.cycles and ext.schedule.breakdown == full.schedule.breakdown
    assert ext.extrapolation is not None and ext.extrapolation["loops"] < 71  # 71 watched without the give-up
