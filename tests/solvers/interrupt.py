"""Ctrl-C a `zomboss` command after some seconds, or once a condition holds: (exit status,
stderr, seconds it took to exit)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable


def _interruptible() -> None:
    """Ctrl-C reaches the command as it reaches one typed at a terminal: a test run started in
    the background by a non-interactive shell (or under `time`, `nohup`) ignores SIGINT, every
    process it starts inherits that, and Python then installs no KeyboardInterrupt at all."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt(args: list[str], after: float, until: Callable[[], bool] | None = None) -> tuple[int, str, float]:
    """Interrupt after `after` seconds, or with `until`, as soon as it holds (polled; at most
    `after` seconds, then the test fails)."""
    p = subprocess.Popen(
        [sys.executable, "-m", "zomboss", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_interruptible,
    )
    try:
        if until is None:
            time.sleep(after)
        else:
            deadline = time.monotonic() + after
            while not until():
                assert time.monotonic() < deadline and p.poll() is None, "the condition never held while it ran"
                time.sleep(0.1)
        t0 = time.perf_counter()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        return p.returncode, err, time.perf_counter() - t0
    finally:
        if p.poll() is None:  # never leave a solver running behind a failed test
            p.kill()
            p.communicate()
