"""Benchmark: cold build and warm (cached) load of both KBs.

Cold = parse both docs and compile their KBs with an empty cache folder, in a fresh process
(so lark's grammar analysis is included); warm = load both from the cache in a fresh
process. Module import time is measured separately. Prints medians of several runs.
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
t1 = time.perf_counter()
for name in sys.argv[1:]:
    load_kb(doc_path(name))
print(t1 - t0, time.perf_counter() - t1)
"""


def run(cache: str, targets: list[str]) -> tuple[float, float]:
    """(import seconds, build-or-load seconds) in a fresh process."""
    env = {**os.environ, "ZOMBOSS_CACHE": cache}
    out = subprocess.run([sys.executable, "-c", SNIPPET, *targets], env=env, capture_output=True, text=True, check=True)
    imp, work = out.stdout.split()
    return float(imp), float(work)


def main() -> None:
    targets = sys.argv[1:] or ["gemmini", "plena"]
    cold, warm, imports = [], [], []
    for _ in range(5):
        with tempfile.TemporaryDirectory() as cache:
            imp, c = run(cache, targets)
            cold.append(c)
            imp2, w = run(cache, targets)
            warm.append(w)
            imports += [imp, imp2]

    def fmt(xs: list[float]) -> str:
        return f"median {statistics.median(xs):.3f} s  (runs: {', '.join(f'{x:.3f}' for x in xs)})"

    print(f"KBs: {' + '.join(targets)}")
    print(f"cold build: {fmt(cold)}")
    print(f"warm load:  {fmt(warm)}")
    print(f"module imports (not included above): {fmt(imports)}")


if __name__ == "__main__":
    main()
