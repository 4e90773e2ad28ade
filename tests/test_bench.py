"""`zomboss bench` as users run it: resumable after a kill (nothing lost, nothing repeated),
two processes sharing one store, unknown ids refused, and a local Ray cluster."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zomboss.app import main
from zomboss.target import get_target, target_names

ZOMBOSS = [sys.executable, "-m", "zomboss"]


def _smallest(name: str) -> str:
    t = get_target(name)
    return min(t.suite(), key=lambda w: (t.bound(w, {}), w.id)).id


def _trials(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT target, workload, mapping, mode, seed FROM trials").fetchall()


def test_unknown_instance_is_refused(tmp_path, capsys):
    assert main(["bench", "--only", "no_such_instance", "--db", str(tmp_path / "s.sqlite")]) == 2
    assert "no_such_instance" in capsys.readouterr().err


def test_killed_bench_resumes_without_repeating(tmp_path):
    """SIGKILL a bench once it has committed a few simulations; the rerun reuses every one of
    them (the store's primary key makes a repeat impossible to hide) and completes."""
    db = tmp_path / "s.sqlite"
    name = target_names()[-1]
    args = [
        *ZOMBOSS,
        "bench",
        "--suite",
        name,
        "--only",
        _smallest(name),
        "--budget",
        "6",
        "--workers",
        "1",
        "--db",
        str(db),
        "--report",
        str(tmp_path / "r"),
        "--json",
    ]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if db.exists():
            try:
                if len(_trials(db)) >= 3:
                    break
            except sqlite3.Error:
                pass
        time.sleep(0.2)
    if proc.poll() is not None:
        pytest.skip("the bench finished before it could be killed")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = set(_trials(db))
    assert before, "nothing was committed before the kill"
    out = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    after = _trials(db)
    assert len(after) == len(set(after)) and before <= set(after)
    res = json.loads(out.stdout)["results"][0]
    assert res["verified"] is True


@pytest.mark.slow
@pytest.mark.skipif(
    not Path(sys.executable).with_name("ray").exists() and not os.environ.get("CI"),
    reason="Ray is not installed (pip install 'zomboss[ray]'; CI installs it, so there this test never skips)",
)
def test_bench_on_a_local_ray_cluster(tmp_path):
    """`--ray local` starts a local Ray instance for the run and fans the instances out as tasks."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    name = target_names()[0]
    out = subprocess.run(
        [
            *ZOMBOSS,
            "bench",
            "--suite",
            name,
            "--only",
            _smallest(name),
            "--defaults-only",
            "--ray",
            "local",
            "--db",
            str(tmp_path / "s.sqlite"),
            "--report",
            str(tmp_path / "r"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout)["results"][0]["verified"] is True
