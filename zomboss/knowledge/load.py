"""`load_kb`, the entry point for everything downstream (the CLI's `kb` commands, the
simulators' rule checks, the search's mapping constraints): parse, validate and compile a doc,
or read it from the cache.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from zomboss.doc import DocError, parse_doc
from zomboss.doc import model as dm
from zomboss.knowledge import cache
from zomboss.knowledge.asp import kb_facts
from zomboss.knowledge.compile import compile_doc
from zomboss.knowledge.records import KB
from zomboss.util import atomic_write, warn_once

_LOADED: dict[str, KB] = {}  # in-process memo by cache file (content digest): a KB is immutable once built
_IN_MEMORY: dict[str, KB] = {}  # KBs built where the cache folder cannot be written


def forget_loaded() -> None:
    """Forget the KBs this process loaded, so that the next `load_kb` reads the cache again."""
    _LOADED.clear()


def load_kb(
    doc_path: str | os.PathLike[str], overrides: Mapping[str, int] | None = None, *, use_cache: bool = True
) -> KB:
    """Parse, validate and compile a doc (or load it from the cache). An unusable cache folder
    (read-only, not a folder, ...) means building in memory, with one warning."""
    path = Path(doc_path)
    try:
        if path.stat().st_size > dm.MAX_DOC_BYTES:
            raise DocError(f"{path}: larger than the {dm.MAX_DOC_BYTES >> 20} MB a doc may have")
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DocError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise DocError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    overrides = dict(overrides or {})
    digest = cache.digest(text, overrides, str(path.resolve()))
    cfile = cache.cache_dir() / f"{path.stem}-{digest[:24]}.json"
    if use_cache and str(cfile) in _IN_MEMORY:
        return _IN_MEMORY[str(cfile)]
    if use_cache and str(cfile) in _LOADED and cfile.exists():
        return _LOADED[str(cfile)]
    if use_cache:
        kb = cache.read_entry(cfile, digest)
        if kb is not None:
            _LOADED[str(cfile)] = kb
            return kb
    kb = compile_doc(parse_doc(text, str(path)), path.stem, overrides)
    kb.digest = digest
    if kb.counts.get("wide_facts"):
        shown = [f.asp(wide=True) for f in kb_facts(kb) if f.is_wide()][:2]
        warn_once(
            f"wide:{digest}",
            f"{path}: {kb.counts['wide_facts']} KB fact(s) hold integers beyond clingo's 32 bits, "
            f"written as strings: {' '.join(shown)}{' ...' if kb.counts['wide_facts'] > 2 else ''}",
        )
    if use_cache:
        try:
            atomic_write(cfile, cache.kb_to_json(kb))
        except OSError as e:
            _IN_MEMORY[str(cfile)] = kb
            warn_once(
                "cache-write", f"cannot write the KB cache in {cfile.parent} ({e.strerror or e}); building in memory"
            )
    return kb
