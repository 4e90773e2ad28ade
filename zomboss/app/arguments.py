"""The command line's argument types: numbers and id lists checked by the parser, so a bad
flag is refused with argparse's one-line message before any work starts."""

from __future__ import annotations

import argparse
from collections.abc import Callable

MAX_WORKERS = 64  # a process pool beyond this forks more than any machine here runs at once


def count(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in [lo, hi] (a budget, a sample count, a pool size)."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if v < lo or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(
                f"expected {lo}..{hi}, got {v}" if hi else f"expected at least {lo}, got {v}"
            )
        return v

    return parse


def seconds(text: str) -> float:
    """An argparse type: a positive number of seconds."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return v


def ids(text: str) -> list[str]:
    """An argparse type: one or more comma-separated ids (`--only a,b`, or the flag repeated)."""
    out = [x.strip() for x in text.split(",") if x.strip()]
    if not out:
        raise argparse.ArgumentTypeError(f"expected one or more comma-separated ids, got {text!r}")
    return out


def fraction(text: str) -> float:
    """An argparse type: a number in [0, 1] (a relative gap)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.02, got {text!r}") from None
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction between 0 and 1, got {text}")
    return v
