"""PLENA instruction-level simulator: functional (emulator-exact numerics) and timed.

Every instruction PLENA's transactional emulator decodes is executed with the emulator's
semantics (plena.md §6; the emulator is normative where PLENA's ISA text disagrees), on
NumPy state vectorised per instruction: VRAM rows of BF16 values (float32 arrays), MRAM tiles,
FP/INT SRAMs, the four float32 matrix accumulators, registers and CSRs, and an HBM image in
MXFP8. Programs are decoded once into closures; hardware loops re-run the decoded closures.

Every executed instruction (loop iterations included) is checked against the doc's rules by
the KB checker with the register contents it sees, and an illegal program stops with the
rule id, program line and values (`IllegalProgram`). The loop guard and the loop bookkeeping
C_BREAK can invalidate are enforced here as well.

Cycles are reported under the `rtl` and `emu` models (and optionally `overlap`), see
`timing.py`, with instruction counts per mnemonic and per unit and HBM traffic.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from zomboss.targets.plena import hbm as H
from zomboss.targets.plena import timing as T
from zomboss.targets.plena.numerics import bf16_bits_scalar, bf16_round, bf16_scalar, fp16_then_bf16

from zomboss.errors import IllegalProgram, ZombossError
from zomboss.knowledge import KB, load_kb
from zomboss.legality import Checker, Violation
from zomboss.program import Instr, Program

DOC = Path(__file__).with_name("plena.md")

_MASK32 = 0xFFFFFFFF


# ---------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlenaConfig:
    """The machine the simulator models: the doc's parameters, evaluated by the KB."""

    kb: KB = field(repr=False, compare=False)
    mlen: int
    vlen: int
    blen: int
    hlen: int
    broadcast: int
    pf_m: int
    pf_v: int
    wb_v: int
    mram_tiles: int
    vram_rows: int
    fpsram_size: int
    intsram_size: int
    max_loop_instructions: int
    bmm_scale: float
    mx_block: int
    mx_ratio: int
    hbm_block: int

    @property
    def params(self) -> Mapping[str, int]:
        return self.kb.params

    @classmethod
    def from_params(cls, params: Mapping[str, int] | None = None, *, doc: Path = DOC) -> PlenaConfig:
        """From parameter overrides (`{"mlen": 16}`) or a full parameter mapping such as
        `KB.params`; only values that differ from the doc's defaults become overrides."""
        base = load_kb(doc)
        over = {k.lower(): int(v) for k, v in (params or {}).items()}
        over = {k: v for k, v in over.items() if base.params.get(k) != v}
        return cls.from_kb(load_kb(doc, over) if over else base)

    @classmethod
    def from_kb(cls, kb: KB) -> PlenaConfig:
        p = kb.params
        return cls(
            kb=kb,
            mlen=p["mlen"],
            vlen=p["vlen"],
            blen=p["blen"],
            hlen=p["hlen"],
            broadcast=p["broadcast"],
            pf_m=p["hbm_m_prefetch"],
            pf_v=p["hbm_v_prefetch"],
            wb_v=p["hbm_v_writeback"],
            mram_tiles=p["mram_tiles"],
            vram_rows=p["vram_rows"],
            fpsram_size=p["fpsram_size"],
            intsram_size=p["intsram_size"],
            max_loop_instructions=p["max_loop_instructions"],
            bmm_scale=p["bmm_scale_num"] / p["bmm_scale_den"],
            mx_block=p["mx_block"],
            mx_ratio=p["mx_ratio"],
            hbm_block=p["hbm_block"],
        )


# ---------------------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlenaRun:
    """Final machine state and the run's statistics."""

    cfg: PlenaConfig = field(repr=False)
    vram: np.ndarray = field(repr=False)  # flat float32 (BF16 values), vram_rows * vlen elements
    mram: np.ndarray = field(repr=False)  # [mram_tiles, mlen, mlen] float32
    fpsram: np.ndarray = field(repr=False)  # float32 (BF16 values)
    intsram: np.ndarray = field(repr=False)  # uint32
    hbm: H.Hbm = field(repr=False)
    gp: tuple[int, ...]
    f: tuple[float, ...]
    a: tuple[int, ...]
    csr: Mapping[str, int]
    cycles: Mapping[str, int]  # per timing mode
    rtl_breakdown: Mapping[str, int]  # rtl cycles per unit, plus "hazards"
    counts: Mapping[str, int]  # executed instructions per mnemonic
    class_counts: Mapping[str, int]  # executed instructions per unit
    instructions: int  # executed (dynamic) instructions
    hbm_read_bytes: int  # 64-byte blocks read from HBM (prefetches and store RMW reads) x 64
    hbm_write_bytes: int  # 64-byte blocks written to HBM x 64
    wall_s: float

    def vram_tensor(self, base: int, rows: int, cols: int, phys_rows: int | None = None) -> np.ndarray:
        """A logical [rows, cols] tensor stored column-block-major at element `base`."""
        return vram_gather(self.vram, base, rows, cols, phys_rows if phys_rows is not None else rows, self.cfg.vlen)

    def hbm_tensor(self, base: int, rows: int, cols: int) -> np.ndarray:
        """A dequantized row-major MXFP8 [rows, cols] tensor at HBM byte `base`."""
        return H.read_mx_tensor(self.hbm, base, rows, cols, self.cfg.mx_block)

    def summary(self) -> dict[str, Any]:
        return {
            "cycles": dict(self.cycles),
            "rtl_breakdown": dict(self.rtl_breakdown),
            "instructions": self.instructions,
            "class_counts": dict(self.class_counts),
            "hbm_read_bytes": self.hbm_read_bytes,
            "hbm_write_bytes": self.hbm_write_bytes,
        }


def vram_gather(vram: np.ndarray, base: int, rows: int, cols: int, phys_rows: int, vlen: int) -> np.ndarray:
    """Column-block-major VRAM layout -> logical [rows, cols]: element (r, c) lives at
    base + (c // vlen) * phys_rows * vlen + r * vlen + c % vlen (plena.md §2)."""
    nb = -(-cols // vlen)
    flat = np.asarray(vram).reshape(-1)[base : base + nb * phys_rows * vlen]
    if flat.size != nb * phys_rows * vlen:
        raise ZombossError(
            f"VRAM tensor at {base} ({rows}x{cols}, {phys_rows} physical rows) runs past the end of VRAM"
        )
    blocks = flat.reshape(nb, phys_rows, vlen)[:, :rows, :]
    return blocks.transpose(1, 0, 2).reshape(rows, nb * vlen)[:, :cols].copy()


def vram_image(x: np.ndarray, phys_rows: int, vlen: int) -> np.ndarray:
    """Logical [rows, cols] -> the flat column-block-major image (padding zero, BF16-rounded)."""
    x = np.asarray(x, dtype=np.float32)
    rows, cols = x.shape
    nb = -(-cols // vlen)
    padded = np.zeros((phys_rows, nb * vlen), dtype=np.float32)
    padded[:rows, :cols] = x
    return bf16_round(padded.reshape(phys_rows, nb, vlen).transpose(1, 0, 2).reshape(-1))


# ---------------------------------------------------------------------------------------
# Machine state and decoding
# ---------------------------------------------------------------------------------------


class _Fault(Exception):
    """An access the emulator would abort on (the checker normally refuses it first)."""

    def __init__(self, rule: str, message: str, values: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.rule, self.message, self.values = rule, message, dict(values or {})


class _Machine:
    """Mutable architectural state of one run."""

    def __init__(self, cfg: PlenaConfig, hbm: H.Hbm) -> None:
        self.cfg = cfg
        self.V = np.zeros((cfg.vram_rows, cfg.vlen), dtype=np.float32)
        self.M = np.zeros((cfg.mram_tiles, cfg.mlen, cfg.mlen), dtype=np.float32)
        self.FS = np.zeros(cfg.fpsram_size, dtype=np.float32)
        self.IS = np.zeros(cfg.intsram_size, dtype=np.uint32)
        self.gp = [0] * 16
        self.f = [0.0] * 8
        self.a = [0] * 8
        self.csr = {"scale": 0, "stride": 1, "v_mask": 0}
        self.m_acc = np.zeros((cfg.blen, cfg.blen), dtype=np.float32)
        self.v_acc = np.zeros(cfg.blen, dtype=np.float32)
        self.hm_acc = np.zeros((cfg.broadcast, cfg.mlen, cfg.mlen), dtype=np.float32)
        self.hv_acc = np.zeros((cfg.broadcast, cfg.mlen), dtype=np.float32)
        self.hbm = hbm
        self.loops: list[list[int]] = []  # [start_pc, counter register, iteration base, line]
        self.executed = 0
        self.dma_cycles = 0
        self.last_dma = 0
        self.read_blocks = 0
        self.write_blocks = 0
        self._masks: dict[int, np.ndarray] = {}

    def lane_mask(self) -> np.ndarray:
        """Element mask of V_MASK: bit h enables elements [h*HLEN, (h+1)*HLEN)."""
        vm = self.csr["v_mask"]
        m = self._masks.get(vm)
        if m is None:
            lanes = self.cfg.vlen // self.cfg.hlen
            bits = np.array([(vm >> h) & 1 for h in range(lanes)], dtype=bool)
            m = self._masks[vm] = np.repeat(bits, self.cfg.hlen)
        return m


class _Decoded:
    """One static instruction, decoded once; a plain slotted class because the run loop reads
    its fields for every executed instruction."""

    __slots__ = ("ins", "run", "regs", "cost", "unit", "probe")

    def __init__(
        self,
        ins: Instr,
        run: Callable[[], int | None],  # returns a jump target or None
        regs: tuple[tuple[int, str, int], ...],  # (operand position, register file, index)
        cost: T.StaticCost | None,  # None: DMA, costed at run time
        unit: str,
        probe: Callable[[list[int]], T.Probe] | None,
    ) -> None:
        self.ins, self.run, self.regs, self.cost, self.unit, self.probe = ins, run, regs, cost, unit, probe


def _decode(ins: Instr, pc: int, m: _Machine) -> Callable[[], int | None]:
    """The closure executing one static instruction (emulator semantics)."""
    cfg = m.cfg
    V, MR, FS, IS, gp, F, A, csr = m.V, m.M, m.FS, m.IS, m.gp, m.f, m.a, m.csr
    MLEN, VLEN, BLEN, HLEN, B = cfg.mlen, cfg.vlen, cfg.blen, cfg.hlen, cfg.broadcast
    TE = MLEN * MLEN
    NROWS, TILES = cfg.vram_rows, cfg.mram_tiles
    SCALE = np.float32(cfg.bmm_scale)
    op, args = ins.op, ins.args

    def row(addr: int, n: int = 1) -> int:
        """VRAM row index of an address that starts n consecutive rows."""
        if addr % VLEN:
            raise _Fault("sim.vram_align", f"VRAM address {addr} is not a multiple of VLEN ({VLEN})", {"address": addr})
        r = addr // VLEN
        if r + n > NROWS:
            raise _Fault(
                "sim.vram_range", f"VRAM rows {r}..{r + n - 1} are outside VRAM ({NROWS} rows)", {"address": addr}
            )
        return r

    def tile(addr: int) -> tuple[int, int]:
        t, off = divmod(addr, TE)
        if t >= TILES:
            raise _Fault("sim.mram_range", f"MRAM address {addr} is outside the {TILES} tiles", {"address": addr})
        return t, off

    def wmask(out: np.ndarray, src: np.ndarray, rmask: int) -> np.ndarray:
        return np.where(m.lane_mask(), out, src) if rmask else out

    # ---- matrix ---------------------------------------------------------------------------
    if op in ("M_MM", "M_TMM"):
        transposed = op == "M_TMM"
        rm, rv = (args[2], args[1]) if transposed else (args[1], args[2])
        acc: np.ndarray = m.m_acc

        def run() -> None:
            t, off = tile(gp[rm])
            c = off // MLEN
            if off % MLEN or c % BLEN:
                raise _Fault(
                    "m.mm_slice", f"matrix offset {off} is not a BLEN-aligned column slice c*MLEN", {"offset": off}
                )
            r = row(gp[rv], BLEN)
            w = MR[t, c : c + BLEN, :].T if transposed else MR[t, :, c : c + BLEN]
            acc[...] += V[r : r + BLEN] @ w

        return run
    if op == "M_MM_WO":
        rd, rs, imm = args
        acc = m.m_acc
        steps = np.arange(BLEN)

        def run() -> None:
            a = gp[rd] + imm
            off = a % MLEN
            if off % BLEN:
                raise _Fault("m.wo_offset", f"write-out column offset {off} is not a multiple of BLEN", {"address": a})
            s = 1 if rs == 0 else gp[rs]
            r0 = row(a - off)
            rows = r0 + steps * s
            if rows[-1] >= NROWS:
                raise _Fault("m.wo_range", f"write-out row {rows[-1]} is outside VRAM", {"address": a, "stride": s})
            V[rows, off : off + BLEN] = bf16_round(acc)
            acc.fill(0)

        return run
    if op in ("M_MV", "M_TMV"):
        rm, rv = args[1], args[2]
        acc = m.v_acc
        transposed = op == "M_TMV"

        def run() -> None:
            t, off = tile(gp[rm])
            if transposed:
                if off:
                    raise _Fault("m.tmv_base", f"M_TMV needs a tile base, got offset {off}", {"offset": off})
                w = MR[t, 0:BLEN, :].T
            else:
                if off >= MLEN or off % BLEN:
                    raise _Fault(
                        "m.mv_slice", f"M_MV offset {off} is not a multiple of BLEN below MLEN", {"offset": off}
                    )
                w = MR[t, :, off : off + BLEN]
            acc[...] += V[row(gp[rv])] @ w

        return run
    if op == "M_MV_WO":
        rd, imm = args
        acc = m.v_acc

        def run() -> None:
            a = gp[rd] + imm
            off = a % MLEN
            if off % BLEN:
                raise _Fault("m.wo_offset", f"write-out column offset {off} is not a multiple of BLEN", {"address": a})
            V[row(a - off), off : off + BLEN] = bf16_round(acc)
            acc.fill(0)

        return run
    if op in ("M_BMM", "M_BTMM", "M_BMV", "M_BTMV"):
        vector_op = op in ("M_BMV", "M_BTMV")
        interleaved = op in ("M_BMM", "M_BMV")
        if vector_op:
            rd, rm, rv = args
        else:
            rd, rm, rv = 0, args[1], args[2]
        acc = m.hv_acc if vector_op else m.hm_acc
        nrow = 1 if vector_op else MLEN

        def run() -> None:
            t, h = tile(gp[rm] + (gp[rd] if vector_op else 0))
            if h >= MLEN or h % HLEN:
                raise _Fault("m.head_offset", f"head offset {h} is not a multiple of HLEN below MLEN", {"offset": h})
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
    if op in ("M_BMM_WO", "M_BMV_WO"):
        rd, imm = args
        acc = m.hm_acc if op == "M_BMM_WO" else m.hv_acc
        nrow = B * MLEN if op == "M_BMM_WO" else B

        def run() -> None:
            a = gp[rd] + imm
            if a % MLEN:
                raise _Fault(
                    "m.bwo_align", f"head-batched write-out address {a} is not a multiple of MLEN", {"address": a}
                )
            r = row(a, nrow)
            V[r : r + nrow] = bf16_round(acc.reshape(nrow, MLEN))
            acc.fill(0)

        return run

    # ---- vector -----------------------------------------------------------------------------
    if op in ("V_ADD_VV", "V_SUB_VV", "V_MUL_VV"):
        rd, r1, r2, rmask = args
        fn = {"V_ADD_VV": np.add, "V_SUB_VV": np.subtract, "V_MUL_VV": np.multiply}[op]

        def run() -> None:
            a = V[row(gp[r1])]
            V[row(gp[rd])] = bf16_round(wmask(fn(a, V[row(gp[r2])]), a, rmask))

        return run
    if op in ("V_ADD_VF", "V_SUB_VF", "V_MUL_VF", "V_MAX_VF", "V_MIN_VF"):
        rd, r1, fs, rmask = args[:4]
        reverse = op == "V_SUB_VF" and args[4] == 1
        fn = {
            "V_ADD_VF": np.add,
            "V_SUB_VF": np.subtract,
            "V_MUL_VF": np.multiply,
            "V_MAX_VF": np.maximum,
            "V_MIN_VF": np.minimum,
        }[op]

        def run() -> None:
            a = V[row(gp[r1])]
            s = np.float32(F[fs])
            out = fn(s, a) if reverse else fn(a, s)
            V[row(gp[rd])] = bf16_round(wmask(out, a, rmask))

        return run
    if op in ("V_EXP_V", "V_RECI_V"):
        rd, r1, rmask = args
        is_exp = op == "V_EXP_V"

        def run() -> None:
            a = V[row(gp[r1])]
            if is_exp:  # the emulator clamps first, so disabled lanes see the clamped input too
                a = np.clip(a, np.float32(-88.0), np.float32(88.0))
                out = np.exp(a)
            else:
                out = np.float32(1.0) / a
            V[row(gp[rd])] = bf16_round(wmask(out, a, rmask))

        return run
    if op == "V_SHFT_V":
        rd, r1, r2 = args

        def run() -> None:
            a = V[row(gp[r1])]
            s = gp[r2]
            out = np.zeros(VLEN, dtype=np.float32)
            if s < VLEN:
                out[s:] = a[: VLEN - s]
            V[row(gp[rd])] = out

        return run
    if op == "V_RED_SUM":
        fd, r1 = args

        def run() -> None:
            r = row(gp[r1])
            if fd:
                F[fd] = bf16_scalar(float(np.float32(F[fd]) + V[r].sum(dtype=np.float32)))

        return run
    if op == "V_RED_MAX":
        fd, r1 = args[0], args[1]

        def run() -> None:
            r = row(gp[r1])
            if fd:
                val = float(V[r].max())
                cur = F[fd]
                F[fd] = bf16_scalar(cur if math.isnan(val) else val if math.isnan(cur) else max(val, cur))

        return run
    if op == "V_TOPK":
        fdst, r1, idst, policy = args
        experts, k = (32, 4) if policy == 0 else (128, 8)
        nrows = -(-experts // VLEN)

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
                raise _Fault("v.topk_out", "V_TOPK results do not fit the FP/INT SRAMs", {"fp": fb, "int": ib})
            FS[fb : fb + k] = bf16_round(w.astype(np.float32))
            IS[ib : ib + k] = order.astype(np.uint32)

        return run

    # ---- scalar FP ------------------------------------------------------------------------------
    if op in ("S_ADD_FP", "S_SUB_FP", "S_MUL_FP", "S_MAX_FP"):
        fd, f1, f2 = args
        if fd == 0:
            return lambda: None  # writes to f0 are dropped (the emulator skips the instruction)
        if op == "S_ADD_FP":
            return lambda: F.__setitem__(fd, bf16_scalar(F[f1] + F[f2]))
        if op == "S_SUB_FP":
            return lambda: F.__setitem__(fd, bf16_scalar(F[f1] - F[f2]))
        if op == "S_MUL_FP":
            return lambda: F.__setitem__(fd, bf16_scalar(F[f1] * F[f2]))

        def run() -> None:
            x, y = F[f1], F[f2]
            F[fd] = y if math.isnan(x) else x if math.isnan(y) else max(x, y)

        return run
    if op in ("S_EXP_FP", "S_RECI_FP", "S_SQRT_FP"):
        fd, f1 = args
        if fd == 0:
            return lambda: None

        def unary(x: float) -> float:
            if op == "S_EXP_FP":
                return math.exp(min(max(x, -88.0), 88.0)) if not math.isnan(x) else x
            if op == "S_RECI_FP":
                return (math.copysign(math.inf, x) if x == 0 else 1.0 / x) if not math.isnan(x) else x
            return math.sqrt(x) if x >= 0 else math.nan

        return lambda: F.__setitem__(fd, bf16_scalar(unary(F[f1])))
    if op in ("S_LD_FP", "S_ST_FP"):
        fr, rs, imm = args
        load = op == "S_LD_FP"

        def run() -> None:
            i = gp[rs] + imm
            if i >= FS.size:
                raise _Fault(
                    "s.fpsram_range", f"FP SRAM address {i} is outside the FP SRAM ({FS.size})", {"address": i}
                )
            if load:
                if fr:  # f0 stays zero (the rule s.f0_load refuses the load)
                    F[fr] = float(FS[i])
            else:
                FS[i] = F[fr]

        return run
    if op == "S_MAP_V_FP":
        rd, rs, imm = args

        def run() -> None:
            i = gp[rs] + imm
            if i + VLEN > FS.size:
                raise _Fault(
                    "s.map_window", f"FP SRAM window {i}..{i + VLEN - 1} is outside the FP SRAM", {"address": i}
                )
            V[row(gp[rd])] = FS[i : i + VLEN]

        return run

    # ---- scalar INT --------------------------------------------------------------------------------
    if op in ("S_ADD_INT", "S_SUB_INT", "S_MUL_INT"):
        rd, r1, r2 = args
        if rd == 0:
            return lambda: None  # gp0 is hard-wired to zero
        if op == "S_ADD_INT":
            return lambda: gp.__setitem__(rd, (gp[r1] + gp[r2]) & _MASK32)
        if op == "S_SUB_INT":
            return lambda: gp.__setitem__(rd, (gp[r1] - gp[r2]) & _MASK32)
        return lambda: gp.__setitem__(rd, (gp[r1] * gp[r2]) & _MASK32)
    if op == "S_ADDI_INT":
        rd, r1, imm = args
        if rd == 0:
            return lambda: None
        return lambda: gp.__setitem__(rd, (gp[r1] + imm) & _MASK32)
    if op == "S_LUI_INT":
        rd, imm = args
        val = (imm << 12) & _MASK32
        if rd == 0:
            return lambda: None
        return lambda: gp.__setitem__(rd, val)
    if op in ("S_LD_INT", "S_ST_INT"):
        rr, rs, imm = args
        load = op == "S_LD_INT"

        def run() -> None:
            i = gp[rs] + imm
            if i >= IS.size:
                raise _Fault(
                    "s.intsram_range", f"INT SRAM address {i} is outside the INT SRAM ({IS.size})", {"address": i}
                )
            if load:
                if rr:
                    gp[rr] = int(IS[i])
            else:
                IS[i] = gp[rr]

        return run

    # ---- DMA ------------------------------------------------------------------------------------------
    if op in ("H_PREFETCH_M", "H_PREFETCH_V", "H_STORE_V"):
        rd, rs, ra, rstride, _prec = args
        cost = H.HbmCost.from_params(cfg.params)
        if op == "H_PREFETCH_M":
            rowlen, nrows = MLEN, cfg.pf_m
        else:
            rowlen, nrows = VLEN, (cfg.pf_v if op == "H_PREFETCH_V" else cfg.wb_v)
        hb = m.hbm

        def run() -> None:
            pitch = csr["stride"] if rstride == 1 else rowlen
            t = H.plan(
                A[ra], gp[rs], csr["scale"], pitch, nrows, rowlen, mx_ratio=cfg.mx_ratio, hbm_block=cfg.hbm_block
            )
            if op == "H_PREFETCH_M":
                base = gp[rd]
                if base % TE or base // TE + nrows // MLEN > TILES:
                    raise _Fault(
                        "h.mram_dst",
                        f"H_PREFETCH_M destination {base} is not a tile base inside MRAM",
                        {"address": base},
                    )
                data = H.load_rows(hb, t, block=cfg.mx_block, hbm_block=cfg.hbm_block)
                n = nrows // MLEN
                MR[base // TE : base // TE + n] = bf16_round(data).reshape(n, MLEN, MLEN)
                c = cost.prefetch(t)
                m.read_blocks += t.n_blk
            elif op == "H_PREFETCH_V":
                r = row(gp[rd], nrows)
                V[r : r + nrows] = bf16_round(H.load_rows(hb, t, block=cfg.mx_block, hbm_block=cfg.hbm_block))
                c = cost.prefetch(t)
                m.read_blocks += t.n_blk
            else:
                r = row(gp[rd], nrows)
                H.store_rows(hb, t, V[r : r + nrows], block=cfg.mx_block)
                c = cost.store(t)
                m.read_blocks += t.n_blk
                m.write_blocks += t.n_blk
            m.dma_cycles += c
            m.last_dma = c

        return run

    # ---- control ------------------------------------------------------------------------------------
    if op == "C_SET_ADDR_REG":
        ra, rhi, rlo = args
        return lambda: A.__setitem__(ra, (gp[rhi] << 32) | gp[rlo])
    if op in ("C_SET_SCALE_REG", "C_SET_STRIDE_REG", "C_SET_V_MASK_REG"):
        (rs,) = args
        key = {"C_SET_SCALE_REG": "scale", "C_SET_STRIDE_REG": "stride", "C_SET_V_MASK_REG": "v_mask"}[op]
        return lambda: csr.__setitem__(key, gp[rs])
    if op == "C_LOOP_START":
        rd, count = args
        loops = m.loops

        def run() -> None:
            if count < 1:
                raise _Fault("loop.count", "a hardware loop needs a count >= 1", {"imm": count})
            if rd:
                gp[rd] = count
            loops.append([pc, rd, m.executed, ins.line, count])

        return run
    if op == "C_LOOP_END":
        (rd,) = args
        loops = m.loops

        def loop_end() -> int | None:
            for pos in range(len(loops) - 1, -1, -1):
                if loops[pos][1] == rd:
                    break
            else:
                raise _Fault("loop.end", f"C_LOOP_END gp{rd}: no open loop is counted by gp{rd}", {"rd": rd})
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
    if op == "C_BREAK":
        loops = m.loops

        def run() -> None:
            if not loops:
                raise _Fault("loop.break", "C_BREAK with no open loop", {})
            reg = loops.pop()[1]
            if reg:
                gp[reg] = 0

        return run
    raise ZombossError(f"line {ins.line}: the simulator has no semantics for {op!r}")


# ---------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------


_FBITS: dict[float, int] = {}


def _regvals(d: _Decoded, m: _Machine) -> dict[int, int]:
    """Register contents at each register operand (f registers: their BF16 bit pattern)."""
    out: dict[int, int] = {}
    for pos, file, idx in d.regs:
        if file == "gp":
            out[pos] = m.gp[idx] if idx < 16 else 0
        elif file == "a":
            out[pos] = m.a[idx] if idx < 8 else 0
        elif idx < 8:
            x = m.f[idx]
            bits = _FBITS.get(x)
            if bits is None:
                bits = bf16_bits_scalar(x)
                if len(_FBITS) < 65536:
                    _FBITS[x] = bits
            out[pos] = bits
        else:
            out[pos] = 0
    return out


def _doc_loc(kb: KB, rule: str) -> str:
    r = kb.rule_by_id.get(rule)
    if r is not None:
        return str(r.loc)
    if rule == "loop.guard":
        p = next((p for p in kb.doc.params if p.name == "max_loop_instructions"), None)
        return str(p.loc) if p else ""
    return ""


_PC_DEPENDENT = frozenset({"C_LOOP_START"})  # its closure records its own program counter and line


class _Shared:
    """What every run on one KB can share: the cost table and a pool of rule checkers
    (building a checker compiles every rule, so they are reset and reused)."""

    def __init__(self, kb: KB) -> None:
        self.kb = kb
        self.costs = T.CostTable(kb)
        self._checkers: list[Any] = []

    def take_checker(self) -> Any:
        if self._checkers:
            c = self._checkers.pop()
            c.reset()
            return c
        return Checker(self.kb)

    def give_back(self, checker: Any) -> None:
        if len(self._checkers) < 4:
            self._checkers.append(checker)


_SHARED: dict[str, _Shared] = {}


def _shared(kb: KB) -> _Shared:
    key = kb.digest or str(id(kb))
    sh = _SHARED.get(key)
    if sh is None or sh.kb is not kb and not kb.digest:
        sh = _SHARED[key] = _Shared(kb)
    return sh


class _Run:
    """One execution: decoded program, machine, checker and timing accumulators."""

    def __init__(
        self,
        program: Program,
        cfg: PlenaConfig,
        hbm: H.Hbm,
        modes: Sequence[str],
        check: bool,
        budget: int | None = None,
    ) -> None:
        if program.target not in ("plena", ""):
            raise ZombossError(f"a {program.target} program cannot run on the PLENA simulator")
        kb = cfg.kb
        self.cfg, self.kb, self.modes = cfg, kb, T.check_modes(modes)
        self.source = str(program.meta.get("source", "")) if program.meta else ""
        self.m = _Machine(cfg, hbm)
        shared = _shared(kb)
        probing = "rtl" in self.modes
        self.code: list[_Decoded] = []
        same: dict[tuple[str, tuple[int, ...]], _Decoded] = {}  # identical static instructions share closures
        for pc, ins in enumerate(program.instrs):
            key = (ins.op, ins.args)
            twin = same.get(key)
            if twin is not None and ins.op not in _PC_DEPENDENT:
                self.code.append(_Decoded(ins, twin.run, twin.regs, twin.cost, twin.unit, twin.probe))
                continue
            sig = kb.instrs.get(ins.op)
            if sig is None:
                raise ZombossError(f"line {ins.line}: unknown PLENA instruction {ins.op!r}")
            if len(ins.args) != len(sig.operands):
                raise ZombossError(f"line {ins.line}: {ins.op} takes {len(sig.operands)} operands, got {len(ins.args)}")
            regs = tuple((i, o.kind, ins.args[i]) for i, o in enumerate(sig.operands) if o.kind in kb.regfiles)
            probe = T.hazard_probe(ins, cfg.vlen, cfg.pf_v) if probing else None
            d = _Decoded(ins, _decode(ins, pc, self.m), regs, shared.costs.static(ins), sig.unit, probe)
            same[key] = d
            self.code.append(d)
        self.counts = [0] * len(self.code)
        self._shared = shared
        self.checker = shared.take_checker() if check else None
        self.hazards = T.HazardPenalties.from_params(kb.params)
        self.hazard_cycles = 0
        self.overlap = T.Overlap(kb) if "overlap" in self.modes else None
        self.budget = budget if budget is not None else 1 << 62

    def _violation(self, rule: str, message: str, ins: Instr, values: Mapping[str, Any]) -> Violation:
        return Violation(
            rule, message, _doc_loc(self.kb, rule), self.m.executed - 1, ins.line, ins.op, dict(values), self.source
        )

    def execute(self, trace: bool = False) -> Iterator[tuple[Instr, dict[int, int]]]:
        """Run to the end; as a generator it yields (instruction, register values) before
        executing each instruction when `trace` is set (and nothing otherwise)."""
        try:
            yield from self._loop(trace)
        finally:
            if self.checker is not None:
                self._shared.give_back(self.checker)
                self.checker = None

    def _loop(self, trace: bool) -> Iterator[tuple[Instr, dict[int, int]]]:
        m, code, counts = self.m, self.code, self.counts
        n = len(code)
        checker, overlap = self.checker, self.overlap
        probing = "rtl" in self.modes
        between = self.hazards.between
        maxl = self.cfg.max_loop_instructions
        loops = m.loops
        budget = self.budget
        need_regs = checker is not None or trace or overlap is not None
        prev_probe: T.Probe | None = None
        pc = 0
        while pc < n:
            d = code[pc]
            counts[pc] += 1
            m.executed += 1
            if m.executed > budget:
                raise IllegalProgram(
                    [self._violation("sim.budget", f"the run exceeded max_instructions = {budget}", d.ins, {})]
                )
            if loops and m.executed - loops[0][2] > maxl:
                lp = loops[0]
                raise IllegalProgram(
                    [
                        self._violation(
                            "loop.guard",
                            f"an iteration of the hardware loop opened at line {lp[3]} executed more than "
                            f"max_loop_instructions = {maxl} instructions",
                            d.ins,
                            {
                                "loop_line": lp[3],
                                "iteration": lp[4] - m.gp[lp[1]] + 1 if lp[1] else 1,
                                "count": m.executed - lp[2],
                            },
                        )
                    ]
                )
            if need_regs:
                regvals = _regvals(d, m)
                if checker is not None:
                    found = checker.step(d.ins, regvals)
                    if found:
                        if trace:  # the consumer's own checker reports it; nothing after it is meaningful
                            yield d.ins, regvals
                            return
                        raise IllegalProgram(
                            [
                                Violation(v.rule, v.message, v.doc_loc, v.index, v.line, v.op, v.values, self.source)
                                for v in found
                            ]
                        )
                if trace:
                    yield d.ins, regvals
                if overlap is not None:
                    env = self._env(d, regvals)
            if probing and d.probe is not None:
                p = d.probe(m.gp)
                self.hazard_cycles += between(prev_probe, p)
                prev_probe = p
            elif probing:
                prev_probe = None
            try:
                nxt = d.run()
            except _Fault as f:
                raise IllegalProgram([self._violation(f.rule, f.message, d.ins, f.values)]) from None
            except (IndexError, ValueError) as e:
                raise IllegalProgram(
                    [self._violation("sim.fault", f"{d.ins.op} cannot execute: {e}", d.ins, {})]
                ) from None
            if overlap is not None:
                overlap.step(d.ins, d.unit, d.cost.rtl if d.cost is not None else m.last_dma, env)
            pc = pc + 1 if nxt is None else nxt

    def _env(self, d: _Decoded, regvals: Mapping[int, int]) -> dict[str, int]:
        sig = self.kb.instrs[d.ins.op]
        env = {o.name: a for o, a in zip(sig.operands, d.ins.args, strict=True)}
        for pos, _, _ in d.regs:
            env[f"{sig.operands[pos].name}.val"] = regvals[pos]
        env.update({f"cfg.{k}": v for k, v in self.m.csr.items()})
        return env

    def result(self, wall: float) -> PlenaRun:
        m, cfg = self.m, self.cfg
        per_op: dict[str, int] = {}
        per_unit: dict[str, int] = {}
        rtl_unit: dict[str, int] = {}
        rtl = emu = 0
        for d, c in zip(self.code, self.counts, strict=True):
            if not c:
                continue
            per_op[d.ins.op] = per_op.get(d.ins.op, 0) + c
            per_unit[d.unit] = per_unit.get(d.unit, 0) + c
            if d.cost is not None:
                rtl += c * d.cost.rtl
                emu += c * d.cost.emu
                rtl_unit[d.unit] = rtl_unit.get(d.unit, 0) + c * d.cost.rtl
        rtl_unit["dma"] = rtl_unit.get("dma", 0) + m.dma_cycles
        rtl_unit["hazards"] = self.hazard_cycles
        cycles: dict[str, int] = {}
        if "rtl" in self.modes:
            cycles["rtl"] = rtl + m.dma_cycles + self.hazard_cycles
        if "emu" in self.modes:
            cycles["emu"] = emu + m.dma_cycles
        if self.overlap is not None:
            cycles["overlap"] = self.overlap.makespan
        return PlenaRun(
            cfg=cfg,
            vram=m.V.reshape(-1),
            mram=m.M,
            fpsram=m.FS,
            intsram=m.IS,
            hbm=m.hbm,
            gp=tuple(m.gp),
            f=tuple(m.f),
            a=tuple(m.a),
            csr=dict(m.csr),
            cycles=cycles,
            rtl_breakdown=rtl_unit if "rtl" in self.modes else {},
            counts=dict(sorted(per_op.items())),
            class_counts=dict(sorted(per_unit.items())),
            instructions=m.executed,
            hbm_read_bytes=m.read_blocks * cfg.hbm_block,
            hbm_write_bytes=m.write_blocks * cfg.hbm_block,
            wall_s=wall,
        )


def _hbm_from(hbm: H.Hbm | bytes | bytearray | np.ndarray | None) -> H.Hbm:
    if isinstance(hbm, H.Hbm):
        return H.Hbm(hbm.array())
    return H.Hbm(hbm)


def _initialise(
    m: _Machine,
    fpsram_init: np.ndarray | Sequence[float] | None,
    intsram_init: np.ndarray | Sequence[int] | None,
    vram_init: np.ndarray | Mapping[int, np.ndarray] | None,
    fpsram_fp16: bool,
) -> None:
    if fpsram_init is not None:
        vals = np.asarray(fpsram_init, dtype=np.float32).reshape(-1)
        if vals.size > m.FS.size:
            raise ZombossError(f"fpsram_init has {vals.size} values; the FP SRAM holds {m.FS.size}")
        m.FS[: vals.size] = fp16_then_bf16(vals) if fpsram_fp16 else bf16_round(vals)
    if intsram_init is not None:
        ivals = np.asarray(intsram_init, dtype=np.int64).reshape(-1)
        if ivals.size > m.IS.size:
            raise ZombossError(f"intsram_init has {ivals.size} values; the INT SRAM holds {m.IS.size}")
        m.IS[: ivals.size] = (ivals & _MASK32).astype(np.uint32)
    if vram_init is not None:
        flat = m.V.reshape(-1)
        items = vram_init.items() if isinstance(vram_init, Mapping) else [(0, vram_init)]
        for base, data in items:
            vals = np.asarray(data, dtype=np.float32).reshape(-1)
            if base < 0 or base + vals.size > flat.size:
                raise ZombossError(
                    f"vram_init at element {base} ({vals.size} values) does not fit VRAM ({flat.size} elements)"
                )
            flat[base : base + vals.size] = bf16_round(vals)


def simulate(
    program: Program,
    cfg: PlenaConfig,
    hbm: H.Hbm | bytes | bytearray | np.ndarray | None = None,
    *,
    fpsram_init: np.ndarray | Sequence[float] | None = None,
    intsram_init: np.ndarray | Sequence[int] | None = None,
    vram_init: np.ndarray | Mapping[int, np.ndarray] | None = None,
    fpsram_fp16: bool = True,
    modes: Sequence[str] = T.DEFAULT_MODES,
    check: bool = True,
    max_instructions: int | None = None,
) -> PlenaRun:
    """Run a program and return the final state with cycles under each timing mode.

    `hbm` is the initial HBM image (bytes; see `hbm.place_mx_tensor`); it is copied.
    `fpsram_init` values go through fp16 first, as PLENA's harness preloads them
    (`fpsram_fp16=False` rounds straight to BF16). `vram_init` is a flat element array placed
    at address 0, or a mapping {element address: flat values}. With `check`, every executed
    instruction is checked against the doc's rules and the first violation raises
    `IllegalProgram` (rule id, program line, values); legal programs always terminate, so
    `max_instructions` (a cap on executed instructions) matters only for unchecked runs."""
    t0 = time.perf_counter()
    run = _Run(program, cfg, _hbm_from(hbm), modes, check, max_instructions)
    _initialise(run.m, fpsram_init, intsram_init, vram_init, fpsram_fp16)
    with np.errstate(all="ignore"):
        for _ in run.execute():
            pass
    return run.result(time.perf_counter() - t0)


def trace(
    program: Program,
    cfg: PlenaConfig,
    hbm: H.Hbm | bytes | bytearray | np.ndarray | None = None,
    *,
    fpsram_init: np.ndarray | Sequence[float] | None = None,
    intsram_init: np.ndarray | Sequence[int] | None = None,
    vram_init: np.ndarray | Mapping[int, np.ndarray] | None = None,
) -> Iterator[tuple[Instr, dict[int, int]]]:
    """The dynamic instruction stream with register contents per register operand position
    (gp and a: the value; f: the BF16 bit pattern), as `kb check` needs.

    The stream ends after the first instruction that breaks a doc rule (the consumer's checker
    reports it; executing past it could run forever, e.g. with a clobbered loop counter). A
    fault only the simulator can see (the loop guard, C_LOOP_END after C_BREAK) raises
    `IllegalProgram`."""
    run = _Run(program, cfg, _hbm_from(hbm), (), check=True)
    _initialise(run.m, fpsram_init, intsram_init, vram_init, True)
    with np.errstate(all="ignore"):
        yield from run.execute(trace=True)
