"""What several test files need from outside the package: the scripts under scripts/ as modules,
and the Spike bundle beside the checkout (../shared/tools/spike) with the reason it is unusable."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
SPIKE = ROOT.parent / "shared" / "tools" / "spike"


def load_script(name: str) -> ModuleType:
    """scripts/NAME.py as a module (registered by name: process pools pickle its functions)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def spike_missing() -> str | None:
    """Why the Spike tests cannot run here, or None when they can."""
    if not (SPIKE / "spike-gemmini.tar.xz").exists():
        return f"no Spike bundle at {SPIKE} (../shared is not beside this checkout)"
    if shutil.which("riscv64-unknown-elf-gcc") is None:
        return "no riscv64-unknown-elf-gcc (apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf)"
    return None
