"""Cycle-approximate timing of a Gemmini instruction stream (reference §5.1-§5.2).

Three decoupled engines (LOAD, EXECUTE, STORE) behind a reservation station (RS) with
per-queue capacities, address-range dependencies between queues, a DMA that sends each row as
the aligned power-of-two TileLink requests the RTL picks (over-fetching) with in-flight limits
(requests, and mvins per the load controller's command tracker) and 16-byte beats, DRAM
row-buffer misses of an open-page DDR3 (behind the preset's LLC, if it models one: `llc.py`),
the load path's pixel repeater (a row loaded with `pixel_repeats` > 1 is written that many
times), the execute unit's preload/compute overlap rule,
config_ex draining the array, serialised mvouts and fences.

The engine is a scoreboard evaluated in program order, which is exact for this model
because nothing younger ever delays something older: each instruction's allocation, start
and completion follow from already-timed instructions. Instructions issued by the CPU
allocate RS entries in order; those issued by a loop FSM allocate per generator (load,
execute, store), each waiting for the commands it depends on to have been issued.

The model is split by job: the scoreboard state (`state.py`), the commands' timing by engine
(`engines.py`), steady-state marks and skips (`extrapolation.py`), the DMA's request plans
(`dma.py`) and the cycle breakdown (`breakdown.py`). This module issues the commands: the CPU's
and the loop FSMs' reservation-station allocation, and the dispatch of each to its handler.

Cycle breakdown (`Timing.breakdown`, `breakdown.py`): every cycle of the makespan is attributed
to compute, memory, overhead or stall from the busy intervals the engines record; the
accounting never changes a time.
"""

from __future__ import annotations

from heapq import heappop

from zomboss.targets.gemmini.breakdown import parts
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.issue import issue_cycles
from zomboss.targets.gemmini.llc import Llc
from zomboss.targets.gemmini.loops import CPU, GEN_EX
from zomboss.targets.gemmini.presets import Preset

from zomboss.machine import Policy, Report, Skip
from zomboss.machine import steady as steady

from .engines import Engines
from .extrapolation import Extrapolation
from .state import LoopRun, free_entry

_COMPUTES = frozenset(("compute_preloaded", "compute_accumulated"))


class Timing(Engines, Extrapolation):
    """The timing model: `step` times one instruction and returns its RS allocation time,
    `run_loop` a whole hardware loop; `cycles` and `breakdown` are the result."""

    def __init__(self, cfg: GemminiConfig, preset: Preset, llc: Llc | None, instructions: int) -> None:
        """`instructions`: the program's CPU-issued instructions, which decide the form it is
        exported in and so what issuing one costs the CPU (`issue.issue_cycles`)."""
        super().__init__(cfg, preset, llc)
        self.issue = issue_cycles(instructions, preset.cpu_cpi)
        self._handlers = {
            "mvin": lambda a, t: self.on_mvin(0, a, t),
            "mvin2": lambda a, t: self.on_mvin(1, a, t),
            "mvin3": lambda a, t: self.on_mvin(2, a, t),
            "preload": self.on_preload,
            "compute_preloaded": self.on_compute,
            "compute_accumulated": self.on_compute,
            "mvout": self.on_mvout,
            "config_ld": self.on_config_ld,
            "config_st": self.on_config_st,
            "config_ex": self.on_config_ex,
            "fence": self._fence,
            "flush": self._nop,
        }

    @property
    def stats(self) -> dict[str, float]:
        return {
            "rd_packets": self.rd_packets,
            "wr_packets": self.wr_packets,
            "rd_bytes": self.rd_bytes,
            "rd_fetched_bytes": self.rd_fetched,
            "wr_bytes": self.wr_bytes,
            "dram_row_misses": self.row_misses,
            **({"llc_read_hits": self.llc_hits, "llc_read_misses": self.llc_misses} if self.llc is not None else {}),
            "pairs": self.pairs,
            "overlapped_pairs": self.overlapped,
            "ex_busy": self.ex_busy,
            "config_ex_stall": self.cfg_ex_stall,
            "cpu_issue": self.issue,  # CPU cycles per command in the form the program is exported as
        }

    # ------------------------------------------------------------------------------------------
    # allocation
    # ------------------------------------------------------------------------------------------
    def _alloc(self, q: int, t: float, reserve: int) -> float:
        """Earliest time >= t with a free RS entry of queue q (`reserve` entries held back)."""
        return free_entry(self.rs[q], self.cap[q] - reserve, t)

    def step(self, op: str, args: tuple[int, ...], gen: int = CPU, gate: float = -1.0) -> float:
        """Time one instruction; returns its RS allocation (issue) time."""
        q = self.queue[op]
        if gen == CPU:
            if q is None and op != "fence" and op != "flush":
                return self._loop_config(op)
            t = self.t_cpu
            if t <= self.last_alloc:
                t = self.last_alloc + 1
            if t <= self.fsm_busy:
                t = self.fsm_busy + 1
            if q is not None:
                t = self._alloc(q, t, 1 if op in _COMPUTES else 0)
            self.last_alloc = t
            self.t_cpu = t + self.issue
        else:
            t = self.gen_prev[gen] + 1
            if t < self.loop_floor:
                t = self.loop_floor
            if gate > t:
                t = gate
            heap = self.rs[q]
            while heap and heap[0] <= t:
                heappop(heap)
            if len(heap) >= self.cap[q] - (gen == GEN_EX and op in _COMPUTES):
                t = self._alloc(q, t, 1 if op in _COMPUTES else 0)
            self.gen_prev[gen] = t
            if t > self.loop_max_alloc:
                self.loop_max_alloc = t
        self._handlers[op](args, t)
        return t

    # ------------------------------------------------------------------------------------------
    # loop FSMs
    # ------------------------------------------------------------------------------------------
    def _loop_config(self, op: str) -> float:
        """A loop configuration or start instruction: CPU cost, and a free FSM slot."""
        fsm = 1 if op.startswith("loop_conv") else 0
        t = self.t_cpu
        if not self.configuring[fsm]:
            self.configuring[fsm] = True
            t = max(t, self.slot_free.get((fsm, self.loop_count[fsm] % 2), 0.0))
        self.t_cpu = t + self.issue
        return t

    def loop_start(self, fsm: int, t_run: float) -> None:
        """The loop instruction was accepted at t_run: its generators may start next cycle."""
        self.configuring[fsm] = False
        self.loop_floor = t_run + 1
        self.loop_max_alloc = t_run + 1

    def loop_end(self, fsm: int) -> None:
        """All commands of the loop are issued: its slot frees when the last one was."""
        self.slot_free[(fsm, self.loop_count[fsm] % 2)] = self.loop_max_alloc + 1
        self.loop_count[fsm] += 1
        if self.loop_max_alloc > self.fsm_busy:
            self.fsm_busy = self.loop_max_alloc

    def run_loop(
        self,
        fsm: int,
        t_run: float,
        entries,  # noqa: ANN001
        bases: tuple[int, ...],
        segments: tuple[tuple[int, int, int], ...] = (),
        extrapolate: tuple[Policy, Report] | None = None,
    ) -> None:
        """Time all commands of one hardware loop: the timing-only fast path, `step` and
        `_alloc` inlined and each preload timed together with its compute.
        `entries`/`bases`/`segments` are a `loops.Expansion`'s template, DRAM bases and runs
        of alike groups; with `extrapolate`, steady periods of those runs are skipped."""
        self.loop_start(fsm, t_run)
        lr = LoopRun(entries, (0, *bases))
        lr.top = self.loop_max_alloc
        i = 0
        if extrapolate is not None:
            for start, length, groups in segments:
                self._entries(lr, i, start)
                self._segment(lr, start, length, groups, *extrapolate)
                i = start + length * groups
        self._entries(lr, i, len(entries))
        self.loop_max_alloc = lr.top
        self.loop_end(fsm)

    def _entries(self, lr: LoopRun, i: int, n: int) -> None:
        """Time entries [i, n) of the running loop."""
        entries, issued, base = lr.entries, lr.issued, lr.base
        push = issued.append
        gen_prev, rs, cap, handlers = self.gen_prev, self.rs, self.cap, self._handlers
        floor = self.loop_floor
        top = lr.top
        queue = self.queue
        while i < n:
            op, args, gen, gate, reloc = entries[i]
            t = gen_prev[gen] + 1
            if t < floor:
                t = floor
            if gate >= 0 and issued[gate] > t:
                t = issued[gate]
            if op == "preload":  # with the compute after it (the expansion always pairs them)
                lr.top = top
                i = self.time_pairs(entries, i, n, lr)
                top = lr.top
                continue
            if reloc:
                args = (args[0] + base[reloc], *args[1:])
            q = queue[op]
            heap = rs[q]
            t = free_entry(heap, cap[q] - 1 if op in _COMPUTES else cap[q], t)
            gen_prev[gen] = t
            if t > top:
                top = t
            handlers[op](args, t)
            push(t)
            i += 1
        lr.top = top

    def _segment(self, lr: LoopRun, start: int, length: int, groups: int, policy: Policy, report: Report) -> None:
        """Time a run of alike groups, skipping whole periods once they repeat."""
        gens = sorted({e[2] for e in lr.entries[start : start + length]})
        at = [0]  # the next group to time

        def body(g: int) -> None:
            self._entries(lr, start + g * length, start + (g + 1) * length)
            at[0] = g + 1

        def skip(sk: Skip) -> None:
            period = (sk.iterations // sk.periods) * length
            dtp = sk.dt / sk.periods
            iss = lr.issued
            n = sk.iterations * length
            # Issue times of the skipped commands: later commands gate only on their own group
            # or on commands after the run (a store on the last compute of its tile), so only
            # the last skipped period is needed exactly.
            last = [x + dtp * sk.periods for x in iss[len(iss) - period :]]
            iss.extend(last[:1] * (n - period))
            iss.extend(last)
            self.translate_recent(lr, start, start + at[0] * length, n, sk.dt, sk.since - 1.0)
            self.skip(sk, rows=False)
            lr.top += sk.dt
            at[0] += sk.iterations

        steady.repeat(groups, lambda g: 0, body, lambda: self.loop_mark(lr, gens), skip, policy, report)

    # ------------------------------------------------------------------------------------------
    # CPU-side
    # ------------------------------------------------------------------------------------------
    def idle_time(self) -> float:
        """When every engine, queue and outstanding write is done."""
        t = max(
            self.ld_last_done,
            self.ld_free,
            self.ex_drained,
            self.ex_free,
            self.st_done,
            self.wr_last_ack,
            self.last_alloc,
            self.fsm_busy,
        )
        for heap in self.rs:
            if heap:
                t = max(t, max(heap))
        return t

    def _fence(self, args: tuple[int, ...], t: float) -> None:
        idle = self.idle_time()
        self.busy_fixed.add(idle, idle + self.p.fence_cycles)
        self.t_cpu = max(self.t_cpu, idle + self.p.fence_cycles)

    def _nop(self, args: tuple[int, ...], t: float) -> None:
        pass

    def cycles(self) -> int:
        """Total cycles from the first instruction to the end of the last one (CPU or Gemmini)."""
        return int(round(max(self.idle_time(), self.t_cpu)))

    def breakdown(self) -> dict[str, int]:
        """`cycles()` split into compute / memory / overhead / stall (`breakdown.py`)."""
        busy = (self.busy_ex, self.busy_ld, self.busy_st, self.busy_fixed)
        return parts(busy, self.skipped, max(self.idle_time(), self.t_cpu), self.cycles())
