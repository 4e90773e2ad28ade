"""Control semantics (plena.md §6.5): the address register, the CSRs, and hardware loops
(with the bookkeeping C_BREAK can invalidate)."""

from __future__ import annotations

from zomboss.program import Instr

from .machine import Fault, Machine, Runner, Semantics, always

SEMANTICS: dict[str, Semantics] = {}
_CSR = {"C_SET_SCALE_REG": "scale", "C_SET_STRIDE_REG": "stride", "C_SET_V_MASK_REG": "v_mask"}


@always(SEMANTICS, "C_SET_ADDR_REG")
def _set_addr(ins: Instr, pc: int, m: Machine) -> Runner:
    A, gp = m.a, m.gp
    ra, rhi, rlo = ins.args
    return lambda: A.__setitem__(ra, (gp[rhi] << 32) | gp[rlo])


@always(SEMANTICS, *_CSR)
def _set_csr(ins: Instr, pc: int, m: Machine) -> Runner:
    csr, gp = m.csr, m.gp
    (rs,) = ins.args
    key = _CSR[ins.op]
    return lambda: csr.__setitem__(key, gp[rs])


@always(SEMANTICS, "C_LOOP_START")
def _loop_start(ins: Instr, pc: int, m: Machine) -> Runner:
    """Opens a loop of `count` iterations counted down in gp[rd]; the closure records its own
    program counter and line (so identical C_LOOP_STARTs never share one)."""
    gp, loops = m.gp, m.loops
    rd, count = ins.args

    def run() -> None:
        if count < 1:
            raise Fault("loop.count", "a hardware loop needs a count >= 1", {"imm": count})
        if rd:
            gp[rd] = count
        loops.append([pc, rd, m.executed, ins.line, count])

    return run


@always(SEMANTICS, "C_LOOP_END")
def _loop_end(ins: Instr, pc: int, m: Machine) -> Runner:
    gp, loops = m.gp, m.loops
    (rd,) = ins.args

    def loop_end() -> int | None:
        for pos in range(len(loops) - 1, -1, -1):
            if loops[pos][1] == rd:
                break
        else:
            raise Fault("loop.end", f"C_LOOP_END gp{rd}: no open loop is counted by gp{rd}", {"rd": rd})
        v = gp[rd]
        if v > 1:
            if rd:
                gp[rd] = v - 1
            loops[pos][2] = m.executed
            return loops[pos][0] + 1
        if rd:
            gp[rd] = 0
        del loops[pos]
        return None

    return loop_end


@always(SEMANTICS, "C_BREAK")
def _break(ins: Instr, pc: int, m: Machine) -> Runner:
    gp, loops = m.gp, m.loops

    def run() -> None:
        if not loops:
            raise Fault("loop.break", "C_BREAK with no open loop", {})
        reg = loops.pop()[1]
        if reg:
            gp[reg] = 0

    return run


PC_DEPENDENT = frozenset({"C_LOOP_START"})  # its closure records its own program counter and line
# What a straight-line block of the fast run loop ends with: the loop-state changes (a loop jumps
# back to the instruction after its C_LOOP_START).
BLOCK_ENDS = frozenset({"C_LOOP_START", "C_LOOP_END", "C_BREAK"})
