"""Every `zomboss` command written in docs/ parses with today's command line: no removed flag, no
misspelled subcommand, no out-of-range number (the README's commands are run by test_readme.py;
the docs' ones are many and some take minutes or an LLM server, so they are only parsed)."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from zomboss.app.cli import build_parser

ROOT = Path(__file__).parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md"))


def _commands(page: Path) -> list[tuple[int, list[str]]]:
    """`zomboss ...` invocations in the page's sh blocks, split at `&&`, `|`, `;` and redirections."""
    out: list[tuple[int, list[str]]] = []
    lang = ""
    pending = ""
    for n, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1):
        m = re.match(r"^\s*(```|~~~)\s*(\w*)", line)
        if m:
            lang = "" if lang else (m.group(2) or "none")
            continue
        if lang != "sh":
            continue
        pending += line
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        words = shlex.split(pending, comments=True)
        pending = ""
        argv: list[str] = []
        for w in [*words, "&&"]:
            if w in {"&&", "|", ";", "||"} or w.startswith(">"):
                if argv[:1] == ["zomboss"]:
                    out.append((n, argv[1:]))
                argv = [] if not w.startswith(">") else ["redirected"]
            else:
                argv.append(w)
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_docs_commands_parse(page):
    bad = []
    for n, argv in _commands(page):
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                build_parser().parse_args(argv)
        except SystemExit as e:
            if e.code == 0:  # --version and --help print and exit 0: they parsed
                continue
            bad.append(f"{page.relative_to(ROOT)}:{n}: zomboss {shlex.join(argv)}: {err.getvalue().strip()[-300:]}")
    assert not bad, "\n".join(bad)


def test_the_docs_have_commands():
    assert sum(len(_commands(p)) for p in PAGES) >= 40
