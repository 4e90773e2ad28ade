"""A lower bound on any kernel's cycles for a workload: max(matrix, vector, HBM) work.

* matrix: the workload's essential multiply-accumulates at the array's streaming rate
  (`rtl_mac_rate` = BLEN·MLEN MACs per cycle, plena.md §7);
* vector: the VLEN-wide row operations the computation cannot avoid, one per cycle (the
  RTL's independent element operations have an initiation interval of 1, Appendix B);
* HBM: every input read once (MXFP8 elements plus scale bytes) at the cost model's bulk rate
  (`hbm_pf_blk_x100` hundredths of a cycle per 64-byte block, Appendix A).
The three resources could in principle overlap, so the bound is their maximum.

`program_bound` bounds one program instead: the `rtl` model runs in order, so its cycles are
at least the static costs of the executed instructions (trip counts from the loop structure,
counts.py) plus the cheapest cost of each transfer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from zomboss.expr import cdiv
from zomboss.program import Program
from zomboss.workload import Workload

from . import hbm as H
from .config import PlenaConfig
from .counts import executions
from .decode import cost_table
from .layout import MX_BLOCK


@dataclass(frozen=True)
class Bound:
    matrix: int
    vector: int
    hbm: int

    @property
    def cycles(self) -> int:
        return max(self.matrix, self.vector, self.hbm)


def macs(wl: Workload) -> int:
    """Essential MACs (causal attention counts only the unmasked keys)."""
    s = wl.shape
    if wl.op == "linear":
        return s["M"] * s["K"] * s["N"]
    if wl.op == "ffn":
        return 3 * s["rows"] * s["hidden"] * s["inter"]
    if wl.op == "attention":
        return 2 * _score_elems(wl) * s["d"]
    return 0


def _score_elems(wl: Workload) -> int:
    s = wl.shape
    if s["causal"]:
        return s["sq"] * (s["sq"] + 1) // 2
    return s["sq"] * s["skv"]


def vector_rows(wl: Workload, vlen: int) -> int:
    """Unavoidable VLEN-wide vector operations."""
    s = wl.shape
    if wl.op == "rmsnorm":  # square, reduce, scale per chunk
        return 3 * s["rows"] * cdiv(s["hidden"], vlen)
    if wl.op == "softmax":  # max, subtract, exp, sum, normalise per chunk
        return 5 * s["rows"] * cdiv(s["cols"], vlen)
    if wl.op == "rope":  # two products and a sum per chunk
        return 3 * s["rows"] * cdiv(s["head_dim"], vlen)
    if wl.op == "ffn":  # negate, exp, +1, reciprocal, ·up, ·gate per chunk of the hidden activation
        return 6 * s["rows"] * cdiv(s["inter"], vlen)
    if wl.op == "attention":  # scale, max, subtract, exp, sum per score chunk
        return 5 * cdiv(_score_elems(wl), vlen)
    return 0


def input_bytes(wl: Workload) -> int:
    """MXFP8 bytes of every input tensor (elements + one scale byte per 8 elements); RoPE's
    rotate_half input is not counted, since it can be formed on chip."""
    s = wl.shape
    shapes: list[tuple[int, int]]
    if wl.op == "linear":
        shapes = [(s["M"], s["K"]), (s["K"], s["N"])]
    elif wl.op == "rmsnorm":
        shapes = [(s["rows"], s["hidden"])]
    elif wl.op == "softmax":
        shapes = [(s["rows"], s["cols"])]
    elif wl.op == "ffn":
        h, i = s["hidden"], s["inter"]
        shapes = [(s["rows"], h), (h, i), (h, i), (i, h)]
    elif wl.op == "attention":
        shapes = [(s["sq"], s["d"]), (s["skv"], s["d"]), (s["skv"], s["d"])]
    elif wl.op == "rope":
        shapes = [(s["rows"], s["head_dim"])] * 3
    else:
        shapes = []
    return sum(r * c + r * cdiv(c, MX_BLOCK) for r, c in shapes)


def lower_bound(wl: Workload, params: Mapping[str, int]) -> Bound:
    """The bound under the doc's parameters (`rtl_mac_rate`, `vlen`, `hbm_block`, `hbm_pf_blk_x100`)."""
    matrix = cdiv(macs(wl), params["rtl_mac_rate"])
    vector = vector_rows(wl, params["vlen"])
    blocks = cdiv(input_bytes(wl), params["hbm_block"])
    hbm = cdiv(blocks * params["hbm_pf_blk_x100"], 100)
    return Bound(matrix, vector, hbm)


def program_bound(program: Program, cfg: PlenaConfig) -> int:
    """A lower bound on the `rtl` cycles of `program` without simulating it (0 for a program
    with C_BREAK, whose trip counts the loop structure does not decide)."""
    if any(i.op == "C_BREAK" for i in program.instrs):
        return 0
    costs, hbm = cost_table(cfg.kb), H.HbmCost.from_params(cfg.params)
    dma = {
        "H_PREFETCH_M": hbm.least(cfg.pf_m, cfg.mlen, store=False),
        "H_PREFETCH_V": hbm.least(cfg.pf_v, cfg.vlen, store=False),
        "H_STORE_V": hbm.least(cfg.wb_v, cfg.vlen, store=True),
    }
    total = 0
    for ins, n in zip(program.instrs, executions(program), strict=True):
        c = costs.static(ins)
        total += n * (c.rtl if c is not None else dma[ins.op])
    return total
