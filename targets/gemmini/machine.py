"""Gemmini's architectural state and the effect of each instruction, as Spike defines it.

The semantics follow `ucb-bar/libgemmini:gemmini.cc` (reference §2-§3): int8 scratchpad rows,
int32 accumulator rows, mvin/mvout with their config states (stride 0 broadcast, block
stride, shrunk int8 into the accumulator, fp32 scaling rounded half-to-even and saturated,
first-layer pixel repeats, max-pooling mvouts), and the WS/OS matmul with transposes and A/C
strides. Every operation is vectorised over a tile.

Legality is the ISA doc's business (the checker runs before an instruction executes); the few
guards here only stop numpy from silently clipping an access the rules should have refused.
"""

from __future__ import annotations

import numpy as np
from zomboss.targets.gemmini.asm import ACCUMULATE, GARBAGE, IS_ACC, MVINS, READ_FULL
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.dram import Dram
from zomboss.targets.gemmini.numerics import (
    ONE_F32_BITS,
    acc_readout,
    f32_from_bits,
    relu,
    rounding_right_shift,
    sat8,
    scale_sat8,
)

from zomboss.errors import ZombossError


class SimulatorFault(ZombossError):
    """An access outside Gemmini's memories that no doc rule caught (a gap in the doc's rules)."""


class LoadConfig:
    """One config_ld state (mvin / mvin2 / mvin3)."""

    __slots__ = ("stride", "scale_bits", "scale", "shrunk", "block_stride", "pixel_repeats")

    def __init__(self, dim: int) -> None:
        self.stride = 0
        self.scale_bits = ONE_F32_BITS
        self.scale = np.float32(1.0)
        self.shrunk = 0
        self.block_stride = dim
        self.pixel_repeats = 1


class StoreConfig:
    """The config_st state (mvout)."""

    __slots__ = (
        "stride",
        "act",
        "scale_bits",
        "scale",
        "pool_stride",
        "pool_size",
        "pool_out_dim",
        "porows",
        "pocols",
        "orows",
        "ocols",
        "upad",
        "lpad",
    )

    def __init__(self) -> None:
        self.stride = 0
        self.act = 0
        self.scale_bits = ONE_F32_BITS
        self.scale = np.float32(1.0)
        self.pool_stride = self.pool_size = self.pool_out_dim = self.porows = self.pocols = 0
        self.orows = self.ocols = self.upad = self.lpad = 0


class ExecConfig:
    """The config_ex state (preload / compute)."""

    __slots__ = ("dataflow", "act", "sys_shift", "a_stride", "c_stride", "a_transpose", "b_transpose")

    def __init__(self) -> None:
        self.dataflow = 0  # 0 = OS, 1 = WS
        self.act = 0
        self.sys_shift = 0
        self.a_stride = 1
        self.c_stride = 1
        self.a_transpose = 0
        self.b_transpose = 0


class Machine:
    """Scratchpad, accumulator, configuration states and the array's stationary operand."""

    def __init__(self, cfg: GemminiConfig, dram: Dram) -> None:
        self.cfg = cfg
        self.row_mask = cfg.row_mask
        self.dram = dram
        self.spad = np.zeros((cfg.sp_rows, cfg.dim), dtype=np.int8)
        self.acc = np.zeros((cfg.acc_rows, cfg.dim), dtype=np.int32)
        self.ld = [LoadConfig(cfg.dim) for _ in range(3)]
        self.st = StoreConfig()
        self.ex = ExecConfig()
        self.pe = np.zeros((cfg.dim, cfg.dim), dtype=np.float64)  # WS weights / OS partial sums
        self._zeros = np.zeros((cfg.dim, cfg.dim), dtype=np.float64)
        self._zeros.flags.writeable = False
        self.pending: tuple[int, ...] | None = None  # the last preload's operands

    # -- dispatch ---------------------------------------------------------------------------
    def execute(self, op: str, a: tuple[int, ...]) -> None:
        """Apply one instruction (mnemonic and operands in the contract's order)."""
        if op in MVINS:
            self.mvin(MVINS[op], *a)
        elif op == "preload":
            self.pending = a
        elif op == "compute_preloaded":
            self.compute(True, *a)
        elif op == "compute_accumulated":
            self.compute(False, *a)
        elif op == "mvout":
            self.mvout(*a)
        elif op == "config_ld":
            self.config_ld(*a)
        elif op == "config_st":
            self.config_st(*a)
        elif op == "config_ex":
            self.config_ex(*a)
        # flush, fence and loop configuration have no architectural effect here

    # -- configuration ------------------------------------------------------------------------
    def config_ld(
        self, sid: int, stride: int, shrunk: int, block_stride: int, pixel_repeats: int, scale_bits: int
    ) -> None:
        s = self.ld[sid]
        s.stride, s.shrunk, s.block_stride = stride, shrunk, block_stride
        s.pixel_repeats = max(1, pixel_repeats)
        s.scale_bits, s.scale = scale_bits, f32_from_bits(scale_bits)

    def config_st(
        self,
        stride: int,
        act: int,
        scale_bits: int,
        pool_stride: int,
        pool_size: int,
        pool_out_dim: int,
        porows: int,
        pocols: int,
        orows: int,
        ocols: int,
        upad: int,
        lpad: int,
    ) -> None:
        s = self.st
        s.stride, s.act = stride, act
        if scale_bits != 0xFFFFFFFF:  # RTL keeps the previous scale when all 32 bits are ones
            s.scale_bits, s.scale = scale_bits, f32_from_bits(scale_bits)
        s.pool_stride, s.pool_size, s.pool_out_dim = pool_stride, pool_size, pool_out_dim
        s.porows, s.pocols, s.orows, s.ocols, s.upad, s.lpad = porows, pocols, orows, ocols, upad, lpad

    def config_ex(
        self,
        dataflow: int,
        act: int,
        a_t: int,
        b_t: int,
        a_stride: int,
        c_stride: int,
        sys_shift: int,
        _acc_scale_bits: int,
        set_only_strides: int,
    ) -> None:
        e = self.ex
        if not set_only_strides:
            e.dataflow, e.act, e.sys_shift, e.a_transpose, e.b_transpose = dataflow, act, sys_shift, a_t, b_t
        e.a_stride, e.c_stride = a_stride, c_stride

    # -- helpers --------------------------------------------------------------------------------
    def _rows(self, mem: np.ndarray, lo: int, n: int, what: str) -> None:
        if lo < 0 or lo + n > len(mem):
            raise SimulatorFault(f"{what}: rows [{lo}, {lo + n}) outside a memory of {len(mem)} rows")

    # -- mvin -----------------------------------------------------------------------------------
    def mvin(self, sid: int, dram_addr: int, local: int, cols: int, rows: int) -> None:
        dim = self.cfg.dim
        s = self.ld[sid]
        to_acc = bool(local & IS_ACC)
        row0 = local & self.row_mask
        narrow = (not to_acc) or s.shrunk
        esz = 1 if narrow else 4
        if dram_addr == 0:
            vals = np.zeros((rows, cols), dtype=np.int8 if narrow else np.int32)
        else:
            n_src = 1 if s.stride == 0 else rows
            raw = np.ascontiguousarray(self.dram.rows(dram_addr, n_src, cols * esz, s.stride))
            vals = raw.view(np.int8) if narrow else raw.view("<i4")
            if narrow and s.scale_bits != ONE_F32_BITS:
                vals = scale_sat8(vals, s.scale)
            if n_src != rows:
                vals = np.broadcast_to(vals, (rows, cols))
        mem = self.acc if to_acc else self.spad
        accumulate = to_acc and bool(local & ACCUMULATE)
        nblocks = -(-cols // dim)
        for blk in range(nblocks):
            c0, c1 = blk * dim, min(cols, (blk + 1) * dim)
            r0 = row0 + blk * s.block_stride
            self._rows(mem, r0, rows, "mvin")
            part = vals[:, c0:c1]
            if accumulate:
                mem[r0 : r0 + rows, : c1 - c0] += part.astype(np.int32)
            else:
                mem[r0 : r0 + rows, : c1 - c0] = part
            for q in range(1, s.pixel_repeats):  # first-layer im2col along kernel columns
                if q * cols + (c1 - c0) > dim:
                    raise SimulatorFault(f"mvin pixel repeat {q} writes past column {dim}")
                first = max(0, q - r0)  # rows with lrow >= q
                if first >= rows:
                    continue
                dst = mem[r0 + first - q : r0 + rows - q, q * cols : q * cols + (c1 - c0)]
                if accumulate:
                    dst += part[first:].astype(np.int32)
                else:
                    dst[...] = part[first:]

    # -- mvout ----------------------------------------------------------------------------------
    def mvout(self, dram_addr: int, local: int, cols: int, rows: int) -> None:
        dim, st = self.cfg.dim, self.st
        from_acc = bool(local & IS_ACC)
        row0 = local & self.row_mask
        mem = self.acc if from_acc else self.spad
        if st.pool_stride:
            self._pooled_mvout(dram_addr, mem, from_acc, row0, cols)
            return
        parts = []
        for blk in range(-(-cols // dim)):
            c0, c1 = blk * dim, min(cols, (blk + 1) * dim)
            r0 = row0 + blk * dim
            self._rows(mem, r0, rows, "mvout")
            parts.append(mem[r0 : r0 + rows, : c1 - c0])
        m = np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]
        if from_acc and local & READ_FULL:
            out = np.ascontiguousarray(m, dtype="<i4")
        elif from_acc:
            out = acc_readout(m, st.scale, st.act)
        else:
            out = np.ascontiguousarray(m)
        raw = out.view(np.uint8).reshape(rows, -1)
        if st.stride == 0:  # every row lands on the same DRAM row: the last one written stays
            raw = raw[-1:]
        self.dram.rows(dram_addr, len(raw), raw.shape[1], st.stride, writable=True)[...] = raw

    def _pooled_mvout(self, dram_addr: int, mem: np.ndarray, from_acc: bool, row0: int, channels: int) -> None:
        st = self.st
        orows, ocols, ps, size = st.orows, st.ocols, st.pool_stride, st.pool_size
        self._rows(mem, row0, orows * ocols, "pooled mvout")
        x = mem[row0 : row0 + orows * ocols, :channels].reshape(orows, ocols, channels)
        x = acc_readout(x, st.scale, st.act) if from_acc else x.astype(np.int8)
        h, w = (st.porows - 1) * ps + size, (st.pocols - 1) * ps + size
        padded = np.zeros((h, w, channels), dtype=np.int8)  # out-of-range window entries count as 0
        rh, rw = min(orows, h - st.upad), min(ocols, w - st.lpad)
        padded[st.upad : st.upad + rh, st.lpad : st.lpad + rw] = x[:rh, :rw]
        best = np.full((st.porows, st.pocols, channels), -128, dtype=np.int8)
        for wr in range(size):
            for wc in range(size):
                win = padded[wr : wr + st.porows * ps : ps, wc : wc + st.pocols * ps : ps]
                best = np.maximum(best, win[: st.porows, : st.pocols])
        for porow in range(st.porows):
            addr = dram_addr + porow * st.pool_out_dim * st.stride
            self.dram.rows(addr, st.pocols, channels, st.stride, writable=True)[...] = best[porow].view(np.uint8)

    # -- matmul -----------------------------------------------------------------------------------
    # Products are computed in float64, which is exact here: an int8 x int8 dot product of DIM
    # terms plus an int8 bias stays far below 2^53, and OS sums are wrapped to int32 on output.
    def _tile(self, addr: int, rows: int, cols: int, stride: int, transpose: bool, what: str) -> np.ndarray:
        """A DIM x DIM operand from the scratchpad: element [i][k] for i < rows, k < cols, else 0."""
        dim = self.cfg.dim
        if addr == GARBAGE:
            return self._zeros
        row0 = addr & self.row_mask
        if rows == dim and cols == dim and stride == 1 and not transpose:
            if row0 + dim > len(self.spad):
                self._rows(self.spad, row0, dim, what)
            return self.spad[row0 : row0 + dim].astype(np.float64)
        t = np.zeros((dim, dim), dtype=np.float64)
        n = cols if transpose else rows
        self._rows(self.spad, row0, (n - 1) * stride + 1, what)
        src = self.spad[row0 : row0 + (n - 1) * stride + 1 : stride] if stride else self.spad[[row0] * n]
        if transpose:
            t[:rows, :cols] = src[:cols, :rows].T
        else:
            t[:rows, :cols] = src[:rows, :cols]
        return t

    def compute(self, preloaded: bool, a: int, bd: int, a_cols: int, a_rows: int, bd_cols: int, bd_rows: int) -> None:
        if self.pending is None:
            raise SimulatorFault("compute without a preload")
        p_bd, p_c, p_cols, p_rows, c_cols, c_rows = self.pending
        self.pending = None
        e = self.ex
        ws = e.dataflow == 1
        if preloaded:
            self.pe = self._tile(p_bd, p_rows, p_cols, 1, ws and bool(e.b_transpose), "preload")
        a_eff = self._tile(a, a_rows, a_cols, e.a_stride, bool(e.a_transpose), "compute A")
        if ws:
            value = a_eff @ self.pe
            if bd != GARBAGE:
                value += self._tile(bd, bd_rows, bd_cols, 1, False, "compute D")
        else:
            b = self._tile(bd, bd_rows, bd_cols, 1, bool(e.b_transpose), "compute B")
            self.pe = self.pe + a_eff @ b
            value = self.pe
        if p_c == GARBAGE:
            return
        row0 = p_c & self.row_mask
        out = value[:c_rows, :c_cols].astype(np.int64).astype(np.int32)  # int32 wrap-around
        stride = e.c_stride
        span = (c_rows - 1) * stride + 1
        rows = slice(row0, row0 + span, stride) if stride else [row0] * c_rows
        if p_c & IS_ACC:
            self._rows(self.acc, row0, span, "preload C")
            if p_c & ACCUMULATE and not stride:  # every row adds into the same one, in turn (Spike's loop)
                self.acc[row0, :c_cols] += out.sum(axis=0, dtype=np.int64).astype(np.int32)
            elif p_c & ACCUMULATE:
                self.acc[rows, :c_cols] += out
            else:
                self.acc[rows, :c_cols] = out
        else:
            self._rows(self.spad, row0, span, "preload C")
            shifted = rounding_right_shift(out, e.sys_shift if not ws else 0)
            self.spad[rows, :c_cols] = relu(sat8(shifted), e.act)
