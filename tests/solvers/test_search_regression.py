"""The guided search pinned to the committed bench report (`benchmarks/search/report.md`): a
change to the pool, the screen or a guide may not make any of these instances slower than the
report by more than 0.5 %. The instances are the quick ones of every target and op family the
search changes most (Gemmini's matmul pools of 2,690 classes; PLENA's and VTA's small spaces);
the long Gemmini instances (convs, mm1k, skinny_32) are left to the bench.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from zomboss.results import read_best
from zomboss.solvers.search import SolveConfig, solve
from zomboss.target import get_target

REPORT = Path(__file__).resolve().parents[2] / "benchmarks" / "search" / "report.md"
TOLERANCE = 0.005

CASES = [
    ("gemmini", "mm256"),
    ("gemmini", "odd_pad"),
    ("plena", "lin_60m_kv"),
    ("plena", "rms_64x384"),
    ("plena", "sm_64x128"),
    ("plena", "attn_64"),
    ("plena", "rope_64x64"),
    ("vta", "r18_c7"),
    ("vta", "dense_128"),
]


def test_the_report_table_is_read():
    with pytest.raises(ValueError, match="per-instance table"):
        read_best("# no table here")
    best = read_best(REPORT.read_text())
    assert len(best) == 69 and best[("gemmini", "mm256")] == 67632


@pytest.mark.slow
@pytest.mark.parametrize(("target", "workload"), CASES, ids=[f"{t}-{w}" for t, w in CASES])
def test_guided_search_is_no_slower_than_the_committed_report(target, workload):
    best = read_best(REPORT.read_text())[(target, workload)]
    t = get_target(target)
    res = solve(t, t.workload(workload), {}, SolveConfig())
    assert res.verified
    assert res.cycles <= best * (1 + TOLERANCE), f"{target}:{workload} {res.cycles} vs report {best}"
