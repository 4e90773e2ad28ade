"""Intent completion: the model fixes some knobs (hard) and prefers values for others; clingo's
skeletons and CP-SAT complete the rest into legal mappings, nearest the preferred values first,
then best by the doc's estimate. An impossible intent comes back with the doc rule it breaks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from zomboss.errors import ZombossError
from zomboss.knowledge import KB
from zomboss.mapping import KnobMapping, MappingError, Space
from zomboss.solvers.guides.llm.prompt import kv
from zomboss.solvers.space import SizingModel


def complete_intent(
    sp: Space,
    shape: Mapping[str, int],
    kb: KB | None,
    hard: Mapping[str, int | str],
    preferred: Mapping[str, int | str],
    n: int,
    near: KnobMapping,
    exclude: set[str],
    skeletons: Sequence[Mapping[str, str]],
    time_limit: float = 0.5,
) -> tuple[list[KnobMapping], list[str]]:
    """Up to `n` legal mappings with every hard knob as given, as close to the preferred
    values as CP-SAT finds (then best by the doc's estimate), the rest automatic."""
    sym_hard = {k: v for k, v in hard.items() if sp.knob(k).symbolic}
    int_hard = {k: v for k, v in hard.items() if not sp.knob(k).symbolic}
    sym_pref = {k: v for k, v in preferred.items() if sp.knob(k).symbolic}
    int_pref = {k: v for k, v in preferred.items() if not sp.knob(k).symbolic}
    canon = {k.name: str(k.default) for k in sp.symbolic}
    near_d = near.as_dict()
    cands = []
    for s in skeletons:
        full = {**canon, **s}
        if all(full.get(k) == v for k, v in sym_hard.items()):
            score = sum(1 for k, v in sym_pref.items() if full.get(k) == v)
            dist = sum(1 for k, v in full.items() if near_d.get(k) != v)
            cands.append((-score, dist, tuple(sorted(full.items())), full))
    cands.sort(key=lambda c: c[:3])
    diags: list[str] = []
    if not cands:
        diags.append(f"intent: no legal skeleton has {kv(sym_hard)}" + _why(sp, shape, kb, near, hard))
        return [], diags
    est = sp.costs.get("estimate")
    out: list[KnobMapping] = []
    keys = set(exclude)
    tried = 0
    for _, _, _, skel in cands:
        if len(out) >= n or tried >= 3 * n + 3:
            break
        tried += 1
        try:
            model = SizingModel(sp, shape, skel)
        except ZombossError:
            continue
        ok = True
        for k, v in int_hard.items():
            if k in model.vars:
                model.model.add(model.vars[k] == int(v))
            elif model.fixed.get(k) != v:
                ok = False
        if not ok:
            continue
        devs = []
        for k, v in int_pref.items():
            if k in model.vars:
                kn = sp.knob(k)
                d = model.model.new_int_var(0, kn.hi - kn.lo + abs(int(v)), f"dev_{k}")
                model.model.add_abs_equality(d, model.vars[k] - int(v))
                devs.append(d)
        if devs:
            model.model.minimize(sum(devs))
            first = model.solve(None, time_limit)
            if first is None:
                continue
            dev = sum(abs(first.values[k] - int(v)) for k, v in int_pref.items() if k in model.vars)
            model.model.clear_objective()
            model.model.add(sum(devs) <= dev)
        sizing = model.solve(est.expr if est else None, time_limit)
        if sizing is None:
            continue
        try:
            m = sp.from_skeleton({k: skel[k] for k in skel if k in canon}, sizing.values, shape)
        except MappingError:
            continue
        if m.key() in keys:
            continue
        keys.add(m.key())
        out.append(m)
    if not out:
        diags.append(f"intent: no new legal mapping has {kv(hard)}" + _why(sp, shape, kb, near, hard))
    return out, diags


def _why(sp: Space, shape: Mapping[str, int], kb: KB | None, near: KnobMapping, hard: Mapping[str, int | str]) -> str:
    """The doc rules Candidate-0 with the hard values breaks (a localized reason)."""
    if kb is None:
        return ""
    try:
        m = sp.mapping({**near.as_dict(), **hard}, shape, "intent")
        found = sp.violations(kb, m, shape)
    except (MappingError, ZombossError):
        return ""
    if not found:
        return ""
    v = found[0]
    return f" (applied to s0 it breaks {v.rule} [{v.doc_loc}]: {v.message}; {kv(v.values)})"
