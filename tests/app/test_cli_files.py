"""The files commands write and read, end to end: a full disk is one line naming the file and
leaves nothing behind (export -o, kb build --out, --llm-record), and endless special files as
inputs are refused at their limit."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from zomboss.app.cli import main


@pytest.fixture
def full_disk(monkeypatch):
    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", fsync)


def _one_line(err: str, path: Path) -> None:
    assert err == f"zomboss: {path}: cannot write: the disk is full (no space left on device); nothing was written\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "gemmini", "mm256", "-o", "{out}"],
        ["kb", "build", "vta", "--out", "{out}"],
    ],
)
def test_a_full_disk_is_one_line_and_leaves_no_file(tmp_path, capsys, full_disk, argv):
    out = tmp_path / "k.c"
    assert main([a.format(out=out) for a in argv]) == 2
    err = capsys.readouterr().err.splitlines(keepends=True)[-1]
    assert "internal error" not in err
    assert err.startswith(f"zomboss: {tmp_path}") and "the disk is full" in err and "nothing was written" in err
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_for_the_llm_recording(tmp_path, capsys, full_disk):
    rec = tmp_path / "r.jsonl"
    code = main(
        ["solve", "gemmini", "mm256", "--guide", "llm", "--llm-base-url", "http://127.0.0.1:9/v1"]
        + ["--llm-record", str(rec), "--db", str(tmp_path / "s.db"), "--budget", "1"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "internal error" not in err
    _one_line(err.splitlines(keepends=True)[-1], rec)
    assert not rec.exists()


@pytest.mark.parametrize("args", [["simulate", "gemmini", "{dev}"], ["kb", "build", "{doc}"]])
def test_endless_devices_as_inputs_are_refused_at_the_limit(tmp_path, capsys, args):
    doc = tmp_path / "zero.md"
    doc.symlink_to("/dev/zero")
    assert main([a.format(dev="/dev/zero", doc=doc) for a in args]) == 2
    err = capsys.readouterr().err
    assert "larger than the" in err and err.count("\n") == 1
