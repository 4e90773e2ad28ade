"""Hardware loops: down-counters, nesting, C_BREAK, and the per-iteration instruction guard."""

from __future__ import annotations

import pytest

from zomboss.errors import IllegalProgram


def test_counter_counts_down_and_ends_at_zero(run) -> None:
    asm = """
C_LOOP_START gp1, 3
S_ADD_INT gp5, gp5, gp1        ; sees 3, 2, 1
C_LOOP_END gp1
"""
    r = run(asm)
    assert r.gp[5] == 6 and r.gp[1] == 0
    assert r.counts == {"C_LOOP_END": 3, "C_LOOP_START": 1, "S_ADD_INT": 3} and r.instructions == 7


def test_nested_loops_rerun_the_inner_loop(run) -> None:
    asm = """
C_LOOP_START gp1, 4
C_LOOP_START gp2, 5
S_ADDI_INT gp3, gp3, 1
C_LOOP_END gp2
S_ADDI_INT gp4, gp4, 1
C_LOOP_END gp1
"""
    r = run(asm)
    assert r.gp[3] == 20 and r.gp[4] == 4 and r.counts["C_LOOP_START"] == 5


def test_break_closes_the_innermost_loop(run) -> None:
    asm = """
C_LOOP_START gp1, 2
S_ADDI_INT gp3, gp3, 1
C_LOOP_START gp2, 7
S_ADDI_INT gp4, gp4, 1
C_BREAK                        ; gp2's loop closes after one pass; execution falls through
"""
    r = run(asm)
    assert r.gp[2] == 0 and r.gp[1] == 2 and r.gp[4] == 1


def test_loop_end_after_break_is_refused(run) -> None:
    asm = """
C_LOOP_START gp1, 2
C_BREAK
C_LOOP_END gp1
"""
    with pytest.raises(IllegalProgram) as e:
        run(asm)
    v = e.value.violations[0]
    assert v.rule == "loop.end" and v.line == 4 and "no open loop" in v.message


def _guarded(config_for):
    return config_for({"max_loop_instructions": 5})


def test_guard_allows_exactly_the_budget(run, config_for) -> None:
    asm = "C_LOOP_START gp1, 3\n" + "S_ADDI_INT gp2, gp2, 1\n" * 4 + "C_LOOP_END gp1\n"  # 4 + C_LOOP_END = 5
    assert run(asm, config=_guarded(config_for)).gp[2] == 12


def test_guard_refuses_one_more(run, config_for) -> None:
    asm = "C_LOOP_START gp1, 3\n" + "S_ADDI_INT gp2, gp2, 1\n" * 5 + "C_LOOP_END gp1\n"
    with pytest.raises(IllegalProgram) as e:
        run(asm, config=_guarded(config_for))
    v = e.value.violations[0]
    assert v.rule == "loop.guard" and v.line == 7 and v.values["loop_line"] == 1 and v.values["count"] == 6
    assert "max_loop_instructions = 5" in v.message and v.doc_loc.endswith(tuple("0123456789"))


def test_guard_counts_inner_iterations_in_the_outer_loop(run, config_for) -> None:
    asm = """
C_LOOP_START gp1, 2
C_LOOP_START gp2, 2
S_ADDI_INT gp3, gp3, 1
C_LOOP_END gp2
C_LOOP_END gp1
"""  # outer iteration: inner start, 2 x (body + end), outer end = 6 > 5
    with pytest.raises(IllegalProgram) as e:
        run(asm, config=_guarded(config_for))
    assert e.value.violations[0].line == 6 and e.value.violations[0].values["loop_line"] == 2


def test_guard_resets_every_iteration(run, config_for) -> None:
    asm = "C_LOOP_START gp1, 50\nS_ADDI_INT gp2, gp2, 1\nC_LOOP_END gp1\n"
    assert run(asm, config=_guarded(config_for)).gp[2] == 50
