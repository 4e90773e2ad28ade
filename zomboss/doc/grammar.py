"""The doc notation's grammar text, its NAME terminal and its error type: what the KB cache
needs (a KB's digest covers the grammar) without loading lark, which a cached KB never uses."""

from __future__ import annotations

from importlib import resources

from zomboss.errors import ZombossError


class DocError(ZombossError):
    """A doc that cannot be read or is inconsistent; the message starts with file:line:col."""


NAME = r"[A-Za-z_][A-Za-z0-9_]*"  # the grammar's NAME terminal


def grammar_text() -> str:
    return resources.files("zomboss.doc").joinpath("archdoc.lark").read_text()
