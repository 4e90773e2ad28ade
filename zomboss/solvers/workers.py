"""Simulations run ahead of the search in worker processes, so a solve uses the machine's cores.

The search decides sequentially (each proposal is pruned, counted and compared against the
incumbent in order), but its costly part, a simulation, depends only on the mapping. So the
search says which simulations it is about to need (`submit`: a batch's proposals, Candidate-0
while the pool is built, the winner's two verification seeds), the workers run them, and
`take` hands each result over when the sequential code reaches it. The decisions, and so the
result, are those of a search with no workers; a simulation the search no longer needs (its
proposal pruned by a kernel found earlier in the batch) is wasted time, nothing else.

Workers are forked from the solving process once the target and its KB are loaded, ignore
Ctrl-C (the solving process owns it and kills them) and die with their parent
(`zomboss.util.die_with_parent`). A worker that fails hands back nothing: the search runs that
simulation itself, and so meets the error exactly as without workers. A worker that dies (killed,
out of memory) breaks the pool (`concurrent.futures` stops every worker then, where a
`multiprocessing.Pool` whose idle worker was killed while holding its task queue's lock hangs
forever): nothing more is handed back, and the search runs the rest itself.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from zomboss.mapping import KnobMapping
from zomboss.target import Evaluation, Mode, Params, Target
from zomboss.util import die_with_parent
from zomboss.workload import Workload

_Key = tuple[str, str, int]  # (mapping key, mode, seed)

# What a forked worker simulates: set by `Workers`, whose pool forks the workers at its first
# simulation (one solve at a time in a process; the workers inherit it, nothing is pickled but
# mappings and evaluations)
_JOB: tuple[Target, Workload, Params] | None = None


def _start(parent: int) -> None:
    """A worker's initializer: Ctrl-C is the solving process's (it kills its workers), and a
    worker whose solving process is killed must not run on."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)


def _simulate(m: KnobMapping, mode: str, seed: int) -> Evaluation | None:
    assert _JOB is not None
    t, wl, params = _JOB
    try:
        return t.evaluate(t.instance(wl, params, seed), m, Mode(mode))
    except Exception:  # noqa: BLE001 - handed back as "none": the search reruns it and raises it itself
        return None


class Workers:
    """`jobs` worker processes simulating one instance ahead of the search (see the module
    docstring). With `jobs` <= 1 there are none: `submit` does nothing and `take` returns
    None, so the search simulates everything itself."""

    def __init__(self, t: Target, wl: Workload, params: Params, jobs: int) -> None:
        global _JOB
        self.pending: dict[_Key, Future[Evaluation | None]] = {}
        self.pool: ProcessPoolExecutor | None = None
        self.others: set[int] = set()  # the solving process's children that are not workers
        if jobs > 1 and "fork" in multiprocessing.get_all_start_methods():
            _JOB = (t, wl, dict(params))
            self.others = {p.pid for p in multiprocessing.active_children() if p.pid is not None}
            ctx = multiprocessing.get_context("fork")
            self.pool = ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_start, initargs=(os.getpid(),))

    def submit(self, m: KnobMapping, mode: Mode, seed: int) -> None:
        """Start simulating `m` (if no worker already is)."""
        key = (m.key(), mode.value, seed)
        if self.pool is not None and key not in self.pending:
            try:
                self.pending[key] = self.pool.submit(_simulate, m, mode.value, seed)
            except BrokenProcessPool:  # a worker died: the search runs everything itself from now on
                self.close()

    def take(self, m: KnobMapping, mode: Mode, seed: int) -> Evaluation | None:
        """The submitted simulation's evaluation (waiting for it), or None when none was
        submitted, its worker failed, or a worker died."""
        job = self.pending.pop((m.key(), mode.value, seed), None)
        if job is None:
            return None
        try:
            return job.result()
        except BrokenProcessPool:
            return None

    def finished(self) -> list[Evaluation]:
        """The simulations that ended but were never taken (each handed over once): what the
        search ran ahead and then did not need, or had no time to take."""
        done = [k for k, job in self.pending.items() if job.done() and job.exception() is None]
        out = [self.pending.pop(k).result() for k in done]
        return [ev for ev in out if ev is not None]

    def close(self) -> None:
        """Stop the workers now, whatever they are running (the search has what it needs, or
        was interrupted): the pool is shut down and its processes killed (it only lists them
        privately, so they are the children the solving process did not have before it)."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            workers = [p for p in multiprocessing.active_children() if p.pid not in self.others]
            for p in workers:
                p.kill()
            for p in workers:
                p.join()
            self.pool.shutdown(wait=True)
            self.pool = None
        self.pending.clear()
