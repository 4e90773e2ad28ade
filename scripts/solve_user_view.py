"""The guided `zomboss solve` as a user times it, in several checkouts at once: for every suite
instance of a target, each checkout's command in turn (interleaved, so that a change in the
machine's load hits every checkout alike), each with a fresh results store, the wall time of
the whole command (start-up, search, verification, exit) and the winner's cycles. Prints a
table per instance and each checkout's median, worst and total.

    PYTHONPATH=. .venv/bin/python scripts/solve_user_view.py vta . ../filed
    PYTHONPATH=. .venv/bin/python scripts/solve_user_view.py plena . --only rope_4x64 --rounds 3

A checkout is a folder with its own `.venv` (made by its `make install`); its KB cache is kept
apart from the others' (`ZOMBOSS_CACHE`), so no checkout reads a KB another one built.

A user's Python caches each module's bytecode on the first run. Each checkout's packages are
byte-compiled before timing and the commands run without `PYTHONDONTWRITEBYTECODE`, so no
command pays for compiling source that a user's second run would not (with that variable
set and no `__pycache__`, every run recompiles every module: 0.2 s for Zomboss today).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _workloads(checkout: Path, target: str) -> list[str]:
    argv = [str(checkout / ".venv" / "bin" / "zomboss"), "workloads", target, "--json"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=checkout).stdout
    return [w["id"] for w in json.loads(out)]


def _solve(checkout: Path, target: str, workload: str, cache: Path) -> tuple[float, int | None]:
    """One `zomboss solve`, fresh store: (wall seconds, winner's cycles or None if it failed)."""
    with tempfile.TemporaryDirectory(prefix="zomboss-uv-") as tmp:
        argv = [str(checkout / ".venv" / "bin" / "zomboss"), "solve", target, workload]
        argv += ["--db", str(Path(tmp) / "z.sqlite"), "--json"]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["ZOMBOSS_CACHE"] = str(cache)
        t0 = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=checkout, env=env)
        wall = time.perf_counter() - t0
    try:
        return wall, int(json.loads(proc.stdout)["cycles"])
    except (ValueError, KeyError, TypeError):
        return wall, None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("target")
    p.add_argument("checkouts", nargs="+", type=Path, help="folders, each with its own .venv")
    p.add_argument("--only", nargs="*", default=None, metavar="WORKLOAD", help="these instances (default: the suite)")
    p.add_argument("--rounds", type=int, default=1, help="times each command runs (the table keeps the median)")
    args = p.parse_args(argv)
    checkouts = [c.resolve() for c in args.checkouts]
    for c in checkouts:
        if not (c / ".venv" / "bin" / "zomboss").exists():
            raise SystemExit(f"{c}: no .venv/bin/zomboss (run `make install` there)")
    for c in checkouts:  # the bytecode a user's first run leaves behind
        packages = [str(c / p) for p in ("zomboss", "targets") if (c / p).is_dir()]
        subprocess.run([str(c / ".venv" / "bin" / "python"), "-m", "compileall", "-q", *packages], check=True)
    names = [c.name for c in checkouts]
    workloads = args.only or _workloads(checkouts[0], args.target)
    caches = {c: Path(tempfile.gettempdir()) / f"zomboss-uv-cache-{c.name}-{abs(hash(str(c)))}" for c in checkouts}
    print(f"# `zomboss solve {args.target}` as a user times it\n")
    print(f"{args.rounds} round(s), a fresh store per command, load average {os.getloadavg()[0]:.1f} at the start\n")
    print("| workload | " + " | ".join(f"{n} s | {n} cycles" for n in names) + " |")
    print("|---|" + "---:|---:|" * len(names))
    walls: dict[Path, list[float]] = {c: [] for c in checkouts}
    for w in workloads:
        got: dict[Path, list[tuple[float, int | None]]] = {c: [] for c in checkouts}
        for _ in range(args.rounds):
            for c in checkouts:
                got[c].append(_solve(c, args.target, w, caches[c]))
        cells = []
        for c in checkouts:
            wall = statistics.median(s for s, _ in got[c])
            walls[c].append(wall)
            cycles = got[c][-1][1]
            cells += [f"{wall:.2f}", f"{cycles:,}" if cycles is not None else "failed"]
        print(f"| {w} | " + " | ".join(cells) + " |", flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end\n")
    print("| checkout | median s | worst s | total s |")
    print("|---|---:|---:|---:|")
    for c in checkouts:
        v = walls[c]
        print(f"| {c.name} | {statistics.median(v):.2f} | {max(v):.2f} | {sum(v):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
