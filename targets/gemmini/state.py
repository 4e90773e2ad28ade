"""The scoreboard state of the Gemmini timing model (`timing.py`): every clock, queue, per-row
dependency table, bound and counter the engines read and write, and the small helpers on them
that both the engines (`engines.py`) and the extrapolation (`extrapolation.py`) use.

Per-row dependency tables hold, for every scratchpad/accumulator row, the completion time of
the latest load writing it, execute reading or writing it and store reading it; a slice max
over an instruction's row range is the RS's range-overlap check. The hot path is plain
integer/float arithmetic on Python lists: no numpy, no per-element loops.

The classes built on `State` (`Engines`, `Extrapolation`, `Timing`) import their siblings
relatively: mypy resolves `zomboss.targets.*` imports to Any under the editable install, and
would not see the state's fields from a subclass.
"""

from __future__ import annotations

from heapq import heappop

from zomboss.targets.gemmini.asm import queues
from zomboss.targets.gemmini.breakdown import Busy, Skipped
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.llc import Llc
from zomboss.targets.gemmini.presets import Preset


def free_entry(heap: list[float], cap: int, t: float) -> float:
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


def raise_bound(hw: list[float], half: int, lo: int, hi: int, x: float) -> None:
    """Keep a per-half bound `hw` above a time x just written to rows [lo, hi) (rows past
    both halves are not bounded: a scan whose range reaches them does not use `hw`)."""
    h = lo // half
    if h < 2 and x > hw[h]:
        hw[h] = x
    h2 = min((hi - 1) // half, 1)
    if h2 > h and x > hw[h2]:
        hw[h2] = x


class LoopRun:
    """The running loop's entries, DRAM bases, issue times so far and highest allocation."""

    __slots__ = ("base", "entries", "issued", "top")

    def __init__(self, entries: tuple, base: tuple[int, ...]) -> None:
        self.entries, self.base = entries, base
        self.issued: list[float] = []
        self.top = 0.0


class State:
    """The scoreboard's state, as a fresh kernel starts (what each field means is commented where
    it is set); the engines advance it command by command, the extrapolation shifts it."""

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
            if preset.llc_block_bytes < preset.max_packet:  # (the LLC looks one block up per request)
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
        # Loads do not wait for older loads (see `on_mvin`): `acc_rd` (store reads of accumulator
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
        # busy intervals for the cycle breakdown (`breakdown.py`)
        self.busy_ex, self.busy_ld, self.busy_st, self.busy_fixed = Busy(), Busy(), Busy(), Busy()
        self.busy_fixed.add(0.0, float(preset.kernel_overhead))
        self.skipped = Skipped()  # the busy lengths of extrapolated periods (see `skip`)
