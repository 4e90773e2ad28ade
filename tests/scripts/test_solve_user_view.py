"""scripts/solve_user_view.py: the guided solve timed as a user runs it, per checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import load_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "zomboss").exists(), reason="needs the checkout's .venv")
def test_one_instance_gives_a_row_and_a_summary_per_checkout(capsys):
    uv = load_script("solve_user_view")
    assert uv.main(["plena", str(ROOT), "--only", "rope_4x64"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| rope_4x64 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[1]) > 0 and cells[2] == "317"  # the proven optimum (benchmarks/exhaustive)
    summary = next(line for line in out.splitlines() if line.startswith(f"| {ROOT.name} |"))
    assert float(summary.split("|")[2]) == float(cells[1])


def test_a_checkout_without_its_venv_is_refused(tmp_path):
    uv = load_script("solve_user_view")
    with pytest.raises(SystemExit, match="no .venv/bin/zomboss"):
        uv.main(["vta", str(tmp_path)])
