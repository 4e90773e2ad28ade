"""Gemmini mappings: the knobs a search turns, and the named reference points.

A mapping is data, not code: a frozen record of discrete choices (dataflow, loop order,
hardware loop or unrolled stream, buffering, init strategy, ...) and integer tile sizes.
It says *what* the kernel does; `lowering.py` turns it into instructions and `mapping_legality.py`
decides whether a mapping fits a workload on a given Gemmini configuration.

The knobs cover what separates Gemmini's library (`tiled_matmul_auto` / `tiled_conv_auto`,
reference §6) from expert schedules (Exo, reference §8.1): tile sizes, outer loop order,
residency and double buffering, block-mvin width, configuration hoisting and the three
mvin states, hardware loop FSMs versus unrolled instruction streams, accumulator zeroing
by zero-mvin versus bias load versus overwrite, weight reuse through
`compute_accumulated`, and the dataflow.

Matmul tiles are in DIM blocks (`tile_i = 5` means 80 rows); conv channel tiles are in
elements because the library's conv tiling picks non-multiples of DIM (144, 240).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, ClassVar, Self

from zomboss.targets.gemmini.config import GemminiConfig

from zomboss.errors import ZombossError
from zomboss.workload import Workload

ORDERS = ("ijk", "ikj", "jik", "jki", "kij", "kji")


class MappingError(ZombossError):
    """A mapping record that is malformed: unknown knob, wrong type or value out of range."""


@dataclass(frozen=True)
class Knob:
    """One knob's documented legal domain: a set of symbols or an inclusive integer range."""

    name: str
    doc: str
    choices: tuple[Any, ...] = ()
    lo: int | None = None
    hi: int | None = None

    def check(self, value: object, where: str) -> None:
        if self.choices:
            if isinstance(value, bool) != isinstance(self.choices[0], bool) or value not in self.choices:
                legal = ", ".join(_show(c) for c in self.choices)
                raise MappingError(f"{where}: knob {self.name!r} = {_show(value)} is not one of {{{legal}}}")
            return
        if isinstance(value, bool) or not isinstance(value, int):
            raise MappingError(f"{where}: knob {self.name!r} = {_show(value)} must be an integer")
        assert self.lo is not None and self.hi is not None
        if not self.lo <= value <= self.hi:
            raise MappingError(f"{where}: knob {self.name!r} = {value} is outside {self.lo}..{self.hi}")

    def domain(self) -> str:
        if self.choices:
            return "{" + ", ".join(_show(c) for c in self.choices) + "}"
        return f"{self.lo}..{self.hi}"


def _show(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, str) else str(v)


_BOOL = (False, True)
_TILE_MAX = 65535  # loop_ws / loop_conv_ws bound fields are 16 bits (reference §3.10)

# Knobs shared by both op families (they shape the unrolled instruction stream; the
# hardware-loop FSMs fix most of them, see `ignored_in_hw`).
STREAM_KNOBS: tuple[Knob, ...] = (
    Knob(
        "loop",
        "hw: loop_ws / loop_conv_ws FSMs issue the stream; sw: the CPU issues every instruction",
        choices=("hw", "sw"),
    ),
    Knob(
        "order",
        "outer block loop order, outermost first (i: output rows/pixels, j: output cols/channels, k: reduction)",
        choices=ORDERS,
    ),
    Knob(
        "reuse_a",
        "keep the A (input) block on chip while consecutive blocks share it "
        "(sw: skip the reload; hw: pin it with a_spad_id)",
        choices=_BOOL,
    ),
    Knob("reuse_b", "keep the B (weight) block on chip while consecutive blocks share it", choices=_BOOL),
    Knob(
        "buffers_a",
        "scratchpad buffers for A blocks: 1 = resident (whole share, reloads wait on the "
        "reservation station), 2 = double-buffered halves",
        lo=1,
        hi=2,
    ),
    Knob("buffers_b", "scratchpad buffers for B blocks", lo=1, hi=2),
    Knob(
        "acc_i", "accumulator sub-tile height in i tiles (used when the reduction fits one block)", lo=1, hi=_TILE_MAX
    ),
    Knob("acc_j", "accumulator sub-tile width in j tiles (DIM columns / channels each)", lo=1, hi=_TILE_MAX),
    Knob("acc_buffers", "rotating accumulator slots, so mvouts of one slot overlap computes of the next", lo=1, hi=8),
    Knob("inner_order", "loop order of i, j, k tiles inside an accumulator sub-tile", choices=ORDERS),
    Knob(
        "weight_reuse",
        "WS: compute_accumulated (preload GARBAGE) when consecutive computes share the weight tile; needs i innermost",
        choices=_BOOL,
    ),
    Knob("mvin_blocks_a", "DIM-column blocks per A mvin (1..4; 4 = 64-byte DMA requests)", lo=1, hi=4),
    Knob("mvin_blocks_b", "DIM-column blocks per B mvin", lo=1, hi=4),
    Knob("mvout_blocks", "DIM-column blocks per int8 mvout (1 = one mvout per 16x16 tile)", lo=1, hi=4),
    Knob(
        "acc_init",
        "accumulator init: overwrite (first compute writes), zero (mvin from DRAM 0), "
        "bias (mvin the bias row, stride 0)",
        choices=("overwrite", "zero", "bias"),
    ),
    Knob("hoist_config", "issue config_ex/config_st/config_ld once (true) or again for every block", choices=_BOOL),
    Knob(
        "ld_states",
        "mvin config states used: 3 = acc-init/A/B each own state, 1 = state 0 "
        "reconfigured whenever the operand changes",
        choices=(1, 3),
    ),
)

MATMUL_KNOBS: tuple[Knob, ...] = (
    Knob("tile_i", "A/C rows per block, in DIM blocks", lo=1, hi=_TILE_MAX),
    Knob("tile_j", "B/C columns per block, in DIM blocks", lo=1, hi=_TILE_MAX),
    Knob("tile_k", "reduction depth per block, in DIM blocks", lo=1, hi=_TILE_MAX),
    Knob("dataflow", "ws: weight-stationary; os: output-stationary (sw only)", choices=("ws", "os")),
    *STREAM_KNOBS,
)

CONV_KNOBS: tuple[Knob, ...] = (
    Knob("tile_b", "images per block (loop_conv_ws `batches`)", lo=1, hi=_TILE_MAX),
    Knob("tile_orows", "output rows per block (`porows`)", lo=1, hi=_TILE_MAX),
    Knob("tile_ocols", "output columns per block (`pocols`)", lo=1, hi=_TILE_MAX),
    Knob("tile_och", "output channels per block, elements (`pochs`)", lo=1, hi=_TILE_MAX),
    Knob("tile_ich", "input channels per block, elements (`kchs`)", lo=1, hi=_TILE_MAX),
    Knob("tile_krows", "kernel rows per block (`krows`; sw needs the full kernel)", lo=1, hi=_TILE_MAX),
    Knob("tile_kcols", "kernel columns per block (`kcols`; sw needs the full kernel)", lo=1, hi=_TILE_MAX),
    *STREAM_KNOBS,
)

# Knobs the hardware loop FSMs decide themselves; `canonical()` resets them to defaults.
HW_FIXED = frozenset(
    {
        "buffers_a",
        "buffers_b",
        "acc_i",
        "acc_j",
        "acc_buffers",
        "inner_order",
        "weight_reuse",
        "mvin_blocks_a",
        "mvin_blocks_b",
        "mvout_blocks",
        "hoist_config",
        "ld_states",
    }
)


@dataclass(frozen=True, kw_only=True)
class _Mapping:
    """Knob checking and JSON shared by the op families (fields come from `KNOBS`)."""

    op: ClassVar[str]
    KNOBS: ClassVar[tuple[Knob, ...]]

    loop: str = "sw"
    order: str = "ijk"
    reuse_a: bool = True
    reuse_b: bool = True
    buffers_a: int = 2
    buffers_b: int = 2
    acc_i: int = 1
    acc_j: int = 4
    acc_buffers: int = 2
    inner_order: str = "ikj"
    weight_reuse: bool = False
    mvin_blocks_a: int = 4
    mvin_blocks_b: int = 4
    mvout_blocks: int = 1
    acc_init: str = "overwrite"
    hoist_config: bool = True
    ld_states: int = 3

    def __post_init__(self) -> None:
        where = f"{self.op} mapping"
        for k in self.KNOBS:
            k.check(getattr(self, k.name), where)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, **asdict(self)}

    def canonical(self) -> Self:
        """The same mapping with knobs the chosen loop mode ignores reset to their defaults,
        so equal kernels compare equal."""
        if self.loop != "hw":
            return self
        defaults = {f.name: f.default for f in fields(self) if f.name in HW_FIXED}
        return type(self)(**{**asdict(self), **defaults})

    @classmethod
    def knob(cls, name: str) -> Knob:
        return next(k for k in cls.KNOBS if k.name == name)


@dataclass(frozen=True, kw_only=True)
class MatmulMapping(_Mapping):
    """C = act(scale(A·B + bias)) tiled in DIM blocks; see `MATMUL_KNOBS` for every knob."""

    op: ClassVar[str] = "matmul"
    KNOBS: ClassVar[tuple[Knob, ...]] = MATMUL_KNOBS

    tile_i: int
    tile_j: int
    tile_k: int
    dataflow: str = "ws"


@dataclass(frozen=True, kw_only=True)
class ConvMapping(_Mapping):
    """NHWC x HWIO convolution; i = output pixels, j = output channels, k = input channels."""

    op: ClassVar[str] = "conv"
    KNOBS: ClassVar[tuple[Knob, ...]] = CONV_KNOBS

    tile_b: int
    tile_orows: int
    tile_ocols: int
    tile_och: int
    tile_ich: int
    tile_krows: int
    tile_kcols: int


GemminiMapping = MatmulMapping | ConvMapping
_CLASSES: dict[str, type[MatmulMapping] | type[ConvMapping]] = {"matmul": MatmulMapping, "conv": ConvMapping}


def from_json(data: Mapping[str, Any]) -> GemminiMapping:
    """Read a mapping record; the error names the bad field and value."""
    if not isinstance(data, Mapping):
        raise MappingError(f"a mapping must be a JSON object, got {type(data).__name__}")
    op = data.get("op")
    if op not in _CLASSES:
        raise MappingError(f"mapping field 'op' = {_show(op)} is not one of {{'matmul', 'conv'}}")
    cls = _CLASSES[op]
    names = {k.name for k in cls.KNOBS}
    unknown = sorted(set(data) - names - {"op"})
    if unknown:
        raise MappingError(f"{op} mapping: unknown field {unknown[0]!r} (fields: {', '.join(sorted(names))})")
    required = [f.name for f in fields(cls) if f.default is MISSING]
    missing = [n for n in required if n not in data]
    if missing:
        raise MappingError(f"{op} mapping: missing field {missing[0]!r}")
    kv = {k: v for k, v in data.items() if k != "op"}
    return cls(**kv)


def knob_table(op: str) -> list[dict[str, str]]:
    """Name, domain and meaning of every knob of an op family (for docs and guides)."""
    if op not in _CLASSES:
        raise MappingError(f"no mapping space for op {op!r}")
    return [{"name": k.name, "domain": k.domain(), "doc": k.doc} for k in _CLASSES[op].KNOBS]


# ---------------------------------------------------------------------------- reference mappings


def block_loads(order: str, blocks: Mapping[str, int], dims: str, reuse: bool, buffers: int) -> int:
    """How many times an operand block indexed by `dims` (e.g. "ik" for A) is loaded when the
    block loops run in `order`, keeping up to `buffers` blocks when `reuse` is on (the
    lowering's buffer policy: a block still held in a buffer is not loaded again)."""
    held: list[tuple[int, ...] | None] = [None] * buffers
    cur, loads = buffers - 1, 0
    for blk in itertools.product(*(range(blocks[x]) for x in order)):
        b = dict(zip(order, blk, strict=True))
        key = tuple(b[x] for x in dims)
        if reuse and key in held:
            continue
        cur = (cur + 1) % buffers
        held[cur] = key
        loads += 1
    return loads


def _best_order(blocks: Mapping[str, int], a_bytes: int, b_bytes: int, buffers_a: int, buffers_b: int) -> str:
    """The outer order moving the fewest operand bytes (ties keep the first, "ijk")."""

    def traffic(order: str) -> int:
        return a_bytes * block_loads(order, blocks, "ik", True, buffers_a) + b_bytes * block_loads(
            order, blocks, "kj", True, buffers_b
        )

    return min(ORDERS, key=traffic)


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


def exo_style(wl: Workload, cfg: GemminiConfig | None = None) -> GemminiMapping:
    """The Exo schedules of reference §8.1 generalised to any shape: configs hoisted with one
    mvin state per role, unrolled streams, 4-block mvins, zero-mvin (or bias) accumulator
    init, large resident tiles that share the whole scratchpad, and one mvout per 16×16
    output tile from 4-tile accumulator slots."""
    cfg = cfg or GemminiConfig()
    d = cfg.dim
    cap = cfg.sp_rows // d  # scratchpad capacity in DIM-row tiles
    common: dict[str, Any] = dict(
        loop="sw",
        reuse_a=True,
        reuse_b=True,
        acc_buffers=4,
        inner_order="ikj",
        weight_reuse=False,
        mvin_blocks_a=cfg.max_block_len,
        mvin_blocks_b=cfg.max_block_len,
        mvout_blocks=1,
        acc_init="bias" if wl["bias"] else "zero",
        hoist_config=True,
        ld_states=3,
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
            order = _best_order(blocks, ti * tk, tk * tj, 1, 1)
        return MatmulMapping(
            tile_i=ti,
            tile_j=tj,
            tile_k=tk,
            dataflow="ws",
            order=order,
            buffers_a=1,
            buffers_b=1,
            **{**common, **acc},
        )
    # convolution: weights of an (och block, all input channels) resident, one input window
    # per block of whole output rows, double-buffered so the next window loads under compute
    from zomboss.targets.gemmini.suite import conv_out_dims

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
    order = _best_order(blocks, a_bytes, b_rows * d, 2, 1)
    return ConvMapping(
        tile_b=1,
        tile_orows=tr,
        tile_ocols=tc,
        tile_och=toch,
        tile_ich=tich,
        tile_krows=R,
        tile_kcols=S,
        order=order,
        buffers_a=2,
        buffers_b=1,
        acc_i=1,
        acc_j=min(4, -(-toch // d)),
        **common,
    )


def library_default(wl: Workload, cfg: GemminiConfig | None = None) -> GemminiMapping:
    """What `tiled_matmul_auto` / `tiled_conv_auto` choose (default.py's re-implementation of
    their tiling heuristics), as a mapping: hardware loops, i→j→k block order, operand
    pinning only when at most two blocks of an operand exist."""
    from zomboss.targets.gemmini.default import conv_tiling, matmul_tiling
    from zomboss.targets.gemmini.suite import conv_out_dims

    cfg = cfg or GemminiConfig()
    if wl.op == "matmul":
        t = matmul_tiling(wl["M"], wl["N"], wl["K"], cfg)
        return MatmulMapping(
            loop="hw",
            tile_i=t.tile_i,
            tile_j=t.tile_j,
            tile_k=t.tile_k,
            order="ijk",
            reuse_a=t.a_reuse,
            reuse_b=t.b_reuse,
            acc_init="bias" if wl["bias"] else "overwrite",
        ).canonical()
    oh, ow = conv_out_dims(wl)
    c = conv_tiling(wl["N"], wl["H"], wl["W"], wl["C"], wl["K"], oh, ow, wl["stride"], wl["pad"], wl["R"], cfg)
    n = {
        "b": -(-wl["N"] // c.batches),
        "r": -(-oh // c.porows),
        "c": -(-ow // c.pocols),
        "o": -(-wl["K"] // c.pochs),
        "kr": -(-wl["R"] // c.krows),
        "kc": -(-wl["S"] // c.kcols),
        "ch": -(-wl["C"] // c.kchs),
    }
    return ConvMapping(
        loop="hw",
        tile_b=c.batches,
        tile_orows=c.porows,
        tile_ocols=c.pocols,
        tile_och=c.pochs,
        tile_ich=c.kchs,
        tile_krows=c.krows,
        tile_kcols=c.kcols,
        reuse_a=n["ch"] * n["kr"] * n["kc"] * n["b"] * n["r"] * n["c"] <= 2,
        reuse_b=n["ch"] * n["o"] * n["kr"] * n["kc"] <= 2,
        acc_init="bias" if wl["bias"] else "zero",
    ).canonical()
