"""scripts/guided_times.py: the guided solve's wall-time table against the committed report."""

from __future__ import annotations

from tests.support import load_script


def _load():
    return load_script("guided_times")


def test_one_instance_gives_a_row_with_its_report_ratio(capsys):
    g = _load()
    assert g.main(["plena", "--only", "rope_4x64", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| rope_4x64 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[-4] == "317" and float(cells[-3]) <= 1.005  # the report's best, no worse than it
    assert cells[-2] == "317" and cells[-1] == "0.00%"  # the exhaustive report's proven optimum, reached
    assert "1 job(s)" in out
    phases = [float(c) for c in cells[3:7]]  # candidate-0, pool, search, verify
    assert all(p >= 0 for p in phases) and sum(phases) <= float(cells[1]) + 0.05
    assert "median" in out and "load average" in out
