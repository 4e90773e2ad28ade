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

Per-row dependency tables hold, for every scratchpad/accumulator row, the completion time of
the latest load writing it, execute reading or writing it and store reading it; a slice max
over an instruction's row range is the RS's range-overlap check. The hot path is plain
integer/float arithmetic on Python lists: no numpy, no per-element loops.

Cycle breakdown (`Timing.breakdown`, `breakdown.py`): every cycle of the makespan is attributed
to compute, memory, overhead or stall from the busy intervals the engines record; the
accounting never changes a time.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from heapq import heappop, heappush

import numpy as np
from zomboss.targets.gemmini.asm import EX, GARBAGE, IS_ACC, LD, READ_FULL, ST, queues
from zomboss.targets.gemmini.breakdown import Busy, Skipped, parts, skip_busy
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.dma import dma_packets, read_plan, row_ends
from zomboss.targets.gemmini.llc import Llc
from zomboss.targets.gemmini.loops import CPU, EXECUTES, GEN_EX, GEN_LD, GEN_ST, Entry
from zomboss.targets.gemmini.presets import Preset

from zomboss.machine import Mark, Policy, Report, Skip
from zomboss.machine import steady as steady

_COMPUTES = frozenset(("compute_preloaded", "compute_accumulated"))
_LOAD_SID = {"mvin": 0, "mvin2": 1, "mvin3": 2}  # a load's mover (its config_ld state)


def _free_entry(heap: list[float], cap: int, t: float) -> float:
    """Earliest time >= t at which the queue whose entries free at the times in `heap` has fewer
    than `cap` busy entries; entries freed by then leave the heap."""
    while heap and heap[0] <= t:
        heappop(heap)
    while len(heap) >= cap:
        t2 = heappop(heap)
        if t2 > t:
            t = t2
        while heap and heap[0] <= t:
            heappop(heap)
    return t


def _array(xs: list[float]) -> np.ndarray:
    """A per-row table as a float64 array: packed as C doubles, which is several times faster
    than numpy's element-by-element conversion of a long list (the same values)."""
    return np.frombuffer(struct.pack(f"{len(xs)}d", *xs), dtype=np.float64)


def _raise_bound(hw: list[float], half: int, lo: int, hi: int, x: float) -> None:
    """Keep a per-half bound `hw` above a time x just written to rows [lo, hi) (rows past
    both halves are not bounded: a scan whose range reaches them does not use `hw`)."""
    h = lo // half
    if h < 2 and x > hw[h]:
        hw[h] = x
    h2 = min((hi - 1) // half, 1)
    if h2 > h and x > hw[h2]:
        hw[h2] = x


def _moved(xs: list[float], lo: float, dt: float) -> list[float]:
    """`xs` with every time from `lo` on moved by dt (earlier ones cannot delay anything)."""
    return [x + dt if x >= lo else x for x in xs]


class _LoopRun:
    """The running loop's entries, DRAM bases, issue times so far and highest allocation."""

    __slots__ = ("base", "entries", "issued", "top")

    def __init__(self, entries: tuple, base: tuple[int, ...]) -> None:
        self.entries, self.base = entries, base
        self.issued: list[float] = []
        self.top = 0.0


class Timing:
    """Scoreboard state; `step` times one instruction and returns its RS allocation time."""

    def __init__(self, cfg: GemminiConfig, preset: Preset, llc: Llc | None = None) -> None:
        self.cfg, self.p = cfg, preset
        self.store_fixed_acc = preset.store_fixed_acc
        self.dim = cfg.dim
        self.row_mask = cfg.row_mask
        self.queue = queues()
        self.bank_rows = cfg.sp_bank_rows
        self.cap = (cfg.rs_ld, cfg.rs_ex, cfg.rs_st)
        self.rs: tuple[list[float], list[float], list[float]] = ([], [], [])
        # CPU front end (every kernel pays the fixed invocation overhead before its first command)
        self.t_cpu = float(preset.kernel_overhead)
        self.last_alloc = -1.0
        self.fsm_busy = -1.0  # last allocation by any loop FSM (CPU commands queue behind it)
        # loop FSMs: last allocation per generator, slot-free times, the running loop's floor
        self.gen_prev = [0.0, -1.0, -1.0, -1.0]
        self.loop_floor = 0.0
        self.loop_max_alloc = 0.0
        self.slot_free: dict[tuple[int, int], float] = {}
        self.configuring = [False, False]
        self.loop_count = [0, 0]
        # shadow configuration needed for timing
        self.ld_stride = [0, 0, 0]
        self.ld_shrunk = [0, 0, 0]
        self.ld_bstride = [cfg.dim] * 3
        self.ld_pix = [1, 1, 1]  # pixel repeats of each mvin state (config_ld; 0 means 1)
        self.st_stride = 0
        self.st_pool = (0, 0, 0, 0, 0, 0)  # pool_stride, orows, ocols, porows, pocols, pool_out_dim
        self.ws, self.a_t, self.b_t, self.a_stride, self.c_stride = False, 0, 0, 1, 1
        # load engine / DMA reader
        self.ld_free = 0.0
        self.ld_last_done = 0.0
        self.ld_rep_free = 0.0  # when the pixel repeater has written the rows of the last repeated load
        self.rd_chan = 0.0
        self.rd_ring = [0.0] * preset.max_rd_inflight  # return times, circular
        self.rd_k = 0
        self.rd_next = [*range(1, preset.max_rd_inflight), 0]  # the ring's next slot after each
        # LoadController's DMACommandTracker: nCmds = max_in_flight_mem_reqs / block_rows + 1 mvins
        # hold a tracker entry from their first request until their last byte is written
        self.ld_trk = [0.0] * (preset.max_rd_inflight // cfg.dim + 1)  # when each entry frees
        # execute engine
        self.ex_free = 0.0
        self.ex_drained = 0.0
        self.pend: tuple | None = None  # the preload waiting for its compute
        self.prev_start = -1.0  # start of the previous compute (overlap window), -1: none
        self.prev_a_bank = -1
        self.prev_feed = 0
        # store engine / DMA writer
        self.st_done = 0.0
        self.wr_chan = 0.0
        self.wr_ring = [0.0] * preset.max_wr_inflight  # acknowledgement times, circular
        self.wr_k = 0
        self.wr_last_ack = 0.0
        # DRAM row buffers (open-page DDR3): the row open in each (rank, bank), and the last row
        # (address >> row_shift) a DMA request touched
        self.row_shift = preset.dram_row_bytes.bit_length() - 1
        self.open_rows = [-1] * preset.dram_row_buffers
        self.row_last = -1
        # the LLC (a given one carries what earlier kernels left in it), and its read outcomes
        self.llc = None
        if preset.llc_sets:
            if preset.llc_block_bytes < preset.max_packet:  # (`_read_rows_llc`: one block per request)
                raise ValueError(f"LLC blocks of {preset.llc_block_bytes} B are smaller than a DMA request")
            self.llc = llc if llc is not None else preset.new_llc()
        self.llc_hits = self.llc_misses = 0
        # per-row dependency tables [spad, acc]: completion of the latest write (load or
        # execute) and of the latest read (execute or store) of every row. In the accumulator,
        # `w`/`r` share one table for load writes and store reads (the array never reads it: WS
        # bias and OS D come from the scratchpad; stores are serialised anyway), and execute
        # writes have their own table `acc_ex`: loads and stores wait for them, but a preload
        # does not. The RS has no execute-execute dependency (§5.1: ex commands issue in order
        # among themselves), and consecutive computes accumulating into the same rows is the
        # normal case (the array's accumulator write pipeline orders them, §5.1 floor of 4 rows).
        # Loads do not wait for older loads (see `_mvin`): `acc_rd` (store reads of accumulator
        # rows) and `sp_ex` (execute writes of scratchpad rows) are what a load waits for.
        sp, acc = cfg.sp_rows, [0.0] * cfg.acc_rows
        self.w = ([0.0] * sp, acc)
        self.r = ([0.0] * sp, acc)
        # Upper bounds of the tables' times, so that a command need not scan rows bounded below
        # what it compares them with (only speed depends on them): per scratchpad half, of
        # `r[0]` (`sp_hw`) and of `sp_ex` (`ex_hw`), which a load scans (a wide range, blocks at
        # a large block stride, is most of a convolution's prologue; `sp_ex` stays in the past
        # when outputs go to the accumulator); of all of `w[0]` (`w_top`: loads complete in
        # order, and a compute's operands have mostly arrived); per accumulator half, of `w[1]`
        # (`acc_hw`: store reads of an output tile are rarely pending when it is next written);
        # of all of `acc_rd` (`rd_top`: stores complete in order).
        self.sp_half = max(1, (sp + 1) // 2)
        self.sp_hw = [0.0, 0.0]
        self.ex_hw = [0.0, 0.0]
        self.w_top = 0.0
        self.acc_half = max(1, (cfg.acc_rows + 1) // 2)
        self.acc_hw = [0.0, 0.0]
        self.rd_top = 0.0
        self.acc_ex = [0.0] * cfg.acc_rows
        self.acc_rd = [0.0] * cfg.acc_rows
        self.sp_ex = [0.0] * sp
        # statistics
        self.rd_packets = self.wr_packets = self.rd_bytes = self.wr_bytes = self.row_misses = 0
        self.rd_fetched = 0  # bytes the read requests carried (>= rd_bytes: requests over-fetch)
        self.pairs = self.overlapped = 0
        self.ex_busy = 0.0
        self.cfg_ex_stall = 0.0
        # busy intervals for the cycle breakdown (see the module docstring)
        self.busy_ex, self.busy_ld, self.busy_st, self.busy_fixed = Busy(), Busy(), Busy(), Busy()
        self.busy_fixed.add(0.0, float(preset.kernel_overhead))
        self.skipped = Skipped()  # the busy lengths of extrapolated periods (see `skip`)
        self._recent: tuple = ()  # the last loop's entries
        self._handlers = {
            "mvin": lambda a, t: self._mvin(0, a, t),
            "mvin2": lambda a, t: self._mvin(1, a, t),
            "mvin3": lambda a, t: self._mvin(2, a, t),
            "preload": self._preload,
            "compute_preloaded": self._compute,
            "compute_accumulated": self._compute,
            "mvout": self._mvout,
            "config_ld": self._config_ld,
            "config_st": self._config_st,
            "config_ex": self._config_ex,
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
        }

    # ------------------------------------------------------------------------------------------
    # allocation
    # ------------------------------------------------------------------------------------------
    def _alloc(self, q: int, t: float, reserve: int) -> float:
        """Earliest time >= t with a free RS entry of queue q (`reserve` entries held back)."""
        return _free_entry(self.rs[q], self.cap[q] - reserve, t)

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
            self.t_cpu = t + self.p.cpu_issue
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
        self.t_cpu = t + self.p.cpu_issue
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
        lr = _LoopRun(entries, (0, *bases))
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
        self._recent = entries

    def _entries(self, lr: _LoopRun, i: int, n: int) -> None:
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
                i = self._pairs(entries, i, n, lr)
                top = lr.top
                continue
            if reloc:
                args = (args[0] + base[reloc], *args[1:])
            q = queue[op]
            heap = rs[q]
            t = _free_entry(heap, cap[q] - 1 if op in _COMPUTES else cap[q], t)
            gen_prev[gen] = t
            if t > top:
                top = t
            handlers[op](args, t)
            push(t)
            i += 1
        lr.top = top

    def _segment(self, lr: _LoopRun, start: int, length: int, groups: int, policy: Policy, report: Report) -> None:
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
            self._translate_recent(lr, start, start + at[0] * length, n, sk.dt, sk.since - 1.0)
            self.skip(sk, rows=False)
            lr.top += sk.dt
            at[0] += sk.iterations

        steady.repeat(groups, lambda g: 0, body, lambda: self._loop_mark(lr, gens), skip, policy, report)

    def _loop_mark(self, lr: _LoopRun, gens: list[int]) -> Mark:
        """The state at a group boundary inside a loop, relative to the earliest clock of the
        generators that issue the group (nothing they issue next starts earlier). The
        per-row tables are left out: pending rows are written by commands still in the
        reservation station, whose completions are the queue contents compared here."""
        gen_prev, floor = self.gen_prev, self.loop_floor
        now = min(gen_prev[g] if gen_prev[g] > floor else floor for g in gens)
        # the times, made relative in one numpy subtraction (the same differences); a queue's
        # unused entries are -inf, which the clamp to -1 below turns into exactly -1
        raw = [getattr(self, n) for n in self._ENGINE_SCALARS]
        raw += [gen_prev[g] for g in gens]
        raw.append(lr.top)
        raw += self.rd_ring[self.rd_k :] + self.rd_ring[: self.rd_k]
        raw += sorted(self.ld_trk)
        raw += self.wr_ring[self.wr_k :] + self.wr_ring[: self.wr_k]
        for q, heap in enumerate(self.rs):
            live = sorted(x for x in heap if x > now)
            raw += live + [-math.inf] * (self.cap[q] + 1 - len(live))
        state = np.maximum(np.array(raw, dtype=np.float64) - now, -1.0)
        counters = np.array([float(getattr(self, n)) for n in self._COUNTERS])
        # An engine the group does not use must be idle: its pending work (the tail of an
        # earlier phase, e.g. loads still streaming in under the execute stream) is not part of
        # the period and would be wrongly extended by a skip.
        idle = all(max(self._engine_times(g)) <= now for g in (GEN_LD, GEN_EX, GEN_ST) if g not in gens)
        return Mark(now, state, counters, (), self._key() if idle else object(), self._tally())

    def _engine_times(self, gen: int) -> list[float]:
        """The times a FSM generator's engine (and queue) is busy until."""
        if gen == GEN_LD:
            return [
                self.ld_free,
                self.ld_last_done,
                self.ld_rep_free,
                self.rd_chan,
                *self.rd_ring,
                *self.ld_trk,
                *self.rs[LD],
            ]
        if gen == GEN_EX:
            return [self.ex_free, self.ex_drained, *self.rs[EX]]
        return [self.st_done, self.wr_chan, self.wr_last_ack, *self.wr_ring, *self.rs[ST]]

    def _translate_recent(self, lr: _LoopRun, first: int, upto: int, n: int, dt: float, lo: float) -> None:
        """After a skip of the `n` entries from `upto` on (whole periods of the run that starts at
        entry `first`): each still-pending row (>= lo) of the run's most recent commands moves,
        later by dt, to the same place in the rows of its counterpart `n` entries on, the
        command that would be pending now; the original rows keep their real times. Where the
        counterpart touches the same rows (an accumulator tile written every period) this is
        a shift in place; where the rows advance with the run (each group reads other input
        rows) a shift in place would leave those rows busy into the future and delay whatever
        loads them next. Only commands still in a reservation station can have a pending row,
        and there are at most the queues' capacities of them; commands before the run keep
        their times (a steady period has none pending: the marks compare the queues)."""
        budget = 4 * sum(self.cap) + 16
        by_mem: tuple[list[list[float]], list[list[float]]] = ([], [])  # each memory's tables, in order
        for (mem, t), top in zip(self._tables(), self._table_bounds(), strict=True):
            if top >= lo:  # (else no row of it is pending)
                by_mem[mem].append(t)
        entries, rows_of = lr.entries, self._rows_of()
        spans: list[tuple[int, int, int, int]] = []  # (memory, rows, destination) per command span
        for i in range(max(first, upto - budget), upto):
            (op, args, *_), (op2, args2, *_) = entries[i], entries[i + n]
            for (m, a, b), (m2, a2, b2) in zip(rows_of(op, args), rows_of(op2, args2), strict=True):
                if m != m2 or b - a != b2 - a2:  # (alike groups have the same spans; be safe)
                    a2 = a
                spans.append((m, a, b, a2))
        # A span repeated (an output tile accumulated over several k steps) computes the same
        # moves from the same tables each time, and the last one applied wins: only the last
        # occurrence of each is needed.
        last = {span: j for j, span in enumerate(spans)}
        moves: list[tuple[int, list[float], int, list[float]]] = []
        for j, (m, a, b, a2) in enumerate(spans):
            if last[(m, a, b, a2)] == j:
                for t in by_mem[m]:
                    k = min(b - a, len(t) - a, len(t) - a2)  # (a superset span may pass the table's end)
                    src = t[a : a + k]
                    if src and max(src) >= lo:
                        vals = t[a2 : a2 + k]  # pending rows move, the others keep the destination's
                        if k > 64:  # (a wide superset span: find its few pending rows in numpy)
                            for r in np.flatnonzero(_array(src) >= lo).tolist():
                                vals[r] = src[r] + dt
                        else:
                            vals = [v + dt if v >= lo else d for v, d in zip(src, vals, strict=True)]
                        moves.append((m, t, a2, vals))
        for _m, t, a2, vals in moves:
            t[a2 : a2 + len(vals)] = vals
            x = max(vals)
            if t is self.w[0]:
                self.w_top = max(self.w_top, x)
            elif t is self.acc_rd:
                self.rd_top = max(self.rd_top, x)
            elif t is self.w[1]:
                _raise_bound(self.acc_hw, self.acc_half, a2, a2 + len(vals), x)
            elif t is self.r[0] or t is self.sp_ex:
                _raise_bound(self.sp_hw if t is self.r[0] else self.ex_hw, self.sp_half, a2, a2 + len(vals), x)

    def _reset_bounds(self, arrays: list[np.ndarray | None], sp_swap: bool, acc_swap: bool) -> None:
        """Recompute the tables' bounds after a shift of whole tables, from their new contents
        (`arrays`, in `_tables()` order; None: a table nothing moved in, whose bound stands,
        its halves traded with the table's)."""
        w0, r0, ex, w1, _acc_ex, rd = arrays
        for hw, half, a, t, swap in (
            (self.sp_hw, self.sp_half, r0, self.r[0], sp_swap),
            (self.ex_hw, self.sp_half, ex, self.sp_ex, sp_swap),
            (self.acc_hw, self.acc_half, w1, self.w[1], acc_swap),
        ):
            if a is not None:
                hw[:] = [float(a[:half].max(initial=0.0)), float(a[half:].max(initial=0.0))]
            elif swap:  # (halves of unequal length: both bounded by the larger)
                hw[:] = hw[::-1] if len(t) == 2 * half else [max(hw)] * 2
        if w0 is not None:
            self.w_top = float(w0.max(initial=0.0))
        if rd is not None:
            self.rd_top = float(rd.max(initial=0.0))

    def _table_bounds(self) -> tuple[float, ...]:
        """An upper bound of the times in each of `_tables()` (inf: none kept; a per-half
        bound holds for a table no longer than its two halves)."""

        def halves(hw: list[float], half: int, t: list[float]) -> float:
            return max(hw) if len(t) <= 2 * half else math.inf

        return (
            self.w_top,
            halves(self.sp_hw, self.sp_half, self.r[0]),
            halves(self.ex_hw, self.sp_half, self.sp_ex),
            halves(self.acc_hw, self.acc_half, self.w[1]),
            math.inf,
            self.rd_top,
        )

    def _rows_of(self) -> Callable[[str, tuple[int, ...]], list[tuple[int, int, int]]]:
        """(memory, first row, end row) ranges a command may touch (a superset is harmless: a
        row that is not pending stays in the past however far it moves), as a function of the
        command under the current configuration (bound once per `_translate_recent`)."""
        mask, dim, bstride, pix = self.row_mask, self.dim, tuple(self.ld_bstride), tuple(self.ld_pix)
        scale = max(self.a_stride, self.c_stride, 1)
        pool = self.st_pool[1] * self.st_pool[2]  # (a pooled store reads the whole tile)

        def rows_of(op: str, args: tuple[int, ...]) -> list[tuple[int, int, int]]:
            out = []
            if op in EXECUTES:
                n = max(args[2:6]) * scale + 1
                for x in (args[0], args[1]):
                    if x != GARBAGE:
                        out.append((1 if x & IS_ACC else 0, x & mask, (x & mask) + n))
                return out
            sid = _LOAD_SID.get(op, -1)
            if sid >= 0 or op == "mvout":
                local, cols, rows = args[1], args[2], args[3]
                lo = local & mask
                span = (-(-cols // dim) - 1) * (bstride[sid] if sid >= 0 else dim) + max(rows, 1)
                if sid < 0 and pool > span:
                    span = pool
                end = lo + span
                if sid >= 0 and pix[sid] > 1:  # (the repeated writes reach the rows above)
                    lo = max(0, lo - pix[sid] + 1)
                out.append((1 if local & IS_ACC else 0, lo, end))
            return out

        return rows_of

    # ------------------------------------------------------------------------------------------
    # DMA helpers
    # ------------------------------------------------------------------------------------------
    def _row_miss(self, chunk: int) -> float:
        """Stall for a request into DRAM row chunk (= address >> row_shift) when its bank has
        another row open (open-page policy); `chunk` differs from the last request's."""
        self.row_last = chunk
        n = self.p.dram_row_buffers
        key, row = chunk % n, chunk // n
        if self.open_rows[key] == row:
            return 0.0
        self.open_rows[key] = row
        self.row_misses += 1
        return self.p.dram_row_miss

    def _read_rows(
        self, t: float, addr: int, nrows: int, nbytes: int, stride: int, arrivals: list[float] | None = None
    ) -> tuple[float, float]:
        """Issue the read requests of nrows DRAM rows from time t; returns (issue end, last data).

        `rd_ring` is a circular buffer of the data-return times of the last max_rd_inflight
        requests: a request may issue once the one max_rd_inflight before it has returned.
        `arrivals`, if given, receives each request's last-data time in issue order.
        """
        if self.llc is not None:
            return self._read_rows_llc(t, addr, nrows, nbytes, stride, arrivals)
        p = self.p
        lat = p.rd_latency
        page_shift = self.row_shift
        ring, nxt, k = self.rd_ring, self.rd_next, self.rd_k
        chan = self.rd_chan
        last_page = self.row_last
        cyc_per_beat = p.beat_bytes / p.rd_bytes_per_cycle
        plan, fetched = read_plan(addr % p.max_packet, nrows, nbytes, stride, p.max_packet, p.beat_bytes, cyc_per_beat)
        for off, occ in plan:
            free = ring[k]
            if free > t:
                t = free
            page = (addr + off) >> page_shift
            if page != last_page:
                t += self._row_miss(page)
                last_page = page
            arrive = t + lat
            chan = (arrive if arrive > chan else chan) + occ
            ring[k] = chan
            k = nxt[k]
            t += 1
            if arrivals is not None:
                arrivals.append(chan)
        self.rd_chan, self.rd_k = chan, k
        self.rd_packets += len(plan)
        self.rd_bytes += nrows * nbytes
        self.rd_fetched += fetched
        return t, chan

    def _read_rows_llc(
        self, t: float, addr: int, nrows: int, nbytes: int, stride: int, arrivals: list[float] | None = None
    ) -> tuple[float, float]:
        """`_read_rows` behind the LLC: a request that hits returns after rd_latency; one that
        misses also waits llc_miss_latency for the DRAM and pays the row-miss stall if it opens
        another DRAM row (only misses reach the DRAM). Both share the one return channel."""
        p, llc = self.p, self.llc
        assert llc is not None
        lat, miss_lat = p.rd_latency, p.rd_latency + p.llc_miss_latency
        page_shift, shift, touch = self.row_shift, llc.shift, llc.touch
        ring, nxt, k = self.rd_ring, self.rd_next, self.rd_k
        chan = self.rd_chan
        last_page = self.row_last
        cyc_per_beat = p.beat_bytes / p.rd_bytes_per_cycle
        plan, fetched = read_plan(addr % p.max_packet, nrows, nbytes, stride, p.max_packet, p.beat_bytes, cyc_per_beat)
        last_block, hit = -1, True
        hits = 0
        for off, occ in plan:
            free = ring[k]
            if free > t:
                t = free
            a = addr + off
            block = a >> shift
            if block != last_block:  # (a request never spans blocks: both are aligned powers of 2)
                hit = touch(block)
                last_block = block
            if hit:
                hits += 1
                arrive = t + lat
            else:
                page = a >> page_shift
                if page != last_page:
                    t += self._row_miss(page)
                    last_page = page
                arrive = t + miss_lat
            chan = (arrive if arrive > chan else chan) + occ
            ring[k] = chan
            k = nxt[k]
            t += 1
            if arrivals is not None:
                arrivals.append(chan)
        self.rd_chan, self.rd_k = chan, k
        self.llc_hits += hits
        self.llc_misses += len(plan) - hits
        self.rd_packets += len(plan)
        self.rd_bytes += nrows * nbytes
        self.rd_fetched += fetched
        return t, chan

    # ------------------------------------------------------------------------------------------
    # load queue
    # ------------------------------------------------------------------------------------------
    def _config_ld(self, args: tuple[int, ...], t: float) -> None:
        sid, stride, shrunk, bstride, pix, _scale = args
        self.ld_stride[sid], self.ld_shrunk[sid], self.ld_bstride[sid] = stride, shrunk, bstride
        self.ld_pix[sid] = pix if pix > 1 else 1  # (LoadController: 0 means 1)
        start = t if t > self.ld_free else self.ld_free
        self.ld_free = start + 1
        self.busy_fixed.add(start, start + 1)
        heappush(self.rs[LD], start + 1)

    def _mvin(self, sid: int, args: tuple[int, ...], t: float) -> None:
        dram, local, cols, rows = args
        m = 1 if local & IS_ACC else 0
        row = local & self.row_mask
        blocks = -(-cols // self.dim)
        hi = row + (blocks - 1) * self.ld_bstride[sid] + rows
        pix = self.ld_pix[sid]
        if pix > 1 and not m:
            # The pixel repeater writes repeat q of a row q rows up, not below the start of the
            # row's scratchpad half (PixelRepeater.scala floorSub, lines 60-68); the RS's range
            # for the load starts there too (ReservationStation.scala lines 289-304).
            base = 0 if row < self.sp_half else self.sp_half
            row = max(base, row - (pix - 1))
        ready = t if t > self.ld_free else self.ld_free
        # The RS makes a load wait for older loads only until they have issued (deps_ld of a load:
        # `entries_ld.map { e => e.valid && !e.bits.issued }`), which the in-order load engine
        # already gives; address ranges only order it after older ex and st entries.
        if m:
            v = self.rd_top
            if v > ready:
                v = max(self.acc_rd[row:hi])  # WAR: stores still reading these accumulator rows
            r = max(self.acc_ex[row:hi])  # WAW/WAR on rows an older preload still writes
        else:
            half = self.sp_half
            h0 = row // half
            one = (hi - 1) // half == h0  # (else a range across both halves)
            hw = self.sp_hw
            v = hw[h0] if one else max(hw)
            if v > ready:
                v = max(self.r[0][row:hi])  # WAR: the array or a store still reads these rows
            hw = self.ex_hw
            r = hw[h0] if one else max(hw)
            if r > ready:
                r = max(self.sp_ex[row:hi])  # WAW: an older preload still writes its output here
        if r > v:
            v = r
        if v > ready:
            ready = v
        # A mvin starts only with a free DMACommandTracker entry (LoadController.scala:
        # `cmd_tracker.io.alloc.ready` gates its first request), so at most nCmds loads (2 in
        # both RTL revisions) are in flight, however few rows each moves. It takes the entry
        # that frees first: a zero fill (ZeroWriter) between two DRAM loads frees its entry
        # long before the older DRAM load does.
        trk = self.ld_trk
        v = min(trk)
        k = trk.index(v)
        if v > ready:
            ready = v
        if dram == 0:  # ZeroWriter: one row (block) per cycle, no memory traffic
            busy = ready + rows * blocks * pix  # (its own pixel repeater writes each row pix times)
            self.ld_free = busy
            done = busy + 1
        elif pix > 1 and not m:
            done = self._mvin_repeated(ready, dram, rows, cols, blocks, sid, pix)
        else:
            esz = 4 if (m and not self.ld_shrunk[sid]) else 1
            stride = self.ld_stride[sid]
            issue_end, last = self._read_rows(ready, dram, 1 if stride == 0 else rows, cols * esz, stride)
            sram_end = ready + rows * blocks  # one SRAM row write per cycle
            if not m and self.ld_rep_free > ready:  # (behind a repeated load's writes: one write path)
                sram_end = max(sram_end, self.ld_rep_free - self.p.spad_write_latency + rows * blocks)
            self.ld_free = issue_end if issue_end > ready + rows else ready + rows
            done = (last if last > sram_end else sram_end) + self.p.spad_write_latency
        trk[k] = done  # (the Scratchpad reports the bytes once mvin_scale has written them)
        if done < self.ld_last_done:  # the load controller reports completions in order
            done = self.ld_last_done
        self.ld_last_done = done
        self.busy_ld.add(ready, done)
        self.w[m][row:hi] = [done] * (hi - row)
        if m:
            _raise_bound(self.acc_hw, self.acc_half, row, hi, done)
        elif done > self.w_top:
            self.w_top = done
        heappush(self.rs[LD], done)

    def _mvin_repeated(self, ready: float, dram: int, rows: int, cols: int, blocks: int, sid: int, pix: int) -> float:
        """A scratchpad load with pixel repeats from DRAM; returns when its last write is done.

        Each row leaves the mvin scale pipeline (`spad_write_latency`) into the pixel repeater,
        which holds it for `pix` cycles, one scratchpad write each, before it takes the next
        (ucb-bar/gemmini PixelRepeater.scala: `io.req.ready` only once the row's repeat count is
        0, line 46; the count steps down once per written repeat, lines 74-85; Scratchpad.scala
        puts it between the mvin scale unit and the SRAM banks). So the rows are written at
        one per `pix` cycles (per block), after their data have arrived and after the rows of
        the repeated load before them (the repeater serves one load at a time, in order)."""
        stride = self.ld_stride[sid]
        nsrc = 1 if stride == 0 else rows
        arrivals: list[float] = []
        issue_end, _last = self._read_rows(ready, dram, nsrc, cols, stride, arrivals)
        p = self.p
        ends = row_ends(dram % p.max_packet, nsrc, cols, stride, p.max_packet, p.beat_bytes)
        lat, per_row = p.spad_write_latency, pix * blocks
        w = self.ld_rep_free
        for r in range(rows):
            a = arrivals[ends[r if nsrc > 1 else 0]] + lat
            w = (a if a > w else w) + per_row
        self.ld_rep_free = w
        self.ld_free = issue_end if issue_end > ready + rows else ready + rows
        return w

    # ------------------------------------------------------------------------------------------
    # execute queue
    # ------------------------------------------------------------------------------------------
    def _config_ex(self, args: tuple[int, ...], t: float) -> None:
        dataflow, _act, a_t, b_t, a_stride, c_stride, _shift, _scale, only_strides = args
        busy = t if t > self.ex_free else self.ex_free
        start = busy if busy > self.ex_drained else self.ex_drained
        self.cfg_ex_stall += start - busy
        if not only_strides:
            self.ws, self.a_t, self.b_t = dataflow == 1, a_t, b_t
        self.a_stride, self.c_stride = a_stride, c_stride
        done = start + self.p.config_ex_cycles
        self.busy_fixed.add(start, done)
        self.ex_free = done
        if done > self.ex_drained:
            self.ex_drained = done
        self.prev_start = -1.0  # the array restarts: no overlap across a config_ex
        heappush(self.rs[EX], done)

    def _preload(self, args: tuple[int, ...], t: float) -> None:
        """A preload is timed with its compute (the pair enters the array together)."""
        self.pend = (args, t)

    def _compute(self, args: tuple[int, ...], t: float) -> None:
        pend = self.pend
        self.pend = None
        if pend is None:  # (the rules refuse this; time it as if preceded by a GARBAGE preload)
            pend = ((GARBAGE, GARBAGE, 1, 1, 1, 1), t)
        self._pairs((("preload", pend[0], GEN_EX, -1, 0), ("compute", args, GEN_EX, -1, 0)), 0, 2, None, pend[1], t)

    def _pairs(
        self,
        entries: Sequence[Entry],
        i: int,
        n: int,
        lr: _LoopRun | None,
        t_pre: float = 0.0,
        t_comp: float = 0.0,
    ) -> int:
        """Time the preload/compute pairs from entries[i] on; returns the index after them.

        In a loop (`lr`) every consecutive pair up to the first other command (or n) is timed,
        each issued as its generator, gate and the execute queue allow (`_entries`' rules);
        a CPU-issued pair (no `lr`) was issued at t_pre and t_comp. The execute engine's state
        is kept in locals across the pairs (the bulk of every loop) and stored at the end."""
        dim, row_mask, bank_rows = self.dim, self.row_mask, self.bank_rows
        w = self.w
        w_sp, r_sp = w[0], self.r[0]
        ws, a_t, b_t, a_stride, c_stride = self.ws, self.a_t, self.b_t, self.a_stride, self.c_stride
        plain_ws = ws and not a_t and not b_t
        acc_ex, sp_ex, latency = self.acc_ex, self.sp_ex, self.p.array_latency
        heap = self.rs[EX]
        sp_hw, sp_half, w_top, acc_hw, acc_half = self.sp_hw, self.sp_half, self.w_top, self.acc_hw, self.acc_half
        busy_add = self.busy_ex.add
        prev, prev_feed, prev_a_bank = self.prev_start, self.prev_feed, self.prev_a_bank
        ex_free, ex_drained = self.ex_free, self.ex_drained
        ex_busy, pairs, overlapped = self.ex_busy, self.pairs, self.overlapped
        if lr is not None:
            issued, gen_prev, floor, top, ex_cap = lr.issued, self.gen_prev, self.loop_floor, lr.top, self.cap[EX]
        while i < n:
            op, pre, gen, gate, _reloc = entries[i]
            if lr is not None:  # allocation: `_entries`, with the compute's after the preload's
                if op != "preload":
                    break
                t_pre = gen_prev[gen] + 1
                if t_pre < floor:
                    t_pre = floor
                if gate >= 0 and issued[gate] > t_pre:
                    t_pre = issued[gate]
                t_pre = _free_entry(heap, ex_cap, t_pre)
                t_comp = _free_entry(heap, ex_cap - 1, t_pre + 1)  # the preload holds one entry already
                gen_prev[gen] = t_comp
                if t_comp > top:
                    top = t_comp
                issued.append(t_pre)
                issued.append(t_comp)
            bd, c, bd_cols, bd_rows, _c_cols, c_rows = pre
            a, d, a_cols, a_rows, _d_cols, d_rows = entries[i + 1][1]
            i += 2
            # preload: RAW on B, WAW (loads, e.g. the bias) and WAR (stores) on C
            p_ready = t_pre
            b_bank = -1
            if bd != GARBAGE:
                b_lo = bd & row_mask
                b_hi = b_lo + (bd_cols if (ws and b_t) else bd_rows)
                b_bank = b_lo // bank_rows
                if w_top > p_ready:
                    v = max(w_sp[b_lo:b_hi])
                    if v > p_ready:
                        p_ready = v
            if c != GARBAGE:
                cm = 1 if c & IS_ACC else 0
                c_lo = c & row_mask
                c_hi = c_lo + (c_rows - 1) * c_stride + 1
                # loads (WAW); in the accumulator also store reads (WAR)
                h = c_lo // acc_half
                if not cm or h != (c_hi - 1) // acc_half or h > 1 or acc_hw[h] > p_ready:
                    v = max(w[cm][c_lo:c_hi])
                    if v > p_ready:
                        p_ready = v
                if not cm:
                    v = max(r_sp[c_lo:c_hi])
                    if v > p_ready:
                        p_ready = v
            # compute: RAW on A (and D)
            ready = t_comp
            a_lo = a & row_mask
            a_hi = a_lo + ((a_cols if a_t else a_rows) - 1) * a_stride + 1
            if w_top > ready:
                v = max(w_sp[a_lo:a_hi])
                if v > ready:
                    ready = v
            if d != GARBAGE and w_top > ready:
                d_lo = d & row_mask
                v = max(w_sp[d_lo : d_lo + d_rows])
                if v > ready:
                    ready = v
            if prev >= 0 and p_ready <= prev and ready <= prev:
                # overlapped: this preload was fed into the array alongside the previous compute
                overlapped += 1
                window = prev_feed
                if (b_bank >= 0 or not plain_ws) and window < dim:  # real weights need all DIM rows
                    window = dim
                if b_bank >= 0 and b_bank == prev_a_bank:  # A and B rows from one bank: 2 cycles/row
                    window *= 2
                if prev + window > ex_free:
                    ex_busy += prev + window - ex_free
                    busy_add(ex_free, prev + window)
                    ex_free = prev + window
                start = ex_free
                if ready > start:
                    start = ready
                if p_ready > start:
                    start = p_ready
                b_read = prev + dim
            else:
                p_start = ex_free if ex_free > p_ready else p_ready  # a standalone preload feeds DIM rows first
                ex_busy += dim
                b_read = p_start + dim
                busy_add(p_start, b_read)
                start = b_read if b_read > ready else ready
            feed = (a_rows if a_rows > 4 else 4) if plain_ws else dim
            end = start + feed
            ex_busy += feed
            pairs += 1
            ex_free = end
            prev = start
            prev_a_bank = a_lo // bank_rows
            prev_feed = feed
            # reads done: A (and D) at the end of the feed, B after its preload was fed
            r_sp[a_lo:a_hi] = [end] * (a_hi - a_lo)
            h = a_lo // sp_half
            if h == (a_hi - 1) // sp_half and h < 2:  # (`_raise_bound` within one half, inlined)
                if end > sp_hw[h]:
                    sp_hw[h] = end
            else:
                _raise_bound(sp_hw, sp_half, a_lo, a_hi, end)
            if b_bank >= 0:
                r_sp[b_lo:b_hi] = [b_read] * (b_hi - b_lo)
                _raise_bound(sp_hw, sp_half, b_lo, b_hi, b_read)
            p_done = end
            if c != GARBAGE:
                p_done = end + latency
                if cm:
                    acc_ex[c_lo:c_hi] = [p_done] * (c_hi - c_lo)
                else:
                    w_sp[c_lo:c_hi] = sp_ex[c_lo:c_hi] = [p_done] * (c_hi - c_lo)
                    _raise_bound(self.ex_hw, sp_half, c_lo, c_hi, p_done)
                    if p_done > w_top:
                        w_top = p_done
            busy_add(start, p_done)
            if p_done > ex_drained:
                ex_drained = p_done
            heappush(heap, p_done)
            heappush(heap, end)
            if lr is None:
                break
        if lr is not None:
            lr.top = top
        self.prev_start, self.prev_feed, self.prev_a_bank = prev, prev_feed, prev_a_bank
        self.ex_free, self.ex_drained = ex_free, ex_drained
        self.ex_busy, self.pairs, self.overlapped = ex_busy, pairs, overlapped
        self.w_top = w_top
        return i

    # ------------------------------------------------------------------------------------------
    # store queue
    # ------------------------------------------------------------------------------------------
    def _config_st(self, args: tuple[int, ...], t: float) -> None:
        stride, _act, _scale, pool_stride, _size, pool_out_dim, porows, pocols, orows, ocols, _u, _l = args
        self.st_stride = stride
        self.st_pool = (pool_stride, orows, ocols, porows, pocols, pool_out_dim)
        start = t if t > self.st_done else self.st_done
        self.st_done = start + 1
        self.busy_fixed.add(start, start + 1)
        heappush(self.rs[ST], start + 1)

    def _mvout(self, args: tuple[int, ...], t: float) -> None:
        dram, local, cols, rows = args
        p, dim = self.p, self.dim
        m = 1 if local & IS_ACC else 0
        row = local & self.row_mask
        blocks = -(-cols // dim)
        stride = self.st_stride
        pool_stride, orows, ocols, porows, pocols, pool_out_dim = self.st_pool
        if pool_stride:  # reads the whole (orows x ocols) tile, writes porows x pocols pixels
            hi = row + orows * ocols
            n_sram = orows * ocols
            addrs = [dram + (pr * pool_out_dim + pc) * stride for pr in range(porows) for pc in range(pocols)]
            nbytes = cols
        else:
            hi = row + (blocks - 1) * dim + rows
            n_sram = rows * blocks
            addrs = [dram + r * stride for r in range(rows)]
            nbytes = cols * (4 if (m and local & READ_FULL) else 1)
        ready = t if t > self.st_done else self.st_done  # mvouts are serialised in the RS
        v = max(self.w[m][row:hi])  # RAW: loads and the array writing the source rows
        if v > ready:
            ready = v
        if m:
            v = max(self.acc_ex[row:hi])
            if v > ready:
                ready = v
        t0 = ready + (self.store_fixed_acc if m else p.store_fixed_spad)
        mp, beat, lat = p.max_packet, p.beat_bytes, p.wr_latency
        cyc_per_beat = beat / p.wr_bytes_per_cycle
        page_shift = self.row_shift
        ring, maxq, k = self.wr_ring, p.max_wr_inflight, self.wr_k
        chan = self.wr_chan
        per_row = n_sram / max(1, len(addrs))  # SRAM row reads per written DRAM row
        tt = t0
        npk = 0
        ack = self.wr_last_ack
        same = dma_packets(dram % mp, nbytes, mp, beat) if stride % mp == 0 else None
        for a in addrs:
            tt += per_row
            for off, size, _useful in same or dma_packets(a % mp, nbytes, mp, beat):
                free = ring[k]
                if free > tt:
                    tt = free
                page = (a + off) >> page_shift
                if page != self.row_last:
                    tt += self._row_miss(page)
                begin = tt if tt > chan else chan
                chan = begin + -(-size // beat) * cyc_per_beat
                ack = chan + lat
                ring[k] = ack
                k = k + 1 if k + 1 < maxq else 0
                npk += 1
        self.wr_chan, self.wr_k = chan, k
        if self.llc is not None:  # write-back, write-allocate: written blocks displace others
            for a in addrs:
                self.llc.touch_range(a, nbytes)
        if ack > self.wr_last_ack:
            self.wr_last_ack = ack
        done = tt if tt > t0 + n_sram else t0 + n_sram  # complete once every row left the SRAM
        self.st_done = done
        self.busy_st.add(ready, ack if ack > done else done)
        rt = self.r[m]
        hw, half = (self.acc_hw, self.acc_half) if m else (self.sp_hw, self.sp_half)
        h = row // half
        if h < 2 and (hi - 1) // half == h and hw[h] <= done and hi <= len(rt):
            rt[row:hi] = [done] * (hi - row)  # (no older reader of the half ends later)
        else:
            for k in range(row, hi):  # a store's read completes no earlier than an older reader's
                if rt[k] < done:
                    rt[k] = done
        _raise_bound(hw, half, row, hi, done)
        if m:  # stores complete in order, so this store's read is the latest of these rows
            self.acc_rd[row:hi] = [done] * (hi - row)
            if done > self.rd_top:
                self.rd_top = done
        self.wr_packets += npk
        self.wr_bytes += len(addrs) * nbytes
        heappush(self.rs[ST], done)

    # ------------------------------------------------------------------------------------------
    # steady-state extrapolation (zomboss.steady)
    # ------------------------------------------------------------------------------------------
    _ENGINE_SCALARS = (  # the engines' clocks (what a mark inside a loop compares)
        "ld_free",
        "ld_last_done",
        "ld_rep_free",
        "rd_chan",
        "ex_free",
        "ex_drained",
        "prev_start",
        "st_done",
        "wr_chan",
        "wr_last_ack",
    )
    _SCALARS = (  # ... and the CPU's and loop FSMs' (what a mark between CPU iterations compares)
        *_ENGINE_SCALARS,
        "last_alloc",
        "fsm_busy",
        "loop_floor",
        "loop_max_alloc",
    )
    _COUNTERS = (
        "rd_packets",
        "wr_packets",
        "rd_bytes",
        "wr_bytes",
        "row_misses",
        "rd_fetched",
        "pairs",
        "overlapped",
        "ex_busy",
        "cfg_ex_stall",
    )

    def _tables(self) -> tuple[tuple[int, list[float]], ...]:
        """(memory: 0 scratchpad, 1 accumulator, table) of every per-row dependency table, each
        once (the accumulator's `w` and `r` are one list)."""
        return ((0, self.w[0]), (0, self.r[0]), (0, self.sp_ex), (1, self.w[1]), (1, self.acc_ex), (1, self.acc_rd))

    def mark(self, sp_half: int = 0, acc_half: int = 0) -> Mark:
        """The timing state at an iteration boundary, relative to the CPU clock, with the
        scratchpad and accumulator tables rotated so the halves the next loop uses come first.

        Every time the model compares is compared against a time no earlier than the CPU's
        current clock (everything later is issued after it), so times before the clock are
        clamped to -1: they cannot delay anything. DRAM row-buffer state depends on absolute
        addresses and is left out; its effect shows in the measured periods."""
        now = self.t_cpu
        rel = [getattr(self, n) - now for n in self._SCALARS]
        rel += [x - now for x in self.gen_prev[1:]]
        rel += [x - now for x in self.rd_ring[self.rd_k :] + self.rd_ring[: self.rd_k]]
        rel += [x - now for x in sorted(self.ld_trk)]
        rel += [x - now for x in self.wr_ring[self.wr_k :] + self.wr_ring[: self.wr_k]]
        for f in (0, 1):
            rel += [self.slot_free.get((f, (self.loop_count[f] + i) % 2), 0.0) - now for i in (0, 1)]
        for q, heap in enumerate(self.rs):
            live = sorted(x - now for x in heap if x > now)
            rel += live + [-1.0] * (self.cap[q] + 1 - len(live))
        parts = [np.asarray(rel, dtype=np.float64)]
        for (m, t), top in zip(self._tables(), self._table_bounds(), strict=True):
            if top <= now - 2:  # (all clamped: no conversion)
                parts.append(np.full(len(t), -1.0))
                continue
            a = _array(t) - now
            half = len(a) // 2
            rot = (acc_half if m else sp_half) * half
            parts.append(np.concatenate((a[rot:], a[:rot])) if rot else a)
        state = np.concatenate(parts)
        np.maximum(state, -1.0, out=state)
        counters = np.array([float(getattr(self, n)) for n in self._COUNTERS])
        return Mark(now, state, counters, tuple(self.loop_count), self._key(sp_half), self._tally())

    def _half_banks(self) -> int:
        """Banks per scratchpad half (0 when a half does not end on a bank boundary: then a
        bank cannot be told relative to the half)."""
        half = len(self.w[0]) // 2
        return half // self.bank_rows if half % self.bank_rows == 0 and half else 0

    def _key(self, sp_half: int = 0) -> tuple:
        """The discrete state that must repeat exactly for a steady state; the last A bank
        is told relative to the scratchpad half the next loop uses, as the tables are."""
        bank, hb = self.prev_a_bank, self._half_banks()
        if bank >= 0 and hb and sp_half:
            bank = (bank + hb) % (2 * hb)
        return (
            self.pend is not None,
            self.ws,
            self.a_t,
            self.b_t,
            self.a_stride,
            self.c_stride,
            bank,
            self.prev_feed,
            tuple(self.configuring),
            tuple(self.ld_stride),
            tuple(self.ld_shrunk),
            tuple(self.ld_bstride),
            tuple(self.ld_pix),
            self.st_stride,
            self.st_pool,
            any(len(h) > c + 1 for h, c in zip(self.rs, self.cap, strict=True)),
        )

    def _tally(self) -> np.ndarray:
        """A mark's `tally`: the array's busy time so far, skipped periods included (`skip`)."""
        return np.array([self.busy_ex.length() + self.skipped.compute])

    def skip(self, s: Skip, sp_swap: bool = False, acc_swap: bool = False, rows: bool = True) -> None:
        """Advance over `s.periods` periods: every pending time from the last mark on moves by
        `s.dt`; counters and busy lengths grow by what the periods did. `sp_swap`/`acc_swap`:
        the skipped loops leave the FSM on the other scratchpad/accumulator half, so the
        halves' tables trade places (what `mark` compared was rotated the same way). `rows`:
        shift the whole per-row tables (inside a loop the caller shifts only the live rows)."""
        dt, lo = s.dt, s.since - 1.0
        for n in self._SCALARS:
            v = getattr(self, n)
            if v >= lo:
                setattr(self, n, v + dt)
        if self.t_cpu >= lo:
            self.t_cpu += dt
        self.gen_prev[1:] = _moved(self.gen_prev[1:], lo, dt)
        self.rd_ring[:] = _moved(self.rd_ring, lo, dt)
        self.ld_trk[:] = _moved(self.ld_trk, lo, dt)
        self.wr_ring[:] = _moved(self.wr_ring, lo, dt)
        for k, v in self.slot_free.items():
            if v >= lo:
                self.slot_free[k] = v + dt
        for heap in self.rs:  # a monotone shift of the larger entries keeps the heap order
            heap[:] = _moved(heap, lo, dt)
        arrays: list[np.ndarray | None] = []
        for (m, t), top in zip(self._tables(), self._table_bounds(), strict=True) if rows else ():
            swap = acc_swap if m else sp_swap
            if top < lo:  # (nothing pending: the table at most trades halves, as lists)
                if swap:
                    half = len(t) // 2
                    t[:] = t[half:] + t[:half]
                arrays.append(None)
                continue
            a = _array(t)
            a = np.where(a >= lo, a + dt, a)
            if swap:
                half = len(a) // 2
                a = np.concatenate((a[half:], a[:half]))
            t[:] = a.tolist()
            arrays.append(a)
        if rows:
            self._reset_bounds(arrays, sp_swap, acc_swap)
        if sp_swap and self.prev_a_bank >= 0 and (hb := self._half_banks()):
            self.prev_a_bank = (self.prev_a_bank + hb) % (2 * hb)
        c = s.counters
        for i, n in enumerate(self._COUNTERS):
            v = getattr(self, n)
            setattr(self, n, v + (round(c[i]) if isinstance(v, int) else float(c[i])))
        skip_busy((self.busy_ex, self.busy_ld, self.busy_st, self.busy_fixed), self.skipped, s)
        if s.linear:
            self.loop_count = [x + d for x, d in zip(self.loop_count, s.linear, strict=True)]

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
