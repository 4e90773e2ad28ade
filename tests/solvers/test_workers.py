"""Simulations run ahead in worker processes (`zomboss.solvers.workers`): the search decides
exactly as without them, a worker that fails leaves the simulation (and its error) to the
search, a worker that dies leaves the rest to the search without hanging it, and workers die
with the solving process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

import pytest

from zomboss.errors import ZombossError
from zomboss.mapping import KnobMapping
from zomboss.results import Store
from zomboss.solvers.search import SolveConfig, solve
from zomboss.solvers.workers import Workers
from zomboss.target import Evaluation, Mode, config_key, get_target
from zomboss.util import usable_cpus


@pytest.mark.parametrize(("target", "workload"), [("vta", "r18_c7"), ("plena", "ffn_16x128x256")])
def test_a_solve_with_workers_decides_exactly_as_one_without(target, workload, tmp_path):
    t = get_target(target)
    wl = t.workload(workload)
    one = solve(t, wl, {}, SolveConfig(budget=12))
    store = Store(tmp_path / "z.sqlite")
    two = solve(t, wl, {}, SolveConfig(budget=12, jobs=2), store=store)
    trials = len(store.trials(t.name, wl.id, config_key(t.name, {})))
    store.close()
    assert (two.cycles, two.mapping, two.simulations, two.history) == (
        one.cycles,
        one.mapping,
        one.simulations,
        one.history,
    )
    assert two.verified and two.pruned == one.pruned and two.rejected == one.rejected
    assert trials >= two.simulations + 1  # every simulation the search counted is stored, as without workers


@dataclass(frozen=True)
class _Fails:
    """A target whose simulations fail in a worker as in the solving process."""

    name: str = "fails"

    def instance(self, wl, params, seed):  # noqa: ANN001, ANN201
        return seed

    def evaluate(self, inst, m, mode):  # noqa: ANN001, ANN201
        raise ZombossError(f"cannot simulate {m.key()}")


def test_a_worker_that_fails_hands_back_nothing_so_the_search_raises_the_error_itself():
    m = KnobMapping("matmul", (("tile", 4),))
    w = Workers(_Fails(), None, {}, 2)  # type: ignore[arg-type]
    try:
        w.submit(m, Mode.TIMING, 0)
        assert w.take(m, Mode.TIMING, 0) is None
        assert w.take(m, Mode.TIMING, 0) is None  # (taken once)
    finally:
        w.close()


@dataclass(frozen=True)
class _Echo:
    """A target whose simulation of a mapping takes its `tile` cycles."""

    name: str = "echo"

    def instance(self, wl, params, seed):  # noqa: ANN001, ANN201
        return seed

    def evaluate(self, inst, m, mode):  # noqa: ANN001, ANN201
        return Evaluation("echo", "w", m, mode, m.int("tile"), None, {}, 1, 0.0, inst)


def test_simulations_never_taken_are_handed_over_once_for_the_store():
    a, b = KnobMapping("matmul", (("tile", 4),)), KnobMapping("matmul", (("tile", 8),))
    w = Workers(_Echo(), None, {}, 2)  # type: ignore[arg-type]
    try:
        w.submit(a, Mode.TIMING, 0)
        w.submit(b, Mode.TIMING, 1)
        assert w.take(a, Mode.TIMING, 0).cycles == 4
        deadline = time.monotonic() + 30
        while not (left := w.finished()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [(ev.mapping, ev.seed, ev.cycles) for ev in left] == [(b, 1, 8)]
        assert w.finished() == [] and w.take(b, Mode.TIMING, 1) is None
    finally:
        w.close()


def test_a_killed_idle_worker_leaves_the_rest_to_the_search_and_close_returns():
    """A `multiprocessing.Pool` whose idle worker is killed holds its task queue's lock forever:
    the next simulation was never handed back and `close` (`Pool.terminate`) hung."""
    import multiprocessing

    a, b = KnobMapping("matmul", (("tile", 4),)), KnobMapping("matmul", (("tile", 8),))
    before = {p.pid for p in multiprocessing.active_children()}
    w = Workers(_Echo(), None, {}, 2)  # type: ignore[arg-type]
    ended = threading.Event()
    try:
        w.submit(a, Mode.TIMING, 0)
        assert w.take(a, Mode.TIMING, 0).cycles == 4  # the workers are up, and idle again
        workers = [p for p in multiprocessing.active_children() if p.pid not in before]
        assert len(workers) == 2
        os.kill(workers[0].pid, signal.SIGKILL)
        workers[0].join(10)

        def rest() -> None:
            w.submit(b, Mode.TIMING, 0)
            got = w.take(b, Mode.TIMING, 0)
            assert got is None or got.cycles == 8  # handed back, or left to the search
            w.close()
            ended.set()

        threading.Thread(target=rest, daemon=True).start()
        assert ended.wait(30), "the search hung on a killed worker"
        assert not [p for p in multiprocessing.active_children() if p.pid not in before]
    finally:
        if not ended.is_set():  # (a hung pool cannot be closed: its workers are killed here)
            for p in multiprocessing.active_children():
                if p.pid not in before:
                    p.kill()


def test_without_workers_nothing_is_run_ahead():
    m = KnobMapping("matmul", (("tile", 4),))
    w = Workers(_Fails(), None, {}, 1)  # type: ignore[arg-type]
    w.submit(m, Mode.TIMING, 0)
    assert w.pool is None and w.take(m, Mode.TIMING, 0) is None


def test_solve_jobs_are_capped_at_the_usable_cpus(capsys):
    from zomboss.app.cli import solve_jobs

    assert solve_jobs(None) == min(usable_cpus(), SolveConfig.batch)
    assert solve_jobs(1) == 1 and capsys.readouterr().err == ""
    assert solve_jobs(10_000) == usable_cpus()
    assert f"--jobs 10000 capped at {usable_cpus()}" in capsys.readouterr().err


def _children(pid: int) -> set[int]:
    out = set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.add(int(d))
            except (OSError, IndexError, ValueError):
                continue
    return out


def _running(pid: int) -> bool:
    """Whether a process exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_a_killed_solve(tmp_path):
    p = subprocess.Popen(
        [sys.executable, "-m", "zomboss", "solve", "gemmini", "conv1_r50", "--jobs", "2", "--db", str(tmp_path / "z")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        kids: set[int] = set()
        while len(kids) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            kids = _children(p.pid)
        assert len(kids) >= 2, "the solve never started its workers"
        p.send_signal(signal.SIGKILL)
        p.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_running(k) for k in kids):
            time.sleep(0.2)
        assert not [k for k in kids if _running(k)], "workers outlived their solve"
    finally:
        if p.poll() is None:
            p.kill()
