"""An assembly builder for PLENA: named emitters for every instruction the lowerings use.

Operands are stored in program-text order (reference §2.4) as plain integers: register
operands hold the register index (`gp3` -> 3, `f2` -> 2, `a1` -> 1). Keeping the emitters
here means a lowering never spells a mnemonic or an operand order twice.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from zomboss.errors import ZombossError
from zomboss.machine import runs
from zomboss.program import Instr, Item, Loop, Program

IMM18 = 1 << 18
IMM22 = 1 << 22
X = TypeVar("X")
# Immediates that only decide the value a GP register receives (the linear state a timing
# model tracks): two copies differing only there are alike.
_VALUE_IMMEDIATES = {"S_ADDI_INT": 2, "S_LUI_INT": 1}


# Each distinct instruction (op, args) once, with its `shape`: lowerings repeat the same
# instructions many times, and building an Instr costs more than looking one up.
_Known = dict[tuple[str, tuple[int, ...]], tuple[Instr, int]]

MIN_COPIES_SPAN = 256  # instructions: a smaller region is cheaper to simulate than to watch for a steady state


@dataclass(frozen=True, eq=False)
class Structure:
    """What the lowering knows of the program it emitted, kept in its meta (`structure`; the
    instruction stream, and so its digest, is unchanged): the mnemonics it uses and the
    program as a nest of instructions and unrolled regions (`program.Loop`s whose copies with
    equal keys are the same instructions up to the immediates that set address registers, so
    a timing model may extrapolate over runs of them: `run._Steady`). It describes `instrs` only: a
    program rebuilt around other instructions (a test's mutation) has none (`structure`)."""

    instrs: tuple[Instr, ...] = field(repr=False)
    ops: frozenset[str]
    nest: tuple[Item, ...] = field(repr=False)


def structure(program: Program) -> Structure | None:
    s = program.meta.get("structure") if program.meta else None
    return s if isinstance(s, Structure) and s.instrs is program.instrs else None


def shape(op: str, args: tuple[int, ...]) -> int:
    """A hash of one instruction with its value immediates blanked: a copy's alike key is
    the hash of its instructions' shapes (`Asm.copies`)."""
    pos = _VALUE_IMMEDIATES.get(op)
    return hash((op, args if pos is None else args[:pos]))


def nest_ops(items: Sequence[Item]) -> set[str]:
    """The mnemonics of a nest (one copy per run of alike copies: alike copies share them)."""
    ops: set[str] = set()
    for it in items:
        if isinstance(it, Instr):
            ops.add(it.op)
        else:
            for a, _ in runs(it.trips, it.alike):
                ops |= nest_ops(it.body(a))
    return ops


def _lazy(trips: int, emit: Callable[[Asm, int], None], parent: Asm) -> Loop:
    """A loop of `trips` copies of `emit`, each built when first asked for (sharing `parent`'s
    distinct instructions: the copies mostly repeat each other's). A copy's key is
    that of its instructions (as a region's) and, for each loop inside it, its trip count and
    the keys of its first and last copies: a copy that differs only in the middle of a loop
    inside it (an address materialised by one `li` instruction instead of two) counts as alike."""
    built: dict[int, tuple[tuple[Item, ...], Hashable]] = {}

    def build(i: int) -> tuple[tuple[Item, ...], Hashable]:
        got = built.get(i)
        if got is None:
            sub = Asm(lazy=True, known=parent._known)
            emit(sub, i)
            items = tuple(sub._items)
            inner = tuple(
                (it.trips, it.alike(0), it.alike(it.trips - 1)) for it in items if isinstance(it, Loop) and it.trips
            )
            got = built[i] = (items, (sub.key(0, len(sub.instrs)), inner))
        return got

    return Loop(trips, lambda i: build(i)[0], lambda i: build(i)[1])


class Asm:
    """Accumulates instructions; `li` materialises any 32-bit constant like PLENA's `load_large_int`.
    A `lazy` Asm keeps the copies of `repeat` as loops of a nest built on demand (`program.Loop`),
    for programs too large to hold flat."""

    def __init__(self, lazy: bool = False, known: _Known | None = None) -> None:
        self.lazy = lazy
        self.instrs: list[Instr] = []
        self._shapes: list[int] = []  # each instruction's `shape`, for the copies' keys
        self._items: list[Item] = []  # the item list being built (the nest's top level, or a copy)
        self._open_loops = 0
        self._known: _Known = {} if known is None else known

    def emit(self, op: str, *args: int) -> None:
        got = self._known.get((op, args))
        if got is None:
            got = self._known[op, args] = (Instr(op, args), shape(op, args))
        self.instrs.append(got[0])
        self._items.append(got[0])
        self._shapes.append(got[1])

    @property
    def ops(self) -> frozenset[str]:
        """The mnemonics emitted (by this Asm, or by every Asm sharing its table: a lazy Asm's
        copies; `nest_ops` gives a nest's)."""
        return frozenset(op for op, _ in self._known)

    def key(self, start: int, end: int) -> int:
        """The alike key of instructions [start, end): copies with equal keys are the same
        instructions up to their value immediates."""
        return hash(tuple(self._shapes[start:end]))

    def program(self, meta: Mapping[str, object] | None = None) -> Program:
        """The program, with its `Structure` in the meta; a lazy Asm's is its nest (`Program.nest`)."""
        if self.lazy:
            return Program.from_nest("plena", self._items, meta)
        instrs = tuple(self.instrs)
        known = Structure(instrs, self.ops, tuple(self._items))
        return Program("plena", instrs, {**dict(meta or {}), "structure": known})

    def repeat(self, trips: int, emit: Callable[[Asm, int], None]) -> None:
        """`trips` copies of `emit(asm, t)`: unrolled here as a region of copies, or, in a lazy
        Asm, kept as a loop whose copies are built when asked for (`_lazy`)."""
        if self.lazy and trips >= 3 and not self._open_loops:
            self._items.append(_lazy(trips, emit, self))
            return
        for i in self.copies(range(trips)):
            emit(self, i)

    def copies(self, items: Iterable[X]) -> Iterator[X]:
        """Iterate `items`, each iteration's instructions one copy of an unrolled region (a
        `program.Loop` in the structure): the lowering's Python loops keep their structure for
        the timing model.
        Hardware loops may sit inside copies, not copies inside hardware loops."""
        todo = list(items)
        if len(todo) < 3 or self._open_loops:  # too short to extrapolate over; or inside a loop body
            yield from todo
            return
        parent, bodies, first = self._items, [], len(self.instrs)
        bounds = []
        try:
            for x in todo:
                self._items = []
                bounds.append(len(self.instrs))
                yield x
                bodies.append(tuple(self._items))
        finally:
            self._items = parent
        if len(self.instrs) - first < MIN_COPIES_SPAN:
            parent.extend(it for body in bodies for it in body)
            return
        bounds.append(len(self.instrs))
        keys = tuple(self.key(a, b) for a, b in zip(bounds, bounds[1:], strict=False))
        parent.append(Loop(len(bodies), tuple(bodies).__getitem__, keys.__getitem__))

    # -- integer scalar -------------------------------------------------------
    def li(self, rd: int, value: int) -> None:
        """gp[rd] = value: S_ADDI_INT for 12-bit values, else S_LUI_INT (+ S_ADDI_INT for the low 12 bits)."""
        if not 0 <= value < 1 << 32:
            raise ZombossError(f"constant {value} does not fit a 32-bit register")
        upper, lower = value >> 12, value & 0xFFF
        if upper:
            self.emit("S_LUI_INT", rd, upper)
            if lower:
                self.emit("S_ADDI_INT", rd, rd, lower)
        else:
            self.emit("S_ADDI_INT", rd, 0, lower)

    def addi(self, rd: int, rs: int, imm: int) -> None:
        """gp[rd] = gp[rs] + imm (the immediate is unsigned, 18 bits)."""
        if not 0 <= imm < IMM18:
            raise ZombossError(f"S_ADDI_INT immediate {imm} outside 0..{IMM18 - 1}")
        self.emit("S_ADDI_INT", rd, rs, imm)

    def add(self, rd: int, ra: int, rb: int) -> None:
        self.emit("S_ADD_INT", rd, ra, rb)

    def nop(self) -> None:
        self.emit("S_ADDI_INT", 0, 0, 0)

    # -- control --------------------------------------------------------------
    def loop(self, counter: int, n: int) -> _HwLoop:
        """A hardware loop of `n` >= 1 iterations counted in gp[counter] (`with asm.loop(...):`)."""
        if not 1 <= n < IMM22:
            raise ZombossError(f"hardware loop count {n} outside 1..{IMM22 - 1}")
        return _HwLoop(self, counter, n)

    def set_addr(self, areg: int, gp_lo: int) -> None:
        self.emit("C_SET_ADDR_REG", areg, 0, gp_lo)

    def set_scale(self, rs: int) -> None:
        self.emit("C_SET_SCALE_REG", rs)

    def set_stride(self, rs: int) -> None:
        self.emit("C_SET_STRIDE_REG", rs)

    # -- DMA --------------------------------------------------------------------
    def prefetch_m(self, rd_mram: int, rs_off: int, areg: int, rstride: int = 1, prec: int = 0) -> None:
        self.emit("H_PREFETCH_M", rd_mram, rs_off, areg, rstride, prec)

    def prefetch_v(self, rd_vram: int, rs_off: int, areg: int, rstride: int = 1, prec: int = 0) -> None:
        self.emit("H_PREFETCH_V", rd_vram, rs_off, areg, rstride, prec)

    # -- matrix ---------------------------------------------------------------
    def m_mm(self, rs_mram: int, rs_vram: int) -> None:
        self.emit("M_MM", 0, rs_mram, rs_vram)

    def m_tmm(self, rs_vram: int, rs_mram: int) -> None:
        self.emit("M_TMM", 0, rs_vram, rs_mram)

    def m_mm_wo(self, rd: int, rs_stride: int = 0, imm: int = 0) -> None:
        self.emit("M_MM_WO", rd, rs_stride, imm)

    # -- vector -----------------------------------------------------------------
    def v_add_vv(self, rd: int, rs1: int, rs2: int, mask: int = 0) -> None:
        self.emit("V_ADD_VV", rd, rs1, rs2, mask)

    def v_sub_vv(self, rd: int, rs1: int, rs2: int, mask: int = 0) -> None:
        self.emit("V_SUB_VV", rd, rs1, rs2, mask)

    def v_mul_vv(self, rd: int, rs1: int, rs2: int, mask: int = 0) -> None:
        self.emit("V_MUL_VV", rd, rs1, rs2, mask)

    def v_add_vf(self, rd: int, rs1: int, fs: int, mask: int = 0) -> None:
        self.emit("V_ADD_VF", rd, rs1, fs, mask)

    def v_sub_vf(self, rd: int, rs1: int, fs: int, mask: int = 0, reverse: int = 0) -> None:
        self.emit("V_SUB_VF", rd, rs1, fs, mask, reverse)

    def v_mul_vf(self, rd: int, rs1: int, fs: int, mask: int = 0) -> None:
        self.emit("V_MUL_VF", rd, rs1, fs, mask)

    def v_exp(self, rd: int, rs1: int, mask: int = 0) -> None:
        self.emit("V_EXP_V", rd, rs1, mask)

    def v_reci(self, rd: int, rs1: int, mask: int = 0) -> None:
        self.emit("V_RECI_V", rd, rs1, mask)

    def v_red_sum(self, fd: int, rs1: int) -> None:
        self.emit("V_RED_SUM", fd, rs1)

    def v_red_max(self, fd: int, rs1: int) -> None:
        self.emit("V_RED_MAX", fd, rs1, 0)

    # -- scalar FP ----------------------------------------------------------------
    def s_ld_fp(self, fd: int, rs: int, imm: int) -> None:
        self.emit("S_LD_FP", fd, rs, imm)

    def s_st_fp(self, fs: int, rs: int, imm: int) -> None:
        self.emit("S_ST_FP", fs, rs, imm)

    def s_map_v_fp(self, rd_vram: int, rs: int, imm: int) -> None:
        self.emit("S_MAP_V_FP", rd_vram, rs, imm)

    def fadd(self, fd: int, fa: int, fb: int) -> None:
        self.emit("S_ADD_FP", fd, fa, fb)

    def fsub(self, fd: int, fa: int, fb: int) -> None:
        self.emit("S_SUB_FP", fd, fa, fb)

    def fmul(self, fd: int, fa: int, fb: int) -> None:
        self.emit("S_MUL_FP", fd, fa, fb)

    def fmax(self, fd: int, fa: int, fb: int) -> None:
        self.emit("S_MAX_FP", fd, fa, fb)

    def fexp(self, fd: int, fa: int) -> None:
        self.emit("S_EXP_FP", fd, fa)

    def freci(self, fd: int, fa: int) -> None:
        self.emit("S_RECI_FP", fd, fa)

    def fsqrt(self, fd: int, fa: int) -> None:
        self.emit("S_SQRT_FP", fd, fa)


class _HwLoop:
    """The context of `Asm.loop`: C_LOOP_START on entry, C_LOOP_END on a normal exit (a
    class, not a generator context manager: lowerings open tens of thousands of loops)."""

    __slots__ = ("asm", "counter", "n")

    def __init__(self, asm: Asm, counter: int, n: int) -> None:
        self.asm, self.counter, self.n = asm, counter, n

    def __enter__(self) -> None:
        self.asm.emit("C_LOOP_START", self.counter, self.n)
        self.asm._open_loops += 1

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if exc_type is None:
            self.asm._open_loops -= 1
            self.asm.emit("C_LOOP_END", self.counter)
