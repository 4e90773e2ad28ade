"""Shared by the effect tests of every target: a doc with its executable parts blanked, to
check that effects never reach ASP."""

from __future__ import annotations

import re


def without_effects(text: str) -> str:
    """The doc with its effect clauses, effect-only declarations and macro lines blanked (line
    numbers kept: the KB records where each rule comes from)."""
    out, depth = [], 0
    for line in text.split("\n"):
        s = line.strip()
        if depth or s.startswith("effect") or re.match(r"(view|tensor) \w+ \{", s) or s.startswith("macro "):
            depth += line.count("{") - line.count("}")
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)
