"""Benchmark: Gemmini simulator speed on the mm1k library default (tiled_matmul_auto 1024^3).

Reports simulated instructions per second (after hardware-loop expansion) in timing-only mode
with and without the doc-rule checker, the checker's own cost per instruction (the plain
`Checker.step` over the expanded stream, and the simulator's way: `check_block` over each
hardware loop, measured as checked minus unchecked simulation without timing), and the
functional+timing wall time with verification. CPU times are what to compare on a shared
machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from zomboss.targets.gemmini import TARGET
from zomboss.targets.gemmini.simulator import dynamic_stream, kb_checker, simulate


def _cpu(fn: Callable[[], object]) -> float:
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def main() -> None:
    wl = TARGET.workload("mm1k")
    inst = TARGET.instance(wl, {})
    cfg = inst.cfg
    program = TARGET.lower(inst, TARGET.reference_mappings(wl, {})["library"])
    n = 0
    for extrapolate in (False, True):
        for check in (False, True):
            t0, c0 = time.perf_counter(), time.process_time()
            res = simulate(program, cfg, None, functional=False, timing=True, check=check, extrapolate=extrapolate)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            n = sum(res.counts.values())
            how = "extrapolated" if extrapolate else "full"
            print(
                f"timing-only ({how}), checker {'on ' if check else 'off'}: {n:,} instructions, {res.cycles:,} "
                f"cycles, {wall:.2f} s wall ({n / wall:,.0f} instr/s), {cpu:.2f} s CPU ({n / cpu:,.0f} instr/s)"
            )
    stream = [ins for ins, _ in dynamic_stream(program, cfg)]
    checker = kb_checker(cfg)
    plain = _cpu(lambda: [checker.step(ins) for ins in stream])
    bare = _cpu(lambda: simulate(program, cfg, None, functional=False, timing=False, check=False))
    checked = _cpu(lambda: simulate(program, cfg, None, functional=False, timing=False, check=True))
    print(
        f"checker alone: Checker.step over the expanded stream {plain / len(stream) * 1e6:.2f} us/instr; "
        f"as the simulator checks (check_block per loop) {(checked - bare) / n * 1e6:.2f} us/instr "
        f"(no-timing simulation {checked:.2f} s CPU checked, {bare:.2f} s unchecked)"
    )
    dram = inst.dram()  # the inputs and the reference are built once, outside the timed run
    t0 = time.perf_counter()
    res = simulate(program, cfg, dram, functional=True, timing=True)
    assert res.dram is not None
    ok = inst.verify(res.dram)
    print(f"functional+timing with checker: {time.perf_counter() - t0:.2f} s wall, verified={ok}")


if __name__ == "__main__":
    main()
