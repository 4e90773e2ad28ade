"""The registry of targets, and the one place that turns a name given by a user (a target or
the path of an ISA doc) into a KB.

A target is a folder under `targets/` with an ISA doc (`<name>.md`) and a module exposing
`TARGET`, an object satisfying `Target`, registered by one entry point in the
`zomboss.targets` group (pyproject.toml). Nothing else names a target: the CLI, the bench
and the search find them here, so a third machine gets every command for free.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
from importlib.metadata import entry_points
from pathlib import Path

from zomboss.errors import ZombossError
from zomboss.knowledge import KB, load_kb
from zomboss.target.protocol import Params, Target

GROUP = "zomboss.targets"


@functools.cache
def _registry() -> dict[str, str]:
    """Target name -> module, from the `zomboss.targets` entry points (`name = "module:TARGET"`)."""
    out = {}
    for ep in entry_points(group=GROUP):
        out[ep.name] = ep.value.partition(":")[0]
    return dict(sorted(out.items()))


def target_names() -> tuple[str, ...]:
    """The names of the registered targets, sorted."""
    return tuple(_registry())


def _module(name: str) -> str:
    reg = _registry()
    if name not in reg:
        known = ", ".join(reg) or "none: is zomboss installed (pip install -e .)?"
        raise ZombossError(f"unknown target {name!r} (targets: {known})")
    return reg[name]


def get_target(name: str) -> Target:
    """The registered target `name` (its module imported on first use); ZombossError naming
    the registered ones when there is none of that name."""
    mod = importlib.import_module(_module(name))
    return mod.TARGET


def target_package(name: str) -> Path:
    """The folder of a registered target, without importing its simulator."""
    spec = importlib.util.find_spec(_module(name))
    if spec is None or not spec.submodule_search_locations:
        raise ZombossError(f"target {name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def doc_path(name: str) -> Path:
    """The ISA doc of a registered target (`<folder>/<name>.md`)."""
    return target_package(name) / f"{name}.md"


def config_key(name: str, params: Params) -> str:
    """Identity of results for a target under parameter overrides: the KB digest (doc, grammar,
    rules, overrides) plus the target's code. Rows under another key are never reused."""
    h = hashlib.sha256(load_kb(doc_path(name), dict(params)).digest.encode())
    for entry in sorted(target_package(name).rglob("*.py")):
        h.update(entry.read_bytes())
    return h.hexdigest()[:20]


def doc_for(name: str) -> Path:
    """The ISA doc a user means by `name`: a registered target's, or a `.md` path."""
    if name in target_names():
        return doc_path(name)
    p = Path(name)
    if p.suffix == ".md":
        if not p.exists():
            raise ZombossError(f"{name}: no such file")
        return p
    raise ZombossError(f"unknown target {name!r} (targets: {', '.join(target_names())}, or a path to an ISA doc .md)")


def resolve_kb(name: str, overrides: Params, use_cache: bool = True) -> KB:
    """The KB of a registered target or of a doc path, under parameter overrides."""
    return load_kb(doc_for(name), overrides, use_cache=use_cache)
