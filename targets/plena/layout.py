"""Where a kernel's data lives: the machine geometry a lowering targets and the kernel's memory map.

The memory map is the contract between a lowering (which decides addresses), the verifier
(which stages inputs and reads outputs) and the export sidecar (which tells PLENA's own
tooling the same thing). Conventions follow reference §1.3:

* HBM tensors are MXFP8 row-major: R·C element bytes at `base`, then R·C/8 E8M0 scale
  bytes (one per block of 8 elements along a row); addresses are bytes.
* VRAM tensors are column-block-major: element (r, c) of a tensor with `phys_rows` rows
  lives at `base + (c // VLEN)·phys_rows·VLEN + r·VLEN + c % VLEN`; addresses are elements.
* FP SRAM constants are preloaded through fp16 (then bf16), as PLENA's test harness does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from zomboss.errors import ZombossError
from zomboss.program import Program

MX_BLOCK = 8  # elements sharing one E8M0 scale byte (reference §1.4)


_DOC_NAMES = {  # Geometry field -> doc parameter (plena.md §1)
    "mlen": "mlen",
    "vlen": "vlen",
    "blen": "blen",
    "hlen": "hlen",
    "pf_m": "hbm_m_prefetch",
    "pf_v": "hbm_v_prefetch",
    "wb_v": "hbm_v_writeback",
    "mram_tiles": "mram_tiles",
    "fpsram": "fpsram_size",
    "vram_rows": "vram_rows",
}


@dataclass(frozen=True)
class Geometry:
    """Hardware sizes a lowering depends on, read from the KB's parameters (plena.md §1)."""

    mlen: int  # matrix tile edge and M_MM reduction width
    vlen: int  # elements per VRAM row; PLENA requires vlen == mlen (rule cfg.vlen_is_mlen)
    blen: int  # rows per M_MM and output tile edge
    hlen: int  # mask lane width of the vector unit
    pf_m: int  # rows moved by one H_PREFETCH_M (HBM_M_Prefetch_Amount)
    pf_v: int  # rows moved by one H_PREFETCH_V (HBM_V_Prefetch_Amount)
    wb_v: int  # rows moved by one H_STORE_V (HBM_V_Writeback_Amount)
    mram_tiles: int  # MLEN×MLEN tiles in the matrix SRAM
    fpsram: int  # FP SRAM entries
    vram_rows: int  # VLEN-wide rows of the vector SRAM: what a lowering may keep on chip at once

    @property
    def tile(self) -> int:
        return self.mlen * self.mlen

    def params(self) -> dict[str, int]:
        """These sizes under the doc's parameter names (the inverse of `from_params`)."""
        return {n: getattr(self, f) for f, n in _DOC_NAMES.items()}

    @classmethod
    def from_params(cls, params: Mapping[str, int]) -> Geometry:
        """The sizes out of KB params (the doc's lower-case names; the KB has already refused
        parameters that break a rule of plena.md §1); other parameters are ignored."""
        p = {k.lower(): int(v) for k, v in params.items()}
        g = cls(**{f: p[n] for f, n in _DOC_NAMES.items()})
        if g.pf_m != g.mlen:
            raise ZombossError(
                f"the lowering loads one MLEN×MLEN tile per H_PREFETCH_M (hbm_m_prefetch={g.pf_m} != mlen={g.mlen})"
            )
        return g


@dataclass(frozen=True)
class HbmTensor:
    """A row-major MXFP8 tensor in HBM: element bytes, then scale bytes."""

    name: str
    base: int
    rows: int
    cols: int

    @property
    def scale_offset(self) -> int:
        """Bytes from `base` to the scale region (the value SCALE_REG must hold)."""
        return self.rows * self.cols

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols + self.rows * math.ceil(self.cols / MX_BLOCK)


@dataclass(frozen=True)
class VramTensor:
    """A column-block-major BF16 tensor in VRAM; rows beyond `rows` (to `phys_rows`) are padding."""

    name: str
    base: int
    rows: int
    cols: int
    phys_rows: int
    vlen: int = 64

    @property
    def size(self) -> int:
        """Elements the tensor occupies, padding included."""
        return math.ceil(self.cols / self.vlen) * self.phys_rows * self.vlen

    def addr(self, row: int, col: int) -> int:
        return self.base + (col // self.vlen) * self.phys_rows * self.vlen + row * self.vlen + col % self.vlen

    def block(self, row_block: int, col_block: int, mlen: int) -> int:
        """Address of the MLEN×MLEN sub-tile (row_block, col_block)."""
        return self.base + col_block * self.phys_rows * self.vlen + row_block * mlen * self.vlen


@dataclass(frozen=True)
class VramRegion:
    """A VRAM range a kernel may write besides its output (staged inputs, scratch tiles)."""

    name: str
    base: int
    size: int


@dataclass(frozen=True)
class KernelLayout:
    """Memory map of one kernel: HBM inputs, the VRAM output, VRAM work regions, FP SRAM constants.

    `inputs` are keyed by the golden's input names; `fp_sram` maps slot -> value (before the
    fp16/bf16 preload rounding). A kernel whose result does not fit VRAM writes it to HBM
    (`hbm_output`, MXFP8 through H_STORE_V): then that is its result and `output` is only
    the VRAM buffer it is computed in, piece by piece.
    """

    inputs: tuple[HbmTensor, ...]
    output: VramTensor
    work: tuple[VramRegion, ...] = ()
    fp_sram: Mapping[int, float] = field(default_factory=dict)
    hbm_output: HbmTensor | None = None

    def writable(self) -> list[tuple[int, int]]:
        """VRAM [lo, hi) element ranges the kernel may write."""
        out = [(self.output.base, self.output.base + self.output.size)]
        out += [(r.base, r.base + r.size) for r in self.work]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "hbm": {
                "format": "MXFP8 E4M3 elements row-major, then E8M0 scales (1 per 8 elements)",
                "inputs": [{**asdict(t), "scale_offset": t.scale_offset, "nbytes": t.nbytes} for t in self.inputs],
            },
            "vram": {
                "format": "BF16, column-block-major: base + (c//VLEN)*phys_rows*VLEN + r*VLEN + c%VLEN",
                "output": asdict(self.output),
                "work": [asdict(r) for r in self.work],
            },
            "fp_sram": {str(k): _json_float(v) for k, v in sorted(self.fp_sram.items())},
            **({"hbm_output": {**asdict(self.hbm_output), "scale_offset": self.hbm_output.scale_offset}}
               if self.hbm_output is not None else {}),
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KernelLayout:
        try:
            inputs = tuple(
                HbmTensor(name=t["name"], base=int(t["base"]), rows=int(t["rows"]), cols=int(t["cols"]))
                for t in data["hbm"]["inputs"]
            )
            out = data["vram"]["output"]
            output = VramTensor(**{k: out[k] for k in ("name", "base", "rows", "cols", "phys_rows", "vlen")})
            work = tuple(
                VramRegion(name=r["name"], base=int(r["base"]), size=int(r["size"])) for r in data["vram"]["work"]
            )
            fp = {int(k): float(v) for k, v in data.get("fp_sram", {}).items()}
            h = data.get("hbm_output")
            hbm_out = None if h is None else HbmTensor(h["name"], int(h["base"]), int(h["rows"]), int(h["cols"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ZombossError(f"layout sidecar is malformed: {type(e).__name__} {e}") from None
        return cls(inputs=inputs, output=output, work=work, fp_sram=fp, hbm_output=hbm_out)


def _json_float(v: float) -> float | str:
    """JSON has no infinities: write them as strings float() reads back."""
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")


class Allocator:
    """Bump allocators for HBM (64-byte aligned, like PLENA's stager) and VRAM (tile aligned)."""

    def __init__(self, geo: Geometry) -> None:
        self.geo = geo
        self.hbm_top = 0
        self.vram_top = 0
        self.inputs: list[HbmTensor] = []
        self.work: list[VramRegion] = []

    def hbm(self, name: str, rows: int, cols: int, is_input: bool = True) -> HbmTensor:
        t = HbmTensor(name, self.hbm_top, rows, cols)
        self.hbm_top = _align(t.base + t.nbytes, 64)
        if is_input:
            self.inputs.append(t)
        return t

    def vram(self, name: str, rows: int, cols: int, phys_rows: int | None = None, work: bool = True) -> VramTensor:
        t = VramTensor(name, self.vram_top, rows, cols, phys_rows or rows, self.geo.vlen)
        self.vram_top = _align(t.base + t.size, self.geo.tile)
        if work:
            self.work.append(VramRegion(name, t.base, t.size))
        return t

    def layout(
        self, output: VramTensor, fp_sram: Mapping[int, float], hbm_output: HbmTensor | None = None
    ) -> KernelLayout:
        work = tuple(r for r in self.work if r.name != output.name)
        return KernelLayout(
            inputs=tuple(self.inputs), output=output, work=work, fp_sram=dict(fp_sram), hbm_output=hbm_output
        )


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


@dataclass(frozen=True)
class Kernel:
    """A lowered kernel: its program and the memory map it expects."""

    program: Program
    layout: KernelLayout
