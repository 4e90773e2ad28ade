"""The target-neutral program IR: instructions with integer operands, optionally kept as the
loop nest a lowering emitted (`ir`), and the reader of a target's program text against its
KB's signatures (`parse`). Imports `zomboss.errors` and the KB records (`zomboss.knowledge`).
"""

from __future__ import annotations

from zomboss.program.ir import Instr, Item, Loop, Program, ProgramSyntaxError, parse_lines
from zomboss.program.parse import parse_program, program_text

__all__ = ["Instr", "Item", "Loop", "Program", "ProgramSyntaxError", "parse_lines", "parse_program", "program_text"]
