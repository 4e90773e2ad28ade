"""The knowledge base: a parsed doc with its parameters evaluated, validated and compiled to
ASP. One job per module: the records (`records`: `KB` and what it holds), their validation
(`validate`), the compilation of a doc (`compile`), the cache entries (`cache`) and
`load_kb`, which reads or builds them (`load`); the typed facts that go into clingo and come
out of it (`facts`), the ASP programs (`asp`), the clingo calls that answer queries and checks
(`query`), the rule library (`lp/*.lp`) and the record of a broken rule (`violation`).
Imports `doc`, `expr`, `util` and `errors` only; the records import nothing of ASP.
"""

from __future__ import annotations

from zomboss.knowledge.cache import cache_dir
from zomboss.knowledge.compile import compile_doc
from zomboss.knowledge.load import forget_loaded, load_kb
from zomboss.knowledge.query import query, solve_atoms
from zomboss.knowledge.records import KB, scope_names
from zomboss.knowledge.violation import Violation

__all__ = [
    "KB",
    "Violation",
    "cache_dir",
    "compile_doc",
    "forget_loaded",
    "load_kb",
    "query",
    "scope_names",
    "solve_atoms",
]
