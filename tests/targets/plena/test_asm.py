"""Reading PLENA assembly, including the variant forms PLENA's own compiler emits."""

from __future__ import annotations

import pytest
from zomboss.targets.plena import TARGET
from zomboss.targets.plena.asm import parse_program, register_positions

from zomboss.errors import ZombossError
from zomboss.program import ProgramSyntaxError


def one(cfg, line: str):
    return parse_program(cfg.kb, line, "t.asm").instrs[0]


def test_canonical_forms_and_comments(cfg) -> None:
    prog = parse_program(
        cfg.kb, "M_MM 0, gp2, gp1 ; comment\n// whole-line comment\nM_TMM 0, gp1, gp2\nC_BREAK\n", "t.asm"
    )
    assert [(i.op, i.args, i.line) for i in prog.instrs] == [
        ("M_MM", (0, 2, 1), 1),
        ("M_TMM", (0, 1, 2), 3),
        ("C_BREAK", (), 4),
    ]
    assert prog.target == "plena" and prog.meta["source"] == "t.asm"


@pytest.mark.parametrize(
    ("text", "op", "args"),
    [
        ("V_ADD_VV gp1, gp2, gp3", "V_ADD_VV", (1, 2, 3, 0)),  # omitted mask -> 0
        ("V_MUL_VF gp1, gp2, f3", "V_MUL_VF", (1, 2, 3, 0)),
        ("V_SUB_VF gp1, gp2, f3, 0", "V_SUB_VF", (1, 2, 3, 0, 0)),  # omitted order -> 0
        ("V_EXP_V gp4, gp4, 0, 0", "V_EXP_V", (4, 4, 0)),  # 4th operand never encoded
        ("V_EXP_V gp4, gp4", "V_EXP_V", (4, 4, 0)),
        ("V_RED_SUM f2, gp3, 0, 0", "V_RED_SUM", (2, 3)),  # mask operands never encoded
        ("V_RED_SUM f2, gp3, 1", "V_RED_SUM", (2, 3)),
        ("S_RECI_FP f3, f3, 0", "S_RECI_FP", (3, 3)),
        ("S_EXP_FP f1, f2, 0", "S_EXP_FP", (1, 2)),
        ("M_MV_WO gp5, gp0, 8", "M_MV_WO", (5, 8)),
        ("H_PREFETCH_V gp1, gp2, a3, 0, 0, 0", "H_PREFETCH_V", (1, 2, 3, 0, 0)),
        ("M_BTMV 0, gp0, gp5", "M_BTMV", (0, 0, 5)),  # a bare 0 in the register slot is gp0
        ("V_TOPK gp1, gp2, gp3", "V_TOPK", (1, 2, 3, 0)),
    ],
)
def test_plena_compiler_variants_are_normalized(cfg, text: str, op: str, args: tuple[int, ...]) -> None:
    i = one(cfg, text)
    assert (i.op, i.args) == (op, args)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("M_FOO gp1", "unknown PLENA instruction 'M_FOO'"),
        ("m_mm 0, gp1, gp2", "did you mean M_MM"),
        ("V_PS_V gp1, gp2", "exists only in PLENA's RTL"),
        ("C_HADAMARD_TRANSFORM gp1", "exists only in PLENA's RTL"),
        ("M_MM 0, gp1", "M_MM takes 3 operands (rd, rs1, rs2), got 2"),
        ("M_MM gp0, gp1, gp2", "operand 1 (rd) of M_MM must be an integer, got register gp0"),
        ("S_ADDI_INT gp1, 5, gp2", "operand 2 (rs1) of S_ADDI_INT must be a gp register"),
        ("V_ADD_VF gp1, gp2, gp3, 0", "operand 3 (rs2) of V_ADD_VF must be a f register"),
        ("S_ADD_FP f1, f2, f3, 9", "S_ADD_FP takes 3 operands"),
        ("V_RED_SUM f2, gp3, gp4", "V_RED_SUM takes 2 operands"),  # a register is never silently dropped
    ],
)
def test_bad_programs_are_refused_with_a_location(cfg, text: str, message: str) -> None:
    with pytest.raises(ProgramSyntaxError, match="t.asm:1:") as e:
        parse_program(cfg.kb, text, "t.asm")
    assert message in str(e.value)


def test_read_program_reports_unreadable_files(tmp_path) -> None:
    p = tmp_path / "k.asm"
    p.write_text("S_ADDI_INT gp1, gp0, 3\n")
    assert TARGET.read_program(p, {}).instrs[0].args == (1, 0, 3)
    with pytest.raises(ZombossError, match="cannot read"):
        TARGET.read_program(tmp_path / "missing.asm", {})
    (tmp_path / "bin.asm").write_bytes(b"\xff\xfe")
    with pytest.raises(ZombossError, match="not UTF-8"):
        TARGET.read_program(tmp_path / "bin.asm", {})


def test_register_positions(cfg) -> None:
    assert register_positions(cfg.kb, "H_PREFETCH_M") == ((0, "gp"), (1, "gp"), (2, "a"))
    assert register_positions(cfg.kb, "V_SUB_VF") == ((0, "gp"), (1, "gp"), (2, "f"))
