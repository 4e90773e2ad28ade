"""Gemmini's program text form: mnemonics, operand order, queues, and the local-address layout.

The operand order is the contract shared by the Gemmini modules, read from the ISA doc's `instr`
signatures: field-level operands, i.e. what `gemmini.h` packs into rs1/rs2.
"""

from __future__ import annotations

from zomboss.errors import ZombossError
from zomboss.knowledge import load_kb
from zomboss.program import Instr
from zomboss.target import doc_path

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
_DOC = load_kb(doc_path("gemmini"))  # the doc is the single statement of the program text form

# Operand order of every instruction: the doc's `instr` signatures.
OPERANDS: dict[str, tuple[str, ...]] = {n: tuple(o.name for o in i.operands) for n, i in _DOC.instrs.items()}

MVINS = {"mvin": 0, "mvin2": 1, "mvin3": 2}  # mnemonic -> config_ld state id
LOOP_WS_CONFIGS = ("loop_ws_bounds", "loop_ws_addrs_ab", "loop_ws_addrs_dc", "loop_ws_strides_ab", "loop_ws_strides_dc")
LOOP_CONV_CONFIGS = tuple(f"loop_conv_ws_config{i}" for i in range(1, 7))

# Reservation-station queue of each instruction: the doc's `unit` (load/ex/store); None: not
# queued (flush and fence act in the front end; loop words feed the unroller FSMs).
LD, EX, ST = 0, 1, 2
QUEUE: dict[str, int | None] = {n: {"load": LD, "ex": EX, "store": ST}.get(i.unit) for n, i in _DOC.instrs.items()}


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
