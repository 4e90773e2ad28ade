"""docs/architecture.md is the map of the code: every package directory it names exists, and
every package (a directory with an `__init__.py` under `zomboss/` or `targets/`) is named in it.
Packages are named as backquoted paths ending in `/` (`zomboss/solvers/guides/`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
DOC = ROOT / "docs" / "architecture.md"


def _named() -> set[str]:
    text = DOC.read_text(encoding="utf-8")
    return set(re.findall(r"`((?:zomboss|targets)/(?:[\w-]+/)*)`", text))


def _packages() -> set[str]:
    out = set()
    for top in ("zomboss", "targets"):
        for init in (ROOT / top).rglob("__init__.py"):
            out.add(init.parent.relative_to(ROOT).as_posix() + "/")
    return out


def test_every_named_package_exists():
    missing = sorted(p for p in _named() if not (ROOT / p / "__init__.py").is_file())
    assert not missing, f"docs/architecture.md names packages that do not exist: {missing}"


def test_every_package_is_named():
    unnamed = sorted(_packages() - _named())
    assert not unnamed, f"packages missing from docs/architecture.md: {unnamed}"
