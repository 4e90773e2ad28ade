"""Worker processes: how many this process may usefully run (`usable_cpus`, `cap_at_cpus`) and
how a worker ends with the process that started it (`die_with_parent`), for the bench's pool
of instances and the solve's simulations run ahead."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

PARENT_POLL_S = 0.5  # how often a worker looks whether the process that started it is alive


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def cap_at_cpus(n: int, flag: str) -> int:
    """`n` workers, at most the usable CPUs (more only compete for them; `--workers 100000` once
    forked 1,100 processes); a cap is said on stderr."""
    cpus = usable_cpus()
    if n > cpus:
        print(f"zomboss: {flag} {n} capped at {cpus}, the CPUs this process may use", file=sys.stderr)
        return cpus
    return n


def die_with_parent(parent: int) -> None:
    """A worker's initializer: the worker ends when the process that started it does, even
    when that one is killed with SIGKILL (it cannot stop its workers then, and they would run on,
    re-parented to PID 1). On Linux the kernel sends SIGKILL at the parent's death (prctl
    PR_SET_PDEATHSIG); everywhere, a daemon thread polls the parent as well."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        with contextlib.suppress(OSError, AttributeError):  # (the polling thread still ends it)
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    # the process that started this worker: `parent` itself, or a fork server of its own
    started_by = os.getppid()
    if started_by == 1 or (started_by != parent and not _alive(parent)):
        os._exit(1)  # the parent died before the kernel could be told
    threading.Thread(target=_watch_parent, args=(started_by,), daemon=True, name="zomboss-parent-watch").start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _watch_parent(started_by: int) -> None:
    while os.getppid() == started_by:
        time.sleep(PARENT_POLL_S)
    os._exit(1)  # orphaned (re-parented): no one reads this worker's result any more
