"""The target interface the CLI and the search talk to (`protocol`), the registry of installed
targets and the one resolver of a target-or-doc name (`registry`), the plumbing every target
shares (`base`: per-parameter caches, instance and lowering LRUs, program files, sidecars,
export) and the base of a target simulated from its doc (`doc_target`). Imports `machine`, `legality` and the layers below.
"""

from __future__ import annotations

from zomboss.target.base import SidecarError, TargetBase, read_sidecar, sidecar_path, sidecar_seed, workload_key
from zomboss.target.doc_target import DocInstance, DocTarget, pack_image
from zomboss.target.protocol import (
    BREAKDOWN_KEYS,
    Evaluation,
    Instance,
    Mode,
    Params,
    ParamsKey,
    SampledVerifier,
    Target,
    params_key,
)
from zomboss.target.registry import config_key, doc_for, doc_path, get_target, resolve_kb, target_names, target_package

__all__ = [
    "BREAKDOWN_KEYS",
    "DocInstance",
    "DocTarget",
    "Evaluation",
    "Instance",
    "Mode",
    "Params",
    "ParamsKey",
    "SidecarError",
    "TargetBase",
    "SampledVerifier",
    "Target",
    "config_key",
    "doc_for",
    "doc_path",
    "get_target",
    "pack_image",
    "params_key",
    "read_sidecar",
    "sidecar_path",
    "sidecar_seed",
    "resolve_kb",
    "target_names",
    "target_package",
    "workload_key",
]
