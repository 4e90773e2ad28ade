"""`bench --workers`: the pool is capped at the CPU count (said on stderr), and its workers die
with the bench even when the bench is killed with SIGKILL (issue #29, items 6 and 7)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zomboss.app import main
from zomboss.util import usable_cpus as cpu_count


def test_workers_beyond_the_cpu_count_are_capped_and_said(tmp_path, capsys):
    argv = ["bench", "--defaults-only", "--suite", "plena", "--only", "rms_4x384", "--json"]
    argv += ["--db", str(tmp_path / "r.db"), "--report", str(tmp_path / "rep"), "--workers", "100000"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert f"zomboss: --workers 100000 capped at {cpu_count()}, the CPUs this process may use" in err
    import json

    assert json.loads(out)["workers"] == cpu_count()


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        out |= {int(c) for c in (task / "children").read_text().split()}
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").exists() or cpu_count() < 2, reason="needs /proc and 2 CPUs")
def test_pool_workers_die_with_a_killed_bench(tmp_path):
    env = {**os.environ, "ZOMBOSS_RESULTS": str(tmp_path / "results")}
    argv = [sys.executable, "-m", "zomboss", "bench", "--suite", "gemmini", "--workers", "2", "--json"]
    argv += ["--db", str(tmp_path / "r.db"), "--report", str(tmp_path / "rep")]
    bench = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while len(workers) < 2 and time.monotonic() < deadline and bench.poll() is None:
            time.sleep(0.2)
            workers = _children(bench.pid)
        assert len(workers) == 2, "the bench did not start its two pool workers"
        bench.send_signal(signal.SIGKILL)
        bench.wait()
        deadline = time.monotonic() + 5
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [w for w in workers if _alive(w)]
        for w in left:
            os.kill(w, signal.SIGKILL)
        assert not left, f"pool workers {left} outlived the killed bench"
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
