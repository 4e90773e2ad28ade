"""Steady-state extrapolation (`zomboss.machine.steady`) on the Gemmini timing model's scoreboard:
`mark` and `loop_mark` state the pending times relative to a clock, between CPU iterations and
at a group boundary inside a hardware loop; `skip` and `translate_recent` move the pending
times, tables, counters and busy intervals (`breakdown.skip_busy`) over the skipped periods.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

import numpy as np
from zomboss.targets.gemmini.asm import EX, GARBAGE, IS_ACC, LD, ST
from zomboss.targets.gemmini.breakdown import skip_busy
from zomboss.targets.gemmini.loops import EXECUTES, GEN_EX, GEN_LD, GEN_ST

from zomboss.machine import Mark, Skip

from .state import LoopRun, State, raise_bound

_LOAD_SID = {"mvin": 0, "mvin2": 1, "mvin3": 2}  # a load's mover (its config_ld state)


def _array(xs: list[float]) -> np.ndarray:
    """A per-row table as a float64 array: packed as C doubles, which is several times faster
    than numpy's element-by-element conversion of a long list (the same values)."""
    return np.frombuffer(struct.pack(f"{len(xs)}d", *xs), dtype=np.float64)


def _moved(xs: list[float], lo: float, dt: float) -> list[float]:
    """`xs` with every time from `lo` on moved by dt (earlier ones cannot delay anything)."""
    return [x + dt if x >= lo else x for x in xs]


class Extrapolation(State):
    """Marks and skips of the scoreboard state."""

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
    COUNTERS = (  # the statistics a skip grows by what the periods did (a mark's counters)
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
        counters = np.array([float(getattr(self, n)) for n in self.COUNTERS])
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
        for i, n in enumerate(self.COUNTERS):
            v = getattr(self, n)
            setattr(self, n, v + (round(c[i]) if isinstance(v, int) else float(c[i])))
        skip_busy((self.busy_ex, self.busy_ld, self.busy_st, self.busy_fixed), self.skipped, s)
        if s.linear:
            self.loop_count = [x + d for x, d in zip(self.loop_count, s.linear, strict=True)]

    def loop_mark(self, lr: LoopRun, gens: list[int]) -> Mark:
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
        counters = np.array([float(getattr(self, n)) for n in self.COUNTERS])
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

    def translate_recent(self, lr: LoopRun, first: int, upto: int, n: int, dt: float, lo: float) -> None:
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
                raise_bound(self.acc_hw, self.acc_half, a2, a2 + len(vals), x)
            elif t is self.r[0] or t is self.sp_ex:
                raise_bound(self.sp_hw if t is self.r[0] else self.ex_hw, self.sp_half, a2, a2 + len(vals), x)

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
        command under the current configuration (bound once per `translate_recent`)."""
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
