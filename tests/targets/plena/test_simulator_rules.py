"""The simulator enforces the doc's rules: every `ok` example runs, every `bad` one is refused
with the rule it names (driven from plena.md itself), and the dynamic stream is traceable."""

from __future__ import annotations

import time

import pytest
from zomboss.targets.plena.asm import parse_program
from zomboss.targets.plena.config import DOC
from zomboss.targets.plena.hwloop import min_executed
from zomboss.targets.plena.simulator import simulate, trace

from zomboss.errors import IllegalProgram
from zomboss.knowledge import load_kb
from zomboss.legality import Checker
from zomboss.util import LimitError

KB = load_kb(DOC)
EXAMPLES = [pytest.param(e, id=f"{e.rule}-{'ok' if e.ok else 'bad'}") for e in KB.examples]


@pytest.mark.parametrize("example", EXAMPLES)
def test_doc_examples(cfg, example) -> None:
    prog = parse_program(cfg.kb, example.text, f"{DOC.name}:{example.loc.line}")
    if example.ok:
        simulate(prog, cfg)
        return
    with pytest.raises(IllegalProgram) as e:
        simulate(prog, cfg)
    assert example.rule in {v.rule for v in e.value.violations}


def test_every_instruction_rule_has_both_examples() -> None:
    have = {(e.rule, e.ok) for e in KB.examples}
    for r in KB.rules:
        if r.patterns and not r.generated:
            assert (r.id, True) in have and (r.id, False) in have, r.id


def test_refusal_names_rule_line_and_values(cfg) -> None:
    prog = parse_program(
        cfg.kb, "S_ADDI_INT gp1, gp0, 100\nS_ADDI_INT gp2, gp0, 64\nV_ADD_VV gp2, gp1, gp2, 0\n", "k.asm"
    )
    with pytest.raises(IllegalProgram) as e:
        simulate(prog, cfg)
    v = e.value.violations[0]
    assert (v.rule, v.line, v.index, v.op, v.source) == ("v.rows3", 3, 2, "V_ADD_VV", "k.asm")
    assert v.values["rs1.val"] == 100 and "plena.md:" in v.doc_loc
    assert str(v).startswith("k.asm:3: V_ADD_VV: v.rows3")


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("V_ADD_VV gp16, gp0, gp0, 0", "V_ADD_VV.rd.reg"),
        ("S_ADD_FP f8, f1, f1", "S_ADD_FP.rd.reg"),
        ("H_PREFETCH_V gp0, gp0, a9, 0, 0", "H_PREFETCH_V.rs2.reg"),
        ("C_LOOP_START gp1, 4194304", "C_LOOP_START.imm.range"),
        ("V_SUB_VF gp0, gp0, f1, 0, 2", "V_SUB_VF.rorder.range"),
    ],
)
def test_generated_range_rules_are_enforced(cfg, text: str, rule: str) -> None:
    with pytest.raises(IllegalProgram) as e:
        simulate(parse_program(cfg.kb, text, "t"), cfg)
    assert rule in {v.rule for v in e.value.violations}


def test_rules_are_checked_inside_loops(cfg) -> None:
    # legal on the first two iterations, the third VRAM write-out would be misaligned
    text = """
S_ADDI_INT gp2, gp0, 0
C_LOOP_START gp1, 3
M_MM_WO gp2, gp0, 0
S_ADDI_INT gp2, gp2, 2
C_LOOP_END gp1
"""
    with pytest.raises(IllegalProgram) as e:
        simulate(parse_program(cfg.kb, text, "t"), cfg)
    v = e.value.violations[0]
    assert v.rule == "m.wo_offset" and v.line == 4 and v.index == 5


def test_unchecked_runs_still_stop_on_faults(cfg) -> None:
    prog = parse_program(cfg.kb, "S_ADDI_INT gp1, gp0, 100\nV_EXP_V gp1, gp1, 0\n", "t")
    with pytest.raises(IllegalProgram) as e:
        simulate(prog, cfg, check=False)
    assert e.value.violations[0].rule == "sim.vram_align"


def test_trace_expands_loops_with_register_values(cfg) -> None:
    text = """
S_ADDI_INT gp2, gp0, 64
C_LOOP_START gp1, 2
V_ADD_VF gp2, gp2, f0, 0
S_ADDI_INT gp2, gp2, 64
C_LOOP_END gp1
"""
    events = list(trace(parse_program(cfg.kb, text, "t"), cfg))
    assert [i.op for i, _ in events] == ["S_ADDI_INT", "C_LOOP_START", "V_ADD_VF", "S_ADDI_INT", "C_LOOP_END"] + [
        "V_ADD_VF",
        "S_ADDI_INT",
        "C_LOOP_END",
    ]
    assert events[2][1] == {0: 64, 1: 64, 2: 0} and events[5][1] == {0: 128, 1: 128, 2: 0}
    assert events[4][1] == {0: 2} and events[7][1] == {0: 1}
    checker = Checker(cfg.kb)
    assert checker.check(events) == []


def test_trace_ends_at_the_first_violation(cfg) -> None:
    prog = parse_program(cfg.kb, "S_ADDI_INT gp1, gp0, 100\nV_EXP_V gp1, gp1, 0\nS_ADDI_INT gp1, gp0, 1\n", "t")
    seen = list(trace(prog, cfg))
    assert [i.op for i, _ in seen] == ["S_ADDI_INT", "V_EXP_V"]
    assert [v.rule for v in Checker(cfg.kb).check(seen)] == ["v.rows2"]


def test_trace_of_a_clobbered_loop_counter_terminates(cfg) -> None:
    prog = parse_program(cfg.kb, "C_LOOP_START gp1, 2\nS_ADDI_INT gp1, gp0, 5\nC_LOOP_END gp1\n", "t")
    seen = list(trace(prog, cfg))  # unchecked, this loop would never end
    assert len(seen) == 2 and [v.rule for v in Checker(cfg.kb).check(seen)] == ["loop.counter"]


def test_trace_raises_on_faults_only_the_simulator_sees(cfg) -> None:
    prog = parse_program(cfg.kb, "C_LOOP_START gp1, 2\nC_BREAK\nC_LOOP_END gp1\n", "t")
    seen = []
    with pytest.raises(IllegalProgram) as e:
        for ev in trace(prog, cfg):
            seen.append(ev)
    assert len(seen) == 3 and e.value.violations[0].rule == "loop.end"


def test_runs_have_an_instruction_budget(cfg) -> None:
    # the body resets the loop counter (rule loop.counter, unchecked here): only the budget stops it
    endless = parse_program(cfg.kb, "C_LOOP_START gp1, 2\nS_ADDI_INT gp1, gp0, 5\nC_LOOP_END gp1\n", "t")
    legal = parse_program(cfg.kb, "C_LOOP_START gp1, 600\nS_ADDI_INT gp5, gp5, 1\nC_LOOP_END gp1\n", "t")
    for prog, check in ((endless, False), (legal, True)):
        with pytest.raises(
            LimitError,
            match=r"^t(:\d)?: .* more than the budget of 1,000 executed instructions \(raise it with --max-instructions N",
        ):
            simulate(prog, cfg, check=check, max_instructions=1000)


def test_loops_beyond_the_budget_are_refused_before_they_run(cfg) -> None:
    nested = (
        "C_LOOP_START gp1, 4194303\nC_LOOP_START gp2, 33000\nS_ADDI_INT gp5, gp5, 1\nC_LOOP_END gp2\nC_LOOP_END gp1\n"
    )
    prog = parse_program(cfg.kb, nested, "t")
    assert min_executed(prog, cfg.kb) == 1 + 4194303 * (1 + 33000 * 2 + 1)
    t0 = time.perf_counter()
    with pytest.raises(LimitError, match=r"its hardware loops execute at least 276,832,386,607 instructions"):
        simulate(prog, cfg, max_instructions=20_000_000)
    assert time.perf_counter() - t0 < 1
    # a loop that could end early counts once: C_BREAK, or a body that writes its counter
    for body, least in (("C_BREAK", 4), ("S_ADDI_INT gp1, gp0, 1", 4), ("C_LOOP_START gp1, 2", 6)):
        p = parse_program(cfg.kb, f"C_LOOP_START gp1, 1000\n{body}\nS_ADDI_INT gp5, gp5, 1\nC_LOOP_END gp1\n", "t")
        assert min_executed(p, cfg.kb) == least, body
    exact = parse_program(cfg.kb, "C_LOOP_START gp1, 10\nS_ADDI_INT gp5, gp5, 1\nC_LOOP_END gp1\n", "t")
    assert min_executed(exact, cfg.kb) == simulate(exact, cfg).instructions == 21
