"""Random legal mappings for property tests: a skeleton clingo enumerates, sized by CP-SAT
under a random linear objective, on each op family's smallest suite instance."""

from __future__ import annotations

from zomboss import expr as ex
from zomboss.mapping import KnobMapping, space
from zomboss.solvers.space import SizingModel, skeletons
from zomboss.target import get_target, target_names


def families() -> list[tuple[str, str]]:
    """(target, workload id) per op family of every target: its instance with the smallest bound."""
    out = []
    for name in target_names():
        t = get_target(name)
        smallest: dict[str, object] = {}
        for wl in t.suite():
            cur = smallest.get(wl.op)
            if cur is None or (t.bound(wl, {}), wl.id) < (t.bound(cur, {}), cur.id):  # type: ignore[attr-defined]
                smallest[wl.op] = wl
        out += [(name, wl.id) for wl in smallest.values()]  # type: ignore[attr-defined]
    return out


def random_mapping(
    t,  # noqa: ANN001
    wl,  # noqa: ANN001
    pick: int,
    weights: list[int],
    within: float,
    params: dict[str, int] | None = None,
) -> KnobMapping | None:
    """Skeleton `pick` (mod their number) of the KB with `params`, sized minimising sum(weights *
    integer knobs); None when that sizing is infeasible or the doc's estimate puts it beyond
    `within` x Candidate-0 (absurd corners, 1-element tiles, cost minutes to simulate and say
    nothing the others do not)."""
    params = params or {}
    kb = t.kb(params)
    sp = space(kb, wl.op)
    sks = [s.as_dict() for s in skeletons(kb, wl.op, wl.shape)]
    sk = sks[pick % len(sks)]
    terms = [ex.Bin("*", ex.Int(w), ex.Ref((k.name,))) for k, w in zip(sp.integer, weights, strict=False) if w]
    objective = None
    for term in terms:
        objective = term if objective is None else ex.Bin("+", objective, term)
    sol = SizingModel(sp, wl.shape, sk).solve(objective, time_limit=2.0)
    if sol is None:
        return None
    m = sp.from_skeleton(sk, sol.values, wl.shape)
    if "estimate" in sp.costs:
        est = sp.cost("estimate", m, wl.shape)
        est0 = sp.cost("estimate", t.reference_mappings(wl, params)["library"], wl.shape)
        if est is not None and est0 is not None and est > within * est0:
            return None
    return m
