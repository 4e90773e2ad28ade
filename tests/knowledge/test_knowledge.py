"""Building the KB: parameters, overrides, validation errors, the content-hash cache."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zomboss.doc import DocError
from zomboss.knowledge import cache_dir, load_kb

TOY = Path(__file__).resolve().parents[1] / "data" / "toy.md"


def _doc(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "m.md"
    p.write_text(text)
    return p


def test_params_and_derived_values():
    kb = load_kb(TOY)
    assert kb.params == {"dim": 4, "sp_kib": 1, "sp_rows": 256, "max_blocks": 2}
    assert kb.memories["spad"].rows == 256 and kb.memories["spad"].width == 4
    assert kb.memories["dram"].external and kb.memories["dram"].rows is None
    assert kb.states["ld"] == (2, {"stride": 0, "block_stride": 4})


def test_override_propagates_to_derived_facts():
    kb = load_kb(TOY, {"dim": 8})
    assert kb.params["sp_rows"] == 128
    assert "capacity(spad,128)." in kb.asp
    assert "param(dim,8)." in kb.asp


def test_unknown_override_is_named():
    with pytest.raises(DocError, match="no parameter 'bogus'"):
        load_kb(TOY, {"bogus": 1})


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("writes spad[local.row", "writes spud[local.row"), "unknown memory 'spud'"),
        (("cols > dim -> cfg.block_stride", "cols > dim -> cfg.block_strid"), "unknown name 'cfg.block_strid'"),
        (("param sp_rows = sp_kib", "param sp_rows = sp_kb"), "unknown parameter 'sp_kb'"),
        (("rule load.fits on load", "rule load.fits on lod"), "matches no instruction"),
        (("uses ld[0] as cfg", "uses lx[0] as cfg"), "unknown state 'lx'"),
        (("needs fence", "needs fenc"), "fence 'fenc' is not an instruction"),
    ],
)
def test_inconsistent_docs_name_the_culprit(tmp_path, edit, message):
    text = TOY.read_text()
    assert edit[0] in text
    with pytest.raises(DocError, match=message) as e:
        load_kb(_doc(tmp_path, text.replace(*edit, 1)), use_cache=False)
    assert str(e.value).startswith(str(tmp_path / "m.md") + ":")


def test_contradictory_invariant_is_rejected_with_values(tmp_path):
    with pytest.raises(
        DocError, match=r"rule cfg.sane .* fails for the parameters with --param dim=512: dim=512, sp_rows=2"
    ):
        load_kb(_doc(tmp_path, TOY.read_text()), {"dim": 512}, use_cache=False)


def test_failed_build_caches_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOMBOSS_CACHE", str(tmp_path / "cache"))
    bad = _doc(tmp_path, TOY.read_text().replace("writes spad", "writes spud"))
    with pytest.raises(DocError):
        load_kb(bad)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.json"))


def test_cache_hit_and_invalidation(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOMBOSS_CACHE", str(tmp_path / "cache"))
    doc = _doc(tmp_path, TOY.read_text())
    a = load_kb(doc)
    assert not a.from_cache
    b = load_kb(doc)
    assert b.from_cache and b.asp == a.asp
    doc.write_text(TOY.read_text().replace("param max_blocks = 2", "param max_blocks = 3"))
    c = load_kb(doc)
    assert not c.from_cache and c.params["max_blocks"] == 3


def test_corrupt_cache_entry_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOMBOSS_CACHE", str(tmp_path / "cache"))
    doc = _doc(tmp_path, TOY.read_text())
    load_kb(doc)
    (entry,) = cache_dir().glob("*.json")
    entry.write_bytes(b"\x80garbage")
    kb = load_kb(doc)
    assert not kb.from_cache and kb.params["dim"] == 4
    assert load_kb(doc).from_cache


_KILL_SCRIPT = """
import sys, time
import zomboss.knowledge.cache as cache
from zomboss.knowledge import load_kb
real = cache.kb_to_json
def slow(kb):
    data = real(kb)
    sys.stdout.write("writing\\n"); sys.stdout.flush()
    time.sleep(30)
    return data
cache.kb_to_json = slow
load_kb(sys.argv[1])
"""


def test_killed_build_leaves_cache_valid(tmp_path):
    env = {**os.environ, "ZOMBOSS_CACHE": str(tmp_path / "cache")}
    doc = _doc(tmp_path, TOY.read_text())
    proc = subprocess.Popen([sys.executable, "-c", _KILL_SCRIPT, str(doc)], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "writing"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    cache = tmp_path / "cache" / "kb"
    assert not list(cache.glob("*.json")) if cache.exists() else True
    # a fresh process builds and caches normally
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from zomboss.knowledge import load_kb; print(load_kb(sys.argv[1]).params['dim'])",
            str(doc),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "4"
    assert len(list(cache.glob("*.json"))) == 1


def test_killed_mid_write_leaves_no_partial_file(tmp_path):
    """Kill while the temporary file is half written: the cache folder holds no entry that a
    reader could mistake for a complete artifact."""
    env = {**os.environ, "ZOMBOSS_CACHE": str(tmp_path / "cache")}
    doc = _doc(tmp_path, TOY.read_text())
    script = """
import os, sys, time
import zomboss.util.files as c
from zomboss.knowledge import load_kb
real_fdopen = os.fdopen
class Slow:
    def __init__(self, f): self.f = f
    def __enter__(self): return self
    def __exit__(self, *a): return self.f.__exit__(*a)
    def write(self, data):
        self.f.write(data[: len(data) // 2]); self.f.flush()
        sys.stdout.write("half\\n"); sys.stdout.flush(); time.sleep(30)
    def flush(self): self.f.flush()
    def fileno(self): return self.f.fileno()
c.os.fdopen = lambda fd, mode: Slow(real_fdopen(fd, mode))
load_kb(sys.argv[1])
"""
    proc = subprocess.Popen([sys.executable, "-c", script, str(doc)], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "half"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    cache = tmp_path / "cache" / "kb"
    assert list(cache.glob("*.json")) == []
    t0 = time.time()
    kb = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from zomboss.knowledge import load_kb; kb = load_kb(sys.argv[1]); print(kb.from_cache)",
            str(doc),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert kb.stdout.strip() == "False" and time.time() - t0 < 60
