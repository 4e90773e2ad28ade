"""Package list for setuptools: the core packages plus one per folder under targets/ (so a new
machine needs no packaging edit; it registers through its entry point in pyproject.toml)."""

from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).parent
CORE = ["zomboss", "zomboss.solvers", "zomboss.targets", "zomboss.grammar", "zomboss.kbrules"]
TARGETS = sorted(f"zomboss.targets.{p.parent.name}" for p in (ROOT / "targets").glob("*/__init__.py"))

setup(packages=CORE + TARGETS)
