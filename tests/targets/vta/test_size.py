"""VTA's acceptance bound on its own Python: a machine described by its doc should need little
code beside it (issue #27: "VTA's Python stays <= 400 lines"); the rest belongs in the core."""

from __future__ import annotations

from pathlib import Path

VTA = Path(__file__).resolve().parents[3] / "targets" / "vta"
LIMIT = 400


def test_vtas_python_stays_within_400_lines() -> None:
    """Lines counted as `wc -l targets/vta/*.py` counts them (newline characters)."""
    files = sorted(VTA.glob("*.py"))
    assert files, f"no Python files under {VTA}"
    counts = {f.name: f.read_bytes().count(b"\n") for f in files}
    assert sum(counts.values()) <= LIMIT, f"targets/vta/*.py has {sum(counts.values())} lines (> {LIMIT}): {counts}"
