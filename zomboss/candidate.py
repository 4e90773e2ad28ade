"""Candidate-0 and result records: what `default` (and, for its winner, `solve`) report.

Candidate-0 is `lower(library_default)`: the target's first reference mapping, lowered,
simulated with every rule checked and verified against NumPy. Nothing here knows a machine.
"""

from __future__ import annotations

from zomboss.mapping import Mapping
from zomboss.results import KernelResult
from zomboss.target import Evaluation, Mode, Params, Target
from zomboss.workload import Workload


def library_default(t: Target, wl: Workload, params: Params) -> Mapping:
    refs = t.reference_mappings(wl, params)
    return refs["library"]


def kernel_result(
    t: Target,
    wl: Workload,
    ev: Evaluation,
    params: Params,
    *,
    default_cycles: int | None,
    simulations: int = 1,
    wall_s: float | None = None,
    extra: dict[str, object] | None = None,
) -> KernelResult:
    """The DESIGN.md result fields of an evaluation (plus its breakdown and target report)."""
    return KernelResult(
        target=t.name,
        workload=ev.workload,
        verified=ev.verified,
        cycles=ev.cycles,
        mapping=ev.mapping.to_json(),
        simulations=simulations,
        wall_s=ev.wall_s if wall_s is None else wall_s,
        default_cycles=default_cycles,
        bound_cycles=t.bound(wl, params),
        extra={
            "mode": ev.mode.value,
            "breakdown": dict(ev.breakdown),
            "instructions": ev.instructions,
            **dict(ev.report),
            **(extra or {}),
        },
    )


def default_result(t: Target, wl: Workload, params: Params) -> KernelResult:
    """Candidate-0 of `wl`, verified."""
    inst = t.instance(wl, params, seed=0)
    ev = t.evaluate(inst, library_default(t, wl, params), Mode.VERIFIED)
    seeds = ev.report.get("verified_seeds") or [ev.seed]  # a target may verify more seeds than the one asked for
    return kernel_result(
        t, wl, ev, params, default_cycles=ev.cycles, simulations=len(seeds), extra={"candidate": "library"}
    )
