"""Export a Gemmini kernel as a self-contained bare-metal C test (gemmini-rocc-tests style).

The test includes `gemmini_testutils.h`, fills its inputs with a small LCG, runs the kernel
between two `read_cycles()` calls, recomputes the result with a CPU loop (`ACC_SCALE` of
`gemmini_params.h`, then ReLU) and prints `Correct result` or `Wrong result`.

The kernel is the Program itself, one gemmini.h macro per instruction: `config_ex/ld/st`
through `gemmini_extended3_config_ex`, `gemmini_extended5_config_ld` and
`gemmini_extended2_config_st`; `gemmini_extended_mvin/mvin2/mvin3/mvout`,
`gemmini_extended_preload`, `gemmini_extended_compute_preloaded/accumulated`; each run of
loop-configuration instructions as one `gemmini_loop_ws` / `gemmini_loop_conv_ws` call (or,
when a program reuses loop registers, the raw `ROCC_INSTRUCTION_RS1_RS2` packing of those
macros); `gemmini_fence()`. Straight-line code up to `STRAIGHT_LIMIT` instructions; longer
streams become a table of operands replayed by a switch over the same macros, so a 500k
instruction kernel does not become a 500k-statement function.

DRAM placement is kept: the simulator's DRAM addresses map into one 64-byte-aligned arena
at the same relative offsets, so DMA alignment (and thus timing) matches the simulation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from zomboss.targets.gemmini.asm import LOOP_CONV_CONFIGS, LOOP_WS_CONFIGS, operands
from zomboss.targets.gemmini.issue import STRAIGHT_LIMIT, form_of
from zomboss.targets.gemmini.suite import conv_out_dims

from zomboss.errors import ZombossError
from zomboss.program import Instr, Program
from zomboss.util import atomic_write
from zomboss.workload import Workload

# operand positions holding DRAM byte addresses (translated into the arena)
_DRAM_OPERANDS: dict[str, tuple[int, ...]] = {
    "mvin": (0,), "mvin2": (0,), "mvin3": (0,), "mvout": (0,),
    "loop_ws_addrs_ab": (0, 1), "loop_ws_addrs_dc": (0, 1),
    "loop_conv_ws_config5": (0, 1), "loop_conv_ws_config6": (0, 1),
}  # fmt: skip


class ExportError(ZombossError):
    """A program or workload the C exporter cannot express."""


@dataclass(frozen=True)
class CBuffer:
    """One operand array of the test: C declaration shape, element type and DRAM address."""

    name: str
    ctype: str  # elem_t or acc_t
    dims: tuple[int, ...]
    addr: int
    init: str  # "lcg8", "lcg_bias" or "zero"

    @property
    def nbytes(self) -> int:
        n = 1
        for x in self.dims:
            n *= x
        return n * (4 if self.ctype == "acc_t" else 1)


def buffers_for(wl: Workload, addrs: Mapping[str, int]) -> list[CBuffer]:
    """The arrays of a workload's test, placed at the program's DRAM addresses."""
    if wl.op == "matmul":
        M, N, K = wl["M"], wl["N"], wl["K"]  # noqa: N806 - the workload's names
        bufs = [
            CBuffer("zb_A", "elem_t", (M, K), addrs["a"], "lcg8"),
            CBuffer("zb_B", "elem_t", (K, N), addrs["b"], "lcg8"),
            CBuffer("zb_C", "elem_t", (M, N), addrs["c"], "zero"),
        ]
        if wl["bias"]:
            bufs.append(CBuffer("zb_bias", "acc_t", (N,), addrs["bias"], "lcg_bias"))
        return bufs
    if wl.op == "conv":
        oh, ow = conv_out_dims(wl)
        bufs = [
            CBuffer("zb_input", "elem_t", (wl["N"], wl["H"], wl["W"], wl["C"]), addrs["input"], "lcg8"),
            CBuffer("zb_weights", "elem_t", (wl["R"], wl["S"], wl["C"], wl["K"]), addrs["weights"], "lcg8"),
            CBuffer("zb_output", "elem_t", (wl["N"], oh, ow, wl["K"]), addrs["output"], "zero"),
        ]
        if wl["bias"]:
            bufs.append(CBuffer("zb_bias", "acc_t", (wl["K"],), addrs["bias"], "lcg_bias"))
        return bufs
    raise ExportError(f"no C export for op {wl.op!r}")


def c_source(
    wl: Workload,
    program: Program,
    addrs: Mapping[str, int],
    scale_bits: int,
    *,
    straight_limit: int = STRAIGHT_LIMIT,
) -> str:
    """The C text of the test (deterministic: golden tests compare it byte for byte)."""
    bufs = buffers_for(wl, addrs)
    lo = min(b.addr for b in bufs)
    if lo % 64:
        raise ExportError(f"the lowest buffer address {lo:#x} is not 64-byte aligned")
    hi = max(b.addr + b.nbytes for b in bufs)
    arena = _Arena(lo, hi)
    straight = form_of(len(program.instrs), straight_limit) == "straight"
    out = _prelude(wl, bufs, arena, scale_bits, table=not straight)
    out.append("static void kernel(void) {")
    if straight:
        out.extend("  " + s for s in _statements(program.instrs, arena))
    else:
        out.extend(_table_kernel(program.instrs, arena))
    out.append("}")
    out.extend(_main(wl, bufs))
    return "\n".join(out) + "\n"


def export_c(
    wl: Workload,
    program: Program,
    path: Path,
    addrs: Mapping[str, int],
    scale_bits: int,
    *,
    straight_limit: int = STRAIGHT_LIMIT,
) -> Path:
    """Write the test to `path` (see `c_source`; `straight_limit` 0 forces the table form)."""
    path = Path(path)
    atomic_write(path, c_source(wl, program, addrs, scale_bits, straight_limit=straight_limit))
    return path


# ---------------------------------------------------------------------------- addresses


class _Arena:
    """Maps simulator DRAM addresses into the C arena `dram[]`."""

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi

    def expr(self, addr: int) -> str:
        if self.lo <= addr < self.hi:
            return f"(uint64_t)(dram + {addr - self.lo})"
        return str(addr)  # NULL (0) or a flag value such as loop_conv_ws's dummy bias

    def code(self, addr: int) -> int:
        """Table encoding: 0 stays 0, arena addresses become offset + 1, others get bit 31."""
        if self.lo <= addr < self.hi:
            return addr - self.lo + 1
        if addr >= 1 << 31:
            raise ExportError(f"DRAM operand {addr:#x} is outside the exported buffers")
        return addr | (1 << 31) if addr else 0


# ---------------------------------------------------------------------------- statements


def _f32(bits: int) -> str:
    return f"zb_f32(0x{bits & 0xFFFFFFFF:08x}u)"


def _hex(v: int) -> str:
    return f"0x{v:x}" if v > 9 else str(v)


_SIMPLE: dict[str, Callable[[Sequence[str]], str]] = {
    "config_ex": lambda a: (
        f"gemmini_extended3_config_ex({a[0]}, {a[1]}, {a[6]}, {a[7]}, {a[5]}, {a[4]}, {a[2]}, {a[3]}, {a[8]});"
    ),
    "config_ld": lambda a: f"gemmini_extended5_config_ld({a[1]}, {a[5]}, {a[2]}, {a[3]}, {a[4]}, {a[0]});",
    "config_st": lambda a: f"gemmini_extended2_config_st({', '.join(a)});",
    "mvin": lambda a: f"gemmini_extended_mvin({', '.join(a)});",
    "mvin2": lambda a: f"gemmini_extended_mvin2({', '.join(a)});",
    "mvin3": lambda a: f"gemmini_extended_mvin3({', '.join(a)});",
    "mvout": lambda a: f"gemmini_extended_mvout({', '.join(a)});",
    "preload": lambda a: f"gemmini_extended_preload({', '.join(a)});",
    "compute_preloaded": lambda a: f"gemmini_extended_compute_preloaded({', '.join(a)});",
    "compute_accumulated": lambda a: f"gemmini_extended_compute_accumulated({', '.join(a)});",
    "flush": lambda a: f"gemmini_flush({a[0]});",
    "fence": lambda a: "gemmini_fence();",
}

_FLOAT_OPERANDS = {"config_ex": (7,), "config_ld": (5,), "config_st": (2,)}
_LOCAL_OPERANDS = {
    "mvin": (1,), "mvin2": (1,), "mvin3": (1,), "mvout": (1,), "preload": (0, 1),
    "compute_preloaded": (0, 1), "compute_accumulated": (0, 1),
}  # fmt: skip


def _operands(ins: Instr, arena: _Arena) -> list[str]:
    dram = _DRAM_OPERANDS.get(ins.op, ())
    flt = _FLOAT_OPERANDS.get(ins.op, ())
    loc = _LOCAL_OPERANDS.get(ins.op, ())
    out = []
    for i, v in enumerate(ins.args):
        if i in dram:
            out.append(arena.expr(v))
        elif i in flt:
            out.append(_f32(v))
        elif i in loc:
            out.append(f"0x{v:x}")
        else:
            out.append(str(v))
    return out


def _statements(instrs: Sequence[Instr], arena: _Arena) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(instrs):
        ins = instrs[i]
        if ins.op in _SIMPLE:
            out.append(_SIMPLE[ins.op](_operands(ins, arena)))
            i += 1
            continue
        group, regs = _loop_group(instrs, i)
        if group is not None:
            out.append(group(regs, arena))
            i += len(LOOP_WS_CONFIGS if group is _loop_ws_call else LOOP_CONV_CONFIGS) + 1
            continue
        out.append(_raw_rocc(ins, arena.expr))
        i += 1
    return out


def _loop_group(
    instrs: Sequence[Instr], i: int
) -> tuple[Callable[[dict[str, int], _Arena], str] | None, dict[str, int]]:
    """A complete, canonically ordered loop_ws / loop_conv_ws configuration run starting at i."""
    for configs, run, call in (
        (LOOP_WS_CONFIGS, "loop_ws", _loop_ws_call),
        (LOOP_CONV_CONFIGS, "loop_conv_ws", _loop_conv_call),
    ):
        seq = [*configs, run]
        if [x.op for x in instrs[i : i + len(seq)]] == seq:
            regs: dict[str, int] = {}
            for ins in instrs[i : i + len(seq)]:
                regs.update(zip(operands()[ins.op], ins.args, strict=True))
            return call, regs
    return None, {}


def _loop_ws_call(r: dict[str, int], arena: _Arena) -> str:
    dram = {"a", "b", "d", "c"}
    names = [
        "i",
        "j",
        "k",
        "pad_i",
        "pad_j",
        "pad_k",
        "a",
        "b",
        "d",
        "c",
        "a_stride",
        "b_stride",
        "d_stride",
        "c_stride",
        "a_transpose",
        "b_transpose",
        "full_c",
        "low_d",
        "ex_accumulate",
        "act",
        "a_spad_id",
        "b_spad_id",
        "is_resadd",
    ]
    args = [arena.expr(r[n]) if n in dram else str(r[n]) for n in names]
    return f"gemmini_loop_ws({', '.join(args)});"


def _loop_conv_call(r: dict[str, int], arena: _Arena) -> str:
    dram = {"weights", "output", "bias", "input"}
    names = [
        "batch_size",
        "in_row_dim",
        "in_col_dim",
        "in_channels",
        "out_channels",
        "out_row_dim",
        "out_col_dim",
        "pool_out_row_dim",
        "pool_out_col_dim",
        "stride",
        "padding",
        "kernel_dim",
        "kernel_dilation",
        "pool_size",
        "pool_stride",
        "pool_padding",
        "batches",
        "porows",
        "pocols",
        "pochs",
        "krows",
        "kcols",
        "kchs",
        "lpad",
        "rpad",
        "upad",
        "dpad",
        "plpad",
        "prpad",
        "pupad",
        "pdpad",
        "orows",
        "ocols",
        "weights",
        "output",
        "bias",
        "input",
        "no_bias",
        "no_pool",
        "downsample",
        "wrot180",
        "input_dilated",
        "act",
        "trans_output_1203",
        "trans_weight_1203",
        "trans_weight_0132",
        "trans_input_3120",
        "max_pixels_per_row",
        "in_stride",
        "weight_stride",
        "out_stride",
        "dw",
        "a_spad_id",
        "b_spad_id",
    ]
    args = [arena.expr(r[n]) if n in dram else str(r[n]) for n in names]
    return f"gemmini_loop_conv_ws({', '.join(args)});"


# raw packing of the loop configuration instructions (gemmini.h gemmini_loop_ws / gemmini_loop_conv_ws)
_FUNCT = {
    "loop_ws": "k_LOOP_WS", "loop_ws_bounds": "k_LOOP_WS_CONFIG_BOUNDS", "loop_ws_addrs_ab": "k_LOOP_WS_CONFIG_ADDRS_AB",
    "loop_ws_addrs_dc": "k_LOOP_WS_CONFIG_ADDRS_DC", "loop_ws_strides_ab": "k_LOOP_WS_CONFIG_STRIDES_AB",
    "loop_ws_strides_dc": "k_LOOP_WS_CONFIG_STRIDES_DC", "loop_conv_ws": "k_LOOP_CONV_WS",
    **{f"loop_conv_ws_config{i}": f"k_LOOP_CONV_WS_CONFIG_{i}" for i in range(1, 7)},
}  # fmt: skip

# (rs1 fields, rs2 fields) as (operand name, shift)
_PACK: dict[str, tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]] = {
    "loop_ws_bounds": ((("pad_k", 32), ("pad_j", 16), ("pad_i", 0)), (("k", 32), ("j", 16), ("i", 0))),
    "loop_ws_addrs_ab": ((("a", 0),), (("b", 0),)),
    "loop_ws_addrs_dc": ((("d", 0),), (("c", 0),)),
    "loop_ws_strides_ab": ((("a_stride", 0),), (("b_stride", 0),)),
    "loop_ws_strides_dc": ((("d_stride", 0),), (("c_stride", 0),)),
    "loop_ws": (
        (("a_spad_id", 18), ("b_spad_id", 16), ("act", 8), ("low_d", 2), ("full_c", 1), ("ex_accumulate", 0)),
        (("is_resadd", 2), ("b_transpose", 1), ("a_transpose", 0)),
    ),
    "loop_conv_ws_config1": (
        (("out_channels", 48), ("in_channels", 32), ("in_row_dim", 16), ("batch_size", 0)),
        (("padding", 56), ("stride", 48), ("out_col_dim", 32), ("pool_out_row_dim", 16), ("out_row_dim", 0)),
    ),
    "loop_conv_ws_config2": (
        (("kernel_dim", 48), ("pool_out_col_dim", 32), ("pool_size", 16), ("pool_stride", 8), ("pool_padding", 0)),
        (("batches", 48), ("porows", 32), ("pocols", 16), ("pochs", 0)),
    ),
    "loop_conv_ws_config3": (
        (("krows", 48), ("kcols", 32), ("kchs", 16), ("lpad", 0)),
        (("rpad", 48), ("upad", 32), ("dpad", 24), ("plpad", 16), ("in_col_dim", 0)),
    ),
    "loop_conv_ws_config4": (
        (("orows", 48), ("prpad", 32), ("pupad", 21), ("pdpad", 10), ("kernel_dilation", 0)),
        (("in_stride", 48), ("weight_stride", 32), ("out_stride", 16), ("ocols", 0)),
    ),
    "loop_conv_ws_config5": ((("weights", 0),), (("output", 0),)),
    "loop_conv_ws_config6": ((("bias", 0),), (("input", 0),)),
    "loop_conv_ws": (
        (("a_spad_id", 18), ("b_spad_id", 16), ("max_pixels_per_row", 8), ("dw", 6), ("trans_input_3120", 5),
         ("trans_weight_0132", 4), ("trans_weight_1203", 3), ("trans_output_1203", 2), ("wrot180", 1), ("no_bias", 0)),
        (("act", 3), ("input_dilated", 2), ("downsample", 1), ("no_pool", 0)),
    ),
}  # fmt: skip


def _raw_rocc(ins: Instr, dram_expr: Callable[[int], str]) -> str:
    if ins.op not in _PACK:
        raise ExportError(f"line {ins.line}: no C form for {ins.op!r}")
    vals = dict(zip(operands()[ins.op], ins.args, strict=True))
    dram = {operands()[ins.op][p] for p in _DRAM_OPERANDS.get(ins.op, ())}

    def word(fields: tuple[tuple[str, int], ...]) -> str:
        if len(fields) == 1 and fields[0][0] in dram:
            return dram_expr(vals[fields[0][0]])
        return _hex(sum(vals[n] << s for n, s in fields))

    rs1, rs2 = _PACK[ins.op]
    return f"ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, {word(rs1)}, {word(rs2)}, {_FUNCT[ins.op]});"


# ---------------------------------------------------------------------------- table replay

_TABLE_OPS = (*_SIMPLE, *_PACK)


def _table_kernel(instrs: Sequence[Instr], arena: _Arena) -> list[str]:
    """A flat uint32 table (opcode, operands...) and a switch that replays it with the macros."""
    words: list[int] = []
    for ins in instrs:
        if ins.op not in _TABLE_OPS:
            raise ExportError(f"line {ins.line}: no C form for {ins.op!r}")
        dram = _DRAM_OPERANDS.get(ins.op, ())
        words.append(_TABLE_OPS.index(ins.op))
        words.extend(arena.code(v) if i in dram else v for i, v in enumerate(ins.args))
    body = [f"  static const uint32_t prog[{len(words)}] = {{"]
    for i in range(0, len(words), 16):
        body.append("    " + ", ".join(str(w) for w in words[i : i + 16]) + ",")
    body.append("  };")
    body.append("  const uint32_t *p = prog, *end = prog + sizeof(prog) / sizeof(prog[0]);")
    body.append("  while (p < end) {")
    body.append("    switch (*p++) {")
    for code, op in enumerate(_TABLE_OPS):
        n = len(operands()[op])
        dram = _DRAM_OPERANDS.get(op, ())
        args = [f"ZB_DRAM(p[{i}])" if i in dram else f"(uint64_t)p[{i}]" for i in range(n)]
        if op in _SIMPLE:
            flt = _FLOAT_OPERANDS.get(op, ())
            args = [f"zb_f32(p[{i}])" if i in flt else a for i, a in enumerate(args)]
            stmt = _SIMPLE[op](args)
        else:
            stmt = _raw_rocc_runtime(op, args)
        body.append(f"      case {code}: {stmt} p += {n}; break;")
    body.append("    }")
    body.append("  }")
    return body


def _raw_rocc_runtime(op: str, args: list[str]) -> str:
    vals = dict(zip(operands()[op], args, strict=True))

    def word(fields: tuple[tuple[str, int], ...]) -> str:
        return " | ".join(f"({vals[n]} << {s})" if s else vals[n] for n, s in fields)

    rs1, rs2 = _PACK[op]
    return f"ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, {word(rs1)}, {word(rs2)}, {_FUNCT[op]});"


# ---------------------------------------------------------------------------- test scaffolding


def _prelude(wl: Workload, bufs: list[CBuffer], arena: _Arena, scale_bits: int, *, table: bool) -> list[str]:
    lines = [
        f"// {wl.id}" + (f" ({wl.spec})" if wl.id != wl.spec else ""),
        "// Generated by zomboss (targets/gemmini/export.py). Bare-metal Gemmini test in the style of",
        "// gemmini-rocc-tests/bareMetalC: LCG inputs, the kernel, a CPU reference, cycle count.",
        "#include <stdint.h>",
        "#include <stddef.h>",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "#ifndef BAREMETAL",
        "#include <sys/mman.h>",
        "#endif",
        '#include "include/gemmini_testutils.h"',
        "",
        f"#define ZB_SCALE_BITS 0x{scale_bits & 0xFFFFFFFF:08x}u",
        f"#define ZB_ACT {wl['relu']}",
        "",
        f"static uint8_t dram[{arena.hi - arena.lo}] __attribute__((aligned(64)));",
    ]
    if table:  # table operands: 0 = NULL, bit 31 = a literal, else arena offset + 1
        lines.append(
            "#define ZB_DRAM(x) ((x) == 0 ? 0 : ((x) >> 31) ? (uint64_t)((x) & 0x7fffffffu) : (uint64_t)(dram + (x) - 1))"
        )
    for b in bufs:
        inner = "".join(f"[{x}]" for x in b.dims[1:])
        lines.append(f"static {b.ctype} (*const {b.name}){inner} = ({b.ctype} (*){inner})(dram + {b.addr - arena.lo});")
    gold_dims = next(b for b in bufs if b.init == "zero").dims
    lines += [
        f"static elem_t zb_gold{''.join(f'[{x}]' for x in gold_dims)};",
        "",
        "static float zb_f32(uint32_t bits) {",
        "  union { uint32_t u; float f; } x;",
        "  x.u = bits;",
        "  return x.f;",
        "}",
        "",
        "static uint32_t zb_state = 1;",
        "static uint32_t zb_lcg(void) {",
        "  zb_state = zb_state * 1664525u + 1013904223u;",
        "  return zb_state;",
        "}",
        "",
        "static void init(void) {",
    ]
    for b in bufs:
        flat = f"(({b.ctype} *){b.name})"
        n = b.nbytes // (4 if b.ctype == "acc_t" else 1)
        if b.init == "lcg8":
            lines.append(f"  for (size_t i = 0; i < {n}; i++) {flat}[i] = (elem_t)(zb_lcg() >> 24);")
        elif b.init == "lcg_bias":
            lines.append(f"  for (size_t i = 0; i < {n}; i++) {flat}[i] = (acc_t)((zb_lcg() >> 16) & 0x3fff) - 0x2000;")
        else:
            lines.append(f"  for (size_t i = 0; i < {n}; i++) {flat}[i] = 0;")
    lines += ["}", ""]
    lines += _reference(wl)
    lines.append("")
    return lines


def _reference(wl: Workload) -> list[str]:
    bias = " + zb_bias[j]" if wl["bias"] and wl.op == "matmul" else ""
    if wl.op == "matmul":
        M, N, K = wl["M"], wl["N"], wl["K"]  # noqa: N806
        return [
            "static void reference(void) {",
            "  const float scale = zb_f32(ZB_SCALE_BITS);",
            f"  for (size_t i = 0; i < {M}; i++)",
            f"    for (size_t j = 0; j < {N}; j++) {{",
            "      int64_t sum = 0;",
            f"      for (size_t k = 0; k < {K}; k++) sum += (int64_t)zb_A[i][k] * zb_B[k][j];",
            f"      acc_t x = (acc_t)(sum{bias});",
            "      elem_t y = ACC_SCALE(x, scale);",
            "      zb_gold[i][j] = (ZB_ACT && y < 0) ? 0 : y;",
            "    }",
            "}",
        ]
    oh, ow = conv_out_dims(wl)
    cbias = "zb_bias[k]" if wl["bias"] else "0"
    return [
        "static void reference(void) {",
        "  const float scale = zb_f32(ZB_SCALE_BITS);",
        f"  for (int n = 0; n < {wl['N']}; n++)",
        f"    for (int oh = 0; oh < {oh}; oh++)",
        f"      for (int ow = 0; ow < {ow}; ow++)",
        f"        for (int k = 0; k < {wl['K']}; k++) {{",
        f"          int64_t sum = {cbias};",
        f"          for (int r = 0; r < {wl['R']}; r++)",
        f"            for (int s = 0; s < {wl['S']}; s++) {{",
        f"              const int h = oh * {wl['stride']} + r - {wl['pad']}, w = ow * {wl['stride']} + s - {wl['pad']};",
        f"              if (h < 0 || h >= {wl['H']} || w < 0 || w >= {wl['W']}) continue;",
        f"              for (int c = 0; c < {wl['C']}; c++) sum += (int64_t)zb_input[n][h][w][c] * zb_weights[r][s][c][k];",
        "            }",
        "          elem_t y = ACC_SCALE((acc_t)sum, scale);",
        "          zb_gold[n][oh][ow][k] = (ZB_ACT && y < 0) ? 0 : y;",
        "        }",
        "}",
    ]


def _main(wl: Workload, bufs: list[CBuffer]) -> list[str]:
    out = next(b for b in bufs if b.init == "zero")
    return [
        "",
        "int main(void) {",
        "#ifndef BAREMETAL",
        "  if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {",
        '    perror("mlockall failed");',
        "    exit(1);",
        "  }",
        "#endif",
        "  init();",
        "  gemmini_flush(0);",
        "  const uint64_t start = read_cycles();",
        "  kernel();",
        "  const uint64_t end = read_cycles();",
        '  printf("Cycles taken: %llu\\n", (unsigned long long)(end - start));',
        "  reference();",
        f"  const elem_t *got = (const elem_t *){out.name}, *want = (const elem_t *)zb_gold;",
        f"  for (size_t i = 0; i < {out.nbytes}; i++) {{",
        "    if (got[i] != want[i]) {",
        '      printf("Wrong result at element %lu: %d != %d\\n", (unsigned long)i, got[i], want[i]);',
        '      printf("Wrong result\\n");',
        "      exit(1);",
        "    }",
        "  }",
        '  printf("Correct result\\n");',
        "  exit(0);",
        "}",
    ]


# ---------------------------------------------------------------------------- program text


def program_text(program: Program, title: str = "") -> str:
    """The program in the contract's text form (`mnemonic op, op`), readable by read_program."""
    lines = [f"# {title}"] if title else []
    lines += [ins.text() for ins in program.instrs]
    return "\n".join(lines) + "\n"
