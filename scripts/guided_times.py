"""Wall time of the guided `solve` per suite instance, as a user sees it, against the committed
bench report (benchmarks/search/solve_times.md).

One process, instances one after another, no results store (every run searches from
scratch), the default `SolveConfig` (budget 32): for each instance the wall time, the time in
the CPU time, the simulations, the winner's cycles and the report's
`best` with their ratio, and the wall time of each phase of the search. The machine's load average is printed with the table: a loaded
machine stretches every wall time.

    PYTHONPATH=. .venv/bin/python scripts/guided_times.py gemmini > benchmarks/search/solve_times.md
    PYTHONPATH=. .venv/bin/python scripts/guided_times.py plena --only lin_60m_kv rms_4x384
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from zomboss.results import read_best
from zomboss.solvers.search import SolveConfig, SolveProgress, solve
from zomboss.target import get_target

PHASES = ("candidate-0", "pool", "search", "verify")  # SolveProgress.phase, in order
REPORT = Path(__file__).resolve().parents[1] / "benchmarks" / "search" / "report.md"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("target")
    ap.add_argument("--only", nargs="+", help="these workloads only (default: the target's suite)")
    args = ap.parse_args(argv)
    t = get_target(args.target)
    names = args.only or [w.id for w in t.suite()]
    best = read_best(REPORT.read_text())
    load = os.getloadavg()[0]
    rows, walls, cpus = [], [], []
    for name in names:
        wl = t.workload(name)
        marks: list[tuple[str, float]] = []  # (phase, elapsed when it began)

        def status(p: SolveProgress, marks: list[tuple[str, float]] = marks) -> None:
            if not marks or marks[-1][0] != p.phase:
                marks.append((p.phase, p.elapsed_s))

        t0, c0 = time.perf_counter(), time.process_time()
        r = solve(t, wl, {}, SolveConfig(), status=status)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        marks.append(("end", wall))
        spent = {a: b2 - b1 for (a, b1), (_, b2) in zip(marks, marks[1:], strict=False)}
        phases = " | ".join(f"{spent.get(p, 0.0):.1f}" for p in PHASES)
        walls.append(wall)
        cpus.append(cpu)
        ref = best.get((t.name, wl.id))
        ratio = f"{r.cycles / ref:.4f}" if ref else "-"
        rows.append(
            f"| {wl.id} | {wall:.1f} | {cpu:.1f} | {phases} | {r.simulations} | {r.pruned} | {r.cycles} "
            f"| {ref or '-'} | {ratio} |"
        )
        print(f"{wl.id}: {wall:.1f} s, {r.cycles} cycles", file=sys.stderr, flush=True)
    print(f"# Guided solve wall time: {t.name}\n")
    print(
        f"One process, no store, budget 32; load average {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end.\n"
    )
    print(
        f"Wall time: median {statistics.median(walls):.1f} s, worst {max(walls):.1f} s; CPU time (the wall time "
        f"on an idle machine: the search is single-threaded): median {statistics.median(cpus):.1f} s, "
        f"worst {max(cpus):.1f} s; {len(walls)} instances.\n"
    )
    print(
        "| workload | wall s | CPU s | "
        + " | ".join(f"{p} s" for p in PHASES)
        + " | simulations | pruned | cycles | report best | cycles / report |"
    )
    print("|---|" + "---:|" * (len(PHASES) + 7))
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
