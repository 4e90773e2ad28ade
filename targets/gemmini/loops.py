"""The loop unrollers: `loop_ws` and `loop_conv_ws` expanded into plain Gemmini instructions.

Both FSMs are modelled as the RTL builds them (`ucb-bar/gemmini:LoopMatmul.scala`,
`LoopConv.scala`): two loops in flight, each in its own half of the scratchpad (slot = loop
number mod 2, or a half pinned by `a_spad_id`/`b_spad_id`), the accumulator half toggling
after every loop that stores its output, block mvins of up to MAX_BLOCK_LEN tiles, and the
per-generator command orders (D: j/i, A: k/i, B: k/j, execute: k/j/i, C: j/i). The data a
loop computes equals Spike's (`ucb-bar/libgemmini:gemmini.cc` `loop_ws`, `loop_conv_ws`),
whose loop structure and address arithmetic the conv expansion follows.

An expansion is a tuple of entries `(op, args, generator, gate, reloc)`: the instruction, the
FSM generator that issues it (for the timing model: each generator allocates reservation-
station entries on its own), the index within the expansion of the command whose issue gates
it (execute waits for the loads it needs to be issued; stores wait for the execute commands
they read), and which DRAM base (1-4) its first operand is relative to (0: absolute). The
order is the one the functional model executes and the checker sees; it respects every data
dependency. Expansions depend only on the loop's shape, not on its DRAM addresses, so they
are built once per shape and relocated (`Expansion.commands`): the execute commands, the bulk
of every loop, carry no DRAM address at all and are shared between loops.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
from zomboss.targets.gemmini.asm import GARBAGE, IS_ACC, acc_addr, operands
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.numerics import ONE_F32_BITS

from zomboss.errors import ZombossError
from zomboss.legality import Block
from zomboss.program import Instr
from zomboss.util import Lru

# Generators (who issues a command): the CPU, or one of the loop FSM's generators.
CPU, GEN_LD, GEN_EX, GEN_ST = 0, 1, 2, 3


Entry = tuple[str, tuple[int, ...], int, int, int]  # op, args, generator, gate index, reloc


Segment = tuple[int, int, int]  # first entry, entries per group, groups


@dataclass(frozen=True)
class Template:
    """An expansion's entries, and the runs of alike groups among its FSM loop iterations
    (what a timing-only run may extrapolate over, `zomboss.steady`)."""

    entries: tuple[Entry, ...]
    segments: tuple[Segment, ...] = ()
    counts: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # the commands per mnemonic, counted once per template rather than once per loop
        object.__setattr__(self, "counts", Counter(e[0] for e in self.entries))


@dataclass(frozen=True)
class Expansion:
    """The commands of one loop: a shared shape template plus this loop's DRAM bases."""

    entries: tuple[Entry, ...]
    bases: tuple[int, int, int, int]  # loop_ws: A, B, D, C; loop_conv_ws: input, weights, bias, output
    counts: Mapping[str, int]  # commands per mnemonic (the template's)
    segments: tuple[Segment, ...] = ()

    @classmethod
    def of(cls, t: Template, bases: tuple[int, int, int, int]) -> Expansion:
        return cls(t.entries, bases, t.counts, t.segments)

    def __len__(self) -> int:
        return len(self.entries)

    def args(self) -> Iterator[tuple[str, tuple[int, ...], int, int]]:
        """(op, absolute args, generator, gate) per command, without building Instr objects."""
        bases = (0, *self.bases)
        for op, args, gen, gate, reloc in self.entries:
            if reloc:
                args = (args[0] + bases[reloc], *args[1:])
            yield op, args, gen, gate

    def commands(self, line: int = 0) -> Iterator[tuple[Instr, int, int]]:
        """(instruction, generator, gate) per command."""
        for op, args, gen, gate in self.args():
            yield Instr(op, args, line), gen, gate

    def block(self, line: int = 0) -> Block | None:
        """The commands as one `legality.Block`, for the rule checker to check at once (None:
        operands beyond int64). The template's layout is built once; only the relocated
        first operands (DRAM addresses) differ between the loops that share it."""
        layout = _block_layout(self.entries)
        if layout is None or max(self.bases) >= _MAX_BASE or min(self.bases) < 0:
            return None
        bases = np.array((0, *self.bases), dtype=np.int64)
        groups = []
        for op, pos, args, reloc in layout:
            if reloc is not None:
                args = args.copy()
                args[:, 0] += bases[reloc]
            groups.append((op, pos, args))
        varying = tuple(frozenset() if reloc is None else frozenset({0}) for _, _, _, reloc in layout)
        return Block(len(self.entries), tuple(groups), line, self.entries, varying)


_MAX_BASE = 1 << 60  # relocated operands stay far inside int64
_Layout = tuple[tuple[str, np.ndarray, np.ndarray, np.ndarray | None], ...]  # op, positions, args, reloc
_TEMPLATES_KEPT = 64  # expansion templates kept per loop kind
_LAYOUTS: Lru[int, tuple[tuple[Entry, ...], _Layout | None]] = Lru(2 * _TEMPLATES_KEPT)


def _block_layout(entries: tuple[Entry, ...]) -> _Layout | None:
    """Per mnemonic of a template: its positions, operands and relocation slots (None where
    no operand relocates), cached while the template is (keyed by identity; the entry holds
    the template, so its id is not reused while cached)."""
    return _LAYOUTS.get_or(id(entries), lambda: (entries, _layout_of(entries)))[1]


def _layout_of(entries: tuple[Entry, ...]) -> _Layout | None:
    rows: dict[str, tuple[list[int], list[tuple[int, ...]], list[int]]] = {}
    for i, (op, args, _gen, _gate, reloc) in enumerate(entries):
        pos, ops, rel = rows.setdefault(op, ([], [], []))
        pos.append(i)
        ops.append(args)
        rel.append(reloc)
    layout: _Layout | None
    try:
        layout = tuple(
            (op, np.array(pos), np.array(ops, dtype=np.int64), np.array(rel) if any(rel) else None)
            for op, (pos, ops, rel) in rows.items()
        )
        if any(len(a) and np.abs(a[:, 0]).max() >= _MAX_BASE for _, _, a, _ in layout):
            layout = None
    except (OverflowError, ValueError):
        layout = None
    return layout


MOVES = frozenset(("mvin", "mvin2", "mvin3", "mvout"))  # the DMA commands
EXECUTES = frozenset(("preload", "compute_preloaded", "compute_accumulated"))  # the array's commands


def _timing_shape(e: Entry, row_mask: int) -> tuple:
    """What the timing model sees of an entry besides its addresses and its gate: the op,
    generator and relocation, the DRAM offset's alignment and zero-ness, a local address's
    flag bits (or GARBAGE), and every other operand, flat (the op fixes the layout)."""
    op, args, gen, _gate, reloc = e
    if op in EXECUTES:  # (the bulk of every expansion: spelt out, six operands)
        a, b, c2, c3, c4, c5 = args
        return (
            op,
            gen,
            reloc,
            a if a == GARBAGE else a & ~row_mask,
            b if b == GARBAGE else b & ~row_mask,
            c2,
            c3,
            c4,
            c5,
        )
    if op in MOVES:
        return (op, gen, reloc, args[0] % 64, args[0] == 0 and not reloc, args[1] & ~row_mask, *args[2:])
    return (op, gen, reloc, *args)


def _gates(gates: np.ndarray, start: int) -> np.ndarray:
    """Gates as a group starting at `start` sees them: relative to its start when they point
    at or after it, else absolute (encoded as -2 - gate, so the two never collide)."""
    return np.where(gates >= start, gates - start, -2 - gates)


def alike_segments(entries: list[Entry], starts: list[int], row_mask: int, max_group: int = 4) -> tuple[Segment, ...]:
    """Runs (of at least three) of alike groups of consecutive FSM loop iterations.

    `starts` are the first entries of successive iterations, then the end of the last. A
    group is `g` iterations (g <= max_group: e.g. an A mvin every four k steps); groups are
    alike when their entries' timing shapes and gates (relative to the group) match pairwise."""
    n = len(starts) - 1
    if n < 3:
        return ()
    lo, hi = starts[0], starts[-1]
    shapes = [_timing_shape(e, row_mask) for e in entries[lo:hi]]  # each entry's once
    gates = np.fromiter((e[3] for e in entries[lo:hi]), dtype=np.int64, count=hi - lo)
    out: list[Segment] = []
    i = 0
    while i < n:
        best: tuple[int, int, int] | None = None  # (covered iterations, g, groups)
        for g in range(1, max_group + 1):
            if i + 3 * g > n:
                break
            a, length = starts[i], starts[i + g] - starts[i]
            ref, ref_gates = shapes[a - lo : a - lo + length], _gates(gates[a - lo : a - lo + length], a)
            groups = 1
            while i + (groups + 1) * g <= n:
                b = starts[i + groups * g]
                if starts[i + (groups + 1) * g] - b != length or shapes[b - lo : b - lo + length] != ref:
                    break
                if not np.array_equal(_gates(gates[b - lo : b - lo + length], b), ref_gates):
                    break
                groups += 1
            if groups >= 3 and (best is None or groups * g > best[0]):
                best = (groups * g, g, groups)
        if best is None:
            i += 1
            continue
        covered, g, groups = best
        out.append((starts[i], starts[i + g] - starts[i], groups))
        i += covered
    return tuple(out)


# expansion templates keyed by everything but the DRAM bases
_WS_TEMPLATES: Lru[tuple, Template] = Lru(_TEMPLATES_KEPT)
_CONV_TEMPLATES: Lru[tuple, Template] = Lru(_TEMPLATES_KEPT)
R_A, R_B, R_D, R_C = 1, 2, 3, 4  # loop_ws relocation slots
R_IN, R_W, R_BIAS, R_OUT = 1, 2, 3, 4  # loop_conv_ws relocation slots


class UnsupportedLoop(ZombossError):
    """A loop_conv_ws feature the Zomboss simulator does not model (transposes, dw, dilation)."""


@dataclass
class LoopFsm:
    """Mutable FSM state of one unroller: its configuration registers and buffer slots."""

    regs: dict[str, int] = field(default_factory=dict)
    loops: int = 0  # loops started so far (slot = loops % 2)
    acc_half: int = 0  # 0 or 1: which accumulator half the next loop uses
    flips: int = 0  # times acc_half toggled (steady-state extrapolation advances it)

    def configure(self, ins: Instr) -> None:
        self.regs.update(zip(operands()[ins.op], ins.args, strict=True))

    def reg(self, name: str) -> int:
        return self.regs.get(name, 0)


def _slots(cfg: GemminiConfig, fsm: LoopFsm, a_spad_id: int, b_spad_id: int) -> tuple[int, int]:
    """(A start row, B end row) of the loop about to start (RTL `a_addr_start` / `b_addr_end`)."""
    half = cfg.half_sp_rows
    slot = fsm.loops % 2
    a_start = slot * half if a_spad_id == 0 else (a_spad_id - 1) * half
    b_end = (slot + 1) * half if b_spad_id == 0 else b_spad_id * half
    return a_start, b_end


def expand_loop_ws(cfg: GemminiConfig, fsm: LoopFsm, run: Instr) -> Expansion:
    """The command stream of one `loop_ws` (after its five configuration instructions)."""
    (ex_acc, full_c, low_d, _act, a_id, b_id, a_t, b_t, resadd) = run.args
    r = fsm.reg
    a_start, b_end = _slots(cfg, fsm, a_id, b_id)
    slot = fsm.loops % 2
    acc_base = fsm.acc_half * cfg.half_acc_rows
    fsm.loops += 1
    bases = (r("a"), r("b"), r("d"), r("c"))
    shape = tuple(
        r(n) for n in ("i", "j", "k", "pad_i", "pad_j", "pad_k", "a_stride", "b_stride", "d_stride", "c_stride")
    )
    present = tuple(x != 0 for x in bases)
    if resadd:
        key: tuple = ("resadd", cfg, shape, present, slot)
        return Expansion.of(
            _WS_TEMPLATES.get_or(key, lambda: Template(tuple(_resadd(cfg, shape, present, slot * cfg.half_acc_rows)))),
            bases,
        )
    if bases[3]:
        fsm.acc_half ^= 1
        fsm.flips += 1
    flags = (ex_acc, full_c, low_d, a_t, b_t)
    key = ("ws", cfg, shape, present, flags, a_start, b_end, acc_base)
    return Expansion.of(
        _WS_TEMPLATES.get_or(key, lambda: _loop_ws(cfg, shape, present, flags, a_start, b_end, acc_base)), bases
    )


def _loop_ws(
    cfg: GemminiConfig,
    shape: tuple[int, ...],
    present: tuple[bool, ...],
    flags: tuple[int, ...],
    a_start: int,
    b_end: int,
    acc_base: int,
) -> Template:
    I, J, K, pad_i, pad_j, pad_k, sa, sb, sd, sc = shape  # noqa: N806 - the ISA's names
    has_a, has_b, has_d, has_c = present
    ex_acc, full_c, low_d, a_t, b_t = flags
    dim = cfg.dim
    b_start = b_end - K * J * dim
    mbl = cfg.max_block_len

    def rows_of(idx: int, n: int, pad: int) -> int:
        return dim - (pad if idx == n - 1 else 0)

    def cols_of(idx: int, blocks: int, n: int, pad: int) -> int:
        return blocks * dim - (pad if idx + blocks >= n else 0)

    out: list[Entry] = []
    # D: j outer (blocks), i inner (LdD); int32 D moves one tile per mvin, int8 D up to four.
    d_last = -1
    if has_d:
        mb = min(J, mbl if low_d else cfg.max_block_len_acc)
        esz = 1 if low_d else 4
        for j in range(0, J, mb):
            blocks = min(mb, J - j)
            for i in range(I):
                args = (
                    (i * sd + j) * dim * esz,
                    acc_addr(acc_base + (i * J + j) * dim),
                    cols_of(j, blocks, J, pad_j),
                    rows_of(i, I, pad_i),
                )
                d_last = len(out)
                out.append(("mvin3", args, GEN_LD, -1, R_D))

    # A and B loads in RTL generator order; a_cover[i][k] / b_cover[k][j]: the mvin holding the tile.
    def block_loads(
        n_rows: int, n_cols: int, row_pad: int, col_pad: int, stride: int, start: int, k_is_col: bool
    ) -> tuple[list[tuple[int, ...]], dict[tuple[int, int], int]]:
        """Loads of a matrix stored as n_rows x n_cols DIM tiles (DRAM layout), up to max_block_len
        tiles along a row per mvin, with the reduction (k) dimension as the outer loop, as the
        RTL loaders walk it; also which load holds each stored tile (row, col)."""
        loads: list[tuple[int, ...]] = []
        cover: dict[tuple[int, int], int] = {}
        mb = min(n_cols, mbl)

        def emit(r: int, c: int) -> None:
            blocks = min(mb, n_cols - c)
            for cc in range(c, c + blocks):
                cover[r, cc] = len(loads)
            loads.append(
                (
                    (r * stride + c) * dim,
                    start + (r * n_cols + c) * dim,
                    cols_of(c, blocks, n_cols, col_pad),
                    rows_of(r, n_rows, row_pad),
                )
            )

        if k_is_col:
            for c in range(0, n_cols, mb):
                for r in range(n_rows):
                    emit(r, c)
        else:
            for r in range(n_rows):
                for c in range(0, n_cols, mb):
                    emit(r, c)
        return loads, cover

    a_loads: list[tuple[int, ...]] = []
    a_cover = [[0] * K for _ in range(I)]
    if has_a:
        if not a_t:  # stored I x K
            a_loads, cov = block_loads(I, K, pad_i, pad_k, sa, a_start, k_is_col=True)
            a_cover = [[cov[i, k] for k in range(K)] for i in range(I)]
        else:  # stored K x I
            a_loads, cov = block_loads(K, I, pad_k, pad_i, sa, a_start, k_is_col=False)
            a_cover = [[cov[k, i] for k in range(K)] for i in range(I)]
    b_loads: list[tuple[int, ...]] = []
    b_cover = [[0] * J for _ in range(K)]
    if has_b:
        if not b_t:  # stored K x J
            b_loads, cov = block_loads(K, J, pad_k, pad_j, sb, b_start, k_is_col=False)
            b_cover = [[cov[k, j] for j in range(J)] for k in range(K)]
        else:  # stored J x K
            b_loads, cov = block_loads(J, K, pad_j, pad_k, sb, b_start, k_is_col=True)
            b_cover = [[cov[j, k] for j in range(J)] for k in range(K)]

    # Execute k/j/i, pulling in the loads each block needs first (A before B, generator order).
    a_pos: list[int] = []
    b_pos: list[int] = []
    last_ex = [[0] * I for _ in range(J)]  # at k = K-1: index of the compute of tile (i, j)
    starts: list[int] = []  # first entry of each k step (for alike_segments)
    irs = [rows_of(i, I, pad_i) for i in range(I)]  # (per-tile values hoisted out of the k/j/i loop)
    for k in range(K):
        starts.append(len(out))
        kr = rows_of(k, K, pad_k)
        c_flags = acc_addr(0, accumulate=bool(ex_acc) or k > 0)
        a_rows = [a_start + ((k * I + i) if a_t else (i * K + k)) * dim for i in range(I)]
        for j in range(J):
            jc = rows_of(j, J, pad_j)
            b_row = b_start + ((j * K + k) if b_t else (k * J + j)) * dim
            last_j = last_ex[j]
            for i in range(I):
                gate = d_last
                if has_a:
                    need = a_cover[i][k]
                    while len(a_pos) <= need:
                        a_pos.append(len(out))
                        out.append(("mvin", a_loads[len(a_pos) - 1], GEN_LD, -1, R_A))
                    if a_pos[need] > gate:
                        gate = a_pos[need]
                if has_b:
                    need = b_cover[k][j]
                    while len(b_pos) <= need:
                        b_pos.append(len(out))
                        out.append(("mvin2", b_loads[len(b_pos) - 1], GEN_LD, -1, R_B))
                    if b_pos[need] > gate:
                        gate = b_pos[need]
                c = c_flags | (acc_base + (i * J + j) * dim)
                ir = irs[i]
                out.append(("preload", (b_row if i == 0 else GARBAGE, c, jc, kr, jc, ir), GEN_EX, gate, 0))
                last_j[i] = len(out)
                op = "compute_preloaded" if i == 0 else "compute_accumulated"
                out.append((op, (a_rows[i], GARBAGE, kr, ir, dim, dim), GEN_EX, gate, 0))
    starts.append(len(out))
    # C: j outer (blocks), i inner; a store waits until execute has passed its last tile.
    if has_c:
        mb = 1 if full_c else min(J, mbl)
        esz = 4 if full_c else 1
        for j in range(0, J, mb):
            blocks = min(mb, J - j)
            for i in range(I):
                args = (
                    (i * sc + j) * dim * esz,
                    acc_addr(acc_base + (i * J + j) * dim, read_full=bool(full_c)),
                    cols_of(j, blocks, J, pad_j),
                    rows_of(i, I, pad_i),
                )
                out.append(("mvout", args, GEN_ST, last_ex[j + blocks - 1][i], R_C))
    return Template(tuple(out), alike_segments(out, starts, cfg.row_mask))


def _resadd(cfg: GemminiConfig, shape: tuple[int, ...], present: tuple[bool, ...], acc_base: int) -> list[Entry]:
    """`loop_ws` with is_resadd: C = act(scale(A) + scale(B)) through the accumulator (no array)."""
    I, J, _K, pad_i, pad_j, _pk, sa, sb, _sd, sc = shape  # noqa: N806
    dim, mb = cfg.dim, min(J, cfg.max_block_len)
    out: list[Entry] = []
    for i in range(I):
        rows = dim - (pad_i if i == I - 1 else 0)
        for j in range(0, J, mb):
            blocks = min(mb, J - j)
            cols = blocks * dim - (pad_j if j + blocks >= J else 0)
            row = acc_base + (i * J + j) * dim
            out.append(("mvin", ((i * sa + j) * dim, acc_addr(row), cols, rows), GEN_LD, -1, R_A))
            out.append(("mvin2", ((i * sb + j) * dim, acc_addr(row, accumulate=True), cols, rows), GEN_LD, -1, R_B))
            if present[3]:
                out.append(("mvout", ((i * sc + j) * dim, acc_addr(row), cols, rows), GEN_ST, len(out) - 1, R_C))
    return out


# ------------------------------------------------------------------------------------------
# loop_conv_ws
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvTile:
    """The derived geometry of one loop_conv_ws tile (Spike `loop_conv_ws` prologue)."""

    orows: int
    ocols: int
    irows: int
    icols: int
    irows_unpadded: int
    icols_unpadded: int

    @classmethod
    def of(cls, r: Mapping[str, int], downsample: bool) -> ConvTile:
        kd = max(1, r.get("kernel_dilation", 1))
        krows, kcols = r["krows"], r["kcols"]
        orows, ocols, stride = r["orows"], r["ocols"], r["stride"]
        irows = orows * stride + krows + (kd - 1) * (krows - 1) - 1
        icols = ocols * stride + kcols + (kd - 1) * (kcols - 1) - 1
        return cls(orows, ocols, irows, icols, irows - r["upad"] - r["dpad"], icols - r["lpad"] - r["rpad"])


_UNSUPPORTED_CONV = (
    "trans_output_1203",
    "trans_weight_1203",
    "trans_weight_0132",
    "trans_input_3120",
    "dw",
    "wrot180",
    "input_dilated",
)


@functools.cache
def _conv_shape() -> tuple[str, ...]:
    """The loop_conv_ws shape registers: every field of config words 1..4, in doc order."""
    return tuple(name for i in range(1, 5) for name in operands()[f"loop_conv_ws_config{i}"])


def expand_loop_conv_ws(cfg: GemminiConfig, fsm: LoopFsm, run: Instr, st_scale_bits: int = ONE_F32_BITS) -> Expansion:
    """The command stream of one `loop_conv_ws` tile (Spike's loop structure, RTL buffers).

    `st_scale_bits` is the store scale in force (a pooled store re-issues config_st with it).
    """
    flags = dict(zip(operands()["loop_conv_ws"], run.args, strict=True))
    for name in _UNSUPPORTED_CONV:
        if flags[name]:
            raise UnsupportedLoop(
                f"line {run.line}: loop_conv_ws with {name}=1 is not modelled by the Zomboss simulator"
            )
    if fsm.reg("kernel_dilation") > 1:
        raise UnsupportedLoop(f"line {run.line}: loop_conv_ws with kernel_dilation > 1 is not modelled")
    a_start, b_end = _slots(cfg, fsm, flags["a_spad_id"], flags["b_spad_id"])
    acc_base = fsm.acc_half * cfg.half_acc_rows
    fsm.loops += 1
    bases = (fsm.reg("input"), fsm.reg("weights"), fsm.reg("bias"), fsm.reg("output"))
    if bases[3]:
        fsm.acc_half ^= 1
        fsm.flips += 1
    shape = tuple(fsm.reg(n) for n in _conv_shape())
    present = tuple(x != 0 for x in bases)
    key = ("conv", cfg, shape, present, tuple(run.args), a_start, b_end, acc_base, st_scale_bits)
    regs = dict(zip(_conv_shape(), shape, strict=True))
    return Expansion.of(
        _CONV_TEMPLATES.get_or(
            key, lambda: _loop_conv(cfg, regs, present, flags, a_start, b_end, acc_base, st_scale_bits)
        ),
        bases,
    )


def _loop_conv(
    cfg: GemminiConfig,
    r: Mapping[str, int],
    present: tuple[bool, ...],
    flags: Mapping[str, int],
    a_start: int,
    b_end: int,
    acc_base: int,
    st_scale_bits: int,
) -> Template:
    has_in, has_w, has_bias, has_out = present
    dim = cfg.dim
    ds = int(flags["downsample"])
    pixels_max = max(1, flags["max_pixels_per_row"])
    t = ConvTile.of(r, bool(ds))
    batches, pochs, krows, kcols, kchs = r["batches"], r["pochs"], r["krows"], r["kcols"], r["kchs"]
    orows, ocols = t.orows, t.ocols
    dirows, dicols = t.irows >> ds, t.icols >> ds
    in_stride, weight_stride, out_stride = r["in_stride"], r["weight_stride"], r["out_stride"]
    in_row_dim, in_col_dim = r["in_row_dim"], r["in_col_dim"]
    out_row_dim, out_col_dim = r["out_row_dim"], r["out_col_dim"]
    kernel_dim, stride, in_channels = r["kernel_dim"], r["stride"], r["in_channels"]
    b_start = b_end - -(-pochs // dim) * krows * kcols * kchs
    one = ONE_F32_BITS
    out: list[Entry] = []
    # 1. bias: a stride-0 mvin3 broadcasts the bias row over the pixels of the tile.
    if has_bias:
        max_och = min(pochs, cfg.max_block_len_acc * dim)
        out.append(("config_ld", (2, 0, 0, batches * orows * ocols, 1, one), GEN_LD, -1, 0))
        for b in range(batches):
            for orow in range(orows):
                for ocol in range(0, ocols, dim):
                    rows = min(dim, ocols - ocol)
                    for och in range(0, pochs, max_och):
                        cols = min(max_och, pochs - och)
                        row = (
                            acc_base + (och // dim) * batches * orows * ocols + b * orows * ocols + orow * ocols + ocol
                        )
                        if flags["no_bias"]:
                            out.append(("mvin3", (0, acc_addr(row), cols, rows), GEN_LD, -1, 0))
                        else:
                            out.append(("mvin3", (och * 4, acc_addr(row), cols, rows), GEN_LD, -1, R_BIAS))
    # 2. input: one row of pixels (<= DIM) by up to MAX_BLOCK_LEN*DIM channels per mvin.
    if has_in:
        max_ch = min(kchs, cfg.max_block_len * dim)
        spad_stride = batches * dirows * dicols
        out.append(("config_ld", (0, in_stride << ds, 0, spad_stride, pixels_max, one), GEN_LD, -1, 0))
        upad, dpad, lpad, rpad = r["upad"], r["dpad"], r["lpad"], r["rpad"]
        for b in range(batches):
            for irow in range(-upad, t.irows_unpadded + dpad, 1 + ds):
                irow_p = irow + upad
                icol = -lpad
                while icol < t.icols_unpadded + rpad:
                    n = min(t.icols_unpadded - icol, dim << ds)
                    if icol < 0:
                        n = min(-icol, dim)
                    elif icol >= t.icols_unpadded:
                        n = min(t.icols_unpadded + rpad - icol, dim)
                    icol_p = icol + lpad
                    zeros = irow < 0 or irow >= t.irows_unpadded or icol < 0 or icol >= t.icols_unpadded
                    for ich in range(0, kchs, max_ch):
                        cols = min(max_ch, kchs - ich)
                        row = (
                            a_start
                            + (ich // dim) * spad_stride
                            + b * dirows * dicols
                            + (irow_p >> ds) * dicols
                            + (icol_p >> ds)
                        )
                        if zeros:
                            out.append(("mvin", (0, row, cols, n >> ds), GEN_LD, -1, 0))
                        else:
                            off = (b * in_row_dim * in_col_dim + irow * in_col_dim + icol) * in_stride + ich
                            out.append(("mvin", (off, row, cols, n >> ds), GEN_LD, -1, R_IN))
                    icol += n
    # 3. weights: kch rows (<= DIM) by up to MAX_BLOCK_LEN*DIM output channels per mvin2.
    if has_w:
        max_och = min(pochs, cfg.max_block_len * dim)
        out.append(("config_ld", (1, weight_stride, 0, krows * kcols * kchs, 1, one), GEN_LD, -1, 0))
        for och in range(0, pochs, max_och):
            for krow in range(krows):
                for kcol in range(kcols):
                    for kch in range(0, kchs, dim):
                        rows = min(dim, kchs - kch)
                        cols = min(max_och, pochs - och)
                        row = b_start + (och // dim) * krows * kcols * kchs + krow * kcols * kchs + kcol * kchs + kch
                        off = (krow * kernel_dim * in_channels + kcol * in_channels + kch) * weight_stride + och
                        out.append(("mvin2", (off, row, cols, rows), GEN_LD, -1, R_W))
    last_load = len(out) - 1
    # 4. execute: och / krow / kcol (pixels at a time) / kch, then b / orow / ocol.
    # (row addresses summed a loop level at a time: the bulk of a template's entries)
    starts: list[int] = []  # first entry of each (och, krow, kcol, kch) step (for alike_segments)
    c_flags = acc_addr(0, accumulate=True)
    ocol_rows = [(ocol, min(dim, ocols - ocol)) for ocol in range(0, ocols, dim)]  # (pixels per row block)
    for och in range(0, pochs, dim):
        jc = min(dim, pochs - och)
        c_och = acc_base + (och // dim) * batches * orows * ocols
        for krow in range(krows):
            for kcol in range(0, kcols, pixels_max):
                pixels = min(pixels_max, kcols - kcol)
                for kch in range(0, kchs, dim):
                    starts.append(len(out))
                    kk = pixels * min(dim, kchs - kch)
                    b_row = b_start + (och // dim) * krows * kcols * kchs + krow * kcols * kchs + kcol * kchs + kch
                    a_kch = a_start + (kch // dim) * batches * dirows * dicols
                    new_weights = True
                    for b in range(batches):
                        for orow in range(orows):
                            c_orow = c_och + b * orows * ocols + orow * ocols
                            a_irow = a_kch + b * dirows * dicols + ((orow * stride + krow) >> ds) * dicols
                            for ocol, ir in ocol_rows:
                                a_row = a_irow + ((ocol * stride + kcol) >> ds)
                                pre = (b_row if new_weights else GARBAGE, c_flags | (c_orow + ocol), jc, kk, jc, ir)
                                op = "compute_preloaded" if new_weights else "compute_accumulated"
                                out.append(("preload", pre, GEN_EX, last_load, 0))
                                out.append((op, (a_row, GARBAGE, kk, ir, jc, ir), GEN_EX, last_load, 0))
                                new_weights = False
    starts.append(len(out))
    segments = alike_segments(out, starts, cfg.row_mask)
    last_ex = len(out) - 1
    # 5. store (after the whole execute stream has been issued: LoopConvSt waits for it).
    if has_out:
        if flags["no_pool"]:
            for b in range(batches):
                for orow in range(orows):
                    for ocol in range(0, ocols, dim):
                        rows = min(dim, ocols - ocol)
                        for och in range(0, pochs, dim):
                            cols = min(dim, pochs - och)
                            c_row = (
                                acc_base
                                + (och // dim) * batches * orows * ocols
                                + b * orows * ocols
                                + orow * ocols
                                + ocol
                            )
                            off = (b * out_row_dim * out_col_dim + orow * out_col_dim + ocol) * out_stride + och
                            out.append(("mvout", (off, IS_ACC | c_row, cols, rows), GEN_ST, last_ex, R_OUT))
        else:
            pool_out_rows, pool_out_cols = r["pool_out_row_dim"], r["pool_out_col_dim"]
            act = flags["act"]
            pool_cfg = (
                out_stride,
                act,
                st_scale_bits,
                r["pool_stride"],
                r["pool_size"],
                pool_out_cols,
                r["porows"],
                r["pocols"],
                orows,
                ocols,
                r["pupad"],
                r["plpad"],
            )
            out.append(("config_st", pool_cfg, GEN_ST, last_ex, 0))
            for b in range(batches):
                for poch in range(0, pochs, dim):
                    ch = min(dim, pochs - poch)
                    c_row = acc_base + (poch // dim) * batches * orows * ocols + b * orows * ocols
                    off = b * pool_out_rows * pool_out_cols * out_stride + poch
                    out.append(("mvout", (off, IS_ACC | c_row, ch, 0), GEN_ST, last_ex, R_OUT))
            out.append(("config_st", (out_stride, act, st_scale_bits, 0, 0, 0, 0, 0, 0, 0, 0, 0), GEN_ST, last_ex, 0))
    return Template(tuple(out), segments)
