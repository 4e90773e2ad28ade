"""Dependencies point one way (DESIGN.md): the core and the solvers know no machine, targets
know no search and never each other. Checked on the import statements of every module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level:
            out.add("." * node.level + (node.module or ""))
    return out


def _modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("folder", ["solvers", "zomboss"])
def test_core_and_solvers_import_no_target(folder):
    for path in _modules(folder):
        bad = sorted(m for m in _imports(path) if m.startswith("zomboss.targets."))
        assert not bad, f"{path.relative_to(ROOT)} imports target modules {bad}"


def test_targets_import_no_solver_and_no_other_target():
    for path in _modules("targets"):
        rel = path.relative_to(ROOT / "targets")
        if len(rel.parts) < 2:
            continue
        own = f"zomboss.targets.{rel.parts[0]}"
        for m in _imports(path):
            assert not m.startswith("zomboss.solvers"), f"{rel} imports the search ({m})"
            if m.startswith("zomboss.targets."):
                assert m == own or m.startswith(own + "."), f"{rel} imports another target ({m})"


def test_no_target_named_in_the_cli_bench_or_packaging():
    from zomboss.target import target_names

    for rel in ("zomboss/cli.py", "zomboss/bench.py", "zomboss/check.py", "setup.py"):
        text = (ROOT / rel).read_text(encoding="utf-8")
        for name in target_names():
            assert f'"{name}"' not in text and f"'{name}'" not in text, f"{rel} names target {name!r}"
