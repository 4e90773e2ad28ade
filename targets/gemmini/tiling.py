"""The library's tile-size heuristics: what `tiled_matmul_auto` and `tiled_conv_auto` choose.

Straight ports of `ucb-bar/gemmini-rocc-tests:include/gemmini.h` (reference §6.1, §6.2): the
double-buffered WS matmul tiling and `tiled_conv_stride_auto`'s shrink-then-grow search. They
decide the tiles of the library's mapping (`mapping.library_default`); the hardware-loop
lowering turns that mapping into the library's instruction stream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from zomboss.targets.gemmini.config import GemminiConfig

from zomboss.expr import cdiv


@dataclass(frozen=True)
class MatmulTiling:
    """Tile counts (units of DIM) chosen by tiled_matmul_auto, and what follows from them."""

    tile_i: int
    tile_j: int
    tile_k: int
    i0: int  # outer blocks per dimension (loop_ws calls = i0 * j0 * k0)
    j0: int
    k0: int
    spad_rows: int
    acc_rows: int
    a_reuse: bool
    b_reuse: bool

    @property
    def calls(self) -> int:
        return self.i0 * self.j0 * self.k0


def matmul_tiling(dim_i: int, dim_j: int, dim_k: int, cfg: GemminiConfig) -> MatmulTiling:
    """tiled_matmul_auto's tile sizes for the double-buffered WS dataflow (no norms)."""
    dim = cfg.dim
    ip, jp, kp = cdiv(dim_i, dim), cdiv(dim_j, dim), cdiv(dim_k, dim)
    max_spad, max_acc = cfg.half_sp_rows, cfg.half_acc_rows
    db_mats_in_partition = (cfg.half_sp_rows // 2) // dim  # db_partition_rows / DIM
    db_mats_in_acc = (cfg.acc_rows // 2) // dim
    db_max_ij = math.isqrt(db_mats_in_acc)  # (size_t)sqrt(...)
    db_max_k = db_mats_in_partition // db_max_ij
    ti, tj, tk = min(ip, db_max_ij), min(jp, db_max_ij), min(kp, db_max_k)

    def spad(i: int, j: int, k: int) -> int:
        return (i * k + k * j) * dim

    def acc(i: int, j: int) -> int:
        return i * j * dim

    while True:
        grew = False
        if spad(ti, tj + 1, tk) <= max_spad and acc(ti, tj + 1) <= max_acc and tj + 1 <= jp:
            tj += 1
            grew = True
        if spad(ti + 1, tj, tk) <= max_spad and acc(ti + 1, tj) <= max_acc and ti + 1 <= ip:
            ti += 1
            grew = True
        if spad(ti, tj, tk + 1) <= max_spad and tk + 1 <= kp:
            tk += 1
            grew = True
        if not grew:
            break
    i0, j0, k0 = cdiv(ip, ti), cdiv(jp, tj), cdiv(kp, tk)
    return MatmulTiling(ti, tj, tk, i0, j0, k0, spad(ti, tj, tk), acc(ti, tj), i0 * k0 <= 2, j0 * k0 <= 2)


@dataclass(frozen=True)
class ConvTiling:
    """tiled_conv_stride_auto's tile: [batches, porows, pocols, pochs, krows, kcols, kchs]."""

    batches: int
    porows: int
    pocols: int
    pochs: int
    krows: int
    kcols: int
    kchs: int
    spad_rows: int
    acc_rows: int

    @property
    def args(self) -> tuple[int, ...]:
        return (self.batches, self.porows, self.pocols, self.pochs, self.krows, self.kcols, self.kchs)


def conv_rows(
    args: tuple[int, ...] | list[int],
    stride: int,
    cfg: GemminiConfig,
    *,
    pool_size: int = 1,
    pool_stride: int = 1,
    downsample: bool = False,
) -> tuple[int, int]:
    """tiled_conv_total_spad_rows: (scratchpad rows of input + weights, accumulator rows)."""
    batches, porows, pocols, ochs, krows, kcols, kchs = args
    dim = cfg.dim
    orows = porows * pool_stride + pool_size - 1
    ocols = pocols * pool_stride + pool_size - 1
    irows = orows * stride + krows - 1
    icols = ocols * stride + kcols - 1
    ds = int(downsample)
    a_rows = cdiv(kchs, dim) * batches * (irows >> ds) * (icols >> ds)
    b_rows = cdiv(ochs, dim) * kcols * krows * kchs
    c_rows = cdiv(ochs, dim) * batches * orows * ocols
    return a_rows + b_rows, c_rows


def conv_tiling(
    batch: int,
    in_row: int,
    in_col: int,
    in_ch: int,
    out_ch: int,
    out_row: int,
    out_col: int,
    stride: int,
    padding: int,
    kernel: int,
    cfg: GemminiConfig,
    *,
    pool_size: int = 0,
    pool_stride: int = 0,
    pool_padding: int = 0,
    downsample: bool | None = None,
) -> ConvTiling:
    """tiled_conv_stride_auto's shrink-then-grow search for the largest tile fitting half of
    the scratchpad and half of the accumulator. `downsample=None` takes the dev library's path
    (1x1 stride-2 unpadded convs of even-sized inputs downsample); `False` forces the plain path
    (the dosa library never downsamples, `presets.Library.conv_downsample`)."""
    dim = cfg.dim
    no_pool = pool_stride == 0
    if no_pool:
        pool_size, pool_stride, pool_padding = 1, 1, 0
    porows = (out_row + 2 * pool_padding - pool_size) // pool_stride + 1
    pocols = (out_col + 2 * pool_padding - pool_size) // pool_stride + 1
    if downsample is None:
        downsample = stride == 2 and kernel == 1 and padding == 0 and no_pool and in_row % 2 == 0 and in_col % 2 == 0
    args = [batch, porows, pocols, out_ch, kernel, kernel, in_ch]
    maxes = list(args)
    max_spad, max_acc = cfg.half_sp_rows, cfg.half_acc_rows

    def rows(a: list[int]) -> tuple[int, int]:
        return conv_rows(a, stride, cfg, pool_size=pool_size, pool_stride=pool_stride, downsample=downsample)

    def fits(a: list[int]) -> bool:
        s, c = rows(a)
        return s <= max_spad and c <= max_acc

    ocols_idx, orows_idx, och_idx, ich_idx = 2, 1, 3, 6
    while not fits(args):
        best, idx = -1, -1
        for i, v in enumerate(args):
            if not (i == ocols_idx and v <= dim and args[orows_idx] > 1) and v > best:
                best, idx = v, i
        if idx in (och_idx, ich_idx):
            args[idx] = (args[idx] // dim) * dim if args[idx] % dim else args[idx] - dim
            args[idx] = args[idx] or 1
        else:
            args[idx] -= 1
    while args[ocols_idx] + 1 <= maxes[ocols_idx]:
        cand = list(args)
        cand[ocols_idx] += 1
        if not fits(cand):
            break
        args = cand
    grew = True
    while grew:
        grew = False
        for i in range(len(args)):
            cand = list(args)
            cand[i] += 1
            if cand[i] <= maxes[i] and fits(cand):
                args = cand
                grew = True
    s, c = rows(args)
    b, pr, pc, och, kr, kc, kch = args
    return ConvTiling(b, pr, pc, och, kr, kc, kch, spad_rows=s, acc_rows=c)
