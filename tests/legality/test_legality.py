"""Python checker vs ASP checker: the same doc rules, evaluated two ways, must agree."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zomboss.knowledge import load_kb
from zomboss.knowledge.asp import program_facts
from zomboss.knowledge.query import check_program
from zomboss.legality import Checker
from zomboss.program import Instr, ProgramSyntaxError, parse_program

TOY = Path(__file__).resolve().parents[1] / "data" / "toy.md"


@pytest.fixture(scope="module")
def kb():
    return load_kb(TOY)


def run(kb, text: str, regs=None):
    prog = parse_program(kb, text, "p.txt")
    ch = Checker(kb)
    ch.record = True
    py = ch.check((i, regs or {}) for i in prog.instrs)
    by_asp = check_program(kb, program_facts(kb, ch.events))
    assert {(v.rule, v.index) for v in py} == {(v.rule, v.pos - 1) for v in by_asp}
    return py


def test_state_tracking_and_values(kb):
    (v,) = run(kb, "config_ld 0, 16, 2\nload 4096, 0, 8, 4\n")
    assert v.rule == "load.block" and v.line == 2
    assert v.values == {"cols": 8, "dim": 4, "cfg.block_stride": 2, "rows": 4}
    assert "toy.md:" in v.doc_loc
    # config state 1 does not affect `load` (which uses state 0)
    assert run(kb, "config_ld 1, 16, 2\nconfig_ld 0, 16, 4\nload 4096, 0, 8, 4\n") == []


def test_range_rules_are_generated(kb):
    found = {v.rule for v in run(kb, "load 4096, 0, 9, 5\n")}
    assert {"load.cols.range", "load.rows.range"} <= found


def test_register_values_and_prev(kb):
    assert run(kb, "vset gp1\nvadd gp1, gp2\nvadd gp2, gp2\n", {0: 8, 1: 4}) == []
    found = [v.rule for v in run(kb, "vadd gp1, gp2\n", {0: 8, 1: 4})]
    assert found == ["vadd.after"]  # no previous instruction in the unit
    found = [v.rule for v in run(kb, "vset gp3\nvadd gp1, gp2\n", {0: 8, 1: 4})]
    assert found == ["vadd.after"]  # previous vset names another register
    found = [v.rule for v in run(kb, "vset gp1\nvadd gp1, gp2\nvadd gp1, gp3\n", {0: 6, 1: 4})]
    assert found.count("vadd.align") == 2


def test_fence_hazard(kb):
    text = "store 4096, 0, 2\n{}load 4100, 0, 4, 4\n"
    assert [v.rule for v in run(kb, text.format(""))] == ["fence.raw"]
    assert run(kb, text.format("fence\n")) == []
    # disjoint ranges need no fence
    assert run(kb, "store 4096, 0, 1\nload 8192, 0, 4, 4\n") == []


def test_program_reader_errors(kb):
    with pytest.raises(ProgramSyntaxError, match=r"p.txt:1:1: unknown instruction 'lod'"):
        parse_program(kb, "lod 1, 2, 3, 4", "p.txt")
    with pytest.raises(ProgramSyntaxError, match=r"p.txt:2:1: load takes 4 operands"):
        parse_program(kb, "fence\nload 1, 2\n", "p.txt")
    with pytest.raises(ProgramSyntaxError, match=r"operand rd of vadd must be a gp register"):
        parse_program(kb, "vadd 1, gp2", "p.txt")
    with pytest.raises(ProgramSyntaxError, match=r"p.txt:1:\d+: cannot read operand"):
        parse_program(kb, "load 1, 2, x, 4", "p.txt")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("config_ld"), st.integers(0, 2), st.integers(0, 64), st.integers(0, 8)),
            st.tuples(
                st.just("load"),
                st.sampled_from([0, 4096, 4100, 8192]),
                st.integers(0, 260),
                st.integers(0, 10),
                st.integers(0, 5),
            ),
            st.tuples(st.just("store"), st.sampled_from([4096, 4104, 8192]), st.integers(0, 300), st.integers(0, 5)),
            st.tuples(st.just("fence")),
        ),
        max_size=8,
    )
)
def test_python_and_asp_agree_on_random_programs(kb, instrs):
    text = "\n".join(f"{i[0]} {', '.join(map(str, i[1:]))}".strip() for i in instrs)
    run(kb, text)  # the assertion of agreement is inside


def test_checker_step_api(kb):
    ch = Checker(kb)
    assert ch.step(Instr("config_ld", (0, 16, 2), 1)) == []
    (v,) = ch.step(Instr("load", (4096, 0, 8, 4), 2))
    assert v.rule == "load.block" and v.index == 1


def test_mapping_checks(kb):
    from zomboss.legality import check_mapping_values

    ok = check_mapping_values(kb, "matmul", {"M": 64, "N": 16, "K": 16, "tile_i": 4, "tile_k": 4, "df": "os"}, "m.json")
    assert ok.legal
    bad = check_mapping_values(
        kb, "matmul", {"M": 16, "N": 16, "K": 16, "tile_i": 8, "tile_k": 16, "df": "ws"}, "m.json"
    )
    assert {v.rule for v in bad.violations} == {"map.fit", "map.cover"}
    assert set(bad.core) <= {"tile_i=8", "tile_k=16", "M=16", "N=16", "K=16", "df=ws"} and bad.core
