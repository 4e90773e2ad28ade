"""Zomboss: verified kernels for new AI accelerators, from literate ISA docs.

The public Python API (docs/python-api.md): load a KB and query or check against it, list and
build workloads, run Candidate-0, `solve` (guided or exhaustive), `export`, and the result
records. Its functions live in `zomboss.api` and are imported from there on first use (PEP 562),
so `import zomboss` — which every subpackage's `import zomboss.errors` runs — stays cheap and
cannot form an import cycle; type checkers see the real names through the TYPE_CHECKING import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    __version__: str
    from zomboss.api import (
        KB,
        CheckReport,
        KernelResult,
        KnobMapping,
        LlmFellBack,
        NetworkResult,
        SolveResult,
        Target,
        Workload,
        ZombossError,
        builtin_networks,
        check,
        compile,
        default,
        export,
        get_target,
        get_workload,
        load_kb,
        query,
        results_db,
        simulate,
        solve,
        targets,
        workloads,
    )

__all__ = [
    "KB",
    "CheckReport",
    "KernelResult",
    "KnobMapping",
    "LlmFellBack",
    "NetworkResult",
    "SolveResult",
    "Target",
    "Workload",
    "ZombossError",
    "__version__",
    "builtin_networks",
    "check",
    "compile",
    "default",
    "export",
    "get_target",
    "get_workload",
    "load_kb",
    "query",
    "results_db",
    "simulate",
    "solve",
    "targets",
    "workloads",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from `zomboss.api` the first time it is asked for (`__version__`,
    the installed distribution's, read then too: importlib.metadata is not cheap to import)."""
    if name == "__version__":
        value = importlib.import_module("zomboss.util.version").version()
    elif name in __all__:
        value = getattr(importlib.import_module("zomboss.api"), name)
    else:
        raise AttributeError(f"module 'zomboss' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
