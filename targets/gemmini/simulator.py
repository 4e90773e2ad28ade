"""Run a Gemmini program: rule checks, functional effect and timing, instruction by instruction.

`simulate` walks the program; `loop_ws` / `loop_conv_ws` are expanded into the commands their
FSMs issue (`loops`), and every executed instruction, generated ones included, goes through
the ISA doc's checker first (the program is refused on the first violation), then the
functional model (`machine.Machine`, optional) and the timing model (`timing.Timing`,
optional). Timing-only mode moves no data and is what the search uses; functional + timing
is what verification uses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from zomboss.targets.gemmini.asm import LOOP_CONV_CONFIGS, LOOP_WS_CONFIGS, check_shape, operands, queues
from zomboss.targets.gemmini.config import DOC, GemminiConfig
from zomboss.targets.gemmini.dram import Dram
from zomboss.targets.gemmini.llc import Llc
from zomboss.targets.gemmini.loops import Expansion, LoopFsm, UnsupportedLoop, expand_loop_conv_ws, expand_loop_ws
from zomboss.targets.gemmini.machine import Machine
from zomboss.targets.gemmini.numerics import ONE_F32_BITS
from zomboss.targets.gemmini.platform import RTL_COMMANDS, check_command, check_loop
from zomboss.targets.gemmini.presets import Preset, Rtl, get_preset
from zomboss.targets.gemmini.timing import Timing

from zomboss.errors import IllegalProgram
from zomboss.legality import Checker, check_block
from zomboss.machine import steady as steady
from zomboss.program import Instr, Item, Program
from zomboss.util import over_budget

__all__ = ["DOC", "Dram", "GemminiConfig", "SimResult", "dynamic_stream", "kb_checker", "simulate"]

WS_FSM, CONV_FSM = 0, 1


@dataclass(frozen=True)
class SimResult:
    cycles: int
    dram: Dram | None
    counts: dict[str, int]
    dram_read_bytes: int
    dram_write_bytes: int
    stats: dict[str, Any] = field(default_factory=dict)
    breakdown: dict[str, int] = field(default_factory=dict)  # timing.BREAKDOWN -> cycles (timed runs)


def kb_checker(cfg: GemminiConfig) -> Checker:
    """A fresh checker of the doc's rules for this configuration (its KB)."""
    return Checker(cfg.kb())


# Consecutive iterations' durations may differ by 0.1-0.3 %: DRAM row-buffer state, left out
# of the mark (it depends on absolute addresses), shifts a few row misses between them. The
# skip averages the last two periods, so the error stays within that jitter.
POLICY = steady.Policy(rtol=3e-3)


class _Run:
    """One simulation: the engines and the per-instruction pipeline."""

    def __init__(
        self,
        cfg: GemminiConfig,
        dram: Dram | None,
        functional: bool,
        timing: Preset | None,
        check: bool,
        rtl: Rtl,
        budget: int | None = None,
        extrapolate: bool = False,
        llc: Llc | None = None,
        instructions: int = 0,  # the program's CPU-issued instructions (its export form)
    ):
        self.cfg = cfg
        self.rtl = rtl
        self.budget = budget if budget is not None else 1 << 62
        self.executed = 0
        self.checker = kb_checker(cfg) if check else None
        self.machine = Machine(cfg, dram if dram is not None else Dram()) if functional else None
        self.tm = Timing(cfg, timing, llc, instructions) if timing is not None else None
        self.fsm = {WS_FSM: LoopFsm(), CONV_FSM: LoopFsm()}
        self.counts: Counter[str] = Counter()
        self.st_scale_bits = ONE_F32_BITS
        # steady-state extrapolation over the lowering's loop nest: timing-only runs only
        # A skipped nest iteration is never executed, so only runs without the rule checker skip
        # them; a skipped FSM group inside a loop the checker vouched for (`check_block`)
        # has been checked, so checked runs may extrapolate the loops' timing.
        # A modelled LLC is not part of the steady state: a skipped period would leave it stale.
        timed_only = bool(extrapolate) and self.tm is not None and self.tm.llc is None and self.machine is None
        self.extrapolating = timed_only and self.checker is None
        self.extrapolating_loops = timed_only
        self.policy = POLICY
        self.steady = steady.Report()  # over the program's loop nest
        self.steady_loops = steady.Report()  # over the FSM loops inside loop_ws / loop_conv_ws
        self._ops = tuple(sorted(queues()))

    def check(self, ins: Instr) -> None:
        if self.checker is not None:
            found = self.checker.step(ins)
            if found:
                raise IllegalProgram(found)

    def one(self, ins: Instr) -> float:
        """Check, execute and time a CPU-issued instruction; returns its issue time."""
        self.check(ins)
        self.counts[ins.op] += 1
        if ins.op == "config_st" and ins.args[2] != 0xFFFFFFFF:
            self.st_scale_bits = ins.args[2]
        if self.machine is not None:
            self.machine.execute(ins.op, ins.args)
        return self.tm.step(ins.op, ins.args) if self.tm is not None else 0.0

    def loop(self, fsm: int, t_run: float, exp: Expansion, line: int) -> None:
        """Run the commands of one hardware loop."""
        tm, machine, checker, counts = self.tm, self.machine, self.checker, self.counts
        counts.update(exp.counts)
        if checker is not None and (blk := exp.block(line)) is not None and check_block(checker, blk):
            checker = None  # every command checked (and legal) at once; else one by one below
        if machine is None and checker is None:
            if tm is not None:
                ext = (self.policy, self.steady_loops) if self.extrapolating_loops else None
                tm.run_loop(fsm, t_run, exp.entries, exp.bases, exp.segments, ext)
            return
        if tm is not None:
            tm.loop_start(fsm, t_run)
        issued: list[float] = []
        for op, args, gen, gate in exp.args():
            if checker is not None:
                found = checker.step(Instr(op, args, line))
                if found:
                    raise IllegalProgram(found)
            if machine is not None:
                machine.execute(op, args)
            if tm is not None:
                issued.append(tm.step(op, args, gen, issued[gate] if gate >= 0 else -1.0))
        if tm is not None:
            tm.loop_end(fsm)

    def _spend(self, n: int, program: Program, ins: Instr) -> None:
        """Count `n` instructions about to execute against the budget."""
        self.executed += n
        if self.executed > self.budget:
            path = program.meta.get("path") if program.meta else None
            where = f"{path}:{ins.line}" if path else f"line {ins.line}"
            raise over_budget(where, "the program executes more instructions", self.budget)

    def run(self, program: Program) -> None:
        if program.nest is not None and self.extrapolating:
            self._items(program, program.nest)
            return
        for ins in program.instrs:
            self.instr(program, ins)

    def _items(self, program: Program, items: Sequence[Item]) -> None:
        """Run a loop nest, extrapolating over steady runs of alike iterations (timing only)."""
        for it in items:
            if isinstance(it, Instr):
                self.instr(program, it)
            else:
                body = it.body
                steady.repeat(
                    it.trips,
                    it.alike,
                    lambda t, body=body: self._items(program, body(t)),  # type: ignore[misc]
                    self._mark,
                    self._skip,
                    self.policy,
                    self.steady,
                )

    def _mark(self) -> steady.Mark:
        """The timing model's mark, with the loop FSMs' slot and accumulator-half state (the
        tables rotated to the halves the next loop uses), and the instruction counts."""
        assert self.tm is not None
        ws, conv = self.fsm[WS_FSM], self.fsm[CONV_FSM]
        f = self.fsm[self._active_fsm()]
        m = self.tm.mark(f.loops % 2, f.acc_half)
        counts = np.array([self.counts[op] for op in self._ops], dtype=np.float64)
        fsm = (ws.loops, ws.flips, conv.loops, conv.flips)
        return replace(m, counters=np.concatenate((m.counters, counts)), linear=(*m.linear, *fsm))

    def _active_fsm(self) -> int:
        """The unroller the program uses (its slot and accumulator half are what rotate)."""
        return WS_FSM if self.fsm[WS_FSM].loops else CONV_FSM

    def _skip(self, s: steady.Skip) -> None:
        """Undo `_mark`'s additions: the timing model's part, then the counts and FSM state."""
        assert self.tm is not None
        n, k = len(self.tm.COUNTERS), len(s.linear) - 4
        deltas = {WS_FSM: s.linear[k : k + 2], CONV_FSM: s.linear[k + 2 :]}
        loops, flips = deltas[self._active_fsm()]
        self.tm.skip(replace(s, counters=s.counters[:n], linear=s.linear[:k]), loops % 2 == 1, flips % 2 == 1)
        for op, c in zip(self._ops, s.counters[n:], strict=True):
            if c:
                self.counts[op] += round(c)
        for fsm, (loops, flips) in deltas.items():
            f = self.fsm[fsm]
            f.loops += loops
            f.flips += flips
            f.acc_half ^= flips % 2

    def instr(self, program: Program, ins: Instr) -> None:
        """Execute one CPU-issued instruction (a hardware loop with all its commands)."""
        cfg = self.cfg
        spend = self._spend
        check_shape(ins)
        spend(1, program, ins)
        op = ins.op
        if op in LOOP_WS_CONFIGS:
            self.one(ins)
            self.fsm[WS_FSM].configure(ins)
        elif op in LOOP_CONV_CONFIGS:
            self.one(ins)
            self.fsm[CONV_FSM].configure(ins)
        elif op == "loop_ws":
            t = self.one(ins)  # the doc's rules first: an illegal operand is refused by its rule
            check_loop(self.rtl, op, self.fsm[WS_FSM].regs, ins.args, ins.line)
            exp = expand_loop_ws(cfg, self.fsm[WS_FSM], ins)
            spend(len(exp.entries), program, ins)
            self.loop(WS_FSM, t, exp, ins.line)
        elif op == "loop_conv_ws":
            t = self.one(ins)  # the doc's rules first: an illegal operand is refused by its rule
            check_loop(self.rtl, op, self.fsm[CONV_FSM].regs, ins.args, ins.line)
            exp = expand_loop_conv_ws(cfg, self.fsm[CONV_FSM], ins, self.st_scale_bits)
            spend(len(exp.entries), program, ins)
            self.loop(CONV_FSM, t, exp, ins.line)
        elif op in RTL_COMMANDS:
            self.one(ins)
            check_command(self.rtl, ins)  # a configuration the preset's RTL does not build
        else:
            self.one(ins)


def simulate(
    program: Program,
    cfg: GemminiConfig,
    dram: Dram | None = None,
    *,
    functional: bool = True,
    timing: bool = True,
    preset: str | Preset | None = None,
    check: bool = True,
    max_instructions: int | None = None,
    extrapolate: bool = False,
    llc: Llc | None = None,
) -> SimResult:
    """Simulate `program`; raises IllegalProgram on the first instruction that breaks a doc rule.

    `dram` is modified in place (and returned in the result) when `functional` is set; without
    one, an empty DRAM is used. Timing-only runs (`functional=False`) move no data.
    `max_instructions` caps the executed instructions, hardware loops expanded (LimitError
    beyond; a loop's commands are counted before it runs). Hardware loops run as the preset's
    RTL revision runs them (`platform.check_loop` refuses what it cannot run, `platform.check_command`
    a config_ld or config_ex selecting a feature its configuration does not build).
    `extrapolate` lets a timing-only run of a program that keeps its loop nest skip steady
    periods (`zomboss.steady`); the stats say how much was skipped. A preset that models an
    LLC never extrapolates. `llc` is the cache the run starts with and leaves its state in
    (for a preset that models one; default: an empty cache): pass one to run kernels one after
    another as a binary does.

    A functional and timed run is two passes over the program: the functional one (with the
    rule checker) first, then the timing model alone, whose hardware loops take the timing-only
    path over the expanded commands instead of one command at a time beside the data
    movement. Timing reads no data, so the cycles are the same (tests/targets/gemmini/
    test_simulator_passes.py), in about two thirds of the time.
    """
    p = get_preset(preset if preset is not None else cfg.preset)
    if functional and timing:
        moved = _simulate(program, cfg, dram, p, functional=True, timing=False, check=check, limit=max_instructions)
        timed = _simulate(program, cfg, None, p, timing=True, limit=max_instructions, extrapolate=extrapolate, llc=llc)
        stats = {**timed.stats, "checked": moved.stats["checked"]}
        return replace(timed, dram=moved.dram, counts=moved.counts, stats=stats)
    return _simulate(program, cfg, dram, p, functional, timing, check, max_instructions, extrapolate, llc)


def _simulate(
    program: Program,
    cfg: GemminiConfig,
    dram: Dram | None,
    p: Preset,
    functional: bool = False,
    timing: bool = False,
    check: bool = False,
    limit: int | None = None,
    extrapolate: bool = False,
    llc: Llc | None = None,
) -> SimResult:
    """One pass of `simulate` on preset `p`'s platform: the functional model, the timing model
    and the rule checker as asked."""
    run = _Run(cfg, dram, functional, p if timing else None, check, p.rtl, limit, extrapolate, llc, len(program))
    source = str(program.meta.get("path", "")) if program.meta else ""
    try:
        run.run(program)
    except IllegalProgram as e:
        if not source:
            raise
        raise IllegalProgram([replace(v, source=source) for v in e.violations]) from None
    stats: dict[str, Any] = {}
    rd = wr = 0
    if run.tm is not None:
        stats = dict(run.tm.stats)
        stats["preset"] = run.tm.p.name
        rd, wr = int(stats["rd_bytes"]), int(stats["wr_bytes"])
    stats["instructions"] = sum(run.counts.values())
    stats["checked"] = run.checker is not None
    if run.extrapolating_loops:
        stats["extrapolation"] = {"nest": run.steady.to_json(), "loops": run.steady_loops.to_json()}
    return SimResult(
        cycles=run.tm.cycles() if run.tm is not None else 0,
        dram=run.machine.dram if run.machine is not None else None,
        counts=dict(run.counts),
        dram_read_bytes=rd,
        dram_write_bytes=wr,
        stats=stats,
        breakdown=run.tm.breakdown() if run.tm is not None else {},
    )


def dynamic_stream(program: Program, cfg: GemminiConfig) -> Iterator[tuple[Instr, Mapping[int, int]]]:
    """The executed instruction stream (hardware loops expanded), without executing anything.

    Used by `kb check` on program files: the checker sees exactly what `simulate` checks. A loop
    is expanded only when its bounds respect the doc's capacity rules; an oversized loop is left
    as the single loop instruction, which the checker then refuses.
    """
    fsm = {WS_FSM: LoopFsm(), CONV_FSM: LoopFsm()}
    st_scale = ONE_F32_BITS
    for ins in program.instrs:
        yield ins, {}
        op = ins.op
        sig = operands().get(op)
        if sig is None or len(ins.args) != len(sig):
            continue  # the checker reports it
        if op in LOOP_WS_CONFIGS:
            fsm[WS_FSM].configure(ins)
        elif op in LOOP_CONV_CONFIGS:
            fsm[CONV_FSM].configure(ins)
        elif op == "config_st":
            st_scale = ins.args[2]
        elif op == "loop_ws" and _ws_fits(cfg, fsm[WS_FSM]):
            for instr, _gen, _gate in expand_loop_ws(cfg, fsm[WS_FSM], ins).commands(ins.line):
                yield instr, {}
        elif op == "loop_conv_ws" and _conv_fits(cfg, fsm[CONV_FSM]):
            try:
                exp = expand_loop_conv_ws(cfg, fsm[CONV_FSM], ins, st_scale)
            except UnsupportedLoop:
                continue  # the simulator refuses it; the checker sees the loop instruction itself
            for instr, _gen, _gate in exp.commands(ins.line):
                yield instr, {}


def _ws_fits(cfg: GemminiConfig, f: LoopFsm) -> bool:
    i, j, k = f.reg("i"), f.reg("j"), f.reg("k")
    return min(i, j, k) >= 1 and (i * k + k * j) * cfg.dim <= cfg.half_sp_rows and i * j * cfg.dim <= cfg.half_acc_rows


def _conv_fits(cfg: GemminiConfig, f: LoopFsm) -> bool:
    r = f.reg
    if min(r("batches"), r("orows"), r("ocols"), r("pochs"), r("krows"), r("kcols"), r("kchs"), r("stride")) < 1:
        return False
    dim = cfg.dim
    irows = r("orows") * r("stride") + r("krows") - 1
    icols = r("ocols") * r("stride") + r("kcols") - 1
    a_rows = -(-r("kchs") // dim) * r("batches") * irows * icols
    b_rows = -(-r("pochs") // dim) * r("krows") * r("kcols") * r("kchs")
    c_rows = -(-r("pochs") // dim) * r("batches") * r("orows") * r("ocols")
    return a_rows + b_rows <= cfg.half_sp_rows and c_rows <= cfg.half_acc_rows
