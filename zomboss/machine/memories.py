"""The machine's data as the generic simulator holds it: an array per on-chip memory, tensor
state or register file, a byte array per external memory (`Memories`), and the typed pieces of
them that effects read and write (`View`s: a doc's memories, tensors and declared views).

Storage apart from execution (`effects.py`): what a memory holds and where an element lies is
decided here, once per doc, and checked on every gather and scatter (an index outside its
memory is an `EffectError`, which the simulator reports as a violation at the instruction).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from zomboss import expr as ex
from zomboss.doc import model as dm
from zomboss.errors import ZombossError
from zomboss.knowledge import KB
from zomboss.machine import numformats as nf

DTYPES: dict[str, Any] = {
    "int8": np.int8,
    "uint8": np.uint8,
    "u8": np.uint8,
    "int16": np.int16,
    "int32": np.int32,
    "u32": np.uint32,
    "uint32": np.uint32,
    "int64": np.int64,
    "u64": np.uint64,
    "fp32": np.float32,
    **{n: f.storage for n, f in nf.FORMATS.items()},
}


class EffectError(ZombossError):
    """An effect that cannot be applied (an index outside its memory, an unknown op); the
    simulator reports it as a violation at the instruction, with the effect's doc line."""

    def __init__(self, message: str, loc: dm.Loc, values: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.loc = loc
        self.values = dict(values or {})


@dataclass(frozen=True)
class View:
    """A piece of `memory` (an on-chip memory or a tensor) seen as a rows x cols tensor of
    `dtype`: on chip, a row (or rows x cols consecutive values of one: the row split in
    width / (rows x cols) elements); for an external (byte addressed) memory, element i is
    the bytes [i*step, i*step + elem_bytes) (step: elem_bytes unless the view says)."""

    name: str
    memory: str
    rows: int
    cols: int
    dtype: Any
    external: bool
    count: int  # elements addressable (on chip; 0 for external: the array's size decides)
    step: int = 0  # external: bytes between consecutive elements (0: elem_bytes)
    fmt: str = ""  # a number format of `numformats.FORMATS` whose narrowing every write applies

    def narrow(self, vals: np.ndarray) -> np.ndarray:
        """Values as this view stores them: converted to its dtype, through its format's hook."""
        f = nf.FORMATS.get(self.fmt)
        if f is not None and f.narrow is not None:
            return f.narrow(vals)
        return vals.astype(self.dtype)

    def widen(self, raw: np.ndarray) -> np.ndarray:
        """Values of stored codes (a coded format: E4M3, E8M0); other views read as stored."""
        f = nf.FORMATS.get(self.fmt)
        return f.widen(raw) if f is not None and f.widen is not None else raw

    @property
    def read_only(self) -> bool:
        f = nf.FORMATS.get(self.fmt)
        return f is not None and f.widen is not None and f.narrow is None

    @property
    def values(self) -> Any:
        """The NumPy type of the values effects write through this view: float32 for a format
        whose writes narrow (`bf16_packed` stores uint16 patterns of float values), else `dtype`."""
        f = nf.FORMATS.get(self.fmt)
        return np.float32 if f is not None and f.narrow is not None else self.dtype

    @property
    def elem_bytes(self) -> int:
        return self.rows * self.cols * np.dtype(self.dtype).itemsize

    @property
    def stride(self) -> int:
        return self.step or self.elem_bytes


def views(kb: KB) -> dict[str, View]:
    """Every memory (as a 1 x width view of itself), tensor state and declared view."""

    def num(e: ex.Expr, what: str, d: dm.Decl) -> int:
        v = ex.evaluate(e, kb.params)
        if not isinstance(v, int) or v < 1:
            raise ZombossError(f"{d.loc}: {d.kind} {d.name}: {what} must be a positive integer")
        return v

    def dtype(name: str, where: dm.Loc) -> Any:
        if name not in DTYPES:
            raise ZombossError(f"{where}: element type {name!r} has no numeric hook (known: {', '.join(DTYPES)})")
        return DTYPES[name]

    out: dict[str, View] = {}
    for m in kb.memories.values():
        if not m.external and m.type in DTYPES:
            out[m.name] = View(m.name, m.name, 1, m.width or 1, DTYPES[m.type], False, m.rows or 0, 0, m.type)
    for rd in kb.doc.regfiles:  # a register file: `count` one-value rows
        r = kb.regfiles[rd.name]
        out[r.name] = View(r.name, r.name, 1, 1, dtype(r.type, rd.loc), False, r.count, 0, r.type)
    for d in kb.doc.decls:
        f = d.fields
        if d.kind == "tensor":
            t = _name(f.get("type", ex.Ref(("int32",))))
            out[d.name] = View(
                d.name, d.name, num(f["rows"], "rows", d), num(f["cols"], "cols", d), dtype(t, d.loc), False, 1, 0, t
            )
    for d in kb.doc.decls:
        f = d.fields
        if d.kind == "view":
            of = _name(f["of"])
            mem = kb.memories.get(of)
            base = out.get(of) if mem is None else None
            if mem is None and (base is None or base.name != base.memory or base.count != 1):
                raise ZombossError(f"{d.loc}: view {d.name}: 'of' must name a memory or a tensor")
            rows, cols = num(f["rows"], "rows", d), num(f["cols"], "cols", d)
            if mem is not None and mem.external:
                t = _name(f["type"]) if "type" in f else mem.type
                step = num(f["step"], "step", d) if "step" in f else 0
                out[d.name] = View(d.name, mem.name, rows, cols, dtype(t, d.loc), True, 0, step, t)
                continue
            width, n, dt = (mem.width or 1, mem.rows or 0, mem.type) if mem else (base.rows * base.cols, 1, "")  # type: ignore[union-attr]
            if mem is not None and "type" in f and (t := _name(f["type"])) != dt:
                out[d.name] = _retyped(d, mem, rows, cols, dtype(t, d.loc), t)
                continue
            if "type" in f and (t := _name(f["type"])) != dt and DTYPES.get(t) != base.dtype:  # type: ignore[union-attr]
                raise ZombossError(f"{d.loc}: view {d.name}: a view of a tensor keeps the type of {of}")
            if width % (rows * cols):
                raise ZombossError(f"{d.loc}: view {d.name}: rows x cols must divide the width of {of} ({width})")
            vt = DTYPES[mem.type] if mem is not None else base.dtype  # type: ignore[union-attr]
            vf = mem.type if mem is not None else base.fmt  # type: ignore[union-attr]
            out[d.name] = View(d.name, of, rows, cols, vt, False, n * (width // (rows * cols)), 0, vf)
    return out


def _retyped(d: dm.Decl, mem: Any, rows: int, cols: int, dt: Any, t: str) -> View:
    """A view of an on-chip memory's rows as elements of another type (an int32 result in a
    row of bytes, BF16 patterns in it): the row's bytes split into elements of rows x cols
    values of `t`. A format held as values (`bf16`: float32) has no bytes of its own to share."""
    if any(x in nf.FORMATS and not nf.FORMATS[x].coded for x in (mem.type, t)):
        raise ZombossError(
            f"{d.loc}: view {d.name}: {t} over {mem.type} memory {mem.name}: a view may change the type of a "
            "memory of plain numbers only, or of a format stored as its bits (bf16_packed, e4m3, e8m0), "
            "not of bf16 (float32 values)"
        )
    row_bytes = (mem.width or 1) * np.dtype(DTYPES[mem.type]).itemsize
    elem = rows * cols * np.dtype(dt).itemsize
    if row_bytes % elem:
        raise ZombossError(
            f"{d.loc}: view {d.name}: an element of {rows} x {cols} {t} ({elem} bytes) must divide a row of "
            f"{mem.name} ({row_bytes} bytes)"
        )
    return View(d.name, mem.name, rows, cols, dt, False, (mem.rows or 0) * (row_bytes // elem), 0, t)


def _name(e: ex.Expr) -> str:
    if isinstance(e, ex.Ref) and len(e.parts) == 1:
        return e.name
    if isinstance(e, ex.Sym):
        return e.name
    raise ZombossError(f"expected a name, got {ex.show(e)}")


# ---- memories -----------------------------------------------------------------------------------


class Memories:
    """The machine's data: an array per on-chip memory or tensor (rows x width), a byte
    array per external memory."""

    def __init__(
        self, kb: KB, external_bytes: Mapping[str, int] | None = None, only: Collection[str] | None = None
    ) -> None:
        """`only`: allocate just these on-chip memories (the registers of a timing-only run)."""
        self.kb = kb
        self.views = views(kb)
        self.arrays: dict[str, np.ndarray] = {}
        for v in self.views.values():
            if v.name == v.memory and not v.external and (only is None or v.name in only):
                self.arrays[v.name] = np.zeros((v.count, v.rows * v.cols), dtype=v.dtype)
        for m in kb.memories.values():
            if m.external and only is None:
                self.arrays[m.name] = np.zeros((external_bytes or {}).get(m.name, 0), dtype=np.uint8)

    def flat(self, v: View) -> np.ndarray:
        """An on-chip view's storage as one row per element (a view: writes go through; a view
        of another type reinterprets the memory's bytes)."""
        arr = self.arrays[v.memory]
        if arr.dtype != v.dtype:
            arr = arr.view(v.dtype)
        return arr.reshape(-1, v.rows * v.cols)

    def _check(self, v: View, idx: np.ndarray, a: dm.Assign | dm.Effect, what: str) -> None:
        size = len(self.arrays[v.memory])
        n = (size - v.elem_bytes) // v.stride + 1 if v.external and size >= v.elem_bytes else v.count
        n = 0 if v.external and size < v.elem_bytes else n
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = int(idx[(idx < 0) | (idx >= n)][0])
            raise EffectError(
                f"{what} {v.name}[{bad}] is outside {v.memory} ({n} elements of {v.rows}x{v.cols})",
                a.loc,
                {"index": bad, "elements": n},
            )

    def gather(self, v: View, idx: np.ndarray, a: dm.Assign | dm.Effect) -> np.ndarray:
        self._check(v, idx, a, "reads")
        if v.external:
            eb = v.elem_bytes
            raw = self.arrays[v.memory][(idx * v.stride)[:, None] + np.arange(eb)]
            return v.widen(raw.view(v.dtype)).reshape(len(idx), v.rows, v.cols)
        return v.widen(self.flat(v)[idx]).reshape(len(idx), v.rows, v.cols)

    def scatter(self, v: View, idx: np.ndarray, vals: np.ndarray, a: dm.Assign) -> None:
        if v.read_only:
            raise EffectError(f"{v.name} holds {v.fmt} codes, which effects read but do not write", a.loc)
        self._check(v, idx, a, "writes")
        if v.external:
            eb = v.elem_bytes
            raw = np.ascontiguousarray(v.narrow(vals)).view(np.uint8).reshape(len(idx), eb)
            self.arrays[v.memory][(idx * v.stride)[:, None] + np.arange(eb)] = raw
        else:
            self.flat(v)[idx] = v.narrow(vals.reshape(len(idx), v.rows * v.cols))

    def span(self, v: View, idx: np.ndarray) -> tuple[np.ndarray, int]:
        """Where elements lie in their memory's storage, first byte and length: to compare views
        of one memory (which may differ in type, on chip as off it)."""
        return idx * v.stride, v.elem_bytes
