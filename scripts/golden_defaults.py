"""Regenerate tests/data/defaults_golden.json: program digest, length and cycles of every
suite default (Candidate-0), the table tests/test_defaults.py holds the code to.

Run it only when a documented fix changes a default (a timing-model fix, a lowering bug fix),
and say in the commit which instances changed and why: `--diff` prints the changes without
writing.

    .venv/bin/python scripts/golden_defaults.py [--diff] [--workers 2] [--target T]
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from zomboss.target import get_target, target_names
from zomboss.verify import default_result

OUT = Path(__file__).parents[1] / "tests" / "data" / "defaults_golden.json"


def one(job: tuple[str, str]) -> tuple[str, str, dict[str, int | str]]:
    target, wid = job
    t = get_target(target)
    wl = t.workload(wid)
    res = default_result(t, wl, {})
    if not res.verified:
        raise SystemExit(f"{target}:{wid}: the default is not verified; fix that first")
    program = t.lower(t.instance(wl, {}, 0), t.reference_mappings(wl, {})["library"])
    row: dict[str, int | str] = {"program": program.digest(), "instructions": len(program), "cycles": res.cycles}
    if res.extra.get("emu_cycles") is not None:
        row["emu_cycles"] = int(res.extra["emu_cycles"])
    return target, wid, row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--diff", action="store_true", help="print changes, write nothing")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--target", action="append", help="only these targets (others keep their rows)")
    args = ap.parse_args()
    old = json.loads(OUT.read_text()) if OUT.exists() else {}
    targets = args.target or list(target_names())
    jobs = [(t, w.id) for t in targets for w in get_target(t).suite()]
    new = {t: dict(old.get(t, {})) for t in target_names()}
    for t in targets:
        new[t] = {}
    with ProcessPoolExecutor(args.workers) as pool:
        for target, wid, row in pool.map(one, jobs):
            new[target][wid] = row
            before = old.get(target, {}).get(wid)
            if before != row:
                print(f"{target}:{wid}: {before} -> {row}")
    if not args.diff:
        OUT.write_text(json.dumps(new, indent=1) + "\n")
        print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
