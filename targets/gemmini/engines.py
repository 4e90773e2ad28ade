"""How each Gemmini command advances the timing model's scoreboard (`state.py`): the DMA's read
requests (DRAM row buffers, the LLC), and the load, execute and store engines' handlers,
`on_<command>(args, t)` with `t` the command's RS allocation time (`timing.py` allocates; `on_mvin`
takes the mover first).

Kept in one module because the handlers share the DMA and the per-row tables; the bulk of it
is `time_pairs`, the execute engine's preload/compute loop with its state in locals, which is
the hot path of every timing run.
"""

from __future__ import annotations

from collections.abc import Sequence
from heapq import heappush

from zomboss.targets.gemmini.asm import EX, GARBAGE, IS_ACC, LD, READ_FULL, ST
from zomboss.targets.gemmini.dma import dma_packets, read_plan, row_ends
from zomboss.targets.gemmini.loops import GEN_EX, Entry

from .state import LoopRun, State, free_entry, raise_bound


class Engines(State):
    """The per-command timing: DMA, load, execute and store engines."""

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
    def on_config_ld(self, args: tuple[int, ...], t: float) -> None:
        sid, stride, shrunk, bstride, pix, _scale = args
        self.ld_stride[sid], self.ld_shrunk[sid], self.ld_bstride[sid] = stride, shrunk, bstride
        self.ld_pix[sid] = pix if pix > 1 else 1  # (LoadController: 0 means 1)
        start = t if t > self.ld_free else self.ld_free
        self.ld_free = start + 1
        self.busy_fixed.add(start, start + 1)
        heappush(self.rs[LD], start + 1)

    def on_mvin(self, sid: int, args: tuple[int, ...], t: float) -> None:
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
            raise_bound(self.acc_hw, self.acc_half, row, hi, done)
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
    def on_config_ex(self, args: tuple[int, ...], t: float) -> None:
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

    def on_preload(self, args: tuple[int, ...], t: float) -> None:
        """A preload is timed with its compute (the pair enters the array together)."""
        self.pend = (args, t)

    def on_compute(self, args: tuple[int, ...], t: float) -> None:
        pend = self.pend
        self.pend = None
        if pend is None:  # (the rules refuse this; time it as if preceded by a GARBAGE preload)
            pend = ((GARBAGE, GARBAGE, 1, 1, 1, 1), t)
        self.time_pairs((("preload", pend[0], GEN_EX, -1, 0), ("compute", args, GEN_EX, -1, 0)), 0, 2, None, pend[1], t)

    def time_pairs(
        self,
        entries: Sequence[Entry],
        i: int,
        n: int,
        lr: LoopRun | None,
        t_pre: float = 0.0,
        t_comp: float = 0.0,
    ) -> int:
        """Time the preload/compute pairs from entries[i] on; returns the index after them.

        In a loop (`lr`) every consecutive pair up to the first other command (or n) is timed,
        each issued as its generator, gate and the execute queue allow (`Timing._entries`' rules);
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
            if lr is not None:  # allocation: `Timing._entries`, with the compute's after the preload's
                if op != "preload":
                    break
                t_pre = gen_prev[gen] + 1
                if t_pre < floor:
                    t_pre = floor
                if gate >= 0 and issued[gate] > t_pre:
                    t_pre = issued[gate]
                t_pre = free_entry(heap, ex_cap, t_pre)
                t_comp = free_entry(heap, ex_cap - 1, t_pre + 1)  # the preload holds one entry already
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
            if h == (a_hi - 1) // sp_half and h < 2:  # (`raise_bound` within one half, inlined)
                if end > sp_hw[h]:
                    sp_hw[h] = end
            else:
                raise_bound(sp_hw, sp_half, a_lo, a_hi, end)
            if b_bank >= 0:
                r_sp[b_lo:b_hi] = [b_read] * (b_hi - b_lo)
                raise_bound(sp_hw, sp_half, b_lo, b_hi, b_read)
            p_done = end
            if c != GARBAGE:
                p_done = end + latency
                if cm:
                    acc_ex[c_lo:c_hi] = [p_done] * (c_hi - c_lo)
                else:
                    w_sp[c_lo:c_hi] = sp_ex[c_lo:c_hi] = [p_done] * (c_hi - c_lo)
                    raise_bound(self.ex_hw, sp_half, c_lo, c_hi, p_done)
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
    def on_config_st(self, args: tuple[int, ...], t: float) -> None:
        stride, _act, _scale, pool_stride, _size, pool_out_dim, porows, pocols, orows, ocols, _u, _l = args
        self.st_stride = stride
        self.st_pool = (pool_stride, orows, ocols, porows, pocols, pool_out_dim)
        start = t if t > self.st_done else self.st_done
        self.st_done = start + 1
        self.busy_fixed.add(start, start + 1)
        heappush(self.rs[ST], start + 1)

    def on_mvout(self, args: tuple[int, ...], t: float) -> None:
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
        raise_bound(hw, half, row, hi, done)
        if m:  # stores complete in order, so this store's read is the latest of these rows
            self.acc_rd[row:hi] = [done] * (hi - row)
            if done > self.rd_top:
                self.rd_top = done
        self.wr_packets += npk
        self.wr_bytes += len(addrs) * nbytes
        heappush(self.rs[ST], done)
