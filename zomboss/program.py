"""Target-neutral program IR: a flat list of instructions with integer operands.

Both targets' textual forms (PLENA's own assembly, Gemmini's documented text form of
the RoCC stream) are `MNEMONIC op, op, ...` lines; the operand order and kinds come
from the ISA doc, so one reader serves every target.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from zomboss.errors import ZombossError


@dataclass(frozen=True, slots=True)
class Instr:
    """One instruction: mnemonic and integer operands in doc order.

    Register operands hold the register index; `line` is the 1-based source line (0 when
    generated in memory).
    """

    op: str
    args: tuple[int, ...] = ()
    line: int = 0

    def text(self, reg_prefix: Mapping[int, str] | None = None) -> str:
        """Assembly text; `reg_prefix` maps operand positions to register prefixes."""
        parts = []
        for i, a in enumerate(self.args):
            pre = (reg_prefix or {}).get(i)
            parts.append(f"{pre}{a}" if pre else str(a))
        return f"{self.op} {', '.join(parts)}".rstrip()


@dataclass(frozen=True, slots=True)
class Program:
    """An instruction sequence for one target, plus free-form metadata (layout, sizes)."""

    target: str
    instrs: tuple[Instr, ...]
    meta: Mapping[str, object] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.instrs)

    def digest(self) -> str:
        """A short content hash of the instruction stream (golden tables, de-duplication)."""
        h = hashlib.sha256()
        for i in self.instrs:
            h.update(f"{i.op} {','.join(map(str, i.args))}\n".encode())
        return h.hexdigest()[:16]


class ProgramSyntaxError(ZombossError):
    """A program text line that cannot be read."""


_COMMENT = re.compile(r"(;|//|#).*$")
_MNEMONIC = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REG = re.compile(r"^([A-Za-z]+)(\d+)$")


MAX_OPERAND_BITS = 128  # an operand beyond +-2**128 is refused (the expression limit, expr.MAX_BITS)


def parse_operand(tok: str, reg_prefixes: Iterable[str]) -> tuple[int, str | None]:
    """Parse one operand token into (value, register prefix or None)."""
    t = tok.strip()
    if len(t) > MAX_OPERAND_BITS + 3:  # longer than any number within the limit, in any base
        raise ValueError(f"operand {t[:16]}... is beyond the {MAX_OPERAND_BITS}-bit limit")
    m = _REG.match(t)
    if m and m.group(1) in set(reg_prefixes):
        return int(m.group(2)), m.group(1)
    try:
        v = int(t, 0)
    except ValueError:
        raise ValueError(f"cannot read operand {tok.strip()[:40]!r}") from None
    if abs(v).bit_length() > MAX_OPERAND_BITS:
        raise ValueError(f"operand {t[:16]}{'...' if len(t) > 16 else ''} is beyond the {MAX_OPERAND_BITS}-bit limit")
    return v, None


def parse_lines(text: str, path: str, reg_prefixes: Iterable[str]) -> list[tuple[Instr, tuple[str | None, ...]]]:
    """Read `MNEMONIC op, op` lines; returns each instruction with the register prefix
    seen at each operand position (None for immediates), for kind checking by the caller."""
    prefixes = tuple(reg_prefixes)
    out: list[tuple[Instr, tuple[str | None, ...]]] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = _COMMENT.sub("", raw).strip()
        if not line:
            continue
        parts = line.split(None, 1)
        head, rest = parts[0], (parts[1] if len(parts) > 1 else "")
        if not _MNEMONIC.match(head):
            raise ProgramSyntaxError(f"{path}:{lineno}:1: expected a mnemonic, got {head[:40]!r}")
        args: list[int] = []
        kinds: list[str | None] = []
        rest = rest.strip()
        if rest:
            col = len(raw) - len(raw.lstrip()) + len(head) + 2
            for tok in rest.split(","):
                try:
                    v, k = parse_operand(tok, prefixes)
                except ValueError as e:
                    raise ProgramSyntaxError(f"{path}:{lineno}:{col}: {e}") from None
                args.append(v)
                kinds.append(k)
                col += len(tok) + 1
        out.append((Instr(head, tuple(args), lineno), tuple(kinds)))
    return out
