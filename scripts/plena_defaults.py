"""Candidate-0 for every PLENA suite instance: simulate (rtl + emu), verify on two seeds, report;
and the timing-only evaluation of the same kernel, to compare the simulator's modes.

Usage: python scripts/plena_defaults.py [--json OUT] [--no-timing] [ID ...]

Prints one line per instance (cycles under both timing modes, the lower bound, executed
instructions, simulation throughput, gate figures per seed, and the wall time of a
timing-only evaluation next to the verified one) and the totals; exits 1 if any instance
fails verification or if a timing-only run disagrees with the verified run's cycles.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from zomboss.target import Mode, get_target
from zomboss.verify import default_result, library_default


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ids", nargs="*", help="suite ids (default: the whole suite)")
    ap.add_argument("--json", help="write every KernelResult as JSON to this file")
    ap.add_argument("--no-timing", action="store_true", help="skip the timing-only evaluations")
    args = ap.parse_args(argv)
    t = get_target("plena")
    wls = [t.workload(i) for i in args.ids] if args.ids else list(t.suite())
    rows = []
    failed = []
    t_all = time.perf_counter()
    print(
        f"{'id':18} {'ok':>3} {'rtl':>10} {'emu':>10} {'bound':>9} {'instrs':>9} {'wall_s':>7} {'kinstr/s':>8} "
        f"{'timing_s':>8}  plena/strict per seed"
    )
    for wl in wls:
        r = default_result(t, wl, {})
        d = r.to_json()
        rows.append(d)
        rate = d["instructions"] / max(d["sim_wall_s"], 1e-9) / 1000
        gates = " ".join(f"{s['plena']['match_rate']:.3f}/{s['strict']['match_rate']:.3f}" for s in d["gates"])
        timing = "-"
        if not args.no_timing:
            ev = t.evaluate(t.instance(wl, {}), library_default(t, wl, {}), Mode.TIMING)
            timing = f"{ev.wall_s:.2f}"
            if (ev.cycles, ev.report["emu_cycles"]) != (r.cycles, d["emu_cycles"]):
                failed.append(f"{wl.id} (timing-only cycles differ)")
        print(
            f"{wl.id:18} {'yes' if r.verified else 'NO':>3} {r.cycles:>10} {d['emu_cycles']:>10} {r.bound_cycles:>9} "
            f"{d['instructions']:>9} {r.wall_s:>7.2f} {rate:>8.0f} {timing:>8}  {gates}",
            flush=True,
        )
        if not r.verified:
            failed.append(wl.id)
    total = time.perf_counter() - t_all
    print(f"total wall {total:.1f} s for {len(wls)} instances; failed: {failed or 'none'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
