"""Vector unit semantics (plena.md §6.2): element-wise ops on one VLEN-wide VRAM row
(masked by V_MASK where the instruction says so), row reductions into FP registers and the
MoE top-k, with the emulator's BF16 rounding and NaN handling."""

from __future__ import annotations

import math

import numpy as np

from zomboss.machine import exp32, reci32, rmax32, rsum32
from zomboss.program import Instr

from .machine import Fault, Machine, Runner, Semantics, data
from .numerics import bf16_round, bf16_scalar

SEMANTICS: dict[str, Semantics] = {}
_VV = {"V_ADD_VV": np.add, "V_SUB_VV": np.subtract, "V_MUL_VV": np.multiply}
_VF = {
    "V_ADD_VF": np.add,
    "V_SUB_VF": np.subtract,
    "V_MUL_VF": np.multiply,
    "V_MAX_VF": np.maximum,
    "V_MIN_VF": np.minimum,
}


def _masked(m: Machine, out: np.ndarray, src: np.ndarray, rmask: int) -> np.ndarray:
    return np.where(m.lane_mask(), out, src) if rmask else out


@data(SEMANTICS, *_VV)
def _vv(ins: Instr, pc: int, m: Machine) -> Runner:
    V, gp, row = m.V, m.gp, m.row
    rd, r1, r2, rmask = ins.args
    fn = _VV[ins.op]

    def run() -> None:
        a = V[row(gp[r1])]
        V[row(gp[rd])] = bf16_round(_masked(m, fn(a, V[row(gp[r2])]), a, rmask))

    return run


@data(SEMANTICS, *_VF)
def _vf(ins: Instr, pc: int, m: Machine) -> Runner:
    V, gp, F, row = m.V, m.gp, m.f, m.row
    rd, r1, fs, rmask = ins.args[:4]
    reverse = ins.op == "V_SUB_VF" and ins.args[4] == 1
    fn = _VF[ins.op]

    def run() -> None:
        a = V[row(gp[r1])]
        s = np.float32(F[fs])
        out = fn(s, a) if reverse else fn(a, s)
        V[row(gp[rd])] = bf16_round(_masked(m, out, a, rmask))

    return run


@data(SEMANTICS, "V_EXP_V", "V_RECI_V")
def _unary(ins: Instr, pc: int, m: Machine) -> Runner:
    V, gp, row = m.V, m.gp, m.row
    rd, r1, rmask = ins.args
    is_exp = ins.op == "V_EXP_V"

    def run() -> None:
        a = V[row(gp[r1])]
        if is_exp:  # the emulator clamps first, so disabled lanes see the clamped input too
            a = np.clip(a, np.float32(-88.0), np.float32(88.0))
            out = exp32(a)
        else:
            out = reci32(a)
        V[row(gp[rd])] = bf16_round(_masked(m, out, a, rmask))

    return run


@data(SEMANTICS, "V_SHFT_V")
def _shift(ins: Instr, pc: int, m: Machine) -> Runner:
    V, gp, row, VLEN = m.V, m.gp, m.row, m.cfg.vlen
    rd, r1, r2 = ins.args

    def run() -> None:
        a = V[row(gp[r1])]
        s = gp[r2]
        out = np.zeros(VLEN, dtype=np.float32)
        if s < VLEN:
            out[s:] = a[: VLEN - s]
        V[row(gp[rd])] = out

    return run


@data(SEMANTICS, "V_RED_SUM")
def _red_sum(ins: Instr, pc: int, m: Machine) -> Runner:
    V, gp, F, row = m.V, m.gp, m.f, m.row
    fd, r1 = ins.args

    def run() -> None:
        r = row(gp[r1])
        if fd:
            F[fd] = bf16_scalar(float(np.float32(F[fd]) + rsum32(V[r])[0]))

    return run


@data(SEMANTICS, "V_RED_MAX")
def _red_max(ins: Instr, pc: int, m: Machine) -> Runner:
    V, gp, F, row = m.V, m.gp, m.f, m.row
    fd, r1 = ins.args[0], ins.args[1]

    def run() -> None:
        r = row(gp[r1])
        if fd:
            val = float(rmax32(V[r])[0])
            cur = F[fd]
            F[fd] = bf16_scalar(cur if math.isnan(val) else val if math.isnan(cur) else max(val, cur))

    return run


@data(SEMANTICS, "V_TOPK")
def _topk(ins: Instr, pc: int, m: Machine) -> Runner:
    """V_TOPK: the top k of 32 (policy 0) or 128 expert logits, softmax-weighted, weights to
    FP SRAM and indices to INT SRAM (the only instruction that writes data into INT SRAM)."""
    V, gp, FS, IS, row = m.V, m.gp, m.FS, m.IS, m.row
    fdst, r1, idst, policy = ins.args
    experts, k = (32, 4) if policy == 0 else (128, 8)
    nrows = -(-experts // m.cfg.vlen)

    def run() -> None:
        r = row(gp[r1], nrows)
        logits = V[r : r + nrows].reshape(-1)[:experts]
        logits = np.where(np.isnan(logits), np.float32(-np.inf), logits)
        order = np.argsort(-logits, kind="stable")[:k]  # descending, ties to the lower index
        sel = logits[order]
        e = np.exp(sel - sel.max()).astype(np.float32)
        denom = np.float32(0.0)
        for v in e:  # the emulator sums sequentially in float32
            denom = np.float32(denom + v)
        w = e / denom if (math.isfinite(denom) and denom > 0) else np.zeros(k, dtype=np.float32)
        fb, ib = gp[fdst], gp[idst]
        if fb + k > FS.size or ib + k > IS.size:
            raise Fault("v.topk_out", "V_TOPK results do not fit the FP/INT SRAMs", {"fp": fb, "int": ib})
        FS[fb : fb + k] = bf16_round(w.astype(np.float32))
        IS[ib : ib + k] = order.astype(np.uint32)

    return run


# What a timing-only run cannot skip: INT SRAM contents computed from data. A program that
# also loads INT SRAM into a register may take data-dependent addresses or trip counts.
WRITES_DATA_TO_INT_SRAM = frozenset({"V_TOPK"})
