"""Run one fuzz example in a forked child with a memory limit (RLIMIT_AS) and a time limit,
and classify what happened.

An outcome is one of
  ok            the function returned (its value is `value`)
  error         a ZombossError: a refusal with a message (checked to be one clear line)
  inconsistency a ZombossError saying the Python and ASP checks disagree (a defect)
  crash         any other exception (a defect: users would see an internal error)
  memory        MemoryError, or the child died under the memory limit (a defect)
  timeout       the child ran past the time limit (a defect: a hang)

Defects are what the fuzzing suite asserts never happen.
"""

from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MEMORY_MB = int(os.environ.get("ZOMBOSS_FUZZ_MEMORY_MB", "1024"))  # on top of what the parent already maps
SECONDS = float(os.environ.get("ZOMBOSS_FUZZ_SECONDS", "20"))
DEFECTS = ("inconsistency", "crash", "memory", "timeout")
QUIET = os.environ.get("ZOMBOSS_FUZZ_VERBOSE") != "1"


@dataclass
class Outcome:
    kind: str
    message: str = ""
    value: Any = None
    seconds: float = 0.0

    @property
    def defect(self) -> bool:
        return self.kind in DEFECTS

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}" if self.message else self.kind


def _vm_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def run(fn: Callable[[], Any], memory_mb: int = MEMORY_MB, seconds: float = SECONDS) -> Outcome:
    """fn() in a forked child under the limits; its return value must be picklable."""
    from zomboss.errors import ZombossError

    limit = _vm_bytes() + (memory_mb << 20)
    r, w = os.pipe()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        if QUIET:  # warnings of the code under test would drown the report
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(int(seconds) + 2)  # a hard stop even if the parent is slow to kill us
            try:
                out = Outcome("ok", value=fn())
            except MemoryError:
                out = Outcome("memory", "MemoryError")
            except ZombossError as e:
                text = str(e)
                kind = "inconsistency" if "internal inconsistency" in text else "error"
                out = Outcome(kind, text)
            except RecursionError as e:
                out = Outcome("crash", f"RecursionError: {e}")
            except BaseException as e:  # noqa: BLE001 - classify everything
                out = Outcome("crash", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-6)}")
            try:
                data = pickle.dumps(out)
            except Exception:  # noqa: BLE001 - an unpicklable value
                data = pickle.dumps(Outcome(out.kind, out.message, repr(out.value)[:2000]))
            with os.fdopen(w, "wb") as f:
                f.write(data)
        finally:
            os._exit(0)
    os.close(w)
    chunks: list[bytes] = []
    deadline = t0 + seconds
    timed_out = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([r], [], [], min(left, 1.0))
        if ready:
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    dt = time.monotonic() - t0
    if timed_out:
        return Outcome("timeout", f"still running after {seconds:.0f} s", seconds=dt)
    if not chunks:
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        what = "killed by SIGALRM (hang)" if sig == signal.SIGALRM else f"died (status {status})"
        kind = "timeout" if sig == signal.SIGALRM else "memory"
        return Outcome(kind, what, seconds=dt)
    out = pickle.loads(b"".join(chunks))
    out.seconds = dt
    return out


def check(outcome: Outcome, *, located: str | None = None) -> None:
    """Assert the outcome is no defect; refusals are one line (and start with `located`,
    a file prefix, when given)."""
    assert not outcome.defect, str(outcome)
    if outcome.kind == "error":
        msg = outcome.message
        assert "Traceback" not in msg, msg
        first = msg.splitlines()[0] if msg else ""
        assert first.strip(), f"empty message: {msg!r}"
        if located is not None:
            assert first.startswith(located), f"not located at {located!r}: {first}"
