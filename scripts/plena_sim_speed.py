"""PLENA timing-only simulation speed: full vs steady-state extrapolated (issue #11).

Per suite default: the wall time of a full timing-only run and of an extrapolated one (the
default of TIMING evaluations), the cycles error, and what was skipped; then the median and
maximum wall times, and (`--scale`) linear shapes of growing size, with their lowering time
(the program is flat: every static instruction is built) and extrapolated simulation time.

    .venv/bin/python scripts/plena_sim_speed.py [--reps 3] [--json out.json] [--scale]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from zomboss.targets.plena import TARGET
from zomboss.targets.plena.simulator import PlenaRun, simulate

from zomboss.program import Program

SCALE = ("linear:M=256,K=2048,N=2048", "linear:M=512,K=4096,N=4096", "linear:M=1024,K=4096,N=4096")


def timed(program: Program, extrapolate: bool, reps: int) -> tuple[float, PlenaRun]:
    """The best wall time of `reps` timing-only runs (the machine is shared), and the last run."""
    best, run = float("inf"), None
    for _ in range(reps):
        t0 = time.perf_counter()
        run = simulate(program, TARGET.config({}), check=False, functional=False, extrapolate=extrapolate)
        best = min(best, time.perf_counter() - t0)
    assert run is not None
    return best, run


def lowered(spec: str) -> tuple[float, Program]:
    wl = TARGET.workload(spec)
    inst = TARGET.instance(wl, {})
    t0 = time.perf_counter()
    program = TARGET.lower(inst, TARGET.reference_mappings(wl, {})["library"])
    return time.perf_counter() - t0, program


def measure(spec: str, reps: int, full: bool = True) -> dict[str, Any]:
    lower_s, program = lowered(spec)
    ext_s, ext = timed(program, True, reps)
    row: dict[str, Any] = {
        "workload": spec,
        "static": len(program),
        "instructions": ext.instructions,
        "lower_s": round(lower_s, 3),
        "ext_s": round(ext_s, 4),
        "cycles": ext.cycles["rtl"],
        "steady": ext.steady,
    }
    if full:
        full_s, f = timed(program, False, 1)
        row |= {
            "full_s": round(full_s, 4),
            "full_cycles": f.cycles["rtl"],
            "error": max(abs(ext.cycles[m] - f.cycles[m]) / f.cycles[m] for m in f.cycles),
        }
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3, help="extrapolated runs per default (best is kept)")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--scale", action="store_true", help="also the large linear shapes (lowering takes a while)")
    args = ap.parse_args()
    rows = [measure(w.id, args.reps) for w in TARGET.suite()]
    print("| default | static | executed | full s | extrapolated s | speedup | cycles error | skipped iterations |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        st = r["steady"] or {}
        print(
            f"| {r['workload']} | {r['static']:,} | {r['instructions']:,} | {r['full_s']:.3f} | {r['ext_s']:.3f} "
            f"| {r['full_s'] / r['ext_s']:.1f}x | {r['error']:.2%} | {st.get('skipped_iterations', 0):,} |"
        )
    ext, full, err = [r["ext_s"] for r in rows], [r["full_s"] for r in rows], [r["error"] for r in rows]
    print(
        f"\nextrapolated: median {statistics.median(ext):.3f} s, max {max(ext):.3f} s; "
        f"full: median {statistics.median(full):.3f} s, max {max(full):.3f} s; "
        f"cycles error: median {statistics.median(err):.2%}, max {max(err):.2%}"
    )
    if args.scale:
        print("\n| linear | static | executed (equiv.) | lower s | extrapolated s | cycles |")
        print("|---|---:|---:|---:|---:|---:|")
        for spec in SCALE:
            r = measure(spec, 1, full=False)
            rows.append(r)
            print(
                f"| {spec} | {r['static']:,} | {r['instructions']:,} | {r['lower_s']:.2f} | {r['ext_s']:.3f} "
                f"| {r['cycles']:,} |"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
