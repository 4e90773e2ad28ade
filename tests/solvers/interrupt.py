"""Ctrl-C a `zomboss` command after some seconds: (exit status, stderr, seconds it took to exit)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time


def interrupt(args: list[str], after: float) -> tuple[int, str, float]:
    p = subprocess.Popen(
        [sys.executable, "-m", "zomboss", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        time.sleep(after)
        t0 = time.perf_counter()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        return p.returncode, err, time.perf_counter() - t0
    finally:
        if p.poll() is None:  # never leave a solver running behind a failed test
            p.kill()
            p.communicate()
