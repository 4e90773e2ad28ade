"""Test oracle: Gemmini's library kernels ported straight from gemmini.h, emitting instructions.

`tiled_matmul_auto` (weight-stationary, through `loop_ws`) and `tiled_conv_auto` (through
`loop_conv_ws`) of `ucb-bar/gemmini-rocc-tests:include/gemmini.h` (reference §6.1, §6.2):
the outer loops, paddings, operand-reuse spad ids, bias and output pointer rules, emitted as
`Instr`s in the signature contract instead of RoCC calls. The target's Candidate-0 is the
hardware-loop lowering of the library's mapping (`mapping.library_default`); these ports are
the independent statement it is checked against (test_lowering.py), nothing more.
"""

from __future__ import annotations

from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.numerics import ONE_F32_BITS, f32_bits
from zomboss.targets.gemmini.platform import ConvCall, MatmulCall  # the call records of both library revisions
from zomboss.targets.gemmini.tiling import ConvTiling, MatmulTiling, conv_tiling, matmul_tiling

from zomboss.errors import WorkloadError
from zomboss.expr import cdiv
from zomboss.program import Instr


def tiled_matmul_auto(call: MatmulCall, cfg: GemminiConfig, tiling: MatmulTiling | None = None) -> list[Instr]:
    """The instruction stream of tiled_matmul_auto(..., WS) = tiled_matmul_outer with loop_ws."""
    if call.a_transpose and call.b_transpose:
        raise WorkloadError("tiled_matmul_auto: WS matmul with both A and B transposed is not implemented (gemmini.h)")
    dim = cfg.dim
    t = tiling or matmul_tiling(call.dim_i, call.dim_j, call.dim_k, cfg)
    ipad, jpad, kpad = (cdiv(x, dim) * dim for x in (call.dim_i, call.dim_j, call.dim_k))
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
    n_kch, n_poch = cdiv(call.in_ch, kchs), cdiv(call.out_ch, pochs)
    n_b, n_porow, n_pocol = cdiv(call.batch, batches), cdiv(pool_out_row, porows), cdiv(pool_out_col, pocols)
    n_krow, n_kcol = cdiv(kdim, krows), cdiv(kdim, kcols)
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
