"""Package list for setuptools: every package of the core (`zomboss/`) plus one per folder under
targets/ (so a new machine needs no packaging edit; it registers through its entry point in
pyproject.toml)."""

from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).parent
CORE = find_packages(include=["zomboss", "zomboss.*"])
TARGETS = ["zomboss.targets"] + sorted(
    f"zomboss.targets.{p.parent.name}" for p in (ROOT / "targets").glob("*/__init__.py")
)

setup(packages=CORE + TARGETS)
