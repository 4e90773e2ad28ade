"""Gemmini's program text form: reading it, mnemonics, operand order, queues, and the local-address flags.

The operand order is the contract shared by the Gemmini modules, read from the ISA doc's `instr`
signatures: field-level operands, i.e. what `gemmini.h` packs into rs1/rs2. Signatures and units
do not depend on parameters, so they come from the doc's own KB, loaded on first use (never at
import). The width of a local address's row field and the position of its garbage bit do depend
on the parameters: they are `GemminiConfig.row_bits` / `garbage_bit`, read from the KB's layout.
"""

from __future__ import annotations

import functools

from zomboss.targets.gemmini.config import machine_kb

from zomboss.errors import ZombossError
from zomboss.knowledge import KB
from zomboss.program import Instr, Program, ProgramSyntaxError, parse_lines

# --- local address flags (reference §2.1; `layout local_addr` in the doc: bits 31, 30, 29 in
# every configuration, checked against the layout by tests/targets/gemmini/test_isa_doc.py) --
IS_ACC = 1 << 31
ACCUMULATE = 1 << 30
READ_FULL = 1 << 29
GARBAGE = 0xFFFFFFFF  # gemmini.h GARBAGE_ADDR: the all-ones 32-bit local address


def acc_addr(row: int, accumulate: bool = False, read_full: bool = False) -> int:
    """An accumulator row address with its write-accumulate / full-width-read flags."""
    return IS_ACC | (ACCUMULATE if accumulate else 0) | (READ_FULL if read_full else 0) | row


# --- mnemonics ---------------------------------------------------------------------------
MVINS = {"mvin": 0, "mvin2": 1, "mvin3": 2}  # mnemonic -> config_ld state id
LOOP_WS_CONFIGS = ("loop_ws_bounds", "loop_ws_addrs_ab", "loop_ws_addrs_dc", "loop_ws_strides_ab", "loop_ws_strides_dc")
LOOP_CONV_CONFIGS = tuple(f"loop_conv_ws_config{i}" for i in range(1, 7))

# Reservation-station queues (the doc's `unit` load/ex/store); None: not queued (flush and
# fence act in the front end; loop words feed the unroller FSMs).
LD, EX, ST = 0, 1, 2


@functools.cache
def operands() -> dict[str, tuple[str, ...]]:
    """Operand names of every instruction, in order: the doc's `instr` signatures."""
    return {n: tuple(o.name for o in i.operands) for n, i in machine_kb().instrs.items()}


@functools.cache
def queues() -> dict[str, int | None]:
    """Reservation-station queue of every instruction (the doc's `unit`)."""
    return {n: {"load": LD, "ex": EX, "store": ST}.get(i.unit) for n, i in machine_kb().instrs.items()}


class UnknownInstruction(ZombossError):
    """A mnemonic Gemmini does not have, or the wrong number of operands."""


def check_shape(ins: Instr) -> None:
    """Reject unknown mnemonics and operand counts (the doc's signatures say the same)."""
    names = operands().get(ins.op)
    if names is None:
        raise UnknownInstruction(f"line {ins.line}: unknown Gemmini instruction {ins.op!r}")
    if len(ins.args) != len(names):
        raise UnknownInstruction(
            f"line {ins.line}: {ins.op} takes {len(names)} operand(s) ({', '.join(names)}), got {len(ins.args)}"
        )


def parse_program(kb: KB, text: str, path: str = "<program>") -> Program:
    """Parse `mnemonic op, op` lines; mnemonics and operand counts follow the doc's signatures
    (Gemmini has no registers: every operand is an integer)."""
    signatures = {name: tuple(op.name for op in ins.operands) for name, ins in kb.instrs.items()}
    instrs: list[Instr] = []
    for ins, _ in parse_lines(text, path, ()):
        names = signatures.get(ins.op)
        if names is None:
            raise ProgramSyntaxError(f"{path}:{ins.line}: unknown Gemmini instruction {ins.op!r}")
        if len(ins.args) != len(names):
            raise ProgramSyntaxError(
                f"{path}:{ins.line}: {ins.op} takes {len(names)} operand(s) ({', '.join(names)}), got {len(ins.args)}"
            )
        instrs.append(ins)
    return Program("gemmini", tuple(instrs), {"path": path})
