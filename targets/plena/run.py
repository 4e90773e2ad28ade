"""One PLENA simulation (`Run`): the decoded program on its machine, the rule checker on every
executed instruction, the rtl and emu clocks and their breakdown, and the result (`PlenaRun`).

The steady-state executor (`_Steady`: extrapolation over alike iterations of the lowering's
loop nest, `zomboss.machine.steady`) lives here too: it drives `Run`'s blocks and `Run` starts
it, so the two are one module (~600 lines) rather than an import cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from zomboss.targets.plena import hbm as H
from zomboss.targets.plena import sem_control
from zomboss.targets.plena import timing as T
from zomboss.targets.plena.builder import structure
from zomboss.targets.plena.config import PlenaConfig
from zomboss.targets.plena.decode import (
    Decoded,
    Shared,
    decode_instr,
    doc_loc,
    needs_data,
    register_values,
    shared_for,
)
from zomboss.targets.plena.hwloop import MIN_STEADY_WORK, Block, HwLoop, hw_loop, min_executed
from zomboss.targets.plena.machine import MASK32, Fault, Machine

from zomboss.errors import IllegalProgram, ZombossError
from zomboss.knowledge import Violation
from zomboss.machine import steady as steady
from zomboss.program import Instr, Item, Program
from zomboss.util import over_budget

BREAKDOWN = ("compute", "memory", "stall", "overhead")


# ---------------------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlenaRun:
    """Final machine state and the run's statistics."""

    cfg: PlenaConfig = field(repr=False)
    vram: np.ndarray = field(repr=False)  # flat float32 (BF16 values), vram_rows * vlen elements
    mram: np.ndarray = field(repr=False)  # [mram_tiles, mlen, mlen] float32
    fpsram: np.ndarray = field(repr=False)  # float32 (BF16 values)
    intsram: np.ndarray = field(repr=False)  # uint32
    hbm: H.Hbm = field(repr=False)
    gp: tuple[int, ...]
    f: tuple[float, ...]
    a: tuple[int, ...]
    csr: Mapping[str, int]
    cycles: Mapping[str, int]  # per timing mode
    rtl_breakdown: Mapping[str, int]  # rtl cycles per unit, plus "hazards"
    breakdown: Mapping[str, int]  # rtl cycles as compute / memory / stall / overhead (`breakdown_part`)
    functional: bool  # whether data was computed (False: a timing-only run; the state holds no data)
    counts: Mapping[str, int]  # executed instructions per mnemonic
    class_counts: Mapping[str, int]  # executed instructions per unit
    instructions: int  # executed (dynamic) instructions
    hbm_read_bytes: int  # 64-byte blocks read from HBM (prefetches and store RMW reads) x 64
    hbm_write_bytes: int  # 64-byte blocks written to HBM x 64
    wall_s: float
    steady: Mapping[str, object] | None = None  # what steady-state extrapolation did (None: every instruction ran)

    def vram_tensor(self, base: int, rows: int, cols: int, phys_rows: int | None = None) -> np.ndarray:
        """A logical [rows, cols] tensor stored column-block-major at element `base`."""
        return vram_gather(self.vram, base, rows, cols, phys_rows if phys_rows is not None else rows, self.cfg.vlen)

    def hbm_tensor(self, base: int, rows: int, cols: int) -> np.ndarray:
        """A dequantized row-major MXFP8 [rows, cols] tensor at HBM byte `base`."""
        return H.read_mx_tensor(self.hbm, base, rows, cols, self.cfg.mx_block)

    def summary(self) -> dict[str, Any]:
        return {
            "cycles": dict(self.cycles),
            "rtl_breakdown": dict(self.rtl_breakdown),
            "instructions": self.instructions,
            "class_counts": dict(self.class_counts),
            "hbm_read_bytes": self.hbm_read_bytes,
            "hbm_write_bytes": self.hbm_write_bytes,
            **({"steady": dict(self.steady)} if self.steady is not None else {}),
        }


def vram_gather(vram: np.ndarray, base: int, rows: int, cols: int, phys_rows: int, vlen: int) -> np.ndarray:
    """Column-block-major VRAM layout -> logical [rows, cols]: element (r, c) lives at
    base + (c // vlen) * phys_rows * vlen + r * vlen + c % vlen (plena.md §2)."""
    nb = -(-cols // vlen)
    flat = np.asarray(vram).reshape(-1)[base : base + nb * phys_rows * vlen]
    if flat.size != nb * phys_rows * vlen:
        raise ZombossError(
            f"VRAM tensor at {base} ({rows}x{cols}, {phys_rows} physical rows) runs past the end of VRAM"
        )
    blocks = flat.reshape(nb, phys_rows, vlen)[:, :rows, :]
    return blocks.transpose(1, 0, 2).reshape(rows, nb * vlen)[:, :cols].copy()


class Run:
    """One execution: decoded program, machine, checker and timing accumulators."""

    def __init__(
        self,
        program: Program,
        cfg: PlenaConfig,
        hbm: H.Hbm,
        modes: Sequence[str],
        check: bool,
        budget: int | None = None,
        functional: bool = True,
        extrapolate: bool = False,
    ) -> None:
        if program.target not in ("plena", ""):
            raise ZombossError(f"a {program.target} program cannot run on the PLENA simulator")
        kb = cfg.kb
        self.cfg, self.kb, self.modes = cfg, kb, T.check_modes(modes)
        self.source = str(program.meta.get("source", "")) if program.meta else ""
        self.functional = functional or needs_data(program, kb, check)
        self.m = Machine(cfg, hbm)
        self.instrs = program.instrs
        known = structure(program)
        self.nest: Sequence[Item] | None = program.nest if known is None else known.nest
        shared = shared_for(kb)
        probing = "rtl" in self.modes
        self._shared, self._probing = shared, probing
        self.checker = shared.take_checker() if check else None
        self.hazards = T.HazardPenalties.from_params(kb.params)
        self.hazard_cycles = 0
        self.overlap = T.Overlap(kb) if "overlap" in self.modes else None
        self.budget = budget if budget is not None else 1 << 62
        # steady-state extrapolation of hardware loops: timing-only runs without checker or overlap
        steady_ok = extrapolate and not self.functional and self.checker is None and self.overlap is None
        self.steady = steady.Report() if steady_ok else None
        self.slots: list[Decoded] = []  # distinct decodings: identical static instructions share one
        self.code: list[Decoded] = []  # the decoding of each program counter (extrapolating: decoded on demand)
        self._same: dict[tuple[str, tuple[int, ...]], Decoded] = {}
        if self.steady is None:
            self.code = [self.decoded(pc) for pc in range(len(self.instrs))]
        self.counts = [0] * len(self.slots)  # executions per decoding (the block runs tally them at the end)
        self.blocks: list[Block] = []
        if budget is not None:
            least = min_executed(program, kb)
            if least > budget:
                raise over_budget(
                    self.source or "the program", f"its hardware loops execute at least {least:,} instructions", budget
                )

    def decoded(self, pc: int, ins: Instr | None = None) -> Decoded:
        """The decoding of the instruction at `pc` (of the program, or of `ins` at `pc` of a
        region's copy), shared with identical instructions."""
        if ins is None:
            ins = self.instrs[pc]
        key = (ins.op, ins.args)
        d = self._same.get(key)
        if d is None or ins.op in sem_control.PC_DEPENDENT:
            d = self._same[key] = self._decode(ins, pc, self._shared, self._probing)
        return d

    def _decode(self, ins: Instr, pc: int, shared: Shared, probing: bool) -> Decoded:
        kb = self.kb
        sig = kb.instrs.get(ins.op)
        if sig is None:
            raise ZombossError(f"line {ins.line}: unknown PLENA instruction {ins.op!r}")
        if len(ins.args) != len(sig.operands):
            raise ZombossError(f"line {ins.line}: {ins.op} takes {len(sig.operands)} operands, got {len(ins.args)}")
        regs = tuple((i, o.kind, ins.args[i]) for i, o in enumerate(sig.operands) if o.kind in kb.regfiles)
        probe = T.hazard_probe(ins, self.cfg.vlen, self.cfg.pf_v) if probing else None
        run = decode_instr(ins, pc, self.m, self.functional)
        cost, part = shared.costs.static(ins), shared.part(ins.op)
        d = Decoded(ins, run, regs, cost, sig.unit, probe, part, len(self.slots))
        self.slots.append(d)
        return d

    def _violation(self, rule: str, message: str, ins: Instr, values: Mapping[str, Any]) -> Violation:
        return Violation(
            rule, message, doc_loc(self.kb, rule), self.m.executed - 1, ins.line, ins.op, dict(values), self.source
        )

    def _guards(self, ins: Instr) -> None:
        """The run's instruction budget and the hardware-loop guard, checked as `ins` (the
        m.executed-th instruction) is about to execute."""
        m = self.m
        if m.executed > self.budget:
            where = f"{self.source}:{ins.line}" if self.source else f"line {ins.line}"
            raise over_budget(where, "the program executes more instructions", self.budget)
        maxl = self.cfg.max_loop_instructions
        if m.loops and m.executed - m.loops[0][2] > maxl:
            lp = m.loops[0]
            message = (
                f"an iteration of the hardware loop opened at line {lp[3]} executed more than "
                f"max_loop_instructions = {maxl} instructions"
            )
            values = {
                "loop_line": lp[3],
                "iteration": lp[4] - m.gp[lp[1]] + 1 if lp[1] else 1,
                "count": m.executed - lp[2],
            }
            raise IllegalProgram([self._violation("loop.guard", message, ins, values)])

    def _fault(self, ins: Instr, e: Exception) -> IllegalProgram:
        if isinstance(e, Fault):
            return IllegalProgram([self._violation(e.rule, e.message, ins, e.values)])
        return IllegalProgram([self._violation("sim.fault", f"{ins.op} cannot execute: {e}", ins, {})])

    def execute(self, trace: bool = False) -> Iterator[tuple[Instr, dict[int, int]]]:
        """Run to the end; as a generator it yields (instruction, register values) before
        executing each instruction when `trace` is set (and nothing otherwise)."""
        try:
            if trace or self.checker is not None or self.overlap is not None:
                yield from self._loop(trace)
            elif self.steady is not None and not trace:
                _Steady(self).run()
            else:
                self._straight()
        finally:
            if self.checker is not None:
                self._shared.give_back(self.checker)
                self.checker = None

    def _loop(self, trace: bool) -> Iterator[tuple[Instr, dict[int, int]]]:
        """Instruction by instruction, with what the checker, a trace or `overlap` need."""
        m, code, instrs, counts = self.m, self.code, self.instrs, self.counts
        n = len(code)
        checker, overlap = self.checker, self.overlap
        probing = "rtl" in self.modes
        between = self.hazards.between
        maxl = self.cfg.max_loop_instructions
        loops = m.loops
        budget = self.budget
        prev_probe: T.Probe | None = None
        pc = 0
        while pc < n:
            d, ins = code[pc], instrs[pc]
            counts[d.slot] += 1
            m.executed += 1
            if m.executed > budget or (loops and m.executed - loops[0][2] > maxl):
                self._guards(ins)
            regvals = register_values(d, m)
            if checker is not None:
                found = checker.step(ins, regvals)
                if found:
                    if trace:  # the consumer's own checker reports it; nothing after it is meaningful
                        yield ins, regvals
                        return
                    raise IllegalProgram(
                        [
                            Violation(v.rule, v.message, v.doc_loc, v.index, v.line, v.op, v.values, self.source)
                            for v in found
                        ]
                    )
            if trace:
                yield ins, regvals
            if probing and d.probe is not None:
                p = d.probe(m.gp)
                self.hazard_cycles += between(prev_probe, p)
                prev_probe = p
            elif probing:
                prev_probe = None
            nxt = None
            if d.run is not None:
                try:
                    nxt = d.run()
                except (Fault, IndexError, ValueError) as e:
                    raise self._fault(ins, e) from None
            if overlap is not None:
                overlap.step(ins, d.unit, d.cost.rtl if d.cost is not None else m.last_dma, self._env(d, regvals))
            pc = pc + 1 if nxt is None else nxt

    def _block_at(self) -> list[Block | None]:
        """The straight-line blocks, indexed by their first program counter."""
        at: list[Block | None] = [None] * len(self.code)
        probing = "rtl" in self.modes
        ends = [pc for pc, ins in enumerate(self.instrs) if ins.op in sem_control.BLOCK_ENDS]
        start = 0
        for end in [*ends, len(self.code) - 1]:
            if end >= start:
                b = Block(start, self.code[start : end + 1], probing, self.instrs)
                self.blocks.append(b)
                at[start] = b
                start = end + 1
        return at

    def _straight(self) -> None:
        """Block by block: what a run without checker, trace or `overlap` needs (the guards are
        checked once per block, which is exact since only a block's last instruction changes
        the loop state)."""
        at, step = self._block_at(), self.step
        n = len(self.code)
        pc = 0
        while pc < n:
            b = at[pc]
            assert b is not None, "loops jump to the instruction after a C_LOOP_START, which starts a block"
            nxt = step(b)
            pc = b.end if nxt is None else nxt
        self.tally_counts()

    def step(self, b: Block) -> int | None:
        """Execute one block; returns its jump target (None: fall through)."""
        m = self.m
        b.executions += 1
        first = m.executed + 1
        m.executed += len(b.code)
        loops = m.loops
        if m.executed > self.budget or (loops and m.executed - loops[0][2] > self.cfg.max_loop_instructions):
            for i in range(len(b.code)):  # find the first instruction past a guard
                m.executed = first + i
                self._guards(b.src[b.start + i])
        gp, between = m.gp, self.hazards.between
        hazards = 0
        nxt = None
        prev: T.Probe | None = None
        i = 0
        try:
            for probe, run, chained, i in b.steps:  # noqa: B007 - `i` names the faulting step
                if probe is not None:
                    p = probe(gp)
                    if chained:
                        hazards += between(prev, p)
                    prev = p
                if run is not None:
                    nxt = run()
        except (Fault, IndexError, ValueError) as e:
            m.executed = first + i
            raise self._fault(b.src[b.start + i], e) from None
        if hazards:
            self.hazard_cycles += hazards
        return nxt

    def tally_counts(self) -> None:
        """Executions per decoding, from the blocks' execution counts."""
        counts = self.counts = [0] * len(self.slots)
        for b in self.blocks:
            if b.executions:
                for d in b.code:
                    counts[d.slot] += b.executions

    def _env(self, d: Decoded, regvals: Mapping[int, int]) -> dict[str, int]:
        sig = self.kb.instrs[d.ins.op]
        env = {o.name: a for o, a in zip(sig.operands, d.ins.args, strict=True)}
        for pos, _, _ in d.regs:
            env[f"{sig.operands[pos].name}.val"] = regvals[pos]
        env.update({f"cfg.{k}": v for k, v in self.m.csr.items()})
        return env

    def result(self, wall: float) -> PlenaRun:
        m, cfg = self.m, self.cfg
        per_op: dict[str, int] = {}
        per_unit: dict[str, int] = {}
        rtl_unit: dict[str, int] = {}
        parts = dict.fromkeys(BREAKDOWN, 0)
        rtl = emu = 0
        for d, c in zip(self.slots, self.counts, strict=True):
            if not c:
                continue
            per_op[d.ins.op] = per_op.get(d.ins.op, 0) + c
            per_unit[d.unit] = per_unit.get(d.unit, 0) + c
            if d.cost is not None:
                rtl += c * d.cost.rtl
                emu += c * d.cost.emu
                rtl_unit[d.unit] = rtl_unit.get(d.unit, 0) + c * d.cost.rtl
                parts[d.part] += c * d.cost.rtl
        rtl_unit["dma"] = rtl_unit.get("dma", 0) + m.dma_cycles
        rtl_unit["hazards"] = self.hazard_cycles
        parts["memory"] += m.dma_cycles
        parts["stall"] = self.hazard_cycles
        cycles: dict[str, int] = {}
        if "rtl" in self.modes:
            cycles["rtl"] = rtl + m.dma_cycles + self.hazard_cycles
        if "emu" in self.modes:
            cycles["emu"] = emu + m.dma_cycles
        if self.overlap is not None:
            cycles["overlap"] = self.overlap.makespan
        return PlenaRun(
            cfg=cfg,
            vram=m.V.reshape(-1),
            mram=m.M,
            fpsram=m.FS,
            intsram=m.IS,
            hbm=m.hbm,
            gp=tuple(m.gp),
            f=tuple(m.f),
            a=tuple(m.a),
            csr=dict(m.csr),
            cycles=cycles,
            rtl_breakdown=rtl_unit if "rtl" in self.modes else {},
            breakdown=parts if "rtl" in self.modes else {},
            functional=self.functional,
            counts=dict(sorted(per_op.items())),
            class_counts=dict(sorted(per_unit.items())),
            instructions=m.executed,
            hbm_read_bytes=m.read_blocks * cfg.hbm_block,
            hbm_write_bytes=m.write_blocks * cfg.hbm_block,
            wall_s=wall,
            steady=self.steady.to_json() if self.steady is not None else None,
        )


# PLENA's costs are integers and alike iterations repeat them exactly: counters must agree exactly
# (a one-cycle or one-residue difference means the period is not yet steady); periods up to 4
# and 16 watched iterations are what the suite was measured with (longer only cost time).
POLICY = steady.Policy(max_period=4, probe=16, counter_rtol=0.0, counter_atol=0.0)
_NO_STATE = np.zeros(0)
_CSRS = ("scale", "stride", "v_mask")


def _one_run(t: int) -> int:
    """Every iteration of an alike hardware loop is alike (`hw_loop` made sure)."""
    return 0


class _Segment:
    """One item list of a nest (the program's top level, or one copy of a region): its
    instructions, which hardware loops and jumps stay inside, and the regions standing
    before each position; with the blocks and loop analyses built for it on demand. A
    region inside a hardware loop of the list is expanded into its instructions."""

    __slots__ = ("instrs", "regions", "cut", "at", "hw")

    def __init__(self, items: Sequence[Item], instrs: Sequence[Instr] | None = None) -> None:
        if instrs is None:
            flat: list[Instr] = []
            regions: dict[int, list[Any]] = {}
            depth = 0
            for it in items:
                if isinstance(it, Instr):
                    flat.append(it)
                    depth += (it.op == "C_LOOP_START") - (it.op == "C_LOOP_END")
                elif depth > 0:
                    flat.extend(_flatten(it))
                else:
                    regions.setdefault(len(flat), []).append(it)
            instrs, self.regions = flat, regions
        else:
            self.regions = {}
        self.instrs = instrs
        self.cut = bytearray(len(instrs) + 1)  # blocks end before a position regions stand at
        for pc in self.regions:
            self.cut[pc] = 1
        self.at: dict[int, Block] = {}
        self.hw: dict[int, HwLoop | None] = {}


def _grouping(keys: Sequence[Any], most: int = 4) -> int:
    """The group size q <= `most` whose runs of alike groups leave the fewest copies to
    simulate (about three groups a run, as `steady.repeat` needs two periods to measure)."""
    best, best_cost = 1, None
    for q in range(1, most + 1):
        n = len(keys) // q
        if n < 3:
            break
        groups = [tuple(keys[q * t : q * t + q]) for t in range(n)]
        cost = sum(q * min(b - a, 3) for a, b in steady.runs(n, groups.__getitem__)) + len(keys) - n * q
        if best_cost is None or cost < best_cost:
            best, best_cost = q, cost
    return best


def _flatten(region: Any) -> Iterator[Instr]:
    for t in range(region.trips):
        for it in region.body(t):
            if isinstance(it, Instr):
                yield it
            else:
                yield from _flatten(it)


class _Steady:
    """The extrapolating executor of a timing-only run (plena.md §7's rtl model is in order and
    blocking, so its timing state at an iteration boundary is the clock alone: no hazard pairs
    straddle a loop instruction). It walks the lowering's nest (`builder.Structure`; a program
    without one is a single list): blocks run as `Run.step` runs them; each region of copies
    and each alike hardware loop (`hw_loop`) runs through `steady.repeat`, marked by the rtl
    clock (static costs of the blocks run + DMA + hazards), the DMA and hazard counters and the
    DMA alignment phase (whose per-period sum repeats only once the address residues do), and
    the registers and CSRs, which must advance linearly. A skip credits every block of the last
    period once per skipped period (alike iterations are the same instructions), so counts, emu
    cycles and the breakdown stay those of the skipped iterations."""

    def __init__(self, run: Run) -> None:
        assert run.steady is not None
        self.r, self.m, self.report = run, run.m, run.steady
        self.log: list[Block | tuple[Block, int]] = []  # blocks run, and skip credits (block, times)
        self.tallied = 0  # log entries whose static cost `static` holds
        self.static = 0

    def run(self) -> None:
        nest = self.r.nest
        self.items(_Segment((), self.r.instrs) if nest is None else _Segment(nest))
        self.r.tally_counts()

    def items(self, seg: _Segment) -> None:
        pc, n = 0, len(seg.instrs)
        while pc < n:
            pc = self.advance(seg, pc)
        for rg in seg.regions.get(n, ()):
            self.repeat_copies(rg)

    def block(self, seg: _Segment, pc: int) -> Block:
        """The block starting at `pc`: up to its first loop instruction or the next cut."""
        b = seg.at.get(pc)
        if b is None:
            instrs, cut, ends, decoded = seg.instrs, seg.cut, sem_control.BLOCK_ENDS, self.r.decoded
            end = pc
            while True:
                end += 1
                if end == len(instrs) or instrs[end - 1].op in ends or cut[end]:
                    break
            code = [decoded(i, instrs[i]) for i in range(pc, end)]
            b = seg.at[pc] = Block(pc, code, self.r._probing, instrs)
            self.r.blocks.append(b)
        return b

    def advance(self, seg: _Segment, pc: int) -> int:
        """Run the regions standing at `pc`, then the block there and, when it opens an alike
        loop, the whole loop; the next pc."""
        for rg in seg.regions.get(pc, ()):
            self.repeat_copies(rg)
        b = self.block(seg, pc)
        nxt = self.r.step(b)
        self.log.append(b)
        last = b.end - 1
        if seg.instrs[last].op == "C_LOOP_START":
            if last not in seg.hw:
                seg.hw[last] = hw_loop(seg.instrs, last)
            lp = seg.hw[last]
            if lp is not None and lp.count * lp.work >= MIN_STEADY_WORK:
                self.repeat_loop(seg, lp)
                return lp.end + 1
        return b.end if nxt is None else nxt

    def repeat(self, trips: int, alike: Callable[[int], Any], body: Callable[[int], None], loop: bool) -> None:
        """`steady.repeat` with this run's marks and skips."""
        marked: list[int] = []  # the log's length at each mark

        def mark() -> steady.Mark:
            marked.append(len(self.log))
            return self.mark()

        def skip(s: steady.Skip) -> None:
            self.skip(s, marked[-1 - s.iterations // s.periods], marked[-1], loop)

        steady.repeat(trips, alike, body, mark, skip, POLICY, self.report)

    def repeat_copies(self, rg: Any) -> None:
        """A loop of the nest: an unrolled region of copies, or a lazily built loop.
        When its keys alternate (an address crossing a 4 KiB boundary every other copy changes
        how it is materialised), groups of `q` consecutive copies are the iterations."""
        keys = [rg.alike(t) for t in range(rg.trips)]
        q = _grouping(keys)
        n = rg.trips // q

        def body(t: int) -> None:
            for c in range(q * t, q * t + q):
                self.items(_Segment(rg.body(c)))

        self.repeat(n, lambda t: tuple(keys[q * t : q * t + q]), body, False)
        for c in range(n * q, rg.trips):
            self.items(_Segment(rg.body(c)))

    def repeat_loop(self, seg: _Segment, lp: HwLoop) -> None:
        """The iterations of `lp` (its C_LOOP_START has run)."""
        step, log = self.r.step, self.log

        def body(_t: int) -> None:
            pc = lp.start + 1
            while True:
                b = self.block(seg, pc)
                if b.end - 1 == lp.end:
                    step(b)
                    log.append(b)
                    return
                pc = self.advance(seg, pc)

        self.repeat(lp.count, _one_run, body, True)
        loops = self.m.loops
        if loops and loops[-1][0] == lp.start:  # a skip covered the last iteration: close the loop as it would
            loops.pop()
            self.m.gp[lp.counter] = 0

    def mark(self) -> steady.Mark:
        log, static = self.log, self.static
        for k in range(self.tallied, len(log)):
            e = log[k]
            static += e[0].rtl * e[1] if isinstance(e, tuple) else e.rtl
        self.static, self.tallied = static, len(log)
        m, hz = self.m, self.r.hazard_cycles
        return steady.Mark(
            time=float(static + m.dma_cycles + hz),
            state=_NO_STATE,
            counters=np.array([m.dma_cycles, hz, m.read_blocks, m.write_blocks, m.dma_phase], dtype=np.float64),
            linear=(*m.gp, *m.a, *(m.csr[k] for k in _CSRS)),
        )

    def skip(self, s: steady.Skip, lo: int, hi: int, loop: bool) -> None:
        """Advance over `s`: the blocks logged in [lo, hi) (the last period) once per period;
        `loop`: the iterations of a hardware loop (not copies of a region)."""
        m, r, times = self.m, self.r, s.periods
        credits: list[Block | tuple[Block, int]] = []
        executed = 0
        for e in self.log[lo:hi]:
            b, w = e if isinstance(e, tuple) else (e, 1)
            w *= times
            b.executions += w
            executed += len(b.code) * w
            credits.append((b, w))
        self.log.extend(credits)
        m.executed += executed
        dma, hz, rd, wr, phase = (int(round(float(c))) for c in s.counters)
        m.dma_cycles += dma
        r.hazard_cycles += hz
        m.read_blocks += rd
        m.write_blocks += wr
        m.dma_phase += phase
        lin, gp, a = s.linear, m.gp, m.a
        for i in range(1, len(gp)):
            gp[i] = (gp[i] + lin[i]) & MASK32
        for i in range(len(a)):
            a[i] += lin[len(gp) + i]
        for i, k in enumerate(_CSRS):
            m.csr[k] = (m.csr[k] + lin[len(gp) + len(a) + i]) & MASK32
        if loop:  # the loop skipped over starts its next iteration now (the loop guard counts from here)
            m.loops[-1][2] = m.executed
