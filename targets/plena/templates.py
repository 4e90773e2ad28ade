"""The PLENA compiler's code templates (reference §4): the building blocks every lowering uses.

`load_batch` (§4.1) stages activations column-block-major in VRAM; `load_tiles` moves
MLEN×MLEN weight blocks into the matrix SRAM; `projection` is the compiler's rolled output
tile (§4.3); `block_binary` its `vram_block_add`; the softmax, SiLU·gate, causal-mask and
online-softmax pieces are those of §4.4-§4.7. Where the lowering offers an alternative to a
template (a rolled loop for an unrolled one, another mask construction), the alternative is a
parameter of the same function, so the compiler's choice and its variants share their code.

Register use follows the compiler: gp0 is zero, FP registers f1..f7, HBM bases in a0..a7.
FP SRAM slots are those the PLENA tests preload (reference §4, "Compiler conventions").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

from zomboss.errors import WorkloadError
from zomboss.expr import cdiv

from .builder import Asm
from .layout import Geometry, HbmTensor, VramTensor

FP_ZERO = 0
FP_EPS_OR_SCALE = 1
FP_RECI_HIDDEN_OR_NEG_INF = 2
FP_ONE = 5
FP_STATE = 10  # online-softmax state: m [MLEN], m_res [MLEN], l [MLEN] (plena.md §8 `fp_state`)
RMS_EPS = 1e-6
PROJ_REGS = (1, 2, 3, 4, 5, 6, 7, 8, 9)  # act, mat, result, 3 loop counters, 3 loop bases (the compiler's 9)


def softmax_scale(cols: int) -> float:
    """The softmax tests' pre-scale, 1/sqrt(row length) (reference §5.1)."""
    return 1.0 / math.sqrt(cols)


def attention_scale(d: int) -> float:
    return 1.0 / math.sqrt(d)


# -- data movement ----------------------------------------------------------------------------


def set_hbm_base(asm: Asm, areg: int, gtmp: int, base: int) -> None:
    """a[areg] = base, through a GP register (the compiler's preload_addr_reg)."""
    asm.li(gtmp, base)
    asm.set_addr(areg, gtmp)


def csr_setup(asm: Asm, src: HbmTensor, areg: int, g_off: int, g_stride: int, base: bool = True) -> None:
    """Program the a-register (optional), SCALE_REG and STRIDE_REG for loads from `src`."""
    if base:
        set_hbm_base(asm, areg, g_off, src.base)
    asm.li(g_off, src.scale_offset)
    asm.set_scale(g_off)
    asm.li(g_stride, src.cols)
    asm.set_stride(g_stride)


def load_batch(asm: Asm, geo: Geometry, src: HbmTensor, dst: VramTensor, areg: int, regs: Sequence[int]) -> None:
    """HBM -> VRAM activation load (§4.1): one H_PREFETCH_V per (column block, PV-row group).

    regs: offset, stride/row-offset, VRAM pointer, outer loop counter, inner loop counter.
    """
    g_off, g_stride, g_dst, g_outer, g_inner = regs[:5]
    if dst.phys_rows != src.rows or dst.cols != src.cols:
        raise WorkloadError(f"load_batch {src.name}: VRAM tensor must match the HBM shape")
    if src.rows % geo.pf_v:
        raise WorkloadError(f"{src.name}: rows={src.rows} must be a multiple of the V prefetch amount {geo.pf_v}")
    set_hbm_base(asm, areg, g_off, src.base)
    asm.li(g_off, src.scale_offset)
    asm.set_scale(g_off)
    asm.li(g_off, 0)
    asm.li(g_dst, dst.base)
    asm.li(g_stride, src.cols)
    asm.set_stride(g_stride)
    groups = src.rows // geo.pf_v
    with asm.loop(g_outer, cdiv(src.cols, geo.vlen)):
        asm.addi(g_stride, g_off, 0)
        if groups > 1:
            with asm.loop(g_inner, groups):
                asm.prefetch_v(g_dst, g_stride, areg)
                asm.addi(g_dst, g_dst, geo.vlen * geo.pf_v)
                asm.addi(g_stride, g_stride, src.cols * geo.pf_v)
        else:
            asm.prefetch_v(g_dst, g_stride, areg)
            asm.addi(g_dst, g_dst, geo.vlen * geo.pf_v)
        asm.addi(g_off, g_off, geo.vlen)


def transfer_rows(
    asm: Asm,
    geo: Geometry,
    op: str,
    hbm: HbmTensor,
    row0: int,
    vram: VramTensor,
    rows: int,
    areg: int,
    regs: Sequence[int],
) -> None:
    """Move `rows` rows of `hbm` from row `row0` to or from the first rows of `vram` (a buffer
    of a row chunk, column-block-major): H_PREFETCH_V (load) or H_STORE_V (store) per
    (column block, row group). The HBM offset of (row0, 0) is built with `li` and the loops
    only step addresses by a row group and a column block, so every immediate stays in range
    whatever the tensor's size (`load_batch` steps through the whole tensor instead).

    regs: HBM offset of the column block, HBM row offset, VRAM column base, VRAM row pointer,
    outer and inner loop counters."""
    g_col, g_row, g_vcol, g_vrow, l_outer, l_inner = regs[:6]
    amount = geo.pf_v if op == "H_PREFETCH_V" else geo.wb_v
    if rows % amount or rows > vram.phys_rows or vram.cols != hbm.cols:
        raise WorkloadError(
            f"{hbm.name}: {rows} rows must be a multiple of the {op} amount {amount} and fit the buffer {vram.name}"
        )
    set_hbm_base(asm, areg, g_col, hbm.base)
    asm.li(g_col, hbm.scale_offset)
    asm.set_scale(g_col)
    asm.li(g_row, hbm.cols)
    asm.set_stride(g_row)
    asm.li(g_col, row0 * hbm.cols)
    asm.li(g_vcol, vram.base)
    with asm.loop(l_outer, cdiv(hbm.cols, geo.vlen)):
        asm.addi(g_row, g_col, 0)
        asm.addi(g_vrow, g_vcol, 0)
        with asm.loop(l_inner, rows // amount):
            asm.emit(op, g_vrow, g_row, areg, 1, 0)
            asm.addi(g_vrow, g_vrow, geo.vlen * amount)
            asm.addi(g_row, g_row, hbm.cols * amount)
        asm.addi(g_col, g_col, geo.vlen)
        asm.addi(g_vcol, g_vcol, vram.phys_rows * geo.vlen)


def load_tiles(
    asm: Asm,
    geo: Geometry,
    src: HbmTensor,
    blocks: Sequence[tuple[int, int]],
    mram_tile0: int,
    areg: int,
    regs: Sequence[int],
    setup: bool = True,
) -> None:
    """HBM -> MRAM: one H_PREFETCH_M per MLEN×MLEN block (row_block, col_block) of `src`,
    into consecutive MRAM tiles from `mram_tile0`. regs: scale/offset, stride, MRAM pointer.
    `setup` programs the a-register, SCALE_REG and STRIDE_REG first (the compiler always does)."""
    g_off, g_stride, g_mram = regs[:3]
    if setup:
        csr_setup(asm, src, areg, g_off, g_stride)
    for i, (rb, cb) in enumerate(asm.copies(blocks)):
        asm.li(g_mram, (mram_tile0 + i) * geo.tile)
        asm.li(g_off, rb * geo.mlen * src.cols + cb * geo.mlen)
        asm.prefetch_m(g_mram, g_off, areg)


def block_binary(
    asm: Asm, geo: Geometry, op: str, dst: int, src1: int, src2: int, rows: int, regs: Sequence[int]
) -> None:
    """dst[i] = src1[i] (op) src2[i] for `rows` consecutive VRAM rows, in one rolled loop
    (the compiler's vram_block_add with rows = MLEN)."""
    g_dst, g_s1, g_s2, l_row = regs[:4]
    asm.li(g_dst, dst)
    asm.li(g_s1, src1)
    asm.li(g_s2, src2)
    with asm.loop(l_row, rows):
        asm.emit(op, g_dst, g_s1, g_s2, 0)
        asm.addi(g_dst, g_dst, geo.vlen)
        asm.addi(g_s1, g_s1, geo.vlen)
        asm.addi(g_s2, g_s2, geo.vlen)


def copy_into(asm: Asm, geo: Geometry, dst: VramTensor, src: VramTensor) -> None:
    """dst += src over src's rows: MLEN-row block adds when aligned, else row by row and column
    block by column block with address reloads (§4.8 vram_add and its unaligned fallback)."""
    if src.rows % geo.mlen == 0 and src.phys_rows % geo.mlen == 0:
        for rb in asm.copies(range(src.rows // geo.mlen)):
            for cb in asm.copies(range(cdiv(src.cols, geo.vlen))):
                d = dst.block(rb, cb, geo.mlen)
                block_binary(asm, geo, "V_ADD_VV", d, d, src.block(rb, cb, geo.mlen), geo.mlen, (1, 2, 3, 4))
        return
    g_dst, g_src = 1, 2
    for r in asm.copies(range(src.rows)):
        for cb in range(cdiv(dst.cols, geo.vlen)):
            asm.li(g_dst, dst.addr(r, cb * geo.vlen))
            asm.li(g_src, src.addr(r, cb * geo.vlen))
            asm.v_add_vv(g_dst, g_dst, g_src)


# -- matrix -------------------------------------------------------------------------------------


def projection(
    asm: Asm,
    geo: Geometry,
    act: int,
    act_k_stride: int,
    mram: int,
    out: int,
    k_tiles: int,
    row_groups: int,
    *,
    order: str = "oc_r_k",
    unroll: bool = False,
    transposed: bool = False,
    mat_k_stride: int | None = None,
) -> None:
    """One MLEN-wide output tile: out[rows, 0:MLEN] = act[rows, K-chunk] · MRAM column (§4.3).

    The compiler's nest is rolled loops oc (BLEN-wide column slices) -> r (BLEN-row groups,
    valid rows only) -> k (K tiles), M_MM_WO after each k loop; `order="r_oc_k"` puts the row
    groups outside and `unroll` bakes every address in. `transposed` uses M_TMM (MRAM holds
    rows of Kᵀ). Registers: act, mat, result, 3 loop counters, 3 loop bases (PROJ_REGS)."""
    mks = geo.tile if mat_k_stride is None else mat_k_stride
    slices = geo.mlen // geo.blen
    row_stride = geo.blen * geo.vlen
    col_stride = geo.blen * geo.mlen
    g_act, g_mat, g_res, l_oc, l_r, l_k, g_act_row, g_mat_col, g_res_base = PROJ_REGS

    def mm(ga: int, gm: int) -> None:
        if transposed:
            asm.m_tmm(ga, gm)
        else:
            asm.m_mm(gm, ga)

    if unroll:
        pairs = [(oc, r) for oc in range(slices) for r in range(row_groups)]
        if order == "r_oc_k":
            pairs = [(oc, r) for r in range(row_groups) for oc in range(slices)]
        for oc, r in asm.copies(pairs):
            for k in asm.copies(range(k_tiles)):
                asm.li(g_act, act + r * row_stride + k * act_k_stride)
                asm.li(g_mat, mram + oc * col_stride + k * mks)
                mm(g_act, g_mat)
            asm.li(g_res, out + oc * geo.blen + r * row_stride)
            asm.m_mm_wo(g_res)
        return

    def k_loop() -> None:
        asm.addi(g_act, g_act_row, 0)
        asm.addi(g_mat, g_mat_col, 0)
        with asm.loop(l_k, k_tiles):
            mm(g_act, g_mat)
            asm.addi(g_act, g_act, act_k_stride)
            asm.addi(g_mat, g_mat, mks)
        asm.m_mm_wo(g_res)

    slices_level = _Level(l_oc, slices, g_mat_col, mram, col_stride, geo.blen)
    rows_level = _Level(l_r, row_groups, g_act_row, act, row_stride, row_stride)
    outer, inner = (slices_level, rows_level) if order == "oc_r_k" else (rows_level, slices_level)
    asm.li(outer.reg, outer.start)
    asm.li(g_res_base, out)
    with asm.loop(outer.counter, outer.trips):
        asm.li(inner.reg, inner.start)
        asm.addi(g_res, g_res_base, 0)
        with asm.loop(inner.counter, inner.trips):
            k_loop()
            asm.addi(inner.reg, inner.reg, inner.step)
            asm.addi(g_res, g_res, inner.out_step)
        asm.addi(outer.reg, outer.reg, outer.step)
        asm.addi(g_res_base, g_res_base, outer.out_step)


class _Level(NamedTuple):
    """One rolled loop level of a projection: its counter register and trip count, the address
    register it advances (from `start` by `step`) and how far it moves the result address."""

    counter: int
    trips: int
    reg: int
    start: int
    step: int
    out_step: int


# -- vector -------------------------------------------------------------------------------------


def softmax_rows(
    asm: Asm,
    geo: Geometry,
    base: int,
    rows: int,
    chunks: int,
    chunk_stride: int,
    *,
    rolled: bool,
    scale_reg: int | None = None,
    acc: int | None = None,
) -> None:
    """Scaled softmax of `rows` VRAM rows from `base`, each of `chunks` VLEN chunks
    `chunk_stride` elements apart (§4.6, extended to rows longer than VLEN as §5.2 suggests).

    Per row: scale, max, subtract, exp, sum, reciprocal, multiply; each step runs over the
    row's chunks in a rolled loop. The rows are straight-line code (the compiler) or one
    hardware loop (`rolled`). The scale is loaded into f2, which then also seeds the row max
    (the compiler's quirk; softmax is shift-invariant), or it is already in `scale_reg` and the
    max starts at -inf. With `acc` (a scratch row) the row sum adds the exponentiated chunks
    with V_ADD_VV and reduces once instead of once per chunk."""
    g_row, g_ptr, l_chunk, l_row, g_acc = 1, 2, 3, 4, 5

    def over_chunks(body: Callable[[int], None]) -> None:
        if chunks == 1:
            body(g_row)
            return
        asm.addi(g_ptr, g_row, 0)
        with asm.loop(l_chunk, chunks):
            body(g_ptr)
            asm.addi(g_ptr, g_ptr, chunk_stride)

    def exp_sum(g: int) -> None:
        asm.v_sub_vf(g, g, 2)
        asm.v_exp(g, g)
        asm.v_red_sum(3, g)

    def row_body() -> None:
        if scale_reg is None:
            asm.s_ld_fp(2, 0, FP_EPS_OR_SCALE)
            over_chunks(lambda g: asm.v_mul_vf(g, g, 2))
        else:
            over_chunks(lambda g: asm.v_mul_vf(g, g, scale_reg))
            asm.s_ld_fp(2, 0, FP_RECI_HIDDEN_OR_NEG_INF)
        over_chunks(lambda g: asm.v_red_max(2, g))
        asm.fadd(3, 0, 0)
        if acc is None or chunks == 1:
            over_chunks(exp_sum)
        else:
            asm.addi(g_ptr, g_row, 0)
            asm.v_sub_vf(g_ptr, g_ptr, 2)
            asm.v_exp(g_acc, g_ptr)
            with asm.loop(l_chunk, chunks - 1):
                asm.addi(g_ptr, g_ptr, chunk_stride)
                asm.v_sub_vf(g_ptr, g_ptr, 2)
                asm.v_exp(g_ptr, g_ptr)
                asm.v_add_vv(g_acc, g_acc, g_ptr)
            asm.addi(g_ptr, g_row, 0)
            asm.v_exp(g_ptr, g_ptr)
            asm.v_red_sum(3, g_acc)
        asm.freci(3, 3)
        over_chunks(lambda g: asm.v_mul_vf(g, g, 3))

    if acc is not None and chunks > 1:
        asm.li(g_acc, acc)
    asm.li(g_row, base)
    if rolled:
        with asm.loop(l_row, rows):
            row_body()
            asm.addi(g_row, g_row, geo.vlen)
        return
    for r in asm.copies(range(rows)):
        if r:
            asm.addi(g_row, g_row, geo.vlen)
        row_body()


def silu_gate(asm: Asm, geo: Geometry, up: VramTensor, gate: VramTensor, tmp: int, unroll: bool = True) -> None:
    """up = silu(up)·gate, per VLEN chunk: 6 vector ops + 2 address bumps (§4.4), unrolled
    (the compiler) or in one hardware loop."""
    g_up, g_gate, g_tmp, l_chunk = 1, 2, 3, 4
    asm.li(g_up, up.base)
    asm.li(g_gate, gate.base)
    asm.li(g_tmp, tmp)
    asm.s_ld_fp(1, 0, FP_ONE)

    def chunk() -> None:
        asm.v_sub_vf(g_tmp, g_up, 0, 0, 1)
        asm.v_exp(g_tmp, g_tmp)
        asm.v_add_vf(g_tmp, g_tmp, 1)
        asm.v_reci(g_tmp, g_tmp)
        asm.v_mul_vv(g_tmp, g_tmp, g_up)
        asm.v_mul_vv(g_up, g_tmp, g_gate)
        asm.addi(g_up, g_up, geo.vlen)
        asm.addi(g_gate, g_gate, geo.vlen)

    n = up.size // geo.vlen
    if unroll:
        for _ in asm.copies(range(n)):
            chunk()
        return
    with asm.loop(l_chunk, n):
        chunk()


# -- attention ----------------------------------------------------------------------------------


def causal_mask(asm: Asm, geo: Geometry, mask: VramTensor, stage: int, strategy: str = "elementwise") -> None:
    """The MLEN×MLEN additive causal mask (0 on and below the diagonal, −inf above) in VRAM,
    built in FP SRAM at `stage` and mapped row by row (§4.7 step 2): element by element
    (the compiler), or as one 2·MLEN staging row [0…0, −inf…−inf] whose MLEN-wide window
    sliding left by one per row is that row (`sliding_window`)."""
    g_stage, g_row = 1, 2
    asm.s_ld_fp(6, 0, FP_RECI_HIDDEN_OR_NEG_INF)
    asm.li(g_stage, stage)
    if strategy == "elementwise":
        asm.li(g_row, mask.base)
        for i in range(geo.mlen):
            for j in range(geo.mlen):
                asm.s_st_fp(0 if j <= i else 6, g_stage, j)
            asm.s_map_v_fp(g_row, g_stage, 0)
            asm.addi(g_row, g_row, geo.vlen)
        return
    for j in range(2 * geo.mlen):
        asm.s_st_fp(0 if j < geo.mlen else 6, g_stage, j)
    asm.li(g_row, mask.base)
    for i in range(geo.mlen):
        asm.s_map_v_fp(g_row, g_stage, geo.mlen - 1 - i)
        asm.addi(g_row, g_row, geo.vlen)


def online_softmax_rows(
    asm: Asm, geo: Geometry, s_base: int, rows: int, m_slot: int, res_slot: int, l_slot: int, scaled: bool
) -> None:
    """One online-softmax update per S row, in a rolled loop (§4.7 step 3). FP SRAM holds
    row i's running max at m_slot+i, its rescale factor at res_slot+i and its running sum
    at l_slot+i; f1 holds the scale."""
    g_s, g_m, g_res, g_l, l_row = 1, 2, 3, 4, 5
    asm.li(g_s, s_base)
    asm.li(g_m, m_slot)
    asm.li(g_res, res_slot)
    asm.li(g_l, l_slot)
    with asm.loop(l_row, rows):
        asm.s_ld_fp(2, g_m, 0)
        asm.fadd(3, 2, 0)
        if scaled:
            asm.v_mul_vf(g_s, g_s, 1)
        asm.s_ld_fp(6, 0, FP_RECI_HIDDEN_OR_NEG_INF)
        asm.v_red_max(6, g_s)
        asm.fmax(2, 2, 6)
        asm.fsub(3, 3, 2)
        asm.fexp(3, 3)
        asm.s_st_fp(3, g_res, 0)
        asm.s_st_fp(2, g_m, 0)
        asm.v_sub_vf(g_s, g_s, 2)
        asm.v_exp(g_s, g_s)
        asm.s_ld_fp(5, g_l, 0)
        asm.fadd(4, 0, 0)
        asm.v_red_sum(4, g_s)
        asm.fmul(5, 5, 3)
        asm.fadd(5, 5, 4)
        asm.s_st_fp(5, g_l, 0)
        asm.addi(g_s, g_s, geo.vlen)
        asm.addi(g_m, g_m, 1)
        asm.addi(g_res, g_res, 1)
        asm.addi(g_l, g_l, 1)


def scale_rows(asm: Asm, geo: Geometry, o: VramTensor, row0: int, rows: int, fp_slot: int, reciprocal: bool) -> None:
    """O[row0 + i, :] *= FP[fp_slot + i] (or its reciprocal), rolled over rows, per column block."""
    g_o, g_fp, l_row = 1, 2, 3
    for cb in range(cdiv(o.cols, geo.vlen)):
        asm.li(g_o, o.addr(row0, cb * geo.vlen))
        asm.li(g_fp, fp_slot)
        with asm.loop(l_row, rows):
            asm.s_ld_fp(5, g_fp, 0)
            if reciprocal:
                asm.freci(5, 5)
            asm.v_mul_vf(g_o, g_o, 5)
            asm.addi(g_o, g_o, geo.vlen)
            asm.addi(g_fp, g_fp, 1)
