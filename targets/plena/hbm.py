"""PLENA's HBM: a byte image holding MXFP8 tensors, the MX transfers of H_PREFETCH_M,
H_PREFETCH_V and H_STORE_V exactly as the emulator performs them, and their cost model.

The cost model is the closed form fitted to Ramulator2 replays of the emulator's access
pattern (reference §3.2 and Appendix A; plena.md §6.4): a prefetch issues every 64-byte block
read at once, a store does a sequential read-modify-write per block. Its constants are doc
parameters (`hbm_*`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from zomboss.targets.plena.numerics import MX_BLOCK, mx_dequantize, mx_quantize

from zomboss.errors import ZombossError
from zomboss.util.inputs import MAX_WORKLOAD_BYTES

MAX_HBM_BYTES = MAX_WORKLOAD_BYTES  # the HBM image a functional simulation may grow


class HbmError(ZombossError):
    """An HBM image or tensor placement that cannot be honoured."""


class Hbm:
    """A growable byte-addressed image. Reads past the end return zeros (as PLENA's HBM
    model does for unallocated memory); writes past the end grow the image."""

    def __init__(self, data: bytes | bytearray | np.ndarray | None = None) -> None:
        if data is None:
            self._buf = np.zeros(0, dtype=np.uint8)
        elif isinstance(data, np.ndarray):
            if data.dtype != np.uint8 or data.ndim != 1:
                raise HbmError(f"an HBM image must be a 1-D uint8 array, got {data.dtype} with shape {data.shape}")
            self._buf = data.copy()
        else:
            self._buf = np.frombuffer(bytes(data), dtype=np.uint8).copy()
        self.size = int(self._buf.size)  # bytes written or supplied so far

    def _ensure(self, end: int) -> None:
        if end > MAX_HBM_BYTES:  # a store to 10^15 would be an allocation of a petabyte
            raise HbmError(
                f"HBM address {end - 1:,} is past the {MAX_HBM_BYTES >> 20} MiB an HBM image may span "
                "(docs/archdoc.md, Limits)"
            )
        if end > self._buf.size:
            grown = np.zeros(max(end, 2 * self._buf.size, 4096), dtype=np.uint8)
            grown[: self._buf.size] = self._buf
            self._buf = grown
        self.size = max(self.size, end)

    def read(self, addr: int, n: int) -> np.ndarray:
        """n bytes from addr (zeros past the end)."""
        out = np.zeros(n, dtype=np.uint8)
        lo, hi = min(addr, self.size), min(addr + n, self.size)
        if hi > lo:
            out[: hi - lo] = self._buf[lo:hi]
        return out

    def write(self, addr: int, data: np.ndarray) -> None:
        data = np.asarray(data, dtype=np.uint8).reshape(-1)
        if addr < 0:
            raise HbmError(f"negative HBM address {addr}")
        self._ensure(addr + data.size)
        self._buf[addr : addr + data.size] = data

    def write_rows(self, addr: int, pitch: int, rows: np.ndarray) -> None:
        """Row i of a 2-D uint8 array at addr + i*pitch (a column block of a row-major tensor)."""
        rows = np.asarray(rows, dtype=np.uint8)
        if addr < 0:
            raise HbmError(f"negative HBM address {addr}")
        n, length = rows.shape
        self._ensure(addr + (n - 1) * pitch + length)
        idx = addr + np.arange(n, dtype=np.int64)[:, None] * pitch + np.arange(length, dtype=np.int64)
        self._buf[idx] = rows

    def same_as(self, other: Hbm, skip: tuple[int, int] = (0, 0), piece: int = 1 << 24) -> tuple[int, int]:
        """(bytes that differ from `other` outside [skip), the first such address or -1),
        compared piece by piece (images of hundreds of MB are not copied); missing bytes are 0."""
        n, count, first = max(self.size, other.size), 0, -1
        for lo in range(0, n, piece):
            a, b = self.read(lo, min(piece, n - lo)), other.read(lo, min(piece, n - lo))
            diff = np.flatnonzero(a != b) + lo
            diff = diff[(diff < skip[0]) | (diff >= skip[1])]
            if diff.size:
                count += int(diff.size)
                first = int(diff[0]) if first < 0 else first
        return count, first

    def gather(self, addrs: np.ndarray, length: int) -> np.ndarray:
        """Rows of `length` bytes starting at each address: shape [len(addrs), length]."""
        idx = np.asarray(addrs, dtype=np.int64)[:, None] + np.arange(length, dtype=np.int64)
        if idx.size and int(idx.max()) < self.size:
            return self._buf[idx]
        out = np.zeros(idx.shape, dtype=np.uint8)
        inside = idx < self.size
        out[inside] = self._buf[idx[inside]]
        return out

    def tobytes(self) -> bytes:
        return self._buf[: self.size].tobytes()

    def array(self) -> np.ndarray:
        """The image as a uint8 array (a copy)."""
        return self._buf[: self.size].copy()


# ---------------------------------------------------------------------------------------
# Transfers
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Transfer:
    """Where one DMA instruction's rows live in HBM, and how many 64-byte blocks it touches."""

    elem_addrs: np.ndarray  # [rows] byte address of each row's elements
    scale_addrs: np.ndarray  # [rows] byte address of each row's scale bytes
    rowlen: int  # elements (= bytes) per row
    pitch: int  # bytes between rows
    n_blk: int  # 64-byte blocks: element blocks touched per row + one scale block per row


def blocks_touched(addrs: np.ndarray, length: int, block: int) -> np.ndarray:
    """64-byte blocks each [addr, addr + length) range spans."""
    a = np.asarray(addrs, dtype=np.int64)
    return (a + length - 1) // block - a // block + 1


def plan(
    base: int,
    offset: int,
    scale_reg: int,
    pitch: int,
    rows: int,
    rowlen: int,
    *,
    mx_ratio: int = 8,
    hbm_block: int = 64,
) -> Transfer:
    """The emulator's addressing (dispatch.rs `mx_region`, dma.rs): row i's elements at
    base + offset + i*pitch, its scale bytes at base + SCALE_REG + offset/8 + floor(i*pitch/8)."""
    i = np.arange(rows, dtype=np.int64)
    elem = base + offset + i * pitch
    scale = base + scale_reg + offset // mx_ratio + (i * pitch) // mx_ratio
    n_blk = int(blocks_touched(elem, rowlen, hbm_block).sum()) + rows
    return Transfer(elem, scale, rowlen, pitch, n_blk)


def load_rows(hbm: Hbm, t: Transfer, *, block: int = MX_BLOCK, hbm_block: int = 64) -> np.ndarray:
    """Dequantized float32 rows [rows, rowlen] of an MX transfer.

    The emulator fetches a row's scale bytes with a single read that stops at the end of the
    64-byte block holding the first one; bytes past it arrive as 0 (scale 0). Modelled here
    for fidelity; the doc's rule h.scale_block keeps legal programs away from it."""
    codes = hbm.gather(t.elem_addrs, t.rowlen)
    nscale = t.rowlen // block
    scales = hbm.gather(t.scale_addrs, nscale)
    room = hbm_block - (t.scale_addrs % hbm_block)
    scales = np.where(np.arange(nscale)[None, :] < room[:, None], scales, 0).astype(np.uint8)
    return mx_dequantize(codes, scales, block)


def store_rows(hbm: Hbm, t: Transfer, rows: np.ndarray, *, block: int = MX_BLOCK) -> None:
    """MX-quantize float32 rows and write them row by row, elements then scales (the
    emulator's order, which decides overlapping writes)."""
    codes, scales = mx_quantize(rows, block)
    for i in range(rows.shape[0]):
        hbm.write(int(t.elem_addrs[i]), codes[i])
        hbm.write(int(t.scale_addrs[i]), scales[i])


# ---------------------------------------------------------------------------------------
# Cost model
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HbmCost:
    """Appendix A's closed form; every constant is a doc parameter (`hbm_*`)."""

    block: int = 64
    pf_fixed: int = 20
    pf_min: int = 22
    pf_blk_x100: int = 55
    pitch_mid: int = 1024
    pitch_far: int = 2048
    row_near_x100: int = 30
    row_mid_x100: int = 130
    row_far_x100: int = 190
    st_blk: int = 16

    @classmethod
    def from_params(cls, p: Mapping[str, int]) -> HbmCost:
        return cls(
            block=p["hbm_block"],
            pf_fixed=p["hbm_pf_fixed"],
            pf_min=p["hbm_pf_min"],
            pf_blk_x100=p["hbm_pf_blk_x100"],
            pitch_mid=p["hbm_pitch_mid"],
            pitch_far=p["hbm_pitch_far"],
            row_near_x100=p["hbm_row_near_x100"],
            row_mid_x100=p["hbm_row_mid_x100"],
            row_far_x100=p["hbm_row_far_x100"],
            st_blk=p["hbm_st_blk"],
        )

    def row_term_x100(self, pitch: int) -> int:
        if pitch < self.pitch_mid:
            return self.row_near_x100
        return self.row_mid_x100 if pitch < self.pitch_far else self.row_far_x100

    def prefetch(self, t: Transfer) -> int:
        """t = max(22, 20 + 0.55 n_blk + r rows), rounded half up, in integer hundredths."""
        rows = len(t.elem_addrs)
        x100 = self.pf_fixed * 100 + self.pf_blk_x100 * t.n_blk + self.row_term_x100(t.pitch) * rows
        return max(self.pf_min, (x100 + 50) // 100)

    def store(self, t: Transfer) -> int:
        """Sequential read-modify-write of every touched block."""
        return self.st_blk * t.n_blk

    def least(self, rows: int, rowlen: int, store: bool) -> int:
        """The cheapest any transfer of `rows` rows of `rowlen` bytes can be: every row touches
        at least ceil(rowlen / block) element blocks and one scale block, at the nearest pitch."""
        n_blk = rows * (-(-rowlen // self.block) + 1)
        if store:
            return self.st_blk * n_blk
        x100 = (
            self.pf_fixed * 100
            + self.pf_blk_x100 * n_blk
            + min(self.row_near_x100, self.row_mid_x100, self.row_far_x100) * rows
        )
        return max(self.pf_min, (x100 + 50) // 100)


# ---------------------------------------------------------------------------------------
# Placing tensors (row-major MXFP8: element bytes, then scale bytes; plena.md §2)
# ---------------------------------------------------------------------------------------


def mx_tensor_bytes(x: np.ndarray, block: int = MX_BLOCK) -> np.ndarray:
    """The HBM image of a row-major [rows, cols] tensor: rows*cols element bytes followed by
    rows*cols/block scale bytes (the value SCALE_REG must hold is rows*cols)."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise HbmError(f"an HBM tensor must be 2-D [rows, cols], got shape {x.shape}")
    if x.shape[1] % block:
        raise HbmError(f"an MX tensor row must hold whole blocks of {block} elements, got {x.shape[1]} columns")
    codes, scales = mx_quantize(x, block)
    return np.concatenate([codes.reshape(-1), scales.reshape(-1)])


def place_mx_tensor(hbm: Hbm, base: int, x: np.ndarray, block: int = MX_BLOCK) -> int:
    """Write a tensor's MX image at `base`; returns the first byte after it."""
    img = mx_tensor_bytes(x, block)
    hbm.write(base, img)
    return base + img.size


def read_mx_tensor(hbm: Hbm, base: int, rows: int, cols: int, block: int = MX_BLOCK) -> np.ndarray:
    """Dequantized float32 [rows, cols] of an MX tensor placed at `base`."""
    codes = hbm.read(base, rows * cols).reshape(rows, cols)
    scales = hbm.read(base + rows * cols, rows * cols // block).reshape(rows, cols // block)
    return mx_dequantize(codes, scales, block)
