"""Where Zomboss keeps derived artifacts, how it writes them (atomically), and the data-only
format they are stored in.

Nothing in the cache folder is ever executed or unpickled: cached records are JSON decoded
against the declared types of an explicit set of dataclasses (`RecordCodec`), so a planted or
modified file can at worst be refused (and rebuilt) — it cannot run code. When the folder
cannot be written, callers fall back to building in memory with one warning (`warn_once`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import stat
import sys
import tempfile
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import platformdirs

from zomboss.errors import ZombossError

APP = "zomboss"


def cache_root() -> Path:
    """`$ZOMBOSS_CACHE`, else the user cache folder of the platform (`~/.cache/zomboss` on
    Linux, `~/Library/Caches/zomboss` on macOS, `%LOCALAPPDATA%\\zomboss\\Cache` on Windows)."""
    env = os.environ.get("ZOMBOSS_CACHE")
    return Path(env) if env else platformdirs.user_cache_path(APP, appauthor=False)


def results_dir() -> Path:
    """Where `solve` and `bench` keep their store and reports: `$ZOMBOSS_RESULTS`, else the
    `results/` folder of the source checkout Zomboss runs from (where `make run` and the
    README's walk-through find the report), else the user data folder of the platform
    (`~/.local/share/zomboss` on Linux)."""
    env = os.environ.get("ZOMBOSS_RESULTS")
    if env:
        return Path(env)
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").exists() and (root / "targets").is_dir():
        return root / "results"
    return platformdirs.user_data_path(APP, appauthor=False)


class OutputError(ZombossError):
    """A file a command was told to write that it cannot or must not write (the message names
    the path; nothing was written)."""


def check_output(path: Path, example: str = "out") -> Path:
    """The file an output path names, refused unless it is a regular file or a new path: a
    folder, a device node, a FIFO or a socket is never written (as root, renaming over
    /dev/null would replace the device). A symlink is followed: the file it names is written,
    the link stays."""
    path = Path(path)
    if not path.name or str(path).endswith(("/", "\\")) or path.is_dir():
        raise OutputError(f"{path}: is a folder; give the file to write (e.g. {path / example})")
    try:
        st = path.stat()
    except FileNotFoundError:
        if path.is_symlink():  # a dangling link: write where it points
            return Path(os.path.realpath(path))
        return path
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{path}: not a regular file (a device, FIFO or socket); refusing to write it")
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def write_error(path: Path, e: OSError) -> OutputError:
    """The one message of a write that failed: a full disk and a permission problem say so."""
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        why = "the disk is full (no space left on device)"
    elif e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        why = f"permission denied ({e.strerror})"
    else:
        why = e.strerror or str(e)
    return OutputError(f"{path}: cannot write: {why}; nothing was written")


def atomic_write(path: Path, data: bytes | str, *, private: bool = False) -> Path:
    """The one way Zomboss writes a file (outputs, reports, recordings, cache entries): the
    path is checked (`check_output`), the data goes to a temporary file in the same folder,
    is flushed to disk and renamed over the target, so a reader (or a killed writer) never
    sees a half-written file and a failure (a full disk, no permission) leaves the old file or
    none, with one OutputError naming the path. The file gets the mode `open` would give
    (an existing file keeps its own; `private`: 0600, for cache entries)."""
    target = check_output(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name + ".", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), 0o600 if private else _mode_of(target))
        check_output(target)  # still not a special file (it may have been replaced meanwhile)
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        raise write_error(Path(path), e) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return Path(path)


def append_text(path: Path, text: str) -> None:
    """Append to a file written by `atomic_write` (a recording, one line per call): refused
    unless it is a regular file; a failed write is undone (the file is cut back to its old
    length), so no partial line is left, and reported like `atomic_write`."""
    target = check_output(path)
    raw = text.encode("utf-8")
    try:
        # O_NONBLOCK: a FIFO put in its place since the check fails at once instead of blocking
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(target, flags, 0o666)
    except OSError as e:
        raise write_error(Path(path), e) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(f"{path}: not a regular file (a device, FIFO or socket); refusing to write it")
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, st.st_size)
            raise write_error(Path(path), e) from None
    finally:
        os.close(fd)


def _mode_of(target: Path) -> int:
    """An existing file's mode, else the one `open` gives a new file under the umask."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read without changing it where the system says it (Linux), since
    setting it to read it races with other threads creating files."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


_WARNED: set[str] = set()


def warn_once(key: str, message: str) -> None:
    """Print `zomboss: warning: message` on stderr, once per process and key."""
    if key in _WARNED:
        return
    _WARNED.add(key)
    print(f"zomboss: warning: {message}", file=sys.stderr)


# ---------------------------------------------------------------------------------------
# A data-only codec for typed records
# ---------------------------------------------------------------------------------------


class RecordError(ValueError):
    """Stored data that does not have the declared shape (the entry is refused)."""


Decoder = Callable[[Any], Any]


class RecordCodec:
    """JSON-able form of frozen dataclasses, lists, tuples, str-keyed dicts, ints, strings,
    booleans and None. A dataclass instance is `[ClassName, field, ...]`; decoding is driven
    by the declared field types, accepts only the registered classes, and runs each class's
    validator (e.g. an operator must be a known one), so decoded records are exactly as
    well-formed as built ones.

    Why hand-written rather than a validation library (pydantic, msgspec, cattrs; issue 28):
    the records are the KB's own frozen dataclasses, including the expression trees whose
    shared nodes the cache stores once (`knowledge.cache`), with per-class validators and
    unions that have their own decoders; a library would need a mirror model per class or
    plugins for exactly those parts, and would become the one hard dependency of the core
    beyond the solvers (pydantic came only with the now optional openai client). This piece is
    small, data-only by construction (it can build only the registered classes), and fuzzed
    (tests/fuzz, tests/knowledge/test_cache.py)."""

    def __init__(
        self,
        classes: Iterable[type],
        validators: dict[type, Callable[[Any], str | None]] | None = None,
        aliases: dict[str, Any] | None = None,
        unions: dict[frozenset[type], Decoder] | None = None,
        encoders: dict[type, Callable[[Any], Any]] | None = None,
    ) -> None:
        self._classes = {c.__name__: c for c in classes}
        self._validators = validators or {}
        self._aliases = aliases or {}  # names of forward references (e.g. "Expr") -> types
        self._unions = unions or {}  # a union of these classes -> its own decoder
        self._encoders = encoders or {}  # ... and how their members are stored
        self._decoders: dict[Any, Decoder] = {}
        self._fields: dict[type, list[tuple[str, Any]]] = {}

    # -- encoding ----------------------------------------------------------------------------
    def encode(self, obj: Any) -> Any:
        if obj is None or isinstance(obj, bool | int | str):
            return obj
        hook = self._encoders.get(type(obj))
        if hook is not None:
            return hook(obj)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            cls = type(obj)
            if self._classes.get(cls.__name__) is not cls:
                raise TypeError(f"cannot store a {cls.__name__}")
            return [cls.__name__, *(self.encode(getattr(obj, f.name)) for f in dataclasses.fields(obj))]
        if isinstance(obj, list | tuple):
            return [self.encode(x) for x in obj]
        if isinstance(obj, dict):
            if not all(isinstance(k, str) for k in obj):
                raise TypeError("cannot store a dict with non-string keys")
            return {k: self.encode(v) for k, v in obj.items()}
        raise TypeError(f"cannot store {type(obj).__name__}")

    # -- decoding ------------------------------------------------------------------------------
    def decode(self, data: Any, tp: Any) -> Any:
        return self.decoder(tp)(data)

    def decoder(self, tp: Any) -> Decoder:
        if tp in self._decoders:
            return self._decoders[tp]
        cell: list[Decoder] = []
        self._decoders[tp] = lambda v: cell[0](v)  # what recursive references see meanwhile
        dec = self._make(tp)
        cell.append(dec)
        self._decoders[tp] = dec
        return dec

    def _resolve(self, tp: Any) -> Any:
        if isinstance(tp, str):
            tp = typing.ForwardRef(tp)
        if isinstance(tp, typing.ForwardRef):
            name = tp.__forward_arg__
            if name in self._aliases:
                return self._resolve(self._aliases[name])
            if name in self._classes:
                return self._classes[name]
            raise TypeError(f"unknown type {name!r}")
        return tp

    def _class_fields(self, cls: type) -> list[tuple[str, Any]]:
        if cls not in self._fields:
            hints = typing.get_type_hints(
                cls, globalns={**self._classes, **self._aliases, **vars(sys.modules[cls.__module__])}
            )
            self._fields[cls] = [(f.name, hints[f.name]) for f in dataclasses.fields(cls)]
        return self._fields[cls]

    def _make(self, tp: Any) -> Decoder:
        tp = self._resolve(tp)
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if tp is int:
            return _check(lambda v: type(v) is int, "an integer")
        if tp is str:
            return _check(lambda v: type(v) is str, "a string")
        if tp is bool:
            return _check(lambda v: type(v) is bool, "a boolean")
        if tp is type(None):
            return _check(lambda v: v is None, "null")
        if origin in (typing.Union, types.UnionType):
            members = [self._resolve(a) for a in args]
            plain = frozenset(m for m in members if m is not type(None))
            if plain in self._unions:
                fast = self._unions[plain]
                if len(plain) == len(members):
                    return fast
                return lambda v: None if v is None else fast(v)
            classes = {m.__name__: m for m in members if isinstance(m, type) and dataclasses.is_dataclass(m)}
            rest = [self.decoder(m) for m in members if not dataclasses.is_dataclass(m)]
            by_tag = {name: self.decoder(cls) for name, cls in classes.items()}

            def union(v: Any) -> Any:
                if type(v) is list and v and type(v[0]) is str and v[0] in by_tag:
                    return by_tag[v[0]](v)
                for dec in rest:
                    try:
                        return dec(v)
                    except RecordError:
                        continue
                raise RecordError(f"unexpected {_what(v)}")

            return union
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                item = self.decoder(args[0])
                return lambda v: tuple(item(x) for x in _list(v))
            decs = [self.decoder(a) for a in args]

            def fixed(v: Any) -> Any:
                xs = _list(v)
                if len(xs) != len(decs):
                    raise RecordError(f"expected {len(decs)} items, got {len(xs)}")
                return tuple(d(x) for d, x in zip(decs, xs, strict=True))

            return fixed
        if origin is list:
            item = self.decoder(args[0])
            return lambda v: [item(x) for x in _list(v)]
        if origin is dict:
            if args[0] is not str:
                raise TypeError("only str-keyed dicts can be stored")
            val = self.decoder(args[1])

            def mapping(v: Any) -> Any:
                if type(v) is not dict:
                    raise RecordError(f"expected an object, got {_what(v)}")
                return {k: val(x) for k, x in v.items()}

            return mapping
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            cls = tp
            name = cls.__name__
            if self._classes.get(name) is not cls:
                raise TypeError(f"{name} is not a stored record class")
            fields = self._class_fields(cls)
            decs = [self.decoder(t) for _, t in fields]
            validate = self._validators.get(cls)

            n = len(decs) + 1
            names = [f for f, _ in fields]
            # a plain dataclass (no __post_init__, no __slots__) can be filled without __init__,
            # which for frozen ones is a setattr per field: the hot path of a cached load
            direct = "__slots__" not in vars(cls) and not hasattr(cls, "__post_init__")
            new = object.__new__

            def record(v: Any) -> Any:
                if type(v) is not list or len(v) != n or v[0] != name:
                    raise RecordError(f"expected a {name} record, got {_what(v)}")
                if direct:
                    obj = new(cls)
                    obj.__dict__.update(zip(names, [d(x) for d, x in zip(decs, v[1:])]))  # noqa: B905 - lengths checked
                else:
                    obj = cls(*[d(x) for d, x in zip(decs, v[1:])])  # noqa: B905 - lengths checked
                if validate is not None:
                    problem = validate(obj)
                    if problem:
                        raise RecordError(f"{name}: {problem}")
                return obj

            return record
        raise TypeError(f"cannot decode {tp!r}")


def _check(ok: Callable[[Any], bool], what: str) -> Decoder:
    def dec(v: Any) -> Any:
        if not ok(v):
            raise RecordError(f"expected {what}, got {_what(v)}")
        return v

    return dec


def _list(v: Any) -> list:
    if type(v) is not list:
        raise RecordError(f"expected a list, got {_what(v)}")
    return v


def _what(v: Any) -> str:
    return type(v).__name__ if not isinstance(v, list) or not v else f"list starting {str(v[0])[:20]!r}"
