"""The KB cache: an entry per doc, overrides and compiler sources (content hash), holding the
KB's records as JSON decoded against their declared types. Nothing in an entry is executed;
a loaded KB's ASP program must pass `unsafe_asp`.
"""

from __future__ import annotations

import hashlib
import json
import re
import typing
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from zomboss import expr as ex
from zomboss.doc import NAME, grammar_text
from zomboss.doc import model as dm
from zomboss.errors import ZombossError
from zomboss.knowledge import records
from zomboss.knowledge.asp import library_text
from zomboss.knowledge.records import KB, LayoutInfo, MemoryInfo, RegFileInfo
from zomboss.util import RecordCodec, RecordError, cache_root, read_bytes

CACHE_FORMAT = 3  # 2: JSON records (1 was a pickle, never read again); 3: effects carry scalar reads
# The compiler's sources: a change to any of them makes a new cache entry.
_SOURCE_PACKAGES = ("zomboss.doc", "zomboss.expr", "zomboss.knowledge")
_SOURCE_FILES = (("zomboss.util", "files.py"),)
MAX_CACHE_BYTES = 64 << 20  # a cache entry larger than this is not read


def cache_dir() -> Path:
    return cache_root() / "kb"


def digest(doc_text: str, overrides: Mapping[str, int], where: str) -> str:
    """Content hash of everything a KB depends on, plus the doc's location (diagnostics carry
    file:line, so two checkouts of the same doc keep their own entries)."""
    h = hashlib.sha256(where.encode())
    h.update(f"format={CACHE_FORMAT}\n".encode())
    for pkg in _SOURCE_PACKAGES:
        for entry in sorted(resources.files(pkg).iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".py"):
                h.update(entry.read_bytes())
    for pkg, name in _SOURCE_FILES:
        h.update(resources.files(pkg).joinpath(name).read_bytes())
    h.update(grammar_text().encode())
    h.update(library_text().encode())
    h.update(doc_text.encode())
    h.update(repr(sorted((k.lower(), int(v)) for k, v in overrides.items())).encode())
    return h.hexdigest()


# ---- the stored form: JSON of the typed records, decoded against their declared types -----

_NAME = re.compile(NAME)


_BIN_OPS = frozenset(ex.CMP_OPS + ex.BOOL_OPS + ex.ARITH_OPS)


class _ExprTable:
    """The expressions of a stored KB, each distinct one once (children before parents), and
    references to them by index: inlined lets repeat sub-expressions many times over."""

    def __init__(self) -> None:
        self.rows: list[list[Any]] = []
        self._index: dict[ex.Expr, int] = {}
        self.built: list[ex.Expr] = []

    def put(self, e: ex.Expr) -> int:
        i = self._index.get(e)
        if i is not None:
            return i
        if isinstance(e, ex.Int):
            row: list[Any] = ["Int", e.value]
        elif isinstance(e, ex.Ref):
            row = ["Ref", list(e.parts)]
        elif isinstance(e, ex.Sym):
            row = ["Sym", e.name]
        elif isinstance(e, ex.Bin):
            row = ["Bin", e.op, self.put(e.left), self.put(e.right)]
        elif isinstance(e, ex.Un):
            row = ["Un", e.op, self.put(e.arg)]
        elif isinstance(e, ex.Call):
            row = ["Call", e.fn, [self.put(a) for a in e.args]]
        elif isinstance(e, ex.Cond):
            row = ["Cond", self.put(e.cond), self.put(e.then), self.put(e.other)]
        else:
            row = ["InSet", self.put(e.arg), [self.put(a) for a in e.items]]
        self._index[e] = len(self.rows)
        self.rows.append(row)
        return len(self.rows) - 1

    def load(self, rows: Any) -> None:
        """Build the stored expressions exactly as the parser could have built them (names
        and operators flow into generated Python and ASP); a child must precede its parent."""
        if type(rows) is not list:
            raise RecordError("expected the expression table")
        built = self.built = []
        for v in rows:
            built.append(_expr_row(v, built))

    def get(self, i: Any) -> ex.Expr:
        if type(i) is not int or not 0 <= i < len(self.built):
            raise RecordError(f"not an expression reference: {str(i)[:20]}")
        return self.built[i]


def _expr_row(v: Any, built: list[ex.Expr]) -> ex.Expr:
    n = len(built)

    def ref(i: Any) -> ex.Expr:
        if type(i) is not int or not 0 <= i < n:
            raise RecordError(f"bad expression reference {str(i)[:20]}")
        return built[i]

    if type(v) is list and v:
        tag, k = v[0], len(v)
        if tag == "Ref" and k == 2 and type(v[1]) is list and v[1]:
            if all(type(p) is str and _NAME.fullmatch(p) for p in v[1]):
                return ex.Ref(tuple(v[1]))
        elif tag == "Int" and k == 2 and type(v[1]) is int:
            if abs(v[1]).bit_length() <= ex.MAX_BITS:
                return ex.Int(v[1])
        elif tag == "Bin" and k == 4 and v[1] in _BIN_OPS:
            return ex.Bin(v[1], ref(v[2]), ref(v[3]))
        elif tag == "Un" and k == 3 and v[1] in ex.UN_OPS:
            return ex.Un(v[1], ref(v[2]))
        elif tag == "Call" and k == 3 and type(v[2]) is list and ex.FUNCS.get(v[1]) == len(v[2]):
            return ex.Call(v[1], tuple(ref(a) for a in v[2]))
        elif tag == "Cond" and k == 4:
            return ex.Cond(ref(v[1]), ref(v[2]), ref(v[3]))
        elif tag == "InSet" and k == 3 and type(v[2]) is list and v[2]:
            return ex.InSet(ref(v[1]), tuple(ref(a) for a in v[2]))
        elif tag == "Sym" and k == 2 and type(v[1]) is str and _NAME.fullmatch(v[1]):
            return ex.Sym(v[1])
    raise RecordError(f"not an expression: {str(v)[:60]}")


_TABLES: list[_ExprTable] = []  # the table of the KB being stored or loaded (innermost last)
_EXPR_CLASSES = (ex.Int, ex.Ref, ex.Sym, ex.Bin, ex.Un, ex.Call, ex.Cond, ex.InSet)
_CODEC = RecordCodec(
    (*dm.RECORDS, *_EXPR_CLASSES, MemoryInfo, LayoutInfo, RegFileInfo),
    aliases={"Expr": ex.Expr},
    unions={frozenset(_EXPR_CLASSES): lambda v: _TABLES[-1].get(v)},
    encoders=dict.fromkeys(_EXPR_CLASSES, lambda e: _TABLES[-1].put(e)),
)
# what a stored KB holds: everything but the fields derived from the doc on load
_STORED = ("target", "doc", "params", "memories", "regfiles", "layouts", "states", "applies", "asp", "counts")


def kb_to_json(kb: KB) -> bytes:
    n_range = len(kb.rules) - len(kb.doc.rules)
    table = _ExprTable()
    _TABLES.append(table)
    try:
        payload = {name: _CODEC.encode(getattr(kb, name)) for name in _STORED}
        payload["range_rules"] = _CODEC.encode(kb.rules[:n_range])
    finally:
        _TABLES.pop()
    payload["exprs"] = table.rows
    body = json.dumps(payload, separators=(",", ":")).encode()
    header = {"format": CACHE_FORMAT, "digest": kb.digest, "sha256": hashlib.sha256(body).hexdigest()}
    return json.dumps(header).encode() + b"\n" + body


def kb_from_json(data: bytes, digest: str) -> KB:
    """The KB of a cache entry; RecordError (or ValueError) for anything that is not exactly a
    stored KB of this digest. Nothing in the entry is executed."""
    head, sep, body = data.partition(b"\n")
    header = json.loads(head)
    if not sep or not isinstance(header, dict) or header.get("format") != CACHE_FORMAT:
        raise RecordError("not a KB cache entry of this version")
    if header.get("digest") != digest or header.get("sha256") != hashlib.sha256(body).hexdigest():
        raise RecordError("digest mismatch")
    payload = json.loads(body)
    if not isinstance(payload, dict) or set(payload) != {*_STORED, "range_rules", "exprs"}:
        raise RecordError("unexpected fields")
    table = _ExprTable()
    table.load(payload["exprs"])
    _TABLES.append(table)
    try:
        vals = {name: _CODEC.decode(payload[name], _KB_HINTS[name]) for name in _STORED}
        range_rules = _CODEC.decode(payload["range_rules"], list[dm.Rule])
    finally:
        _TABLES.pop()
    doc: dm.Doc = vals["doc"]
    problem = unsafe_asp(vals["asp"])
    if problem:
        raise RecordError(f"the stored ASP program contains {problem}")
    return KB(
        **vals,
        instrs={i.name: i for i in doc.instrs},
        rules=range_rules + list(doc.rules),
        digest=digest,
        from_cache=True,
    )


_SAFE_DIRECTIVES = frozenset({"defined", "show", "false", "true"})
_LINE_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|%[^\n]*|#[A-Za-z_]*|@|"')
_SPECIAL = re.compile(r"[#@]")


def unsafe_asp(text: str) -> str | None:
    """The first construct of an ASP text that could run code or read files (`#script`,
    `#include`, `@f(...)`, any directive other than #defined/#show/#false/#true), or None.
    The KB cache is data: a loaded KB's program must pass this.

    clingo strings and `%` comments end with their line, so only the lines holding a `#` or
    `@` are lexed; a block comment (`%*`, which this module never writes) is refused."""
    if "%*" in text:
        return "a block comment"
    done = -1
    for m in _SPECIAL.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        if start <= done:
            continue  # this line was lexed already
        end = text.find("\n", m.start())
        end = len(text) if end < 0 else end
        done = end
        for t in _LINE_TOKENS.finditer(text, start, end):
            tok = t.group(0)
            if tok[0] == "%" or (tok[0] == '"' and len(tok) > 1):
                continue
            if tok == '"':
                return "an unterminated string"
            if tok == "@" or tok[1:] not in _SAFE_DIRECTIVES:
                return repr(tok)
    return None


_KB_HINTS = typing.get_type_hints(KB, globalns={**vars(dm), **vars(records)})


def read_entry(cfile: Path, digest: str) -> KB | None:
    """A cached KB, or None (missing, unreadable, foreign or corrupt entries are rebuilt)."""
    try:
        if not cfile.is_file():
            return None
        data = read_bytes(cfile, "a KB cache entry", MAX_CACHE_BYTES)
    except ZombossError:
        return None
    try:
        return kb_from_json(data, digest)
    except (ValueError, TypeError, KeyError, RecursionError, ex.ExprError):  # RecordError is a ValueError
        return None
