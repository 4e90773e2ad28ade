"""Wall time of the guided `solve` per suite instance, as a user sees it, against the committed
bench report (benchmarks/search/solve_times.md), and against the proven optimum or lower bound of
benchmarks/exhaustive/report.md (its Proofs table).

One solve at a time, instances one after another, no results store (every run searches from
scratch), the default `SolveConfig` (budget 32) with `zomboss solve`'s default jobs (`--jobs`):
for each instance the wall time, the solving process's CPU time, the wall time of each phase,
the simulations, the winner's cycles against the report's `best` and against the proven
optimum (or bound). The machine's load average is printed with the table: a loaded machine
stretches every wall time.

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

from zomboss.app.cli import solve_jobs
from zomboss.results import read_best, read_table
from zomboss.solvers.search import SolveConfig, SolveProgress, solve
from zomboss.target import get_target

PHASES = ("candidate-0", "pool", "search", "verify")  # SolveProgress.phase, in order
REPORT = Path(__file__).resolve().parents[1] / "benchmarks" / "search" / "report.md"
PROOFS = Path(__file__).resolve().parents[1] / "benchmarks" / "exhaustive" / "report.md"


def read_proofs(text: str) -> dict[tuple[str, str], tuple[bool, int]]:
    """(target, workload) -> (optimal, cycles) from a report's Proofs table: the proven optimum
    of a complete exhaustive run, else its proven lower bound."""
    out = {}
    for row in read_table(text, "| target | workload | complete |"):
        if row["optimum"] != "-":
            out[(row["target"], row["workload"])] = (True, int(row["optimum"]))
        elif row["lower bound"] != "-":
            out[(row["target"], row["workload"])] = (False, int(row["lower bound"]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("target")
    ap.add_argument("--only", nargs="+", help="these workloads only (default: the target's suite)")
    ap.add_argument("--jobs", type=int, default=None, help="simulations at once (default: as `zomboss solve`)")
    args = ap.parse_args(argv)
    jobs = solve_jobs(args.jobs)
    t = get_target(args.target)
    names = args.only or [w.id for w in t.suite()]
    best = read_best(REPORT.read_text())
    proofs = read_proofs(PROOFS.read_text())
    load = os.getloadavg()[0]
    rows, walls, cpus = [], [], []
    for name in names:
        wl = t.workload(name)
        marks: list[tuple[str, float]] = []  # (phase, elapsed when it began)

        def status(p: SolveProgress, marks: list[tuple[str, float]] = marks) -> None:
            if not marks or marks[-1][0] != p.phase:
                marks.append((p.phase, p.elapsed_s))

        t0, c0 = time.perf_counter(), time.process_time()
        r = solve(t, wl, {}, SolveConfig(jobs=jobs), status=status)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        marks.append(("end", wall))
        spent = {a: b2 - b1 for (a, b1), (_, b2) in zip(marks, marks[1:], strict=False)}
        phases = " | ".join(f"{spent.get(p, 0.0):.1f}" for p in PHASES)
        walls.append(wall)
        cpus.append(cpu)
        ref = best.get((t.name, wl.id))
        ratio = f"{r.cycles / ref:.4f}" if ref else "-"
        optimal, proven = proofs.get((t.name, wl.id), (False, 0))
        above = f"{100 * (r.cycles / proven - 1):.2f}%" if proven else "-"
        rows.append(
            f"| {wl.id} | {wall:.1f} | {cpu:.1f} | {phases} | {r.simulations} | {r.pruned} | {r.cycles} "
            f"| {ref or '-'} | {ratio} | {proven or '-'}{'' if optimal or not proven else ' (bound)'} | {above} |"
        )
        print(f"{wl.id}: {wall:.1f} s, {r.cycles} cycles", file=sys.stderr, flush=True)
    print(f"# Guided solve wall time: {t.name}\n")
    print(
        f"One solve at a time, {jobs} job(s), no store, budget 32; load average {load:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end.\n"
    )
    print(
        f"Wall time: median {statistics.median(walls):.1f} s, worst {max(walls):.1f} s; CPU time of the solving "
        f"process (its workers' not counted): median {statistics.median(cpus):.1f} s, "
        f"worst {max(cpus):.1f} s; {len(walls)} instances.\n"
    )
    print(
        "| workload | wall s | CPU s | "
        + " | ".join(f"{p} s" for p in PHASES)
        + " | simulations | pruned | cycles | report best | cycles / report | proven optimum | above it |"
    )
    print("|---|" + "---:|" * (len(PHASES) + 9))
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
