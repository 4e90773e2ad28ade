"""Benchmark: Gemmini simulator speed on the mm1k library default (tiled_matmul_auto 1024^3).

Reports simulated instructions per second (after hardware-loop expansion) in timing-only mode
with and without the doc-rule checker, and the functional+timing wall time with verification.
"""

from __future__ import annotations

import time

from zomboss.targets.gemmini import TARGET
from zomboss.targets.gemmini.simulator import simulate


def main() -> None:
    wl = TARGET.workload("mm1k")
    inst = TARGET.instance(wl, {})
    cfg = inst.cfg
    program = TARGET.lower(inst, TARGET.reference_mappings(wl, {})["library"])
    for check in (False, True):
        t0, c0 = time.perf_counter(), time.process_time()
        res = simulate(program, cfg, None, functional=False, timing=True, check=check)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        n = sum(res.counts.values())
        print(
            f"timing-only, checker {'on ' if check else 'off'}: {n:,} instructions, {res.cycles:,} cycles, "
            f"{wall:.2f} s wall ({n / wall:,.0f} instr/s), {cpu:.2f} s CPU ({n / cpu:,.0f} instr/s)"
        )
    dram = inst.dram()  # the inputs and the reference are built once, outside the timed run
    t0 = time.perf_counter()
    res = simulate(program, cfg, dram, functional=True, timing=True)
    assert res.dram is not None
    ok = inst.verify(res.dram)
    print(f"functional+timing with checker: {time.perf_counter() - t0:.2f} s wall, verified={ok}")


if __name__ == "__main__":
    main()
