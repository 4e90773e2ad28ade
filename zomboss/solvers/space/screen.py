"""The pool's screen: every cost class sized by a steepest descent of the doc's estimate, all
classes at once, in NumPy columns.

A workload has thousands of cost classes (2,690 for a Gemmini matmul) but only a few dozen
sizing groups, and the classes of a group share their legal sizings. One CP-SAT solve per
group gives a legal start; from it every class descends by the single-knob edits the guides
refine by (±1, ×2, ÷2 of one integer knob), each step taking the edit with the lowest
estimate that keeps the mapping legal: `pool.polish` for every class at once, with the doc's
constraints and estimate evaluated as columns (`expr.vector`, exact int64 or refused).
A class whose edits all lose stops; the others go on, so a step costs one evaluation over the
classes still moving and their edits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from zomboss import expr as ex
from zomboss.expr import vector as vx
from zomboss.mapping import Space

_INF = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Descent:
    sizing: dict[str, int]
    estimate: int | None  # None: undefined at every sizing the descent saw


class _Columns:
    """An environment of columns for `expr.vector`: one row per (class, sizing)."""

    def __init__(self, cols: dict[str, vx.Col]) -> None:
        self.cols = cols
        self.memos: dict[int, vx.Col] = {}

    def col(self, name: str) -> vx.Col:
        return self.cols[name]

    def memo(self, node: int, compute: Callable[[], vx.Col]) -> vx.Col:
        v = self.memos.get(node)
        if v is None:
            v = self.memos[node] = compute()
        return v


class Screen:
    """The estimate and the legality of a space's mappings on one shape, as column functions."""

    def __init__(self, sp: Space, shape: Mapping[str, int]) -> None:
        self.space, self.shape = sp, dict(shape)
        est = sp.costs.get("estimate")
        if est is None:
            raise vx.Unsupported("the doc has no cost estimate")
        consts: dict[str, int | str] = {**sp.params, **{k: int(v) for k, v in shape.items()}}
        knobs = {k.name for k in sp.knobs}

        def resolve(r: ex.Ref) -> str | vx.Col:
            n = r.name
            if n in knobs:
                return n
            if n in consts:
                return vx.const(consts[n])
            if len(r.parts) == 1 and n.lower() in sp.symbols:
                return vx.const(n.lower())
            raise vx.Unsupported(f"the name {n!r}")

        self.estimate = vx.compile_vec(est.expr, resolve)
        self.constraints = [vx.compile_vec(c.expr, resolve) for c in sp.constraints]
        self.integer = [k for k in sp.knobs if k.name in {i.name for i in sp.integer}]

    def evaluate(self, symbolic: Mapping[str, np.ndarray], sizes: np.ndarray) -> np.ndarray:
        """Each row's estimate, or `_INF` where the row is illegal or the estimate undefined."""
        cols = {n: vx.column(v, kind=vx.SYM) for n, v in symbolic.items()}
        for j, k in enumerate(self.integer):
            cols[k.name] = vx.column(sizes[:, j])
        env = _Columns(cols)
        ok = np.ones(len(sizes), dtype=bool)
        for j, k in enumerate(self.integer):
            ok &= (sizes[:, j] >= k.lo) & (sizes[:, j] <= k.hi)
        for c in self.constraints:
            r = vx.truth(c(env))
            ok &= np.broadcast_to(np.asarray(r.val, dtype=bool), ok.shape)
            if r.bad is not None:
                ok &= ~np.broadcast_to(np.asarray(r.bad, dtype=bool), ok.shape)
        e = self.estimate(env)
        if e.kind != vx.INT:
            raise vx.Unsupported("an estimate that is not a number")
        val = np.broadcast_to(np.asarray(e.val, dtype=np.int64), ok.shape).copy()
        if e.bad is not None:
            ok &= ~np.broadcast_to(np.asarray(e.bad, dtype=bool), ok.shape)
        val[~ok] = _INF
        return val

    def descend(
        self,
        skeletons: Sequence[Mapping[str, str]],
        starts: Sequence[Mapping[str, int]],
        active: Sequence[Sequence[bool]],
        steps: int = 40,
    ) -> list[Descent]:
        """Steepest descent of each skeleton's estimate from its start (a legal sizing), over
        the edits of its active integer knobs (`active[i][j]` for `self.integer[j]`)."""
        n, m = len(skeletons), len(self.integer)
        sym = {
            k.name: np.array([vx.sym_code(str(s[k.name]).lower()) for s in skeletons], dtype=np.int64)
            for k in self.space.symbolic
        }
        x = np.array([[int(s[k.name]) for k in self.integer] for s in starts], dtype=np.int64).reshape(n, m)
        best = self.evaluate(sym, x)
        act = np.array(active, dtype=bool).reshape(n, m)
        moving = np.arange(n)
        for _ in range(steps):
            if len(moving) == 0:
                break
            rows, cand = [], []
            for j in range(m):
                cur = x[moving, j]
                # iter_knob_edits' values of one knob, in its order (sorted {v-1, v+1, 2v, v//2})
                news = np.sort(np.stack([cur - 1, cur + 1, cur * 2, cur // 2], axis=1), axis=1)
                for t in range(4):
                    v = news[:, t]
                    dup = (v == cur) | ((t > 0) & (v == news[:, t - 1]))
                    keep = act[moving, j] & ~dup
                    if not keep.any():
                        continue
                    idx = moving[keep]
                    edited = x[idx].copy()
                    edited[:, j] = v[keep]
                    rows.append(idx)
                    cand.append(edited)
            if not rows:
                break
            ridx = np.concatenate(rows)
            csz = np.concatenate(cand)
            est = self.evaluate({k: v[ridx] for k, v in sym.items()}, csz)
            # per row, the first edit with the lowest estimate, if it beats the current one
            order = np.lexsort((np.arange(len(ridx)), est, ridx))
            first = np.ones(len(order), dtype=bool)
            first[1:] = ridx[order][1:] != ridx[order][:-1]
            pick = order[first]
            gain = est[pick] < best[ridx[pick]]
            win = pick[gain]
            x[ridx[win]] = csz[win]
            best[ridx[win]] = est[win]
            moving = ridx[win]
        return [
            Descent(
                {k.name: int(x[i, j]) for j, k in enumerate(self.integer)}, None if best[i] == _INF else int(best[i])
            )
            for i in range(n)
        ]
