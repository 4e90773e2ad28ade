"""The knowledge base: a parsed doc with its parameters evaluated, validated and compiled to
ASP (`kb`), the typed facts that go into clingo (`facts`), the ASP program and the clingo
calls that answer queries and checks (`asp`), the rule library (`lp/*.lp`) and the record of a
broken rule (`violation`). Imports `doc`, `expr`, `util` and `errors` only.
"""

from __future__ import annotations

from zomboss.knowledge.asp import query, solve_atoms
from zomboss.knowledge.kb import KB, cache_dir, compile_doc, load_kb, scope_names
from zomboss.knowledge.violation import Violation

__all__ = ["KB", "Violation", "cache_dir", "compile_doc", "load_kb", "query", "scope_names", "solve_atoms"]
