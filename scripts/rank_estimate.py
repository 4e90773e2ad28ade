"""How well the doc's cost estimate ranks legal mappings, per instance and per op family.

A fixed random sample of legal mappings per instance (drawn without any cost model:
`scripts/ranking.py`) is simulated timing-only once (the cycles are cached in
`--cache`, keyed by target code and mapping, so a changed estimate is re-scored without
re-simulating), and Spearman's rho of estimate against cycles is printed overall and per value
of `--by` knobs. A bound above the simulated cycles is reported as a violation (a bug).

    .venv/bin/python scripts/rank_estimate.py --target gemmini odd_pad conv_s2 [--samples 120]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path
from typing import Any

from ranking import random_mappings, spearman

from zomboss.mapping import space
from zomboss.target import Mode, get_target, target_package


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workloads", nargs="+")
    ap.add_argument("--target", default="gemmini")
    ap.add_argument("--samples", type=int, default=120)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--by", action="append", default=[], help="also report per value of this knob")
    ap.add_argument("--cache", type=Path, default=Path(".cache-rank"))
    ap.add_argument("--json", type=Path, help="write the per-instance figures here")
    args = ap.parse_args()
    t = get_target(args.target)
    kb = t.kb({})
    args.cache.mkdir(parents=True, exist_ok=True)
    # the simulator, not the doc, decides the cycles: a changed estimate reuses them
    code = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(target_package(t.name).rglob("*.py")))).hexdigest()
    out = []
    for spec in args.workloads:
        wl = t.workload(spec)
        sp = space(kb, wl.op)
        key = hashlib.sha256(f"{t.name}|{wl.id}|{args.samples}|{args.seed}|{code}".encode()).hexdigest()[:16]
        path = args.cache / f"{t.name}-{wl.id}-{key}.json"
        cache: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        cycles: dict[str, int] = cache.setdefault("cycles", {})
        inst = t.instance(wl, {}, 0)
        if "sample" not in cache:
            c0 = t.reference_mappings(wl, {})["library"]
            cycles[c0.key()] = t.evaluate(inst, c0, Mode.TIMING).cycles
            # the mappings a search cannot prune against Candidate-0
            sample = random_mappings(kb, wl.op, wl.shape, args.samples, args.seed, below=cycles[c0.key()])
            cache["sample"] = [c0.to_json()] + [m.to_json() for m in sample if m.key() != c0.key()]
        t0 = time.perf_counter()
        rows = []
        for js in cache["sample"]:
            m = sp.mapping(js["knobs"], wl.shape)
            if m.key() not in cycles:
                cycles[m.key()] = t.evaluate(inst, m, Mode.TIMING).cycles
                path.write_text(json.dumps(cache))
            rows.append((m, cycles[m.key()], sp.cost("estimate", m, wl.shape), sp.cost("bound", m, wl.shape)))
        path.write_text(json.dumps(cache))
        rho = spearman([r[2] or 0 for r in rows], [r[1] for r in rows])
        broken = sum(1 for r in rows if r[3] is not None and r[3] > r[1])
        best = min(rows, key=lambda r: r[1])
        top = min(rows, key=lambda r: (r[2] or 0, r[1]))
        print(
            f"{t.name}:{wl.id} ({wl.op}): {len(rows)} mappings, Spearman {rho:.3f}; best simulated {best[1]}, "
            f"best-estimated simulates {top[1]} ({top[1] / best[1]:.2f}x); bound violations {broken} "
            f"[{time.perf_counter() - t0:.0f} s]"
        )
        fig = {"target": t.name, "workload": wl.id, "op": wl.op, "n": len(rows), "spearman": rho, "by": {}}
        for knob in args.by:
            for v in sorted({str(r[0][knob]) for r in rows}):
                sub = [r for r in rows if str(r[0][knob]) == v]
                r_v = spearman([r[2] or 0 for r in sub], [r[1] for r in sub])
                fig["by"][f"{knob}={v}"] = {"n": len(sub), "spearman": r_v}
                print(f"    {knob}={v}: {len(sub)} mappings, Spearman {r_v:.3f}, best {min(r[1] for r in sub)}")
        out.append(fig)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
