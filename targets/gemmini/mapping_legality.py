"""Mapping-level legality: does a mapping fit a workload on a Gemmini configuration?

The rules are written once, as the `mapping` constraints of gemmini.md §11, and evaluated
here through the KB (`mapping_violations`); this module adds the geometry the lowering
shares. Knob ranges that do not depend on the workload are checked by the mapping
constructor too. The
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
from zomboss.knowledge import load_kb
from zomboss.legality import flat_mapping
from zomboss.legality import mapping_violations as kb_mapping_violations
from zomboss.target import doc_path
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
    """Every mapping rule that `m` breaks for `wl` on a configuration with limits `lim`.

    The rules are the `mapping` constraints of gemmini.md §11, the same ones `zomboss kb
    check` and the solvers read; `lim`'s sizes stand in for the doc's parameters."""
    if isinstance(m, MatmulMapping) != (wl.op == "matmul") or isinstance(m, ConvMapping) != (wl.op == "conv"):
        return [MappingViolation("map.op", f"a {m.op} mapping cannot map a {wl.op} workload")]
    kb = load_kb(doc_path("gemmini"))
    params = {
        **kb.params,
        "dim": lim.dim,
        "sp_rows": lim.sp_rows,
        "acc_rows": lim.acc_rows,
        "half_sp_rows": lim.sp_rows // 2,
        "half_acc_rows": lim.acc_rows // 2,
        "max_block_len": lim.max_block_len,
    }
    knobs = {k: v for k, v in m.to_json().items() if k != "op"}
    found = kb_mapping_violations(kb, wl.op, flat_mapping(knobs, wl.shape), params)
    return [MappingViolation(v.rule, v.message, dict(v.values)) for v in found]


def check_mapping(m: GemminiMapping, wl: Workload, lim: GemminiConfig) -> None:
    """Raise IllegalMapping listing every violated rule."""
    v = mapping_violations(m, wl, lim)
    if v:
        raise IllegalMapping(v)
