"""Reading a literate ISA doc: the lark grammar (`archdoc.lark`), the parser that turns its
fenced `isa` blocks into located, typed records (`parse`), and those records (`model`). The
first stage of the data flow; imports only `zomboss.expr` and `zomboss.errors`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zomboss.doc.grammar import NAME, DocError, grammar_text

if TYPE_CHECKING:
    from zomboss.doc.parse import parse_doc


def __getattr__(name: str) -> object:
    """`parse_doc` on first use: lark and the parser load only when a doc is parsed, never for
    a KB read from the cache (60 ms of every command's start-up)."""
    if name == "parse_doc":
        from zomboss.doc.parse import parse_doc

        return parse_doc
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DocError", "NAME", "grammar_text", "parse_doc"]
