"""The DRAM model: a flat, byte-addressed, little-endian memory (numpy uint8).

Address 0 is reserved (Gemmini reads it as "zeros" and a kernel never writes it), so
allocation starts at `BASE`. The memory grows on demand up to `limit` bytes: a program may
touch any address below that; reads of never-written bytes return zeros.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from zomboss.errors import ZombossError

BASE = 0x1000  # first allocatable byte; [0, BASE) stays zero and unallocated


def place(sizes: list[int], align: int = 64) -> list[int]:
    """The addresses a fresh `Dram` gives to successive `alloc`s of these sizes (no memory)."""
    out, top = [], BASE
    for n in sizes:
        addr = (top + align - 1) & ~(align - 1)
        out.append(addr)
        top = addr + n
    return out


class DramError(ZombossError):
    """An access outside the modelled DRAM."""


class Dram:
    """Byte memory with a bump allocator and strided matrix views."""

    def __init__(self, nbytes: int = 1 << 20, limit: int = 1 << 30) -> None:
        self.limit = limit
        self.mem: np.ndarray = np.zeros(max(nbytes, BASE), dtype=np.uint8)
        self._top = BASE

    def __len__(self) -> int:
        return len(self.mem)

    def copy(self) -> Dram:
        """An independent memory with the same contents and allocation state."""
        out = Dram.__new__(Dram)
        out.limit, out.mem, out._top = self.limit, self.mem.copy(), self._top
        return out

    @property
    def top(self) -> int:
        """One past the highest allocated byte."""
        return self._top

    def alloc(self, nbytes: int, align: int = 64) -> int:
        """Reserve `nbytes` aligned to `align` (a power of two); returns the address."""
        if nbytes < 0 or align < 1 or align & (align - 1):
            raise DramError(f"bad allocation request: {nbytes} bytes aligned to {align}")
        addr = (self._top + align - 1) & ~(align - 1)
        self._ensure(addr + nbytes)
        self._top = addr + nbytes
        return addr

    def _ensure(self, end: int) -> None:
        if end > self.limit:
            raise DramError(f"access up to byte {end:#x} exceeds the modelled DRAM ({self.limit:#x} bytes)")
        if end > len(self.mem):
            grown = np.zeros(max(end, 2 * len(self.mem)), dtype=np.uint8)
            grown[: len(self.mem)] = self.mem
            self.mem = grown

    def write(self, addr: int, data: np.ndarray, row_stride_bytes: int | None = None) -> None:
        """Store an array (row-major); 2-D arrays may be placed with a row stride in bytes."""
        arr = np.ascontiguousarray(data)
        if arr.ndim == 2 and row_stride_bytes is not None:
            raw = arr.view(np.uint8).reshape(arr.shape[0], -1)
            self.rows(addr, raw.shape[0], raw.shape[1], row_stride_bytes, writable=True)[...] = raw
            return
        flat = arr.reshape(-1).view(np.uint8)
        self._ensure(addr + flat.size)
        self.mem[addr : addr + flat.size] = flat

    def read(
        self, addr: int, dtype: np.dtype | type, shape: tuple[int, ...], row_stride_bytes: int | None = None
    ) -> np.ndarray:
        """A copy of a row-major array at `addr`; 2-D reads may use a row stride in bytes."""
        dt = np.dtype(dtype)
        if len(shape) == 2 and row_stride_bytes is not None:
            raw = self.rows(addr, shape[0], shape[1] * dt.itemsize, row_stride_bytes)
            return np.ascontiguousarray(raw).view(dt).reshape(shape)
        n = int(np.prod(shape)) * dt.itemsize
        self._ensure(addr + n)
        return self.mem[addr : addr + n].copy().view(dt).reshape(shape)

    def rows(self, addr: int, rows: int, row_bytes: int, stride: int, writable: bool = False) -> np.ndarray:
        """A (rows, row_bytes) uint8 view of rows `stride` bytes apart (stride 0 repeats one row)."""
        if addr < 0 or stride < 0:
            raise DramError(f"negative DRAM address or stride ({addr:#x}, {stride})")
        end = addr + (rows - 1) * stride + row_bytes if rows else addr
        self._ensure(end)
        if writable and stride == 0 and rows > 1:
            raise DramError("a store with row stride 0 would write one DRAM row several times")
        base = self.mem[addr:]
        return as_strided(base, shape=(rows, row_bytes), strides=(stride, 1), writeable=writable)
