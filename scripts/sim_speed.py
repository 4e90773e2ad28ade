"""Benchmark: timing-only simulation of every suite default, full vs steady-state extrapolated,
and the scale shapes (issue #11).

Usage: python scripts/sim_speed.py [--target gemmini|plena|all] [--no-full] [--scale] [--json OUT]

Per default: full and extrapolated cycles, their relative error, and the CPU seconds of each
(process time, so that other jobs on the machine distort it less than wall time); then the
median and slowest extrapolated times, the worst and median errors per target. `--scale` adds
the Gemmini matmul defaults of 1024^3 ... 8192x28672x8192 and the PLENA linears 192x8192x8192
(the largest whose X and Y fit the doc's VRAM) and 4096x8192x8192 (processed in row spans
stored to HBM) (extrapolated only: a full simulation of those takes minutes to hours), with the cycles/bound
ratio and equivalent instructions per second. Functional verification is not part of any
figure here (see `zomboss default --verify`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from zomboss.target import Mode, get_target, target_names

SCALE = {
    "gemmini": [
        "matmul:M=1024,N=1024,K=1024",
        "matmul:M=2048,N=2048,K=2048",
        "matmul:M=4096,N=4096,K=4096",
        "matmul:M=8192,N=28672,K=8192",
    ],
    "plena": [
        "linear:M=192,N=8192,K=8192",  # the largest linear whose X and Y fit the doc's VRAM
        "linear:M=4096,N=8192,K=8192",  # 22 row spans of 192 rows, each stored to HBM
    ],
}


def _timed(t, inst, m, extrapolate: bool):  # noqa: ANN001, ANN202
    c0 = time.process_time()
    ev = t.evaluate(inst, m, Mode.TIMING, extrapolate=extrapolate)
    return ev, time.process_time() - c0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="all", choices=[*target_names(), "all"])
    ap.add_argument("--no-full", action="store_true", help="extrapolated runs only (no errors)")
    ap.add_argument("--scale", action="store_true", help="also the scale shapes")
    ap.add_argument("--json", help="write the rows as JSON here")
    args = ap.parse_args(argv)
    names = target_names() if args.target == "all" else (args.target,)
    rows: list[dict] = []
    print(f"{'target':8} {'workload':18} {'full cycles':>12} {'extrap.':>12} {'error':>8} {'full s':>7} {'extr s':>7}")
    for name in names:
        t = get_target(name)
        for wl in t.suite():
            inst = t.instance(wl, {}, 0)
            m = t.reference_mappings(wl, {})["library"]
            fast, ts = _timed(t, inst, m, True)
            row = {"target": name, "workload": wl.id, "cycles": fast.cycles, "extrapolated_s": ts}
            if not args.no_full:
                full, tf = _timed(t, inst, m, False)
                row |= {"full_cycles": full.cycles, "full_s": tf, "error": (fast.cycles - full.cycles) / full.cycles}
            rows.append(row)
            print(
                f"{name:8} {wl.id:18} {row.get('full_cycles', 0):>12,} {fast.cycles:>12,} "
                f"{100 * row.get('error', 0):>+7.3f}% {row.get('full_s', 0):>7.3f} {ts:>7.3f}",
                flush=True,
            )
    times = [r["extrapolated_s"] for r in rows]
    print(
        f"\nextrapolated CPU s over {len(rows)} defaults: median {statistics.median(times):.3f}, max {max(times):.3f}"
    )
    for name in names:
        mine = [r for r in rows if r["target"] == name]
        line = f"{name}: median {statistics.median(r['extrapolated_s'] for r in mine):.3f} s, "
        line += f"max {max(r['extrapolated_s'] for r in mine):.3f} s"
        if not args.no_full:
            errs = [abs(r["error"]) for r in mine]
            full = [r["full_s"] for r in mine]
            line += f"; |error| worst {100 * max(errs):.3f}%, median {100 * statistics.median(errs):.3f}%"
            line += f"; full median {statistics.median(full):.3f} s, max {max(full):.3f} s"
        print(line)
    if args.scale:
        print()
        for name in names:
            t = get_target(name)
            for spec in SCALE.get(name, []):
                wl = t.workload(spec)
                inst = t.instance(wl, {}, 0)
                m = t.reference_mappings(wl, {})["library"]
                ev, ts = _timed(t, inst, m, True)
                bound = t.bound(wl, {})
                rows.append(
                    {"target": name, "workload": spec, "cycles": ev.cycles, "extrapolated_s": ts, "bound": bound}
                )
                print(
                    f"{name} {spec}: {ev.cycles:,} cycles (cycles/bound {ev.cycles / bound:.2f}), "
                    f"{ts:.2f} CPU s, {ev.instructions:,} equivalent instructions "
                    f"({ev.instructions / ts:,.0f}/s)",
                    flush=True,
                )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
