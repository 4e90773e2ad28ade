"""A broken rule, located: which rule (id and doc line), where in a program or mapping, with
the values that broke it. The Python checkers and clingo's answers both report these."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str
    doc_loc: str
    index: int  # position in the dynamic stream (0-based)
    line: int  # program line (0: generated)
    op: str
    values: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""  # program file

    def __str__(self) -> str:
        if self.source:
            where = f"{self.source}:{self.line}" if self.line else self.source
        else:
            where = f"line {self.line}" if self.line else f"instruction #{self.index}"
        vals = ", ".join(f"{k}={v}" for k, v in self.values.items())
        return f"{where}: {self.op}: {self.rule} ({self.doc_loc}): {self.message}" + (f" [{vals}]" if vals else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "message": self.message,
            "doc": self.doc_loc,
            "index": self.index,
            "line": self.line,
            "op": self.op,
            "values": dict(self.values),
        }
