"""The PLENA mapping interface: one frozen dataclass of knobs per op family.

A mapping is what a search (or a person) decides; `lowering.py` turns a legal mapping into
a program. Every knob documents its legal range in its field metadata (`doc`, and
`choices` or `range`); integer ranges may depend on the workload and the machine
(`validate` evaluates them). Construction never checks legality: `validate` is a pure
function returning every violation, so a guide can be told all that is wrong at once.
`library_default` gives the PLENA compiler's own choices (default.py), so the lowering
of the library default reproduces Candidate-0 instruction for instruction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

from zomboss.errors import ZombossError
from zomboss.knowledge import load_kb
from zomboss.legality import flat_mapping, mapping_violations
from zomboss.target import doc_path
from zomboss.workload import Workload

from .layout import Geometry


class MappingError(ZombossError):
    """A mapping that cannot be read or is illegal for its workload; the message names the field."""


def knob(default: Any, doc: str, choices: tuple[str, ...] | None = None, range: str | None = None) -> Any:  # noqa: A002
    meta: dict[str, Any] = {"doc": doc}
    if choices is not None:
        meta["choices"] = choices
    if range is not None:
        meta["range"] = range
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class LinearMapping:
    """Y[M,N] = X[M,K]·W[K,N]."""

    op: ClassVar[str] = "linear"
    k_chunk: int = knob(
        4,
        "K tiles of W per pass (the compiler's mram_tile_capacity); below K/MLEN the K reduction is split and the "
        "partial sums are added in BF16",
        range="1..mram_tiles",
    )
    n_block: int = knob(
        1,
        "output column blocks (MLEN wide) per weight load",
        range="1..N/MLEN, min(k_chunk, K/MLEN)*n_block <= mram_tiles",
    )
    order: str = knob(
        "kchunk_outer", "outer loop: K chunks outside column groups (compiler) or inside", ("kchunk_outer", "col_outer")
    )
    m_block: int = knob(
        1,
        "row blocks (MLEN rows each) per weight load: the loaded k_chunk x n_block W tiles stay resident across "
        "them; 1 reloads W for every row block (compiler)",
        range="1..ceil(M/MLEN)",
    )
    add_rows: str = knob(
        "mlen", "rows added per K-split partial tile: all MLEN (compiler) or only valid rows", ("mlen", "valid")
    )
    tile_order: str = knob(
        "oc_r_k", "loop nest inside one output tile (oc column slices, r row groups, k K tiles)", ("oc_r_k", "r_oc_k")
    )
    unroll: bool = knob(False, "unroll the projection loops (addresses baked in) instead of hardware loops")
    hoist_csr: bool = knob(
        False, "program a-register/SCALE_REG/STRIDE_REG once per tensor instead of before every load"
    )


@dataclass(frozen=True)
class RmsnormMapping:
    """In-place RMSNorm without γ."""

    op: ClassVar[str] = "rmsnorm"
    row_mode: str = knob(
        "serial",
        "serial: stats then scaling per row, unrolled over rows (compiler); parallel: all rows' stats in one rolled loop, then one rolled scaling loop",
        ("serial", "parallel"),
    )
    reduce: str = knob(
        "per_chunk",
        "sum of squares: V_RED_SUM per VLEN chunk (compiler) or V_ADD_VV chunks into one row, then one V_RED_SUM",
        ("per_chunk", "vector_first"),
    )
    unroll_scale: bool = knob(
        True,
        "serial rows: unroll the scaling pass over chunks (compiler) instead of a hardware loop; parallel rows always loop",
    )


@dataclass(frozen=True)
class SoftmaxMapping:
    """Row softmax of X·scale."""

    op: ClassVar[str] = "softmax"
    valid_rows_only: bool = knob(False, "process only the valid rows instead of every MLEN row of each row tile")
    in_place: bool = knob(False, "work on the staged input instead of copying it into a separate S buffer")
    reduce: str = knob(
        "per_chunk",
        "row sum: V_RED_SUM per chunk or V_ADD_VV chunks first, then one V_RED_SUM",
        ("per_chunk", "vector_first"),
    )
    row_loop: str = knob(
        "unrolled", "rows as straight-line code (compiler) or one hardware loop", ("unrolled", "rolled")
    )


@dataclass(frozen=True)
class FfnMapping:
    """out = (silu(X·W_up) ⊙ (X·W_gate))·W_down."""

    op: ClassVar[str] = "ffn"
    fused_up_gate: bool = knob(
        False,
        "load W_up and W_gate column blocks together and run both projections per slice",
    )
    unroll_outer: bool = knob(True, "unroll the column-slice and row-group levels (compiler) instead of hardware loops")
    unroll_act: bool = knob(True, "unroll the SiLU·gate pass (compiler) instead of a hardware loop")
    hoist_csr: bool = knob(False, "program a-register/SCALE_REG/STRIDE_REG once per weight instead of per column block")


@dataclass(frozen=True)
class AttentionMapping:
    """softmax(Q·Kᵀ·scale + mask)·V for one head."""

    op: ClassVar[str] = "attention"
    algorithm: str = knob(
        "flash",
        "flash: online softmax per K block (compiler); one_pass: whole score rows, then one PV with FP32 accumulation (needs skv/MLEN*d/MLEN <= mram_tiles)",
        ("flash", "one_pass"),
    )
    loop_order: str = knob(
        "q_outer",
        "flash loop nest: q blocks outside K blocks (compiler) or K/V blocks outside (K/V loaded once; needs FP SRAM for 2*sq running stats)",
        ("q_outer", "kv_outer"),
    )
    mask: str = knob(
        "elementwise",
        "causal mask build: one S_ST_FP per element (compiler) or a 2*MLEN staging row read through a sliding window",
        ("elementwise", "sliding_window"),
    )
    hoist_csr: bool = knob(
        False, "program a-register/SCALE_REG/STRIDE_REG once per tensor instead of before every load"
    )


@dataclass(frozen=True)
class RopeMapping:
    """x·cos + rotate_half(x)·sin."""

    op: ClassVar[str] = "rope"
    rotate: str = knob(
        "load",
        "rotate_half(x): loaded from HBM (compiler) or formed on chip from x's chunks (needs head_dim % (2*VLEN) == 0)",
        ("load", "on_chip"),
    )
    unroll: bool = knob(False, "unroll the chunk loop instead of one hardware loop (compiler)")


MAPPINGS: dict[str, type] = {
    m.op: m for m in (LinearMapping, RmsnormMapping, SoftmaxMapping, FfnMapping, AttentionMapping, RopeMapping)
}

AnyMapping = LinearMapping | RmsnormMapping | SoftmaxMapping | FfnMapping | AttentionMapping | RopeMapping


def library_default(wl: Workload) -> AnyMapping:
    """The PLENA compiler's choices for this workload (every knob at its default)."""
    if wl.op not in MAPPINGS:
        raise MappingError(f"no mapping space for op {wl.op!r} (ops: {', '.join(MAPPINGS)})")
    return MAPPINGS[wl.op]()


def describe(cls: type) -> list[dict[str, Any]]:
    """Knob table of one family: name, type, default, legal range/choices, doc."""
    out = []
    for f in fields(cls):
        row = {"name": f.name, "type": _type_name(f), "default": f.default, "doc": f.metadata["doc"]}
        if "choices" in f.metadata:
            row["choices"] = list(f.metadata["choices"])
        elif f.type in (bool, "bool"):
            row["choices"] = [False, True]
        else:
            row["range"] = f.metadata.get("range")
        out.append(row)
    return out


def _type_name(f: Any) -> str:
    t = f.type if isinstance(f.type, str) else f.type.__name__
    return t


# -- JSON ---------------------------------------------------------------------------------------


def to_json(m: AnyMapping) -> dict[str, Any]:
    return {"op": m.op, "knobs": {f.name: getattr(m, f.name) for f in fields(m)}}


def from_json(data: Mapping[str, Any] | str) -> AnyMapping:
    """Read a mapping; unknown ops/knobs and ill-typed values raise MappingError naming the field."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as e:
            raise MappingError(f"mapping is not JSON: {e}") from None
    if not isinstance(data, Mapping):
        raise MappingError("mapping must be a JSON object with 'op' and 'knobs'")
    op = data.get("op")
    if op not in MAPPINGS:
        raise MappingError(f"field 'op': unknown op {op!r} (ops: {', '.join(MAPPINGS)})")
    knobs = data.get("knobs", {})
    if not isinstance(knobs, Mapping):
        raise MappingError("field 'knobs' must be an object")
    extra = sorted(set(data) - {"op", "knobs"})
    if extra:
        raise MappingError(f"field {extra[0]!r}: not a mapping field (expected 'op' and 'knobs')")
    cls = MAPPINGS[op]
    known = {f.name: f for f in fields(cls)}
    kw: dict[str, Any] = {}
    for name, value in knobs.items():
        if name not in known:
            raise MappingError(f"field 'knobs.{name}': {op} has no such knob (knobs: {', '.join(known)})")
        kw[name] = _coerce(op, known[name], value)
    return cls(**kw)


def _coerce(op: str, f: Any, value: Any) -> Any:
    where = f"field 'knobs.{f.name}' of {op}"
    if "choices" in f.metadata:
        if value not in f.metadata["choices"]:
            raise MappingError(f"{where}: {value!r} is not one of {', '.join(f.metadata['choices'])}")
        return value
    if f.default is MISSING or isinstance(f.default, bool):
        if not isinstance(value, bool):
            raise MappingError(f"{where}: expected true or false, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise MappingError(f"{where}: expected an integer, got {value!r}")
    return value


# -- legality -----------------------------------------------------------------------------------


def validate(m: AnyMapping, wl: Workload, geo: Geometry | None = None) -> list[str]:
    """Every reason `m` is illegal for `wl` on `geo` (empty when legal). Pure: no side effects.
    The legality rules are the `mapping` constraints of plena.md §8 (one source of truth with
    `zomboss kb check`); this only adds the knob-type checks of the dataclass."""
    geo = geo or Geometry()
    if m.op != wl.op:
        return [f"field 'op': mapping is for {m.op} but the workload is {wl.op}"]
    errs: list[str] = []
    for f in fields(m):
        v = getattr(m, f.name)
        if "choices" in f.metadata and v not in f.metadata["choices"]:
            errs.append(f"{f.name}={v!r}: not one of {', '.join(f.metadata['choices'])}")
        elif isinstance(f.default, bool) and not isinstance(v, bool):
            errs.append(f"{f.name}={v!r}: expected a bool")
    if not errs:
        kb = load_kb(doc_path("plena"))
        knobs = {f.name: getattr(m, f.name) for f in fields(m)}
        found = mapping_violations(kb, m.op, flat_mapping(knobs, wl.shape), {**kb.params, **geo.params()})
        errs += [f"{v.rule}: {v.message} ({', '.join(f'{k}={x}' for k, x in v.values.items())})" for v in found]
    return errs


def check(m: AnyMapping, wl: Workload, geo: Geometry | None = None) -> None:
    """Raise MappingError listing every violation of `validate`."""
    errs = validate(m, wl, geo)
    if errs:
        raise MappingError(f"illegal {m.op} mapping for {wl.id}: " + "; ".join(errs))
