"""DMA semantics (plena.md §6.4): MXFP8 transfers between HBM and the matrix / vector SRAMs,
addressed and costed as the emulator and the HBM model do (`hbm.py`). A timing-only run
still plans every transfer (its cost depends on the addresses, pitch and scale offset in the
registers and CSRs) but moves no data."""

from __future__ import annotations

from zomboss.program import Instr

from . import hbm as H
from .machine import Fault, Machine, Runner, Semantics
from .numerics import bf16_round


def _shape(ins: Instr, m: Machine) -> tuple[int, int]:
    """(elements per row, rows) one instruction moves."""
    cfg = m.cfg
    if ins.op == "H_PREFETCH_M":
        return cfg.mlen, cfg.pf_m
    return cfg.vlen, (cfg.pf_v if ins.op == "H_PREFETCH_V" else cfg.wb_v)


def _decode(ins: Instr, pc: int, m: Machine, functional: bool) -> Runner:
    cfg = m.cfg
    rd, rs, ra, rstride, _prec = ins.args
    op = ins.op
    cost = H.HbmCost.from_params(cfg.params)
    rowlen, nrows = _shape(ins, m)
    V, MR, gp, A, csr, row, hb = m.V, m.M, m.gp, m.a, m.csr, m.row, m.hbm
    TE, TILES = cfg.mlen * cfg.mlen, cfg.mram_tiles
    mx_ratio, hbm_block, mx_block = cfg.mx_ratio, cfg.hbm_block, cfg.mx_block

    def load(t: H.Transfer) -> None:
        if op == "H_PREFETCH_V":
            r = row(gp[rd], nrows)
            V[r : r + nrows] = bf16_round(H.load_rows(hb, t, block=mx_block, hbm_block=hbm_block))
            return
        base = gp[rd]
        if base % TE or base // TE + nrows // cfg.mlen > TILES:
            raise Fault(
                "h.mram_dst", f"H_PREFETCH_M destination {base} is not a tile base inside MRAM", {"address": base}
            )
        n = nrows // cfg.mlen
        data = H.load_rows(hb, t, block=mx_block, hbm_block=hbm_block)
        MR[base // TE : base // TE + n] = bf16_round(data).reshape(n, cfg.mlen, cfg.mlen)

    def run() -> None:
        pitch = csr["stride"] if rstride == 1 else rowlen
        t = H.plan(A[ra], gp[rs], csr["scale"], pitch, nrows, rowlen, mx_ratio=mx_ratio, hbm_block=hbm_block)
        if op == "H_STORE_V":
            if functional:
                r = row(gp[rd], nrows)
                H.store_rows(hb, t, V[r : r + nrows], block=mx_block)
            c = cost.store(t)
            m.write_blocks += t.n_blk
        else:
            if functional:
                load(t)
            c = cost.prefetch(t)
        m.read_blocks += t.n_blk  # a store's read-modify-write reads every block it writes
        m.dma_cycles += c
        m.last_dma = c
        m.dma_phase += (A[ra] + gp[rs]) % hbm_block

    return run


def _functional(ins: Instr, pc: int, m: Machine) -> Runner:
    return _decode(ins, pc, m, True)


def _timing(ins: Instr, pc: int, m: Machine) -> Runner:
    return _decode(ins, pc, m, False)


SEMANTICS: dict[str, Semantics] = {
    op: Semantics(_functional, _timing) for op in ("H_PREFETCH_M", "H_PREFETCH_V", "H_STORE_V")
}
