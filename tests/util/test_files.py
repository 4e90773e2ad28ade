"""The one output writer (`atomic_write`, `append_text`): a device node, a FIFO or a folder is
never written; a full disk or a permission problem is one error naming the path, and no
partial file is left."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from zomboss.util import OutputError, append_text, atomic_write

needs_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="creating a device node needs root"
)


def device(tmp_path: Path) -> Path:
    """A private character device (1, 7 is /dev/full), in the test's own folder."""
    node = tmp_path / "full"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    return node


@needs_root
def test_a_device_node_is_refused_and_left_a_device(tmp_path):
    node = device(tmp_path)
    link = tmp_path / "link.lp"
    link.symlink_to(node)
    for target in (node, link):
        with pytest.raises(OutputError, match=rf"{target}: not a regular file .*refusing to write it"):
            atomic_write(target, b"data")
        with pytest.raises(OutputError, match="not a regular file"):
            append_text(target, "line\n")
    assert stat.S_ISCHR(node.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "link.lp"]


@needs_root
def test_kb_build_out_refuses_a_device_node(tmp_path):
    node = device(tmp_path)
    env = {**os.environ, "ZOMBOSS_CACHE": str(tmp_path / "cache")}
    p = subprocess.run(
        [sys.executable, "-m", "zomboss", "kb", "build", "vta", "--out", str(node)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 2, p.stderr
    assert f"zomboss: {node}: not a regular file" in p.stderr and "internal error" not in p.stderr
    assert stat.S_ISCHR(node.lstat().st_mode)


def test_a_fifo_and_a_folder_are_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="not a regular file"):
        atomic_write(fifo, "x")
    with pytest.raises(OutputError, match="is a folder"):
        atomic_write(tmp_path, "x")


def test_a_symlink_to_a_file_writes_the_file_and_keeps_the_link(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    atomic_write(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_new_files_get_the_umask_mode_and_replaced_ones_keep_theirs(tmp_path):
    new = atomic_write(tmp_path / "new.md", "x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~umask
    old = tmp_path / "old.md"
    old.write_text("a")
    old.chmod(0o640)
    atomic_write(old, "b")
    assert stat.S_IMODE(old.stat().st_mode) == 0o640 and old.read_text() == "b"
    assert stat.S_IMODE(atomic_write(tmp_path / "c.json", "x", private=True).stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("code", "said"),
    [(errno.ENOSPC, "the disk is full"), (errno.EACCES, "permission denied"), (errno.EIO, "Input/output error")],
)
def test_a_failed_write_is_one_error_and_leaves_no_file(tmp_path, monkeypatch, code, said):
    old = tmp_path / "kept.txt"
    old.write_text("before")

    def fail(fd: int) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", fail)
    for target in (tmp_path / "new.txt", old):
        with pytest.raises(OutputError, match=rf"^{target}: cannot write: .*{said}.*; nothing was written$"):
            atomic_write(target, b"x" * 100_000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"] and old.read_text() == "before"


def test_a_failed_append_leaves_no_partial_line(tmp_path, monkeypatch):
    log = tmp_path / "calls.jsonl"
    atomic_write(log, "header\n")
    append_text(log, "one\n")
    real = os.write

    def short_then_full(fd: int, data: bytes) -> int:
        if len(data) > 3:
            return real(fd, bytes(data[:3]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", short_then_full)
    with pytest.raises(OutputError, match=rf"{log}: cannot write: the disk is full"):
        append_text(log, "two, a long line\n")
    assert log.read_text() == "header\none\n"
