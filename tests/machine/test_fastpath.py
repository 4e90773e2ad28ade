"""Timing-only runs through the generated steps (`zomboss.machine.fastpath`) against the
reference path (`GenericSim.fast_timing = False`, the body of `GenericSim.run`): the same
schedule (cycles, breakdown, busy, start and end of every instruction), counts, points, final
registers and extrapolation report, or the same refusal (rule, message, doc location, index,
line, values) or error — on every suite default of VTA, Gemmini and PLENA (the slow ones in
`make test-slow`), on random legal and illegal programs (PLENA's register programs and looped
programs, Gemmini's instruction streams, a toy doc with every feature the generator handles:
wrapping signed and unsigned registers, shifts past int64, division by zero, register indices
out of range, queue arrays, interlocks, a DRAM channel, state records, loops), on every
example program the three docs' rules carry, and against the instruction budget. A wrong
generated operation is caught."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.machine.test_replay import _looped
from tests.targets.gemmini.conftest import prog
from tests.targets.gemmini.test_generic import streams
from tests.targets.plena.test_generic import programs
from zomboss.doc import parse_doc
from zomboss.errors import IllegalProgram
from zomboss.knowledge import KB, compile_doc
from zomboss.machine import GenericSim
from zomboss.machine import fastpath as F
from zomboss.machine import timing as T
from zomboss.program import Instr
from zomboss.target import get_target
from zomboss.util import LimitError


def _pair(sim: GenericSim) -> tuple[GenericSim, GenericSim]:
    """The simulator and its reference (the same KB and hooks, timing-only runs the old way)."""
    ref = GenericSim(sim.kb, sim.macros)
    ref.fast_timing = False
    return sim, ref


def _outcome(sim: GenericSim, instrs: list[Instr], **kw: Any) -> Any:
    """Everything a timing-only run leaves, or how it refuses the program."""
    try:
        run = sim.run(instrs, **kw)
    except IllegalProgram as e:
        return [("refused", v.rule, v.message, v.doc_loc, v.index, v.line, v.op, repr(v.values)) for v in e.violations]
    except Exception as e:  # noqa: BLE001 - the same error either way
        return (type(e).__name__, str(e))
    s = run.schedule
    assert run.registers is not None
    regs = [(k, a.dtype.str, a.tobytes()) for k, a in sorted(run.registers.arrays.items())]
    return (
        s.cycles,
        list(s.breakdown.items()),
        list(s.busy.items()),
        s.start.dtype.str,
        s.start.tobytes(),
        s.end.tobytes(),
        run.instructions,
        run.points,
        list(run.counts.items()),
        run.extrapolation,
        regs,
    )


def _agree(sim: GenericSim, instrs: list[Instr], **kw: Any) -> Any:
    fast, ref = _pair(sim)
    got = _outcome(fast, instrs, **kw)
    assert got == _outcome(ref, instrs, **kw)
    return got


# ---- suite defaults ----------------------------------------------------------------------------

PLENA_FAST = ("rope_64x128", "rms_64x384", "sm_64x128", "attn_64", "rope_4x64", "sm_16x64", "rms_4x384")


@functools.cache
def _plena_sim() -> GenericSim:
    from zomboss.targets.plena.config import PlenaConfig

    return GenericSim(PlenaConfig.from_params().kb)


def _plena_suite() -> list[str]:
    from zomboss.targets.plena.suite import SUITE

    return [w.id for w in SUITE]


@pytest.mark.parametrize(
    "wid", [pytest.param(w, marks=() if w in PLENA_FAST else pytest.mark.slow) for w in _plena_suite()]
)
def test_plena_defaults(wid: str) -> None:
    from zomboss.targets.plena import TARGET

    inst = TARGET.instance(TARGET.workload(wid), {})
    k = TARGET.kernel(inst, None)
    sim = GenericSim(inst.cfg.kb)
    instrs = list(k.program.instrs)
    for extrapolate in (False, True):
        got = _agree(sim, instrs, extrapolate=extrapolate)
        assert isinstance(got, tuple) and got[0] > 0


def _gemmini_suite() -> list[str]:
    from zomboss.targets.gemmini.suite import SUITE

    return [w.id for w in SUITE]


@pytest.mark.parametrize(
    "wid", [pytest.param(w, marks=() if w in ("mm256", "odd_pad") else pytest.mark.slow) for w in _gemmini_suite()]
)
def test_gemmini_defaults(wid: str) -> None:
    from zomboss.targets.gemmini import TARGET
    from zomboss.targets.gemmini import generic as G

    wl = TARGET.workload(wid)
    inst = TARGET.instance(wl, {})
    program = TARGET.lower(inst, TARGET.reference_mappings(wl, {})["library"])
    got = _agree(G.generic_sim(inst.cfg), list(program.instrs))
    assert isinstance(got, tuple) and got[0] > 0


def _vta_suite() -> list[str]:
    return [w.id for w in get_target("vta").suite()]


@pytest.mark.parametrize(
    "wid", [pytest.param(w, marks=() if w == "dense_128" else pytest.mark.slow) for w in _vta_suite()]
)
def test_vta_defaults(wid: str) -> None:
    t = get_target("vta")
    wl = t.workload(wid)
    inst = t.instance(wl, {}, 0)
    program = t.lower(inst, t.reference_mappings(wl, {})["library"])
    sim = GenericSim(t.kb(inst.params))  # type: ignore[attr-defined]
    got = _agree(sim, list(program.instrs))
    assert isinstance(got, tuple) and got[0] > 0


def test_the_suites_take_the_generated_steps() -> None:
    """Every PLENA and Gemmini instruction is generated, and PLENA's integer register effects run
    inline (the comparisons above would compare the reference with itself otherwise)."""
    from zomboss.targets.gemmini import generic as G
    from zomboss.targets.gemmini.config import GemminiConfig

    plena = _plena_sim()
    assert set(plena.kinds) == set(plena.plans)
    gemmini = G.generic_sim(GemminiConfig.default())
    assert set(gemmini.kinds) == set(gemmini.plans)
    for name in ("S_ADDI_INT", "S_ADD_INT", "S_LUI_INT", "C_LOOP_START", "C_LOOP_END", "S_ADD_FP", "S_RECI_FP"):
        assert "except _Slow" in plena.kinds[name].source, name


# ---- every example program of the docs' rules --------------------------------------------------


EXAMPLE_BUDGET = 5000  # instructions per example run (a few loop forever, or nearly)


def _examples(kb: KB) -> list[tuple[str, str]]:
    return [(f"{e.rule}:{'ok' if e.ok else 'bad'}:{k}", e.text) for k, e in enumerate(kb.examples)]


@pytest.mark.parametrize("target", ["vta", "gemmini", "plena"])
def test_rule_examples_run_alike(target: str) -> None:
    """Legal and illegal programs, unchecked: what the timing model and the register effects
    refuse (deadlocked pops, effects out of bounds, loop faults) they refuse alike."""
    if target == "vta":
        t = get_target("vta")
        sim = GenericSim(t.kb({}))  # type: ignore[attr-defined]
        from zomboss.program import parse_program
    elif target == "gemmini":
        from zomboss.targets.gemmini import generic as G
        from zomboss.targets.gemmini.asm import parse_program  # type: ignore[no-redef]
        from zomboss.targets.gemmini.config import GemminiConfig

        sim = G.generic_sim(GemminiConfig.default())
    else:
        from zomboss.targets.plena.asm import parse_program  # type: ignore[no-redef]

        sim = _plena_sim()
    outcomes = set()
    for name, text in _examples(sim.kb):
        try:
            instrs = list(parse_program(sim.kb, text, name).instrs)
        except Exception:  # noqa: BLE001, S112 - an example the assembler refuses: no run
            continue
        got = _agree(sim, instrs, max_instructions=EXAMPLE_BUDGET)
        outcomes.add("ran" if isinstance(got, tuple) and len(got) == 11 else "refused")
    assert "ran" in outcomes


# ---- a toy doc with every feature the generator handles ----------------------------------------

TOY = """
```isa
param two = 2
regfile r { count: 8, width: 32, type: int32 }
regfile g { count: 4, width: 32, type: u32 }
regfile fl { count: 4, width: 16, type: bf16 }
memory m { rows: 64, width: 1, type: int32 }
memory dram { external, type: int8, bandwidth: 4, latency: 5, outstanding: 2 }
interlock r, m
queue q[2] { from: ld, to: alu, depth: 4 }
state cfg { k: 1 }
state slot[4] { v: 0 }
layout word { width: 16, hi: 15..8, lo: 7..0 }
engine ld { queue: 2, inflight: 2, class: memory }
engine alu { class: compute }
instr LI(rd: r, imm: int 0..300)
  unit alu
  latency 1
  effect { r[rd] = fill(imm - 20) }
instr ADD(rd: r, rs: r)
  unit alu
  latency two
  effect { r[rd] = add(r[rd], r[rs]) }
instr MUL(rd: r, rs: r)
  unit alu
  latency 3
  issue 1
  effect { r[rd] = mul(r[rs], r[rs]) }
instr GADD(rd: g, rs: r)
  unit alu
  latency 1
  effect { g[rd] = add(g[rd], r[rs]) }
instr SHL(rd: g, rs: r, s: int 0..80)
  unit alu
  latency 1
  effect { g[rd] = fill(rs.val << s) }
instr DIV(rd: r, rs: r)
  unit alu
  latency 4
  effect { r[rd] = fill(rd.val / rs.val) }
instr IDX(rd: r, k: int 0..15)
  unit alu
  latency 1
  effect { r[rd + k] = fill(k) }
instr SEL(rd: r, rs: r)
  unit alu
  latency 1
  effect { r[rd] = fill(if rs.val > 5 then rs.val - 5 else 0) when rd != 0 and rs.val != 7 }
instr CFG(k: int 0..7)
  unit alu
  uses cfg as c
  sets cfg.k = k + c.k
  latency c.k % 5 + 1
instr PUT(i: int 0..3, w: word)
  unit ld
  let at = w.hi % 60
  sets slot[i].v = w.lo
  pushes q[w.lo % 3]
  writes m[at : at + 2]
  reads dram[w.hi : w.hi + w.lo]
  latency 2
instr GET(i: int 0..3, rd: r)
  unit alu
  uses slot[i] as s
  pops q[s.v % 3] when s.v > 0
  reads m[s.v % 60 : s.v % 60 + 1]
  latency s.v % 7 + 1
  effect { r[rd] = fill(s.v) }
instr LS(rd: r, imm: int 0..9)
  unit alu
  latency 1
  macro "loop_start"
  effect { r[rd] = fill(imm) }
instr LE(rd: r)
  unit alu
  latency 1
  macro "loop_end"
  effect { r[rd] = fill(if rd.val > 1 then rd.val - 1 else 0) }
instr BRK()
  unit alu
  latency 1
  macro "loop_break"
instr FLI(rd: fl, imm: int 0..300)
  unit alu
  latency 1
  effect { fl[rd] = fill(imm - 150) }
instr FOP(rd: fl, rs1: fl, rs2: fl, k: int 0..6)
  unit alu
  latency rs1.val % 5 + 1
  effect { fl[rd] = add(fl[rs1], fl[rs2]) when k == 0 }
  effect { fl[rd] = sub(fl[rs1], fl[rs2]) when k == 1 }
  effect { fl[rd] = mul(fl[rs1], fl[rs2]) when k == 2 }
  effect { fl[rd] = fmax(fl[rs1], fl[rs2]) when k == 3 }
  effect { fl[rd] = reci(fl[rs1]) when k == 4 }
  effect { fl[rd] = sqrt(fl[rs1]) when k == 5 }
  effect { fl[rd] = exp(fl[rs1]) when k == 6 }
```
"""


@functools.cache
def _toy() -> GenericSim:
    return GenericSim(compile_doc(parse_doc(TOY, "toy.md"), "toy", {}))


TOY_BUDGET = 20_000  # instructions a random toy program may execute (fixed draws; each stays fast)
REG = st.integers(0, 7) | st.integers(-2, 10)  # now and then out of the file: the reference's way


@st.composite
def _toy_line(draw: st.DrawFn) -> Instr:
    op = draw(
        st.sampled_from(
            ["LI", "ADD", "MUL", "GADD", "SHL", "DIV", "IDX", "SEL", "CFG", "PUT", "GET", "FLI", "FOP", "FOP"]
        )
    )
    if op == "LI":
        args: tuple[int, ...] = (draw(REG), draw(st.integers(0, 300)))
    elif op in ("ADD", "MUL", "DIV", "SEL"):
        args = (draw(REG), draw(REG))
    elif op == "GADD":
        args = (draw(st.integers(0, 3)), draw(REG))
    elif op == "SHL":
        args = (draw(st.integers(0, 3)), draw(REG), draw(st.integers(0, 80)))
    elif op == "IDX":
        args = (draw(REG), draw(st.integers(0, 15)))
    elif op == "CFG":
        args = (draw(st.integers(0, 7)),)
    elif op == "FLI":
        args = (draw(st.integers(0, 3)), draw(st.integers(0, 300)))
    elif op == "FOP":
        fr = st.integers(0, 3) | st.integers(-1, 5)
        args = (draw(fr), draw(fr), draw(fr), draw(st.integers(0, 6)))
    elif op == "PUT":
        args = (draw(st.integers(0, 3)), draw(st.integers(0, 1 << 16)))
    else:
        args = (draw(st.integers(0, 4)), draw(REG))
    return Instr(op, args, draw(st.integers(1, 99)))


@st.composite
def _toy_program(draw: st.DrawFn, depth: int = 0) -> list[Instr]:
    out: list[Instr] = []
    for _ in range(draw(st.integers(1, 8))):
        k = draw(st.integers(0, 5))
        if depth < 2 and k == 0:
            rd = 5 + depth
            body = draw(_toy_program(depth + 1))
            brk = [Instr("BRK", ())] if draw(st.integers(0, 9)) == 0 else []
            out += [Instr("LS", (rd, draw(st.integers(1, 9)))), *body, *brk, Instr("LE", (rd,))]
        elif k == 1 and draw(st.integers(0, 9)) == 0:
            out.append(Instr("LE", (draw(st.integers(0, 7)),)))  # a loop end without its loop
        else:
            out.append(draw(_toy_line()))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(_toy_program(), st.booleans())
def test_random_toy_programs_run_alike(instrs: list[Instr], extrapolate: bool) -> None:
    # a loop whose body rewrites its counter may run on: both paths stop at the same budget
    _agree(_toy(), instrs, extrapolate=extrapolate, max_instructions=TOY_BUDGET)


@pytest.mark.parametrize(
    ("program", "rule"),
    [
        ([Instr("PUT", (0, 0x0102)), Instr("GET", (0, 1))], "queue.index"),
        ([Instr("PUT", (0, 0x0101)), Instr("GET", (1, 1)), Instr("CFG", (1,)), Instr("GET", (0, 1))], None),
        ([Instr("PUT", (1, 0x0104)), Instr("GET", (1, 1)), Instr("GET", (1, 2))], "queue.deadlock"),
        ([Instr("LI", (1, 20)), Instr("DIV", (2, 1))], "effect.eval"),
        ([Instr("IDX", (3, 7))], "effect.bounds"),
        ([Instr("LE", (3,))], "loop.open"),
        ([Instr("BRK", ())], "loop.open"),
        ([Instr("ADD", (1, 2, 3))], "isa.arity"),
        ([Instr("NOPE", ())], "isa.arity"),
        ([Instr("LI", (1, 300)), Instr("SHL", (0, 1, 70)), Instr("SHL", (1, 1, 62)), Instr("GADD", (2, 1))], None),
        ([Instr("GADD", (2, 9))], "effect.bounds"),
        ([Instr("FLI", (0, 155)), *(Instr("FOP", (1 + k % 3, k % 4, 1 + k % 2, k % 7)) for k in range(12))], None),
    ],
)
def test_toy_refusals(program: list[Instr], rule: str | None) -> None:
    got = _agree(_toy(), program)
    if rule is None:
        assert isinstance(got, tuple) and len(got) == 11
    else:
        assert isinstance(got, list) and got[0][1] == rule


def test_the_instruction_budget_refuses_alike() -> None:
    program = [Instr("LS", (5, 9)), Instr("LS", (6, 9)), Instr("ADD", (1, 2)), Instr("LE", (6,)), Instr("LE", (5,))]
    total = _agree(_toy(), program)[6]
    for extrapolate in (False, True):
        assert _agree(_toy(), program, max_instructions=total, extrapolate=extrapolate)[6] == total
        got = _agree(_toy(), program, max_instructions=total - 1, extrapolate=extrapolate)
        assert got == ("LimitError", f"the program executes more than {total - 1:,} instructions")
    with pytest.raises(LimitError):
        _toy().run(program, max_instructions=total - 1)


# ---- random PLENA and Gemmini programs ---------------------------------------------------------


def _plena_programs() -> Any:
    return programs()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(st.data())
def test_random_plena_register_programs_run_alike(data: st.DataObject) -> None:
    from zomboss.targets.plena.asm import parse_program

    sim = _plena_sim()
    asm = data.draw(_plena_programs() if data.draw(st.booleans()) else _looped())
    instrs = list(parse_program(sim.kb, asm, "t.asm").instrs)
    for extrapolate in (False, True):
        _agree(sim, instrs, extrapolate=extrapolate)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(st.data())
def test_random_gemmini_streams_run_alike(data: st.DataObject) -> None:
    from zomboss.targets.gemmini import generic as G
    from zomboss.targets.gemmini.config import GemminiConfig

    lines, _ = data.draw(streams())
    _agree(G.generic_sim(GemminiConfig.default()), list(prog(*lines).instrs))


# ---- the comparison can fail -------------------------------------------------------------------


def test_a_wrong_generated_operation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """An add off by one on the inline int path differs from the reference."""
    monkeypatch.setitem(F._INT_OPS, "add", (2, "({0} + {1} + 1)"))
    sim = GenericSim(_toy().kb)
    with pytest.raises(AssertionError):
        _agree(sim, [Instr("LI", (1, 30)), Instr("ADD", (1, 1))])


def test_a_wrong_schedule_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scoreboard that lets a read of `m` pass the write before it differs from the reference's."""
    program = [Instr("PUT", (0, 0x0000)), Instr("GET", (0, 1))]
    _agree(_toy(), program)
    monkeypatch.setattr(T._Board, "mark", lambda self, lo, hi, end, write: None)
    with pytest.raises(AssertionError):
        _agree(_toy(), program)


def _scoreboards(accesses: list[tuple[int, int, int, int, bool]]) -> Callable[[T._Scoreboard], list[int]]:
    """Each access starts `wait` cycles after it is ready (the scheduler may hold it longer for
    other reasons) and takes `lat`, as the scheduler marks it: it never ends before it is ready."""

    def replay(b: T._Scoreboard) -> list[int]:
        out = []
        for lo, hi, wait, lat, write in accesses:
            ready = b.ready(lo, hi, write)
            out.append(ready)
            b.mark(lo, hi, ready + wait + lat, write)
        out += [b.ready(lo, hi, w) for lo in range(-1, 40) for hi in range(lo, lo + 4) for w in (False, True)]
        return out

    return replay


ACCESS = st.tuples(st.integers(0, 30), st.integers(0, 8), st.integers(0, 20), st.integers(0, 100), st.booleans())


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(ACCESS, max_size=40))
def test_the_short_cut_scoreboard_answers_as_the_reference(accesses: list[tuple[int, int, int, int, bool]]) -> None:
    """Every answer, to the accesses and to every stretch of up to three rows afterwards, although
    the short cut keeps fewer segments (a write that covers several leaves one)."""
    replay = _scoreboards([(lo, lo + n, wait, lat, w) for lo, n, wait, lat, w in accesses])
    assert replay(T._Board()) == replay(T._Scoreboard())


def test_a_write_over_many_segments_leaves_one() -> None:
    """Reads split a memory into many segments; a write over them all, which waited for them,
    leaves one segment where the reference keeps them all (the long convolutions' scoreboards
    grew without bound)."""
    fast, ref = T._Board(), T._Scoreboard()
    for b in (fast, ref):
        for k in range(50):
            b.mark(k, k + 1, 10 + k, False)
        b.mark(0, 50, b.ready(0, 50, True) + 5, True)
    assert len(fast.lo) == 1 and len(ref.lo) == 50
    assert [fast.ready(k, k + 2, w) for k in range(49) for w in (False, True)] == [
        ref.ready(k, k + 2, w) for k in range(49) for w in (False, True)
    ]


def test_a_timing_only_run_is_driven_by_fastrun_and_the_reference_flag_bypasses_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`GenericSim.run` hands timing-only runs to `fastrun.run_timing`; `fast_timing = False` does not."""
    from zomboss.machine import fastrun

    program = [Instr("LI", (1, 30)), Instr("ADD", (1, 1))]
    calls: list[int] = []
    real = fastrun.run_timing
    monkeypatch.setattr(fastrun, "run_timing", lambda *a, **k: calls.append(1) or real(*a, **k))
    sim, ref = _pair(GenericSim(_toy().kb))
    assert sim.run(program).cycles == ref.run(program).cycles
    assert calls == [1]
