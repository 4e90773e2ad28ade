"""Decoding a PLENA program for the simulator: the per-family semantic tables merged
(`SEMANTICS`), each static instruction decoded once into a closure with its cost, unit and
checker data (`Decoded`), and what a run shares per KB (the checker pool, the cost table).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from zomboss.targets.plena import sem_control, sem_dma, sem_matrix, sem_scalar, sem_vector
from zomboss.targets.plena import timing as T
from zomboss.targets.plena.builder import nest_ops, structure
from zomboss.targets.plena.machine import Machine, Runner, Semantics
from zomboss.targets.plena.numerics import bf16_bits_scalar

from zomboss import expr as ex
from zomboss.errors import ZombossError
from zomboss.knowledge import KB
from zomboss.legality import Checker
from zomboss.machine import steady as steady
from zomboss.program import Instr, Program

# ---------------------------------------------------------------------------------------
# Decoding: the per-family semantic tables
# ---------------------------------------------------------------------------------------

SEMANTICS: Mapping[str, Semantics] = {
    **sem_matrix.SEMANTICS,
    **sem_vector.SEMANTICS,
    **sem_scalar.SEMANTICS,
    **sem_dma.SEMANTICS,
    **sem_control.SEMANTICS,
}


class Decoded:
    """One static instruction, decoded once and shared by every identical instruction of the
    program (`ins` is the first of them; messages name the executing one); a plain slotted
    class because the run loop reads its fields for every executed instruction."""

    __slots__ = ("ins", "run", "regs", "cost", "unit", "probe", "part", "slot")

    def __init__(
        self,
        ins: Instr,
        run: Runner | None,  # None: nothing to execute (a timing-only run skips data work)
        regs: tuple[tuple[int, str, int], ...],  # (operand position, register file, index)
        cost: T.StaticCost | None,  # None: DMA, costed at run time
        unit: str,
        probe: Callable[[list[int]], T.Probe] | None,
        part: str,  # the breakdown part its static cost counts towards
        slot: int,  # index of its decoding in Run.slots (executions are counted per decoding)
    ) -> None:
        self.ins, self.run, self.regs, self.cost, self.unit, self.probe = ins, run, regs, cost, unit, probe
        self.part, self.slot = part, slot


def decode_instr(ins: Instr, pc: int, m: Machine, functional: bool) -> Runner | None:
    """The closure executing one static instruction (emulator semantics), or None when a
    timing-only run has nothing to do for it."""
    sem = SEMANTICS.get(ins.op)
    if sem is None:
        raise ZombossError(f"line {ins.line}: the simulator has no semantics for {ins.op!r}")
    if functional:
        return sem.run(ins, pc, m)
    return sem.timing(ins, pc, m) if sem.timing is not None else None


def breakdown_part(kb: KB, op: str) -> str:
    """Which of compute / memory / overhead an instruction's cycles count towards (plena.md §7):
    the matrix and vector units and scalar FP arithmetic compute; DMA and the scalar unit's
    moves between registers and the SRAMs (instructions with a `reads`/`writes` clause) move
    memory; integer arithmetic (addresses, counters) and control are overhead. Pipeline
    hazards are the fourth part, `stall`."""
    sig = kb.instrs[op]
    if sig.unit in ("matrix", "vector"):
        return "compute"
    if sig.unit == "dma" or (sig.unit == "scalar" and (sig.reads or sig.writes)):
        return "memory"
    if sig.unit == "scalar" and any(o.kind == "f" for o in sig.operands):
        return "compute"
    return "overhead"


def needs_data(program: Program, kb: KB, check: bool) -> bool:
    """Whether a run of `program` must compute data even when only its timing (and, with
    `check`, its legality) is wanted: when data can reach a register that decides addresses
    or trip counts (INT SRAM written from data and loaded into a register), or when a doc
    rule reads an FP register's contents (no rule of plena.md does today)."""
    known = structure(program)
    if known is not None:
        ops: set[str] | frozenset[str] = known.ops
    elif program.nest is not None:
        ops = nest_ops(program.nest)
    else:
        ops = {i.op for i in program.instrs}
    if ops & sem_vector.WRITES_DATA_TO_INT_SRAM and "S_LD_INT" in ops:
        return True
    return check and shared_for(kb).rules_read_fp


def _rules_read_fp(kb: KB) -> bool:
    for name, sig in kb.instrs.items():
        fvals = {f"{o.name}.val" for o in sig.operands if o.kind == "f"}
        exprs = [e for _, e in sig.lets] + [r.expr for r in kb.rules if name in kb.applies.get(r.id, ())]
        if fvals and any(r.name in fvals for e in exprs for r in ex.refs(e)):
            return True
    return False


# ---------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------


_FBITS: dict[float, int] = {}


def register_values(d: Decoded, m: Machine) -> dict[int, int]:
    """Register contents at each register operand (f registers: their BF16 bit pattern)."""
    out: dict[int, int] = {}
    for pos, file, idx in d.regs:
        if file == "gp":
            out[pos] = m.gp[idx] if idx < 16 else 0
        elif file == "a":
            out[pos] = m.a[idx] if idx < 8 else 0
        elif idx < 8:
            x = m.f[idx]
            bits = _FBITS.get(x)
            if bits is None:
                bits = bf16_bits_scalar(x)
                if len(_FBITS) < 65536:
                    _FBITS[x] = bits
            out[pos] = bits
        else:
            out[pos] = 0
    return out


def doc_loc(kb: KB, rule: str) -> str:
    r = kb.rule_by_id.get(rule)
    if r is not None:
        return str(r.loc)
    if rule == "loop.guard":
        p = next((p for p in kb.doc.params if p.name == "max_loop_instructions"), None)
        return str(p.loc) if p else ""
    return ""


class Shared:
    """What every run on one KB can share: the cost table and a pool of rule checkers
    (building a checker compiles every rule, so they are reset and reused)."""

    def __init__(self, kb: KB) -> None:
        self.kb = kb
        self.costs = T.CostTable(kb)
        self.rules_read_fp = _rules_read_fp(kb)
        self._checkers: list[Any] = []
        self._parts: dict[str, str] = {}

    def part(self, op: str) -> str:
        p = self._parts.get(op)
        if p is None:
            p = self._parts[op] = breakdown_part(self.kb, op)
        return p

    def take_checker(self) -> Any:
        if self._checkers:
            c = self._checkers.pop()
            c.reset()
            return c
        return Checker(self.kb)

    def give_back(self, checker: Any) -> None:
        if len(self._checkers) < 4:
            self._checkers.append(checker)


_SHARED: dict[str, Shared] = {}


def shared_for(kb: KB) -> Shared:
    key = kb.digest or str(id(kb))
    sh = _SHARED.get(key)
    if sh is None or sh.kb is not kb and not kb.digest:
        sh = _SHARED[key] = Shared(kb)
    return sh


def cost_table(kb: KB) -> T.CostTable:
    """The doc's static instruction costs for this KB (built once per KB)."""
    return shared_for(kb).costs
