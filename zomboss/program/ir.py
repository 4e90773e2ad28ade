"""Target-neutral program IR: a flat list of instructions with integer operands, and
optionally the loop nest the lowering emitted it as.

A lowering that emits counted loops may keep them (`Program.from_nest`): a `Loop` builds each
iteration's items on demand and says which iterations are *alike* (the same instructions up to
address offsets), so a timing model can extrapolate over runs of alike iterations
(`zomboss.steady`) without materialising them, while `instrs` still yields every instruction,
in order, for functional simulation, checking, export and digests.

Both targets' textual forms (PLENA's own assembly, Gemmini's documented text form of
the RoCC stream) are `MNEMONIC op, op, ...` lines; the operand order and kinds come
from the ISA doc, so one reader serves every target.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import overload

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


@dataclass(frozen=True, slots=True, eq=False)
class Loop:
    """`trips` iterations of a counted loop; iteration t's items are `body(t)`.

    Iterations with equal `alike(t)` keys must emit the same instructions up to address
    operands (so the same number of them); the lowering, which knows its own index arithmetic,
    says where edge tiles, first/last reduction steps and padding make iterations differ.
    """

    trips: int
    body: Callable[[int], Sequence[Item]]
    alike: Callable[[int], Hashable]


Item = Instr | Loop


def flatten(items: Iterable[Item]) -> Iterator[Instr]:
    """Every instruction of a nest, in execution order."""
    for it in items:
        if isinstance(it, Instr):
            yield it
        else:
            for t in range(it.trips):
                yield from flatten(it.body(t))


def count(items: Sequence[Item]) -> int:
    """Instructions in a nest, building one iteration per run of alike iterations."""
    n = 0
    for it in items:
        if isinstance(it, Instr):
            n += 1
            continue
        start, key = 0, it.alike(0) if it.trips else None
        for t in range(1, it.trips + 1):
            k = it.alike(t) if t < it.trips else object()
            if k != key:
                n += (t - start) * count(it.body(start))
                start, key = t, k
    return n


class Flat(Sequence[Instr]):
    """The instructions of a nest as a sequence, materialised on first indexing; iterating
    streams them without holding them all."""

    def __init__(self, nest: Sequence[Item]) -> None:
        self._nest = nest
        self._len: int | None = None
        self._all: tuple[Instr, ...] | None = None

    def __len__(self) -> int:
        if self._len is None:
            self._len = len(self._all) if self._all is not None else count(self._nest)
        return self._len

    def __iter__(self) -> Iterator[Instr]:
        return iter(self._all) if self._all is not None else flatten(self._nest)

    @overload
    def __getitem__(self, i: int) -> Instr: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Instr]: ...
    def __getitem__(self, i: int | slice) -> Instr | Sequence[Instr]:
        if self._all is None:
            self._all = tuple(flatten(self._nest))
        return self._all[i]


@dataclass(frozen=True, slots=True)
class Program:
    """An instruction sequence for one target, plus free-form metadata (layout, sizes), and
    the loop nest it came from when the lowering kept one."""

    target: str
    instrs: Sequence[Instr]
    meta: Mapping[str, object] = field(default_factory=dict)
    nest: tuple[Item, ...] | None = None

    @classmethod
    def from_nest(cls, target: str, nest: Sequence[Item], meta: Mapping[str, object] | None = None) -> Program:
        items = tuple(nest)
        return cls(target, Flat(items), dict(meta or {}), items)

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
