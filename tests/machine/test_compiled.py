"""The generic simulator's compiled effects (`zomboss.machine.compiled`) against the interpreter
(`GenericSim(kb, fast=False)`): the same memories, cycles, breakdown, unit busy times, counts and
effect points on whole kernels of the Gemmini, PLENA and VTA docs, and the same refusal (rule,
message, values, position) on illegal programs, checked and unchecked."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.targets.plena.test_generic import programs
from zomboss.errors import IllegalProgram
from zomboss.knowledge import KB
from zomboss.machine import GenericSim, Run, fp16_then_bf16, memories
from zomboss.machine import compiled as C
from zomboss.machine import effects as fx
from zomboss.machine.memories import Memories
from zomboss.program import Instr
from zomboss.target import Mode, get_target


@functools.cache
def _plena() -> tuple[KB, GenericSim, GenericSim]:
    from zomboss.targets.plena.config import PlenaConfig

    kb = PlenaConfig.from_params().kb
    return kb, GenericSim(kb), GenericSim(kb, fast=False)


def _outcome(sim: GenericSim, instrs: list[Instr], mem: Memories | None, check: bool) -> Any:
    """What a run leaves: its schedule, counts, points and memories, or its violation."""
    try:
        run = sim.run(instrs, mem, check=check)
    except IllegalProgram as e:
        v = e.violations[0]
        return ("refused", v.rule, v.message, v.doc_loc, v.index, v.line, repr(getattr(v, "values", None)))
    return _state(run, mem)


def _state(run: Run, mem: Memories | None) -> tuple:
    s = run.schedule
    arrays = tuple((k, a.dtype.str, a.tobytes()) for k, a in sorted(mem.arrays.items())) if mem is not None else ()
    return (
        s.cycles,
        sorted(s.breakdown.items()),
        sorted(s.busy.items()),
        s.start.tobytes(),
        s.end.tobytes(),
        run.instructions,
        run.points,
        sorted(run.counts.items()),
        arrays,
    )


def _both(kb: KB, fast: GenericSim, slow: GenericSim, instrs: list[Instr], init: Callable[[Memories], None]) -> None:
    """Functional (checked and unchecked) and timing-only runs agree in every respect."""
    for check in (True, False):
        got = []
        for sim in (fast, slow):
            mem = Memories(kb)
            init(mem)
            got.append(_outcome(sim, instrs, mem, check))
        assert got[0] == got[1], check
    assert _outcome(fast, instrs, None, False) == _outcome(slow, instrs, None, False)


def _plena_regs(mem: Memories) -> None:
    mem.arrays["fpsram"][:8, 0] = fp16_then_bf16(np.array([0.0, 1.5, -0.3, 3.0, 2.0**-8, 1e-6, 100.0, -7.25]))
    mem.arrays["intsram"][:8, 0] = np.array([0, 1, 7, 2**31 + 5, 2**32 - 1, 12, 1000, 3], dtype=np.uint32)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 3))
def test_random_plena_scalar_programs_agree_with_the_interpreter(asm: str, bad: int) -> None:
    """Register arithmetic (wrapping, signed and unsigned), loads and stores, loops, and
    refusals: `bad` adds an access outside the INT SRAM (an effect's bounds, unchecked)."""
    from zomboss.targets.plena.asm import parse_program

    kb, fast, slow = _plena()
    if bad == 1:
        asm += "S_LUI_INT gp9, 4194303\nS_LD_INT gp8, gp9, 7\n"
    elif bad == 2:
        asm += "S_ADDI_INT gp9, gp0, 262143\nS_ST_INT gp9, gp9, 1023\n"
    _both(kb, fast, slow, list(parse_program(kb, asm, "t.asm").instrs), _plena_regs)


def test_most_plena_effects_are_compiled_and_integer_registers_take_the_int_path() -> None:
    """The comparison above runs the compiled path (it would compare the interpreter with itself
    if nothing compiled)."""
    kb, fast, _ = _plena()
    views = memories.views(kb)
    effects = [e for i in kb.instrs.values() for e in i.effects]
    compiled = [e for e in effects if C.compile_effect(views, e) is not None]
    assert len(compiled) >= len(effects) // 2
    step = C._step(views, kb.instrs["S_ADDI_INT"].effects[0].assigns[0])
    assert step is not None and step.ints is not None


def test_a_wrong_compiled_operation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: an add off by one on the int path differs from the interpreter."""
    from zomboss.targets.plena.asm import parse_program

    kb = _plena()[0]
    monkeypatch.setitem(C._INT_OPS, "add", (lambda x, y: x + y + 1, 2))
    wrong, slow = GenericSim(kb), GenericSim(kb, fast=False)
    instrs = list(parse_program(kb, "S_ADDI_INT gp1, gp0, 5\nS_ST_INT gp1, gp0, 3\n", "t.asm").instrs)
    with pytest.raises(AssertionError):
        _both(kb, wrong, slow, instrs, _plena_regs)


def _plena_kernel(wid: str) -> None:
    from zomboss.targets.plena import TARGET

    inst = TARGET.instance(TARGET.workload(wid), {})
    k = TARGET.kernel(inst, None)
    hbm0, fp = inst.staged(k.layout)
    img = hbm0.array()
    kb = inst.cfg.kb

    def init(mem: Memories) -> None:
        mem.arrays["hbm"] = np.zeros(2 * img.size, dtype=np.uint8)
        mem.arrays["hbm"][: img.size] = img
        mem.arrays["fpsram"][: fp.size, 0] = fp16_then_bf16(fp)

    _both(kb, GenericSim(kb), GenericSim(kb, fast=False), list(k.program.instrs), init)


@pytest.mark.parametrize(
    "wid",
    [
        "rope_4x64",
        "sm_16x64",
        "rms_4x384",
        # the suite defaults (scripts/generic_sim_speed.py)
        *(
            pytest.param(w, marks=pytest.mark.slow)
            for w in ("lin_60m_kv", "rms_64x384", "sm_64x128", "ffn_16x128x256", "attn_64", "rope_64x128")
        ),
    ],
)
def test_plena_defaults_agree_with_the_interpreter(wid: str) -> None:
    _plena_kernel(wid)


def _gemmini_kernel(wid: str) -> None:
    from zomboss.targets.gemmini import TARGET
    from zomboss.targets.gemmini import generic as G

    inst = TARGET.instance(TARGET.workload(wid), {})
    program = TARGET.lower(inst, TARGET.reference_mappings(inst.workload, {})["library"])
    dram = inst.dram()
    fast = G.generic_sim(inst.cfg)
    slow = GenericSim(fast.kb, fast.macros, fast=False)

    def init(mem: Memories) -> None:
        mem.arrays["dram"] = np.zeros(len(dram.mem) + G.SLACK, dtype=np.uint8)
        mem.arrays["dram"][: len(dram.mem)] = dram.mem

    _both(fast.kb, fast, slow, list(program.instrs), init)


@pytest.mark.slow
@pytest.mark.parametrize("wid", ["odd_pad", "mm256"])
def test_gemmini_defaults_agree_with_the_interpreter(wid: str) -> None:
    _gemmini_kernel(wid)


@pytest.mark.parametrize("wid", ["dense_128", "dense_48x256x256_wrap"])
def test_vta_defaults_evaluate_as_the_interpreter_does(wid: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """VTA's suite results (cycles, breakdown, verification, report) do not depend on the path."""
    t = get_target("vta")
    inst = t.instance(t.workload(wid), {}, 0)
    m = t.reference_mappings(inst.workload, {})["library"]
    got = {}
    for fast in (True, False):
        t._sims.clear()  # type: ignore[attr-defined]
        monkeypatch.setattr(GenericSim.__init__, "__kwdefaults__", {"fast": fast})
        for mode in (Mode.VERIFIED, Mode.TIMING):
            ev = t.evaluate(inst, m, mode)
            rep = {k: v for k, v in ev.report.items() if k != "sim_wall_s"}
            got[fast, mode] = (ev.cycles, ev.verified, sorted(ev.breakdown.items()), ev.instructions, repr(rep))
    t._sims.clear()  # type: ignore[attr-defined]
    for mode in (Mode.VERIFIED, Mode.TIMING):
        assert got[True, mode] == got[False, mode]
    assert got[True, Mode.VERIFIED][1] is True


# ---- expressions at one point: the same values and errors as the interpreter's -----------------

_OPS = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "==", "!=", "<", ">=", "and", "or"]


@st.composite
def _exprs(draw: st.DrawFn, depth: int = 0) -> Any:
    from zomboss import expr as ex

    k = draw(st.integers(0, 6 if depth < 4 else 1))
    if k == 0:
        return ex.Int(draw(st.integers(-(1 << 40), 1 << 40) | st.integers(-3, 70)))
    if k == 1:
        return ex.Ref((draw(st.sampled_from(["x", "y", "z"])),))
    if k == 2:
        return ex.Un(draw(st.sampled_from(["neg", "not"])), draw(_exprs(depth + 1)))
    if k == 3:
        return ex.Cond(draw(_exprs(depth + 1)), draw(_exprs(depth + 1)), draw(_exprs(depth + 1)))
    return ex.Bin(draw(st.sampled_from(_OPS)), draw(_exprs(depth + 1)), draw(_exprs(depth + 1)))


def _value(f: Callable[[Any], Any], env: dict[str, int]) -> Any:
    import warnings

    from zomboss import expr as ex

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            v = f(env)
    except (ex.ExprError, ValueError, OverflowError, TypeError) as e:
        return ("error", type(e).__name__, str(e))
    v = int(np.asarray(v))
    return ("value", v) if abs(v) < 1 << 62 else ("huge",)  # beyond index arithmetic: not compared


@settings(max_examples=200, deadline=None)
@given(_exprs(), st.tuples(*[st.integers(-(1 << 31), 1 << 31) | st.integers(0, 70)] * 3))
def test_expressions_at_one_point_evaluate_as_the_interpreter_does(e: Any, xyz: tuple[int, int, int]) -> None:
    env = dict(zip("xyz", xyz, strict=True))
    want, got = _value(fx.vcompile(e), env), _value(C.scompile(e), env)
    if "huge" in (want[0], got[0]):
        return
    if want[0] == "error" and want[1] == "OverflowError":
        return  # NumPy refuses a Python int beyond int64 where Python computes it: outside int64
    assert got == want
