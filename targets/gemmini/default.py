"""Candidate-0: Gemmini's own library kernels, re-implemented to emit programs.

`tiled_matmul_auto` (weight-stationary, through `loop_ws`) and `tiled_conv_auto` (through
`loop_conv_ws`) of `ucb-bar/gemmini-rocc-tests:include/gemmini.h` (reference §6.1, §6.2):
the same tiling heuristics, the same outer loops, paddings, operand-reuse spad ids, bias and
output pointer rules, emitted as `Instr`s in the signature contract instead of RoCC calls.
`build_default` places a workload's inputs in a `Dram` (deterministic random data from a
seed) and returns the program with a NumPy reference of the output, so a caller can simulate
and verify bit-exactly; `bound_cycles` is the roofline the search reports against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.dram import Dram
from zomboss.targets.gemmini.numerics import ONE_F32_BITS, f32_bits, scale_and_sat
from zomboss.targets.gemmini.presets import Preset, get_preset

from zomboss.errors import WorkloadError
from zomboss.program import Instr, Program
from zomboss.workload import Workload

# ------------------------------------------------------------------------------------------
# tiled_matmul_auto (WS)
# ------------------------------------------------------------------------------------------


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


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def matmul_tiling(dim_i: int, dim_j: int, dim_k: int, cfg: GemminiConfig) -> MatmulTiling:
    """tiled_matmul_auto's tile sizes for the double-buffered WS dataflow (no norms)."""
    dim = cfg.dim
    ip, jp, kp = _cdiv(dim_i, dim), _cdiv(dim_j, dim), _cdiv(dim_k, dim)
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
    i0, j0, k0 = _cdiv(ip, ti), _cdiv(jp, tj), _cdiv(kp, tk)
    return MatmulTiling(ti, tj, tk, i0, j0, k0, spad(ti, tj, tk), acc(ti, tj), i0 * k0 <= 2, j0 * k0 <= 2)


@dataclass(frozen=True)
class MatmulCall:
    """Arguments of one tiled_matmul_auto call (addresses in bytes, strides in elements)."""

    dim_i: int
    dim_j: int
    dim_k: int
    a: int
    b: int
    d: int  # 0: no bias
    c: int
    stride_a: int
    stride_b: int
    stride_d: int
    stride_c: int
    act: int = 0  # 0 none, 1 ReLU
    scale: float = 1.0  # acc -> int8 output scale
    a_scale: float = 1.0
    b_scale: float = 1.0
    d_scale: float = 1.0
    repeating_bias: bool = False
    a_transpose: bool = False
    b_transpose: bool = False
    full_c: bool = False
    low_d: bool = False


def tiled_matmul_auto(call: MatmulCall, cfg: GemminiConfig, tiling: MatmulTiling | None = None) -> list[Instr]:
    """The instruction stream of tiled_matmul_auto(..., WS) = tiled_matmul_outer with loop_ws."""
    if call.a_transpose and call.b_transpose:
        raise WorkloadError("tiled_matmul_auto: WS matmul with both A and B transposed is not implemented (gemmini.h)")
    dim = cfg.dim
    t = tiling or matmul_tiling(call.dim_i, call.dim_j, call.dim_k, cfg)
    ipad, jpad, kpad = (_cdiv(x, dim) * dim for x in (call.dim_i, call.dim_j, call.dim_k))
    last_i = t.tile_i if ipad % (t.tile_i * dim) == 0 else (ipad // dim) % t.tile_i
    last_j = t.tile_j if jpad % (t.tile_j * dim) == 0 else (jpad // dim) % t.tile_j
    last_k = t.tile_k if kpad % (t.tile_k * dim) == 0 else (kpad // dim) % t.tile_k
    pad_i, pad_j, pad_k = ipad - call.dim_i, jpad - call.dim_j, kpad - call.dim_k
    no_bias = call.d == 0
    d_base = 1 if no_bias else call.d  # gemmini.h: a dummy non-NULL D when there is no bias
    sizeof_d = 1 if call.low_d else 4
    sizeof_c = 4 if call.full_c else 1
    out = [
        Instr("config_ex", (1, call.act & 3, int(call.a_transpose), int(call.b_transpose), 1, 1, 0, ONE_F32_BITS, 0)),
        Instr("config_st", (call.stride_c * sizeof_c, call.act & 3, f32_bits(call.scale), 0, 0, 0, 0, 0, 0, 0, 0, 0)),
        Instr("config_ld", (0, call.stride_a, 0, dim, 1, f32_bits(call.a_scale))),
        Instr("config_ld", (1, call.stride_b, 0, dim, 1, f32_bits(call.b_scale))),
        Instr(
            "config_ld",
            (
                2,
                0 if call.repeating_bias else call.stride_d * sizeof_d,
                int(call.low_d),
                dim,
                1,
                f32_bits(call.d_scale),
            ),
        ),
    ]
    ti, tj, tk = t.tile_i, t.tile_j, t.tile_k
    for i0 in range(t.i0):
        for j0 in range(t.j0):
            for k0 in range(t.k0):
                a_id = (1 if i0 + k0 == 0 else 2) if t.a_reuse else 0
                b_id = (1 if j0 + k0 == 0 else 2) if t.b_reuse else 0
                if k0 != 0:
                    pre = 0
                else:
                    bias_row = 0 if call.repeating_bias else i0 * ti * dim
                    pre = d_base + (bias_row * call.stride_d + j0 * tj * dim) * sizeof_d
                c = call.c + (i0 * ti * dim * call.stride_c + j0 * tj * dim) * sizeof_c if k0 == t.k0 - 1 else 0
                ni = ti if i0 < t.i0 - 1 else last_i
                nj = tj if j0 < t.j0 - 1 else last_j
                nk = tk if k0 < t.k0 - 1 else last_k
                pi = pad_i if i0 == t.i0 - 1 else 0
                pj = pad_j if j0 == t.j0 - 1 else 0
                pk = pad_k if k0 == t.k0 - 1 else 0
                if call.a_transpose:
                    a = call.a + k0 * tk * dim * call.stride_a + i0 * ti * dim
                else:
                    a = call.a + i0 * ti * dim * call.stride_a + k0 * tk * dim
                if call.b_transpose:
                    b = call.b + j0 * tj * dim * call.stride_b + k0 * tk * dim
                else:
                    b = call.b + k0 * tk * dim * call.stride_b + j0 * tj * dim
                if t.a_reuse and j0 >= 1:
                    a = 0
                if t.b_reuse and i0 >= 1:
                    b = 0
                # sp_tiled_matmul_ws -> gemmini_loop_ws
                d = 0 if no_bias else pre
                ex_acc = int((not no_bias) or pre == 0)
                out += [
                    Instr("loop_ws_bounds", (ni, nj, nk, pi, pj, pk)),
                    Instr("loop_ws_addrs_ab", (a, b)),
                    Instr("loop_ws_addrs_dc", (d, c)),
                    Instr("loop_ws_strides_ab", (call.stride_a, call.stride_b)),
                    Instr("loop_ws_strides_dc", (0 if call.repeating_bias else call.stride_d, call.stride_c)),
                    Instr(
                        "loop_ws",
                        (
                            ex_acc,
                            int(call.full_c),
                            int(call.low_d),
                            call.act,
                            a_id,
                            b_id,
                            int(call.a_transpose),
                            int(call.b_transpose),
                            0,
                        ),
                    ),
                ]
    out.append(Instr("fence", ()))
    return out


def matmul_program(
    m: int, n: int, k: int, cfg: GemminiConfig, *, bias: bool = False, act: int = 0, scale: float = 1.0
) -> Program:
    """tiled_matmul_auto on row-major A (m x k), B (k x n), C (m x n) placed by a fresh `Dram`'s
    allocator, without data: what timing-only studies (and the calibration) simulate."""
    dram = Dram()
    a, b = dram.alloc(m * k), dram.alloc(k * n)
    d = dram.alloc(4 * n) if bias else 0
    c = dram.alloc(m * n)
    call = MatmulCall(m, n, k, a, b, d, c, k, n, n, n, act=act, scale=scale, repeating_bias=bias)
    return Program("gemmini", tuple(tiled_matmul_auto(call, cfg)), {"kernel": "tiled_matmul_auto", "shape": (m, n, k)})


# ------------------------------------------------------------------------------------------
# tiled_conv_auto (WS, loop_conv_ws)
# ------------------------------------------------------------------------------------------


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
    a_rows = _cdiv(kchs, dim) * batches * (irows >> ds) * (icols >> ds)
    b_rows = _cdiv(ochs, dim) * kcols * krows * kchs
    c_rows = _cdiv(ochs, dim) * batches * orows * ocols
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
) -> ConvTiling:
    """tiled_conv_stride_auto's shrink-then-grow search for the largest tile fitting half of
    the scratchpad and half of the accumulator."""
    dim = cfg.dim
    no_pool = pool_stride == 0
    if no_pool:
        pool_size, pool_stride, pool_padding = 1, 1, 0
    porows = (out_row + 2 * pool_padding - pool_size) // pool_stride + 1
    pocols = (out_col + 2 * pool_padding - pool_size) // pool_stride + 1
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


@dataclass(frozen=True)
class ConvCall:
    """Arguments of one tiled_conv_auto call (NHWC input, HWIO weights, int32 bias, NHWC output)."""

    batch: int
    in_row: int
    in_col: int
    in_ch: int
    out_ch: int
    kernel: int
    stride: int
    padding: int
    input: int
    weights: int
    bias: int  # 0: no bias
    output: int
    act: int = 0
    scale: float = 1.0
    pool_size: int = 0
    pool_stride: int = 0
    pool_padding: int = 0

    @property
    def out_row(self) -> int:
        return (self.in_row + 2 * self.padding - self.kernel) // self.stride + 1

    @property
    def out_col(self) -> int:
        return (self.in_col + 2 * self.padding - self.kernel) // self.stride + 1


def tiled_conv_auto(call: ConvCall, cfg: GemminiConfig, tiling: ConvTiling | None = None) -> list[Instr]:
    """The instruction stream of tiled_conv_auto(..., WS) followed by the caller's fence."""
    dim = cfg.dim
    if call.kernel <= call.padding:
        raise WorkloadError(f"tiled_conv: kernel_dim ({call.kernel}) must be larger than padding ({call.padding})")
    t = tiling or conv_tiling(
        call.batch,
        call.in_row,
        call.in_col,
        call.in_ch,
        call.out_ch,
        call.out_row,
        call.out_col,
        call.stride,
        call.padding,
        call.kernel,
        cfg,
        pool_size=call.pool_size,
        pool_stride=call.pool_stride,
        pool_padding=call.pool_padding,
    )
    in_stride, weight_stride, out_stride = call.in_ch, call.out_ch, call.out_ch
    no_bias = call.bias == 0
    bias_base = 1 if no_bias else call.bias  # gemmini.h: a dummy non-NULL bias
    no_pool = call.pool_stride == 0
    pool_size, pool_stride, pool_padding = (
        (1, 1, 0) if no_pool else (call.pool_size, call.pool_stride, call.pool_padding)
    )
    stride, padding, kdim = call.stride, call.padding, call.kernel
    downsample = (
        stride == 2 and kdim == 1 and call.in_row % 2 == 0 and call.in_col % 2 == 0 and padding == 0 and no_pool
    )
    out_row, out_col = call.out_row, call.out_col
    out = [
        Instr("config_st", (out_stride, call.act, f32_bits(call.scale), 0, 0, 0, 0, 0, 0, 0, 0, 0)),
        Instr("config_ex", (1, 0, 0, 0, stride >> int(downsample), 1, 0, 0, 0)),
    ]
    pool_out_row = (out_row + 2 * pool_padding - pool_size) // pool_stride + 1
    pool_out_col = (out_col + 2 * pool_padding - pool_size) // pool_stride + 1
    batches, porows, pocols, pochs, krows, kcols, kchs = t.args
    n_kch, n_poch = _cdiv(call.in_ch, kchs), _cdiv(call.out_ch, pochs)
    n_b, n_porow, n_pocol = _cdiv(call.batch, batches), _cdiv(pool_out_row, porows), _cdiv(pool_out_col, pocols)
    n_krow, n_kcol = _cdiv(kdim, krows), _cdiv(kdim, kcols)
    b_reuse = n_kch * n_poch * n_krow * n_kcol <= 2
    a_reuse = n_kch * n_krow * n_kcol * n_b * n_porow * n_pocol <= 2
    for b in range(0, call.batch, batches):
        for porow in range(0, pool_out_row, porows):
            orow = porow * pool_stride - pool_padding
            for pocol in range(0, pool_out_col, pocols):
                ocol = pocol * pool_stride - pool_padding
                for poch in range(0, call.out_ch, pochs):
                    for krow in range(0, kdim, krows):
                        irow = max(orow, 0) * stride + krow - padding
                        for kcol in range(0, kdim, kcols):
                            icol = max(ocol, 0) * stride + kcol - padding
                            for kch in range(0, call.in_ch, kchs):
                                a_id = (1 if kch + krow + kcol + b + porow + pocol == 0 else 2) if a_reuse else 0
                                b_id = (1 if kch + poch + krow + kcol == 0 else 2) if b_reuse else 0
                                last = krow + krows >= kdim and kcol + kcols >= kdim and kch + kchs >= call.in_ch
                                o = (
                                    (
                                        call.output
                                        + (b * pool_out_row * pool_out_col + porow * pool_out_col + pocol) * out_stride
                                        + poch
                                    )
                                    if last
                                    else 0
                                )
                                first = krow == 0 and kcol == 0 and kch == 0
                                bias = bias_base + poch * 4 if first else 0
                                batches_ = min(batches, call.batch - b)
                                porows_ = min(porows, pool_out_row - porow)
                                pocols_ = min(pocols, pool_out_col - pocol)
                                pochs_ = min(pochs, call.out_ch - poch)
                                krows_ = min(krows, kdim - krow)
                                kcols_ = min(kcols, kdim - kcol)
                                kchs_ = min(kchs, call.in_ch - kch)
                                ocols_ = pocols_ * pool_stride + pool_size - 1
                                orows_ = porows_ * pool_stride + pool_size - 1
                                plpad = -ocol if ocol < 0 else 0
                                prpad = ocol + ocols_ - out_col if ocol + ocols_ > out_col else 0
                                pupad = -orow if orow < 0 else 0
                                pdpad = orow + orows_ - out_row if orow + orows_ > out_row else 0
                                icols_ = (ocols_ - plpad - prpad) * stride + kcols_ - 1
                                irows_ = (orows_ - pupad - pdpad) * stride + krows_ - 1
                                lpad = -icol if icol < 0 else 0
                                rpad = icol + icols_ - call.in_col if icol + icols_ > call.in_col else 0
                                upad = -irow if irow < 0 else 0
                                dpad = irow + irows_ - call.in_row if irow + irows_ > call.in_row else 0
                                w = (
                                    call.weights
                                    + (krow * kdim * call.in_ch + kcol * call.in_ch + kch) * weight_stride
                                    + poch
                                )
                                inp = (
                                    call.input
                                    + (b * call.in_row * call.in_col + (irow + upad) * call.in_col + (icol + lpad))
                                    * in_stride
                                    + kch
                                )
                                if b_reuse and pocol + porow + b > 0:
                                    w = 0
                                if a_reuse and poch > 0:
                                    inp = 0
                                out += _sp_tiled_conv(
                                    call,
                                    dim,
                                    batches_,
                                    porows_,
                                    pocols_,
                                    pochs_,
                                    krows_,
                                    kcols_,
                                    kchs_,
                                    (lpad, rpad, upad, dpad, plpad, prpad, pupad, pdpad),
                                    (pool_size, pool_stride, pool_padding, pool_out_row, pool_out_col),
                                    (inp, w, o, bias),
                                    no_bias,
                                    no_pool,
                                    downsample,
                                    a_id,
                                    b_id,
                                    (in_stride, weight_stride, out_stride),
                                )
    out.append(Instr("fence", ()))
    return out


def _sp_tiled_conv(
    call: ConvCall,
    dim: int,
    batches: int,
    porows: int,
    pocols: int,
    pochs: int,
    krows: int,
    kcols: int,
    kchs: int,
    pads: tuple[int, ...],
    pool: tuple[int, ...],
    ptrs: tuple[int, ...],
    no_bias: bool,
    no_pool: bool,
    downsample: bool,
    a_id: int,
    b_id: int,
    strides: tuple[int, int, int],
) -> list[Instr]:
    """sp_tiled_conv: one tile as the seven loop_conv_ws instructions."""
    lpad, rpad, upad, dpad, plpad, prpad, pupad, pdpad = pads
    pool_size, pool_stride, pool_padding, pool_out_row, pool_out_col = pool
    inp, w, o, bias = ptrs
    in_stride, weight_stride, out_stride = strides
    orows = porows * pool_stride + pool_size - 1 - pupad - pdpad
    ocols = pocols * pool_stride + pool_size - 1 - plpad - prpad
    # first-layer optimisation (HAS_FIRST_LAYER_OPTIMIZATIONS): several kernel columns per row
    pixels = 1 if (downsample or kchs > dim) else dim // kchs
    pixels = min(pixels, kcols)
    return [
        Instr(
            "loop_conv_ws_config1",
            (
                call.batch,
                call.in_row,
                call.in_ch,
                call.out_ch,
                call.out_row,
                pool_out_row,
                call.out_col,
                call.stride,
                call.padding,
            ),
        ),
        Instr(
            "loop_conv_ws_config2",
            (call.kernel, pool_out_col, pool_size, pool_stride, pool_padding, batches, porows, pocols, pochs),
        ),
        Instr("loop_conv_ws_config3", (krows, kcols, kchs, lpad, rpad, upad, dpad, plpad, call.in_col)),
        Instr("loop_conv_ws_config4", (orows, prpad, pupad, pdpad, 1, in_stride, weight_stride, out_stride, ocols)),
        Instr("loop_conv_ws_config5", (w, o)),
        Instr("loop_conv_ws_config6", (bias, inp)),
        Instr(
            "loop_conv_ws",
            (int(no_bias), 0, 0, 0, 0, 0, 0, pixels, a_id, b_id, int(no_pool), int(downsample), 0, call.act),
        ),
    ]


# ------------------------------------------------------------------------------------------
# workloads: inputs in DRAM, the default program and the NumPy reference
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DefaultKernel:
    """A program with its inputs placed in `dram` and the expected output."""

    program: Program
    dram: Dram
    out_addr: int
    out_shape: tuple[int, ...]
    reference: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    def output(self, dram: Dram) -> np.ndarray:
        """The kernel's output as it sits in `dram` (after a functional simulation)."""
        return dram.read(self.out_addr, self.reference.dtype, self.out_shape)

    def verify(self, dram: Dram) -> bool:
        return bool(np.array_equal(self.output(dram), self.reference))


def output_scale(k: int) -> float:
    """A power-of-two output scale that keeps random int8 products of depth k mostly unsaturated.

    The sum of k products of uniform int8 values has a standard deviation of about
    sqrt(k) * 73.9^2; scaling it to about 32 spreads outputs over the int8 range. Powers of
    two are exact in fp32, so the scale itself adds no rounding.
    """
    return 2.0 ** round(math.log2(32.0 / (math.sqrt(k) * 73.9**2)))


def _rand_i8(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def _bias(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    span = int(math.sqrt(k) * 73.9**2)
    return rng.integers(-span, span + 1, size=n, dtype=np.int32)


def matmul_reference(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None, relu: bool, scale: float) -> np.ndarray:
    """scale_and_sat(A @ B + bias): the CPU reference of gemmini.h."""
    acc = a.astype(np.int64) @ b.astype(np.int64)
    if bias is not None:
        acc = acc + bias.astype(np.int64)
    return scale_and_sat(acc, int(relu), scale)


def conv_reference(
    x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, stride: int, pad: int, relu: bool, scale: float
) -> np.ndarray:
    """NHWC x HWIO convolution with zero padding, + bias, then scale_and_sat (conv_cpu)."""
    n, h, wd, c = x.shape
    r, s, _, k = w.shape
    oh, ow = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    xp = np.zeros((n, h + 2 * pad, wd + 2 * pad, c), dtype=np.int64)
    xp[:, pad : pad + h, pad : pad + wd] = x
    acc = np.zeros((n, oh, ow, k), dtype=np.int64)
    w64 = w.astype(np.int64)
    for kr in range(r):
        for kc in range(s):
            win = xp[:, kr : kr + stride * (oh - 1) + 1 : stride, kc : kc + stride * (ow - 1) + 1 : stride]
            acc += np.tensordot(win, w64[kr, kc], axes=([3], [0]))
    if bias is not None:
        acc += bias.astype(np.int64)
    return scale_and_sat(acc, int(relu), scale)


def build_default(wl: Workload, cfg: GemminiConfig, seed: int = 0) -> DefaultKernel:
    """The compiler default for a matmul or conv workload, with inputs placed in DRAM."""
    if wl.op == "matmul":
        return _build_matmul(wl, cfg, seed)
    if wl.op == "conv":
        return _build_conv(wl, cfg, seed)
    raise WorkloadError(f"{wl.id}: Gemmini has no default for op {wl.op!r} (ops: matmul, conv)")


def _build_matmul(wl: Workload, cfg: GemminiConfig, seed: int) -> DefaultKernel:
    m, n, k = wl["M"], wl["N"], wl["K"]
    bias, relu = bool(wl.shape.get("bias", 0)), bool(wl.shape.get("relu", 0))
    rng = np.random.default_rng(seed)
    a, b = _rand_i8(rng, (m, k)), _rand_i8(rng, (k, n))
    d = _bias(rng, n, k) if bias else None
    scale = output_scale(k)
    dram = Dram(nbytes=m * k + k * n + 4 * n + m * n + (1 << 16))
    pa = dram.alloc(a.nbytes)
    dram.write(pa, a)
    pb = dram.alloc(b.nbytes)
    dram.write(pb, b)
    pd = 0
    if d is not None:
        pd = dram.alloc(d.nbytes)
        dram.write(pd, d)
    pc = dram.alloc(m * n)
    dram.alloc(cfg.dim * max(k, n))  # slack: padded tiles never read past the modelled end
    call = MatmulCall(m, n, k, pa, pb, pd, pc, k, n, n, n, act=int(relu), scale=scale, repeating_bias=True)
    tiling = matmul_tiling(m, n, k, cfg)
    prog = Program(
        "gemmini", tuple(tiled_matmul_auto(call, cfg, tiling)), {"workload": wl.id, "kernel": "tiled_matmul_auto"}
    )
    meta = {"tiling": tiling, "scale": scale, "addrs": {"A": pa, "B": pb, "D": pd, "C": pc}}
    return DefaultKernel(prog, dram, pc, (m, n), matmul_reference(a, b, d, relu, scale), meta)


def _build_conv(wl: Workload, cfg: GemminiConfig, seed: int) -> DefaultKernel:
    nb, h, w, c, k = wl["N"], wl["H"], wl["W"], wl["C"], wl["K"]
    r, s = wl["R"], wl["S"]
    stride, pad = wl.shape.get("stride", 1), wl.shape.get("pad", 0)
    if r != s:
        raise WorkloadError(f"{wl.id}: tiled_conv_auto needs a square kernel (R={r}, S={s})")
    if r <= pad:
        raise WorkloadError(f"{wl.id}: the kernel ({r}) must be larger than the padding ({pad})")
    bias, relu = bool(wl.shape.get("bias", 1)), bool(wl.shape.get("relu", 0))
    rng = np.random.default_rng(seed)
    x = _rand_i8(rng, (nb, h, w, c))
    wt = _rand_i8(rng, (r, s, c, k))
    bv = _bias(rng, k, r * s * c) if bias else None
    scale = output_scale(r * s * c)
    call0 = ConvCall(nb, h, w, c, k, r, stride, pad, 0, 0, 0, 0)
    oh, ow = call0.out_row, call0.out_col
    if oh < 1 or ow < 1:
        raise WorkloadError(f"{wl.id}: the output would be empty ({oh}x{ow})")
    dram = Dram(nbytes=x.nbytes + wt.nbytes + 4 * k + nb * oh * ow * k + (1 << 16))
    px = dram.alloc(x.nbytes)
    dram.write(px, x)
    pw = dram.alloc(wt.nbytes)
    dram.write(pw, wt)
    pb = 0
    if bv is not None:
        pb = dram.alloc(bv.nbytes)
        dram.write(pb, bv)
    po = dram.alloc(nb * oh * ow * k)
    dram.alloc(64 * cfg.dim)
    call = ConvCall(nb, h, w, c, k, r, stride, pad, px, pw, pb, po, act=int(relu), scale=scale)
    tiling = conv_tiling(nb, h, w, c, k, oh, ow, stride, pad, r, cfg)
    prog = Program(
        "gemmini", tuple(tiled_conv_auto(call, cfg, tiling)), {"workload": wl.id, "kernel": "tiled_conv_auto"}
    )
    meta = {"tiling": tiling, "scale": scale, "addrs": {"input": px, "weights": pw, "bias": pb, "output": po}}
    return DefaultKernel(prog, dram, po, (nb, oh, ow, k), conv_reference(x, wt, bv, stride, pad, relu, scale), meta)


# ------------------------------------------------------------------------------------------
# roofline
# ------------------------------------------------------------------------------------------


def bound_cycles(wl: Workload, cfg: GemminiConfig, preset: str | Preset) -> int:
    """max(array-bound cycles after padding to DIM, minimum DRAM traffic / modelled bandwidth)."""
    p = get_preset(preset)
    dim = cfg.dim
    if wl.op == "matmul":
        m, n, k = wl["M"], wl["N"], wl["K"]
        bias = bool(wl.shape.get("bias", 0))
        rows, cols, depth = m, n, k
        rd = m * k + k * n + (4 * n if bias else 0)
        wr = m * n
    elif wl.op == "conv":
        nb, h, w, c, kk = wl["N"], wl["H"], wl["W"], wl["C"], wl["K"]
        r, s = wl["R"], wl["S"]
        stride, pad = wl.shape.get("stride", 1), wl.shape.get("pad", 0)
        oh, ow = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
        rows, cols, depth = nb * oh * ow, kk, r * s * c
        rd = nb * h * w * c + r * s * c * kk + (4 * kk if wl.shape.get("bias", 1) else 0)
        wr = nb * oh * ow * kk
    else:
        raise WorkloadError(f"{wl.id}: no roofline for op {wl.op!r}")
    compute = _cdiv(rows, dim) * _cdiv(cols, dim) * _cdiv(depth, dim) * dim
    memory = max(rd / p.rd_bytes_per_cycle, wr / p.wr_bytes_per_cycle)
    return int(math.ceil(max(compute, memory)))
