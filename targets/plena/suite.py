"""PLENA workloads: the six op families, their inline-spec schemas and the 36-instance suite.

Shapes follow reference §5.2 (MLEN=VLEN=64, BLEN=4). The baseline compiler only handles
shapes inside its envelope (dimensions that are multiples of the tile edge, row counts that
are multiples of BLEN, K tiles that fit the matrix SRAM); `check_shape` refuses anything
else with a WorkloadError naming the offending key, so every accepted workload has a
Candidate-0 kernel.
"""

from __future__ import annotations

from collections.abc import Mapping

from zomboss.errors import WorkloadError
from zomboss.util import check_workload_bytes
from zomboss.workload import FLAG, OpSchema, Workload, parse_spec

# Baseline geometry the suite is defined for (reference §5.2 "Fixed HW").
MLEN = 64
BLEN = 4
MRAM_TILES = 64

SCHEMAS: dict[str, OpSchema] = {
    "linear": OpSchema("linear", ("M", "K", "N")),
    "rmsnorm": OpSchema("rmsnorm", ("rows", "hidden")),
    "softmax": OpSchema("softmax", ("rows", "cols")),
    "ffn": OpSchema("ffn", ("rows", "hidden", "inter")),
    "attention": OpSchema("attention", ("sq", "skv"), optional={"d": 64, "causal": 0}, limits={"causal": FLAG}),
    "rope": OpSchema("rope", ("rows", "head_dim")),
}

OPS = tuple(SCHEMAS)

_SUITE: tuple[tuple[str, str, dict[str, int]], ...] = (
    ("lin_60m_q", "linear", {"M": 64, "K": 384, "N": 384}),
    ("lin_60m_kv", "linear", {"M": 64, "K": 384, "N": 128}),
    ("lin_135m_q", "linear", {"M": 64, "K": 576, "N": 576}),
    ("lin_135m_up", "linear", {"M": 32, "K": 576, "N": 1536}),
    ("lin_1b_q", "linear", {"M": 16, "K": 2048, "N": 2048}),
    ("lin_8b_k", "linear", {"M": 4, "K": 4096, "N": 1024}),
    ("rms_4x384", "rmsnorm", {"rows": 4, "hidden": 384}),
    ("rms_64x384", "rmsnorm", {"rows": 64, "hidden": 384}),
    ("rms_64x576", "rmsnorm", {"rows": 64, "hidden": 576}),
    ("rms_16x2048", "rmsnorm", {"rows": 16, "hidden": 2048}),
    ("rms_4x4096", "rmsnorm", {"rows": 4, "hidden": 4096}),
    ("rms_64x4096", "rmsnorm", {"rows": 64, "hidden": 4096}),
    ("sm_64x64", "softmax", {"rows": 64, "cols": 64}),
    ("sm_16x64", "softmax", {"rows": 16, "cols": 64}),
    ("sm_64x128", "softmax", {"rows": 64, "cols": 128}),
    ("sm_32x256", "softmax", {"rows": 32, "cols": 256}),
    ("sm_64x512", "softmax", {"rows": 64, "cols": 512}),
    ("sm_16x1024", "softmax", {"rows": 16, "cols": 1024}),
    ("ffn_64x64x128", "ffn", {"rows": 64, "hidden": 64, "inter": 128}),
    ("ffn_16x128x256", "ffn", {"rows": 16, "hidden": 128, "inter": 256}),
    ("ffn_64x384x1408", "ffn", {"rows": 64, "hidden": 384, "inter": 1408}),
    ("ffn_32x576x1536", "ffn", {"rows": 32, "hidden": 576, "inter": 1536}),
    ("ffn_128x576x1536", "ffn", {"rows": 128, "hidden": 576, "inter": 1536}),
    ("ffn_4x2880x2880", "ffn", {"rows": 4, "hidden": 2880, "inter": 2880}),
    ("attn_64", "attention", {"sq": 64, "skv": 64, "d": 64, "causal": 0}),
    ("attn_128c", "attention", {"sq": 128, "skv": 128, "d": 64, "causal": 1}),
    ("attn_256", "attention", {"sq": 256, "skv": 256, "d": 64, "causal": 0}),
    ("attn_512c", "attention", {"sq": 512, "skv": 512, "d": 64, "causal": 1}),
    ("attn_1kc", "attention", {"sq": 1024, "skv": 1024, "d": 64, "causal": 1}),
    ("attn_dec", "attention", {"sq": 16, "skv": 2048, "d": 64, "causal": 0}),
    ("rope_4x64", "rope", {"rows": 4, "head_dim": 64}),
    ("rope_64x64", "rope", {"rows": 64, "head_dim": 64}),
    ("rope_256x64", "rope", {"rows": 256, "head_dim": 64}),
    ("rope_64x128", "rope", {"rows": 64, "head_dim": 128}),
    ("rope_512x128", "rope", {"rows": 512, "head_dim": 128}),
    ("rope_128x2048", "rope", {"rows": 128, "head_dim": 2048}),
)


def _multiple(wl: Workload, key: str, of: int, why: str) -> None:
    if wl[key] % of:
        raise WorkloadError(f"{wl.id}: {key}={wl[key]} must be a multiple of {of} ({why})")


def _at_most(wl: Workload, key: str, value: int, limit: int, why: str) -> None:
    if value > limit:
        raise WorkloadError(f"{wl.id}: {key}={wl[key]} is too large ({why})")


def check_shape(wl: Workload, mlen: int = MLEN, blen: int = BLEN, mram_tiles: int = MRAM_TILES) -> Workload:
    """Refuse shapes outside the baseline compiler's envelope; returns `wl` unchanged."""
    rows_why = f"rows are processed in groups of BLEN={blen}"
    tile_why = f"the tile edge MLEN=VLEN={mlen}"
    if wl.op == "linear":
        _multiple(wl, "M", blen, rows_why)
        _multiple(wl, "K", mlen, tile_why)
        _multiple(wl, "N", mlen, tile_why)
    elif wl.op == "rmsnorm":
        _multiple(wl, "rows", blen, rows_why)
        _multiple(wl, "hidden", mlen, tile_why)
    elif wl.op == "softmax":
        _multiple(wl, "rows", blen, rows_why)
        _multiple(wl, "cols", mlen, tile_why)
    elif wl.op == "ffn":
        _multiple(wl, "rows", blen, rows_why)
        _multiple(wl, "hidden", mlen, tile_why)
        _multiple(wl, "inter", mlen, tile_why)
        fit = f"all K tiles of a column block must fit the {mram_tiles} matrix-SRAM tiles"
        _at_most(wl, "hidden", wl["hidden"] // mlen, mram_tiles, fit)
        _at_most(wl, "inter", wl["inter"] // mlen, mram_tiles, fit)
    elif wl.op == "attention":
        _multiple(wl, "sq", blen, rows_why)
        _multiple(wl, "skv", mlen, f"key blocks are MLEN={mlen} rows")
        _multiple(wl, "d", mlen, tile_why)
        if wl["causal"] not in (0, 1):
            raise WorkloadError(f"{wl.id}: causal={wl['causal']} must be 0 or 1")
        if wl["causal"] and wl["sq"] != wl["skv"]:
            raise WorkloadError(f"{wl.id}: causal=1 needs sq == skv (the baseline masks with zero query offset)")
        _at_most(wl, "d", wl["d"] // mlen, mram_tiles, f"a K block of d/{mlen} tiles must fit the matrix SRAM")
    elif wl.op == "rope":
        _multiple(wl, "rows", blen, rows_why)
        _multiple(wl, "head_dim", mlen, tile_why)
    # Only the linear lowering keeps a lazily built nest (lowering.LAZY_STATIC), so only a linear
    # can be placed and timed beyond what a verification may allocate (checked before it does).
    check_workload_bytes(wl.id or wl.op, data_bytes(wl), timed_only=wl.op == "linear")
    return wl


def data_bytes(wl: Workload) -> int:
    """Bytes of the float32 tensors a workload's inputs, intermediates and output take in its
    golden reference (what building an instance allocates, at the least)."""
    s = wl.shape
    if wl.op == "linear":
        elems = s["M"] * s["K"] + s["K"] * s["N"] + s["M"] * s["N"]
    elif wl.op in ("rmsnorm", "softmax"):
        elems = 2 * s["rows"] * s.get("hidden", s.get("cols", 0))
    elif wl.op == "ffn":
        elems = 2 * s["rows"] * s["hidden"] + 3 * s["hidden"] * s["inter"] + 2 * s["rows"] * s["inter"]
    elif wl.op == "attention":
        elems = 2 * s["sq"] * s["d"] + 2 * s["skv"] * s["d"] + s["sq"] * s["skv"]
    elif wl.op == "rope":
        elems = 5 * s["rows"] * s["head_dim"]
    else:
        elems = 0
    return 4 * elems


SUITE: tuple[Workload, ...] = tuple(Workload(id=i, op=op, shape=dict(shape)) for i, op, shape in _SUITE)
_BY_ID: Mapping[str, Workload] = {w.id: w for w in SUITE}


def suite() -> tuple[Workload, ...]:
    return SUITE


def workload(spec: str) -> Workload:
    """A suite id or an inline `OP:KEY=VALUE,...` spec, checked against the baseline envelope."""
    spec = spec.strip()
    if spec in _BY_ID:
        return _BY_ID[spec]
    if ":" not in spec:
        raise WorkloadError(f"{spec!r}: not a PLENA suite id (try `zomboss workloads plena`) nor an OP:KEY=VALUE spec")
    wl = parse_spec(spec, SCHEMAS)
    schema = SCHEMAS[wl.op]
    shape = {k: wl.shape[k] for k in (*schema.required, *schema.optional)}
    canonical = Workload(id="", op=wl.op, shape=shape)
    return check_shape(Workload(id=canonical.spec, op=wl.op, shape=shape))
