"""Plumbing every stage shares and no stage owns: where files go and how they are written
atomically (`files`), reading what users hand in within documented limits (`inputs`), worker
processes (`processes`), and a small LRU cache (`lru`). Imports nothing of Zomboss but `zomboss.errors`.
"""

from __future__ import annotations

from zomboss.util.files import (
    OutputError,
    RecordCodec,
    RecordError,
    append_text,
    atomic_write,
    cache_root,
    check_output,
    results_dir,
    warn_once,
)
from zomboss.util.inputs import (
    MAX_INSTRUCTIONS,
    LimitError,
    TooLargeToVerify,
    check_budget,
    check_workload_bytes,
    load_json,
    output_file,
    over_budget,
    read_bytes,
    read_json,
    read_text,
)
from zomboss.util.lru import Lru
from zomboss.util.processes import cap_at_cpus, die_with_parent, usable_cpus

__all__ = [
    "LimitError",
    "OutputError",
    "Lru",
    "MAX_INSTRUCTIONS",
    "RecordCodec",
    "RecordError",
    "TooLargeToVerify",
    "append_text",
    "atomic_write",
    "cap_at_cpus",
    "cache_root",
    "check_budget",
    "check_output",
    "check_workload_bytes",
    "die_with_parent",
    "load_json",
    "output_file",
    "over_budget",
    "read_bytes",
    "read_json",
    "read_text",
    "results_dir",
    "usable_cpus",
    "warn_once",
]
