"""PLENA timing-only simulation speed: full vs steady-state extrapolated (issue #11).

Per suite default: the wall time of a full timing-only run and of an extrapolated one (the
default of TIMING evaluations), the cycles error, and what was skipped; then the median and
maximum wall times; (`--random N`) the agreement on random legal mappings of every op family
and whether any pair more than 2% apart is reordered; and (`--scale`) linear shapes of growing size, with their lowering time
(the program is flat: every static instruction is built) and extrapolated simulation time.

    .venv/bin/python scripts/plena_sim_speed.py [--reps 3] [--json out.json] [--scale] [--random N]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from typing import Any

from zomboss.targets.plena import TARGET
from zomboss.targets.plena.run import PlenaRun
from zomboss.targets.plena.simulator import simulate

from zomboss.program import Program

# Random legal mappings per op family (`--random N`): shapes whose loops are long enough to extrapolate.
FAMILIES = {
    "linear": ("linear:M=68,K=320,N=256", "linear:M=128,K=512,N=128"),
    "rmsnorm": ("rmsnorm:rows=64,hidden=1024", "rmsnorm:rows=16,hidden=192"),
    "softmax": ("softmax:rows=64,cols=512", "softmax:rows=68,cols=256"),
    "ffn": ("ffn:rows=32,hidden=192,inter=256", "ffn:rows=16,hidden=64,inter=128"),
    "attention": ("attention:sq=128,skv=256", "attention:sq=256,skv=256,causal=1"),
    "rope": ("rope:rows=64,head_dim=512", "rope:rows=16,head_dim=128"),
}
SCALE = ("linear:M=64,K=4096,N=4096", "linear:M=448,K=4096,N=4096")  # legal: X and Y fit VRAM, operands < 256 MiB


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


def random_agreement(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """`n` random legal mappings per family (integer knobs 1..8): full vs extrapolated cycles."""
    from zomboss.mapping import space

    rng = random.Random(seed)
    kb = TARGET.kb({})
    rows = []
    for op, specs in FAMILIES.items():
        sp = space(kb, op)
        done = tries = 0
        while done < n and tries < 50 * n:
            tries += 1
            wl = TARGET.workload(rng.choice(specs))
            vals = {k.name: rng.choice(k.values) if k.values else rng.randint(1, 8) for k in sp.knobs}
            m = sp.mapping(vals, wl.shape)
            if sp.violations(kb, m, wl.shape):
                continue
            program = TARGET.lower(TARGET.instance(wl, {}), m)
            full_s, f = timed(program, False, 1)
            ext_s, e = timed(program, True, 1)
            err = max(abs(e.cycles[k] - f.cycles[k]) / f.cycles[k] for k in f.cycles)
            rows.append({"op": op, "workload": wl.id, "mapping": m.key(), "full": f.cycles["rtl"],
                         "ext": e.cycles["rtl"], "error": err, "full_s": full_s, "ext_s": ext_s})  # fmt: skip
            done += 1
    return rows


def ranking_violations(rows: list[dict[str, Any]]) -> tuple[int, int]:
    """(pairs of the same workload more than 2% apart in full simulation, of them reordered)."""
    pairs = bad = 0
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            if a["workload"] == b["workload"] and abs(a["full"] - b["full"]) > 0.02 * min(a["full"], b["full"]):
                pairs += 1
                bad += (a["full"] < b["full"]) != (a["ext"] < b["ext"])
    return pairs, bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3, help="extrapolated runs per default (best is kept)")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--scale", action="store_true", help="also the large linear shapes (lowering takes a while)")
    ap.add_argument("--random", type=int, default=0, metavar="N", help="also N random legal mappings per family")
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
    if args.random:
        rnd = random_agreement(args.random)
        errs = [r["error"] for r in rnd]
        pairs, bad = ranking_violations(rnd)
        print(f"\nrandom legal mappings: {len(rnd)}; cycles error median {statistics.median(errs):.3%}, "
              f"max {max(errs):.3%}; pairs > 2% apart {pairs}, reordered {bad}")  # fmt: skip
        for op in FAMILIES:
            e = [r["error"] for r in rnd if r["op"] == op]
            print(f"  {op}: {len(e)} mappings, max error {max(e):.3%}")
        rows += rnd
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
