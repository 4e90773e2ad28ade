"""VTA: the guided search on every ResNet-18 layer of the suite, next to TopHub's tuned timings.

Usage: python scripts/vta_tophub.py [--budget N] [--db FILE] [--json OUT]

Per layer: Candidate-0 (TopHub's schedule for the layer, lowered by Zomboss) and the verified
winner of `zomboss solve vta` (cost guide), their cycles and breakdowns, the speedup, and both
converted to milliseconds at VTA's 100 MHz Pynq clock next to TopHub's measured milliseconds.
TopHub's figure is a reference point, not a baseline: it was measured on a board, for a whole
run through TVM's runtime (driver and cache-flush overheads included), while ours are cycles of
Zomboss's generic VTA timing model, whose constants are estimates (not fitted to a board).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path

from zomboss.targets.vta.suite import TOPHUB, TOPHUB_ID

from zomboss.results import Store
from zomboss.solvers.search import SolveConfig, solve
from zomboss.target import get_target

CLOCK_HZ = 100e6  # VTA on the Pynq-Z1 (the TopHub log's `pynq_1x16_i8w8a32_15_15_18_17` target)
PARTS = ("compute", "memory", "stall", "overhead")


def _parts(bd: dict[str, int]) -> str:
    return " / ".join(f"{bd.get(k, 0):,}" for k in PARTS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=32)
    ap.add_argument("--db", help="results store (default: a temporary one)")
    ap.add_argument("--json", help="write the rows as JSON here")
    args = ap.parse_args(argv)
    t = get_target("vta")
    db = Path(args.db) if args.db else Path(tempfile.mkdtemp()) / "vta.sqlite"
    store = Store(db)
    rows = []
    print("| layer | Candidate-0 cycles | best cycles | speedup | breakdown C-0 (compute / memory / stall / overhead) "
          "| breakdown best | C-0 ms @100 MHz | best ms @100 MHz | TopHub ms (board) |")  # fmt: skip
    print("|---|---:|---:|---:|---|---|---:|---:|---:|")
    for wl in t.suite():
        if wl.id not in TOPHUB_ID:
            continue
        res = solve(t, wl, {}, SolveConfig(budget=args.budget), store=store)
        assert res.verified, f"{wl.id}: the search returns verified kernels only"
        ms_tophub = TOPHUB[TOPHUB_ID[wl.id]][-1]
        row = {
            "layer": TOPHUB_ID[wl.id],
            "workload": wl.id,
            "default_cycles": res.default_cycles,
            "cycles": res.cycles,
            "speedup": res.speedup,
            "breakdown_default": dict(res.breakdown_default),
            "breakdown": dict(res.breakdown_best),
            "default_ms": 1e3 * res.default_cycles / CLOCK_HZ,
            "ms": 1e3 * res.cycles / CLOCK_HZ,
            "tophub_ms": ms_tophub,
        }
        rows.append(row)
        print(
            f"| {row['layer']} | {res.default_cycles:,} | {res.cycles:,} | {res.speedup:.3f} "
            f"| {_parts(row['breakdown_default'])} | {_parts(row['breakdown'])} "
            f"| {row['default_ms']:.3f} | {row['ms']:.3f} | {ms_tophub:.3f} |",
            flush=True,
        )
    store.close()
    geo = math.exp(sum(math.log(r["speedup"]) for r in rows) / len(rows))
    ratio = math.exp(sum(math.log(r["default_ms"] / r["tophub_ms"]) for r in rows) / len(rows))
    print(
        f"\ngeomean speedup over Candidate-0 {geo:.3f}x; Candidate-0 modelled / TopHub measured {ratio:.2f} (geomean)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
