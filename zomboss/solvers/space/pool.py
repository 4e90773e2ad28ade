"""The candidate pool of a workload: clingo's skeletons, sized under the doc's cost.

Skeletons that agree on every symbolic knob the integer problem, the cost estimate and the
cost bound read form one *cost class*: the sizing sees them as the same problem. Every class
is sized by the screen (one CP-SAT solve per sizing group, then a descent of the estimate for
all classes at once, `screen`), the best-ranked ones again by CP-SAT; each class yields its
best K sizings and its bound (the minimum of the doc's `cost bound` over the class's legal
sizings: direct when the bound reads no integer knob, else proven by CP-SAT, else unknown).
The pool offers the class's representative skeleton — the one closest to Candidate-0 — with
those sizings. The other members stay reachable by knob edits (guides refine by them).
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

import numpy as np

from zomboss import expr as ex
from zomboss.expr import vector as vx
from zomboss.knowledge import KB
from zomboss.mapping import KnobMapping, Space, iter_knob_edits, space
from zomboss.solvers.space.enumerate import skeletons
from zomboss.solvers.space.screen import Descent, Screen
from zomboss.solvers.space.sizing import Sizing, SizingModel, relevant_symbolic
from zomboss.util import Lru, warn_once


@dataclass(frozen=True)
class Candidate:
    mapping: KnobMapping
    estimate: int | None  # the doc's cost estimate (None: the doc has none)
    bound: int | None  # the doc's cost bound of this mapping
    source: str  # "library", "exo", "cpsat", "refine", a guide's name, ...


@dataclass
class CostClass:
    key: tuple[tuple[str, str], ...]
    members: list[dict[str, str]]  # skeletons, representative first
    sizings: list[dict[str, int]] = field(default_factory=list)  # best K by the estimate
    bound: int | None = None  # lower bound of the doc's cost bound over the class (None: unknown)
    feasible: bool = True
    offered: list[Candidate] = field(default_factory=list)  # the sizings on the representative


@dataclass
class Pool:
    space: Space
    shape: dict[str, int]
    classes: list[CostClass]
    skeleton_count: int
    seconds: dict[str, float]
    near: KnobMapping | None = None
    notes: list[str] = field(default_factory=list)  # what the pool could not do (said on stderr too)

    def candidates(self) -> list[Candidate]:
        """Every class's best sizings on its representative, best estimate first."""
        out = [cand for c in self.classes if c.feasible for cand in c.offered]
        ref = self.near.as_dict() if self.near is not None else None
        # equal estimates: the candidate closest to Candidate-0 first (the estimate cannot tell them apart)
        out.sort(
            key=lambda c: (
                c.estimate if c.estimate is not None else 0,
                distance(c.mapping.as_dict(), ref),
                c.mapping.key(),
            )
        )
        return out

    def lowest_bound(self) -> int | None:
        """The tightest sound bound over the whole legal space (None if some class has none)."""
        bounds = [c.bound for c in self.classes if c.feasible]
        if not bounds or any(b is None for b in bounds):
            return None
        return min(b for b in bounds if b is not None)


def cost_relevant(sp: Space) -> tuple[str, ...]:
    """Symbolic knobs that change the integer problem, the estimate or the bound."""
    names = set(relevant_symbolic(sp))
    symbolic = {k.name for k in sp.symbolic}
    for c in sp.costs.values():
        names |= {r.name for r in ex.refs(c.expr)} & symbolic
    return tuple(k.name for k in sp.symbolic if k.name in names)


def fixed_bound(sp: Space) -> bool:
    """Whether the doc's bound reads no integer knob: one value for every sizing of a class, so
    its minimum over the class needs no CP-SAT (and every class of a pool has it)."""
    bnd = sp.costs.get("bound")
    return bnd is not None and not ({r.name for r in ex.refs(bnd.expr)} & {k.name for k in sp.integer})


def distance(s: Mapping[str, object], ref: Mapping[str, object] | None) -> int:
    """Knobs on which two mappings differ (0 without a reference)."""
    if ref is None:
        return 0
    return sum(1 for k, v in s.items() if ref.get(k) != v)


def build_pool(
    kb: KB,
    op: str,
    shape: Mapping[str, int],
    *,
    k: int = 2,
    near: KnobMapping | None = None,
    time_limit: float = 0.3,
    budget_s: float = 60.0,
    sized: int | None = None,
    screen_limit: float = 0.01,
    deadline: float | None = None,
    fill: int = 0,
) -> Pool:
    """Enumerate, class, screen and size. `near` (Candidate-0) picks each class's
    representative and breaks ties.

    The screen sizes every class: classes that share the integer problem (`sizing_key`) share
    its legal sizings, so CP-SAT sizes each sizing group once (the estimate of its class nearest
    Candidate-0, in `screen_limit` deterministic seconds), and every class of the group descends
    from there by the estimate (`screen.Screen.descend`). Classes are then ranked by that
    estimate, alternating with the nearest Candidate-0, and the first `sized` (None: all) are
    sized again by CP-SAT, each with its own model, within `budget_s` of CP-SAT's deterministic
    time (so the pool does not depend on the machine's load); the others keep their descent.
    A class CP-SAT did not size has its bound only when the doc's bound reads no integer knob
    (one value for every sizing); otherwise None. `deadline` (a `time.perf_counter()` instant;
    the exhaustive search's time limit) ends screening and sizing early, in wall time: classes
    not screened by then offer no sizing. `fill` (the guided search's budget) is the number of
    candidates the pool should offer at least: a small space (one cost class, as on VTA) gives
    its best classes further sizings, CP-SAT's next best by the estimate, up to that many, so
    the budget is spent on the estimate's best kernels rather than left unused."""
    sp = space(kb, op)
    t0 = time.perf_counter()
    sks = [s.as_dict() for s in skeletons(kb, op, shape)]
    t1 = time.perf_counter()
    rel = cost_relevant(sp)
    classes: dict[tuple[tuple[str, str], ...], CostClass] = {}
    for s in sks:
        key = tuple((n, s[n]) for n in rel)
        classes.setdefault(key, CostClass(key, [])).members.append(s)
    ref = near.as_dict() if near is not None else None
    for c in classes.values():
        c.members.sort(key=lambda s: distance(s, ref))
    est, bnd = sp.costs.get("estimate"), sp.costs.get("bound")
    bound_fixed = fixed_bound(sp)
    by_group: dict[tuple[tuple[str, str], ...], list[CostClass]] = {}
    sizing_knobs = relevant_symbolic(sp)
    for c in sorted(classes.values(), key=lambda c: (distance(c.members[0], ref), c.key)):
        by_group.setdefault(tuple((n, c.members[0][n]) for n in sizing_knobs), []).append(c)
    made: dict[tuple[object, ...], KnobMapping] = {}

    def mapping_of(c: CostClass, sizes: Mapping[str, int]) -> KnobMapping:
        key = (c.key, tuple(sorted(sizes.items())))
        m = made.get(key)
        if m is None:
            m = made[key] = sp.from_skeleton(c.members[0], sizes, shape)
        return m

    seeds = _screen(sp, shape, by_group, est.expr if est else None, screen_limit, deadline)
    group_of = {c.key: g for g, cs in by_group.items() for c in cs}
    descents = _descend(sp, shape, by_group, seeds)
    screened = {
        key: float("inf") if d is None or d.estimate is None else float(d.estimate) for key, d in descents.items()
    }

    def by_estimate(c: CostClass) -> tuple[float, int, tuple[tuple[str, str], ...]]:
        return (screened[c.key], distance(c.members[0], ref), c.key)

    def by_distance(c: CostClass) -> tuple[int, float, tuple[tuple[str, str], ...]]:
        obj, dist, key = by_estimate(c)
        return (dist, obj, key)

    # alternately the lowest screened estimate and the nearest Candidate-0: the estimate ranks
    # within a family of kernels better than across families (hardware loops against unrolled
    # streams), so the sizing goes to both
    order = interleave(sorted(classes.values(), key=by_estimate), sorted(classes.values(), key=by_distance))
    spent = 0.0
    for rank, c in enumerate(order):
        seed = seeds.get(group_of[c.key])
        if group_of[c.key] in seeds and seed is None:
            c.feasible = False  # the group's integer problem has no solution: no member has one
            continue
        d = descents[c.key]
        if (sized is not None and rank >= sized) or spent > budget_s or _past(deadline):
            c.sizings = [] if d is None else [d.sizing]  # None: not screened before the deadline
            c.bound = sp.cost("bound", mapping_of(c, c.sizings[0]), shape) if bound_fixed and c.sizings else None
            continue
        model = SizingModel(sp, shape, c.members[0])
        first = model.solve(est.expr if est else None, time_limit)
        if first is None:
            c.feasible = False
            spent += model.work
            continue
        c.sizings = [first.values]
        c.sizings += _more(model, est.expr if est else None, c.sizings, k - 1, time_limit)
        if est is not None and not first.optimal:
            c.sizings = _dedup([polish(kb, sp, shape, c.members[0], v) for v in c.sizings])
        if d is not None and d.estimate is not None and first.objective is not None and d.estimate < first.objective:
            c.sizings = _dedup([d.sizing, *c.sizings])[:k]  # CP-SAT stopped above the descent
        if bound_fixed:  # one value for every sizing: the class's minimum
            c.bound = sp.cost("bound", mapping_of(c, c.sizings[0]), shape)
        elif bnd is not None:
            low = model.solve(bnd.expr, time_limit)
            c.bound = None if low is None else low.bound
        spent += model.work
    notes = _fill(sp, shape, sorted(classes.values(), key=by_estimate), fill, deadline)
    for c in classes.values():
        if c.feasible:
            ms = [mapping_of(c, v) for v in c.sizings]
            c.offered = [Candidate(m, sp.cost("estimate", m, shape), sp.cost("bound", m, shape), "cpsat") for m in ms]
    t2 = time.perf_counter()
    return Pool(sp, dict(shape), list(classes.values()), len(sks), {"enumerate": t1 - t0, "size": t2 - t1}, near, notes)


_Group = tuple[tuple[str, str], ...]
_Screen = dict[_Group, Sizing | None]
# (space id, shape, limit, group representatives) -> (space, seeds): a process sizes a workload's pool again
# (a rerun, a test, the exhaustive search after the guided one) without screening it again
_SCREENS: Lru[Hashable, tuple[Space, _Screen]] = Lru(4)


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() > deadline


def _screen(
    sp: Space,
    shape: Mapping[str, int],
    groups: Mapping[_Group, list[CostClass]],
    objective: ex.Expr | None,
    limit: float,
    deadline: float | None = None,
) -> _Screen:
    """One sizing per sizing group, minimising the estimate of its first class (the nearest
    Candidate-0) in `limit` deterministic seconds (None: the group has no legal sizing). Groups
    not reached before `deadline` are left out; a screen cut short is not cached."""

    def screen() -> tuple[Space, _Screen]:
        out: _Screen = {}
        for g, cs in groups.items():
            if _past(deadline):
                break
            out[g] = SizingModel(sp, shape, cs[0].members[0]).solve(objective, limit)
        return sp, out

    if deadline is not None:
        return screen()[1]

    reps = tuple((g, tuple(sorted(cs[0].members[0].items()))) for g, cs in groups.items())
    key = (id(sp), tuple(sorted(shape.items())), limit, reps)
    entry = _SCREENS.get_or(key, screen)  # (get_or keeps the cache at its size)
    if entry[0] is not sp:  # the id of a space since freed
        entry = _SCREENS[key] = screen()
    return entry[1]


def _descend(
    sp: Space, shape: Mapping[str, int], groups: Mapping[_Group, list[CostClass]], seeds: _Screen
) -> dict[tuple[tuple[str, str], ...], Descent | None]:
    """Every class's sizing by the estimate's steepest descent from its group's seed (None: its
    group was not screened, or has no legal sizing). A doc whose estimate or constraints
    NumPy cannot evaluate exactly keeps each class at its seed, ranked by the scalar estimate."""
    todo = [(c, seeds[g]) for g, cs in groups.items() if seeds.get(g) is not None for c in cs]
    out: dict[tuple[tuple[str, str], ...], Descent | None] = {c.key: None for cs in groups.values() for c in cs}
    if not todo:
        return out
    try:
        screen = Screen(sp, shape)
        active = {g: [sp.active(k, cs[0].members[0], shape) for k in screen.integer] for g, cs in groups.items()}
        group_of = {c.key: g for g, cs in groups.items() for c in cs}
        found = screen.descend(
            [c.members[0] for c, _ in todo],
            [seed.values for _, seed in todo if seed is not None],
            [active[group_of[c.key]] for c, _ in todo],
        )
        out.update({c.key: d for (c, _), d in zip(todo, found, strict=True)})
    except vx.Unsupported:
        for c, seed in todo:
            assert seed is not None
            m = sp.from_skeleton(c.members[0], seed.values, shape)
            out[c.key] = Descent(dict(seed.values), sp.cost("estimate", m, shape))
    return out


def interleave(*orders: list[CostClass]) -> list[CostClass]:
    """The classes of several orders taken in turn, each once."""
    out: list[CostClass] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for group in zip(*orders, strict=True):
        for c in group:
            if c.key not in seen:
                seen.add(c.key)
                out.append(c)
    return out


def polish(
    kb: KB, sp: Space, shape: Mapping[str, int], skeleton: Mapping[str, str], sizes: Mapping[str, int], steps: int = 40
) -> dict[str, int]:
    """Greedy descent of the doc's estimate over legal single-knob edits of the integer knobs.

    CP-SAT stops at its time limit on the nonlinear estimates (bank conflicts, tile loads) often
    far from the optimum of a class; these edits (the ones the guides refine by) are evaluated in
    Python in microseconds, so a sizing CP-SAT left short is finished here."""
    integer = {k.name for k in sp.integer}
    cur = sp.from_skeleton(skeleton, sizes, shape)
    best = sp.cost("estimate", cur, shape)
    assert best is not None
    for _ in range(steps):
        step: tuple[int, KnobMapping] | None = None
        for name, value in iter_knob_edits(sp, cur, shape):
            if name not in integer:
                continue
            m = sp.mapping({**cur.as_dict(), name: value}, shape)
            e = sp.cost("estimate", m, shape)
            if e is not None and e < (step[0] if step else best) and not sp.violations(kb, m, shape):
                step = (e, m)
        if step is None:
            break
        best, cur = step
    vals = cur.as_dict()
    return {k.name: int(vals[k.name]) for k in sp.integer}


def _dedup(sizings: list[dict[str, int]]) -> list[dict[str, int]]:
    out: list[dict[str, int]] = []
    for s in sizings:
        if s not in out:
            out.append(s)
    return out


FILL_SIZINGS = 20_000  # a class with more legal sizings than this is not ranked whole
# wall seconds to enumerate one class's sizings for `fill`: only a safety net, said when it
# fires, since a pool that depended on the machine's speed would differ between two runs
FILL_SECONDS = 30.0


def _fill(
    sp: Space,
    shape: Mapping[str, int],
    ranked: list[CostClass],
    fill: int,
    deadline: float | None,
) -> list[str]:
    """Give the best-ranked classes further sizings until the pool holds `fill` (see
    `build_pool`): each class's legal sizings are enumerated (a small space has a few hundred)
    and ranked by the estimate, so the next ones offered are exactly the estimate's next best. A
    class with more than FILL_SIZINGS sizings keeps the sizing it has (a pool that large does not
    need filling); so does one CP-SAT cannot enumerate in FILL_SECONDS, which is noted (returned,
    and said on stderr)."""
    held = sum(len(c.sizings) for c in ranked if c.feasible)
    notes: list[str] = []
    for c in ranked:
        if held >= fill or _past(deadline):
            break
        if not c.feasible or not c.sizings:
            continue
        every, finished = SizingModel(sp, shape, c.members[0]).every_sizing(FILL_SECONDS, FILL_SIZINGS + 1)
        if len(every) > FILL_SIZINGS:
            continue
        if not finished:
            notes.append(
                f"{sp.op}: CP-SAT did not enumerate a class's sizings in {FILL_SECONDS:.0f} s ({len(every)} so far); "
                "the pool is not filled from it, so this run may propose other kernels than one on a less loaded machine"
            )
            warn_once(f"fill:{sp.op}", notes[-1])
            continue
        estimate = _estimates(sp, shape, c.members[0], every)
        order = sorted(range(len(every)), key=lambda i: (estimate[i], sorted(every[i].items())))
        extra = [every[i] for i in order if every[i] not in c.sizings][: fill - held]
        c.sizings += extra
        held += len(extra)
    return notes


def _estimates(
    sp: Space, shape: Mapping[str, int], skeleton: Mapping[str, str], sizings: list[dict[str, int]]
) -> list[int]:
    """The estimate of each sizing of a skeleton: in NumPy columns (`screen.Screen`), or one by
    one where the doc's expressions have no column form (a missing estimate ranks as 0)."""
    try:
        screen = Screen(sp, shape)
        sym = {
            k.name: np.full(len(sizings), vx.sym_code(str(skeleton[k.name]).lower()), dtype=np.int64)
            for k in sp.symbolic
        }
        sizes = np.array([[v[k.name] for k in screen.integer] for v in sizings], dtype=np.int64)
        return [int(e) for e in screen.evaluate(sym, sizes.reshape(len(sizings), len(screen.integer)))]
    except vx.Unsupported:
        return [sp.cost("estimate", sp.from_skeleton(skeleton, v, shape), shape) or 0 for v in sizings]


def _more(
    model: SizingModel, objective: ex.Expr | None, found: list[dict[str, int]], n: int, time_limit: float
) -> list[dict[str, int]]:
    """The next `n` best sizings: re-solve, each time excluding the sizings found so far."""
    out: list[dict[str, int]] = []
    seen = list(found)
    excluded = 0
    for _ in range(n):
        for s in seen[excluded:]:
            _exclude(model, s)
        excluded = len(seen)
        sol = model.solve(objective, time_limit)
        if sol is None:
            break
        out.append(sol.values)
        seen.append(sol.values)
    return out


def _exclude(model: SizingModel, values: Mapping[str, int]) -> None:
    """Forbid one assignment of the sized (active) integer knobs."""
    lits = []
    for name, var in model.vars.items():
        b = model.model.new_bool_var(f"ne_{name}")
        model.model.add(var != values[name]).only_enforce_if(b)
        model.model.add(var == values[name]).only_enforce_if(b.negated())
        lits.append(b)
    if lits:
        model.model.add_bool_or(lits)
