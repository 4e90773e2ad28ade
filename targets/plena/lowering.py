"""Lowering: a legal mapping (mapping.py) -> a PLENA program and its memory map.

One function per op family. Where a knob takes the compiler's value the code path is the
compiler template from default.py, so `lower(library_default(wl), wl)` reproduces
Candidate-0 instruction for instruction (tests pin this); the other values open the
design space the reference lists as headroom (§4.9): deeper K chunks up to the MRAM
capacity, weight residency across row blocks, hoisted CSR programming, unrolled or rolled
code, fused up/gate projections, vector-first reductions, valid-rows-only softmax, cheaper
causal-mask construction, one-pass attention, on-chip rotate_half.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from zomboss.program import Program
from zomboss.workload import Workload

from . import default as d
from .builder import Asm
from .default import PROJ_REGS, cdiv
from .layout import Allocator, Geometry, HbmTensor, Kernel, VramTensor
from .mapping import (
    AttentionMapping,
    FfnMapping,
    LinearMapping,
    RmsnormMapping,
    RopeMapping,
    SoftmaxMapping,
    check,
)
from .suite import check_shape

# -- shared pieces ------------------------------------------------------------------------------


def csr_setup(asm: Asm, src: HbmTensor, areg: int, g_off: int, g_stride: int, base: bool = True) -> None:
    """Program the a-register (optional), SCALE_REG and STRIDE_REG for loads from `src`."""
    if base:
        d.set_hbm_base(asm, areg, g_off, src.base)
    asm.li(g_off, src.scale_offset)
    asm.set_scale(g_off)
    asm.li(g_stride, src.cols)
    asm.set_stride(g_stride)


def tile_projection(
    asm: Asm,
    geo: Geometry,
    act: int,
    act_k_stride: int,
    mram: int,
    out: int,
    k_tiles: int,
    row_groups: int,
    order: str = "oc_r_k",
    unroll: bool = False,
    transposed: bool = False,
    mat_k_stride: int | None = None,
) -> None:
    """One MLEN-wide output tile in the requested loop nest, rolled or unrolled."""
    mks = geo.tile if mat_k_stride is None else mat_k_stride
    if not unroll and order == "oc_r_k":
        d.projection(asm, geo, act, act_k_stride, mram, out, k_tiles, row_groups, PROJ_REGS, transposed, None, mks)
        return
    slices = geo.mlen // geo.blen
    row_stride = geo.blen * geo.vlen
    col_stride = geo.blen * geo.mlen
    g_act, g_mat, g_res, l_oc, l_r, l_k, g_act_row, g_mat_col, g_res_row = PROJ_REGS

    def mm(ga: int, gm: int) -> None:
        if transposed:
            asm.m_tmm(ga, gm)
        else:
            asm.m_mm(gm, ga)

    if unroll:
        pairs = [(oc, r) for oc in range(slices) for r in range(row_groups)]
        if order == "r_oc_k":
            pairs = [(oc, r) for r in range(row_groups) for oc in range(slices)]
        for oc, r in pairs:
            for k in range(k_tiles):
                asm.li(g_act, act + r * row_stride + k * act_k_stride)
                asm.li(g_mat, mram + oc * col_stride + k * mks)
                mm(g_act, g_mat)
            asm.li(g_res, out + oc * geo.blen + r * row_stride)
            asm.m_mm_wo(g_res)
        return
    # rolled, r outside oc
    asm.li(g_act_row, act)
    asm.li(g_res_row, out)
    with asm.loop(l_r, row_groups):
        asm.li(g_mat_col, mram)
        asm.addi(g_res, g_res_row, 0)
        with asm.loop(l_oc, slices):
            asm.addi(g_act, g_act_row, 0)
            asm.addi(g_mat, g_mat_col, 0)
            with asm.loop(l_k, k_tiles):
                mm(g_act, g_mat)
                asm.addi(g_act, g_act, act_k_stride)
                asm.addi(g_mat, g_mat, mks)
            asm.m_mm_wo(g_res)
            asm.addi(g_mat_col, g_mat_col, col_stride)
            asm.addi(g_res, g_res, geo.blen)
        asm.addi(g_act_row, g_act_row, row_stride)
        asm.addi(g_res_row, g_res_row, row_stride)


# -- linear -------------------------------------------------------------------------------------


def lower_linear(m: LinearMapping, wl: Workload, geo: Geometry) -> Kernel:
    mm, k, n = wl["M"], wl["K"], wl["N"]
    al = Allocator(geo)
    x_h, w_h = al.hbm("X", mm, k), al.hbm("W", k, n)
    x = al.vram("X", mm, k)
    y = al.vram("Y", mm, n, phys_rows=cdiv(mm, geo.mlen) * geo.mlen)
    kt, nt = k // geo.mlen, n // geo.mlen
    chunks = [(s, min(m.k_chunk, kt - s)) for s in range(0, kt, m.k_chunk)]
    groups = [(c, min(m.n_block, nt - c)) for c in range(0, nt, m.n_block)]
    temp = al.vram("Y_temp", geo.mlen, geo.mlen) if len(chunks) > 1 else None
    row_blocks = cdiv(mm, geo.mlen)
    asm = Asm()
    d.load_batch(asm, geo, x_h, x, 0, (1, 2, 3, 4, 5))
    if m.hoist_csr:
        csr_setup(asm, w_h, 1, 1, 2)

    def load(ks: int, kc: int, c0: int, cn: int) -> None:
        blocks = [(ks + i, c0 + j) for j in range(cn) for i in range(kc)]
        d.load_tiles(asm, geo, w_h, blocks, 0, 1, (1, 2, 3), setup=not m.hoist_csr)

    def compute(ci: int, ks: int, kc: int, c0: int, cn: int, rb: int) -> None:
        valid = min(geo.mlen, mm - rb * geo.mlen)
        for j in range(cn):
            tile = y.block(rb, c0 + j, geo.mlen)
            target = tile if ci == 0 or temp is None else temp.base
            tile_projection(
                asm, geo, x.block(rb, ks, geo.mlen), x.phys_rows * geo.vlen, j * kc * geo.tile, target, kc,
                cdiv(valid, geo.blen), m.tile_order, m.unroll,
            )  # fmt: skip
            if ci > 0 and temp is not None:
                rows = geo.mlen if m.add_rows == "mlen" else cdiv(valid, geo.blen) * geo.blen
                d.block_binary(asm, geo, "V_ADD_VV", tile, tile, temp.base, rows, (1, 2, 3, 4))

    def one_pass(ci: int, ks: int, kc: int, c0: int, cn: int) -> None:
        """The loaded W tiles stay resident across m_block row blocks."""
        for rb0 in range(0, row_blocks, m.m_block):
            load(ks, kc, c0, cn)
            for rb in range(rb0, min(rb0 + m.m_block, row_blocks)):
                compute(ci, ks, kc, c0, cn, rb)

    if m.order == "kchunk_outer":
        for ci, (ks, kc) in enumerate(chunks):
            for c0, cn in groups:
                one_pass(ci, ks, kc, c0, cn)
    else:
        for c0, cn in groups:
            for ci, (ks, kc) in enumerate(chunks):
                one_pass(ci, ks, kc, c0, cn)
    return Kernel(asm.program({"op": "linear", "source": "lowering"}), al.layout(y, {d.FP_ZERO: 0.0}))


# -- rmsnorm ------------------------------------------------------------------------------------


def lower_rmsnorm(m: RmsnormMapping, wl: Workload, geo: Geometry) -> Kernel:
    if m == RmsnormMapping():
        return _relabel(d.rmsnorm(wl, geo))
    rows, hidden = wl["rows"], wl["hidden"]
    al = Allocator(geo)
    x_h = al.hbm("X", rows, hidden)
    x = al.vram("X", rows, hidden)
    scratch = al.vram("scratch", 2, geo.vlen)
    acc = scratch.base + geo.vlen
    asm = Asm()
    d.load_batch(asm, geo, x_h, x, 0, (1, 2, 3, 4, 5))
    g_act, g_scr, g_stats, l_chunk, g_acc, l_row, g_fp = 1, 2, 3, 4, 5, 6, 7
    n = hidden // geo.vlen
    stride = geo.vlen * rows
    asm.li(g_scr, scratch.base)
    asm.li(g_acc, acc)
    asm.s_ld_fp(1, 0, d.FP_EPS_OR_SCALE)
    asm.fadd(2, 0, 0)
    asm.s_ld_fp(3, 0, d.FP_RECI_HIDDEN_OR_NEG_INF)

    def stats() -> None:
        """f2 = 1/rms of the row whose first chunk g_stats points at (g_stats is consumed)."""
        if m.reduce == "per_chunk" or n == 1:
            with asm.loop(l_chunk, n):
                asm.v_mul_vv(g_scr, g_stats, g_stats)
                asm.v_red_sum(2, g_scr)
                asm.addi(g_stats, g_stats, stride)
        else:
            asm.v_mul_vv(g_acc, g_stats, g_stats)
            asm.addi(g_stats, g_stats, stride)
            with asm.loop(l_chunk, n - 1):
                asm.v_mul_vv(g_scr, g_stats, g_stats)
                asm.v_add_vv(g_acc, g_acc, g_scr)
                asm.addi(g_stats, g_stats, stride)
            asm.v_red_sum(2, g_acc)
        asm.fmul(2, 2, 3)
        asm.fadd(2, 2, 1)
        asm.fsqrt(2, 2)
        asm.freci(2, 2)
        for _ in range(4):
            asm.nop()

    def scale_row(base: int | None) -> None:
        """Multiply the row (first chunk at `base`, or at g_act when None) by f2."""
        if m.unroll_scale and base is not None:
            for i in range(n):
                asm.li(g_act, base + stride * i)
                asm.v_mul_vf(g_act, g_act, 2)
            return
        if base is not None:
            asm.li(g_act, base)
        with asm.loop(l_chunk, n):
            asm.v_mul_vf(g_act, g_act, 2)
            asm.addi(g_act, g_act, stride)

    if m.row_mode == "serial":
        for r in range(rows):
            base = x.base + geo.vlen * r
            asm.li(g_stats, base)
            stats()
            scale_row(base)
            asm.fadd(2, 0, 0)
    else:
        asm.li(g_fp, d.FP_STATE)
        asm.li(g_act, x.base)
        with asm.loop(l_row, rows):
            asm.addi(g_stats, g_act, 0)
            stats()
            asm.s_st_fp(2, g_fp, 0)
            asm.fadd(2, 0, 0)
            asm.addi(g_fp, g_fp, 1)
            asm.addi(g_act, g_act, geo.vlen)
        asm.li(g_fp, d.FP_STATE)
        asm.li(g_stats, x.base)
        with asm.loop(l_row, rows):
            asm.s_ld_fp(2, g_fp, 0)
            asm.addi(g_act, g_stats, 0)
            scale_row(None)
            asm.addi(g_fp, g_fp, 1)
            asm.addi(g_stats, g_stats, geo.vlen)
    fp = {d.FP_ZERO: 0.0, d.FP_EPS_OR_SCALE: d.RMS_EPS, d.FP_RECI_HIDDEN_OR_NEG_INF: 1.0 / hidden}
    return Kernel(asm.program({"op": "rmsnorm", "source": "lowering"}), al.layout(x, fp))


# -- softmax ------------------------------------------------------------------------------------


def lower_softmax(m: SoftmaxMapping, wl: Workload, geo: Geometry) -> Kernel:
    rows, cols = wl["rows"], wl["cols"]
    al = Allocator(geo)
    x_h = al.hbm("X", rows, cols)
    x = al.vram("X", rows, cols)
    s = x if m.in_place else al.vram("S", rows, cols, phys_rows=cdiv(rows, geo.mlen) * geo.mlen)
    acc = al.vram("scratch", 1, geo.vlen) if m.reduce == "vector_first" and cols > geo.vlen else None
    asm = Asm()
    d.load_batch(asm, geo, x_h, x, 0, (1, 2, 3, 4, 5))
    if not m.in_place:
        d.copy_into(asm, geo, s, x)
    n = cols // geo.vlen
    chunk_stride = s.phys_rows * geo.vlen
    g_row, g_ptr, l_chunk, l_row, g_acc = 1, 2, 3, 4, 5
    nrows = rows if m.valid_rows_only else s.phys_rows

    def over_chunks(body: Callable[[int], None]) -> None:
        if n == 1:
            body(g_row)
            return
        asm.addi(g_ptr, g_row, 0)
        with asm.loop(l_chunk, n):
            body(g_ptr)
            asm.addi(g_ptr, g_ptr, chunk_stride)

    def exp_sum(g: int) -> None:
        asm.v_sub_vf(g, g, 2)
        asm.v_exp(g, g)
        asm.v_red_sum(3, g)

    def row_body() -> None:
        asm.s_ld_fp(2, 0, d.FP_EPS_OR_SCALE)
        over_chunks(lambda g: asm.v_mul_vf(g, g, 2))
        over_chunks(lambda g: asm.v_red_max(2, g))
        asm.fadd(3, 0, 0)
        if acc is None:
            over_chunks(exp_sum)
        else:
            asm.addi(g_ptr, g_row, 0)
            asm.v_sub_vf(g_ptr, g_ptr, 2)
            asm.v_exp(g_acc, g_ptr)
            with asm.loop(l_chunk, n - 1):
                asm.addi(g_ptr, g_ptr, chunk_stride)
                asm.v_sub_vf(g_ptr, g_ptr, 2)
                asm.v_exp(g_ptr, g_ptr)
                asm.v_add_vv(g_acc, g_acc, g_ptr)
            asm.addi(g_ptr, g_row, 0)
            asm.v_exp(g_ptr, g_ptr)
            asm.v_red_sum(3, g_acc)
        asm.freci(3, 3)
        over_chunks(lambda g: asm.v_mul_vf(g, g, 3))

    if acc is not None:
        asm.li(g_acc, acc.base)
    asm.li(g_row, s.base)
    if m.row_loop == "rolled":
        with asm.loop(l_row, nrows):
            row_body()
            asm.addi(g_row, g_row, geo.vlen)
    else:
        for r in range(nrows):
            if r:
                asm.addi(g_row, g_row, geo.vlen)
            row_body()
    fp = {d.FP_ZERO: 0.0, d.FP_EPS_OR_SCALE: d.softmax_scale(cols), d.FP_RECI_HIDDEN_OR_NEG_INF: -math.inf}
    return Kernel(asm.program({"op": "softmax", "source": "lowering"}), al.layout(s, fp))


# -- ffn ----------------------------------------------------------------------------------------


def lower_ffn(m: FfnMapping, wl: Workload, geo: Geometry) -> Kernel:
    if m == FfnMapping():
        return _relabel(d.ffn(wl, geo))
    rows, h, i = wl["rows"], wl["hidden"], wl["inter"]
    al = Allocator(geo)
    x_h = al.hbm("X", rows, h)
    w_up, w_gate, w_down = al.hbm("W_up", h, i), al.hbm("W_gate", h, i), al.hbm("W_down", i, h)
    x = al.vram("X", rows, h)
    up, gate = al.vram("up", rows, i), al.vram("gate", rows, i)
    scratch = al.vram("scratch", 1, geo.vlen)
    asm = Asm()
    d.load_batch(asm, geo, x_h, x, 0, (1, 2, 3, 4, 5))
    g_off, g_stride, g_mram = 1, 2, 3
    if m.hoist_csr:
        for areg, w in ((1, w_up), (2, w_gate), (3, w_down)):
            d.set_hbm_base(asm, areg, g_off, w.base)

    def projections(pairs: Sequence[tuple[HbmTensor, VramTensor, int]], act: VramTensor) -> None:
        """Run projections sharing K (= act.cols) together, column block by column block."""
        w0 = pairs[0][0]
        kt = w0.rows // geo.mlen
        if m.hoist_csr:
            csr_setup(asm, w0, 0, g_off, g_stride, base=False)
        for cb in range(w0.cols // geo.mlen):
            for j, (w, _, areg) in enumerate(pairs):
                if not m.hoist_csr and j == 0:
                    csr_setup(asm, w, areg, g_off, g_stride)
                elif not m.hoist_csr:
                    d.set_hbm_base(asm, areg, g_off, w.base)
                d.load_tiles(
                    asm, geo, w, [(k, cb) for k in range(kt)], j * kt, areg, (g_off, g_stride, g_mram), setup=False
                )
            _ffn_block(
                asm, geo, [(j * kt, out) for j, (_, out, _) in enumerate(pairs)], act, cb, kt, rows, m.unroll_outer
            )

    if m.fused_up_gate:
        projections([(w_up, up, 1), (w_gate, gate, 2)], x)
    else:
        projections([(w_up, up, 1)], x)
        projections([(w_gate, gate, 2 if m.hoist_csr else 1)], x)
    _silu_gate(asm, geo, up, gate, scratch.base, m.unroll_act)
    projections([(w_down, x, 3 if m.hoist_csr else 1)], up)
    return Kernel(asm.program({"op": "ffn", "source": "lowering"}), al.layout(x, {d.FP_ZERO: 0.0, d.FP_ONE: 1.0}))


def _ffn_block(
    asm: Asm, geo: Geometry, outs: Sequence[tuple[int, VramTensor]], act: VramTensor, cb: int, kt: int, rows: int,
    unroll: bool,
) -> None:  # fmt: skip
    """All BLEN column slices × BLEN row groups of column block `cb` for each (MRAM tile0, out)."""
    g_mat, g_act, g_out, l_k, l_s, l_a, g_mat_col, g_out_col, g_act_row, g_out_row = 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
    per_block = geo.mlen // geo.blen
    groups = rows // geo.blen
    k_stride = act.phys_rows * geo.vlen

    def k_loop() -> None:
        with asm.loop(l_k, kt):
            asm.m_mm(g_mat, g_act)
            asm.addi(g_mat, g_mat, geo.tile)
            asm.addi(g_act, g_act, k_stride)

    if unroll:
        for slot in range(per_block):
            for a in range(groups):
                for t0, out in outs:
                    asm.li(g_mat, t0 * geo.tile + slot * geo.blen * geo.mlen)
                    asm.li(g_act, act.base + a * geo.blen * geo.vlen)
                    k_loop()
                    asm.li(g_out, out.addr(a * geo.blen, (cb * per_block + slot) * geo.blen))
                    asm.m_mm_wo(g_out)
        return
    for t0, out in outs:
        asm.li(g_mat_col, t0 * geo.tile)
        asm.li(g_out_col, out.addr(0, cb * geo.mlen))
        with asm.loop(l_s, per_block):
            asm.li(g_act_row, act.base)
            asm.addi(g_out_row, g_out_col, 0)
            with asm.loop(l_a, groups):
                asm.addi(g_mat, g_mat_col, 0)
                asm.addi(g_act, g_act_row, 0)
                k_loop()
                asm.m_mm_wo(g_out_row)
                asm.addi(g_act_row, g_act_row, geo.blen * geo.vlen)
                asm.addi(g_out_row, g_out_row, geo.blen * geo.vlen)
            asm.addi(g_mat_col, g_mat_col, geo.blen * geo.mlen)
            asm.addi(g_out_col, g_out_col, geo.blen)


def _silu_gate(asm: Asm, geo: Geometry, up: VramTensor, gate: VramTensor, tmp: int, unroll: bool) -> None:
    if unroll:
        d.silu_gate(asm, geo, up, gate, tmp)
        return
    g_up, g_gate, g_tmp, l_chunk = 1, 2, 3, 4
    asm.li(g_up, up.base)
    asm.li(g_gate, gate.base)
    asm.li(g_tmp, tmp)
    asm.s_ld_fp(1, 0, d.FP_ONE)
    with asm.loop(l_chunk, up.size // geo.vlen):
        asm.v_sub_vf(g_tmp, g_up, 0, 0, 1)
        asm.v_exp(g_tmp, g_tmp)
        asm.v_add_vf(g_tmp, g_tmp, 1)
        asm.v_reci(g_tmp, g_tmp)
        asm.v_mul_vv(g_tmp, g_tmp, g_up)
        asm.v_mul_vv(g_up, g_tmp, g_gate)
        asm.addi(g_up, g_up, geo.vlen)
        asm.addi(g_gate, g_gate, geo.vlen)


# -- attention ----------------------------------------------------------------------------------


def _mask(asm: Asm, geo: Geometry, mask: VramTensor, stage: int, strategy: str) -> None:
    if strategy == "elementwise":
        d.build_causal_mask(asm, geo, mask, stage)
        return
    g_stage, g_row = 1, 2
    asm.s_ld_fp(6, 0, d.FP_RECI_HIDDEN_OR_NEG_INF)
    asm.li(g_stage, stage)
    for j in range(2 * geo.mlen):
        asm.s_st_fp(0 if j < geo.mlen else 6, g_stage, j)
    asm.li(g_row, mask.base)
    for i in range(geo.mlen):
        asm.s_map_v_fp(g_row, g_stage, geo.mlen - 1 - i)
        asm.addi(g_row, g_row, geo.vlen)


def lower_attention(m: AttentionMapping, wl: Workload, geo: Geometry) -> Kernel:
    sq, skv, dd, causal = wl["sq"], wl["skv"], wl["d"], wl["causal"]
    ml = geo.mlen
    dt, kvt = dd // ml, skv // ml
    al = Allocator(geo)
    q_h, k_h, v_h = al.hbm("Q", sq, dd), al.hbm("K", skv, dd), al.hbm("V", skv, dd)
    q = al.vram("Q", sq, dd)
    o = al.vram("O", sq, dd)
    one_pass = m.algorithm == "one_pass"
    s = al.vram("S", ml, skv if one_pass else ml)
    pv = None if one_pass else al.vram("PV", ml, dd)
    mask = al.vram("mask", ml, ml) if causal else None
    scale = d.attention_scale(dd)
    st = d.FP_STATE
    if m.loop_order == "kv_outer":
        m_slot, l_slot, res_slot = st, st + sq, st + 2 * sq
        stage = res_slot + ml
    else:
        m_slot, res_slot, l_slot = st, st + ml, st + 2 * ml
        stage = st + 3 * ml
    asm = Asm()
    d.load_batch(asm, geo, q_h, q, 0, (1, 2, 3, 4, 5))
    if mask is not None:
        _mask(asm, geo, mask, stage, m.mask)
    asm.s_ld_fp(1, 0, d.FP_EPS_OR_SCALE)
    if m.hoist_csr:
        csr_setup(asm, k_h, 1, 1, 2)
        d.set_hbm_base(asm, 2, 1, v_h.base)
    k_reg, v_reg = (1, 2) if m.hoist_csr else (1, 1)

    def load(src: HbmTensor, areg: int, kb: int, tile0: int) -> None:
        d.load_tiles(asm, geo, src, [(kb, c) for c in range(dt)], tile0, areg, (1, 2, 3), setup=not m.hoist_csr)

    def scores(qb: int, rows: int, kb: int, out: int, k_tile0: int) -> None:
        tile_projection(asm, geo, q.block(qb, 0, ml), q.phys_rows * geo.vlen, k_tile0 * geo.tile, out, dt,
                        cdiv(rows, geo.blen), transposed=True)  # fmt: skip
        if mask is not None and kb == qb:
            d.block_binary(asm, geo, "V_ADD_VV", out, out, mask.base, rows, (1, 2, 3, 4))

    def init_rows(row0: int, rows: int, state_row0: int) -> None:
        """m = -inf and l = 0 for `rows` state entries from state_row0; O rows from row0 = 0."""
        asm.s_ld_fp(6, 0, d.FP_RECI_HIDDEN_OR_NEG_INF)
        asm.li(1, m_slot + state_row0)
        with asm.loop(2, rows):
            asm.s_st_fp(6, 1, 0)
            asm.s_st_fp(0, 1, l_slot - m_slot)
            asm.addi(1, 1, 1)
        for cb in range(dt):
            asm.li(1, o.addr(row0, cb * ml))
            with asm.loop(2, rows):
                asm.v_mul_vf(1, 1, 0)
                asm.addi(1, 1, geo.vlen)

    def flash_step(qb: int, rows: int, kb: int, v_tile0: int, row0_state: int, res_base: int) -> None:
        """S, mask, online softmax, PV and the O update of one (q block, K block) pair."""
        assert pv is not None
        d.online_softmax_rows(asm, geo, s.base, rows, m_slot + row0_state, res_base, l_slot + row0_state, scale != 1.0)
        if m.loop_order == "q_outer":
            load(v_h, v_reg, kb, v_tile0)
        for cb in range(dt):
            tile_projection(asm, geo, s.base, 0, (v_tile0 + cb) * geo.tile, pv.block(0, cb, ml), 1,
                            cdiv(rows, geo.blen))  # fmt: skip
        d.scale_rows(asm, geo, o, qb * ml, rows, res_base, reciprocal=False)
        for cb in range(dt):
            oa = o.addr(qb * ml, cb * ml)
            d.block_binary(asm, geo, "V_ADD_VV", oa, oa, pv.block(0, cb, ml), rows, (1, 2, 3, 4))

    qblocks = cdiv(sq, ml)
    if one_pass:
        for qb in range(qblocks):
            rows = min(ml, sq - qb * ml)
            kbs = qb + 1 if causal else kvt
            for kb in range(kbs):
                load(k_h, k_reg, kb, 0)
                scores(qb, rows, kb, s.block(0, kb, ml), 0)
            _softmax_rows(asm, geo, s, rows, kbs)
            for kb in range(kbs):  # V block kb, column block c -> MRAM tile kb*dt + c
                d.load_tiles(asm, geo, v_h, [(kb, c) for c in range(dt)], kb * dt, v_reg, (1, 2, 3),
                             setup=not m.hoist_csr and kb == 0)  # fmt: skip
            for cb in range(dt):
                tile_projection(asm, geo, s.base, s.phys_rows * geo.vlen, cb * geo.tile, o.addr(qb * ml, cb * ml), kbs,
                                cdiv(rows, geo.blen), mat_k_stride=dt * geo.tile)  # fmt: skip
    elif m.loop_order == "q_outer":
        for qb in range(qblocks):
            rows = min(ml, sq - qb * ml)
            init_rows(qb * ml, rows, 0)
            for kb in range(qb + 1 if causal else kvt):
                load(k_h, k_reg, kb, 0)
                scores(qb, rows, kb, s.base, 0)
                flash_step(qb, rows, kb, 0, 0, res_slot)
            d.scale_rows(asm, geo, o, qb * ml, rows, l_slot, reciprocal=True)
    else:
        init_rows(0, sq, 0)
        for kb in range(kvt):
            load(k_h, k_reg, kb, 0)
            load(v_h, v_reg, kb, dt)
            for qb in range(kb if causal else 0, qblocks):
                rows = min(ml, sq - qb * ml)
                scores(qb, rows, kb, s.base, 0)
                flash_step(qb, rows, kb, dt, qb * ml, res_slot)
        for qb in range(qblocks):
            rows = min(ml, sq - qb * ml)
            d.scale_rows(asm, geo, o, qb * ml, rows, l_slot + qb * ml, reciprocal=True)
    fp = {d.FP_ZERO: 0.0, d.FP_EPS_OR_SCALE: scale, d.FP_RECI_HIDDEN_OR_NEG_INF: -math.inf}
    return Kernel(asm.program({"op": "attention", "source": "lowering"}), al.layout(o, fp))


def _softmax_rows(asm: Asm, geo: Geometry, s: VramTensor, rows: int, chunks: int) -> None:
    """Scaled softmax of `rows` rows over their first `chunks` VLEN chunks, in a rolled row loop
    (f1 holds the scale): the one-pass attention's normalisation."""
    g_row, g_ptr, l_chunk, l_row = 1, 2, 3, 4
    stride = s.phys_rows * geo.vlen

    def over(body: Callable[[int], None]) -> None:
        asm.addi(g_ptr, g_row, 0)
        with asm.loop(l_chunk, chunks):
            body(g_ptr)
            asm.addi(g_ptr, g_ptr, stride)

    def exp_sum(g: int) -> None:
        asm.v_sub_vf(g, g, 2)
        asm.v_exp(g, g)
        asm.v_red_sum(3, g)

    asm.li(g_row, s.base)
    with asm.loop(l_row, rows):
        over(lambda g: asm.v_mul_vf(g, g, 1))
        asm.s_ld_fp(2, 0, d.FP_RECI_HIDDEN_OR_NEG_INF)
        over(lambda g: asm.v_red_max(2, g))
        asm.fadd(3, 0, 0)
        over(exp_sum)
        asm.freci(3, 3)
        over(lambda g: asm.v_mul_vf(g, g, 3))
        asm.addi(g_row, g_row, geo.vlen)


# -- rope ---------------------------------------------------------------------------------------


def lower_rope(m: RopeMapping, wl: Workload, geo: Geometry) -> Kernel:
    if m == RopeMapping():
        return _relabel(d.rope(wl, geo))
    rows, hd = wl["rows"], wl["head_dim"]
    al = Allocator(geo)
    names = ("X", "COS", "SIN") if m.rotate == "on_chip" else ("X", "X_rot", "COS", "SIN")
    hbm = [al.hbm(nm, rows, hd) for nm in names]
    vram = {nm: al.vram(nm, rows, hd) for nm in names}
    scratch = al.vram("scratch", 2, geo.vlen)
    asm = Asm()
    for i, h in enumerate(hbm):
        d.load_batch(asm, geo, h, vram[h.name], i, (1, 2, 3, 4, 5))
    x, cos, sin = vram["X"], vram["COS"], vram["SIN"]
    v = geo.vlen

    def repeat(n: int, body: Callable[[], None]) -> None:
        if m.unroll:
            for _ in range(n):
                body()
        else:
            with asm.loop(15, n):
                body()

    if m.rotate == "load":
        g_x, g_rot, g_cos, g_sin, g_scr = 1, 2, 3, 4, 5
        for g, base in ((g_x, x.base), (g_rot, vram["X_rot"].base), (g_cos, cos.base), (g_sin, sin.base)):
            asm.li(g, base)
        asm.li(g_scr, scratch.base)

        def body() -> None:
            asm.v_mul_vv(g_scr, g_rot, g_sin)
            asm.v_mul_vv(g_x, g_x, g_cos)
            asm.v_add_vv(g_x, g_x, g_scr)
            for g in (g_x, g_rot, g_cos, g_sin):
                asm.addi(g, g, v)

        repeat(rows * hd // v, body)
    else:
        half = rows * hd // (2 * v) * v  # element distance from chunk c to its partner c + hd/2
        g_x1, g_x2, g_c1, g_c2, g_s1, g_s2, g_a, g_b = 1, 2, 3, 4, 5, 6, 7, 8
        for g, base in ((g_x1, x.base), (g_x2, x.base + half), (g_c1, cos.base), (g_c2, cos.base + half),
                        (g_s1, sin.base), (g_s2, sin.base + half), (g_a, scratch.base), (g_b, scratch.base + v)):  # fmt: skip
            asm.li(g, base)

        def pair() -> None:
            asm.v_mul_vv(g_a, g_x2, g_s1)  # rot_1 · sin_1 = -x2 · sin_1
            asm.v_mul_vv(g_b, g_x1, g_s2)  # rot_2 · sin_2 = x1 · sin_2
            asm.v_mul_vv(g_x1, g_x1, g_c1)
            asm.v_sub_vv(g_x1, g_x1, g_a)
            asm.v_mul_vv(g_x2, g_x2, g_c2)
            asm.v_add_vv(g_x2, g_x2, g_b)
            for g in (g_x1, g_x2, g_c1, g_c2, g_s1, g_s2):
                asm.addi(g, g, v)

        repeat(rows * hd // (2 * v), pair)
    return Kernel(asm.program({"op": "rope", "source": "lowering"}), al.layout(x, {d.FP_ZERO: 0.0}))


# -- entry point ----------------------------------------------------------------------------------


def _relabel(k: Kernel) -> Kernel:
    """A compiler-template kernel reached through the mapping interface."""
    meta = {**k.program.meta, "source": "lowering"}
    return Kernel(Program(k.program.target, k.program.instrs, meta), k.layout)


_LOWER: dict[str, Callable[[Any, Workload, Geometry], Kernel]] = {
    "linear": lower_linear,
    "rmsnorm": lower_rmsnorm,
    "softmax": lower_softmax,
    "ffn": lower_ffn,
    "attention": lower_attention,
    "rope": lower_rope,
}


def lower(mapping: Any, wl: Workload, geo: Geometry | None = None) -> Kernel:
    """Lower a mapping for `wl`; raises MappingError (every violation) when it is illegal."""
    geo = geo or Geometry()
    check_shape(wl, geo.mlen, geo.blen, geo.mram_tiles)
    check(mapping, wl, geo)
    return _LOWER[wl.op](mapping, wl, geo)
