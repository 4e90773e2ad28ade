"""scripts/bench_networks.py: a network compiled cold then warm, its row and its report."""

from __future__ import annotations

import pytest

from tests.support import load_script


@pytest.mark.slow
def test_a_network_row_comes_from_a_cold_and_a_warm_compile(tmp_path, capsys):
    bench = load_script("bench_networks")
    bench.main(["--only", "resnet18:vta", "--budget", "2", "--workers", "1", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| resnet18 | vta |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "10" and cells[3] == "19" and cells[4] == "10/10"  # distinct, instances, verified
    cold, warm = float(cells[8]), float(cells[9])
    assert warm < cold
    report = (tmp_path / "resnet18_vta" / "report.md").read_text()
    # the committed report is the cold run's: its wall time, not the warm run's
    wall = next(line for line in report.splitlines() if line.startswith("| wall time |"))
    assert float(wall.split("|")[2].split()[0]) > warm / 2
