"""Assignments whose points accumulate into the same target rows, `dst = mac(dst, x, y)` over a
loop nest (a GEMM instruction's micro-ops): the products summed per target and added once, which
equals applying them point by point since two's-complement wrap-around commutes with addition.
`effects._assign` decides when an assignment has this form; this module computes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from zomboss.doc import model as dm
from zomboss.machine import numformats as nf

if TYPE_CHECKING:
    from zomboss.machine.memories import Memories, View

EXACT_F32, EXACT_F64 = 1 << 24, 1 << 53  # integer sums below these are exact in float32 / float64


def accumulate_mac(
    mem: Memories,
    a: dm.Assign,
    tv: View,
    tidx: np.ndarray,
    refs: list[tuple[View, np.ndarray]],
    opts: Mapping[str, Any],
    chunk_values: int,
) -> bool:
    """dst = mac(dst, x, y) at every point, as `accumulate` computes it, when every target row
    has the same number of points c (a regular loop nest, as every lowering emits): the points
    sorted by target, their products (BLAS in float when every partial sum is provably an exact
    integer there, int64 otherwise) summed c at a time, instead of a scatter-add per point.
    False (nothing done) where that form does not apply. `chunk_values` bounds the values computed
    at once."""
    (xv, xi), (yv, yi) = refs[1], refs[2]
    bt = int(opts.get("bt", 0))
    uniq, inv = np.unique(tidx, return_inverse=True)
    per = np.bincount(inv)
    c = int(per[0])
    r, k = xv.rows, xv.cols
    o = yv.rows if bt else yv.cols
    if not (per == c).all() or (yv.cols if bt else yv.rows) != k or r * o != tv.rows * tv.cols:
        return False
    bounds = []
    for v in (xv, yv):
        if not np.issubdtype(np.dtype(v.dtype), np.integer) or nf.FORMATS.get(v.fmt) is not None:
            return False
        info = np.iinfo(v.dtype)
        bounds.append(max(abs(int(info.min)), int(info.max)))
    most = bounds[0] * bounds[1] * c * k
    kind = np.float32 if most < EXACT_F32 else np.float64 if most < EXACT_F64 else np.int64
    order = np.argsort(inv, kind="stable")
    cur = mem.gather(tv, uniq, a).astype(np.int64).reshape(len(uniq), -1)
    step = max(1, chunk_values // max(1, c * (r * k + k * o + r * o)))  # targets per chunk: bounded memory
    for lo in range(0, len(uniq), step):
        pts = order[lo * c : (lo + step) * c]
        u = len(pts) // c
        x = mem.gather(xv, xi[pts], a).astype(kind, copy=False)
        y = mem.gather(yv, yi[pts], a).astype(kind, copy=False)
        prod = np.matmul(x, y.transpose(0, 2, 1) if bt else y).reshape(u, c, r * o).sum(axis=1)
        cur[lo : lo + u] += (prod if kind is np.int64 else np.rint(prod)).astype(np.int64)
    mem.scatter(tv, uniq, cur, a)
    return True


def accumulate(
    mem: Memories,
    a: dm.Assign,
    tv: View,
    tidx: np.ndarray,
    compute: Callable[[np.ndarray], np.ndarray],
    chunks: Callable[[np.ndarray], Iterator[np.ndarray]],
) -> None:
    """dst = mac(dst, x, y) at every point: the products summed per target row (np.add.at,
    exact in int64), added once and narrowed — equal to applying them one by one, since
    two's-complement wrap-around commutes with addition."""
    n = len(tidx)
    uniq, inv = np.unique(tidx, return_inverse=True)
    cur = mem.gather(tv, uniq, a).astype(np.int64).reshape(len(uniq), -1)
    store = mem.flat(tv)
    saved = store[uniq].copy()
    store[uniq] = 0  # compute() reads dst as 0: it then yields the products alone
    acc = np.zeros_like(cur)
    try:
        for rows in chunks(np.arange(n)):
            np.add.at(acc, inv[rows], compute(rows).astype(np.int64))
    finally:
        store[uniq] = saved
    mem.scatter(tv, uniq, (cur + acc).astype(np.int64), a)
