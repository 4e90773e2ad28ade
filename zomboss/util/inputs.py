"""Reading what users hand in, within documented limits (docs/archdoc.md, "Limits").

Every program, mapping and sidecar file is read here: bounded in size, decoded as UTF-8 and,
for JSON, bounded in nesting before it is parsed, each failure one error naming the file.
The run budgets live here too, so that `kb check` and every simulator stop at the same
limits with the same message: the dynamic instructions a run executes (`--max-instructions`)
and the bytes a workload's operands take (checked before anything is allocated).
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from zomboss.errors import WorkloadError, ZombossError
from zomboss.util.files import check_output

MAX_INPUT_BYTES = 256 << 20  # a program, mapping or sidecar file larger than this is refused
MAX_JSON_DEPTH = 64  # nesting a JSON input may have
MAX_INSTRUCTIONS = 20_000_000  # default budget of executed instructions (kb check, simulate: --max-instructions)
MAX_WORKLOAD_BYTES = 256 << 20  # the operands (inputs, intermediates, output) a verified workload may have
MAX_TIMED_BYTES = 64 << 30  # ... and one that is only placed and timed (no memory is allocated for it)


class LimitError(ZombossError):
    """A resource budget ran out (the message names the budget and how to raise it)."""


def read_bytes(path: Path, what: str = "a program or a mapping", limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of an input file, or one clear error naming it. The one reader of every file
    a user hands in: bounded by the bytes actually read (at most `limit` + 1), not by the
    size the file claims, so a device (/dev/zero), a FIFO or a symlink to one is refused
    at the limit instead of being read until memory runs out."""
    path = Path(path)
    size = f"{limit >> 20} MB" if limit >= 1 << 20 else f"{limit:,} bytes"
    too_large = ZombossError(f"{path}: larger than the {size} {what} may have (docs/archdoc.md, Limits)")
    try:
        # opened without blocking (a FIFO nobody writes would block the open for ever; it reads
        # as empty instead), then read blocking as usual
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        with open(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISDIR(st.st_mode):
                raise ZombossError(f"{path}: is a folder; expected {what}")
            if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                raise too_large
            chunks, n = [], 0
            while n <= limit:
                chunk = f.read(min(1 << 20, limit + 1 - n))
                if not chunk:
                    break
                chunks.append(chunk)
                n += len(chunk)
            if n > limit:
                raise too_large
            return b"".join(chunks)
    except IsADirectoryError:
        raise ZombossError(f"{path}: is a folder; expected {what}") from None
    except OSError as e:
        raise ZombossError(f"{path}: cannot read: {e.strerror or e}") from None


def read_text(path: Path, what: str = "a program or a mapping", limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of an input file (`read_bytes`), or one clear error naming it."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ZombossError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start}); expected {what}") from None


def load_json(text: str, path: str) -> Any:
    """Parse a JSON input; every failure (syntax, nesting beyond MAX_JSON_DEPTH, a number too
    long to read) is one WorkloadError naming the file."""
    depth = _json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise WorkloadError(f"{path}: JSON nested {depth} deep (at most {MAX_JSON_DEPTH})")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise WorkloadError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    except (ValueError, RecursionError) as e:
        raise WorkloadError(f"{path}: unreadable JSON: {e}") from None


def read_json(path: Path, what: str = "JSON") -> Any:
    return load_json(read_text(path, what), str(path))


def _json_depth(text: str) -> int:
    """Maximal bracket nesting outside strings (cheap; json.loads would recurse)."""
    depth = best = 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]', text):
        c = m.group(0)
        if c in "[{":
            depth += 1
            best = max(best, depth)
        elif c in "]}":
            depth -= 1
    return best


def check_budget(max_instructions: int) -> int:
    if isinstance(max_instructions, bool) or not isinstance(max_instructions, int) or max_instructions < 1:
        raise ZombossError(f"--max-instructions {max_instructions}: must be at least 1")
    return max_instructions


def over_budget(path: str, what: str, budget: int) -> LimitError:
    """The one message of an exhausted instruction budget; `what` says what was executed or
    would be ("the program executes more than ...", "its hardware loops run ...")."""
    return LimitError(
        f"{path}: {what}, more than the budget of {budget:,} executed instructions "
        "(raise it with --max-instructions N; hardware loops count every iteration)"
    )


class TooLargeToVerify(WorkloadError):
    """A workload that can be placed and timed but whose operands are too large to allocate."""


def check_workload_bytes(name: str, nbytes: int, *, timed_only: bool = False) -> None:
    """Refuse a workload whose operands would take more than MAX_WORKLOAD_BYTES, before any
    of them is allocated; `timed_only`: the placement of one that is only timed (nothing
    allocated), up to MAX_TIMED_BYTES."""
    if timed_only:
        if nbytes > MAX_TIMED_BYTES:
            raise WorkloadError(
                f"{name}: its operands take {_size(nbytes)}, more than the {MAX_TIMED_BYTES >> 30} GiB "
                "a workload may have even to be timed (docs/archdoc.md, Limits)"
            )
    elif nbytes > MAX_WORKLOAD_BYTES:
        raise TooLargeToVerify(
            f"{name}: its operands take {_size(nbytes)}, more than the {MAX_WORKLOAD_BYTES >> 20} MiB "
            "a workload may have (docs/archdoc.md, Limits); it can be timed only (--verify none)"
        )


def _size(n: int) -> str:
    return f"{n / (1 << 30):,.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):,.1f} MiB"


def output_file(path: Path) -> Path:
    """An output path a command may write (`check_output`: a regular file or a new path)."""
    check_output(path, "kernel")
    return Path(path)
