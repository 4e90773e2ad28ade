"""Verification of a PLENA kernel against its golden reference (reference §6).

A kernel passes when, on every seed,
* PLENA's own gate holds: at least 90 % of output elements satisfy
  |sim − golden| <= 0.2 + 0.2·|golden| (PLENA's `check_mem` defaults);
* the strict gate holds: every element satisfies |sim − golden| <= 0.05·std(golden) + 0.05·|golden|;
* the output has no NaN or Inf;
* nothing outside the declared output and work regions of VRAM changed, and HBM is intact
  (every kernel here reads HBM and leaves its result in VRAM, as PLENA's tests do, except a
  linear too large for VRAM, which stores its result to the HBM output its layout declares).

A result stored to HBM went through PLENA's MXFP8 quantizer, so it is compared with the
golden reference after the same quantizer (`mx_fake_quant`), and each element's tolerance
grows by one MX code spacing (the coarser of the two values' grids, `mx_spacing`): two BF16
values a unit apart that straddle a rounding boundary land on neighbouring codes.

Legality and timing do not depend on the data (addresses and trip counts are fixed by
the program), so the first seed runs with the doc's rule checker and both timing modes and
the other seeds run unchecked and untimed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from . import hbm as H
from .instance import PlenaInstance
from .layout import Kernel, KernelLayout
from .numerics import mx_fake_quant, mx_spacing
from .run import PlenaRun
from .simulator import simulate

PLENA_ATOL = 0.2
PLENA_RTOL = 0.2
PLENA_MIN_RATE = 0.9
STRICT_STD = 0.05
STRICT_RTOL = 0.05
MODES = ("rtl", "emu")


@dataclass(frozen=True)
class Gate:
    """One acceptance criterion on one output: the share of elements within tolerance."""

    name: str
    passed: bool
    match_rate: float
    required_rate: float
    tolerance: str


@dataclass(frozen=True)
class SeedCheck:
    seed: int
    plena: Gate
    strict: Gate
    finite: bool
    untouched: bool
    untouched_detail: str
    max_abs_err: float
    mse: float

    @property
    def passed(self) -> bool:
        return self.plena.passed and self.strict.passed and self.finite and self.untouched

    def reason(self) -> str:
        why = []
        if not self.finite:
            why.append("NaN/Inf in the output")
        for g in (self.plena, self.strict):
            if not g.passed:
                why.append(
                    f"{g.name} gate: {g.match_rate:.2%} of elements within {g.tolerance} (< {g.required_rate:.0%})"
                )
        if not self.untouched:
            why.append(self.untouched_detail)
        return f"seed {self.seed}: " + "; ".join(why) if why else ""


@dataclass(frozen=True)
class Verification:
    """The checks of every seed and the timed, rule-checked run of the first one."""

    checks: tuple[SeedCheck, ...]
    run: PlenaRun

    @property
    def verified(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def reason(self) -> str:
        return "; ".join(c.reason() for c in self.checks if not c.passed)

    def to_json(self) -> dict[str, Any]:
        return {
            "verified": self.verified,
            "seeds": [{**asdict(c), "passed": c.passed} for c in self.checks],
        }


def plena_gate(out: np.ndarray, ref: np.ndarray, slack: np.ndarray | float = 0.0) -> Gate:
    """`slack`: per-element extra tolerance (an MXFP8 output's code spacing, else 0)."""
    ok = np.abs(out - ref) <= PLENA_ATOL + PLENA_RTOL * np.abs(ref) + slack
    rate = float(np.mean(ok)) if ok.size else 1.0
    tol = f"atol={PLENA_ATOL} + rtol={PLENA_RTOL}" + (" + one MX code" if np.any(slack) else "")
    return Gate("plena", rate >= PLENA_MIN_RATE, rate, PLENA_MIN_RATE, tol)


def strict_gate(out: np.ndarray, ref: np.ndarray, slack: np.ndarray | float = 0.0) -> Gate:
    std = float(np.std(ref)) if ref.size else 0.0
    ok = np.abs(out - ref) <= STRICT_STD * std + STRICT_RTOL * np.abs(ref) + slack
    rate = float(np.mean(ok)) if ok.size else 1.0
    tol = f"{STRICT_STD}*std(golden)={STRICT_STD * std:.3g} + rtol={STRICT_RTOL}"
    return Gate("strict", rate >= 1.0, rate, 1.0, tol + (" + one MX code" if np.any(slack) else ""))


def result(run: PlenaRun, layout: KernelLayout) -> np.ndarray:
    """A run's output: the VRAM tensor, or the HBM tensor a kernel stored its result to."""
    if layout.hbm_output is not None:
        h = layout.hbm_output
        return run.hbm_tensor(h.base, h.rows, h.cols)
    o = layout.output
    return run.vram_tensor(o.base, o.rows, o.cols, o.phys_rows)


def expected(layout: KernelLayout, ref: np.ndarray) -> np.ndarray:
    """The golden reference as the kernel's output holds it (MXFP8-quantized when in HBM)."""
    return mx_fake_quant(ref) if layout.hbm_output is not None else ref


def slack(layout: KernelLayout, out: np.ndarray, ref: np.ndarray) -> np.ndarray | float:
    """Extra per-element tolerance: one MX code spacing for an HBM output (module doc), else 0."""
    if layout.hbm_output is None:
        return 0.0
    with np.errstate(invalid="ignore"):
        return np.maximum(mx_spacing(np.nan_to_num(out)), mx_spacing(ref))


def untouched(run: PlenaRun, layout: KernelLayout, hbm0: H.Hbm) -> tuple[bool, str]:
    """Whether VRAM outside the declared regions is still zero and HBM is unchanged (but for
    a declared HBM output)."""
    vram = run.vram
    keep = np.ones(vram.size, dtype=bool)
    for lo, hi in layout.writable():
        keep[lo:hi] = False
    dirty = np.flatnonzero(keep & (vram != 0))
    if dirty.size:
        return False, f"VRAM outside the declared regions was written ({dirty.size} elements, first at {int(dirty[0])})"
    before, after = hbm0.array(), run.hbm.array()
    n = max(before.size, after.size)
    b = np.zeros(n, np.uint8)
    a = np.zeros(n, np.uint8)
    b[: before.size] = before
    a[: after.size] = after
    changed = a != b
    h = layout.hbm_output
    if h is not None:
        changed[h.base : h.base + h.nbytes] = False
    diff = np.flatnonzero(changed)
    if diff.size:
        where = "outside the declared HBM output" if h is not None else "outputs are declared in VRAM only"
        return False, f"HBM changed ({diff.size} bytes, first at {int(diff[0])}); {where}"
    return True, ""


def check_output(seed: int, run: PlenaRun, layout: KernelLayout, ref: np.ndarray, hbm0: H.Hbm) -> SeedCheck:
    out = result(run, layout)
    ref = expected(layout, ref)
    finite = bool(np.all(np.isfinite(out)))
    err = np.abs(out.astype(np.float64) - ref.astype(np.float64))
    clean, detail = untouched(run, layout, hbm0)
    extra = slack(layout, out, ref)
    return SeedCheck(
        seed=seed,
        plena=plena_gate(out, ref, extra),
        strict=strict_gate(out, ref, extra),
        finite=finite,
        untouched=clean,
        untouched_detail=detail,
        max_abs_err=float(np.nanmax(err)) if err.size else 0.0,
        mse=float(np.nanmean(err**2)) if err.size else 0.0,
    )


def output_diff(run: PlenaRun, layout: KernelLayout, ref: np.ndarray, max_rows: int = 16) -> dict[str, Any]:
    """How close a run's output is to the reference, without revealing the reference: the
    share of output elements within the strict gate's tolerance (`match_fraction`) and, for
    the first `max_rows` rows with a mismatch, the row, its largest absolute error and how
    many of its elements miss (`diff`)."""
    out32, ref32 = result(run, layout), expected(layout, ref)
    out, ref64 = out32.astype(np.float64), ref32.astype(np.float64)
    std = float(np.std(ref64)) if ref64.size else 0.0
    err = np.abs(out - ref64)
    bad = ~(err <= STRICT_STD * std + STRICT_RTOL * np.abs(ref64) + slack(layout, out32, ref32))  # NaN/Inf miss
    match = float(1.0 - np.mean(bad)) if bad.size else 1.0
    rows = []
    for r in np.flatnonzero(bad.any(axis=1))[:max_rows]:
        row_err = err[r]
        worst = float(np.nanmax(row_err)) if np.isfinite(row_err).any() else float("inf")
        rows.append({"row": int(r), "max_abs_err": worst, "mismatching": int(bad[r].sum())})
    return {"match_fraction": match, "mismatching_rows": int(bad.any(axis=1).sum()), "diff": rows}


def verify(
    kernel: Kernel,
    instances: Sequence[PlenaInstance],
    modes: Sequence[str] = MODES,
    max_instructions: int | None = None,
) -> Verification:
    """Simulate `kernel` on every instance's inputs and check it against its golden reference:
    the first functionally, timed and checked against the doc's rules (raising IllegalProgram
    when the program breaks one), the others functionally only (legality and timing do not
    depend on the data)."""
    checks: list[SeedCheck] = []
    first: PlenaRun | None = None
    for i, inst in enumerate(instances):
        hbm0, fp = inst.staged(kernel.layout)
        run = simulate(
            kernel.program,
            inst.cfg,
            hbm0,
            fpsram_init=fp,
            modes=modes if i == 0 else (),
            check=i == 0,
            max_instructions=max_instructions,
        )
        first = first or run
        checks.append(check_output(inst.seed, run, kernel.layout, inst.reference, hbm0))
    assert first is not None, "at least one instance"
    return Verification(tuple(checks), first)
