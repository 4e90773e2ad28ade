"""Candidate-0 and result records: what `default` (and, for its winner, `solve`) report.

Candidate-0 is `lower(library_default)`: the target's first reference mapping, lowered,
simulated with every rule checked and verified against NumPy. Nothing here knows a machine.
"""

from __future__ import annotations

from dataclasses import replace

from zomboss.errors import ZombossError
from zomboss.mapping import KnobMapping
from zomboss.results import KernelResult
from zomboss.target import Evaluation, Instance, Mode, Params, SampledVerifier, Target
from zomboss.util import MAX_INSTRUCTIONS, TooLargeToVerify
from zomboss.workload import Workload


def library_default(t: Target, wl: Workload, params: Params) -> KnobMapping:
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
    """The result fields of an evaluation (docs/architecture.md, "The command line") (plus its breakdown and target report)."""
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


VERIFY = ("auto", "full", "sampled", "none")
MAX_VERIFIED_INSTRUCTIONS = MAX_INSTRUCTIONS  # what `auto` still verifies functionally


def default_result(
    t: Target, wl: Workload, params: Params, verify: str = "full", samples: int = 8, seed: int = 0
) -> KernelResult:
    """Candidate-0 of `wl`: verified (`full`), timed only (`none`), timed with `samples` output
    blocks verified (`sampled`, targets that can slice a kernel), or `auto`: verified unless its
    operands are too large to allocate or its timing-only run executes more than
    MAX_VERIFIED_INSTRUCTIONS (then timed only, and the result says why)."""
    if verify not in VERIFY:
        raise ZombossError(f"--verify {verify!r}: expected one of {', '.join(VERIFY)}")
    inst = t.instance(wl, params, seed=0)
    m = library_default(t, wl, params)
    if verify == "sampled":
        return _sampled_result(t, wl, params, inst, m, samples, seed)
    reason = None
    if verify != "full":
        timed = t.evaluate(inst, m, Mode.TIMING)
        if verify == "none":
            reason = "timing only (--verify none)"
        elif timed.instructions > MAX_VERIFIED_INSTRUCTIONS:
            sampled = (
                "; --verify sampled checks a sample of its output blocks" if isinstance(t, SampledVerifier) else ""
            )
            reason = (
                f"timing only: {timed.instructions:,} executed instructions, more than the "
                f"{MAX_VERIFIED_INSTRUCTIONS:,} --verify auto simulates functionally (--verify full simulates them "
                f"all when the operands can be allocated{sampled})"
            )
    if reason is None:
        try:
            ev = t.evaluate(inst, m, Mode.VERIFIED)
        except TooLargeToVerify as e:
            if verify == "full":
                raise
            ev, reason = timed, f"timing only: {e}"
    else:
        ev = timed
    seeds = ev.report.get("verified_seeds") or [ev.seed]  # a target may verify more seeds than the one asked for
    extra: dict[str, object] = {"candidate": "library", "verify": "none" if reason else "full"}
    if reason:
        extra["verify_reason"] = reason
    sims = len(seeds) if not reason else 1
    return kernel_result(t, wl, ev, params, default_cycles=ev.cycles, simulations=sims, extra=extra)


def _sampled_result(
    t: Target, wl: Workload, params: Params, inst: Instance, m: KnobMapping, samples: int, seed: int
) -> KernelResult:
    """Timing of the whole kernel, verification of a sample of its output blocks."""
    if not isinstance(t, SampledVerifier):
        raise ZombossError(f"--verify sampled: the {t.name} target verifies whole kernels only (use full or none)")
    if samples < 1:
        raise ZombossError(f"--samples {samples}: expected at least 1")
    timed = t.evaluate(inst, m, Mode.TIMING)
    verified, report = t.verify_sampled(inst, m, samples, seed)
    extra: dict[str, object] = {"candidate": "library", "verify": "sampled", "sampled": {**report, "seed": seed}}
    res = kernel_result(t, wl, timed, params, default_cycles=timed.cycles, extra=extra)
    return replace(res, verified=verified)
