"""The surrogate guide: a ridge regression of log-cycles on knob features, learned online from
this run's simulations (NumPy), scoring the pool and the refinements of the best kernels."""

from __future__ import annotations

import math

import numpy as np

from zomboss.mapping import KnobMapping, Space
from zomboss.solvers.guides.base import Proposal, SearchState, refinements
from zomboss.solvers.guides.cost import CostGuide


class SurrogateGuide:
    """Ridge regression on knob features, refitted after every batch; proposes the lowest
    predicted cycles among the pool and the refinements of the three best kernels."""

    name = "surrogate"

    def __init__(self, seed: int = 0, warmup: int = 4, ridge: float = 1.0) -> None:
        self.rng = np.random.default_rng(seed)
        self.warmup = warmup
        self.ridge = ridge
        self._cost = CostGuide()

    def features(self, sp: Space, m: KnobMapping, estimate: int | None) -> np.ndarray:
        row: list[float] = [1.0]
        for k in sp.knobs:
            v = m[k.name]
            if k.values:
                row += [1.0 if v == x else 0.0 for x in k.values[1:]]
            else:
                assert isinstance(v, int)
                row.append(math.log2(v + 1))
        row.append(math.log(estimate + 1) if estimate else 0.0)
        return np.array(row)

    def propose(self, state: SearchState, n: int) -> list[Proposal]:
        done = [state.default, *state.simulated]
        if len(done) < self.warmup:
            return self._cost.propose(state, n)
        sp = state.space
        x = np.array([self.features(sp, s.mapping, s.estimate) for s in done])
        y = np.array([math.log(s.cycles) for s in done])
        w = np.linalg.solve(x.T @ x + self.ridge * np.eye(x.shape[1]), x.T @ y)
        seen = state.seen()
        cands: dict[str, KnobMapping] = {}
        for c in state.pool:
            if c.mapping.key() not in seen:
                cands.setdefault(c.mapping.key(), c.mapping)
        for s in sorted(done, key=lambda s: s.cycles)[:3]:
            for m in refinements(state, s.mapping):
                cands.setdefault(m.key(), m)
        if not cands:
            return []
        ms = list(cands.values())
        pred = np.array([self.features(sp, m, state.estimate(m)) @ w for m in ms])
        order = np.argsort(pred + self.rng.normal(0.0, 0.01, size=len(pred)), kind="stable")
        return [
            Proposal(ms[i].as_dict(), source="surrogate", note=f"predicted {math.exp(pred[i]):.0f}") for i in order[:n]
        ]
