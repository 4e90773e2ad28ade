"""Which Zomboss this is: the installed version, the git commit when it runs from a checkout,
and which optional extras are importable, for `zomboss --version`, `zomboss info` and the
bench report (a number in a report is only comparable with the code that produced it)."""

from __future__ import annotations

import functools
import importlib.util
import subprocess
from pathlib import Path

# extra name -> the modules it installs (pyproject's optional dependencies)
EXTRAS: dict[str, tuple[str, ...]] = {"plot": ("matplotlib",), "llm": ("openai", "tiktoken"), "ray": ("ray",)}


def version() -> str:
    """The installed distribution's version, or "unknown" when Zomboss runs uninstalled."""
    import importlib.metadata  # (20 ms to import: only `--version`, `info` and reports ask)

    try:
        return importlib.metadata.version("zomboss")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def commit() -> str | None:
    """The commit of the source checkout Zomboss runs from (with `+dirty` when files differ
    from it), or None for an installed copy or when git is not there."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None

    def git(*args: str) -> str:
        run = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=True)
        return run.stdout.strip()

    try:
        head = git("rev-parse", "--short=12", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if head and dirty else head or None


def version_line() -> str:
    """`zomboss 0.1.0 (commit 0123abcd4567)`, the commit only when known."""
    c = commit()
    return f"zomboss {version()}" + (f" (commit {c})" if c else "")


def extras() -> dict[str, bool]:
    """Each optional extra (`zomboss[plot]`, `zomboss[llm]`, `zomboss[ray]`): are all of its
    modules importable? Found without importing them (matplotlib and ray take seconds)."""
    return {name: all(_importable(m) for m in modules) for name, modules in EXTRAS.items()}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or half-installed package
        return False
