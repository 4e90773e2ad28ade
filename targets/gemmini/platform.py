"""What a measured platform ran: its library's kernels as programs (reference A.1).

A timing fit is only as good as the program it simulates. The DOSA artifact (the FireSim
platform of `presets.FIRESIM_F1_LLC`) was built with `ucb-bar/gemmini-rocc-tests` branch
`dosa` (959b23f7), whose `gemmini.h` differs from the `dev` library that Candidate-0
follows (`tiling.py`, `mapping.library_default`, the hw-loop lowering):

* `tiled_matmul_outer` and `tiled_conv` take an explicit tiling and a loop permutation
  (`perm`: a string over NQPKSRC, first letter innermost), which is how DOSA ran its own
  mappings (`gemmini-data-collection/templates/{matmul,conv}_tilings.c`); the library's
  `tiled_*_auto` call them with "CKPQRSN" (matmul: i0, j0, k0 innermost) and "CRSKPQN"
  (conv: b, porow, pocol, poch, krow, kcol, kch innermost).
* no operand pinning: `gemmini_loop_ws` / `gemmini_loop_conv_ws` have no spad-id operands,
  A and B are passed on every call (so the RTL reloads them every loop);
* `HAS_FIRST_LAYER_OPTIMIZATIONS` is undefined (one kernel column per row) and the conv
  downsample path is disabled (`const bool downsample = false;`).

The tiling heuristics of `tiled_matmul_auto` / `tiled_conv_auto` are the same as `dev`'s
(`tiling.matmul_tiling`, `tiling.conv_tiling` without downsampling). Candidate-0 on a preset is
`lower(mapping.library_default(wl, cfg, preset.library))`; these ports are the independent
statement of the dosa library it is checked against (tests/targets/gemmini/test_platform.py),
and the programs `scripts/validate_dosa_tilings.py` simulates for DOSA's explicit tilings.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from zomboss.targets.gemmini.config import GemminiConfig, machine_kb
from zomboss.targets.gemmini.numerics import ONE_F32_BITS, f32_bits
from zomboss.targets.gemmini.presets import DOSA_LIBRARY, Library, Rtl
from zomboss.targets.gemmini.tiling import ConvTiling, MatmulTiling, conv_tiling, matmul_tiling

from zomboss.errors import WorkloadError
from zomboss.expr import cdiv
from zomboss.mapping import KnobMapping
from zomboss.program import Instr

PERM_DIMS = "NQPKSRC"  # gemmini.h (dosa) idx_to_dim: b, porow, pocol, poch, krow, kcol, kch
MATMUL_AUTO_PERM = "CKPQRSN"  # tiled_matmul_auto_inner: k0 innermost, then j0, i0 outermost
CONV_AUTO_PERM = "CRSKPQN"  # tiled_conv_auto_inner


@dataclass(frozen=True)
class MatmulCall:
    """Arguments of one tiled_matmul call (addresses in bytes, strides in elements)."""

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
    act: int = 0
    scale: float = 1.0
    a_scale: float = 1.0
    b_scale: float = 1.0
    d_scale: float = 1.0
    repeating_bias: bool = False
    a_transpose: bool = False
    b_transpose: bool = False
    full_c: bool = False
    low_d: bool = False


@dataclass(frozen=True)
class ConvCall:
    """Arguments of one tiled_conv call (NHWC input, HWIO weights, int32 bias, NHWC output)."""

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


def _check_perm(perm: str) -> None:
    if sorted(perm) != sorted(PERM_DIMS):
        raise WorkloadError(f"loop permutation {perm!r} must name each of {PERM_DIMS} once")


def loop_nest(perm: str, ranges: dict[str, range]) -> Iterator[dict[str, int]]:
    """The tile loops of `perm` (first letter innermost), outermost first, as dim -> value."""
    _check_perm(perm)
    order = perm[::-1]
    for vals in itertools.product(*(ranges.get(d, range(1)) for d in order)):
        yield dict(zip(order, vals, strict=True))


# ------------------------------------------------------------------------------------------
# matmul: tiled_matmul_outer (gemmini-rocc-tests dosa)
# ------------------------------------------------------------------------------------------


def tiled_matmul(
    call: MatmulCall, cfg: GemminiConfig, tile_i: int, tile_j: int, tile_k: int, perm: str = MATMUL_AUTO_PERM
) -> list[Instr]:
    """`tiled_matmul(..., tile_I, tile_J, tile_K, ..., WS, perm, DIM)` of the dosa library, then the
    caller's fence: one loop_ws per (i0, j0, k0) block in `perm` order, A and B passed every time."""
    if call.a_transpose and call.b_transpose:
        raise WorkloadError("tiled_matmul: WS matmul with both A and B transposed is not implemented (gemmini.h)")
    if min(tile_i, tile_j, tile_k) < 1:
        raise WorkloadError(f"tiled_matmul: tile counts must be positive, got {tile_i, tile_j, tile_k}")
    dim = cfg.dim
    ipad, jpad, kpad = (cdiv(x, dim) * dim for x in (call.dim_i, call.dim_j, call.dim_k))
    i0n, j0n, k0n = cdiv(ipad, tile_i * dim), cdiv(jpad, tile_j * dim), cdiv(kpad, tile_k * dim)
    last_i = tile_i if ipad % (tile_i * dim) == 0 else (ipad // dim) % tile_i
    last_j = tile_j if jpad % (tile_j * dim) == 0 else (jpad // dim) % tile_j
    last_k = tile_k if kpad % (tile_k * dim) == 0 else (kpad // dim) % tile_k
    pad_i, pad_j, pad_k = ipad - call.dim_i, jpad - call.dim_j, kpad - call.dim_k
    no_bias = call.d == 0
    d_base = 1 if no_bias else call.d  # a dummy non-NULL D when there is no bias
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
    for v in loop_nest(perm, {"P": range(i0n), "K": range(j0n), "C": range(k0n)}):
        i0, j0, k0 = v["P"], v["K"], v["C"]
        if k0 != 0:
            pre = 0
        else:
            bias_row = 0 if call.repeating_bias else i0 * tile_i * dim
            pre = d_base + (bias_row * call.stride_d + j0 * tile_j * dim) * sizeof_d
        c = call.c + (i0 * tile_i * dim * call.stride_c + j0 * tile_j * dim) * sizeof_c if k0 == k0n - 1 else 0
        ni = tile_i if i0 < i0n - 1 else last_i
        nj = tile_j if j0 < j0n - 1 else last_j
        nk = tile_k if k0 < k0n - 1 else last_k
        pi = pad_i if i0 == i0n - 1 else 0
        pj = pad_j if j0 == j0n - 1 else 0
        pk = pad_k if k0 == k0n - 1 else 0
        if call.a_transpose:
            a = call.a + k0 * tile_k * dim * call.stride_a + i0 * tile_i * dim
        else:
            a = call.a + i0 * tile_i * dim * call.stride_a + k0 * tile_k * dim
        if call.b_transpose:
            b = call.b + j0 * tile_j * dim * call.stride_b + k0 * tile_k * dim
        else:
            b = call.b + k0 * tile_k * dim * call.stride_b + j0 * tile_j * dim
        d = 0 if no_bias else pre
        ex_acc = int((not no_bias) or pre == 0)
        flags = (
            ex_acc,
            int(call.full_c),
            int(call.low_d),
            call.act,
            0,
            0,
            int(call.a_transpose),
            int(call.b_transpose),
        )
        out += [
            Instr("loop_ws_bounds", (ni, nj, nk, pi, pj, pk)),
            Instr("loop_ws_addrs_ab", (a, b)),
            Instr("loop_ws_addrs_dc", (d, c)),
            Instr("loop_ws_strides_ab", (call.stride_a, call.stride_b)),
            Instr("loop_ws_strides_dc", (0 if call.repeating_bias else call.stride_d, call.stride_c)),
            Instr("loop_ws", (*flags, 0)),
        ]
    out.append(Instr("fence", ()))
    return out


def tiled_matmul_auto(call: MatmulCall, cfg: GemminiConfig, tiling: MatmulTiling | None = None) -> list[Instr]:
    """The dosa library's tiled_matmul_auto: dev's tiling heuristic, no operand pinning."""
    t = tiling or matmul_tiling(call.dim_i, call.dim_j, call.dim_k, cfg)
    return tiled_matmul(call, cfg, t.tile_i, t.tile_j, t.tile_k, MATMUL_AUTO_PERM)


# ------------------------------------------------------------------------------------------
# conv: tiled_conv (gemmini-rocc-tests dosa)
# ------------------------------------------------------------------------------------------


def conv_auto_tiling(call: ConvCall, cfg: GemminiConfig, library: Library) -> ConvTiling:
    """tiled_conv_auto's tile under `library` (the dosa revision never downsamples)."""
    return conv_tiling(
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
        downsample=None if library.conv_downsample else False,
    )


def tiled_conv(
    call: ConvCall,
    cfg: GemminiConfig,
    tile: tuple[int, int, int, int, int, int, int],
    perm: str = CONV_AUTO_PERM,
) -> list[Instr]:
    """`tiled_conv(..., batches, porows, pocols, pochs, krows, kcols, kchs, ..., WS, perm)` of the
    dosa library, then the caller's fence. `tile` is (batches, porows, pocols, pochs, krows,
    kcols, kchs) in elements; no pinning, no first-layer pixels, no downsampling, no pooling."""
    if call.pool_stride:
        raise WorkloadError("platform.tiled_conv: pooling is not modelled for this library revision")
    if call.kernel <= call.padding:
        raise WorkloadError(f"tiled_conv: kernel_dim ({call.kernel}) must be larger than padding ({call.padding})")
    if min(tile) < 1:
        raise WorkloadError(f"tiled_conv: tile sizes must be positive, got {tile}")
    batches, porows, pocols, pochs, krows, kcols, kchs = tile
    in_stride, weight_stride, out_stride = call.in_ch, call.out_ch, call.out_ch
    no_bias = call.bias == 0
    bias_base = 1 if no_bias else call.bias
    stride, padding, kdim = call.stride, call.padding, call.kernel
    out_row, out_col = call.out_row, call.out_col
    out = [
        Instr("config_st", (out_stride, call.act, f32_bits(call.scale), 0, 0, 0, 0, 0, 0, 0, 0, 0)),
        Instr("config_ex", (1, 0, 0, 0, stride, 1, 0, 0, 0)),
    ]
    ranges = {
        "N": range(0, call.batch, batches),
        "Q": range(0, out_row, porows),
        "P": range(0, out_col, pocols),
        "K": range(0, call.out_ch, pochs),
        "S": range(0, kdim, krows),
        "R": range(0, kdim, kcols),
        "C": range(0, call.in_ch, kchs),
    }
    for v in loop_nest(perm, ranges):
        b, orow, ocol, poch = v["N"], v["Q"], v["P"], v["K"]
        krow, kcol, kch = v["S"], v["R"], v["C"]
        irow = orow * stride + krow - padding
        icol = ocol * stride + kcol - padding
        last = krow + krows >= kdim and kcol + kcols >= kdim and kch + kchs >= call.in_ch
        o = call.output + ((b * out_row + orow) * out_col + ocol) * out_stride + poch if last else 0
        first = krow == 0 and kcol == 0 and kch == 0
        bias = bias_base + poch * 4 if first else 0
        batches_ = min(batches, call.batch - b)
        porows_ = min(porows, out_row - orow)
        pocols_ = min(pocols, out_col - ocol)
        pochs_ = min(pochs, call.out_ch - poch)
        krows_ = min(krows, kdim - krow)
        kcols_ = min(kcols, kdim - kcol)
        kchs_ = min(kchs, call.in_ch - kch)
        icols_ = pocols_ * stride + kcols_ - 1
        irows_ = porows_ * stride + krows_ - 1
        lpad = -icol if icol < 0 else 0
        rpad = icol + icols_ - call.in_col if icol + icols_ > call.in_col else 0
        upad = -irow if irow < 0 else 0
        dpad = irow + irows_ - call.in_row if irow + irows_ > call.in_row else 0
        w = call.weights + (krow * kdim * call.in_ch + kcol * call.in_ch + kch) * weight_stride + poch
        inp = call.input + ((b * call.in_row + irow + upad) * call.in_col + icol + lpad) * in_stride + kch
        out += [
            Instr(
                "loop_conv_ws_config1",
                (call.batch, call.in_row, call.in_ch, call.out_ch, out_row, out_row, out_col, stride, padding),
            ),
            Instr("loop_conv_ws_config2", (kdim, out_col, 1, 1, 0, batches_, porows_, pocols_, pochs_)),
            Instr("loop_conv_ws_config3", (krows_, kcols_, kchs_, lpad, rpad, upad, dpad, 0, call.in_col)),
            Instr("loop_conv_ws_config4", (porows_, 0, 0, 0, 1, in_stride, weight_stride, out_stride, pocols_)),
            Instr("loop_conv_ws_config5", (w, o)),
            Instr("loop_conv_ws_config6", (bias, inp)),
            Instr("loop_conv_ws", (int(no_bias), 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, call.act)),
        ]
    out.append(Instr("fence", ()))
    return out


def tiled_conv_auto(call: ConvCall, cfg: GemminiConfig, tiling: ConvTiling | None = None) -> list[Instr]:
    """The dosa library's tiled_conv_auto (tiled_conv_auto_inner with print_tile = false)."""
    t = tiling or conv_auto_tiling(call, cfg, DOSA_LIBRARY)
    return tiled_conv(call, cfg, t.args, CONV_AUTO_PERM)


# ------------------------------------------------------------------------------------------
# RTL features
# ------------------------------------------------------------------------------------------


class UnsupportedOnRtl(WorkloadError):
    """A program or mapping using a feature the preset's RTL revision or configuration does not have."""


RTL_COMMANDS = frozenset(("config_ld", "config_ex"))  # CPU-issued commands `check_command` looks at


def _flag(name: str) -> str:
    """The doc parameter that gates an RTL feature, with its line: `name = 0, gemmini.md:LINE`."""
    for prm in machine_kb(()).doc.params:
        if prm.name == name:
            return f"{name} = 0, {Path(prm.loc.file).name}:{prm.loc.line}"
    raise KeyError(name)  # (every flag `kb_params` names is a doc parameter)


def check_loop(rtl: Rtl, op: str, regs: Mapping[str, int], args: tuple[int, ...], line: int = 0) -> None:
    """Refuse a loop_ws / loop_conv_ws the RTL would run differently from what the program means.

    Without spad ids (gemmini-dosa's LoopMatmul.scala and LoopConv.scala decode none) the FSM
    ignores a pinned half; without the DRAM-address-0 skip (gemmini-dosa LoopMatmul.scala:89
    LdA, :197 LdB; LoopConv.scala:344 input, :523 weights issue unconditionally) a loop that
    means "operand already on chip" reloads it from DRAM address 0 onwards; without first-layer
    optimizations (gemmini-dosa LoopConv.scala:1334) the FSM takes one pixel per row whatever
    max_pixels_per_row says."""
    if op == "loop_ws":
        ids, operands = (args[4], args[5]), (("a", regs.get("a", 0)), ("b", regs.get("b", 0)))
    else:
        ids, operands = (args[8], args[9]), (("input", regs.get("input", 0)), ("weights", regs.get("weights", 0)))
        if not rtl.first_layer_opts and args[7] > 1:
            raise UnsupportedOnRtl(
                f"line {line}: loop_conv_ws packs {args[7]} pixels per row (max_pixels_per_row), but {rtl.name} has no "
                f"first-layer optimizations ({_flag('first_layer_opts')}): its LoopConv takes one pixel per row"
            )
    if not rtl.loop_spad_ids and any(ids):
        raise UnsupportedOnRtl(
            f"line {line}: {op} pins a scratchpad half (a_spad_id, b_spad_id = {ids}), but {rtl.name} has no "
            "spad ids: its loop FSM would place the operands in the loop's own half"
        )
    if not rtl.skip_zero_loads:
        for name, addr in operands:
            if addr == 0:
                raise UnsupportedOnRtl(
                    f"line {line}: {op} passes {name} = 0 (reuse the block on chip), but {rtl.name} loads it "
                    "unconditionally, from DRAM address 0 onwards"
                )


def check_command(rtl: Rtl, ins: Instr) -> None:
    """Refuse a CPU-issued config_ld / config_ex (`RTL_COMMANDS`) selecting a feature the RTL's
    configuration does not build: pixel repeats without first-layer optimizations (the load
    controller forces them to 1 and asserts none is asked for, LoadController.scala:175-176 and
    :190 in both revisions) and the OS dataflow on a WS-only array (its execute controller
    hard-wires WS, ExecuteController.scala:77)."""
    if ins.op == "config_ld" and not rtl.first_layer_opts and ins.args[4] > 1:
        raise UnsupportedOnRtl(
            f"line {ins.line}: config_ld asks for {ins.args[4]} pixel repeats, but {rtl.name} has no first-layer "
            f"optimizations ({_flag('first_layer_opts')}): its load controller writes each row once"
        )
    if ins.op == "config_ex" and not rtl.os_dataflow and ins.args[0] == 0 and not ins.args[8]:
        raise UnsupportedOnRtl(
            f"line {ins.line}: config_ex selects the OS dataflow, but {rtl.name} is built weight-stationary only "
            f"({_flag('os_dataflow')}): its execute controller runs the program as WS"
        )


def check_mapping(m: KnobMapping, rtl: Rtl) -> None:
    """A mapping that lowers to a program the RTL cannot run as meant: pinned halves under hw
    loops, first-layer pixel packing, the OS dataflow.

    The doc says the same as mapping constraints (gemmini.md §11 `map.hw_spad_ids`,
    `map.first_layer_rtl`, `map.os_rtl`, gated by the parameters of `Rtl.kb_params`), so the KB
    refuses such a mapping when its parameters describe this RTL; this check is the simulator
    side's refusal when a KB with the features is run on a preset whose RTL lacks them."""
    if m.sym("loop") == "hw" and not rtl.loop_spad_ids and (m.flag("reuse_a") or m.flag("reuse_b")):
        raise UnsupportedOnRtl(
            f"{m.op} mapping: loop = hw with reuse_a/reuse_b pins scratchpad halves (spad ids), which "
            f"{rtl.name} does not have; use reuse_a = reuse_b = false or loop = sw"
        )
    if m.op == "conv" and not rtl.first_layer_opts and m.flag("first_layer"):
        raise UnsupportedOnRtl(
            f"conv mapping: first_layer = true packs kernel columns with pixel repeats, which {rtl.name} does not "
            f"have ({_flag('first_layer_opts')}, map.first_layer_rtl); use first_layer = false"
        )
    if m.op == "matmul" and not rtl.os_dataflow and m.sym("dataflow") == "os":
        raise UnsupportedOnRtl(
            f"matmul mapping: dataflow = os, but {rtl.name} is built weight-stationary only "
            f"({_flag('os_dataflow')}, map.os_rtl); use dataflow = ws"
        )


def matmul_order(perm: str) -> str:
    """The mapping's outer block order (outermost first over i, j, k) of a matmul permutation:
    P is the i0 loop, K the j0 loop and C the k0 loop of tiled_matmul_outer."""
    _check_perm(perm)
    return "".join({"P": "i", "K": "j", "C": "k"}[d] for d in reversed(perm) if d in "PKC")
