"""A program written by `program_text` reads back as the same program: register operands carry
their file's prefix (a doc target's export wrote them bare, and its own reader refused the file)."""

from __future__ import annotations

from tests.toydoc import TOY_TEXT
from zomboss.doc import parse_doc
from zomboss.knowledge import compile_doc
from zomboss.program import Instr, Program, parse_program, program_text


def test_registers_are_written_with_their_prefix_and_read_back():
    kb = compile_doc(parse_doc(TOY_TEXT, "toy.md"), "toy", {})
    prog = Program("toy", (Instr("addi", (1, 2, 7)), Instr("vset", (3,)), Instr("vadd", (0, 1))), {})
    text = program_text(kb, prog)
    assert text.splitlines() == ["addi gp1, gp2, 7", "vset gp3", "vadd gp0, gp1"]
    back = parse_program(kb, text, "k.asm")
    assert [(i.op, i.args) for i in back.instrs] == [(i.op, i.args) for i in prog.instrs]


def test_the_hand_written_plena_export_writes_the_same_text():
    from zomboss.targets.plena.export import program_text as plena_text

    from zomboss.target import get_target

    t = get_target("plena")
    wl = t.workload("rms_4x384")
    kb = t.kb({})
    prog = t.lower(t.instance(wl, {}), t.reference_mappings(wl, {})["library"])
    assert plena_text(kb, prog) == program_text(kb, prog)
