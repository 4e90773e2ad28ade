"""Candidate-0: re-implementation of the PLENA compiler's ATen-path lowering (reference §4).

Each op family follows the compiler template the reference describes: `load_batch` (§4.1)
stages activations column-block-major in VRAM; linear (§4.3) loads W column blocks per
(K-chunk, column block, row block) with mram_tile_capacity = 4 and adds BF16 partial sums
with 64-row V_ADD_VV loops; FFN (§4.4) is unrolled at the outer levels with the K loop
rolled and SiLU on the *up* projection; RMSNorm (§4.5) is row-serial with a rolled
reduction loop; softmax (§4.6) copies the input into an S buffer and processes every
MLEN row of each row tile (extended to rows longer than VLEN as §5.2 suggests); flash
attention (§4.7) is MHA with online softmax and a precomputed causal mask; RoPE (§4.8)
takes rotate_half(x) as an input. The template functions here are reused by
`lowering.py` wherever a mapping makes the compiler's choice.

Register use follows the compiler: gp0 is zero, FP registers f1..f7, HBM bases in a0..a7.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from zomboss.errors import WorkloadError
from zomboss.workload import Workload

from .builder import Asm
from .layout import Allocator, Geometry, HbmTensor, Kernel, VramTensor
from .suite import check_shape

MRAM_TILE_CAPACITY = 4  # the ATen compiler's K-split chunk for linear layers (reference §4.3)

# FP SRAM slots the PLENA tests preload (reference §4, "Compiler conventions").
FP_ZERO = 0
FP_EPS_OR_SCALE = 1
FP_RECI_HIDDEN_OR_NEG_INF = 2
FP_ONE = 5
FP_STATE = 10  # online-softmax state: m [MLEN], m_res [MLEN], l [MLEN]
RMS_EPS = 1e-6
PROJ_REGS = (1, 2, 3, 4, 5, 6, 7, 8, 9)  # act, mat, result, 3 loop counters, 3 loop bases (the compiler's 9)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# -- templates -------------------------------------------------------------------------------


def set_hbm_base(asm: Asm, areg: int, gtmp: int, base: int) -> None:
    """a[areg] = base, through a GP register (the compiler's preload_addr_reg)."""
    asm.li(gtmp, base)
    asm.set_addr(areg, gtmp)


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
        set_hbm_base(asm, areg, g_off, src.base)
        asm.li(g_off, src.scale_offset)
        asm.set_scale(g_off)
        asm.li(g_stride, src.cols)
        asm.set_stride(g_stride)
    for i, (rb, cb) in enumerate(blocks):
        asm.li(g_mram, (mram_tile0 + i) * geo.tile)
        asm.li(g_off, rb * geo.mlen * src.cols + cb * geo.mlen)
        asm.prefetch_m(g_mram, g_off, areg)


def projection(
    asm: Asm,
    geo: Geometry,
    act: int,
    act_k_stride: int,
    mram: int,
    out: int,
    k_tiles: int,
    row_groups: int,
    regs: Sequence[int],
    transposed: bool = False,
    col_slices: int | None = None,
    mat_k_stride: int | None = None,
) -> None:
    """One MLEN-wide output tile: out[rows, 0:MLEN] = act[rows, K-chunk] · MRAM column (§4.3).

    Rolled loops oc (BLEN-wide column slices) -> r (BLEN-row groups, valid rows only) -> k
    (K tiles), M_MM_WO after each k loop. `transposed` uses M_TMM (MRAM holds rows of Kᵀ).
    regs: act, mat, result, 3 loop counters, act row base, mat column base, result column base.
    """
    g_act, g_mat, g_res, l_oc, l_r, l_k, g_act_row, g_mat_col, g_res_col = regs[:9]
    slices = col_slices if col_slices is not None else geo.mlen // geo.blen
    mat_k_stride = mat_k_stride if mat_k_stride is not None else geo.tile
    row_stride = geo.blen * geo.vlen
    asm.li(g_mat_col, mram)
    asm.li(g_res_col, out)
    with asm.loop(l_oc, slices):
        asm.li(g_act_row, act)
        asm.addi(g_res, g_res_col, 0)
        with asm.loop(l_r, row_groups):
            asm.addi(g_act, g_act_row, 0)
            asm.addi(g_mat, g_mat_col, 0)
            with asm.loop(l_k, k_tiles):
                if transposed:
                    asm.m_tmm(g_act, g_mat)
                else:
                    asm.m_mm(g_mat, g_act)
                asm.addi(g_act, g_act, act_k_stride)
                asm.addi(g_mat, g_mat, mat_k_stride)
            asm.m_mm_wo(g_res)
            asm.addi(g_act_row, g_act_row, row_stride)
            asm.addi(g_res, g_res, row_stride)
        asm.addi(g_mat_col, g_mat_col, geo.blen * geo.mlen)
        asm.addi(g_res_col, g_res_col, geo.blen)


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


def rowwise_add(asm: Asm, geo: Geometry, dst: VramTensor, src: VramTensor, rows: int, regs: Sequence[int]) -> None:
    """dst[r] += src[r] row by row, column block by column block, unrolled with address
    reloads (the compiler's fallback for blocks that are not MLEN-row aligned)."""
    g_dst, g_src = regs[:2]
    for r in range(rows):
        for cb in range(cdiv(dst.cols, geo.vlen)):
            asm.li(g_dst, dst.addr(r, cb * geo.vlen))
            asm.li(g_src, src.addr(r, cb * geo.vlen))
            asm.v_add_vv(g_dst, g_dst, g_src)


# -- op families -------------------------------------------------------------------------------


def linear(wl: Workload, geo: Geometry, capacity: int = MRAM_TILE_CAPACITY) -> Kernel:
    """Y[M,N] = X[M,K]·W[K,N] (§4.3): K-chunks of `capacity` tiles, column blocks, row blocks."""
    m, k, n = wl["M"], wl["K"], wl["N"]
    al = Allocator(geo)
    x_h, w_h = al.hbm("X", m, k), al.hbm("W", k, n)
    x = al.vram("X", m, k)
    y = al.vram("Y", m, n, phys_rows=cdiv(m, geo.mlen) * geo.mlen)
    kt = k // geo.mlen
    chunks = [(s, min(capacity, kt - s)) for s in range(0, kt, capacity)]
    temp = al.vram("Y_temp", geo.mlen, geo.mlen) if len(chunks) > 1 else None
    asm = Asm()
    load_batch(asm, geo, x_h, x, 0, (1, 2, 3, 4, 5))
    for ci, (ks, kc) in enumerate(chunks):
        for cb in range(n // geo.mlen):
            for rb in range(cdiv(m, geo.mlen)):
                load_tiles(asm, geo, w_h, [(ks + i, cb) for i in range(kc)], 0, 1, (1, 2, 3))
                target = y.block(rb, cb, geo.mlen) if ci == 0 or temp is None else temp.base
                valid = min(geo.mlen, m - rb * geo.mlen)
                projection(
                    asm, geo, x.block(rb, ks, geo.mlen), x.phys_rows * geo.vlen, 0, target, kc,
                    cdiv(valid, geo.blen), PROJ_REGS,
                )  # fmt: skip
                if ci > 0 and temp is not None:
                    tile = y.block(rb, cb, geo.mlen)
                    block_binary(asm, geo, "V_ADD_VV", tile, tile, temp.base, geo.mlen, (1, 2, 3, 4))
    return Kernel(asm.program({"op": "linear", "source": "default"}), al.layout(y, {FP_ZERO: 0.0}))


def rmsnorm(wl: Workload, geo: Geometry) -> Kernel:
    """In-place RMSNorm without γ (§4.5): per row a rolled sum-of-squares loop, the FP tail
    (mean, +eps, sqrt, reciprocal, 4 NOPs) and an unrolled scaling pass with ping-pong
    address registers."""
    rows, hidden = wl["rows"], wl["hidden"]
    al = Allocator(geo)
    x_h = al.hbm("X", rows, hidden)
    x = al.vram("X", rows, hidden)
    scratch = al.vram("scratch", 1, geo.vlen)
    asm = Asm()
    load_batch(asm, geo, x_h, x, 0, (1, 2, 3, 4, 5))
    g_act, g_scr, g_stats, l_chunk = 1, 2, 3, 4
    n_chunks = hidden // geo.vlen
    stride = geo.vlen * rows
    asm.li(g_scr, scratch.base)
    asm.s_ld_fp(1, 0, FP_EPS_OR_SCALE)
    asm.fadd(2, 0, 0)
    asm.s_ld_fp(3, 0, FP_RECI_HIDDEN_OR_NEG_INF)
    for r in range(rows):
        base = x.base + geo.vlen * r
        asm.li(g_act, base)
        asm.li(g_stats, base)
        with asm.loop(l_chunk, n_chunks):
            asm.v_mul_vv(g_scr, g_stats, g_stats)
            asm.v_red_sum(2, g_scr)
            asm.addi(g_stats, g_stats, stride)
        regs = (g_act, g_stats)
        if n_chunks > 1:
            asm.li(regs[1], base + stride)
        asm.fmul(2, 2, 3)
        asm.fadd(2, 2, 1)
        asm.fsqrt(2, 2)
        asm.freci(2, 2)
        for _ in range(4):
            asm.nop()
        for i in range(n_chunks):
            cur = regs[i % 2]
            asm.v_mul_vf(cur, cur, 2)
            if i + 2 < n_chunks:
                asm.li(cur, base + stride * (i + 2))
            elif i + 1 < n_chunks:
                asm.nop()
        asm.fadd(2, 0, 0)
    fp = {FP_ZERO: 0.0, FP_EPS_OR_SCALE: RMS_EPS, FP_RECI_HIDDEN_OR_NEG_INF: 1.0 / hidden}
    return Kernel(asm.program({"op": "rmsnorm", "source": "default"}), al.layout(x, fp))


def softmax_scale(cols: int) -> float:
    """The softmax tests' pre-scale, 1/sqrt(row length) (reference §5.1)."""
    return 1.0 / math.sqrt(cols)


def copy_into(asm: Asm, geo: Geometry, dst: VramTensor, src: VramTensor) -> None:
    """dst += src over src's rows: MLEN-row block adds when aligned, else row-wise (§4.8 vram_add)."""
    if src.rows % geo.mlen == 0 and src.phys_rows % geo.mlen == 0:
        for rb in range(src.rows // geo.mlen):
            for cb in range(cdiv(src.cols, geo.vlen)):
                d = dst.block(rb, cb, geo.mlen)
                block_binary(asm, geo, "V_ADD_VV", d, d, src.block(rb, cb, geo.mlen), geo.mlen, (1, 2, 3, 4))
    else:
        rowwise_add(asm, geo, dst, src, src.rows, (1, 2))


def softmax(wl: Workload, geo: Geometry) -> Kernel:
    """Row softmax of X·scale (§4.6): copy X into S, then for every row of each MLEN-row
    tile scale, max, subtract, exp, sum, reciprocal, multiply. Rows longer than VLEN run
    each step over the row's chunks in a rolled loop (reference §5.2 extension)."""
    rows, cols = wl["rows"], wl["cols"]
    al = Allocator(geo)
    x_h = al.hbm("X", rows, cols)
    x = al.vram("X", rows, cols)
    s = al.vram("S", rows, cols, phys_rows=cdiv(rows, geo.mlen) * geo.mlen)
    asm = Asm()
    load_batch(asm, geo, x_h, x, 0, (1, 2, 3, 4, 5))
    copy_into(asm, geo, s, x)
    n_chunks = cols // geo.vlen
    chunk_stride = s.phys_rows * geo.vlen
    g_row, g_ptr, l_chunk = 1, 2, 3

    def over_chunks(body: Callable[[int], None]) -> None:
        if n_chunks == 1:
            body(g_row)
            return
        asm.addi(g_ptr, g_row, 0)
        with asm.loop(l_chunk, n_chunks):
            body(g_ptr)
            asm.addi(g_ptr, g_ptr, chunk_stride)

    asm.li(g_row, s.base)
    for r in range(s.phys_rows):
        if r:
            asm.addi(g_row, g_row, geo.vlen)
        asm.s_ld_fp(2, 0, FP_EPS_OR_SCALE)
        over_chunks(lambda g: asm.v_mul_vf(g, g, 2))
        over_chunks(lambda g: asm.v_red_max(2, g))
        asm.fadd(3, 0, 0)

        def exp_sum(g: int) -> None:
            asm.v_sub_vf(g, g, 2)
            asm.v_exp(g, g)
            asm.v_red_sum(3, g)

        over_chunks(exp_sum)
        asm.freci(3, 3)
        over_chunks(lambda g: asm.v_mul_vf(g, g, 3))
    fp = {FP_ZERO: 0.0, FP_EPS_OR_SCALE: softmax_scale(cols), FP_RECI_HIDDEN_OR_NEG_INF: -math.inf}
    return Kernel(asm.program({"op": "softmax", "source": "default"}), al.layout(s, fp))


def rope(wl: Workload, geo: Geometry) -> Kernel:
    """x = x·cos + rotate_half(x)·sin in place (§4.8): one rolled loop over all VLEN chunks."""
    rows, hd = wl["rows"], wl["head_dim"]
    al = Allocator(geo)
    names = ("X", "X_rot", "COS", "SIN")
    hbm = [al.hbm(nm, rows, hd) for nm in names]
    vram = [al.vram(nm, rows, hd) for nm in names]
    scratch = al.vram("scratch", 1, geo.vlen)
    asm = Asm()
    for i, (h, v) in enumerate(zip(hbm, vram, strict=True)):
        load_batch(asm, geo, h, v, i, (1, 2, 3, 4, 5))
    g_x, g_rot, g_cos, g_sin, g_scr, l_chunk = 1, 2, 3, 4, 5, 6
    for g, v in zip((g_x, g_rot, g_cos, g_sin), vram, strict=True):
        asm.li(g, v.base)
    asm.li(g_scr, scratch.base)
    with asm.loop(l_chunk, rows * hd // geo.vlen):
        asm.v_mul_vv(g_scr, g_rot, g_sin)
        asm.v_mul_vv(g_x, g_x, g_cos)
        asm.v_add_vv(g_x, g_x, g_scr)
        for g in (g_x, g_rot, g_cos, g_sin):
            asm.addi(g, g, geo.vlen)
    return Kernel(asm.program({"op": "rope", "source": "default"}), al.layout(vram[0], {FP_ZERO: 0.0}))


def ffn_projection(
    asm: Asm, geo: Geometry, w: HbmTensor, act: VramTensor, out: VramTensor, rows: int, areg: int = 1
) -> None:
    """out[rows, w.cols] = act · w, the FFN template (§4.4): per BLEN output column, prefetch
    the whole K column block when entering a new MLEN column block, then per BLEN-row group
    a rolled K loop of M_MM and one M_MM_WO (outer levels unrolled)."""
    g_off, g_stride, g_mram, g_mat, g_act, g_out, l_k = 1, 2, 3, 4, 5, 6, 7
    kt = w.rows // geo.mlen
    per_block = geo.mlen // geo.blen
    for col in range(w.cols // geo.blen):
        cb, slot = divmod(col, per_block)
        if slot == 0:
            load_tiles(asm, geo, w, [(k, cb) for k in range(kt)], 0, areg, (g_off, g_stride, g_mram))
        for a in range(rows // geo.blen):
            asm.li(g_mat, slot * geo.blen * geo.mlen)
            asm.li(g_act, act.base + a * geo.blen * geo.vlen)
            with asm.loop(l_k, kt):
                asm.m_mm(g_mat, g_act)
                asm.addi(g_mat, g_mat, geo.tile)
                asm.addi(g_act, g_act, act.phys_rows * geo.vlen)
            asm.li(g_out, out.addr(a * geo.blen, col * geo.blen))
            asm.m_mm_wo(g_out)


def silu_gate(asm: Asm, geo: Geometry, up: VramTensor, gate: VramTensor, tmp: int) -> None:
    """up = silu(up)·gate, per VLEN chunk: 6 vector ops + 2 address bumps, unrolled (§4.4)."""
    g_up, g_gate, g_tmp = 1, 2, 3
    asm.li(g_up, up.base)
    asm.li(g_gate, gate.base)
    asm.li(g_tmp, tmp)
    asm.s_ld_fp(1, 0, FP_ONE)
    for _ in range(up.size // geo.vlen):
        asm.v_sub_vf(g_tmp, g_up, 0, 0, 1)
        asm.v_exp(g_tmp, g_tmp)
        asm.v_add_vf(g_tmp, g_tmp, 1)
        asm.v_reci(g_tmp, g_tmp)
        asm.v_mul_vv(g_tmp, g_tmp, g_up)
        asm.v_mul_vv(g_up, g_tmp, g_gate)
        asm.addi(g_up, g_up, geo.vlen)
        asm.addi(g_gate, g_gate, geo.vlen)


def ffn(wl: Workload, geo: Geometry) -> Kernel:
    """out = (silu(X·W_up) ⊙ (X·W_gate)) · W_down, written over X in VRAM (§4.4)."""
    m, h, i = wl["rows"], wl["hidden"], wl["inter"]
    al = Allocator(geo)
    x_h = al.hbm("X", m, h)
    w_up, w_gate, w_down = al.hbm("W_up", h, i), al.hbm("W_gate", h, i), al.hbm("W_down", i, h)
    x = al.vram("X", m, h)
    up, gate = al.vram("up", m, i), al.vram("gate", m, i)
    scratch = al.vram("scratch", 1, geo.vlen)
    asm = Asm()
    load_batch(asm, geo, x_h, x, 0, (1, 2, 3, 4, 5))
    ffn_projection(asm, geo, w_up, x, up, m)
    ffn_projection(asm, geo, w_gate, x, gate, m)
    silu_gate(asm, geo, up, gate, scratch.base)
    ffn_projection(asm, geo, w_down, up, x, m)
    return Kernel(asm.program({"op": "ffn", "source": "default"}), al.layout(x, {FP_ZERO: 0.0, FP_ONE: 1.0}))


def attention_scale(d: int) -> float:
    return 1.0 / math.sqrt(d)


def build_causal_mask(asm: Asm, geo: Geometry, mask: VramTensor, stage: int) -> None:
    """The MLEN×MLEN additive causal mask (0 on and below the diagonal, −inf above), written
    element by element into FP SRAM and mapped row by row into VRAM (§4.7 step 2)."""
    g_stage, g_row = 1, 2
    asm.s_ld_fp(6, 0, FP_RECI_HIDDEN_OR_NEG_INF)
    asm.li(g_stage, stage)
    asm.li(g_row, mask.base)
    for i in range(geo.mlen):
        for j in range(geo.mlen):
            asm.s_st_fp(0 if j <= i else 6, g_stage, j)
        asm.s_map_v_fp(g_row, g_stage, 0)
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


def attention(wl: Workload, geo: Geometry) -> Kernel:
    """Flash attention, one head (§4.7 MHA): per q block, online softmax over k blocks
    (fully-future blocks skipped when causal), O rescaled by m_res and accumulated, O /= l."""
    sq, skv, d, causal = wl["sq"], wl["skv"], wl["d"], wl["causal"]
    ml = geo.mlen
    al = Allocator(geo)
    q_h, k_h, v_h = al.hbm("Q", sq, d), al.hbm("K", skv, d), al.hbm("V", skv, d)
    q = al.vram("Q", sq, d)
    o = al.vram("O", sq, d)
    s = al.vram("S", ml, ml)
    pv = al.vram("PV", ml, d)
    mask = al.vram("mask", ml, ml) if causal else None
    state = FP_STATE
    stage = state + 3 * ml
    if stage + ml > geo.fpsram:
        raise WorkloadError(f"{wl.id}: FP SRAM of {geo.fpsram} entries cannot hold the softmax state")
    scale = attention_scale(d)
    dt = d // ml
    asm = Asm()
    load_batch(asm, geo, q_h, q, 0, (1, 2, 3, 4, 5))
    if mask is not None:
        build_causal_mask(asm, geo, mask, stage)
    asm.s_ld_fp(1, 0, FP_EPS_OR_SCALE)
    for qb in range(cdiv(sq, ml)):
        rows = min(ml, sq - qb * ml)
        # init: m = -inf, l = 0, O rows = 0
        asm.s_ld_fp(6, 0, FP_RECI_HIDDEN_OR_NEG_INF)
        asm.li(1, state)
        with asm.loop(2, rows):
            asm.s_st_fp(6, 1, 0)
            asm.s_st_fp(0, 1, 2 * ml)
            asm.addi(1, 1, 1)
        for cb in range(dt):
            asm.li(1, o.addr(qb * ml, cb * ml))
            with asm.loop(2, rows):
                asm.v_mul_vf(1, 1, 0)
                asm.addi(1, 1, geo.vlen)
        kblocks = qb + 1 if causal else skv // ml
        for kb in range(kblocks):
            # S = Q_blk · K_blkᵀ
            load_tiles(asm, geo, k_h, [(kb, c) for c in range(dt)], 0, 1, (1, 2, 3))
            projection(
                asm, geo, q.block(qb, 0, ml), q.phys_rows * geo.vlen, 0, s.base, dt,
                cdiv(rows, geo.blen), PROJ_REGS, transposed=True,
            )  # fmt: skip
            if mask is not None and kb == qb:
                block_binary(asm, geo, "V_ADD_VV", s.base, s.base, mask.base, rows, (1, 2, 3, 4))
            online_softmax_rows(asm, geo, s.base, rows, state, state + ml, state + 2 * ml, scaled=scale != 1.0)
            # PV = P · V_blk
            load_tiles(asm, geo, v_h, [(kb, c) for c in range(dt)], 0, 1, (1, 2, 3))
            for cb in range(dt):
                projection(
                    asm, geo, s.base, 0, cb * geo.tile, pv.block(0, cb, ml), 1, cdiv(rows, geo.blen), PROJ_REGS,
                )  # fmt: skip
            # O = O·m_res + PV
            scale_rows(asm, geo, o, qb * ml, rows, state + ml, reciprocal=False)
            for cb in range(dt):
                block_binary(asm, geo, "V_ADD_VV", o.addr(qb * ml, cb * ml), o.addr(qb * ml, cb * ml),
                             pv.block(0, cb, ml), rows, (1, 2, 3, 4))  # fmt: skip
        scale_rows(asm, geo, o, qb * ml, rows, state + 2 * ml, reciprocal=True)
    fp = {FP_ZERO: 0.0, FP_EPS_OR_SCALE: scale, FP_RECI_HIDDEN_OR_NEG_INF: -math.inf}
    return Kernel(asm.program({"op": "attention", "source": "default"}), al.layout(o, fp))


FAMILIES: dict[str, Callable[[Workload, Geometry], Kernel]] = {
    "linear": linear,
    "rmsnorm": rmsnorm,
    "softmax": softmax,
    "ffn": ffn,
    "attention": attention,
    "rope": rope,
}


def default_kernel(wl: Workload, geo: Geometry | None = None) -> Kernel:
    """Candidate-0 for a workload: the compiler template of its op family."""
    geo = geo or Geometry()
    check_shape(wl, geo.mlen, geo.blen, geo.mram_tiles)
    return FAMILIES[wl.op](wl, geo)
