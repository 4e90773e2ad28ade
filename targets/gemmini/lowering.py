"""Lowering: a legal Gemmini mapping and a DRAM placement -> a Program (contract text form).

`lower` checks the mapping against the doc's constraints first (`Space.check`: an illegal
mapping is refused with the rule, its doc line and the values) and reads it through the typed
view of `mapping.view`; a legal mapping always lowers to a program the simulator accepts
(tests/targets/gemmini/test_lowering.py).

Two lowerings per op family:

* `loop = hw`: the library's shape (reference §6): hoisted configs, then one
  `loop_ws` / `loop_conv_ws` group per block, then a fence.
* `loop = sw`: an unrolled RoCC stream in the style of Exo (reference §8.1). Matmul and
  conv share one stream generator over an implicit GEMM: i tiles (output rows, or groups
  of <= DIM output pixels of one row), j tiles (DIM output columns/channels) and k tiles
  (DIM reduction elements, or one (krow, kcol, channel chunk) of a conv). The op supplies
  scratchpad layouts, the mvins that fill them and DRAM addresses; the generator owns
  block loops, buffers, residency, just-in-time loads, accumulator slots, init, compute
  pairing and stores.

Convolution padding is materialised in the scratchpad with mvins from DRAM address 0
(zeros), and the conv stride becomes config_ex's A_stride, so a k tile of a strided conv
reads every stride-th input pixel of a window row.

Over ~700 lines as one module: the two lowerings are the two answers to one knob (`loop`),
chosen in `lower`, and share the emitter (`_Out`, the config commands) and the tile
arithmetic; split along the hw/sw seam, each half would be ~350 lines around a third module
of ~60 lines of shared emitter, and sampled simulation, which lowers a slice of the
hardware-loop program (`output_blocks`, `slice_closure`), would import the lowering from
three places instead of one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Protocol

from zomboss.targets.gemmini.asm import ACCUMULATE, GARBAGE, IS_ACC
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.instance import Buffers, ConvBuffers, MatmulBuffers
from zomboss.targets.gemmini.mapping import ConvView, MatmulView, live_acc_tiles, view
from zomboss.targets.gemmini.numerics import ONE_F32_BITS
from zomboss.targets.gemmini.suite import conv_out_dims

from zomboss.errors import ZombossError
from zomboss.expr import cdiv
from zomboss.mapping import KnobMapping, space
from zomboss.program import Instr, Item, Loop, Program
from zomboss.util import MAX_INSTRUCTIONS, LimitError
from zomboss.workload import Workload

ONE_F32 = ONE_F32_BITS
WS, OS = 1, 0  # config_ex dataflow field


class LoweringError(ZombossError):
    """A lowering request whose parts do not fit together (e.g. conv buffers for a matmul)."""


def lower(
    mapping: KnobMapping, wl: Workload, bufs: Buffers, cfg: GemminiConfig, blocks: frozenset[Block] | None = None
) -> Program:
    """Lower a mapping for `wl` on `cfg`; raises IllegalMapping when it breaks a doc constraint.

    `blocks`: only the hardware loops that compute these output blocks (`output_blocks`),
    with every reduction step, and those that first load an operand block they reuse pinned
    (`slice_closure`), in program order: the slice sampled verification runs."""
    kb = cfg.kb()
    space(kb, wl.op).check(kb, mapping, wl.shape)
    m = view(mapping)
    if blocks is not None and m.loop != "hw":
        raise LoweringError("only a hardware-loop mapping (loop=hw) can be lowered for some output blocks")
    if m.loop != "hw" and (n := stream_computes(wl, cfg)) > MAX_STREAM_COMMANDS:
        raise LimitError(
            f"{wl.id}: an unrolled stream (loop=sw) issues at least {n:,} compute commands, more than the "
            f"{MAX_STREAM_COMMANDS:,} a lowered program may have; only hardware loops (loop=hw) lower at this size"
        )
    out = _Out()
    if isinstance(m, MatmulView):
        if not isinstance(bufs, MatmulBuffers):
            raise LoweringError(f"a matmul mapping needs MatmulBuffers, got {type(bufs).__name__}")
        if m.loop == "hw":
            _matmul_hw(out, m, wl, bufs, cfg, blocks)
        else:
            op = _MatmulOp(m, wl, bufs, cfg)
            _Stream(out, m, op, cfg, wl["relu"], bufs.scale_bits, WS if m.dataflow == "ws" else OS).run()
    else:
        if not isinstance(bufs, ConvBuffers):
            raise LoweringError(f"a conv mapping needs ConvBuffers, got {type(bufs).__name__}")
        if m.loop == "hw":
            _conv_hw(out, m, wl, bufs, cfg, blocks)
        else:
            _Stream(out, m, _ConvOp(m, wl, bufs, cfg), cfg, wl["relu"], bufs.scale_bits, WS).run()
    meta = {"workload": wl.id, "mapping": mapping.to_json(), "buffers": bufs.__dict__.copy()}
    flat = [i for i in out.instrs if isinstance(i, Instr)]
    if len(flat) < len(out.instrs):  # the hardware-loop lowerings keep their loop nest
        return Program.from_nest("gemmini", out.instrs, meta)
    return Program("gemmini", tuple(flat), meta)


MAX_STREAM_COMMANDS = MAX_INSTRUCTIONS  # a stream's program holds every command it issues


def stream_computes(wl: Workload, cfg: GemminiConfig) -> int:
    """A lower bound of the compute commands any unrolled stream of `wl` issues (a matmul: one
    per DIM x DIM output tile and DIM-deep reduction step; a conv: at least one per output tile),
    known before anything is lowered, so that a stream too large to hold is refused at once
    instead of after minutes of lowering."""
    d = cfg.dim
    if wl.op == "matmul":
        return cdiv(wl["M"], d) * cdiv(wl["N"], d) * cdiv(wl["K"], d)
    oh, ow = conv_out_dims(wl)
    return cdiv(wl["N"] * oh * ow, d) * cdiv(wl["K"], d)


class _Out:
    """Instruction sink with the config-state cache that decides when a config_ld is needed."""

    def __init__(self) -> None:
        self.instrs: list[Item] = []
        self.ld: dict[int, tuple[int, int, int]] = {}

    def emit(self, op: str, *args: int) -> None:
        self.instrs.append(Instr(op, args))

    def config_ld(self, state: int, stride: int, block_stride: int, shrunk: int = 0) -> None:
        if self.ld.get(state) != (stride, shrunk, block_stride):
            self.emit("config_ld", state, stride, shrunk, block_stride, 1, ONE_F32)
            self.ld[state] = (stride, shrunk, block_stride)


def _config_ex(out: _Out, dataflow: int, a_stride: int, act: int = 0, acc_scale_bits: int = ONE_F32) -> None:
    # dataflow, act, a_transpose, b_transpose, a_stride, c_stride, sys_shift, acc_scale_bits, set_only_strides
    out.emit("config_ex", dataflow, act, 0, 0, a_stride, 1, 0, acc_scale_bits, 0)


def _config_st(out: _Out, stride: int, relu: int, scale_bits: int) -> None:
    # stride, act, scale_bits, then pooling fields (off)
    out.emit("config_st", stride, relu, scale_bits, 0, 0, 0, 0, 0, 0, 0, 0, 0)


# ---------------------------------------------------------------------------- hardware loops


def _matmul_hw(
    out: _Out, m: MatmulView, wl: Workload, bufs: MatmulBuffers, cfg: GemminiConfig, blocks: frozenset[Block] | None
) -> None:
    """loop_ws per block, as tiled_matmul_outer issues it, for any legal order and reuse: a
    loop nest in the mapping's order whose iterations are alike except at the edges."""
    d = cfg.dim
    M, N, K = wl["M"], wl["N"], wl["K"]
    tiles = {"i": cdiv(M, d), "j": cdiv(N, d), "k": cdiv(K, d)}
    size = {"i": m.tile_i, "j": m.tile_j, "k": m.tile_k}
    nblk = {x: cdiv(tiles[x], size[x]) for x in "ijk"}
    pad = {"i": tiles["i"] * d - M, "j": tiles["j"] * d - N, "k": tiles["k"] * d - K}
    has_bias = bool(wl["bias"])
    _config_ex(out, WS, 1, act=wl["relu"])  # tiled_matmul_outer passes act to config_ex too
    _config_st(out, N, wl["relu"], bufs.scale_bits)
    out.config_ld(0, K, d)
    out.config_ld(1, N, d)
    out.config_ld(2, 0, d)  # repeating bias row: stride 0, int32
    order = tuple(m.order)
    a_key, b_key = [x for x in order if x in "ik"], [x for x in order if x in "kj"]

    def leaf(idx: tuple[int, ...]) -> tuple[Instr, ...]:
        b = dict(zip(order, idx, strict=True))
        i0, j0, k0 = b["i"], b["j"], b["k"]
        n = {x: min(size[x], tiles[x] - b[x] * size[x]) for x in "ijk"}
        p = {x: pad[x] if b[x] == nblk[x] - 1 else 0 for x in "ijk"}
        a_addr = bufs.a + i0 * m.tile_i * d * K + k0 * m.tile_k * d
        b_addr = bufs.b + k0 * m.tile_k * d * N + j0 * m.tile_j * d
        a_id = b_id = 0
        if m.reuse_a:  # pinned at its first use (j0 == 0 in any order), reused after
            a_id, a_addr = _first_use_id(b, a_key, nblk), a_addr if j0 == 0 else 0
        if m.reuse_b:  # likewise at i0 == 0
            b_id, b_addr = _first_use_id(b, b_key, nblk), b_addr if i0 == 0 else 0
        d_addr = bufs.bias + j0 * m.tile_j * d * 4 if has_bias and k0 == 0 else 0
        c_addr = bufs.c + i0 * m.tile_i * d * N + j0 * m.tile_j * d if k0 == nblk["k"] - 1 else 0
        ex_acc = int(has_bias or k0 > 0)
        return (
            Instr("loop_ws_bounds", (n["i"], n["j"], n["k"], p["i"], p["j"], p["k"])),
            Instr("loop_ws_addrs_ab", (a_addr, b_addr)),
            Instr("loop_ws_addrs_dc", (d_addr, c_addr)),
            Instr("loop_ws_strides_ab", (K, N)),
            Instr("loop_ws_strides_dc", (0, N)),
            # ex_accumulate, full_c, low_d, act, a_spad_id, b_spad_id, a_transpose, b_transpose, is_resadd
            Instr("loop_ws", (ex_acc, 0, 0, wl["relu"], a_id, b_id, 0, 0, 0)),
        )

    pinned = set(a_key if m.reuse_a else ()) | set(b_key if m.reuse_b else ())

    def alike(depth: int, idx: tuple[int, ...]) -> Hashable:
        x, t = order[depth], idx[depth]
        # block sizes and padding change at the last block, bias/accumulate/store flags at the
        # first and last k block, first uses of pinned blocks at index 0; a pinned block's
        # spad id depends on the index itself
        return (t == 0, t == nblk[x] - 1, t if x in pinned else None)

    trips = [nblk[x] for x in order]
    if blocks is None:
        out.instrs.append(_nest(trips, leaf, alike))
    else:
        out.instrs.extend(_slice(order, trips, leaf, ("i", "j"), slice_closure(m, blocks)))
    out.emit("fence")


Block = tuple[int, ...]  # an output block: (i, j) for a matmul, (b, r, c, o) for a conv


def output_blocks(m: MatmulView | ConvView, wl: Workload, cfg: GemminiConfig) -> tuple[tuple[int, int], ...]:
    """Per output dim (matmul i, j; conv b, r, c, o): (number of blocks, block extent), where the
    extent is in rows/columns (matmul) or batch images, output rows, columns, channels (conv)."""
    d = cfg.dim
    if isinstance(m, MatmulView):
        return ((cdiv(wl["M"], m.tile_i * d), m.tile_i * d), (cdiv(wl["N"], m.tile_j * d), m.tile_j * d))
    oh, ow = conv_out_dims(wl)
    steps = (m.tile_b, m.tile_orows, m.tile_ocols, m.tile_och)
    return tuple((cdiv(n, s), s) for n, s in zip((wl["N"], oh, ow, wl["K"]), steps, strict=True))


def slice_closure(m: MatmulView | ConvView, blocks: frozenset[Block]) -> frozenset[Block]:
    """`blocks` and the blocks whose loops first load a pinned operand block they reuse: the
    library pins A at j = 0 and B at i = 0 (conv: the input at o = 0, the weights at the first
    batch and pixel tile), and later loops skip those loads."""
    out = set(blocks)
    if isinstance(m, MatmulView):
        if m.reuse_a:
            out |= {(i, 0) for i, _j in blocks}
        if m.reuse_b:
            out |= {(0, j) for _i, j in blocks}
    else:
        if m.reuse_a:
            out |= {(b, r, c, 0) for b, r, c, _o in blocks}
        if m.reuse_b:
            out |= {(0, 0, 0, o) for *_brc, o in blocks}
    return frozenset(out)


def _slice(
    order: Sequence[str],
    trips: list[int],
    leaf: Callable[[tuple[int, ...]], tuple[Instr, ...]],
    out_dims: Sequence[str],
    keep: frozenset[Block],
) -> list[Instr]:
    """The leaves of the nest (in its order) whose output block is in `keep`."""
    at = [order.index(x) for x in out_dims]
    ranges = [range(n) for n in trips]
    return [ins for idx in itertools.product(*ranges) if tuple(idx[a] for a in at) in keep for ins in leaf(idx)]


def _first_use_id(b: dict[str, int], dims: list[str], nblk: dict[str, int]) -> int:
    """The scratchpad half (1, 2, ...) the library pins an operand block to: blocks are pinned
    in the order of their first use, which is the loop order restricted to the block's dims."""
    rank = 0
    for x in dims:
        rank = rank * nblk[x] + b[x]
    return rank + 1


def _nest(
    trips: list[int],
    leaf: Callable[[tuple[int, ...]], tuple[Instr, ...]],
    alike: Callable[[int, tuple[int, ...]], Hashable],
) -> Loop:
    """A perfect loop nest over the product of `trips` (outermost first); `leaf(idx)` is the
    innermost body, `alike(depth, idx)` the key of iteration idx[depth] given the outer ones."""

    def level(depth: int, prefix: tuple[int, ...]) -> Loop:
        def body(t: int) -> tuple[Item, ...]:
            idx = (*prefix, t)
            return leaf(idx) if depth == len(trips) - 1 else (level(depth + 1, idx),)

        return Loop(trips[depth], body, lambda t: alike(depth, (*prefix, t)))

    return level(0, ())


def _conv_hw(
    out: _Out, m: ConvView, wl: Workload, bufs: ConvBuffers, cfg: GemminiConfig, blocks: frozenset[Block] | None
) -> None:
    """loop_conv_ws per tile in tiled_conv's b, orow, ocol, och, krow, kcol, kch order, with
    its window/padding arithmetic (reference §6.2), its operand pinning, and the mapping's
    choice of the downsample path and of first-layer pixel packing (the dev library takes
    both where they apply, the dosa library neither)."""
    d = cfg.dim
    Nb, H, W, C, K, R, S = (wl[x] for x in ("N", "H", "W", "C", "K", "R", "S"))
    st, pad = wl["stride"], wl["pad"]
    oh, ow = conv_out_dims(wl)
    has_bias = bool(wl["bias"])
    bias_base = bufs.bias if has_bias else 1  # the library passes a dummy non-NULL bias: "init to zero"
    _config_st(out, K, wl["relu"], bufs.scale_bits)
    ds = int(m.downsample)  # the knob is active only where the doc's downsample conditions hold
    _config_ex(out, WS, st >> ds, acc_scale_bits=0)  # tiled_conv passes sys_acc_scale 0
    dims = ("b", "r", "c", "o", "kr", "kc", "ch")
    extent = dict(zip(dims, (Nb, oh, ow, K, R, S, C), strict=True))
    steps = (m.tile_b, m.tile_orows, m.tile_ocols, m.tile_och, m.tile_krows, m.tile_kcols, m.tile_ich)
    step = dict(zip(dims, steps, strict=True))
    nt = {x: cdiv(extent[x], step[x]) for x in dims}
    a_key, b_key = ["b", "r", "c", "kr", "kc", "ch"], ["o", "kr", "kc", "ch"]

    def window(start: int, n: int, k0: int, nk: int, size: int) -> tuple[int, int, int]:
        """(first input row/col, low pad, high pad) of a tile's window, sized as tiled_conv
        sizes it; padding is clamped to the window (a tile whose whole window lies in the
        padding, a kernel tile narrower than the padding, is all padding)."""
        first, length = start * st + k0 - pad, n * st + nk - 1
        lo = min(max(-first, 0), length)
        return first, lo, min(max(first + length - size, 0), length - lo)

    def leaf(idx: tuple[int, ...]) -> tuple[Instr, ...]:
        b0, r0, c0, o0, kr0, kc0, ch0 = (t * s for t, s in zip(idx, steps, strict=True))
        nb, nr, nc = min(m.tile_b, Nb - b0), min(m.tile_orows, oh - r0), min(m.tile_ocols, ow - c0)
        no, nkr, nkc, nch = (
            min(m.tile_och, K - o0),
            min(m.tile_krows, R - kr0),
            min(m.tile_kcols, S - kc0),
            min(m.tile_ich, C - ch0),
        )
        first = kr0 == 0 and kc0 == 0 and ch0 == 0
        last = kr0 + m.tile_krows >= R and kc0 + m.tile_kcols >= S and ch0 + m.tile_ich >= C
        irow, upad, dpad = window(r0, nr, kr0, nkr, H)
        icol, lpad, rpad = window(c0, nc, kc0, nkc, W)
        inp = bufs.input + ((b0 * H + irow + upad) * W + icol + lpad) * C + ch0
        wts = bufs.weights + ((kr0 * S + kc0) * C + ch0) * K + o0
        at = dict(zip(dims, idx, strict=True))
        a_id = b_id = 0
        if m.reuse_a:  # pinned at its first use (the first och tile), reused after
            a_id, inp = _first_use_id(at, a_key, nt), inp if o0 == 0 else 0
        if m.reuse_b:  # pinned at its first use (the first batch and pixel tile), reused after
            b_id, wts = _first_use_id(at, b_key, nt), wts if b0 == r0 == c0 == 0 else 0
        outp = bufs.output + ((b0 * oh + r0) * ow + c0) * K + o0 if last else 0
        bias = bias_base + o0 * 4 if first else 0
        ppr = _max_pixels_per_row(nch, nkc, d) if m.first_layer and not ds else 1
        return (
            # batch_size, in_row_dim, in_channels, out_channels, out_row_dim, pool_out_row_dim, out_col_dim, stride, padding
            Instr("loop_conv_ws_config1", (Nb, H, C, K, oh, oh, ow, st, pad)),
            # kernel_dim, pool_out_col_dim, pool_size, pool_stride, pool_padding, batches, porows, pocols, pochs
            Instr("loop_conv_ws_config2", (R, ow, 1, 1, 0, nb, nr, nc, no)),
            # krows, kcols, kchs, lpad, rpad, upad, dpad, plpad, in_col_dim
            Instr("loop_conv_ws_config3", (nkr, nkc, nch, lpad, rpad, upad, dpad, 0, W)),
            # orows, prpad, pupad, pdpad, kernel_dilation, in_stride, weight_stride, out_stride, ocols
            Instr("loop_conv_ws_config4", (nr, 0, 0, 0, 1, C, K, K, nc)),
            Instr("loop_conv_ws_config5", (wts, outp)),
            Instr("loop_conv_ws_config6", (bias, inp)),
            # no_bias, wrot180, trans_output_1203, trans_weight_1203, trans_weight_0132, trans_input_3120, dw,
            # max_pixels_per_row, a_spad_id, b_spad_id, no_pool, downsample, input_dilated, act
            Instr("loop_conv_ws", (int(not has_bias), 0, 0, 0, 0, 0, 0, ppr, a_id, b_id, 1, ds, 0, wl["relu"])),
        )

    pinned = set(a_key if m.reuse_a else ()) | set(b_key if m.reuse_b else ())

    def pads(x: str, t: int, k: int) -> tuple[int, int]:
        """The padding of output tile t of dim x (r or c) against kernel tile k (kr or kc)."""
        kx = "kr" if x == "r" else "kc"
        start, k0 = t * step[x], k * step[kx]
        n, nk = min(step[x], extent[x] - start), min(step[kx], extent[kx] - k0)
        return window(start, n, k0, nk, H if x == "r" else W)[1:]

    def alike(depth: int, idx: tuple[int, ...]) -> Hashable:
        # tile sizes change at the last tile, bias/output flags at the first/last kernel tile,
        # first uses of pinned blocks at index 0 (a pinned block's spad id depends on the index
        # itself), and the padding with the output tile and the kernel tile together
        x, t = dims[depth], idx[depth]
        extra: object = t if x in pinned else None
        if x in ("r", "c"):
            extra = (extra, tuple(pads(x, t, k) for k in range(nt["kr" if x == "r" else "kc"])))
        elif x in ("kr", "kc"):
            extra = (extra, pads("r" if x == "kr" else "c", idx[1 if x == "kr" else 2], t))
        return (t == 0, t == nt[x] - 1, extra)

    trips = [nt[x] for x in dims]
    if blocks is None:
        out.instrs.append(_nest(trips, leaf, alike))
    else:
        out.instrs.extend(_slice(dims, trips, leaf, ("b", "r", "c", "o"), slice_closure(m, blocks)))
    out.emit("fence")


def _max_pixels_per_row(kchs: int, kcols: int, dim: int) -> int:
    """sp_tiled_conv's first-layer packing factor (reference §6.2): DIM/ichs, capped at kcols."""
    if kchs <= dim:
        return max(1, min(dim // kchs, kcols))
    return 1


# ---------------------------------------------------------------------------- unrolled stream

# A tile: (global key, valid rows or cols or depth, op-specific payload)
Tile = tuple[int, int, tuple[int, ...]]


class _StreamOp(Protocol):
    """What the stream generator needs from an op family (matmul, conv)."""

    i_blocks: list[list[Tile]]
    j_blocks: list[list[Tile]]
    k_blocks: list[list[Tile]]
    a_rows: int  # scratchpad rows of one A block
    b_rows: int
    a_cfg: tuple[int, int]  # DRAM row stride (bytes), scratchpad block stride (rows)
    b_cfg: tuple[int, int]
    c_stride: int  # DRAM bytes between output rows
    a_stride: int  # config_ex A_stride
    i_total: int  # i tiles over the whole problem (acc addressing of live regions)
    j_total: int

    def a_addr(self, base: int, bi: int, bk: int, ii: int, kk: int) -> int: ...
    def b_addr(self, base: int, bk: int, bj: int, kk: int, jj: int) -> int: ...
    def a_groups(self, bi: int, bk: int, ii: int, kk: int) -> Iterator[tuple[int, ...]]: ...
    def b_groups(self, bk: int, bj: int, kk: int, jj: int) -> Iterator[tuple[int, ...]]: ...
    def load_a(
        self, mvin: Callable[[int, int, int, int], None], base: int, bi: int, bk: int, g: tuple[int, ...]
    ) -> None: ...
    def load_b(
        self, mvin: Callable[[int, int, int, int], None], base: int, bk: int, bj: int, g: tuple[int, ...]
    ) -> None: ...
    def c_addr(self, it: Tile, jt: Tile) -> int: ...
    def bias_addr(self, jt: Tile) -> int: ...


_MVIN = ("mvin", "mvin2", "mvin3")


# a prefetched mvin is issued this many reservation-station fulls of execute commands before
# the compute that first reads it: enough for a DMA round trip plus a few block transfers queued
# ahead of it, at DIM cycles per preload/compute pair
PREFETCH_RS_FULLS = 4


class _Stream:
    """The unrolled-stream generator: block loops, buffers, loads (just in time, or prefetched:
    hoisted ahead of the computes before their first use), accumulator slots, init, compute
    pairing and stores, over an op's implicit GEMM."""

    def __init__(
        self,
        out: _Out,
        m: MatmulView | ConvView,
        op: _StreamOp,
        cfg: GemminiConfig,
        relu: int,
        scale_bits: int,
        dataflow: int,
    ) -> None:
        self.out, self.m, self.op, self.d = out, m, op, cfg.dim
        self.relu, self.scale_bits, self.dataflow = relu, scale_bits, dataflow
        self.st_init, self.st_a, self.st_b = (0, 1, 2) if m.ld_states == 3 else (0, 0, 0)
        self.n_blocks = {"i": len(op.i_blocks), "j": len(op.j_blocks), "k": len(op.k_blocks)}
        self.k_split = self.n_blocks["k"] > 1
        blk_i = max(len(b) for b in op.i_blocks)
        blk_j = max(len(b) for b in op.j_blocks)
        # an accumulator slot holds the live region (reduction split over blocks: every output
        # block whose loop runs inside the k loop) or one sub-tile (reduction in one block)
        if self.k_split:
            kpos = m.order.index("k")
            self.region_all_i = m.order.index("i") > kpos
            self.region_all_j = m.order.index("j") > kpos
            self.region_i = op.i_total if self.region_all_i else blk_i
            self.region_j = op.j_total if self.region_all_j else blk_j
        else:
            self.region_i, self.region_j = min(m.acc_i, blk_i), min(m.acc_j, blk_j)
        self.slot_rows = self.region_i * self.region_j * self.d
        live = live_acc_tiles(m.order, m.acc_i, m.acc_j, blk_i, blk_j, op.i_total, op.j_total, self.n_blocks["k"])
        assert self.slot_rows == live * self.d, "slot size disagrees with the acc_fit rule"
        self.a_base = [0, op.a_rows][: m.buffers_a]
        self.b_base = [m.buffers_a * op.a_rows + x for x in (0, op.b_rows)][: m.buffers_b]
        # buffer contents: block key and the load groups already issued into it
        self.a_held: list[tuple[object, set[tuple[int, ...]]]] = [(None, set()) for _ in self.a_base]
        self.b_held: list[tuple[object, set[tuple[int, ...]]]] = [(None, set()) for _ in self.b_base]
        self.a_cur, self.b_cur = len(self.a_base) - 1, len(self.b_base) - 1
        # prefetch: how far back a load may move, and the lowest index it may move to: after
        # every config and earlier load (`floor`) and after the last compute that read the
        # buffer it fills before that buffer was emptied (`a_fresh`, `b_fresh`; `a_read`,
        # `b_read`: the index after the latest compute reading each buffer)
        self.ahead = PREFETCH_RS_FULLS * cfg.rs_ex if m.prefetch else 0
        self.floor = 0
        self.a_fresh = [0] * len(self.a_base)
        self.b_fresh = [0] * len(self.b_base)
        self.a_read = [0] * len(self.a_base)
        self.b_read = [0] * len(self.b_base)
        self.last_w: object = None  # weight tile in the array (WS reuse)
        self.slot = -1
        self.region: object = None
        self.written: set[tuple[int, int]] = set()
        self.row_base = self.row_i0 = self.row_j0 = 0

    # -- configuration and loads
    def configs(self) -> None:
        op, out = self.op, self.out
        _config_ex(out, self.dataflow, op.a_stride)
        _config_st(out, op.c_stride, self.relu, self.scale_bits)
        out.ld.clear()
        self.last_w = None
        if self.m.ld_states == 3:
            out.config_ld(self.st_init, 0, self.d)
            out.config_ld(self.st_a, *op.a_cfg)
            out.config_ld(self.st_b, *op.b_cfg)
        self.floor = len(out.instrs)

    def mvin_a(self, dram: int, row: int, cols: int, rows: int) -> None:
        self._load(self.st_a, self.op.a_cfg, self.a_fresh[self.a_cur], (dram, row, cols, rows))

    def mvin_b(self, dram: int, row: int, cols: int, rows: int) -> None:
        self._load(self.st_b, self.op.b_cfg, self.b_fresh[self.b_cur], (dram, row, cols, rows))

    def mvin_init(self, dram: int, row: int, cols: int, rows: int) -> None:
        self._load(self.st_init, (0, self.d), len(self.out.instrs), (dram, row, cols, rows))

    def _load(self, state: int, cfg: tuple[int, ...], fresh: int, args: tuple[int, ...]) -> None:
        """Emit an mvin, hoisted `ahead` instructions back (prefetch) unless a config_ld
        precedes it, but never above `floor` or above `fresh`, just after the last compute that
        read the buffer's previous contents: the computes it passes read other buffers, or rows
        of this block already loaded, never the rows it writes. Loads keep their program order
        among themselves."""
        out = self.out
        n = len(out.instrs)
        out.config_ld(state, *cfg)
        at = len(out.instrs) if len(out.instrs) > n else max(n - self.ahead, self.floor, fresh)
        out.instrs.insert(at, Instr(_MVIN[state], args))
        self.floor = at + 1
        for f in (self.a_fresh, self.b_fresh, self.a_read, self.b_read):
            for x, v in enumerate(f):
                if v > at:
                    f[x] = v + 1

    @staticmethod
    def _pick(held: list[tuple[object, set[tuple[int, ...]]]], cur: int, key: object, reuse: bool) -> int:
        """The buffer for block `key`: the one holding it (reuse) or the next one, emptied."""
        if reuse:
            for idx, (k, _) in enumerate(held):
                if k == key:
                    return idx
        nxt = (cur + 1) % len(held)
        held[nxt] = (key, set())
        return nxt

    def _new_slot(self, i0: int, j0: int) -> None:
        self.slot = (self.slot + 1) % self.m.acc_buffers
        self.written = set()
        self.row_base, self.row_i0, self.row_j0 = self.slot * self.slot_rows, i0, j0

    def acc_row(self, ii: int, jj: int) -> int:
        return (
            self.row_base + ((self.its[ii][0] - self.row_i0) * self.region_j + (self.jts[jj][0] - self.row_j0)) * self.d
        )

    # -- the kernel
    def run(self) -> None:
        m = self.m
        self.configs()
        for blk in itertools.product(*(range(self.n_blocks[x]) for x in m.order)):
            b = dict(zip(m.order, blk, strict=True))
            if not m.hoist_config and any(blk):
                self.configs()
            self.block(b["i"], b["j"], b["k"])
        self.out.emit("fence")

    def block(self, bi: int, bj: int, bk: int) -> None:
        m, op = self.m, self.op
        self.bi, self.bj, self.bk = bi, bj, bk
        self.a_cur = self._pick(self.a_held, self.a_cur, (bi, bk), m.reuse_a)
        self.b_cur = self._pick(self.b_held, self.b_cur, (bk, bj), m.reuse_b)
        if not self.a_held[self.a_cur][1]:  # emptied for this block: its old contents were last read here
            self.a_fresh[self.a_cur] = self.a_read[self.a_cur]
        if not self.b_held[self.b_cur][1]:
            self.b_fresh[self.b_cur] = self.b_read[self.b_cur]
        self.its, self.jts, self.kts = op.i_blocks[bi], op.j_blocks[bj], op.k_blocks[bk]
        ni, nj = len(self.its), len(self.jts)
        if not self.k_split:
            for si in range(0, ni, m.acc_i):
                for sj in range(0, nj, m.acc_j):
                    ir, jr = range(si, min(si + m.acc_i, ni)), range(sj, min(sj + m.acc_j, nj))
                    self._new_slot(self.its[si][0], self.jts[sj][0])
                    self.init(ir, jr)
                    self.computes(ir, jr)
                    self.store(ir, jr)
            return
        region = (None if self.region_all_i else bi, None if self.region_all_j else bj)
        if region != self.region:
            self.region = region
            self._new_slot(0 if self.region_all_i else self.its[0][0], 0 if self.region_all_j else self.jts[0][0])
        ir, jr = range(ni), range(nj)
        if bk == 0:
            self.init(ir, jr)
        self.computes(ir, jr)
        if bk == self.n_blocks["k"] - 1:
            self.store(ir, jr)

    def init(self, ir: range, jr: range) -> None:
        if self.m.acc_init == "overwrite":
            return
        for ii in ir:
            for jj in jr:
                src = self.op.bias_addr(self.jts[jj]) if self.m.acc_init == "bias" else 0
                self.mvin_init(src, IS_ACC | self.acc_row(ii, jj), self.jts[jj][1], self.its[ii][1])

    def store(self, ir: range, jr: range) -> None:
        d, nb = self.d, self.m.mvout_blocks
        for ii in ir:
            for j0 in range(jr.start, jr.stop, nb):
                j1 = min(j0 + nb, jr.stop)
                cols = (j1 - j0 - 1) * d + self.jts[j1 - 1][1]
                dram = self.op.c_addr(self.its[ii], self.jts[j0])
                self.out.emit("mvout", dram, IS_ACC | self.acc_row(ii, j0), cols, self.its[ii][1])

    def computes(self, ir: range, jr: range) -> None:
        order = self.m.inner_order
        if isinstance(self.m, MatmulView) and self.m.ragged_first:  # the last (ragged) row tile first
            ir = ir[::-1]
        ranges = {"i": ir, "j": jr, "k": range(len(self.kts))}
        pos = (order.index("i"), order.index("j"), order.index("k"))
        for idx in itertools.product(*(ranges[x] for x in order)):
            self.compute(idx[pos[0]], idx[pos[1]], idx[pos[2]])

    def compute(self, ii: int, jj: int, kk: int) -> None:
        self._pair(ii, jj, kk)
        n = len(self.out.instrs)
        self.a_read[self.a_cur] = self.b_read[self.b_cur] = n

    def _pair(self, ii: int, jj: int, kk: int) -> None:
        """Load what the pair reads (unless loaded), then the preload/compute pair."""
        op, out, d = self.op, self.out, self.d
        bi, bj, bk = self.bi, self.bj, self.bk
        abase, a_loaded = self.a_base[self.a_cur], self.a_held[self.a_cur][1]
        bbase, b_loaded = self.b_base[self.b_cur], self.b_held[self.b_cur][1]
        for g in op.a_groups(bi, bk, ii, kk):
            if g not in a_loaded:
                op.load_a(self.mvin_a, abase, bi, bk, g)
                a_loaded.add(g)
        for g in op.b_groups(bk, bj, kk, jj):
            if g not in b_loaded:
                op.load_b(self.mvin_b, bbase, bk, bj, g)
                b_loaded.add(g)
        it, jt, kt = self.its[ii], self.jts[jj], self.kts[kk]
        accumulate = ACCUMULATE
        if (it[0], jt[0]) not in self.written:
            self.written.add((it[0], jt[0]))
            if self.m.acc_init == "overwrite":
                accumulate = 0
        c = IS_ACC | accumulate | self.acc_row(ii, jj)
        a = op.a_addr(abase, bi, bk, ii, kk)
        bw = op.b_addr(bbase, bk, bj, kk, jj)
        if self.dataflow == OS:
            out.emit("preload", GARBAGE, c, d, d, jt[1], it[1])
            out.emit("compute_preloaded", a, bw, kt[1], it[1], jt[1], kt[1])
            return
        wkey = (bk, bj, self.b_cur, kk, jj)
        if self.m.weight_reuse and self.last_w == wkey:
            out.emit("preload", GARBAGE, c, jt[1], kt[1], jt[1], it[1])
            out.emit("compute_accumulated", a, GARBAGE, kt[1], it[1], d, d)
        else:
            out.emit("preload", bw, c, jt[1], kt[1], jt[1], it[1])
            out.emit("compute_preloaded", a, GARBAGE, kt[1], it[1], d, d)
            self.last_w = wkey


class _MatmulOp:
    """Matmul: A tile (i,k) at row (ii*tile_k + kk)*DIM of its block; B tile (k,j) at (kk*tile_j + jj)*DIM."""

    def __init__(self, m: MatmulView, wl: Workload, bufs: MatmulBuffers, cfg: GemminiConfig) -> None:
        d = self.d = cfg.dim
        self.M, self.N, self.K = wl["M"], wl["N"], wl["K"]
        self.bufs, self.m = bufs, m

        def blocks(extent: int, size: int) -> list[list[Tile]]:
            n = cdiv(extent, d)
            return [[(t, min(d, extent - t * d), ()) for t in range(s, min(s + size, n))] for s in range(0, n, size)]

        self.i_blocks = blocks(self.M, m.tile_i)
        self.j_blocks = blocks(self.N, m.tile_j)
        self.k_blocks = blocks(self.K, m.tile_k)
        self.i_total, self.j_total = cdiv(self.M, d), cdiv(self.N, d)
        self.a_rows = m.tile_i * m.tile_k * d
        self.b_rows = m.tile_k * m.tile_j * d
        self.a_cfg = (self.K, d)
        self.b_cfg = (self.N, d)
        self.c_stride = self.N
        self.a_stride = 1

    def a_addr(self, base: int, bi: int, bk: int, ii: int, kk: int) -> int:
        return base + (ii * self.m.tile_k + kk) * self.d

    def b_addr(self, base: int, bk: int, bj: int, kk: int, jj: int) -> int:
        return base + (kk * self.m.tile_j + jj) * self.d

    def a_groups(self, bi: int, bk: int, ii: int, kk: int) -> Iterator[tuple[int, ...]]:
        yield (ii, kk // self.m.mvin_blocks_a)

    def b_groups(self, bk: int, bj: int, kk: int, jj: int) -> Iterator[tuple[int, ...]]:
        yield (kk, jj // self.m.mvin_blocks_b)

    def load_a(
        self, mvin: Callable[[int, int, int, int], None], base: int, bi: int, bk: int, g: tuple[int, ...]
    ) -> None:
        ii, grp = g
        it = self.i_blocks[bi][ii]
        kts = self.k_blocks[bk]
        k0 = grp * self.m.mvin_blocks_a
        k1 = min(k0 + self.m.mvin_blocks_a, len(kts))
        col = kts[k0][0] * self.d
        cols = (k1 - k0 - 1) * self.d + kts[k1 - 1][1]
        mvin(self.bufs.a + it[0] * self.d * self.K + col, self.a_addr(base, bi, bk, ii, k0), cols, it[1])

    def load_b(
        self, mvin: Callable[[int, int, int, int], None], base: int, bk: int, bj: int, g: tuple[int, ...]
    ) -> None:
        kk, grp = g
        kt = self.k_blocks[bk][kk]
        jts = self.j_blocks[bj]
        j0 = grp * self.m.mvin_blocks_b
        j1 = min(j0 + self.m.mvin_blocks_b, len(jts))
        col = jts[j0][0] * self.d
        cols = (j1 - j0 - 1) * self.d + jts[j1 - 1][1]
        mvin(self.bufs.b + kt[0] * self.d * self.N + col, self.b_addr(base, bk, bj, kk, j0), cols, kt[1])

    def c_addr(self, it: Tile, jt: Tile) -> int:
        return self.bufs.c + it[0] * self.d * self.N + jt[0] * self.d

    def bias_addr(self, jt: Tile) -> int:
        return self.bufs.bias + jt[0] * self.d * 4


class _ConvOp:
    """Conv as an implicit GEMM over scratchpad-resident input windows.

    An i block is (tile_b images) × (tile_orows rows) × (tile_ocols cols) of output; its input
    window (halo and padding included) sits in the scratchpad once per DIM-channel chunk:
    row = chunk*TB*IR*IC + (b*IR + wrow)*IC + wcol. Weights of an (och block, ich block):
    row = och_chunk*R*S*TICH + (krow*S + kcol)*TICH + ich, one DIM-wide och chunk per row.
    An i tile is <= DIM consecutive output pixels of one row; a k tile is (krow, kcol, chunk).
    """

    def __init__(self, m: ConvView, wl: Workload, bufs: ConvBuffers, cfg: GemminiConfig) -> None:
        d = self.d = cfg.dim
        self.m, self.bufs = m, bufs
        self.Nb, self.H, self.W, self.C, self.K = (wl[x] for x in ("N", "H", "W", "C", "K"))
        self.R, self.S, self.st, self.pad = wl["R"], wl["S"], wl["stride"], wl["pad"]
        self.oh, self.ow = conv_out_dims(wl)
        self.tb = min(m.tile_b, self.Nb)
        tr, tc = min(m.tile_orows, self.oh), min(m.tile_ocols, self.ow)
        self.ir = (tr - 1) * self.st + self.R
        self.ic = (tc - 1) * self.st + self.S
        self.tich = min(m.tile_ich, self.C)
        self.toch = min(m.tile_och, self.K)
        self.a_chunk = self.tb * self.ir * self.ic  # rows per channel chunk of a window
        self.b_chunk = self.R * self.S * self.tich  # rows per och chunk of a weight block
        self.a_rows = cdiv(self.tich, d) * self.a_chunk
        self.b_rows = cdiv(self.toch, d) * self.b_chunk
        self.a_cfg = (self.C, self.a_chunk)
        self.b_cfg = (self.K, self.b_chunk)
        self.c_stride = self.K
        self.a_stride = self.st
        # i blocks: window origin per block, tiles = pixel groups (key, npix, (b, orow, ocol, bl, orl, ocl))
        self.i_blocks: list[list[Tile]] = []
        self.i_origin: list[tuple[int, int, int, int, int, int]] = []
        key = 0
        for b0 in range(0, self.Nb, self.tb):
            for r0 in range(0, self.oh, tr):
                for c0 in range(0, self.ow, tc):
                    tiles: list[Tile] = []
                    for bl in range(min(self.tb, self.Nb - b0)):
                        for rl in range(min(tr, self.oh - r0)):
                            nc = min(tc, self.ow - c0)
                            for cl in range(0, nc, d):
                                tiles.append((key, min(d, nc - cl), (b0 + bl, r0 + rl, c0 + cl, bl, rl, cl)))
                                key += 1
                    self.i_blocks.append(tiles)
                    self.i_origin.append(
                        (
                            b0,
                            r0 * self.st - self.pad,
                            c0 * self.st - self.pad,
                            min(self.tb, self.Nb - b0),
                            (min(tr, self.oh - r0) - 1) * self.st + self.R,
                            (min(tc, self.ow - c0) - 1) * self.st + self.S,
                        )
                    )
        self.i_total = key
        self.j_blocks: list[list[Tile]] = [
            [(o // d, min(d, self.K - o), ()) for o in range(o0, min(o0 + self.toch, self.K), d)]
            for o0 in range(0, self.K, self.toch)
        ]
        self.j_total = cdiv(self.K, d)
        self.k_blocks: list[list[Tile]] = []
        self.k_origin: list[tuple[int, int]] = []
        for c0 in range(0, self.C, self.tich):
            c1 = min(c0 + self.tich, self.C)
            self.k_blocks.append(
                [
                    ((r * self.S + s) * self.C + c, min(d, c1 - c), (r, s, (c - c0) // d))
                    for r in range(self.R)
                    for s in range(self.S)
                    for c in range(c0, c1, d)
                ]
            )
            self.k_origin.append((c0, c1))

    def a_addr(self, base: int, bi: int, bk: int, ii: int, kk: int) -> int:
        _, _, (_, _, _, bl, rl, cl) = self.i_blocks[bi][ii]
        r, s, ch = self.k_blocks[bk][kk][2]
        return base + ch * self.a_chunk + (bl * self.ir + rl * self.st + r) * self.ic + cl * self.st + s

    def b_addr(self, base: int, bk: int, bj: int, kk: int, jj: int) -> int:
        r, s, ch = self.k_blocks[bk][kk][2]
        return base + jj * self.b_chunk + (r * self.S + s) * self.tich + ch * self.d

    def a_groups(self, bi: int, bk: int, ii: int, kk: int) -> Iterator[tuple[int, ...]]:
        _, npix, (_, _, _, bl, rl, cl) = self.i_blocks[bi][ii]
        r, s, ch = self.k_blocks[bk][kk][2]
        wr = rl * self.st + r
        w0 = cl * self.st + s
        w1 = w0 + (npix - 1) * self.st
        cg = ch // self.m.mvin_blocks_a
        for q in range(w0 // self.d, w1 // self.d + 1):
            yield (bl, wr, q, cg)

    def b_groups(self, bk: int, bj: int, kk: int, jj: int) -> Iterator[tuple[int, ...]]:
        r, s, ch = self.k_blocks[bk][kk][2]
        yield (r, s, ch, jj // self.m.mvin_blocks_b)

    def load_a(
        self, mvin: Callable[[int, int, int, int], None], base: int, bi: int, bk: int, g: tuple[int, ...]
    ) -> None:
        bl, wr, q, cg = g
        b0, h0, w0, _, _, icols = self.i_origin[bi]
        c0, c1 = self.k_origin[bk]
        ch0 = c0 + cg * self.m.mvin_blocks_a * self.d
        nch = min(self.m.mvin_blocks_a * self.d, c1 - ch0)
        row = base + cg * self.m.mvin_blocks_a * self.a_chunk + (bl * self.ir + wr) * self.ic
        h = h0 + wr
        lo, hi = q * self.d, min(q * self.d + self.d, icols)
        if not 0 <= h < self.H:
            mvin(0, row + lo, nch, hi - lo)
            return
        # split the window columns [lo, hi) into left padding, image, right padding
        in_lo = min(max(lo, -w0), hi)
        in_hi = max(min(hi, self.W - w0), in_lo)
        if in_lo > lo:
            mvin(0, row + lo, nch, in_lo - lo)
        if in_hi > in_lo:
            dram = self.bufs.input + (((b0 + bl) * self.H + h) * self.W + w0 + in_lo) * self.C + ch0
            mvin(dram, row + in_lo, nch, in_hi - in_lo)
        if hi > in_hi:
            mvin(0, row + in_hi, nch, hi - in_hi)

    def load_b(
        self, mvin: Callable[[int, int, int, int], None], base: int, bk: int, bj: int, g: tuple[int, ...]
    ) -> None:
        r, s, ch, grp = g
        c0, c1 = self.k_origin[bk]
        cin = c0 + ch * self.d
        jts = self.j_blocks[bj]
        j0 = grp * self.m.mvin_blocks_b
        j1 = min(j0 + self.m.mvin_blocks_b, len(jts))
        cols = (j1 - j0 - 1) * self.d + jts[j1 - 1][1]
        dram = self.bufs.weights + ((r * self.S + s) * self.C + cin) * self.K + jts[j0][0] * self.d
        mvin(dram, base + j0 * self.b_chunk + (r * self.S + s) * self.tich + ch * self.d, cols, min(self.d, c1 - cin))

    def c_addr(self, it: Tile, jt: Tile) -> int:
        b, orow, ocol = it[2][:3]
        return self.bufs.output + ((b * self.oh + orow) * self.ow + ocol) * self.K + jt[0] * self.d

    def bias_addr(self, jt: Tile) -> int:
        return self.bufs.bias + jt[0] * self.d * 4
