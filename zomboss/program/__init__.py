"""The target-neutral program IR: instructions with integer operands, optionally kept as the
loop nest a lowering emitted (`ir`). Imports only `zomboss.errors`.
"""

from __future__ import annotations

from zomboss.program.ir import Instr, Item, Loop, Program, ProgramSyntaxError, parse_lines

__all__ = ["Instr", "Item", "Loop", "Program", "ProgramSyntaxError", "parse_lines"]
