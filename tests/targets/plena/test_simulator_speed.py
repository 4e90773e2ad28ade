"""Simulator throughput (pytest-benchmark; skipped unless run with --benchmark-enable)."""

from __future__ import annotations

import pytest
from zomboss.targets.plena.asm import parse_program
from zomboss.targets.plena.simulator import simulate

GEMM_LOOP = """
C_LOOP_START gp4, 500
S_ADDI_INT gp2, gp0, 0
S_ADDI_INT gp3, gp0, 4096
C_LOOP_START gp5, 16
M_MM 0, gp2, gp0
M_MM_WO gp3, gp0, 0
S_ADDI_INT gp2, gp2, 256
S_ADDI_INT gp3, gp3, 4
C_LOOP_END gp5
C_LOOP_END gp4
"""


@pytest.mark.parametrize("check", [False, True])
def test_gemm_loop_throughput(benchmark, cfg, check: bool) -> None:
    prog = parse_program(cfg.kb, GEMM_LOOP, "bench.asm")
    run = benchmark(lambda: simulate(prog, cfg, check=check))
    assert run.instructions == 1 + 500 * (3 + 16 * 5 + 1)
    benchmark.extra_info["instructions_per_s"] = run.instructions / benchmark.stats["mean"]
