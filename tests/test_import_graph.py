"""Dependencies point one way (docs/architecture.md): each package of the core imports only the
packages below it in the data flow, the solvers' roles build on each other in one order, the
core and the solvers know no machine, and targets know no search and never each other.
Checked on the import statements of every module, in function bodies too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]

# The core's packages, lowest first; a package may import only packages of earlier layers.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("util",),
    ("expr",),
    ("doc",),
    ("knowledge",),
    ("workload", "program", "results", "llm"),
    ("mapping",),
    ("legality",),
    ("machine",),
    ("target",),
    ("verify",),
    ("solvers",),
    ("networks",),  # whole networks: ONNX graphs mapped onto op families (zomboss compile)
    ("app",),
    ("api",),  # the public Python API (zomboss/api.py): calls what the command line calls
    ("__main__",),  # `python -m zomboss`: runs the command line
)
LAYER = {pkg: i for i, names in enumerate(LAYERS) for pkg in names}

# The solvers' roles, lowest first: the space, the guides that rank inside it, the search loops.
SOLVER_LAYERS: tuple[tuple[str, ...], ...] = (
    ("space",),
    ("guides",),
    ("workers",),
    ("search",),
    ("exhaustive", "direct"),
)
SOLVER_LAYER = {role: i for i, names in enumerate(SOLVER_LAYERS) for role in names}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            if node.module == "zomboss":
                out |= {f"zomboss.{a.name}" for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level:
            out.add("." * node.level + (node.module or ""))
    return out


def _modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def _core_package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "zomboss" and len(parts) > 1 else None


def _package_of(path: Path) -> str:
    rel = path.relative_to(ROOT / "zomboss")
    return rel.parts[0].removesuffix(".py")


def test_every_core_package_has_a_layer():
    found = {_package_of(p) for p in _modules("zomboss")} - {"__init__"}
    assert found == set(LAYER), (
        f"packages without a layer: {sorted(found - set(LAYER))}; gone: {sorted(set(LAYER) - found)}"
    )


@pytest.mark.parametrize("path", _modules("zomboss"), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_imports_point_down(path):
    me = _package_of(path)
    if me == "__init__":
        return
    for m in _imports(path):
        assert not m.startswith("."), f"{path.relative_to(ROOT)}: relative import {m}"
        other = _core_package(m)
        if other is None or other == me:
            continue
        assert other != "targets", f"{path.relative_to(ROOT)} imports a target ({m})"
        assert LAYER[other] < LAYER[me], f"{path.relative_to(ROOT)} ({me}) imports {m} ({other}), which is not below it"


@pytest.mark.parametrize("path", _modules("zomboss/solvers"), ids=lambda p: str(p.relative_to(ROOT)))
def test_solver_roles_point_down(path):
    rel = path.relative_to(ROOT / "zomboss" / "solvers")
    me = rel.parts[0].removesuffix(".py")
    if me == "__init__":
        return
    for m in _imports(path):
        parts = m.split(".")
        if parts[:2] != ["zomboss", "solvers"] or len(parts) < 3 or parts[2] == me:
            continue
        assert SOLVER_LAYER[parts[2]] < SOLVER_LAYER[me], f"solvers/{rel} ({me}) imports {m}"


def test_targets_import_no_solver_and_no_other_target():
    for path in _modules("targets"):
        rel = path.relative_to(ROOT / "targets")
        if len(rel.parts) < 2:
            continue
        own = f"zomboss.targets.{rel.parts[0]}"
        for m in _imports(path):
            assert not m.startswith("zomboss.solvers"), f"{rel} imports the search ({m})"
            assert not m.startswith("zomboss.app"), f"{rel} imports the application ({m})"
            if m.startswith("zomboss.targets."):
                assert m == own or m.startswith(own + "."), f"{rel} imports another target ({m})"


def test_no_target_named_in_the_application_or_packaging():
    from zomboss.target import target_names

    for path in [*_modules("zomboss/app"), ROOT / "setup.py"]:
        text = path.read_text(encoding="utf-8")
        for name in target_names():
            assert f'"{name}"' not in text and f"'{name}'" not in text, (
                f"{path.relative_to(ROOT)} names target {name!r}"
            )
