"""Packaging (issue 28): a lean base install, the optional parts as extras, no console script
that shadows another package's, licence metadata, the type marker; and, slow, a fresh virtual
environment where `pip install .` (no extras) runs the docs/python-api.md walk-through."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

from tests.test_python_api_doc import run_doc

ROOT = Path(__file__).parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _names(reqs: list[str]) -> set[str]:
    return {r.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].strip() for r in reqs}


def test_plots_and_the_llm_client_are_extras():
    base = _names(PROJECT["dependencies"])
    extras = PROJECT["optional-dependencies"]
    assert not base & {"matplotlib", "openai", "tiktoken"}, base
    assert _names(extras["plot"]) == {"matplotlib"} and _names(extras["llm"]) == {"openai", "tiktoken"}
    assert extras["all"] == ["zomboss[plot,llm]"]


def test_known_breaking_majors_are_bounded_and_ci_pins_versions():
    for req in PROJECT["dependencies"]:
        if _names([req]) & {"clingo", "ortools", "numpy", "lark"}:
            assert "<" in req, f"{req}: no upper bound below the next major"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "-c constraints.txt" in makefile and ".[test,ray,all]" in makefile
    pins = [ln for ln in (ROOT / "constraints.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    assert pins and all("==" in ln for ln in pins)
    assert {"clingo", "numpy", "ortools", "openai", "matplotlib"} <= {ln.split("==")[0].lower() for ln in pins}


def test_no_clingo_console_script_and_licence_metadata():
    assert set(PROJECT["scripts"]) == {"zomboss"}  # `clingo` is the clingo package's: python -m clingo
    assert PROJECT["license"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert (ROOT / "zomboss" / "py.typed").exists()


def test_python_m_clingo_runs_an_exported_kb(tmp_path):
    """The README's `zomboss kb build gemmini --out g.lp && python -m clingo g.lp`."""
    from zomboss.app import main

    assert main(["kb", "build", "gemmini", "--out", str(tmp_path / "g.lp")]) == 0
    proc = subprocess.run(
        [sys.executable, "-m", "clingo", "g.lp"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode in (0, 10) and "\nSATISFIABLE" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow  # a fresh virtual environment and a `pip install` from PyPI: a few minutes
def test_a_base_install_runs_the_python_api_walkthrough(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    src = tmp_path / "src"  # a copy, so the build leaves nothing in the checkout
    local = {".venv", ".git", "results", "build"}  # the checkout's own, at its top only

    def ignore(folder: str, names: list[str]) -> set[str]:
        top = Path(folder) == ROOT
        return {n for n in names if (top and n in local) or n == "__pycache__" or n.endswith(".egg-info")}

    shutil.copytree(ROOT, src, ignore=ignore)
    install = subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", str(src)], capture_output=True, text=True, timeout=1500
    )
    assert install.returncode == 0, install.stdout + install.stderr
    listed = subprocess.run([str(py), "-m", "pip", "list"], capture_output=True, text=True).stdout.lower()
    assert "matplotlib" not in listed and "openai" not in listed  # no extras came along
    work = tmp_path / "work"
    work.mkdir()
    out = run_doc(str(py), work, with_plot=False)
    assert "speedup" in out and (work / "dense_vta.c").exists()
    no_llm = subprocess.run(
        [str(env_dir / "bin" / "zomboss"), "solve", "plena", "rope_4x64", "--guide", "llm"],
        capture_output=True,
        text=True,
        cwd=work,
        env={"ZOMBOSS_RESULTS": str(work), "ZOMBOSS_CACHE": str(work / "cache"), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert no_llm.returncode == 2 and "pip install 'zomboss[llm]'" in no_llm.stderr, no_llm.stderr
