"""Deciding legality against a KB: the per-instruction checker that simulators and `kb check`
run on programs (`checker`), the block checker that proves a hardware loop's expansion legal
at once (`block`), and the cross-checked reports of programs and mappings
that `kb check` prints (`kb_check`: Python predicates and clingo must agree). Imports the
layers below it: `knowledge`, `mapping`, `program`, `workload`, `expr`, `doc`, `util`.
"""

from __future__ import annotations

from zomboss.legality.block import Block, check_block
from zomboss.legality.checker import Checker
from zomboss.legality.kb_check import ASP_LIMIT, CheckReport, check_mapping_values, check_program_text, mapping_values

__all__ = [
    "ASP_LIMIT",
    "Block",
    "CheckReport",
    "Checker",
    "check_block",
    "check_mapping_values",
    "check_program_text",
    "mapping_values",
]
