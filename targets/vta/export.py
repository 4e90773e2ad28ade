"""VTA's native form: 128-bit instruction words (two little-endian uint64, lo first) and
32-bit micro-ops, with the field positions of the doc's layouts (mem_insn, gemm_insn,
alu_insn, uop_word, i.e. hw_spec.h), and the decoder that reads them back."""

from __future__ import annotations

from pathlib import Path

from zomboss.errors import ZombossError
from zomboss.knowledge import KB
from zomboss.program import Instr, Program
from zomboss.util import atomic_write, read_bytes

OPCODE = {"LOAD": 0, "STORE": 1, "GEMM": 2, "FINISH": 3, "ALU": 4}
MEMORY_TYPE = {"UOP": 0, "WGT": 1, "INP": 2, "ACC": 3, "OUT": 4}
LAYOUT = {"LOAD": "mem_insn", "STORE": "mem_insn", "GEMM": "gemm_insn", "ALU": "alu_insn", "FINISH": "gemm_insn"}


def _kind(op: str) -> tuple[str, str]:
    head, _, mem = op.partition("_")
    return head, mem or ("OUT" if head == "STORE" else "")


def encode(kb: KB, ins: Instr) -> int:
    head, mem = _kind(ins.op)
    bits = kb.layouts[LAYOUT[head]].bits
    fields = {"opcode": OPCODE[head], **({"memory_type": MEMORY_TYPE[mem]} if mem else {})}
    fields |= {o.name: a for o, a in zip(kb.instrs[ins.op].operands, ins.args, strict=True)}
    word = 0
    for name, v in fields.items():
        hi, lo = bits[name]
        word |= (v & ((1 << (hi - lo + 1)) - 1)) << lo
    return word


def decode(kb: KB, word: int) -> Instr:
    opcode = word & 7
    head = next((h for h, c in OPCODE.items() if c == opcode), None)
    if head is None:
        raise ZombossError(f"instruction word {word:032x}: unknown opcode {opcode}")
    bits = kb.layouts[LAYOUT[head]].bits

    def field(name: str, signed: bool = False) -> int:
        hi, lo = bits[name]
        v = (word >> lo) & ((1 << (hi - lo + 1)) - 1)
        return v - (1 << (hi - lo + 1)) if signed and v >> (hi - lo) else v

    op = head
    if head in ("LOAD", "STORE"):
        mem = next(m for m, c in MEMORY_TYPE.items() if c == field("memory_type"))
        op = f"LOAD_{mem}" if head == "LOAD" else "STORE"
    return Instr(op, tuple(field(o.name, o.name == "imm") for o in kb.instrs[op].operands))


def write(kb: KB, program: Program, out: Path) -> list[Path]:
    """`<out>.bin` (instructions) and `<out>.uop.bin` (the micro-op kernels)."""
    words = b"".join(encode(kb, i).to_bytes(16, "little") for i in program.instrs)
    ins_path, uop_path = Path(str(out) + ".bin"), Path(str(out) + ".uop.bin")
    atomic_write(ins_path, words)
    atomic_write(uop_path, b"".join(bytes(d) for _, d in program.meta.get("dram", ())))  # type: ignore[attr-defined]
    return [ins_path, uop_path]


def read(kb: KB, path: Path) -> list[Instr]:
    data = read_bytes(path, "a VTA instruction file")
    if len(data) % 16:
        raise ZombossError(f"{path}: {len(data)} bytes is not a whole number of 16-byte instructions")
    return [decode(kb, int.from_bytes(data[i : i + 16], "little")) for i in range(0, len(data), 16)]
