"""The cost guide (the default): Candidate-0's named siblings, then the pool in the order of the
doc's cost estimate, alternating with single-knob refinements of the best kernel so far, and
once both run dry, every other legal value of one integer knob of the best kernel."""

from __future__ import annotations

from zomboss.mapping import KnobMapping
from zomboss.solvers.guides.base import Proposal, SearchState, refinements
from zomboss.solvers.space import Candidate, SizingModel, distance
from zomboss.util import warn_once

STALE_AFTER = 3  # edits of a kernel, none faster, before the climb restarts elsewhere
# CP-SAT's wall seconds to enumerate one integer knob's legal values (a few hundred at most): only
# a safety net, said when it fires, since proposals that depended on the machine's speed would
# make two runs of one solve differ
LINE_SECONDS = 30.0


class CostGuide:
    """The doc's cost estimate decides: references first, then the pool alternating with
    single-knob refinements of the best kernel so far (best estimate first), so the search both
    samples the space and climbs from the best point it has. The pool is taken in two orders in
    turn, best estimate first and nearest Candidate-0 first (then best estimate): an estimate
    ranks kernels of one family better than it compares families."""

    name = "cost"

    def __init__(self) -> None:
        self._pool_pos = 0
        self._refs_done = False
        self._picks = 0
        self._orders: list[list[Candidate]] = []
        self._pos = [0, 0]
        self._turn = 0
        self._tries: dict[str, int] = {}  # refinements proposed from each kernel
        self._lines: dict[str, list[KnobMapping]] = {}  # each best kernel's line edits not yet proposed
        self._notes: list[str] = []

    @property
    def note(self) -> str:
        """What the guide could not do (the result's `guide_note`)."""
        return "; ".join(self._notes)

    def propose(self, state: SearchState, n: int) -> list[Proposal]:
        out: list[Proposal] = []
        seen = state.seen()
        if not self._refs_done:
            self._refs_done = True
            for name, m in state.references.items():
                if m.key() not in seen:
                    out.append(Proposal(m.as_dict(), source=name))
                    seen.add(m.key())
        while len(out) < n:
            self._picks += 1
            if self._picks % 2 == 0 or self._pool_pos >= len(state.pool):
                ref = self._refinement(state, seen)
                if ref is None and self._pool_pos >= len(state.pool):
                    ref = self._line(state, seen)
                if ref is not None:
                    out.append(Proposal(ref.as_dict(), source="refine", note="edit of the best kernel so far"))
                    seen.add(ref.key())
                    continue
                if self._pool_pos >= len(state.pool):
                    break
            c = self._next_from_pool(state, seen)
            if c is not None:
                out.append(Proposal(c.mapping.as_dict(), source="cpsat"))
                seen.add(c.mapping.key())
        return out[:n]

    def _next_from_pool(self, state: SearchState, seen: set[str]) -> Candidate | None:
        """The next unseen pool candidate, from the two orders in turn (None: pool exhausted)."""
        if not self._orders:
            home = state.default.mapping.as_dict()
            near = sorted(
                state.pool, key=lambda c: (distance(c.mapping.as_dict(), home), c.estimate or 0, c.mapping.key())
            )
            self._orders = [list(state.pool), near]
        for _ in range(2):
            order, k = self._orders[self._turn], self._turn
            self._turn = 1 - self._turn
            while self._pos[k] < len(order):
                c = order[self._pos[k]]
                self._pos[k] += 1
                if c.mapping.key() not in seen:
                    self._pool_pos += 1
                    return c
        self._pool_pos = len(state.pool)
        return None

    def _line(self, state: SearchState, taken: set[str]) -> KnobMapping | None:
        """When the pool is spent and the climb has nowhere left to go: the best kernel with one
        integer knob at any other legal value (single-knob edits only step to a neighbouring
        value), best estimate first, among those the sound bound does not rule out."""
        best = state.best().mapping
        if best.key() not in self._lines:
            self._lines[best.key()] = line_edits(state, best, self._notes)
        queue = self._lines[best.key()]
        while queue:
            m = queue.pop(0)
            if m.key() not in taken and state.can_win(m) and state.legal(m):
                return m
        return None

    def _refinement(self, state: SearchState, taken: set[str]) -> KnobMapping | None:
        """The best-estimate legal edit (one the sound bound does not rule out) of the fastest
        kernel that is still worth climbing from:
        a kernel stops being one after STALE_AFTER edits of it (none of which beat it, or the
        best would have moved), and so does every kernel one edit away from it, so the climb
        restarts from a different kernel (another family, often) rather than circling a local
        optimum."""
        stale = [
            s.mapping.as_dict()
            for s in [state.default, *state.simulated]
            if self._tries.get(s.mapping.key(), 0) >= STALE_AFTER
        ]
        for base in sorted([state.default, *state.simulated], key=lambda s: (s.cycles, s.mapping.key())):
            here = base.mapping.as_dict()
            if self._tries.get(base.mapping.key(), 0) >= STALE_AFTER or any(distance(here, x) < 2 for x in stale):
                continue
            cands = [
                m
                for m in refinements(state, base.mapping)
                if m.key() not in taken and state.can_win(m) and state.legal(m)
            ]
            if cands:
                self._tries[base.mapping.key()] = self._tries.get(base.mapping.key(), 0) + 1
                return min(cands, key=lambda m: (state.estimate(m) or 0, m.key()))
        return None


def line_edits(state: SearchState, base: KnobMapping, notes: list[str] | None = None) -> list[KnobMapping]:
    """Every legal mapping that differs from `base` in one integer knob (CP-SAT enumerates each
    knob's values with the others fixed), best estimate first. A knob whose values CP-SAT did
    not enumerate in LINE_SECONDS is said on stderr and in `notes`."""
    sp, shape = state.space, state.shape
    skeleton = dict(sp.skeleton(base))
    values = base.as_dict()
    out: dict[str, KnobMapping] = {}
    for knob in sp.integer:
        model = SizingModel(sp, shape, skeleton)
        if knob.name not in model.vars:
            continue
        for name, var in model.vars.items():
            if name != knob.name:
                model.model.add(var == int(values[name]))
        sizings, finished = model.every_sizing(LINE_SECONDS)
        if not finished:
            said = (
                f"{sp.op}: CP-SAT did not enumerate {knob.name}'s legal values in {LINE_SECONDS:.0f} s; "
                f"the search tries the {len(sizings)} found"
            )
            warn_once(f"line:{sp.op}:{knob.name}", said)
            if notes is not None:
                notes.append(said)
        for sizes in sizings:
            if sizes[knob.name] != values[knob.name]:
                m = sp.from_skeleton(skeleton, sizes, shape)
                out[m.key()] = m
    return sorted(out.values(), key=lambda m: (state.estimate(m) or 0, m.key()))
