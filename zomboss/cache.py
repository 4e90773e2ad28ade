"""Where Zomboss keeps derived artifacts, and how it writes them (atomically)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_root() -> Path:
    """`$ZOMBOSS_CACHE`, else `~/.cache/zomboss`."""
    return Path(os.environ.get("ZOMBOSS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "zomboss"))


def results_dir() -> Path:
    """Where `solve` and `bench` keep their store and reports: `$ZOMBOSS_RESULTS`, else the
    `results/` folder of the source checkout Zomboss runs from, else ~/.local/share/zomboss."""
    env = os.environ.get("ZOMBOSS_RESULTS")
    if env:
        return Path(env)
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").exists() and (root / "targets").is_dir():
        return root / "results"
    return Path(os.path.expanduser("~")) / ".local" / "share" / "zomboss"


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
