"""docs/python-api.md runs as written: its python code blocks, in order, in a fresh interpreter
started in a scratch folder (KB cache and results store in temporary folders, matplotlib drawing
off screen). About half a minute (three small solves, one small exhaustive run), so it runs in
`make test`: the page is the API's first-five-minutes contract."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PAGE = ROOT / "docs" / "python-api.md"


def doc_code(with_plot: bool = True) -> str:
    """The page's python blocks joined in order (without the plot cell when `with_plot` is False)."""
    blocks = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(encoding="utf-8"), flags=re.S | re.M)
    assert len(blocks) >= 6, "docs/python-api.md lost its walk-through"
    return "\n".join(b for b in blocks if with_plot or "matplotlib" not in b)


def run_doc(python: str, folder: Path, with_plot: bool = True, timeout: float = 600) -> str:
    """Run the walk-through with `python` in `folder`; the output (fails with it on an error)."""
    (folder / "walkthrough.py").write_text(doc_code(with_plot), encoding="utf-8")
    env = {
        **os.environ,
        "ZOMBOSS_CACHE": str(folder / "cache"),
        "ZOMBOSS_RESULTS": str(folder / "results"),
        "MPLBACKEND": "Agg",
    }
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [python, "walkthrough.py"], cwd=folder, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"the walk-through failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_the_walkthrough_runs_as_written(tmp_path):
    pytest.importorskip("matplotlib")
    out = run_doc(sys.executable, tmp_path)
    assert "speedup" in out and "Candidate-0" in out
    assert (tmp_path / "speedups.png").stat().st_size > 0
    assert (tmp_path / "dense_vta.c").exists()
    assert (tmp_path / "results" / "zomboss.sqlite").exists()


def test_import_zomboss_is_cheap_and_every_public_name_resolves():
    code = (
        "import sys, zomboss\n"
        "heavy = [m for m in ('numpy', 'clingo', 'ortools', 'openai', 'zomboss.api') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "import pkgutil\n"
        "subpackages = {m.name for m in pkgutil.iter_modules(zomboss.__path__)}\n"
        "clash = sorted(set(zomboss.__all__) & subpackages)\n"
        "assert not clash, f'public names shadowed by subpackages: {clash}'\n"
        "missing = [n for n in zomboss.__all__ if getattr(zomboss, n, None) is None]\n"
        "assert not missing, missing\n"
        "assert zomboss.__version__ and 'solve' in dir(zomboss)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


OUTPUT_FLAGS = ("help", "json", "plain")


def test_the_api_keeps_the_command_lines_defaults():
    """Every keyword the command line has a flag for defaults to the flag's default (but the
    flags of how output is printed: the API returns records)."""
    import inspect

    import zomboss
    from zomboss.app.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "cmd").choices
    listing = {"list"}  # `compile --list` is zomboss.builtin_networks()
    for fn, cmd in ((zomboss.solve, "solve"), (zomboss.default, "default"), (zomboss.compile, "compile")):
        flags = {
            a.dest: a.default
            for a in sub[cmd]._actions
            if a.option_strings and a.dest not in OUTPUT_FLAGS and a.dest not in listing
        }
        params = inspect.signature(fn).parameters
        for dest, default in flags.items():
            name = {"param": "params", "dim": "dims"}.get(dest, dest)
            assert name in params, f"{cmd} --{dest} has no keyword in zomboss.{fn.__name__}"
            if params[name].default is inspect.Parameter.empty and default is None:
                continue  # required by the API, optional on the command line only for --list (compile --target)
            want = None if dest in ("param", "dim") else default
            assert params[name].default == want, f"zomboss.{fn.__name__}({name}=...) default differs from --{dest}"
