"""Benchmark: Gemmini simulator speed on the mm1k library default (tiled_matmul_auto 1024^3).

Reports simulated instructions per second (after hardware-loop expansion) in timing-only mode
with and without the doc-rule checker, and the functional+timing wall time with verification.
"""

from __future__ import annotations

import time

import numpy as np
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.default import build_default
from zomboss.targets.gemmini.simulator import simulate
from zomboss.targets.gemmini.suite import workload

from zomboss.knowledge import load_kb
from zomboss.program import Program
from zomboss.target import doc_path


def main() -> None:
    cfg = GemminiConfig.from_params(load_kb(doc_path("gemmini")).params)
    k = build_default(workload("mm1k"), cfg)
    program: Program = k.program
    for check in (False, True):
        t0, c0 = time.perf_counter(), time.process_time()
        res = simulate(program, cfg, None, functional=False, timing=True, check=check)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        n = sum(res.counts.values())
        print(
            f"timing-only, checker {'on ' if check else 'off'}: {n:,} instructions, {res.cycles:,} cycles, "
            f"{wall:.2f} s wall ({n / wall:,.0f} instr/s), {cpu:.2f} s CPU ({n / cpu:,.0f} instr/s)"
        )
    t0 = time.perf_counter()
    res = simulate(program, cfg, k.dram, functional=True, timing=True)
    assert res.dram is not None
    ok = bool(np.array_equal(k.output(res.dram), k.reference))
    print(f"functional+timing with checker: {time.perf_counter() - t0:.2f} s wall, verified={ok}")


if __name__ == "__main__":
    main()
