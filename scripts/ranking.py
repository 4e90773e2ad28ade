"""Rank agreement between the doc's cost estimate and simulated cycles.

The guides only need the estimate to *order* candidates the way the simulator does, so its
quality is a rank correlation (Spearman, ties at their mean rank: a cost model that gives many
mappings one value cannot tell them apart, and that must count against it).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

import numpy as np

from zomboss.knowledge import KB
from zomboss.mapping import KnobMapping, Space, iter_knob_edits, space
from zomboss.solvers.space import SizingModel, group_skeletons, skeletons


def ranks(xs: Sequence[float]) -> np.ndarray:
    """Ranks from 0, tied values sharing their mean rank."""
    a = np.asarray(xs, dtype=float)
    order = np.argsort(a, kind="stable")
    out = np.empty(len(a))
    out[order] = np.arange(len(a), dtype=float)
    for v in np.unique(a):
        tied = a == v
        out[tied] = out[tied].mean()
    return out


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman's rho with ties averaged (nan for fewer than three points or a constant side)."""
    if len(xs) < 3:
        return math.nan
    rx, ry = ranks(xs), ranks(ys)
    if rx.std() == 0 or ry.std() == 0:
        return math.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def random_mappings(
    kb: KB,
    op: str,
    shape: Mapping[str, int],
    n: int,
    seed: int = 0,
    edits: int = 2,
    time_limit: float = 0.2,
    below: int | None = None,
) -> list[KnobMapping]:
    """`n` distinct legal mappings drawn independently of the cost estimate: a random skeleton,
    CP-SAT's optimum of a random linear objective over its integer knobs, then up to `edits`
    random legal single-knob edits (so sub-optimal sizings are represented too). With `below`,
    only mappings whose sound bound is under it (those a search could not prune against a
    kernel of `below` cycles)."""
    sp = space(kb, op)
    rng = random.Random(seed)
    # one integer problem first, then one of its skeletons: families with many symbolic knobs
    # (the unrolled stream) would otherwise crowd out the rest
    groups = list(group_skeletons(sp, (s.as_dict() for s in skeletons(kb, op, shape))).values())
    out: dict[str, KnobMapping] = {}
    tries = 0
    while len(out) < n and tries < 20 * n:
        tries += 1
        model = SizingModel(sp, shape, rng.choice(rng.choice(groups)))
        objective = sum(rng.randint(-4, 4) * v for v in model.vars.values()) if model.vars else None
        if objective is not None:
            model.model.minimize(objective)
        sol = model.solve(None, time_limit)
        if sol is None:
            continue
        m = sp.from_skeleton(model.skeleton, sol.values, shape)
        m = _walk(kb, sp, shape, m, rng.randint(0, edits), rng)
        bound = sp.cost("bound", m, shape)
        if below is None or bound is None or bound < below:
            out.setdefault(m.key(), m)
    return list(out.values())


def _walk(kb: KB, sp: Space, shape: Mapping[str, int], m: KnobMapping, steps: int, rng: random.Random) -> KnobMapping:
    for _ in range(steps):
        moves = list(iter_knob_edits(sp, m, shape))
        rng.shuffle(moves)
        for name, value in moves:
            cand = sp.mapping({**m.as_dict(), name: value}, shape)
            if not sp.violations(kb, cand, shape):
                m = cand
                break
    return m
