"""Gemmini's program text form: mnemonics, operand order, queues, and the local-address layout.

The operand order is the contract shared by the Gemmini modules (and written in the ISA doc's
`instr` signatures): field-level operands, i.e. what `gemmini.h` packs into rs1/rs2.
"""

from __future__ import annotations

from zomboss.errors import ZombossError
from zomboss.program import Instr

# --- local address layout (reference §2.1; `layout local_addr` in the doc) ---------------
IS_ACC = 1 << 31
ACCUMULATE = 1 << 30
READ_FULL = 1 << 29
GARBAGE_BIT = 1 << 14
ROW_MASK = (1 << 14) - 1
GARBAGE = 0xFFFFFFFF  # gemmini.h GARBAGE_ADDR


def sp_addr(row: int) -> int:
    """A scratchpad row address."""
    return row


def acc_addr(row: int, accumulate: bool = False, read_full: bool = False) -> int:
    """An accumulator row address with its write-accumulate / full-width-read flags."""
    return IS_ACC | (ACCUMULATE if accumulate else 0) | (READ_FULL if read_full else 0) | row


# --- mnemonics ---------------------------------------------------------------------------
OPERANDS: dict[str, tuple[str, ...]] = {
    "config_ex": (
        "dataflow",
        "act",
        "a_transpose",
        "b_transpose",
        "a_stride",
        "c_stride",
        "sys_shift",
        "acc_scale_bits",
        "set_only_strides",
    ),
    "config_ld": ("id", "stride", "shrunk", "block_stride", "pixel_repeats", "scale_bits"),
    "config_st": (
        "stride",
        "act",
        "scale_bits",
        "pool_stride",
        "pool_size",
        "pool_out_dim",
        "porows",
        "pocols",
        "orows",
        "ocols",
        "upad",
        "lpad",
    ),
    "mvin": ("dram", "local", "cols", "rows"),
    "mvin2": ("dram", "local", "cols", "rows"),
    "mvin3": ("dram", "local", "cols", "rows"),
    "mvout": ("dram", "local", "cols", "rows"),
    "preload": ("bd", "c", "bd_cols", "bd_rows", "c_cols", "c_rows"),
    "compute_preloaded": ("a", "bd", "a_cols", "a_rows", "bd_cols", "bd_rows"),
    "compute_accumulated": ("a", "bd", "a_cols", "a_rows", "bd_cols", "bd_rows"),
    "flush": ("skip",),
    "fence": (),
    "loop_ws_bounds": ("i", "j", "k", "pad_i", "pad_j", "pad_k"),
    "loop_ws_addrs_ab": ("a", "b"),
    "loop_ws_addrs_dc": ("d", "c"),
    "loop_ws_strides_ab": ("a_stride", "b_stride"),
    "loop_ws_strides_dc": ("d_stride", "c_stride"),
    "loop_ws": (
        "ex_accumulate",
        "full_c",
        "low_d",
        "act",
        "a_spad_id",
        "b_spad_id",
        "a_transpose",
        "b_transpose",
        "is_resadd",
    ),
    "loop_conv_ws_config1": (
        "batch_size",
        "in_row_dim",
        "in_channels",
        "out_channels",
        "out_row_dim",
        "pool_out_row_dim",
        "out_col_dim",
        "stride",
        "padding",
    ),
    "loop_conv_ws_config2": (
        "kernel_dim",
        "pool_out_col_dim",
        "pool_size",
        "pool_stride",
        "pool_padding",
        "batches",
        "porows",
        "pocols",
        "pochs",
    ),
    "loop_conv_ws_config3": ("krows", "kcols", "kchs", "lpad", "rpad", "upad", "dpad", "plpad", "in_col_dim"),
    "loop_conv_ws_config4": (
        "orows",
        "prpad",
        "pupad",
        "pdpad",
        "kernel_dilation",
        "in_stride",
        "weight_stride",
        "out_stride",
        "ocols",
    ),
    "loop_conv_ws_config5": ("weights", "output"),
    "loop_conv_ws_config6": ("bias", "input"),
    "loop_conv_ws": (
        "no_bias",
        "wrot180",
        "trans_output_1203",
        "trans_weight_1203",
        "trans_weight_0132",
        "trans_input_3120",
        "dw",
        "max_pixels_per_row",
        "a_spad_id",
        "b_spad_id",
        "no_pool",
        "downsample",
        "input_dilated",
        "act",
    ),
}

MVINS = {"mvin": 0, "mvin2": 1, "mvin3": 2}  # mnemonic -> config_ld state id
LOOP_WS_CONFIGS = ("loop_ws_bounds", "loop_ws_addrs_ab", "loop_ws_addrs_dc", "loop_ws_strides_ab", "loop_ws_strides_dc")
LOOP_CONV_CONFIGS = tuple(f"loop_conv_ws_config{i}" for i in range(1, 7))

# Reservation-station queue of each instruction (reference §3 table); None: not queued.
LD, EX, ST = 0, 1, 2
QUEUE: dict[str, int | None] = {
    "config_ld": LD,
    "mvin": LD,
    "mvin2": LD,
    "mvin3": LD,
    "config_ex": EX,
    "preload": EX,
    "compute_preloaded": EX,
    "compute_accumulated": EX,
    "config_st": ST,
    "mvout": ST,
    "flush": None,
    "fence": None,
    **{m: None for m in (*LOOP_WS_CONFIGS, "loop_ws", *LOOP_CONV_CONFIGS, "loop_conv_ws")},
}


class UnknownInstruction(ZombossError):
    """A mnemonic Gemmini does not have, or the wrong number of operands."""


def check_shape(ins: Instr) -> None:
    """Reject unknown mnemonics and operand counts (the doc's signatures say the same)."""
    names = OPERANDS.get(ins.op)
    if names is None:
        raise UnknownInstruction(f"line {ins.line}: unknown Gemmini instruction {ins.op!r}")
    if len(ins.args) != len(names):
        raise UnknownInstruction(
            f"line {ins.line}: {ins.op} takes {len(names)} operand(s) ({', '.join(names)}), got {len(ins.args)}"
        )
