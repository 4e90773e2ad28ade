"""Gemmini mappings: the lowering's typed view of a core mapping, and the named reference points.

A mapping is a `zomboss.mapping.KnobMapping` of the doc's mapping space (gemmini.md §11, the only
declaration of knobs, domains, canonical values and constraints). `view` turns one into the
frozen record the lowering reads (`MatmulView` / `ConvView`: the same knob names, booleans as
Python bools); it declares nothing, and the record is built here and nowhere else.

The reference points are Candidate-0, `library_default` (what `tiled_matmul_auto` /
`tiled_conv_auto` of the default preset's library revision choose: the library's tilings from
`tiling.py`, hardware loops, i→j→k block order; the dev revision also pins an operand when at
most two of its blocks exist, packs first-layer pixels and downsamples), and `exo_style`,
the Exo schedules of reference §8.1 generalised to any shape. Both are built through the
space (`Space.mapping`), so they are canonical and checked against the doc's domains.

Matmul tiles are in DIM blocks (`tile_i = 5` means 80 rows); conv channel tiles are in
elements because the library's conv tiling picks non-multiples of DIM (144, 240).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.presets import Library, get_preset
from zomboss.targets.gemmini.suite import conv_out_dims
from zomboss.targets.gemmini.tiling import conv_tiling, matmul_tiling

from zomboss.errors import WorkloadError
from zomboss.mapping import KnobMapping, MappingError, space
from zomboss.workload import Workload

# ---------------------------------------------------------------------------- the typed view


@dataclass(frozen=True)
class _View:
    """The stream knobs both op families share, typed (see gemmini.md §11 for their meaning)."""

    mapping: KnobMapping  # the core mapping this view reads
    loop: str
    order: str
    reuse_a: bool
    reuse_b: bool
    buffers_a: int
    buffers_b: int
    acc_i: int
    acc_j: int
    acc_buffers: int
    inner_order: str
    weight_reuse: bool
    mvin_blocks_a: int
    mvin_blocks_b: int
    mvout_blocks: int
    acc_init: str
    hoist_config: bool
    ld_states: int
    prefetch: bool


@dataclass(frozen=True)
class MatmulView(_View):
    tile_i: int
    tile_j: int
    tile_k: int
    dataflow: str
    ragged_first: bool


@dataclass(frozen=True)
class ConvView(_View):
    tile_b: int
    tile_orows: int
    tile_ocols: int
    tile_och: int
    tile_ich: int
    tile_krows: int
    tile_kcols: int
    downsample: bool
    first_layer: bool


View = MatmulView | ConvView
_VIEWS: dict[str, type[MatmulView] | type[ConvView]] = {"matmul": MatmulView, "conv": ConvView}


def view(m: KnobMapping) -> View:
    """The lowering's record of a core mapping (`{false, true}` knobs become bools)."""
    cls = _VIEWS.get(m.op)
    if cls is None:
        raise MappingError(f"Gemmini lowers matmul and conv mappings, not {m.op!r}")
    kw: dict[str, Any] = {"mapping": m}
    for f in fields(cls):
        if f.name != "mapping":
            kw[f.name] = m.flag(f.name) if f.type == "bool" else m[f.name]
    return cls(**kw)


# ---------------------------------------------------------------------------- reference mappings


def _build(cfg: GemminiConfig, wl: Workload, values: Mapping[str, object]) -> KnobMapping:
    return space(cfg.kb(), wl.op).mapping(values, wl.shape, f"{wl.id} mapping")


def library_default(wl: Workload, cfg: GemminiConfig, library: Library | None = None) -> KnobMapping:
    """Candidate-0: the mapping of `tiled_matmul_auto` / `tiled_conv_auto` of a library revision
    for `wl` (None: the library of the platform `cfg` describes, `GemminiConfig.preset`).

    The revisions differ in what the mapping says beyond the tiles: the dev library pins an
    operand whose blocks number at most two (`reuse_a` / `reuse_b`), packs kernel columns for
    convs with few input channels (`first_layer`) and downsamples 1x1 stride-2 convs
    (`downsample`, which also sizes its tiles); the dosa library does none of these
    (`presets.Library`)."""
    lib = library if library is not None else get_preset(cfg.preset).library
    if wl.op == "matmul":
        t = matmul_tiling(wl["M"], wl["N"], wl["K"], cfg)
        return _build(
            cfg,
            wl,
            {
                "loop": "hw",
                "tile_i": t.tile_i,
                "tile_j": t.tile_j,
                "tile_k": t.tile_k,
                "order": "ijk",
                "reuse_a": lib.spad_reuse and t.a_reuse,
                "reuse_b": lib.spad_reuse and t.b_reuse,
                "acc_init": "bias" if wl["bias"] else "overwrite",
            },
        )
    if wl.op != "conv":
        raise WorkloadError(f"{wl.id}: Gemmini has no library kernel for op {wl.op!r} (ops: matmul, conv)")
    if wl["R"] != wl["S"]:
        raise WorkloadError(f"{wl.id}: tiled_conv_auto needs a square kernel (R={wl['R']}, S={wl['S']})")
    oh, ow = conv_out_dims(wl)
    c = conv_tiling(
        wl["N"], wl["H"], wl["W"], wl["C"], wl["K"], oh, ow, wl["stride"], wl["pad"], wl["R"], cfg,
        downsample=None if lib.conv_downsample else False,
    )  # fmt: skip
    n = {
        "b": -(-wl["N"] // c.batches),
        "r": -(-oh // c.porows),
        "c": -(-ow // c.pocols),
        "o": -(-wl["K"] // c.pochs),
        "kr": -(-wl["R"] // c.krows),
        "kc": -(-wl["S"] // c.kcols),
        "ch": -(-wl["C"] // c.kchs),
    }
    return _build(
        cfg,
        wl,
        {
            "loop": "hw",
            "tile_b": c.batches,
            "tile_orows": c.porows,
            "tile_ocols": c.pocols,
            "tile_och": c.pochs,
            "tile_ich": c.kchs,
            "tile_krows": c.krows,
            "tile_kcols": c.kcols,
            "reuse_a": lib.spad_reuse and n["ch"] * n["kr"] * n["kc"] * n["b"] * n["r"] * n["c"] <= 2,
            "reuse_b": lib.spad_reuse and n["ch"] * n["o"] * n["kr"] * n["kc"] <= 2,
            "acc_init": "bias" if wl["bias"] else "zero",
            # inactive (canonical false) wherever the doc's conditions say the path does not apply
            "downsample": lib.conv_downsample,
            "first_layer": lib.first_layer and c.kcols > 1,
        },
    )


def block_loads(order: str, blocks: Mapping[str, int], dims: str, reuse: bool, buffers: int) -> int:
    """How many times an operand block indexed by `dims` (e.g. "ik" for A) is loaded when the
    block loops run in `order`, keeping up to `buffers` blocks when `reuse` is on (the
    lowering's buffer policy: a block still held in a buffer is not loaded again, the oldest
    is replaced).

    Closed form, so that a 20000-cube shape costs nothing: below the loop `x` that does not
    index the operand, the loops inside it sweep the same L distinct blocks once per x; a
    FIFO of `buffers` >= L keeps them all after the first sweep, and a smaller one misses on
    every access of a cyclic sweep. (tests/targets/gemmini/test_mapping.py replays it.)"""
    sizes = [blocks[d] for d in order]
    if not reuse:
        return math.prod(sizes)
    (pos,) = (n for n, d in enumerate(order) if d not in dims)
    outer, sweep = math.prod(sizes[:pos]), math.prod(sizes[pos + 1 :])
    return outer * sweep * (1 if sweep <= buffers else sizes[pos])


def _best_order(
    orders: tuple[str, ...], blocks: Mapping[str, int], a_bytes: int, b_bytes: int, buffers_a: int, buffers_b: int
) -> str:
    """The outer order moving the fewest operand bytes (ties keep the first, "ijk")."""

    def traffic(order: str) -> int:
        return a_bytes * block_loads(order, blocks, "ik", True, buffers_a) + b_bytes * block_loads(
            order, blocks, "kj", True, buffers_b
        )

    return min(orders, key=traffic)


def _resident_tiles(ip: int, jp: int, kp: int, cap: int) -> tuple[int, int, str]:
    """(tile_i, tile_j, order) with whole-K panels of A and B sharing `cap` scratchpad tiles,
    single-buffered, minimising DRAM traffic in tiles (then the number of blocks).

    With the reduction in one block, "ijk" loads each A panel once and B panels once per i
    block (once in all when one j block covers B); "jik" is the mirror image."""
    best: tuple[tuple[int, int], int, int, str] | None = None
    for ti in range(1, min(ip, cap // kp - 1) + 1):
        tj = min(jp, (cap - ti * kp) // kp)
        n_i, n_j = -(-ip // ti), -(-jp // tj)
        a, b = ip * kp, jp * kp
        for order, traffic in (("ijk", a + (b if n_j == 1 else n_i * b)), ("jik", b + (a if n_i == 1 else n_j * a))):
            score = (traffic, n_i * n_j)
            if best is None or score < best[0]:
                best = (score, ti, tj, order)
    assert best is not None
    return best[1], best[2], best[3]


def exo_style(wl: Workload, cfg: GemminiConfig) -> KnobMapping:
    """The Exo schedules of reference §8.1 generalised to any shape: configs hoisted with one
    mvin state per role, unrolled streams, block mvins as wide as the DMA allows, zero-mvin
    (or bias) accumulator init, large resident tiles that share the whole scratchpad, and one
    mvout per 16×16 output tile from 4-tile accumulator slots. Widths beyond the block they
    move are written as the block (the doc's `map.block_len_fit`; the stream is the same)."""
    d, mbl = cfg.dim, cfg.max_block_len
    cap = cfg.sp_rows // d  # scratchpad capacity in DIM-row tiles
    orders = space(cfg.kb(), wl.op).knob("order").values
    common: dict[str, Any] = dict(
        loop="sw",
        reuse_a=True,
        reuse_b=True,
        acc_buffers=4,
        inner_order="ikj",
        weight_reuse=False,
        mvout_blocks=1,
        acc_init="bias" if wl["bias"] else "zero",
        hoist_config=True,
        ld_states=3,
        prefetch=False,  # Exo's schedules load each tile just before its first use
    )
    if wl.op == "matmul":
        ip, jp, kp = -(-wl["M"] // d), -(-wl["N"] // d), -(-wl["K"] // d)
        if 2 * kp <= cap:  # the whole reduction in one block: outputs stream through 4-tile slots
            tk = kp
            ti, tj, order = _resident_tiles(ip, jp, kp, cap)
            acc = dict(acc_i=1, acc_j=min(4, tj))
        else:  # split reduction: the output block stays live in the accumulator across k blocks
            ti, tj = min(ip, 4), min(jp, 8)
            tk = min(kp, cap // (ti + tj))
            acc = dict(acc_i=1, acc_j=1, acc_buffers=1)
            blocks = {"i": -(-ip // ti), "j": -(-jp // tj), "k": -(-kp // tk)}
            order = _best_order(orders, blocks, ti * tk, tk * tj, 1, 1)
        return _build(
            cfg,
            wl,
            {
                **common,
                **acc,
                "tile_i": ti,
                "tile_j": tj,
                "tile_k": tk,
                "dataflow": "ws",
                "order": order,
                "buffers_a": 1,
                "buffers_b": 1,
                "mvin_blocks_a": min(mbl, tk),
                "mvin_blocks_b": min(mbl, tj),
            },
        )
    # convolution: weights of an (och block, all input channels) resident, one input window
    # per block of whole output rows, double-buffered so the next window loads under compute
    oh, ow = conv_out_dims(wl)
    R, S, C, K, st = wl["R"], wl["S"], wl["C"], wl["K"], wl["stride"]  # noqa: N806 - the conv's names
    tich = C
    toch = -(-K // d) * d
    while toch > d and -(-toch // d) * R * S * tich > cap * d // 2:
        toch = -(-toch // 2 // d) * d
    while -(-toch // d) * R * S * tich > cap * d // 2 and tich > d:
        tich = -(-tich // 2 // d) * d
    toch, b_rows = min(toch, K), -(-min(toch, K) // d) * R * S * tich
    chunks = -(-tich // d)
    tc = ow
    icols = (tc - 1) * st + S
    room = (cfg.sp_rows - b_rows) // 2  # two input windows
    tr = max(1, min(oh, ((room // (chunks * icols)) - R) // st + 1))
    while chunks * ((tr - 1) * st + R) * ((tc - 1) * st + S) > room and tc > d:
        tc -= d
    blocks = {"i": wl["N"] * -(-oh // tr) * -(-ow // tc), "j": -(-K // toch), "k": -(-C // tich)}
    a_bytes = chunks * ((tr - 1) * st + R) * ((tc - 1) * st + S) * d
    order = _best_order(orders, blocks, a_bytes, b_rows * d, 2, 1)
    och_chunks = -(-toch // d)
    split = blocks["k"] > 1  # (a split reduction keeps whole blocks live: no sub-tiles)
    return _build(
        cfg,
        wl,
        {
            **common,
            "tile_b": 1,
            "tile_orows": tr,
            "tile_ocols": tc,
            "tile_och": toch,
            "tile_ich": tich,
            "tile_krows": R,
            "tile_kcols": S,
            "order": order,
            "buffers_a": 2,
            "buffers_b": 1,
            "acc_i": 1,
            "acc_j": 1 if split else min(4, och_chunks),
            "mvin_blocks_a": min(mbl, chunks),
            "mvin_blocks_b": min(mbl, och_chunks),
        },
    )


def live_acc_tiles(
    order: str, sub_i: int, sub_j: int, block_i: int, block_j: int, all_i: int, all_j: int, k_blocks: int
) -> int:
    """Accumulator tiles that must hold partial sums at once (the doc's `live_acc` let).

    With one reduction block, outputs complete inside a block, so only the sub-tile is live.
    Otherwise every output block whose loop runs inside the reduction loop stays live."""
    if k_blocks == 1:
        return min(sub_i, block_i) * min(sub_j, block_j)
    kpos = order.index("k")
    li = all_i if order.index("i") > kpos else block_i
    lj = all_j if order.index("j") > kpos else block_j
    return li * lj
