"""The bench report's contents and files (zomboss/results/report.py): only the covered targets'
remarks, the version and commit, labelled plots as PNG and SVG, one file mode for all, a
folder per run with `latest`, and a report without plots when matplotlib is missing."""

from __future__ import annotations

import datetime
import os
import stat
import sys

import pytest

from zomboss.results import markdown, point_latest, rows_of, run_folder, write_report
from zomboss.results.report import PLOTS_SKIPPED, plots
from zomboss.util.version import commit, version


def _rows(target: str, ops: tuple[str, ...] = ("linear", "conv")) -> list[dict]:
    results = {
        (target, f"{op}_{i}"): {
            "verified": True,
            "cycles": 1000 - 100 * i,
            "default_cycles": 1000,
            "bound_cycles": 500,
        }
        for op in ops
        for i in range(2)
    }
    return rows_of(results, {k: k[1].split("_")[0] for k in results})


def test_a_one_target_report_has_only_that_targets_remarks():
    text = markdown(_rows("plena"), "r", {})
    assert "Gemmini" not in text and "gemmini" not in text
    text = markdown(_rows("gemmini"), "r", {})
    assert "Our Gemmini Candidate-0 is the vendor library" in text and "PLENA" not in text


def test_the_report_records_version_and_commit():
    text = markdown(_rows("plena"), "r", {"kind": "default"})
    assert f"| zomboss version | {version()} |" in text
    assert f"| commit | {commit() or 'unknown (not a git checkout)'} |" in text
    assert text.index("| zomboss version |") < text.index("| kind | default |")


def test_plots_are_labelled_and_written_as_png_and_svg(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    figs = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: figs.append(fig))
    paths = plots(_rows("plena") + _rows("gemmini"), tmp_path)
    assert sorted(p.name for p in paths) == ["bound.png", "bound.svg", "speedup.png", "speedup.svg"]
    assert all(p.stat().st_size > 0 for p in paths)
    speedup_fig, bound_fig = figs
    for fig in figs:
        for ax in fig.axes:
            assert ax.get_xlabel() == "suite instance" and ax.get_ylabel()
            assert [t.get_text() for t in ax.texts if t.get_text()], "bars carry their values"
    for ax in speedup_fig.axes:
        assert any(str(line.get_label()).startswith("geometric mean") for line in ax.lines)
    for fig in figs:
        close(fig)


def test_report_and_plots_share_one_mode(tmp_path):
    pytest.importorskip("matplotlib")
    umask = os.umask(0o022)
    try:
        written = write_report(_rows("plena"), tmp_path, "r", {})
    finally:
        os.umask(umask)
    modes = {p.name: p.stat().st_mode & 0o777 for p in written.files}
    assert set(modes) == {"report.md", "speedup.png", "speedup.svg", "bound.png", "bound.svg"}
    assert set(modes.values()) == {0o644}, modes


def test_without_matplotlib_the_report_is_written_and_says_so(tmp_path, monkeypatch, capsys):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    written = write_report(_rows("plena"), tmp_path, "r", {})
    assert [p.name for p in written.files] == ["report.md"] and written.note == PLOTS_SKIPPED
    assert "plots skipped: install zomboss[plot]" in capsys.readouterr().err
    assert "plots skipped: install zomboss[plot]" in written.path.read_text()
    assert not list(tmp_path.glob("*.png"))


def test_every_run_has_its_own_folder_and_latest_points_at_the_newest(tmp_path):
    when = datetime.datetime(2026, 12, 7, 1, 15, 0, tzinfo=datetime.UTC)
    a = run_folder(tmp_path, "solve:cost:32:0", "plena", True, when)
    b = run_folder(tmp_path, "solve:cost:32:0", "plena", True, when)  # the same second
    assert a.name == "20261207T011500Z_solve-cost-32-0_plena_subset" and b.name == a.name + "-2"
    latest = point_latest(a)
    assert latest.resolve() == a.resolve()
    point_latest(b)
    assert latest.resolve() == b.resolve() and os.readlink(latest) == b.name  # relative: the folder can move


def test_latest_never_replaces_a_fifo_or_a_device(tmp_path):
    from zomboss.util import OutputError

    a = run_folder(tmp_path, "default", "vta", False)
    os.mkfifo(tmp_path / "latest")
    with pytest.raises(OutputError, match="latest: not a regular file"):
        point_latest(a)
    assert stat.S_ISFIFO((tmp_path / "latest").lstat().st_mode)


def test_a_report_folder_that_is_a_file_is_one_error(tmp_path):
    from zomboss.util import OutputError

    (tmp_path / "r").write_text("x")
    with pytest.raises(OutputError, match=r"r: not a folder; give the folder to write the report"):
        write_report([], tmp_path / "r", "t", {})
