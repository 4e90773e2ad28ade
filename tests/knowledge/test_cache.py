"""The KB cache holds data only: planted or modified entries are never executed or trusted, a cached KB
equals a built one, and an unusable cache folder falls back to memory."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

from tests.toydoc import TOY, TOY_TEXT, write_doc
from zomboss.app import main
from zomboss.knowledge import cache_dir, forget_loaded, load_kb

# ---- 1. code execution from the cache ---------------------------------------------------------


class _Marker:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def test_planted_pickle_in_the_cache_is_never_executed(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("ZOMBOSS_CACHE", str(cache))
    doc = write_doc(tmp_path, TOY_TEXT)
    load_kb(doc)
    (entry,) = cache_dir().glob("*.json")
    marker = tmp_path / "executed"
    planted = pickle.dumps(_Marker(str(marker)))
    entry.write_bytes(planted)  # in place of the entry
    entry.with_suffix(".pickle").write_bytes(planted)  # and where the old cache kept it
    (cache / "archdoc-lalr-0000000000000000.cache").write_bytes(planted)  # lark's old cache file
    code = "import sys; from zomboss.knowledge import load_kb; kb = load_kb(sys.argv[1]); print(kb.from_cache, kb.params['dim'])"
    out = subprocess.run([sys.executable, "-c", code, str(doc)], env={**os.environ}, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "4"]  # refused and rebuilt
    assert not marker.exists()


def test_modified_cache_entries_are_refused(tmp_path, monkeypatch):
    """A well-formed entry (checksum recomputed) whose program would run a script, or whose
    expressions name an unknown function, is data that is refused: the KB is rebuilt."""
    import hashlib

    monkeypatch.setenv("ZOMBOSS_CACHE", str(tmp_path / "cache"))
    doc = write_doc(tmp_path, TOY_TEXT)
    good = load_kb(doc)
    (entry,) = cache_dir().glob("*.json")
    head, _, body = entry.read_bytes().partition(b"\n")
    for evil in (
        body.replace(b"#defined wide/2.", b"#script (python) import os #end."),
        body.replace(b"#defined wide/2.", b'#include \\"/etc/passwd\\".'),
        body.replace(b'["Call","cdiv"', b'["Call","__import__"', 1),
        body.replace(b'"dim":4', b'"dim":"4"', 1),
    ):
        assert evil != body
        header = json.loads(head)
        header["sha256"] = hashlib.sha256(evil).hexdigest()
        entry.write_bytes(json.dumps(header).encode() + b"\n" + evil)
        forget_loaded()
        kb = load_kb(doc)
        assert not kb.from_cache and kb.asp == good.asp
    assert load_kb(doc).from_cache  # the rebuilt entry is valid


def test_cached_kb_equals_the_built_one(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOMBOSS_CACHE", str(tmp_path / "cache"))
    doc = write_doc(tmp_path, TOY_TEXT)
    built = load_kb(doc)
    cached = load_kb(doc)
    assert cached.from_cache
    for name in ("params", "memories", "regfiles", "layouts", "states", "applies", "asp", "counts", "rules", "instrs"):
        assert getattr(cached, name) == getattr(built, name), name
    assert cached.doc == built.doc


# ---- 8. an unusable cache folder falls back to memory ------------------------------------------


def test_unwritable_cache_builds_in_memory_with_one_warning(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("ZOMBOSS_CACHE", str(blocker / "cache"))
    from zomboss.util import files as cache

    cache._WARNED.clear()
    assert main(["kb", "query", str(TOY), "param(dim,V)"]) == 0
    assert main(["kb", "query", str(TOY), "param(dim,V)"]) == 0
    out = capsys.readouterr()
    assert out.out.split() == ["param(dim,4)", "param(dim,4)"]
    assert out.err.count("warning: cannot write the KB cache") == 1
