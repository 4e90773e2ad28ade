"""Mapping-level legality: does a mapping fit a workload on a Gemmini configuration?

Every rule lives in `mapping_violations` (one function, so the constraints can later be
sourced from the KB's `mapping` blocks without hunting through the lowering). Knob ranges
that do not depend on the workload are checked by the mapping constructor instead. The
lowering refuses any mapping with a violation, and a mapping without violations always
lowers to a program the simulator accepts (tests/targets/gemmini/test_lowering.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.mapping import ConvMapping, GemminiMapping, MatmulMapping
from zomboss.targets.gemmini.suite import conv_out_dims

from zomboss.errors import ZombossError
from zomboss.workload import Workload


@dataclass(frozen=True)
class MappingViolation:
    rule: str
    message: str
    values: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        vals = ", ".join(f"{k}={v}" for k, v in self.values.items())
        return f"{self.rule}: {self.message}" + (f" ({vals})" if vals else "")


class IllegalMapping(ZombossError):
    """A mapping that breaks a mapping rule for this workload; carries the violations."""

    exit_code = 1

    def __init__(self, violations: list[MappingViolation]) -> None:
        self.violations = violations
        super().__init__("illegal mapping:\n  " + "\n  ".join(str(v) for v in violations))


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------- geometry shared with lowering


@dataclass(frozen=True)
class MatmulGeom:
    """Tile counts of a matmul: padded tiles per dimension and blocks per dimension."""

    tiles: dict[str, int]  # i, j, k -> DIM tiles after padding
    blocks: dict[str, int]  # i, j, k -> number of blocks
    tile: dict[str, int]  # i, j, k -> block size in tiles


def matmul_geom(m: MatmulMapping, wl: Workload, dim: int) -> MatmulGeom:
    tiles = {"i": cdiv(wl["M"], dim), "j": cdiv(wl["N"], dim), "k": cdiv(wl["K"], dim)}
    tile = {"i": m.tile_i, "j": m.tile_j, "k": m.tile_k}
    blocks = {d: cdiv(tiles[d], tile[d]) for d in "ijk"}
    return MatmulGeom(tiles, blocks, tile)


@dataclass(frozen=True)
class ConvGeom:
    """Output size, and the per-block tile counts of the implicit GEMM the stream lowering uses."""

    oh: int
    ow: int
    irows: int  # input window rows of a full block (halo included)
    icols: int
    ich_chunks: int  # DIM-channel chunks of an input-channel block
    och_chunks: int
    i_tiles: int  # pixel groups (<= DIM pixels of one output row) per full block
    k_tiles: int  # (krow, kcol, channel chunk) reduction tiles per block
    blocks: dict[str, int]  # i, j, k -> number of blocks
    i_extent: int  # pixel groups over the whole output


def conv_geom(m: ConvMapping, wl: Workload, dim: int) -> ConvGeom:
    oh, ow = conv_out_dims(wl)
    st = wl["stride"]
    tb, tr, tc = min(m.tile_b, wl["N"]), min(m.tile_orows, oh), min(m.tile_ocols, ow)
    irows = (tr - 1) * st + wl["R"]
    icols = (tc - 1) * st + wl["S"]
    ich_chunks = cdiv(min(m.tile_ich, wl["C"]), dim)
    och_chunks = cdiv(min(m.tile_och, wl["K"]), dim)
    i_tiles = tb * tr * cdiv(tc, dim)
    blocks = {
        "i": cdiv(wl["N"], tb) * cdiv(oh, tr) * cdiv(ow, tc),
        "j": cdiv(wl["K"], m.tile_och),
        "k": cdiv(wl["C"], m.tile_ich),
    }
    groups_per_row = (ow // tc) * cdiv(tc, dim) + cdiv(ow % tc, dim)
    i_extent = wl["N"] * oh * groups_per_row
    return ConvGeom(
        oh, ow, irows, icols, ich_chunks, och_chunks, i_tiles, wl["R"] * wl["S"] * ich_chunks, blocks, i_extent
    )


def conv_downsamples(wl: Workload) -> bool:
    """tiled_conv's downsample path: 1x1 stride-2 unpadded convs of even-sized inputs read every
    other input row and column straight from DRAM."""
    return (
        wl["stride"] == 2 and wl["R"] == 1 and wl["S"] == 1 and wl["pad"] == 0 and wl["H"] % 2 == 0 and wl["W"] % 2 == 0
    )


def conv_hw_footprint(m: ConvMapping, wl: Workload, dim: int) -> tuple[int, int]:
    """Scratchpad and accumulator rows of one loop_conv_ws tile, as the library computes
    them (`tiled_conv_total_spad_rows`, reference §6.2; no pooling, no dilation)."""
    st = wl["stride"]
    ds = int(conv_downsamples(wl))
    irows = m.tile_orows * st + m.tile_krows - 1
    icols = m.tile_ocols * st + m.tile_kcols - 1
    a = cdiv(m.tile_ich, dim) * m.tile_b * (irows >> ds) * (icols >> ds)
    b = cdiv(m.tile_och, dim) * m.tile_kcols * m.tile_krows * m.tile_ich
    c = cdiv(m.tile_och, dim) * m.tile_b * m.tile_orows * m.tile_ocols
    return a + b, c


def live_acc_tiles(
    order: str, sub_i: int, sub_j: int, block_i: int, block_j: int, all_i: int, all_j: int, k_blocks: int
) -> int:
    """Accumulator tiles that must hold partial sums at once.

    With one reduction block, outputs complete inside a block, so only the sub-tile is live.
    Otherwise every output block whose loop runs inside the reduction loop stays live."""
    if k_blocks == 1:
        return min(sub_i, block_i) * min(sub_j, block_j)
    kpos = order.index("k")
    li = all_i if order.index("i") > kpos else block_i
    lj = all_j if order.index("j") > kpos else block_j
    return li * lj


# ---------------------------------------------------------------- the rules


def mapping_violations(m: GemminiMapping, wl: Workload, lim: GemminiConfig) -> list[MappingViolation]:
    """Every mapping rule that `m` breaks for `wl` on a configuration with limits `lim`."""
    out: list[MappingViolation] = []

    def need(ok: bool, rule: str, message: str, **values: Any) -> None:
        if not ok:
            out.append(MappingViolation(rule, message, values))

    if isinstance(m, MatmulMapping) != (wl.op == "matmul") or isinstance(m, ConvMapping) != (wl.op == "conv"):
        return [MappingViolation("map.op", f"a {m.op} mapping cannot map a {wl.op} workload")]
    d = lim.dim
    has_bias = bool(wl["bias"])

    # shared stream rules
    if m.loop == "sw":
        need(
            not m.weight_reuse or m.inner_order[-1] == "i",
            "map.weight_reuse_order",
            "weight reuse needs i innermost in inner_order",
            inner_order=m.inner_order,
        )
        need(
            m.mvin_blocks_a <= lim.max_block_len
            and m.mvin_blocks_b <= lim.max_block_len
            and m.mvout_blocks <= lim.max_block_len,
            "map.block_len",
            "block mvins/mvouts move at most max_block_len DIM-column blocks",
            mvin_blocks_a=m.mvin_blocks_a,
            mvin_blocks_b=m.mvin_blocks_b,
            mvout_blocks=m.mvout_blocks,
            max_block_len=lim.max_block_len,
        )
        if has_bias:
            need(
                m.acc_init == "bias",
                "map.acc_init_bias",
                "a workload with bias must init the accumulator by loading the bias",
                acc_init=m.acc_init,
            )
        else:
            need(
                m.acc_init != "bias",
                "map.acc_init_bias",
                "acc_init=bias needs a workload with bias",
                acc_init=m.acc_init,
            )

    if isinstance(m, MatmulMapping):
        g = matmul_geom(m, wl, d)
        ti, tj, tk = m.tile_i, m.tile_j, m.tile_k
        for dd, t in (("i", ti), ("j", tj), ("k", tk)):
            need(
                t <= g.tiles[dd],
                f"map.tile_{dd}_range",
                f"tile_{dd} exceeds the {dd} tiles of the workload",
                **{f"tile_{dd}": t, f"{dd}_tiles": g.tiles[dd]},
            )
        if m.dataflow == "os":
            need(m.loop == "sw", "map.os_sw", "output-stationary needs the unrolled stream (loop_ws is WS only)")
            need(not m.weight_reuse, "map.os_weight_reuse", "weight reuse is a weight-stationary feature")
        if m.loop == "hw":
            need(
                (ti * tk + tk * tj) * d <= lim.sp_rows // 2,
                "map.hw_spad_fit",
                "loop_ws A and B tiles must fit half the scratchpad",
                rows=(ti * tk + tk * tj) * d,
                half=lim.sp_rows // 2,
            )
            need(
                ti * tj * d <= lim.acc_rows // 2,
                "map.hw_acc_fit",
                "loop_ws C tiles must fit half the accumulator",
                rows=ti * tj * d,
                half=lim.acc_rows // 2,
            )
            need(
                g.blocks["k"] == 1 or m.order[-1] == "k",
                "map.hw_k_innermost",
                "with a split reduction, partial sums survive between loop_ws calls only when k is innermost",
                order=m.order,
                k_blocks=g.blocks["k"],
            )
            need(
                not m.reuse_a or g.blocks["i"] * g.blocks["k"] <= 2,
                "map.hw_reuse_a",
                "loop_ws can pin at most two A blocks (a_spad_id 1/2)",
                a_blocks=g.blocks["i"] * g.blocks["k"],
            )
            need(
                not m.reuse_b or g.blocks["j"] * g.blocks["k"] <= 2,
                "map.hw_reuse_b",
                "loop_ws can pin at most two B blocks (b_spad_id 1/2)",
                b_blocks=g.blocks["j"] * g.blocks["k"],
            )
            need(
                m.acc_init == ("bias" if has_bias else "overwrite"),
                "map.hw_acc_init",
                "loop_ws initialises the accumulator by bias load (with bias) or overwrite (without)",
                acc_init=m.acc_init,
            )
        else:
            spad = (m.buffers_a * ti * tk + m.buffers_b * tk * tj) * d
            need(
                spad <= lim.sp_rows,
                "map.spad_fit",
                "A and B blocks (times their buffers) must fit the scratchpad",
                rows=spad,
                sp_rows=lim.sp_rows,
            )
            live = live_acc_tiles(m.order, m.acc_i, m.acc_j, ti, tj, g.tiles["i"], g.tiles["j"], g.blocks["k"])
            need(
                live * d * m.acc_buffers <= lim.acc_rows,
                "map.acc_fit",
                "live accumulator tiles (times acc_buffers) must fit the accumulator",
                rows=live * d * m.acc_buffers,
                acc_rows=lim.acc_rows,
            )
        return out

    # convolution
    assert isinstance(m, ConvMapping)
    oh, ow = conv_out_dims(wl)
    ext = {
        "tile_b": wl["N"],
        "tile_orows": oh,
        "tile_ocols": ow,
        "tile_och": wl["K"],
        "tile_ich": wl["C"],
        "tile_krows": wl["R"],
        "tile_kcols": wl["S"],
    }
    for name, e in ext.items():
        need(
            getattr(m, name) <= e,
            f"map.{name}_range",
            f"{name} exceeds the workload",
            **{name: getattr(m, name), "extent": e},
        )
    if m.loop == "hw":
        spad, acc = conv_hw_footprint(m, wl, d)
        need(
            spad <= lim.sp_rows // 2,
            "map.hw_spad_fit",
            "a loop_conv_ws tile must fit half the scratchpad",
            rows=spad,
            half=lim.sp_rows // 2,
        )
        need(
            acc <= lim.acc_rows // 2,
            "map.hw_acc_fit",
            "a loop_conv_ws tile must fit half the accumulator",
            rows=acc,
            half=lim.acc_rows // 2,
        )
        need(
            m.acc_init == ("bias" if has_bias else "zero"),
            "map.hw_acc_init",
            "loop_conv_ws initialises the accumulator by bias load (with bias) or zero mvins (without)",
            acc_init=m.acc_init,
        )
        n = {name: cdiv(e, getattr(m, name)) for name, e in ext.items()}
        a_blocks = n["tile_b"] * n["tile_orows"] * n["tile_ocols"] * n["tile_krows"] * n["tile_kcols"] * n["tile_ich"]
        b_blocks = n["tile_och"] * n["tile_krows"] * n["tile_kcols"] * n["tile_ich"]
        need(
            not m.reuse_a or a_blocks <= 2,
            "map.hw_reuse_a",
            "loop_conv_ws can pin at most two input blocks",
            a_blocks=a_blocks,
        )
        need(
            not m.reuse_b or b_blocks <= 2,
            "map.hw_reuse_b",
            "loop_conv_ws can pin at most two weight blocks",
            b_blocks=b_blocks,
        )
        need(
            wl["R"] == wl["S"],
            "map.hw_conv_square",
            "loop_conv_ws takes one kernel_dim (square kernels)",
            R=wl["R"],
            S=wl["S"],
        )
        return out
    need(
        m.tile_krows == wl["R"] and m.tile_kcols == wl["S"],
        "map.conv_sw_kernel",
        "the unrolled conv stream keeps the whole kernel window in a block",
        tile_krows=m.tile_krows,
        tile_kcols=m.tile_kcols,
        R=wl["R"],
        S=wl["S"],
    )
    for name, full in (("tile_ich", wl["C"]), ("tile_och", wl["K"])):
        v = getattr(m, name)
        need(
            v % d == 0 or v == full,
            f"map.{name}_chunks",
            f"{name} must be a multiple of DIM or the whole dimension",
            **{name: v, "full": full},
        )
    g2 = conv_geom(m, wl, d)
    a_rows = g2.ich_chunks * min(m.tile_b, wl["N"]) * g2.irows * g2.icols
    b_rows = g2.och_chunks * wl["R"] * wl["S"] * min(m.tile_ich, wl["C"])
    spad = m.buffers_a * a_rows + m.buffers_b * b_rows
    need(
        spad <= lim.sp_rows,
        "map.spad_fit",
        "input window and weight blocks (times their buffers) must fit the scratchpad",
        rows=spad,
        sp_rows=lim.sp_rows,
    )
    live = live_acc_tiles(
        m.order, m.acc_i, m.acc_j, g2.i_tiles, g2.och_chunks, g2.i_extent, cdiv(wl["K"], d), g2.blocks["k"]
    )
    need(
        live * d * m.acc_buffers <= lim.acc_rows,
        "map.acc_fit",
        "live accumulator tiles (times acc_buffers) must fit the accumulator",
        rows=live * d * m.acc_buffers,
        acc_rows=lim.acc_rows,
    )
    return out


def check_mapping(m: GemminiMapping, wl: Workload, lim: GemminiConfig) -> None:
    """Raise IllegalMapping listing every violated rule."""
    v = mapping_violations(m, wl, lim)
    if v:
        raise IllegalMapping(v)
