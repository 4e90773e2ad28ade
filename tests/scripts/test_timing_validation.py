"""scripts/timing_validation.py: the generic timing model against the hand-written ones, on a tiny
subset (the report itself is a script run, benchmarks/timing/report.md)."""

from __future__ import annotations

import json
import math

import pytest

from tests.support import load_script


@pytest.fixture(scope="module")
def tv():
    return load_script("timing_validation")


def test_a_plena_default_and_random_mappings_are_exact_and_gemmini_is_reported(tv, tmp_path, capsys):
    out = tmp_path / "rows.json"
    md = tmp_path / "table.md"
    argv = ["--ids", "rms_4x384", "mm256", "--mappings", "2", "--json", str(out), "--markdown", str(md)]
    assert tv.main(argv) == 0
    rows = json.loads(out.read_text())
    plena = [r for r in rows if r["target"] == "plena"]
    assert {r["kind"] for r in plena} == {"default", "random"} and len(plena) == 3
    assert all(r["generic"] == r["hand"] for r in plena)  # PLENA's doc reproduces the rtl clock
    gem = [r for r in rows if r["target"] == "gemmini"]
    assert len(gem) == 3 and all(r["generic"] > 0 and r["hand"] > 0 for r in gem)
    table = md.read_text()
    assert "| plena | rmsnorm | suite defaults | 1 | 1 | 0.00% | +0.00% | - |" in table
    assert "| plena | rmsnorm | random mappings | 2 | 2 | 0.00% | +0.00% |" in table
    assert "| gemmini | matmul | suite defaults | 1 | " in table
    assert table in capsys.readouterr().out


def test_the_summary_counts_exact_matches_errors_and_rank_agreement(tv):
    def row(hand: int, generic: int | None, kind: str = "random"):
        return tv.Row("plena", "f", "w", kind, "{}", hand, generic, 10, 0.0)

    rows = [row(100, 100), row(200, 150), row(400, 440), row(300, None), row(50, 50, "default")]
    s = {x.kind: x for x in tv.summarise(rows)}
    r = s["random"]
    assert (r.compared, r.skipped, r.exact) == (3, 1, 1)
    assert r.median_err == pytest.approx(0.1) and r.worst_err == pytest.approx(-0.25)
    assert r.spearman == pytest.approx(1.0)  # 100 < 200 < 400 and 100 < 150 < 440
    d = s["default"]
    assert (d.compared, d.exact) == (1, 1) and math.isnan(d.spearman)
    assert "| plena | f | random mappings | 3 (+1 skipped) | 1 | 10.00% | -25.00% | 1.000 |" in tv.markdown([r])


def test_a_doc_given_with_doc_times_the_generic_side(tv, tmp_path):
    """`--doc plena=PATH`: PLENA's doc without its blocking fetch overlaps the units, short of the
    rtl clock (rms_4x384: 1,847 against 2,278 cycles)."""
    from zomboss.targets.plena.config import DOC

    doc = tmp_path / "plena.md"
    doc.write_text(DOC.read_text().replace("fetch { blocking: 1 }", ""))
    out = tmp_path / "rows.json"
    try:
        assert tv.main(["--ids", "rms_4x384", "--mappings", "0", "--doc", f"plena={doc}", "--json", str(out)]) == 0
    finally:
        tv.DOC_OVERRIDE.clear()
    (row,) = json.loads(out.read_text())
    assert (row["hand"], row["generic"]) == (2278, 1847)
