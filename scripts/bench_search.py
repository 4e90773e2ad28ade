"""Search-side benchmarks, measured in one run on this machine:

* skeleton enumeration time (clingo) of every suite instance (the goal is < 1 s each);
* the doc cost estimate's Spearman rank correlation with simulated cycles, per op family
  (random pool candidates of each family's smallest suite instance, timing-only);
* the doc bound against simulated cycles on the same candidates (a violation is a bug).

    .venv/bin/python scripts/bench_search.py [--samples 24] [--target T]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from ranking import spearman

from zomboss.solvers.space import build_pool, skeletons
from zomboss.target import Mode, get_target, target_names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=24)
    ap.add_argument("--target", action="append")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    for name in args.target or target_names():
        t = get_target(name)
        kb = t.kb({})
        times = []
        for wl in t.suite():
            t0 = time.perf_counter()
            n = sum(1 for _ in skeletons(kb, wl.op, wl.shape))
            times.append((time.perf_counter() - t0, wl.id, n))
        worst = max(times)
        print(
            f"{name}: enumeration of {len(times)} instances: median {statistics.median(x[0] for x in times):.3f} s, "
            f"worst {worst[0]:.3f} s ({worst[1]}, {worst[2]} skeletons)"
        )
        ops: dict[str, object] = {}
        for wl in t.suite():
            cur = ops.get(wl.op)
            if cur is None or t.bound(wl, {}) < t.bound(cur, {}):  # type: ignore[arg-type]
                ops[wl.op] = wl
        for op, wl in ops.items():
            inst = t.instance(wl, {}, 0)  # type: ignore[arg-type]
            pool = build_pool(kb, op, wl.shape, k=2, near=t.reference_mappings(wl, {})["library"], budget_s=8)  # type: ignore[attr-defined]
            # one point per distinct mapping: classes of an op without integer knobs repeat theirs
            cands = list({c.mapping: c for c in pool.candidates()}.values())
            sample = rng.sample(cands, min(args.samples, len(cands)))
            est, cyc, broken = [], [], 0
            for c in sample:
                ev = t.evaluate(inst, c.mapping, Mode.TIMING)
                if c.estimate is not None:
                    est.append(c.estimate)
                    cyc.append(ev.cycles)
                if c.bound is not None and c.bound > ev.cycles:
                    broken += 1
            rho = spearman(est, cyc) if est else float("nan")
            print(
                f"  {op} ({wl.id}): {len(sample)} candidates, Spearman(estimate, cycles) = {rho:.2f}, "  # type: ignore[attr-defined]
                f"bound violations: {broken}"
            )


if __name__ == "__main__":
    main()
