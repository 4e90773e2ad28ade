"""scripts/guided_times.py: the guided solve's wall-time table against the committed report."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "scripts" / "guided_times.py"


def _load():
    spec = importlib.util.spec_from_file_location("guided_times", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_one_instance_gives_a_row_with_its_report_ratio(capsys):
    g = _load()
    assert g.main(["plena", "--only", "rope_4x64"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| rope_4x64 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[5] == "317" and float(cells[6]) <= 1.005  # the report's best, no worse than it
    assert "median" in out and "load average" in out
