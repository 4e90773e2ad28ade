"""Deciding legality against a KB: the per-instruction and block checkers that simulators and
`kb check` run on programs (`checker`), and the cross-checked reports of programs and mappings
that `kb check` prints (`kb_check`: Python predicates and clingo must agree). Imports the
layers below it: `knowledge`, `mapping`, `program`, `workload`, `expr`, `doc`, `util`.
"""

from __future__ import annotations

from zomboss.legality.checker import Block, Checker
from zomboss.legality.kb_check import ASP_LIMIT, CheckReport, check_mapping_values, check_program_text, mapping_values

__all__ = [
    "ASP_LIMIT",
    "Block",
    "CheckReport",
    "Checker",
    "check_mapping_values",
    "check_program_text",
    "mapping_values",
]
