"""Scalar unit semantics (plena.md §6.3): BF16 FP arithmetic, 32-bit integer arithmetic
(the address and loop bookkeeping), and moves between registers and the FP / INT SRAMs.
Writes to f0 and gp0 are dropped, as the emulator does."""

from __future__ import annotations

import math
from collections.abc import Callable

from zomboss.machine import exp_scalar, reci_scalar, sqrt_scalar
from zomboss.program import Instr

from .machine import MASK32, Fault, Machine, Runner, Semantics, always, data
from .numerics import bf16_scalar

SEMANTICS: dict[str, Semantics] = {}


def _nothing() -> None:
    return None


# -- FP -------------------------------------------------------------------------------------------


@data(SEMANTICS, "S_ADD_FP", "S_SUB_FP", "S_MUL_FP", "S_MAX_FP")
def _fp_binary(ins: Instr, pc: int, m: Machine) -> Runner:
    F = m.f
    fd, f1, f2 = ins.args
    if fd == 0:
        return _nothing  # writes to f0 are dropped (the emulator skips the instruction)
    if ins.op == "S_ADD_FP":
        return lambda: F.__setitem__(fd, bf16_scalar(F[f1] + F[f2]))
    if ins.op == "S_SUB_FP":
        return lambda: F.__setitem__(fd, bf16_scalar(F[f1] - F[f2]))
    if ins.op == "S_MUL_FP":
        return lambda: F.__setitem__(fd, bf16_scalar(F[f1] * F[f2]))

    def run() -> None:
        x, y = F[f1], F[f2]
        F[fd] = y if math.isnan(x) else x if math.isnan(y) else max(x, y)

    return run


def _exp(x: float) -> float:
    return exp_scalar(min(max(x, -88.0), 88.0)) if not math.isnan(x) else x


_UNARY = {"S_EXP_FP": _exp, "S_RECI_FP": reci_scalar, "S_SQRT_FP": sqrt_scalar}


@data(SEMANTICS, *_UNARY)
def _fp_unary(ins: Instr, pc: int, m: Machine) -> Runner:
    F = m.f
    fd, f1 = ins.args
    if fd == 0:
        return _nothing
    fn = _UNARY[ins.op]
    return lambda: F.__setitem__(fd, bf16_scalar(fn(F[f1])))


def _sram_move(name: str, rule: str, size: Callable[[Machine], int]) -> Callable[[Instr, int, Machine], Runner]:
    """S_LD_* / S_ST_*: a register from or to entry gp[rs] + imm of an SRAM; loads into
    register 0 are dropped (f0 stays zero: rule s.f0_load; gp0 is hard-wired)."""

    def decode(ins: Instr, pc: int, m: Machine) -> Runner:
        reg, rs, imm = ins.args
        gp, n = m.gp, size(m)
        fp = ins.op.endswith("_FP")
        regs: list = m.f if fp else m.gp
        mem = m.FS if fp else m.IS
        conv: Callable[[object], float | int] = float if fp else int  # type: ignore[assignment]
        load = ins.op.startswith("S_LD")

        def run() -> None:
            i = gp[rs] + imm
            if i >= n:
                raise Fault(rule, f"{name} address {i} is outside the {name} ({n})", {"address": i})
            if load:
                if reg:
                    regs[reg] = conv(mem[i])
            else:
                mem[i] = regs[reg]

        return run

    return decode


@data(SEMANTICS, "S_MAP_V_FP")
def _map_v(ins: Instr, pc: int, m: Machine) -> Runner:
    """S_MAP_V_FP: VLEN consecutive FP SRAM entries into one VRAM row."""
    V, FS, gp, row, VLEN = m.V, m.FS, m.gp, m.row, m.cfg.vlen
    rd, rs, imm = ins.args

    def run() -> None:
        i = gp[rs] + imm
        if i + VLEN > FS.size:
            raise Fault("s.map_window", f"FP SRAM window {i}..{i + VLEN - 1} is outside the FP SRAM", {"address": i})
        V[row(gp[rd])] = FS[i : i + VLEN]

    return run


# -- integer --------------------------------------------------------------------------------------


@always(SEMANTICS, "S_ADD_INT", "S_SUB_INT", "S_MUL_INT")
def _int_binary(ins: Instr, pc: int, m: Machine) -> Runner:
    gp = m.gp
    rd, r1, r2 = ins.args
    if rd == 0:
        return _nothing  # gp0 is hard-wired to zero
    if ins.op == "S_ADD_INT":
        return lambda: gp.__setitem__(rd, (gp[r1] + gp[r2]) & MASK32)
    if ins.op == "S_SUB_INT":
        return lambda: gp.__setitem__(rd, (gp[r1] - gp[r2]) & MASK32)
    return lambda: gp.__setitem__(rd, (gp[r1] * gp[r2]) & MASK32)


@always(SEMANTICS, "S_ADDI_INT")
def _addi(ins: Instr, pc: int, m: Machine) -> Runner:
    gp = m.gp
    rd, r1, imm = ins.args
    if rd == 0:
        return _nothing
    return lambda: gp.__setitem__(rd, (gp[r1] + imm) & MASK32)


@always(SEMANTICS, "S_LUI_INT")
def _lui(ins: Instr, pc: int, m: Machine) -> Runner:
    gp = m.gp
    rd, imm = ins.args
    val = (imm << 12) & MASK32
    if rd == 0:
        return _nothing
    return lambda: gp.__setitem__(rd, val)


data(SEMANTICS, "S_LD_FP", "S_ST_FP")(_sram_move("FP SRAM", "s.fpsram_range", lambda m: m.FS.size))
always(SEMANTICS, "S_LD_INT", "S_ST_INT")(_sram_move("INT SRAM", "s.intsram_range", lambda m: m.IS.size))

# What writes its first operand, a GP register, in a timing-only run (S_LD_INT aside: INT SRAM).
GP_WRITERS = frozenset({"S_ADD_INT", "S_SUB_INT", "S_MUL_INT", "S_ADDI_INT", "S_LUI_INT"})
