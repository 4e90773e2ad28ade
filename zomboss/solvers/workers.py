"""Simulations run ahead of the search in worker processes, so a solve uses the machine's cores.

The search decides sequentially (each proposal is pruned, counted and compared against the
incumbent in order), but its costly part, a simulation, depends only on the mapping. So the
search says which simulations it is about to need (`submit`: a batch's proposals, Candidate-0
while the pool is built, the winner's two verification seeds), the workers run them, and
`take` hands each result over when the sequential code reaches it. The decisions, and so the
result, are those of a search with no workers; a simulation the search no longer needs (its
proposal pruned by a kernel found earlier in the batch) is wasted time, nothing else.

Workers are forked from the solving process once the target and its KB are loaded, ignore
Ctrl-C (the solving process owns it and terminates them) and die with their parent
(`zomboss.util.die_with_parent`). A worker that fails, or dies (killed, out of memory), hands
back nothing: the search runs that simulation itself, and so meets the error exactly as
without workers.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import multiprocessing.queues
import os
import signal

from zomboss.mapping import KnobMapping
from zomboss.target import Evaluation, Mode, Params, Target
from zomboss.util import die_with_parent
from zomboss.workload import Workload

_Key = tuple[str, str, int]  # (mapping key, mode, seed)

# What a forked worker simulates: set by `Workers` just before it forks them (one solve at a
# time in a process; the workers inherit it, nothing is pickled but mappings and evaluations)
_JOB: tuple[Target, Workload, Params] | None = None
# where a worker says which simulation it has started, and in which process: a worker that dies
# (killed, out of memory) never hands its result back, so `take` must see that it is gone
_STARTED: multiprocessing.queues.SimpleQueue | None = None


WORKER_CHECK_S = 0.5  # how often `take` looks whether the worker it waits for is still alive


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _start(parent: int) -> None:
    """A worker's initializer: Ctrl-C is the solving process's (it terminates its workers), and
    a worker whose solving process is killed must not run on."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)


def _simulate(m: KnobMapping, mode: str, seed: int) -> Evaluation | None:
    assert _JOB is not None and _STARTED is not None
    t, wl, params = _JOB
    _STARTED.put(((m.key(), mode, seed), os.getpid()))
    try:
        return t.evaluate(t.instance(wl, params, seed), m, Mode(mode))
    except Exception:  # noqa: BLE001 - handed back as "none": the search reruns it and raises it itself
        return None


class Workers:
    """`jobs` worker processes simulating one instance ahead of the search (see the module
    docstring). With `jobs` <= 1 there are none: `submit` does nothing and `take` returns
    None, so the search simulates everything itself."""

    def __init__(self, t: Target, wl: Workload, params: Params, jobs: int) -> None:
        global _JOB, _STARTED
        self.pending: dict[_Key, multiprocessing.pool.AsyncResult[Evaluation | None]] = {}
        self.running: dict[_Key, int] = {}  # the process each started simulation runs in
        self.pool: multiprocessing.pool.Pool | None = None
        if jobs > 1 and "fork" in multiprocessing.get_all_start_methods():
            ctx = multiprocessing.get_context("fork")
            _JOB, _STARTED = (t, wl, dict(params)), ctx.SimpleQueue()
            self.pool = ctx.Pool(jobs, initializer=_start, initargs=(os.getpid(),))

    def submit(self, m: KnobMapping, mode: Mode, seed: int) -> None:
        """Start simulating `m` (if no worker already is)."""
        key = (m.key(), mode.value, seed)
        if self.pool is not None and key not in self.pending:
            self.pending[key] = self.pool.apply_async(_simulate, (m, mode.value, seed))

    def take(self, m: KnobMapping, mode: Mode, seed: int) -> Evaluation | None:
        """The submitted simulation's evaluation (waiting for it), or None when none was
        submitted or its worker failed."""
        key = (m.key(), mode.value, seed)
        job = self.pending.pop(key, None)
        if job is None:
            return None
        while not job.ready():
            job.wait(WORKER_CHECK_S)
            while _STARTED is not None and not _STARTED.empty():
                started, pid = _STARTED.get()
                self.running[started] = pid
            pid = self.running.get(key)
            if pid is not None and not job.ready() and not _alive(pid):
                return None  # its worker died: the search runs it itself (and meets the same end)
        return job.get()

    def finished(self) -> list[Evaluation]:
        """The simulations that ended but were never taken (each handed over once): what the
        search ran ahead and then did not need, or had no time to take."""
        done = [k for k, job in self.pending.items() if job.ready() and job.successful()]
        out = [self.pending.pop(k).get() for k in done]
        return [ev for ev in out if ev is not None]

    def close(self) -> None:
        """Stop the workers now, whatever they are running (the search has what it needs, or
        was interrupted)."""
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None
        self.pending.clear()
