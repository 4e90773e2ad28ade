"""Reading a program of a target: `MNEMONIC op, op` lines (`ir.parse_lines`) checked against
the signatures its KB's doc declares (mnemonics, arity, operand kinds), and writing one in the
form it reads back (`program_text`)."""

from __future__ import annotations

import fnmatch

from zomboss.knowledge import KB
from zomboss.program.ir import Program, ProgramSyntaxError, parse_lines


def parse_program(kb: KB, text: str, path: str) -> Program:
    """Read a program in `MNEMONIC op, op` form, checking mnemonics, arity and operand kinds
    against the doc's signatures (register operands need their file's prefix)."""
    prefixes = list(kb.regfiles)
    out = []
    for instr, kinds in parse_lines(text, path, prefixes):
        ins = kb.instrs.get(instr.op)
        if ins is None:
            near = sorted(
                m
                for m in kb.instrs
                if m.lower() == instr.op.lower() or fnmatch.fnmatch(m.lower(), instr.op.lower()[:3] + "*")
            )
            hint = f" (did you mean {', '.join(near[:4])}?)" if near else ""
            raise ProgramSyntaxError(f"{path}:{instr.line}:1: unknown instruction {instr.op!r} for {kb.target}{hint}")
        if len(instr.args) != len(ins.operands):
            sig = ", ".join(o.name for o in ins.operands)
            raise ProgramSyntaxError(
                f"{path}:{instr.line}:1: {ins.name} takes {len(ins.operands)} operands ({sig}), got {len(instr.args)}"
            )
        for o, k in zip(ins.operands, kinds, strict=True):
            want = o.kind if o.kind in kb.regfiles else None
            if want != k:
                what = f"a {want} register (e.g. {want}1)" if want else "an integer"
                got = f"register {k}" if k else "an integer"
                raise ProgramSyntaxError(
                    f"{path}:{instr.line}:1: operand {o.name} of {ins.name} must be {what}, got {got}"
                )
        out.append(instr)
    return Program(kb.target, tuple(out), {"source": path})


def program_text(kb: KB, program: Program) -> str:
    """The program in the `MNEMONIC op, op` form `parse_program` reads: register operands
    written with their register file's name (`gp3`), as the doc's signatures declare them."""
    prefixes: dict[str, dict[int, str]] = {}
    lines = []
    for ins in program.instrs:
        pre = prefixes.get(ins.op)
        if pre is None:
            sig = kb.instrs[ins.op]
            pre = prefixes[ins.op] = {i: o.kind for i, o in enumerate(sig.operands) if o.kind in kb.regfiles}
        lines.append(ins.text(pre) + "\n")
    return "".join(lines)
