"""Lowering: a legal mapping (plena.md §8, read as a core `zomboss.mapping.KnobMapping`) -> a PLENA
program and its memory map. This is Candidate-0's only implementation.

One function per op family. Every knob at its canonical value is the PLENA compiler's own
choice, and the code path it takes is the compiler's template (reference §4: linear §4.3,
FFN §4.4, RMSNorm §4.5, softmax §4.6, flash attention §4.7, RoPE §4.8), so
`lower(library_default(wl))` is the compiler's kernel instruction for instruction (the
golden table `tests/data/defaults_golden.json` pins it). The other values open the design
space the reference lists as headroom (§4.9): deeper K chunks up to the MRAM capacity,
weight residency across row blocks, hoisted CSR programming, unrolled or rolled code, fused
up/gate projections, vector-first reductions, valid-rows-only softmax, cheaper causal-mask
construction, one-pass attention, on-chip rotate_half.

A linear whose activations and output do not fit VRAM together (the compiler's kernel would
overflow it) is processed in row spans, each prefetched, computed and stored to HBM
(`linear_plan`); that follows from the sizes, so every linear that fits keeps the compiler's
kernel. `lower_slice` emits the part of a linear that computes chosen output tiles (`--verify
sampled`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from zomboss.errors import WorkloadError
from zomboss.expr import cdiv
from zomboss.knowledge import KB
from zomboss.mapping import KnobMapping
from zomboss.workload import Workload

from . import templates as t
from .builder import IMM18, Asm
from .layout import Allocator, Geometry, HbmTensor, Kernel, VramTensor
from .mapping import check
from .suite import check_shape

# -- linear -------------------------------------------------------------------------------------

# Estimated static instructions above which a linear's program is kept as a lazily built nest
# (`Asm(lazy=True)`): flat, it would take longer to build than its timing takes to simulate.
LAZY_STATIC = 200_000

Block = tuple[int, int]  # (row block in program order, MLEN-wide output column block)


@dataclass(frozen=True)
class LinearPlan:
    """How a linear's rows are processed. When X and Y fit VRAM (and a rolled projection's
    K stride, M·VLEN, fits an S_ADDI_INT immediate) all M rows are one span, staged whole and
    left in VRAM: the compiler's kernel. Otherwise M goes in spans of `chunk` rows (the last
    may be shorter): each span's X rows are prefetched into a chunk buffer and its Y rows
    computed and stored to HBM (MXFP8, H_STORE_V) before the next span reuses the buffers."""

    mlen: int
    chunk: int | None  # rows per span; None when the whole linear fits
    spans: tuple[tuple[int, int], ...]  # (first row, rows)
    k_chunks: tuple[tuple[int, int], ...]  # (first K tile, tiles)
    groups: tuple[tuple[int, int], ...]  # (first column block, column blocks)

    @property
    def row_blocks(self) -> tuple[tuple[int, int], ...]:
        """Every MLEN-row block of the output, (first row, rows), in program order."""
        ml = self.mlen
        return tuple((r0 + i * ml, min(ml, rows - i * ml)) for r0, rows in self.spans for i in range(cdiv(rows, ml)))

    @property
    def col_blocks(self) -> int:
        return sum(cn for _, cn in self.groups)


def _linear_vram(rows: int, k: int, n: int, geo: Geometry, temp: bool) -> int:
    """VRAM elements a span of `rows` rows takes, allocated as the lowering allocates them:
    X rows, Y rows (padded to MLEN), the partial-sum tile."""
    al = Allocator(geo)
    last = al.vram("X", rows, k)
    last = al.vram("Y", rows, n, phys_rows=cdiv(rows, geo.mlen) * geo.mlen)
    if temp:
        last = al.vram("Y_temp", geo.mlen, geo.mlen)
    return last.base + last.size


def linear_plan(m: KnobMapping, wl: Workload, geo: Geometry) -> LinearPlan:
    """The spans of a linear (see LinearPlan): the largest chunk of whole MLEN-row blocks
    that fits VRAM, else the largest multiple of BLEN and both V transfer amounts."""
    k_chunk, n_block, unroll = m.int("k_chunk"), m.int("n_block"), m.flag("unroll")
    mm, k, n = wl["M"], wl["K"], wl["N"]
    kt, nt = k // geo.mlen, n // geo.mlen
    k_chunks = tuple((s, min(k_chunk, kt - s)) for s in range(0, kt, k_chunk))
    groups = tuple((c, min(n_block, nt - c)) for c in range(0, nt, n_block))
    temp = len(k_chunks) > 1
    cap = geo.vram_rows * geo.vlen

    def fits(rows: int) -> bool:
        return _linear_vram(rows, k, n, geo, temp) <= cap and (unroll or rows * geo.vlen < IMM18)

    if fits(mm):
        return LinearPlan(geo.mlen, None, ((0, mm),), k_chunks, groups)
    unit = math.lcm(geo.blen, geo.pf_v, geo.wb_v)
    for step in (geo.mlen, unit) if geo.mlen % unit == 0 else (unit,):
        lo, hi = 0, mm // step  # the largest q with fits(q * step): fits is monotone in the rows
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(mid * step) else (lo, mid - 1)
        if lo:
            chunk = lo * step
            return LinearPlan(geo.mlen, chunk, tuple((r, min(chunk, mm - r)) for r in range(0, mm, chunk)), k_chunks,
                              groups)  # fmt: skip
    raise WorkloadError(
        f"{wl.id}: not even {unit} rows of X (K={k}) and Y (N={n}) fit the {geo.vram_rows} VRAM rows "
        f"(vram_rows={geo.vram_rows})"
    )


def lower_linear(m: KnobMapping, wl: Workload, geo: Geometry, keep: frozenset[Block] | None = None) -> Kernel:
    """Y[M,N] = X[M,K]·W[K,N] (§4.3): K chunks of `k_chunk` tiles, groups of `n_block` column
    blocks and of `m_block` row blocks sharing one weight load; BF16 partial sums per chunk.
    Rows go in the spans of `linear_plan`. With `keep` (output blocks, `LinearPlan` row block
    index and column block) it is the slice of the kernel that computes them: every reduction
    step of each, the weight loads and spans they need, nothing else (`sampled.py`)."""
    m_block = m.int("m_block")
    unroll, hoist, order = m.flag("unroll"), m.flag("hoist_csr"), m.sym("tile_order")
    mm, k, n = wl["M"], wl["K"], wl["N"]
    plan = linear_plan(m, wl, geo)
    chunks, groups = plan.k_chunks, plan.groups
    rows_max = plan.chunk or mm
    al = Allocator(geo)
    x_h, w_h = al.hbm("X", mm, k), al.hbm("W", k, n)
    y_h = al.hbm("Y", mm, n, is_input=False) if plan.chunk else None
    x = al.vram("X", rows_max, k)
    y = al.vram("Y", rows_max, n, phys_rows=cdiv(rows_max, geo.mlen) * geo.mlen)
    temp = al.vram("Y_temp", geo.mlen, geo.mlen) if len(chunks) > 1 else None
    asm = Asm(lazy=keep is None and kept_lazy(m, plan, geo))
    block0 = [0]  # the row-block index of each span's first row block
    for _, rows in plan.spans:
        block0.append(block0[-1] + cdiv(rows, geo.mlen))

    def wanted(s: int, rb: int, cb: int) -> bool:
        return keep is None or (block0[s] + rb, cb) in keep

    def span(asm: Asm, s: int) -> None:
        """The passes over one span's rows (all M rows when the linear fits)."""
        rows = plan.spans[s][1]
        row_blocks = cdiv(rows, geo.mlen)

        def load(asm: Asm, ks: int, kc: int, c0: int, cn: int) -> None:
            blocks = [(ks + i, c0 + j) for j in range(cn) for i in range(kc)]
            t.load_tiles(asm, geo, w_h, blocks, 0, 1, (1, 2, 3), setup=not hoist)

        def compute(asm: Asm, ci: int, ks: int, kc: int, c0: int, cn: int, rb: int) -> None:
            valid = min(geo.mlen, rows - rb * geo.mlen)
            for j in asm.copies([j for j in range(cn) if wanted(s, rb, c0 + j)]):
                tile = y.block(rb, c0 + j, geo.mlen)
                target = tile if ci == 0 or temp is None else temp.base
                t.projection(
                    asm, geo, x.block(rb, ks, geo.mlen), x.phys_rows * geo.vlen, j * kc * geo.tile, target, kc,
                    cdiv(valid, geo.blen), order=order, unroll=unroll,
                )  # fmt: skip
                if ci > 0 and temp is not None:
                    add = geo.mlen if m.sym("add_rows") == "mlen" else cdiv(valid, geo.blen) * geo.blen
                    t.block_binary(asm, geo, "V_ADD_VV", tile, tile, temp.base, add, (1, 2, 3, 4))

        def one_pass(asm: Asm, ci: int, g: int) -> None:
            """The loaded W tiles stay resident across m_block row blocks."""
            (ks, kc), (c0, cn) = chunks[ci], groups[g]
            sel = [i for i in range(cdiv(row_blocks, m_block)) if any(
                wanted(s, rb, c0 + j) for rb in range(i * m_block, min((i + 1) * m_block, row_blocks)) for j in range(cn)
            )]  # fmt: skip

            def rows_of(asm: Asm, i: int) -> None:
                load(asm, ks, kc, c0, cn)
                for rb in asm.copies(range(sel[i] * m_block, min((sel[i] + 1) * m_block, row_blocks))):
                    compute(asm, ci, ks, kc, c0, cn, rb)

            asm.repeat(len(sel), rows_of)

        gs = [g for g, (c0, cn) in enumerate(groups) if any(
            wanted(s, rb, c0 + j) for rb in range(row_blocks) for j in range(cn)
        )]  # fmt: skip
        if m.sym("order") == "kchunk_outer":
            asm.repeat(len(chunks), lambda a, ci: a.repeat(len(gs), lambda b, g: one_pass(b, ci, gs[g])))
        else:
            asm.repeat(len(gs), lambda a, g: a.repeat(len(chunks), lambda b, ci: one_pass(b, ci, gs[g])))

    if y_h is None:
        t.load_batch(asm, geo, x_h, x, 0, (1, 2, 3, 4, 5))
        if hoist:
            t.csr_setup(asm, w_h, 1, 1, 2)
        span(asm, 0)
        return Kernel(asm.program({"op": "linear", "source": "lowering"}), al.layout(y, {t.FP_ZERO: 0.0}))

    out = y_h

    def chunk(asm: Asm, i: int) -> None:
        """Prefetch a span's X rows, compute its Y rows, store them (then the next span)."""
        s = todo[i]
        r0, rows = plan.spans[s]
        t.transfer_rows(asm, geo, "H_PREFETCH_V", x_h, r0, x, rows, 0, (1, 2, 3, 4, 5, 6))
        if hoist:
            t.csr_setup(asm, w_h, 1, 1, 2)
        span(asm, s)
        t.transfer_rows(asm, geo, "H_STORE_V", out, r0, y, rows, 2, (1, 2, 3, 4, 5, 6))

    todo = [s for s, (_, rows) in enumerate(plan.spans) if keep is None or any(
        (block0[s] + rb, cb) in keep for rb in range(cdiv(rows, geo.mlen)) for cb in range(plan.col_blocks)
    )]  # fmt: skip
    asm.repeat(len(todo), chunk)
    layout = al.layout(y, {t.FP_ZERO: 0.0}, hbm_output=y_h)
    return Kernel(asm.program({"op": "linear", "source": "lowering", "chunk_rows": plan.chunk}), layout)


# -- rmsnorm ------------------------------------------------------------------------------------


def lower_rmsnorm(m: KnobMapping, wl: Workload, geo: Geometry) -> Kernel:
    """In-place RMSNorm without γ (§4.5). The compiler is row-serial: per row a rolled
    sum-of-squares loop, the FP tail (mean, +eps, sqrt, reciprocal, 4 NOPs) and an unrolled
    scaling pass with ping-pong address registers."""
    serial, vector_first = m.sym("row_mode") == "serial", m.sym("reduce") == "vector_first"
    unroll_scale = m.flag("unroll_scale")
    rows, hidden = wl["rows"], wl["hidden"]
    n = hidden // geo.vlen
    vector_first = vector_first and n > 1
    al = Allocator(geo)
    x_h = al.hbm("X", rows, hidden)
    x = al.vram("X", rows, hidden)
    scratch = al.vram("scratch", 2 if vector_first else 1, geo.vlen)
    asm = Asm()
    t.load_batch(asm, geo, x_h, x, 0, (1, 2, 3, 4, 5))
    g_act, g_scr, g_stats, l_chunk, g_acc, l_row, g_fp = 1, 2, 3, 4, 5, 6, 7
    stride = geo.vlen * rows
    asm.li(g_scr, scratch.base)
    if vector_first:
        asm.li(g_acc, scratch.base + geo.vlen)
    asm.s_ld_fp(1, 0, t.FP_EPS_OR_SCALE)
    asm.fadd(2, 0, 0)
    asm.s_ld_fp(3, 0, t.FP_RECI_HIDDEN_OR_NEG_INF)

    def sum_of_squares() -> None:
        """f2 += the row's sum of squares; g_stats points at its first chunk and is consumed."""
        if not vector_first:
            with asm.loop(l_chunk, n):
                asm.v_mul_vv(g_scr, g_stats, g_stats)
                asm.v_red_sum(2, g_scr)
                asm.addi(g_stats, g_stats, stride)
            return
        asm.v_mul_vv(g_acc, g_stats, g_stats)
        asm.addi(g_stats, g_stats, stride)
        with asm.loop(l_chunk, n - 1):
            asm.v_mul_vv(g_scr, g_stats, g_stats)
            asm.v_add_vv(g_acc, g_acc, g_scr)
            asm.addi(g_stats, g_stats, stride)
        asm.v_red_sum(2, g_acc)

    def inverse_rms() -> None:
        """f2 = 1/sqrt(f2/hidden + eps), then the RTL's four spacers."""
        asm.fmul(2, 2, 3)
        asm.fadd(2, 2, 1)
        asm.fsqrt(2, 2)
        asm.freci(2, 2)
        for _ in range(4):
            asm.nop()

    def scale_loop() -> None:
        """Multiply the row whose first chunk g_act points at by f2, in a hardware loop."""
        with asm.loop(l_chunk, n):
            asm.v_mul_vf(g_act, g_act, 2)
            asm.addi(g_act, g_act, stride)

    if serial:
        for r in asm.copies(range(rows)):
            base = x.base + geo.vlen * r
            asm.li(g_act, base)
            asm.li(g_stats, base)
            sum_of_squares()
            if unroll_scale and n > 1:
                asm.li(g_stats, base + stride)
            inverse_rms()
            if unroll_scale:  # ping-pong: while one register is used, the other is reloaded
                regs = (g_act, g_stats)
                for i in range(n):
                    cur = regs[i % 2]
                    asm.v_mul_vf(cur, cur, 2)
                    if i + 2 < n:
                        asm.li(cur, base + stride * (i + 2))
                    elif i + 1 < n:
                        asm.nop()
            else:
                scale_loop()
            asm.fadd(2, 0, 0)
    else:
        asm.li(g_fp, t.FP_STATE)
        asm.li(g_act, x.base)
        with asm.loop(l_row, rows):
            asm.addi(g_stats, g_act, 0)
            sum_of_squares()
            inverse_rms()
            asm.s_st_fp(2, g_fp, 0)
            asm.fadd(2, 0, 0)
            asm.addi(g_fp, g_fp, 1)
            asm.addi(g_act, g_act, geo.vlen)
        asm.li(g_fp, t.FP_STATE)
        asm.li(g_stats, x.base)
        with asm.loop(l_row, rows):
            asm.s_ld_fp(2, g_fp, 0)
            asm.addi(g_act, g_stats, 0)
            scale_loop()
            asm.addi(g_fp, g_fp, 1)
            asm.addi(g_stats, g_stats, geo.vlen)
    fp = {t.FP_ZERO: 0.0, t.FP_EPS_OR_SCALE: t.RMS_EPS, t.FP_RECI_HIDDEN_OR_NEG_INF: 1.0 / hidden}
    return Kernel(asm.program({"op": "rmsnorm", "source": "lowering"}), al.layout(x, fp))


# -- softmax ------------------------------------------------------------------------------------


def lower_softmax(m: KnobMapping, wl: Workload, geo: Geometry) -> Kernel:
    """Row softmax of X·scale (§4.6): the compiler copies X into an S buffer and processes
    every MLEN row of each row tile as straight-line code."""
    in_place = m.flag("in_place")
    rows, cols = wl["rows"], wl["cols"]
    al = Allocator(geo)
    x_h = al.hbm("X", rows, cols)
    x = al.vram("X", rows, cols)
    s = x if in_place else al.vram("S", rows, cols, phys_rows=cdiv(rows, geo.mlen) * geo.mlen)
    vector_first = m.sym("reduce") == "vector_first" and cols > geo.vlen
    acc = al.vram("scratch", 1, geo.vlen) if vector_first else None
    asm = Asm()
    t.load_batch(asm, geo, x_h, x, 0, (1, 2, 3, 4, 5))
    if not in_place:
        t.copy_into(asm, geo, s, x)
    nrows = rows if m.flag("valid_rows_only") else s.phys_rows
    t.softmax_rows(
        asm, geo, s.base, nrows, cols // geo.vlen, s.phys_rows * geo.vlen, rolled=m.sym("row_loop") == "rolled",
        acc=acc.base if acc is not None else None,
    )  # fmt: skip
    fp = {t.FP_ZERO: 0.0, t.FP_EPS_OR_SCALE: t.softmax_scale(cols), t.FP_RECI_HIDDEN_OR_NEG_INF: -math.inf}
    return Kernel(asm.program({"op": "softmax", "source": "lowering"}), al.layout(s, fp))


# -- ffn ----------------------------------------------------------------------------------------


def lower_ffn(m: KnobMapping, wl: Workload, geo: Geometry) -> Kernel:
    """out = (silu(X·W_up) ⊙ (X·W_gate))·W_down, written over X in VRAM (§4.4). The compiler
    prefetches each weight's whole K column block, unrolls the column-slice and row-group
    levels around a rolled K loop, and applies SiLU to the *up* projection."""
    fused, hoist, unroll = m.flag("fused_up_gate"), m.flag("hoist_csr"), m.flag("unroll_outer")
    rows, h, i = wl["rows"], wl["hidden"], wl["inter"]
    al = Allocator(geo)
    x_h = al.hbm("X", rows, h)
    w_up, w_gate, w_down = al.hbm("W_up", h, i), al.hbm("W_gate", h, i), al.hbm("W_down", i, h)
    x = al.vram("X", rows, h)
    up, gate = al.vram("up", rows, i), al.vram("gate", rows, i)
    scratch = al.vram("scratch", 1, geo.vlen)
    asm = Asm()
    t.load_batch(asm, geo, x_h, x, 0, (1, 2, 3, 4, 5))
    g_off, g_stride, g_mram = 1, 2, 3
    if hoist:
        for areg, w in ((1, w_up), (2, w_gate), (3, w_down)):
            t.set_hbm_base(asm, areg, g_off, w.base)

    def projections(pairs: Sequence[tuple[HbmTensor, VramTensor, int]], act: VramTensor) -> None:
        """Run projections sharing K (= act.cols) together, column block by column block."""
        w0 = pairs[0][0]
        kt = w0.rows // geo.mlen
        if hoist:
            t.csr_setup(asm, w0, 0, g_off, g_stride, base=False)
        for cb in asm.copies(range(w0.cols // geo.mlen)):
            for j, (w, _, areg) in enumerate(pairs):
                if not hoist and j == 0:
                    t.csr_setup(asm, w, areg, g_off, g_stride)
                elif not hoist:
                    t.set_hbm_base(asm, areg, g_off, w.base)
                blocks = [(k, cb) for k in range(kt)]
                t.load_tiles(asm, geo, w, blocks, j * kt, areg, (g_off, g_stride, g_mram), setup=False)
            outs = [(j * kt, out) for j, (_, out, _) in enumerate(pairs)]
            _ffn_block(asm, geo, outs, act, cb, kt, rows, unroll)

    if fused:
        projections([(w_up, up, 1), (w_gate, gate, 2)], x)
    else:
        projections([(w_up, up, 1)], x)
        projections([(w_gate, gate, 2 if hoist else 1)], x)
    t.silu_gate(asm, geo, up, gate, scratch.base, m.flag("unroll_act"))
    projections([(w_down, x, 3 if hoist else 1)], up)
    return Kernel(asm.program({"op": "ffn", "source": "lowering"}), al.layout(x, {t.FP_ZERO: 0.0, t.FP_ONE: 1.0}))


def _ffn_block(
    asm: Asm, geo: Geometry, outs: Sequence[tuple[int, VramTensor]], act: VramTensor, cb: int, kt: int, rows: int,
    unroll: bool,
) -> None:  # fmt: skip
    """All BLEN column slices × BLEN row groups of column block `cb` for each (MRAM tile0, out):
    per (slice, row group) a rolled K loop of M_MM and one M_MM_WO."""
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
        for slot in asm.copies(range(per_block)):
            for a in asm.copies(range(groups)):
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


# -- attention ----------------------------------------------------------------------------------


def lower_attention(m: KnobMapping, wl: Workload, geo: Geometry) -> Kernel:
    """softmax(Q·Kᵀ·scale + mask)·V for one head. The compiler's flash attention (§4.7 MHA):
    per q block, online softmax over K blocks (fully-future blocks skipped when causal), O
    rescaled by m_res and accumulated, O /= l; the causal mask is precomputed once."""
    hoist, one_pass = m.flag("hoist_csr"), m.sym("algorithm") == "one_pass"
    kv_outer = not one_pass and m.sym("loop_order") == "kv_outer"
    sq, skv, dd, causal = wl["sq"], wl["skv"], wl["d"], wl["causal"]
    ml = geo.mlen
    dt, kvt = dd // ml, skv // ml
    al = Allocator(geo)
    q_h, k_h, v_h = al.hbm("Q", sq, dd), al.hbm("K", skv, dd), al.hbm("V", skv, dd)
    q = al.vram("Q", sq, dd)
    o = al.vram("O", sq, dd)
    s = al.vram("S", ml, skv if one_pass else ml)
    pv = None if one_pass else al.vram("PV", ml, dd)
    mask = al.vram("mask", ml, ml) if causal else None
    scale = t.attention_scale(dd)
    st = t.FP_STATE
    if kv_outer:
        m_slot, l_slot, res_slot = st, st + sq, st + 2 * sq
        stage = res_slot + ml
    else:
        m_slot, res_slot, l_slot = st, st + ml, st + 2 * ml
        stage = st + 3 * ml
    asm = Asm()
    t.load_batch(asm, geo, q_h, q, 0, (1, 2, 3, 4, 5))
    if mask is not None:
        t.causal_mask(asm, geo, mask, stage, m.sym("mask"))
    asm.s_ld_fp(1, 0, t.FP_EPS_OR_SCALE)
    if hoist:
        t.csr_setup(asm, k_h, 1, 1, 2)
        t.set_hbm_base(asm, 2, 1, v_h.base)
    k_reg, v_reg = (1, 2) if hoist else (1, 1)

    def load(src: HbmTensor, areg: int, kb: int, tile0: int, setup: bool = not hoist) -> None:
        t.load_tiles(asm, geo, src, [(kb, c) for c in range(dt)], tile0, areg, (1, 2, 3), setup=setup)

    def scores(qb: int, rows: int, kb: int, out: int) -> None:
        t.projection(asm, geo, q.block(qb, 0, ml), q.phys_rows * geo.vlen, 0, out, dt, cdiv(rows, geo.blen),
                     transposed=True)  # fmt: skip
        if mask is not None and kb == qb:
            t.block_binary(asm, geo, "V_ADD_VV", out, out, mask.base, rows, (1, 2, 3, 4))

    def init_rows(row0: int, rows: int) -> None:
        """m = -inf and l = 0 for `rows` state entries; O rows from row0 = 0."""
        asm.s_ld_fp(6, 0, t.FP_RECI_HIDDEN_OR_NEG_INF)
        asm.li(1, m_slot)
        with asm.loop(2, rows):
            asm.s_st_fp(6, 1, 0)
            asm.s_st_fp(0, 1, l_slot - m_slot)
            asm.addi(1, 1, 1)
        for cb in range(dt):
            asm.li(1, o.addr(row0, cb * ml))
            with asm.loop(2, rows):
                asm.v_mul_vf(1, 1, 0)
                asm.addi(1, 1, geo.vlen)

    def flash_step(qb: int, rows: int, kb: int, v_tile0: int, row0_state: int) -> None:
        """Online softmax, PV and the O update of one (q block, K block) pair."""
        assert pv is not None
        t.online_softmax_rows(asm, geo, s.base, rows, m_slot + row0_state, res_slot, l_slot + row0_state, scale != 1.0)
        if not kv_outer:
            load(v_h, v_reg, kb, v_tile0)
        for cb in range(dt):
            t.projection(asm, geo, s.base, 0, (v_tile0 + cb) * geo.tile, pv.block(0, cb, ml), 1, cdiv(rows, geo.blen))
        t.scale_rows(asm, geo, o, qb * ml, rows, res_slot, reciprocal=False)
        for cb in range(dt):
            oa = o.addr(qb * ml, cb * ml)
            t.block_binary(asm, geo, "V_ADD_VV", oa, oa, pv.block(0, cb, ml), rows, (1, 2, 3, 4))

    qblocks = cdiv(sq, ml)
    if one_pass:
        for qb in asm.copies(range(qblocks)):
            rows = min(ml, sq - qb * ml)
            kbs = qb + 1 if causal else kvt
            for kb in asm.copies(range(kbs)):
                load(k_h, k_reg, kb, 0)
                scores(qb, rows, kb, s.block(0, kb, ml))
            t.softmax_rows(asm, geo, s.base, rows, kbs, s.phys_rows * geo.vlen, rolled=True, scale_reg=1)
            for kb in asm.copies(range(kbs)):  # V block kb, column block c -> MRAM tile kb*dt + c
                load(v_h, v_reg, kb, kb * dt, setup=not hoist and kb == 0)
            for cb in range(dt):
                t.projection(asm, geo, s.base, s.phys_rows * geo.vlen, cb * geo.tile, o.addr(qb * ml, cb * ml), kbs,
                             cdiv(rows, geo.blen), mat_k_stride=dt * geo.tile)  # fmt: skip
    elif not kv_outer:
        for qb in asm.copies(range(qblocks)):
            rows = min(ml, sq - qb * ml)
            init_rows(qb * ml, rows)
            for kb in asm.copies(range(qb + 1 if causal else kvt)):
                load(k_h, k_reg, kb, 0)
                scores(qb, rows, kb, s.base)
                flash_step(qb, rows, kb, 0, 0)
            t.scale_rows(asm, geo, o, qb * ml, rows, l_slot, reciprocal=True)
    else:
        init_rows(0, sq)
        for kb in asm.copies(range(kvt)):
            load(k_h, k_reg, kb, 0)
            load(v_h, v_reg, kb, dt)
            for qb in asm.copies(range(kb if causal else 0, qblocks)):
                rows = min(ml, sq - qb * ml)
                scores(qb, rows, kb, s.base)
                flash_step(qb, rows, kb, dt, qb * ml)
        for qb in range(qblocks):
            rows = min(ml, sq - qb * ml)
            t.scale_rows(asm, geo, o, qb * ml, rows, l_slot + qb * ml, reciprocal=True)
    fp = {t.FP_ZERO: 0.0, t.FP_EPS_OR_SCALE: scale, t.FP_RECI_HIDDEN_OR_NEG_INF: -math.inf}
    return Kernel(asm.program({"op": "attention", "source": "lowering"}), al.layout(o, fp))


# -- rope ---------------------------------------------------------------------------------------


def lower_rope(m: KnobMapping, wl: Workload, geo: Geometry) -> Kernel:
    """x = x·cos + rotate_half(x)·sin in place (§4.8). The compiler takes rotate_half(x) as an
    input and runs one rolled loop over all VLEN chunks."""
    on_chip, unroll = m.sym("rotate") == "on_chip", m.flag("unroll")
    rows, hd = wl["rows"], wl["head_dim"]
    al = Allocator(geo)
    names = ("X", "COS", "SIN") if on_chip else ("X", "X_rot", "COS", "SIN")
    hbm = [al.hbm(nm, rows, hd) for nm in names]
    vram = {nm: al.vram(nm, rows, hd) for nm in names}
    scratch = al.vram("scratch", 2 if on_chip else 1, geo.vlen)
    asm = Asm()
    for i, h in enumerate(hbm):
        t.load_batch(asm, geo, h, vram[h.name], i, (1, 2, 3, 4, 5))
    x, cos, sin = vram["X"], vram["COS"], vram["SIN"]
    v = geo.vlen

    def repeat(n: int, counter: int, body: Callable[[], None]) -> None:
        if unroll:
            for _ in asm.copies(range(n)):
                body()
        else:
            with asm.loop(counter, n):
                body()

    if not on_chip:
        g_x, g_rot, g_cos, g_sin, g_scr, l_chunk = 1, 2, 3, 4, 5, 6
        for g, base in ((g_x, x.base), (g_rot, vram["X_rot"].base), (g_cos, cos.base), (g_sin, sin.base)):
            asm.li(g, base)
        asm.li(g_scr, scratch.base)

        def body() -> None:
            asm.v_mul_vv(g_scr, g_rot, g_sin)
            asm.v_mul_vv(g_x, g_x, g_cos)
            asm.v_add_vv(g_x, g_x, g_scr)
            for g in (g_x, g_rot, g_cos, g_sin):
                asm.addi(g, g, v)

        repeat(rows * hd // v, l_chunk, body)
    else:
        half = rows * hd // (2 * v) * v  # element distance from chunk c to its partner c + hd/2
        g_x1, g_x2, g_c1, g_c2, g_s1, g_s2, g_a, g_b, l_pair = 1, 2, 3, 4, 5, 6, 7, 8, 9
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

        repeat(rows * hd // (2 * v), l_pair, pair)
    return Kernel(asm.program({"op": "rope", "source": "lowering"}), al.layout(x, {t.FP_ZERO: 0.0}))


# -- entry point ----------------------------------------------------------------------------------


FAMILIES: dict[str, Callable[[KnobMapping, Workload, Geometry], Kernel]] = {
    "linear": lower_linear,
    "rmsnorm": lower_rmsnorm,
    "softmax": lower_softmax,
    "ffn": lower_ffn,
    "attention": lower_attention,
    "rope": lower_rope,
}


def lower(kb: KB, mapping: KnobMapping, wl: Workload) -> Kernel:
    """The kernel of a mapping for `wl` on the KB's machine. Legality first: a shape outside
    the compiler's envelope raises WorkloadError, a mapping that breaks a constraint of
    plena.md §8 raises IllegalMapping naming every violated constraint."""
    geo = Geometry.from_params(kb.params)
    check_shape(wl, geo.mlen, geo.blen, geo.mram_tiles)
    check(kb, mapping, wl)
    return FAMILIES[wl.op](mapping, wl, geo)


def kept_lazy(m: KnobMapping, plan: LinearPlan, geo: Geometry) -> bool:
    """Whether a whole linear's program is kept as a lazily built nest: its estimated static
    instructions exceed LAZY_STATIC."""
    k_chunk, n_block, m_block = m.int("k_chunk"), m.int("n_block"), m.int("m_block")
    passes = len(plan.k_chunks) * len(plan.groups) * sum(cdiv(cdiv(r, geo.mlen), m_block) for _, r in plan.spans)
    return passes * (4 * k_chunk * n_block + 30 * n_block * m_block) > LAZY_STATIC


def linear_identity(m: KnobMapping, wl: Workload, geo: Geometry) -> Hashable:
    """What `lower_linear`'s instructions depend on besides the workload and machine: mappings
    with equal identities lower to the same instructions (a knob value past what the shape
    uses — a K chunk or column group wider than K or N, an m_block over every span's row
    blocks, `order` with a single chunk or group, `add_rows` with a single chunk or only full
    row blocks — changes nothing), so a search can tell a duplicate program without lowering
    it. Not the converse: unequal identities may still lower alike."""
    plan = linear_plan(m, wl, geo)
    m_block = m.int("m_block")
    blocks = max(cdiv(rows, geo.mlen) for _, rows in plan.spans)
    multi = len(plan.k_chunks) > 1
    ragged = any(rows % geo.mlen for _, rows in plan.spans)
    return (
        plan,
        min(m_block, blocks),
        m.flag("unroll"),
        m.flag("hoist_csr"),
        m.sym("tile_order"),
        m.sym("order") if multi and len(plan.groups) > 1 else None,
        m.sym("add_rows") if multi and ragged else None,
        kept_lazy(m, plan, geo),
    )


def identity(kb: KB, mapping: KnobMapping, wl: Workload) -> Hashable | None:
    """`linear_identity` for a linear (whose lowering is the slow one to repeat), else None:
    no shortcut, the program itself decides."""
    if wl.op != "linear":
        return None
    return linear_identity(mapping, wl, Geometry.from_params(kb.params))


def lower_slice(kb: KB, mapping: KnobMapping, wl: Workload, keep: frozenset[Block]) -> Kernel:
    """The slice of `lower(kb, mapping, wl)` that computes the output blocks `keep` (linear only)."""
    geo = Geometry.from_params(kb.params)
    check_shape(wl, geo.mlen, geo.blen, geo.mram_tiles)
    check(kb, mapping, wl)
    if wl.op != "linear":
        raise WorkloadError(f"{wl.id}: a kernel slice exists for the linear family only, not {wl.op}")
    return lower_linear(mapping, wl, geo, keep)
