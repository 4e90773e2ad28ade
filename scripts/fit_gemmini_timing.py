#!/usr/bin/env python3
"""Fit the Gemmini timing preset `firesim-f1-llc` to measured FireSim cycle counts.

The measurements (reference Appendix A.1; `ucb-bar/dosa:data/firesim_test_data/dataset.csv`)
are `tiled_matmul_auto` runs of BERT-base matmuls on Rocket + 16x16 Gemmini with a 4 MB LLC
and DDR3 on AWS F1. The script rebuilds each call with `default.tiled_matmul_auto`, times it
with the timing-only simulator, and searches the memory-system constants by coordinate
descent over fixed grids, minimising the worst relative error (ties: the sum of squared
log-errors). It prints the per-shape error table and the constants to record in
`targets/gemmini/presets.py`. Run it once after a timing-model change; the preset is never
tuned by hand, and never to make a searched kernel look faster.

    .venv/bin/python scripts/fit_gemmini_timing.py [--rounds N]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Mapping

from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.default import matmul_program, matmul_tiling
from zomboss.targets.gemmini.presets import FIRESIM_F1_LLC, FIRESIM_F1_MEASUREMENTS, Preset
from zomboss.targets.gemmini.simulator import simulate

from zomboss.program import Program

MEASUREMENTS = FIRESIM_F1_MEASUREMENTS  # (M, K, N) written M x K -> N (A is M x K, B is K x N)

# Search grids. Write latency and bandwidth are tied to the read side (one LLC/DRAM path):
# these loop_ws kernels write little, so the data cannot tell the two apart.
GRID: dict[str, tuple[float, ...]] = {
    "rd_latency": (40, 50, 60, 70, 80, 90, 100, 110, 120, 140),
    "rd_bytes_per_cycle": (5, 6, 7, 8, 9, 10, 12, 14, 16),
    "tlb_miss": (0, 2, 4, 6, 8, 10, 15),
    "kernel_overhead": (500, 1000, 1250, 1500, 1750, 2000, 2500),
}
START = {"rd_latency": 80.0, "rd_bytes_per_cycle": 8.0, "tlb_miss": 2.0, "kernel_overhead": 1500.0}


def programs(cfg: GemminiConfig) -> list[Program]:
    """The library's instruction stream for each measured shape (no bias, int8 output)."""
    return [matmul_program(x.m, x.n, x.k, cfg) for x in MEASUREMENTS]


def preset_for(values: Mapping[str, float]) -> Preset:
    v = dict(values)
    return FIRESIM_F1_LLC.with_(**v, wr_latency=v["rd_latency"], wr_bytes_per_cycle=v["rd_bytes_per_cycle"])


def model(progs: list[Program], cfg: GemminiConfig, preset: Preset) -> list[int]:
    return [simulate(p, cfg, None, functional=False, check=False, preset=preset).cycles for p in progs]


def errors(cycles: list[int]) -> list[float]:
    return [(c - x.cycles) / x.cycles for c, x in zip(cycles, MEASUREMENTS, strict=True)]


def loss(cycles: list[int]) -> tuple[float, float]:
    errs = errors(cycles)
    return max(abs(e) for e in errs), sum(math.log1p(e) ** 2 for e in errs)


def fit(cfg: GemminiConfig, rounds: int) -> tuple[dict[str, float], list[int]]:
    progs = programs(cfg)
    cache: dict[tuple[float, ...], list[int]] = {}

    def evaluate(values: dict[str, float]) -> list[int]:
        key = tuple(values[n] for n in GRID)
        if key not in cache:
            cache[key] = model(progs, cfg, preset_for(values))
        return cache[key]

    best = dict(START)
    best_cycles = evaluate(best)
    for rnd in range(rounds):
        improved = False
        for name, grid in GRID.items():
            for v in grid:
                cand = {**best, name: float(v)}
                cyc = evaluate(cand)
                if loss(cyc) < loss(best_cycles):
                    best, best_cycles, improved = cand, cyc, True
        print(f"round {rnd + 1}: worst error {100 * loss(best_cycles)[0]:.1f}%  {best}  ({len(cache)} evaluations)")
        if not improved:
            break
    return best, best_cycles


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=4, help="coordinate-descent passes over the grids")
    ap.add_argument("--check", action="store_true", help="only print the error table of the recorded preset")
    args = ap.parse_args()
    cfg = GemminiConfig()
    t0 = time.time()
    if args.check:
        cycles = model(programs(cfg), cfg, FIRESIM_F1_LLC)
        print(f"recorded preset {FIRESIM_F1_LLC.name}:\n")
    else:
        best, cycles = fit(cfg, args.rounds)
        print(f"\nfitted in {time.time() - t0:.0f} s: " + ", ".join(f"{k}={v:g}" for k, v in best.items()))
        print("(wr_latency = rd_latency, wr_bytes_per_cycle = rd_bytes_per_cycle)\n")
    print(f"{'shape (M x K -> N)':<20} {'tiles':<12} {'measured':>10} {'model':>10} {'error':>8}")
    for x, cyc in zip(MEASUREMENTS, cycles, strict=True):
        t = matmul_tiling(x.m, x.n, x.k, cfg)
        tiles = f"{t.tile_i},{t.tile_j},{t.tile_k}"
        err = 100 * (cyc - x.cycles) / x.cycles
        print(f"{f'{x.m} x {x.k} -> {x.n}':<20} {tiles:<12} {x.cycles:>10,} {cyc:>10,} {err:>+7.1f}%")


if __name__ == "__main__":
    main()
