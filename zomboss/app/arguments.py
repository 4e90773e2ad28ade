"""The command line's argument types: numbers and id lists checked by the parser, so a bad
flag is refused with argparse's one-line message before any work starts; the help formatter
that states every default; `--version`."""

from __future__ import annotations

import argparse
import math
import textwrap
from collections.abc import Callable

from zomboss.util.processes import cap_at_cpus
from zomboss.util.version import version_line

MAX_SEED = 2**32 - 1  # NumPy's legacy generators take seeds below 2**32


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


def seed(text: str) -> int:
    """An argparse type: a seed, an integer in [0, MAX_SEED] (NumPy refuses negative seeds)."""
    return count(0, MAX_SEED)(text)


def seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds (not nan, not inf)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return v


def workers(text: str) -> int:
    """An argparse type: a process pool size, at least 1, capped at the usable CPUs (said on
    stderr)."""
    return cap_at_cpus(count(1)(text), "--workers")


def url(text: str) -> str:
    """An argparse type: an http(s) URL with a host (an endpoint such as http://127.0.0.1:8000/v1),
    by the check the LLM client makes of $OPENAI_BASE_URL."""
    from zomboss.llm import http_url

    if not http_url(text):
        raise argparse.ArgumentTypeError(f"expected an http(s) URL such as http://127.0.0.1:8000/v1, got {text!r}")
    return text


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


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every help text states its default, "(default: X)", unless it says it already or there
    is none to state (a switch, an unset option whose help says what happens then)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "default" in text or not states_default(action):
            return text
        return super()._get_help_string(action)

    def _split_lines(self, text: str, width: int) -> list[str]:
        """Wrapped at spaces only: a path (`zomboss-test/results`) stays whole."""
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)


def states_default(action: argparse.Action) -> bool:
    """Whether an argument has a default worth stating (not a switch's False, not unset)."""
    d = action.default
    return not (d is None or d is False or d is argparse.SUPPRESS or (isinstance(d, list) and not d))


class VersionAction(argparse.Action):
    """`--version`: the version and commit (zomboss.util.version), looked up only when asked
    for, since the commit takes a git call."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_line())
        parser.exit()
