"""Reading a literate ISA doc: the lark grammar (`archdoc.lark`), the parser that turns its
fenced `isa` blocks into located, typed records (`parse`), and those records (`model`). The
first stage of the data flow; imports only `zomboss.expr` and `zomboss.errors`.
"""

from __future__ import annotations

from zomboss.doc.parse import NAME, DocError, grammar_text, parse_doc

__all__ = ["DocError", "NAME", "grammar_text", "parse_doc"]
