"""The whole-network benchmarks of issue 30: each (network, target) pair compiled cold (a fresh
results store) and then warm (the same store: every layer taken from it), with `zomboss
compile` as a user runs it, its report written to benchmarks/networks/<network>_<target>/, and a
summary table of both wall times, the layers verified and the network speedups.

    PYTHONPATH=. .venv/bin/python scripts/bench_networks.py > benchmarks/networks/summary.md
    PYTHONPATH=. .venv/bin/python scripts/bench_networks.py --only resnet18:vta --budget 4 --out /tmp/nets

The acceptance of issue 30: cold under 30 minutes and warm under 1 minute with 2 workers on the
project's 2-core machine, every layer verified.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAIRS = (
    ("resnet50", "gemmini"),
    ("resnet18", "vta"),
    ("bert-base", "gemmini"),
    ("smollm-135m-prefill", "plena"),
    ("smollm-135m-decode", "plena"),
    ("llama-3.2-1b-prefill", "plena"),
    ("llama-3.2-1b-decode", "plena"),
)


def compile_once(network: str, target: str, db: Path, report: Path, budget: int, workers: int) -> tuple[float, dict]:
    """One `zomboss compile` run: its wall time and its JSON answer."""
    argv = [sys.executable, "-m", "zomboss", "compile", network, "--target", target, "--db", str(db)]
    argv += ["--budget", str(budget), "--workers", str(workers), "--report", str(report), "--json"]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if not proc.stdout.strip():
        raise SystemExit(f"{network} on {target} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    return wall, json.loads(proc.stdout)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="*", default=None, metavar="NETWORK:TARGET", help="these pairs (default: all)")
    p.add_argument("--budget", type=int, default=32, help="guided-search budget per layer (default 32)")
    p.add_argument("--workers", type=int, default=2, help="layers solved at once (default 2)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "networks", help="reports folder")
    args = p.parse_args(argv)
    pairs = [tuple(x.split(":", 1)) for x in args.only] if args.only else list(PAIRS)
    print("# Whole networks (`zomboss compile`)\n")
    print(f"budget {args.budget}, {args.workers} workers, load average {os.getloadavg()[0]:.1f} at the start\n")
    print("| network | target | distinct layers | instances | verified | Candidate-0 cycles | searched cycles "
          "| speedup | cold s | warm s | not mapped |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for network, target in pairs:
        with tempfile.TemporaryDirectory(prefix="zomboss-nets-") as tmp:
            db = Path(tmp) / "zomboss.sqlite"
            report = args.out / f"{network}_{target}"
            cold, d = compile_once(network, target, db, report, args.budget, args.workers)
            # the warm run's report stays out of the committed one (its wall time is the store's)
            warm, again = compile_once(network, target, db, Path(tmp) / "warm", args.budget, args.workers)
        assert again["cycles"] == d["cycles"], f"{network} on {target}: the warm run differs"
        verified = sum(r["verified"] for r in d["layers"])
        unmapped = sum(u["count"] for u in d["unsupported"])
        speed = f"{d['speedup']:.3f}" if d["speedup"] else "-"
        print(
            f"| {network} | {target} | {d['distinct_layers']} | {d['layer_instances']} | {verified}/{len(d['layers'])} "
            f"| {d['default_cycles']:,} | {d['cycles']:,} | {speed} | {cold:.1f} | {warm:.1f} | {unmapped} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
