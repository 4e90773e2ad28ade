"""The one input reader (`read_bytes`, `read_text`): bounded by the bytes actually read, so a
device, a FIFO or a symlink to one is refused at the limit, not read until memory runs out."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

import pytest

from zomboss.doc import DocError
from zomboss.errors import ZombossError
from zomboss.knowledge import load_kb
from zomboss.util import read_bytes, read_text


@pytest.mark.parametrize("dev", ["/dev/zero", "/dev/urandom"])
def test_an_endless_device_is_refused_at_the_limit(tmp_path, dev):
    if not Path(dev).exists():
        pytest.skip(f"no {dev}")
    link = tmp_path / "kernel.asm"
    link.symlink_to(dev)
    for path in (Path(dev), link):
        with pytest.raises(ZombossError, match=rf"^{path}: larger than the 1,000 bytes a program may have"):
            read_bytes(path, "a program", limit=1000)


def test_a_doc_symlinked_to_dev_zero_is_refused_quickly(tmp_path):
    doc = tmp_path / "machine.md"
    doc.symlink_to("/dev/zero")
    t0 = time.perf_counter()
    with pytest.raises(DocError, match=rf"{doc}: larger than the 8 MB an ISA doc may have"):
        load_kb(doc, use_cache=False)
    assert time.perf_counter() - t0 < 5


def test_a_fifo_is_read_up_to_the_limit(tmp_path):
    fifo = tmp_path / "mapping.json"
    os.mkfifo(fifo)

    writer = os.open(fifo, os.O_RDWR)  # a writer attached before the read, like `<(cmd)`

    def feed() -> None:
        with contextlib.suppress(OSError):  # the reader stops at its limit and the fd closes under us
            for _ in range(100):
                os.write(writer, b"{" * 100)

    threading.Thread(target=feed, daemon=True).start()
    try:
        with pytest.raises(ZombossError, match="larger than the 5,000 bytes"):
            read_text(fifo, "a mapping", limit=5000)
    finally:
        os.close(writer)


def test_small_inputs_and_their_errors(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("héllo")
    assert read_text(f) == "héllo" and read_bytes(f, limit=6) == "héllo".encode()
    with pytest.raises(ZombossError, match="larger than the 5 bytes"):
        read_bytes(f, limit=5)
    with pytest.raises(ZombossError, match="is a folder"):
        read_text(tmp_path)
    with pytest.raises(ZombossError, match="cannot read: No such file"):
        read_text(tmp_path / "missing")
    (tmp_path / "b.bin").write_bytes(b"\xff\xfe")
    with pytest.raises(ZombossError, match="not UTF-8"):
        read_text(tmp_path / "b.bin")


def test_a_fifo_nobody_writes_reads_as_empty_instead_of_hanging(tmp_path):
    fifo = tmp_path / "p.asm"
    os.mkfifo(fifo)
    t0 = time.perf_counter()
    assert read_text(fifo) == ""
    assert time.perf_counter() - t0 < 5
