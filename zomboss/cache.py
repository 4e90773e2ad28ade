"""Where Zomboss keeps derived artifacts, and how it writes them (atomically)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_root() -> Path:
    """`$ZOMBOSS_CACHE`, else `~/.cache/zomboss`."""
    return Path(os.environ.get("ZOMBOSS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "zomboss"))


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename: a reader (or a killed
    writer) never sees a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
