"""The LLM guide against a hostile endpoint, over whole suites: every instance must still end
with a verified kernel, say that its guide fell back, and the API key must appear nowhere.

    .venv/bin/python scripts/llm_hostile.py [--suite all] [--budget 4] [--workers 2] [--db FILE]

A loopback chat-completions server (tests/llm/server.py) answers every request with the next
of: HTTP 500, HTTP 429 with Retry-After, undecodable bytes, prose, truncated JSON, a dropped
connection, illegal mappings (unknown knobs, out-of-domain values, values the doc's
constraints forbid), an empty `choices` list, and an answer slower than the client's timeout.
`zomboss bench --guide llm` runs as a subprocess against it with a planted OPENAI_API_KEY;
the script then reads the results store and checks, per instance: verified, the guide's note
says it fell back; and that the key is in none of stdout, stderr, the store, the report or
the recordings. With a store shared with an earlier cost-guided bench, simulations already
done are reused (trials are keyed by mapping, not guide), so the run costs little more than
the fallbacks' new candidates.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KEY = "sk-hostile-PLANTED-KEY-5f1e2d3c4b5a69788796a5b4"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default="all")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--budget", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--db", default=None, help="results store (default: a fresh temporary one)")
    ap.add_argument("--timeout", type=float, default=1.0, help="the client's --llm-timeout")
    args = ap.parse_args()

    from tests.llm.server import Loopback, drop, illegal, raw, reply, sleep, status

    served: Counter[str] = Counter()
    actions = [
        ("http500", lambda b, i: status(500)),
        ("http429", lambda b, i: status(429, {"Retry-After": "0"})),
        ("bytes", lambda b, i: raw(b"\x00\xffnot json")),
        ("prose", lambda b, i: reply("I think you should try a bigger tile!")),
        ("truncated", lambda b, i: raw('{"choices": [{"message": {"content": "{\\"form\\": \\"rank')),
        ("drop", lambda b, i: drop()),
        ("illegal", illegal),
        ("no-choices", lambda b, i: {"json": {"id": "x", "object": "chat.completion", "choices": []}}),
        ("timeout", lambda b, i: sleep(args.timeout + 2.0)),
    ]

    def hostile(body: dict[str, Any], i: int) -> dict[str, Any]:
        name, act = actions[i % len(actions)]
        served[name] += 1
        return act(body, i)

    work = Path(tempfile.mkdtemp(prefix="zomboss-hostile-"))
    db = Path(args.db) if args.db else work / "results.sqlite"
    report = work / "report"
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    t0 = time.perf_counter()
    with Loopback(hostile) as srv:
        cmd = [sys.executable, "-m", "zomboss", "bench", "--suite", args.suite, "--guide", "llm"]
        cmd += ["--budget", str(args.budget), "--workers", str(args.workers), "--db", str(db)]
        cmd += ["--report", str(report), "--llm-base-url", srv.base_url, "--llm-model", "hostile"]
        cmd += ["--llm-timeout", str(args.timeout), "--llm-record", str(work / "run.jsonl"), "--json"]
        for w in args.only:
            cmd += ["--only", w]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - t0
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        print(proc.stdout[-2000:], proc.stderr[-4000:], sep="\n")
        print("the bench did not print its JSON result")
        return 1
    rows = out["results"]
    leaks = [str(p) for p in [db, *work.rglob("*")] if p.is_file() and KEY.encode() in p.read_bytes()]
    leaks += [name for name, text in (("stdout", proc.stdout), ("stderr", proc.stderr)) if KEY in text]
    bad = [r for r in rows if not r["verified"] or not r["fell_back"]]
    print(f"hostile endpoint: {sum(served.values())} requests answered: {dict(served)}")
    for target in dict.fromkeys(r["target"] for r in rows):
        sub = [r for r in rows if r["target"] == target]
        print(
            f"{target}: {len(sub)} instances, {sum(r['verified'] for r in sub)} verified, "
            f"{sum(r['fell_back'] for r in sub)} say the guide fell back, "
            f"{sum(1 for r in sub if (r['speedup'] or 0) > 1.0)} faster than Candidate-0"
        )
    for r in bad:
        print(
            f"  FAIL {r['target']}:{r['workload']}: verified={r['verified']} fell_back={r['fell_back']} {r['error'] or ''}"
        )
    print(f"key found in: {', '.join(leaks) if leaks else 'nothing'}; bench exit {proc.returncode}; wall {wall:.0f} s")
    print(f"store {db}; report {report / 'report.md'}")
    return 0 if rows and not bad and not leaks and proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
