"""Run the fuzzing suite (tests/fuzz) for a while and report what it tried and found.

    scripts/fuzz.py --minutes 20              every class in turn, one process (each example
                                              runs in a forked child under a memory and a
                                              time limit)
    scripts/fuzz.py --minutes 5 --only expressions --only "mappings (gemmini)"

Prints, per class, the examples tried, their outcomes (ok, error = a clear refusal, ...) and
the defects found: a hang, an unbounded allocation, a traceback, a silent wrap-around or an
"internal inconsistency" — each with hypothesis' shrunk example. Exit 1 when any was found.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--only", action="append", default=[], metavar="CLASS")
    ap.add_argument("--chunk", type=int, default=10, help="examples per class per turn")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument("--no-slow", action="store_true", help="skip corrupted shipped docs (slow to build)")
    ap.add_argument("--verbose", action="store_true", help="print each class as it starts")
    args = ap.parse_args()

    import faulthandler
    import signal

    from hypothesis import HealthCheck, given, settings

    from tests.fuzz import props

    faulthandler.enable()

    def stop(n: int, _frame: object) -> None:  # a long run says why it stops, then stops
        print(f"fuzz: received signal {n}; stopping", flush=True)
        raise SystemExit(128 + n)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)

    table = dict(props.PROPERTIES)
    if not args.no_slow:
        table.update(props.SLOW_PROPERTIES)
    names = args.only or sorted(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        print(f"unknown class {unknown[0]!r} (classes: {', '.join(sorted(table))})", file=sys.stderr)
        return 2
    deadline = time.monotonic() + args.minutes * 60
    defects: dict[tuple[str, str], str] = {}
    turns = 0
    while time.monotonic() < deadline:
        for name in names:
            if time.monotonic() >= deadline:
                break
            strategies, prop = table[name]
            if args.verbose:
                print(f"  {name}", flush=True)
            test = settings(
                max_examples=args.chunk,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )(given(*strategies)(prop))
            try:
                test()
            except Exception as e:  # noqa: BLE001 - a defect, reported with its shrunk example
                text = "".join(traceback.format_exception_only(type(e), e)).strip()
                key = (name, text.splitlines()[0][:160] if text else type(e).__name__)
                if key not in defects:
                    defects[key] = text
                    print(f"DEFECT in {name}: {text[:2000]}", flush=True)
        turns += 1
        elapsed = args.minutes * 60 - max(0.0, deadline - time.monotonic())
        print(f"[{elapsed / 60:5.1f} min] turn {turns}: {sum(props.EXAMPLES.values())} examples", flush=True)

    print("\nclass                          examples  outcomes")
    for name in names:
        outs = {k: v for (c, k), v in sorted(props.OUTCOMES.items()) if c == name}
        shown = ", ".join(f"{k} {v}" for k, v in outs.items())
        print(f"{name:30s} {props.EXAMPLES[name]:8d}  {shown}")
    print(f"total: {sum(props.EXAMPLES.values())} examples in {args.minutes:g} min; defects found: {len(defects)}")
    for (name, head), _ in defects.items():
        print(f"  {name}: {head}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "minutes": args.minutes,
                    "examples": dict(props.EXAMPLES),
                    "outcomes": {f"{c}/{k}": v for (c, k), v in props.OUTCOMES.items()},
                    "defects": [{"class": c, "defect": t} for (c, _), t in defects.items()],
                },
                indent=2,
            )
        )
    return 1 if defects else 0


if __name__ == "__main__":
    sys.exit(main())
