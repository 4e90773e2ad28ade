"""Reading PLENA assembly: `MNEMONIC op, op` lines checked against the ISA doc's signatures.

Operands follow PLENA's assembly order (plena.md §5). PLENA's own assembler also accepts a
few variant forms that its compiler emits; they are normalized here to the doc's signatures,
each for the reason PLENA's assembler gives it (the table `_COMPAT` below, documented in
plena.md §5): omitted trailing mask/order operands read as 0, operands the assembler never
encodes are dropped, and a bare integer in the register slot of M_BMV/M_BTMV names a register.
"""

from __future__ import annotations

from collections.abc import Callable

from zomboss.program import Instr, Program, ProgramSyntaxError, parse_lines

REG_PREFIXES = ("gp", "f", "a")

# Opcodes of the RTL that the emulator decodes as invalid (reference §2.1).
RTL_ONLY = {"V_PS_V": "0x31 (prefix scan)", "C_HADAMARD_TRANSFORM": "0x33"}

Kinds = tuple[str | None, ...]
Fix = Callable[[Instr, Kinds], tuple[Instr, Kinds] | None]


def _pad(n: int) -> Fix:
    """Append zero immediates up to n operands (PLENA's assembler defaults omitted masks to 0)."""

    def fix(i: Instr, k: Kinds) -> tuple[Instr, Kinds] | None:
        if len(i.args) >= n:
            return None
        extra = n - len(i.args)
        return Instr(i.op, i.args + (0,) * extra, i.line), k + (None,) * extra

    return fix


def _drop_trailing_ints(n: int) -> Fix:
    """Drop trailing integer operands beyond n (fields PLENA's assembler does not encode)."""

    def fix(i: Instr, k: Kinds) -> tuple[Instr, Kinds] | None:
        if len(i.args) <= n or any(x is not None for x in k[n:]):
            return None
        return Instr(i.op, i.args[:n], i.line), k[:n]

    return fix


def _drop_middle_register(i: Instr, k: Kinds) -> tuple[Instr, Kinds] | None:
    """`M_MV_WO gpD, gpX, imm`: PLENA encodes only rd and imm."""
    if len(i.args) == 3 and k[1] == "gp" and k[2] is None:
        return Instr(i.op, (i.args[0], i.args[2]), i.line), (k[0], None)
    return None


def _bare_register(i: Instr, k: Kinds) -> tuple[Instr, Kinds] | None:
    """`M_BTMV 0, gpM, gpV`: PLENA's parser reads a bare integer as a register index."""
    if k and k[0] is None:
        return i, ("gp",) + k[1:]
    return None


def _chain(*fixes: Fix) -> Fix:
    def fix(i: Instr, k: Kinds) -> tuple[Instr, Kinds] | None:
        changed = None
        for f in fixes:
            r = f(i, k)
            if r is not None:
                i, k = r
                changed = r
        return changed

    return fix


_COMPAT: dict[str, Fix] = {
    **{
        m: _pad(4)
        for m in ("V_ADD_VV", "V_SUB_VV", "V_MUL_VV", "V_ADD_VF", "V_MUL_VF", "V_MAX_VF", "V_MIN_VF", "V_TOPK")
    },
    "V_SUB_VF": _pad(5),
    "V_EXP_V": _chain(_pad(3), _drop_trailing_ints(3)),
    "V_RECI_V": _pad(3),
    "V_RED_MAX": _pad(3),
    "V_RED_SUM": _drop_trailing_ints(2),
    **{m: _drop_trailing_ints(2) for m in ("S_EXP_FP", "S_RECI_FP", "S_SQRT_FP")},
    "M_MV_WO": _drop_middle_register,
    **{m: _drop_trailing_ints(5) for m in ("H_PREFETCH_M", "H_PREFETCH_V", "H_STORE_V")},
    **{m: _bare_register for m in ("M_BMV", "M_BTMV")},
}


def parse_program(kb, text: str, path: str = "<program>") -> Program:
    """Parse assembly text into a Program whose operands match the doc's signatures.

    Raises ProgramSyntaxError naming file:line for unknown mnemonics, wrong operand counts
    and wrong operand kinds (a register where an integer belongs, or the other way round).
    """
    out: list[Instr] = []
    for instr, kinds in parse_lines(text, path, REG_PREFIXES):
        sig = kb.instrs.get(instr.op)
        if sig is None:
            if instr.op in RTL_ONLY:
                raise ProgramSyntaxError(
                    f"{path}:{instr.line}:1: {instr.op} (opcode {RTL_ONLY[instr.op]}) exists only in PLENA's RTL; "
                    "the emulator decodes it as invalid and Zomboss does not support it"
                )
            near = sorted(m for m in kb.instrs if m.lower() == instr.op.lower())
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise ProgramSyntaxError(f"{path}:{instr.line}:1: unknown PLENA instruction {instr.op!r}{hint}")
        fix = _COMPAT.get(instr.op)
        fixed = fix(instr, kinds) if fix is not None else None
        if fixed is not None:
            instr, kinds = fixed
        if len(instr.args) != len(sig.operands):
            names = ", ".join(o.name for o in sig.operands)
            raise ProgramSyntaxError(
                f"{path}:{instr.line}:1: {instr.op} takes {len(sig.operands)} operands ({names}), got {len(instr.args)}"
            )
        for pos, (o, k) in enumerate(zip(sig.operands, kinds, strict=True)):
            want = o.kind if o.kind in kb.regfiles else None
            if want != k:
                what = f"a {want} register (e.g. {want}1)" if want else "an integer"
                got = f"register {k}{instr.args[pos]}" if k else f"the integer {instr.args[pos]}"
                raise ProgramSyntaxError(
                    f"{path}:{instr.line}:1: operand {pos + 1} ({o.name}) of {instr.op} must be {what}, got {got}"
                )
        out.append(instr)
    return Program("plena", tuple(out), {"source": path})


def register_positions(kb, op: str) -> tuple[tuple[int, str], ...]:
    """(operand position, register file) of each register operand of a mnemonic."""
    sig = kb.instrs[op]
    return tuple((i, o.kind) for i, o in enumerate(sig.operands) if o.kind in kb.regfiles)
