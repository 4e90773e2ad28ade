"""Matrix unit semantics (plena.md §6.1): the systolic products into the float32
accumulators and their BF16 write-outs to VRAM, as PLENA's emulator performs them."""

from __future__ import annotations

import numpy as np

from zomboss.machine import mac32
from zomboss.program import Instr

from .machine import Fault, Machine, Runner, Semantics, data
from .numerics import bf16_round

SEMANTICS: dict[str, Semantics] = {}


@data(SEMANTICS, "M_MM", "M_TMM")
def _mm(ins: Instr, pc: int, m: Machine) -> Runner:
    """M_MM / M_TMM: acc[BLEN, BLEN] += V rows · a BLEN-wide column slice of an MRAM tile."""
    MLEN, BLEN = m.cfg.mlen, m.cfg.blen
    V, MR, gp, row, tile = m.V, m.M, m.gp, m.row, m.tile
    transposed = ins.op == "M_TMM"
    rm, rv = (ins.args[2], ins.args[1]) if transposed else (ins.args[1], ins.args[2])
    acc: np.ndarray = m.m_acc

    def run() -> None:
        t, off = tile(gp[rm])
        c = off // MLEN
        if off % MLEN or c % BLEN:
            raise Fault("m.mm_slice", f"matrix offset {off} is not a BLEN-aligned column slice c*MLEN", {"offset": off})
        r = row(gp[rv], BLEN)
        if transposed:
            acc[...] = mac32(acc, V[r : r + BLEN], MR[t, c : c + BLEN, :], bt=1)
        else:
            acc[...] = mac32(acc, V[r : r + BLEN], MR[t, :, c : c + BLEN])

    return run


def _wo_offset(a: int, mlen: int, blen: int) -> int:
    off = a % mlen
    if off % blen:
        raise Fault("m.wo_offset", f"write-out column offset {off} is not a multiple of BLEN", {"address": a})
    return off


@data(SEMANTICS, "M_MM_WO")
def _mm_wo(ins: Instr, pc: int, m: Machine) -> Runner:
    """M_MM_WO: the BLEN x BLEN accumulator to VRAM rows `stride` apart, then cleared."""
    MLEN, BLEN, NROWS = m.cfg.mlen, m.cfg.blen, m.cfg.vram_rows
    V, gp, row = m.V, m.gp, m.row
    rd, rs, imm = ins.args
    acc = m.m_acc
    steps = np.arange(BLEN)

    def run() -> None:
        a = gp[rd] + imm
        off = _wo_offset(a, MLEN, BLEN)
        s = 1 if rs == 0 else gp[rs]
        r0 = row(a - off)
        rows = r0 + steps * s
        if rows[-1] >= NROWS:
            raise Fault("m.wo_range", f"write-out row {rows[-1]} is outside VRAM", {"address": a, "stride": s})
        V[rows, off : off + BLEN] = bf16_round(acc)
        acc.fill(0)

    return run


@data(SEMANTICS, "M_MV", "M_TMV")
def _mv(ins: Instr, pc: int, m: Machine) -> Runner:
    """M_MV / M_TMV: the vector accumulator += one VRAM row · a BLEN-wide slice of a tile."""
    MLEN, BLEN = m.cfg.mlen, m.cfg.blen
    V, MR, gp, row, tile = m.V, m.M, m.gp, m.row, m.tile
    rm, rv = ins.args[1], ins.args[2]
    acc = m.v_acc
    transposed = ins.op == "M_TMV"

    def run() -> None:
        t, off = tile(gp[rm])
        if transposed:
            if off:
                raise Fault("m.tmv_base", f"M_TMV needs a tile base, got offset {off}", {"offset": off})
            w = MR[t, 0:BLEN, :].T
        else:
            if off >= MLEN or off % BLEN:
                raise Fault("m.mv_slice", f"M_MV offset {off} is not a multiple of BLEN below MLEN", {"offset": off})
            w = MR[t, :, off : off + BLEN]
        acc[...] += V[row(gp[rv])] @ w

    return run


@data(SEMANTICS, "M_MV_WO")
def _mv_wo(ins: Instr, pc: int, m: Machine) -> Runner:
    MLEN, BLEN = m.cfg.mlen, m.cfg.blen
    V, gp, row = m.V, m.gp, m.row
    rd, imm = ins.args
    acc = m.v_acc

    def run() -> None:
        a = gp[rd] + imm
        off = _wo_offset(a, MLEN, BLEN)
        V[row(a - off), off : off + BLEN] = bf16_round(acc)
        acc.fill(0)

    return run


@data(SEMANTICS, "M_BMM", "M_BTMM", "M_BMV", "M_BTMV")
def _bmm(ins: Instr, pc: int, m: Machine) -> Runner:
    """M_BMM / M_BTMM / M_BMV / M_BTMV: BROADCAST heads of HLEN per MLEN-wide row, each
    against its HLEN-wide slice of a tile, products scaled by bmm_scale."""
    cfg = m.cfg
    MLEN, HLEN, B = cfg.mlen, cfg.hlen, cfg.broadcast
    V, MR, gp, row, tile = m.V, m.M, m.gp, m.row, m.tile
    SCALE = np.float32(cfg.bmm_scale)
    op = ins.op
    vector_op = op in ("M_BMV", "M_BTMV")
    interleaved = op in ("M_BMM", "M_BMV")
    if vector_op:
        rd, rm, rv = ins.args
    else:
        rd, rm, rv = 0, ins.args[1], ins.args[2]
    acc = m.hv_acc if vector_op else m.hm_acc
    nrow = 1 if vector_op else MLEN

    def run() -> None:
        t, h = tile(gp[rm] + (gp[rd] if vector_op else 0))
        if h >= MLEN or h % HLEN:
            raise Fault("m.head_offset", f"head offset {h} is not a multiple of HLEN below MLEN", {"offset": h})
        r = row(gp[rv], nrow)
        q = V[r : r + nrow]
        if interleaved:  # row viewed [HLEN][BROADCAST]; head b uses tile rows h..h+HLEN
            qb = q.reshape(nrow, HLEN, B).transpose(2, 0, 1)
            res = qb @ MR[t, h : h + HLEN, :]
        else:  # row viewed [BROADCAST][HLEN]; head b times tile[:, h:h+HLEN]^T
            qb = q.reshape(nrow, B, HLEN).transpose(1, 0, 2)
            res = qb @ MR[t, :, h : h + HLEN].T
        res *= SCALE
        acc[...] += res.reshape(acc.shape)

    return run


@data(SEMANTICS, "M_BMM_WO", "M_BMV_WO")
def _bmm_wo(ins: Instr, pc: int, m: Machine) -> Runner:
    MLEN, B = m.cfg.mlen, m.cfg.broadcast
    V, gp, row = m.V, m.gp, m.row
    rd, imm = ins.args
    acc = m.hm_acc if ins.op == "M_BMM_WO" else m.hv_acc
    nrow = B * MLEN if ins.op == "M_BMM_WO" else B

    def run() -> None:
        a = gp[rd] + imm
        if a % MLEN:
            raise Fault("m.bwo_align", f"head-batched write-out address {a} is not a multiple of MLEN", {"address": a})
        r = row(a, nrow)
        V[r : r + nrow] = bf16_round(acc.reshape(nrow, MLEN))
        acc.fill(0)

    return run
