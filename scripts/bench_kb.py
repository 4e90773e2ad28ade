"""Benchmark: cold build and warm (cached) load of both KBs.

Cold = parse the doc and compile the KB with an empty cache, in a fresh process (so lark's
grammar compilation is included); warm = load from the cache in a fresh process.
Prints the median of several runs of each, in seconds.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile

SNIPPET = """
import sys, time
t0 = time.perf_counter()
from zomboss.knowledge import load_kb
from zomboss.target import doc_path
for name in sys.argv[1:]:
    load_kb(doc_path(name))
print(time.perf_counter() - t0)
"""


def run(cache: str, targets: list[str]) -> float:
    env = {**os.environ, "ZOMBOSS_CACHE": cache}
    out = subprocess.run([sys.executable, "-c", SNIPPET, *targets], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main() -> None:
    targets = sys.argv[1:] or ["gemmini", "plena"]
    cold, warm = [], []
    for _ in range(5):
        with tempfile.TemporaryDirectory() as cache:
            cold.append(run(cache, targets))
            warm.append(run(cache, targets))
    print(f"KBs: {' + '.join(targets)}")
    print(
        f"cold build (both, incl. imports): median {statistics.median(cold):.3f} s  (runs: {', '.join(f'{x:.3f}' for x in cold)})"
    )
    print(
        f"warm load  (both, incl. imports): median {statistics.median(warm):.3f} s  (runs: {', '.join(f'{x:.3f}' for x in warm)})"
    )


if __name__ == "__main__":
    main()
