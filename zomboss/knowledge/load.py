"""`load_kb`, the entry point for everything downstream (the CLI's `kb` commands, the
simulators' rule checks, the search's mapping constraints): parse, validate and compile a doc,
or read it from the cache.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from zomboss.doc import DocError
from zomboss.doc import model as dm
from zomboss.errors import ZombossError
from zomboss.knowledge import cache
from zomboss.knowledge.asp import kb_facts
from zomboss.knowledge.compile import compile_doc
from zomboss.knowledge.records import KB
from zomboss.util import OutputError, atomic_write, read_text, warn_once

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
        text = read_text(path, "an ISA doc", dm.MAX_DOC_BYTES)
    except ZombossError as e:
        raise DocError(str(e)) from None
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
    from zomboss.doc.parse import parse_doc  # (lark loads only here: a cached KB needs no parser)

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
            atomic_write(cfile, cache.kb_to_json(kb), private=True)
        except OutputError as e:
            _IN_MEMORY[str(cfile)] = kb
            warn_once("cache-write", f"cannot write the KB cache ({e}); building in memory")
    return kb
