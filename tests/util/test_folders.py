"""Where Zomboss keeps things (zomboss/util/files.py): the environment variables win, a source
checkout keeps its results in `results/`, and otherwise the platform's folders (platformdirs)."""

from __future__ import annotations

from pathlib import Path

import platformdirs

from zomboss.util import cache_root, files, results_dir


def test_the_environment_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("ZOMBOSS_CACHE", str(tmp_path / "c"))
    monkeypatch.setenv("ZOMBOSS_RESULTS", str(tmp_path / "r"))
    assert cache_root() == tmp_path / "c" and results_dir() == tmp_path / "r"


def test_the_platform_folders_otherwise(monkeypatch, tmp_path):
    monkeypatch.delenv("ZOMBOSS_CACHE", raising=False)
    monkeypatch.delenv("ZOMBOSS_RESULTS", raising=False)
    assert cache_root() == Path(platformdirs.user_cache_dir("zomboss", appauthor=False))
    assert results_dir() == Path(files.__file__).resolve().parents[2] / "results"  # this source checkout
    installed = tmp_path / "site-packages" / "zomboss" / "util" / "files.py"  # no pyproject.toml above it
    monkeypatch.setattr(files, "__file__", str(installed))
    assert results_dir() == Path(platformdirs.user_data_dir("zomboss", appauthor=False))
