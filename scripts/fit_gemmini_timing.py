#!/usr/bin/env python3
"""Fit the Gemmini timing preset `firesim-f1-llc` to measured FireSim cycle counts.

The measurements (reference Appendix A.1; `ucb-bar/dosa:data/firesim_test_data/dataset.csv`, rows
74-78 of `scripts/data/dosa_firesim_f1.csv`) are `tiled_matmul_auto` runs of BERT-base matmuls on
Rocket + 16x16 Gemmini with a 4 MB LLC and DDR3 on AWS F1. The script simulates the program
that platform ran, the target's Candidate-0 on the preset: the library it was built with
(gemmini-rocc-tests `dosa`, `presets.Library`: no pinned A/B halves, so every loop_ws reloads
A and B; `mapping.library_default` lowered through loop_ws, instruction for instruction the
dosa tiled_matmul_auto of `platform.py`) on the RTL it ran (gemmini-dosa, whose
LoopMatmul loads A and B unconditionally), both named by the preset. It minimises the worst
relative error over the five shapes (ties: the sum of squared log-errors):

1. a full grid over read latency and read bandwidth (and, with --dram-rows, a DMA stall per
   DRAM row-buffer miss of FASED's open-page DDR3 model), then finer grids around the best
   point (steps x1, x0.4, x0.2);
2. for every grid point the fixed per-kernel overhead in closed form: it shifts every event of
   a kernel by the same amount (the model starts all engines idle at time 0), so each shape's
   cycles are the zero-overhead cycles plus the overhead, and the best overhead is found on a
   fine 1-D grid without simulating again. The script re-simulates the winner with its
   overhead to confirm that.

It prints the per-shape error table and the constants to record in
`targets/gemmini/presets.py`. Run it once after a timing-model change; the preset is never
tuned by hand, and never to make a searched kernel look faster. The DOSA explicit tilings and
the other library rows are validation data (`scripts/validate_dosa_tilings.py`), never fitted.

With --llc the preset models FASED's LLC (`firesim-f1-llc-cache`, `llc.py`) and the fit also
sets the extra latency of a read that misses it. A cached platform's cycles depend on what ran
before, so the script then replays what the BERT binary ran: its layers in order on the same
static arrays (the dosa branch's `matmul_tilings.c`: each layer's timed `tiled_matmul_auto`, then
its timed explicit tiling, dataset rows 74-78), one cache throughout, the first layer on an
empty cache. Only the library runs' cycles are compared; the tiled runs are there for what they
leave in the cache. The A.1 rows cannot tell the miss penalty apart (their data fit in the
cache; points within 5 % exist for every value tried), so among the best A.1 point of each miss
penalty within 5 %, the one that best fits the library runs of the 23 UNet layers (rows 51-73,
5-40 MB of data each: what a miss costs shows there; simulated on an empty cache; not
validation rows, not ResNet-50) is taken. Those rows are then fit data for this preset.

    .venv/bin/python scripts/fit_gemmini_timing.py [--workers N] [--dram-rows] [--llc] [--check]
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor

from validate_dosa_tilings import FIT_ROWS, dim_tiles, hardware, load, program
from zomboss.targets.gemmini import TARGET, platform
from zomboss.targets.gemmini.mapping import library_default
from zomboss.targets.gemmini.platform import MatmulCall
from zomboss.targets.gemmini.presets import (
    FIRESIM_F1_LLC,
    FIRESIM_F1_LLC_CACHE,
    FIRESIM_F1_MEASUREMENTS,
    Measurement,
    Preset,
)
from zomboss.targets.gemmini.simulator import simulate

from zomboss.program import Program

MEASUREMENTS = FIRESIM_F1_MEASUREMENTS  # (M, K, N) written M x K -> N (A is M x K, B is K x N)

# Coarse grids. Write latency and bandwidth are tied to the read side (one LLC/DRAM path):
# these loop_ws kernels write little, so the data cannot tell the two apart. Bandwidth stays at
# or below the 16-byte TileLink beat per cycle.
COARSE: dict[str, tuple[float, ...]] = {
    "rd_latency": (30, 40, 50, 60, 70, 80, 100, 120),
    "rd_bytes_per_cycle": (5, 6, 7, 8, 10, 12, 16),
}
ROW_MISS_GRID = (0, 4, 8, 12, 16, 24)
FINE_STEP = {"rd_latency": 5.0, "dram_row_miss": 2.0, "rd_bytes_per_cycle": 0.5, "llc_miss_latency": 15.0}
LIMITS = {
    "rd_latency": (10.0, 200.0),
    "dram_row_miss": (0.0, 40.0),
    "rd_bytes_per_cycle": (2.0, 16.0),
    "llc_miss_latency": (0.0, 400.0),
}
OVERHEADS = tuple(float(o) for o in range(0, 5001, 25))  # per-kernel fixed cycles searched in closed form
LLC_GRID: dict[str, tuple[float, ...]] = {
    "rd_latency": (50, 60, 70, 80, 90, 100),
    "rd_bytes_per_cycle": (7, 8, 9, 10, 12),
    "dram_row_miss": (0, 20, 30, 40),
}
LLC_MISS_GRID = (0, 30, 60, 90, 150)
ARRAY_BYTES = 100_000_000  # matmul_tilings.c: static full_A, full_B, full_C, each elem_t[10000][10000]
BASE = 1 << 20  # (where the binary's bss starts is not known; only the spacing is)


def preset_for(values: Mapping[str, float], overhead: float = 0.0) -> Preset:
    v = {"dram_row_miss": 0.0, **values}
    base = FIRESIM_F1_LLC_CACHE if "llc_miss_latency" in v else FIRESIM_F1_LLC
    return base.with_(
        **v, wr_latency=v["rd_latency"], wr_bytes_per_cycle=v["rd_bytes_per_cycle"], kernel_overhead=overhead
    )


def binary_history() -> list[tuple[Program, Program]]:
    """(library run, explicit-tiling run) of each A.1 layer, in the binary's order, on its arrays."""
    rows = {int(r["row"]): r for r in load()}  # type: ignore[call-overload]
    lib_cfg = TARGET.config({})  # the library's gemmini_params.h
    out = []
    for n, x in zip(sorted(FIT_ROWS), MEASUREMENTS, strict=True):
        r = rows[n]
        assert (int(r["P"]), int(r["C"]), int(r["K"])) == (x.m, x.k, x.n), (n, x)  # type: ignore[call-overload]
        a, b, c = BASE, BASE + ARRAY_BYTES, BASE + 2 * ARRAY_BYTES
        call = MatmulCall(x.m, x.n, x.k, a, b, 0, c, x.k, x.n, x.n, x.n, repeating_bias=True)
        tiles = [dim_tiles(int(r[f"tile_{d}"])) for d in "PKC"]  # type: ignore[call-overload]
        auto = platform.tiled_matmul_auto(call, lib_cfg)
        tiled = platform.tiled_matmul(call, lib_cfg, *tiles, str(r["perm"]))
        out.append((Program("gemmini", tuple(auto), {}), Program("gemmini", tuple(tiled), {})))
    return out


def library(x: Measurement) -> tuple[Program, dict[str, int]]:
    """Candidate-0 of a measured shape under the fitted preset's library (the dosa
    tiled_matmul_auto), and its tiles."""
    wl = TARGET.workload(f"matmul:M={x.m},N={x.n},K={x.k}")
    m = library_default(wl, TARGET.config({}), FIRESIM_F1_LLC.library)
    tiles = {k: m.int(k) for k in ("tile_i", "tile_j", "tile_k")}
    return TARGET.lower(TARGET.instance(wl, {}), m), tiles


def simulate_all(values: tuple[tuple[str, float], ...], overhead: float = 0.0) -> list[int]:
    """Model cycles of every measured shape under these constants (runs in a worker process)."""
    cfg = TARGET.config({})
    preset = preset_for(dict(values), overhead)
    if preset.llc_sets:
        cfg, llc = hardware(preset), preset.new_llc()
        out = []
        for auto, tiled in binary_history():
            out.append(simulate(auto, cfg, None, functional=False, check=False, preset=preset, llc=llc).cycles)
            simulate(tiled, cfg, None, functional=False, check=False, preset=preset, llc=llc)
        return out
    return [
        simulate(library(x)[0], cfg, None, functional=False, check=False, preset=preset).cycles for x in MEASUREMENTS
    ]


def errors(cycles: Sequence[float]) -> list[float]:
    return [(c - x.cycles) / x.cycles for c, x in zip(cycles, MEASUREMENTS, strict=True)]


def loss(cycles: Sequence[float]) -> tuple[float, float]:
    errs = errors(cycles)
    return max(abs(e) for e in errs), sum(math.log1p(e) ** 2 for e in errs)


def best_overhead(cycles0: Sequence[int]) -> tuple[float, tuple[float, float]]:
    """The per-kernel overhead minimising the loss, given the zero-overhead cycles."""
    return min(((o, loss([c + o for c in cycles0])) for o in OVERHEADS), key=lambda t: t[1])


def search(points: list[dict[str, float]], pool: ProcessPoolExecutor, seen: dict) -> None:
    todo = [p for p in points if tuple(p.items()) not in seen]
    for p, cyc in zip(todo, pool.map(simulate_all, [tuple(p.items()) for p in todo]), strict=True):
        seen[tuple(p.items())] = cyc


def fit(workers: int, dram_rows: bool, llc: bool = False) -> tuple[dict[str, float], float, list[int], dict]:
    """The best grid point, its overhead and its zero-overhead cycles."""
    grid = dict(COARSE)
    if dram_rows:
        grid["dram_row_miss"] = ROW_MISS_GRID
    if llc:  # (a coarser grid: every point replays the binary, ten kernels on one cache)
        grid = {**LLC_GRID, "llc_miss_latency": LLC_MISS_GRID}
    names = list(grid)
    seen: dict[tuple[tuple[str, float], ...], list[int]] = {}

    def ranked() -> list[tuple[tuple[float, float], dict[str, float], float]]:
        out = []
        for key, cyc in seen.items():
            o, lo = best_overhead(cyc)
            out.append((lo, dict(key), o))
        return sorted(out, key=lambda t: t[0])

    with ProcessPoolExecutor(max_workers=workers) as pool:
        coarse = [dict(zip(names, map(float, v), strict=True)) for v in itertools.product(*grid.values())]
        t0 = time.time()
        search(coarse, pool, seen)
        (lo, best, o) = ranked()[0]
        print(f"coarse grid: {len(coarse)} points in {time.time() - t0:.0f} s; best worst error {100 * lo[0]:.1f}%")
        for scale in (1.0, 0.4, 0.2):  # refine around the incumbent until it stops moving, then finer
            for _ in range(6):
                axes = []
                for n in names:
                    lo_lim, hi_lim = LIMITS[n]
                    step = FINE_STEP[n] * scale
                    axes.append(sorted({min(hi_lim, max(lo_lim, best[n] + d * step)) for d in (-1, 0, 1)}))
                search([dict(zip(names, v, strict=True)) for v in itertools.product(*axes)], pool, seen)
                (lo2, best2, o2) = ranked()[0]
                print(f"refined (step x{scale:g}): best worst error {100 * lo2[0]:.2f}% at {best2}, overhead {o2:g}")
                if best2 == best:
                    break
                best, o = best2, o2
        print("\nfive best points:")
        for lo3, p, o3 in ranked()[:5]:
            print(f"  worst {100 * lo3[0]:5.1f}%  {p}  overhead {o3:g}")
    return best, o, seen[tuple(best.items())], seen


def unet_loss(job: tuple[tuple[tuple[str, float], ...], float]) -> tuple[float, float]:
    """(median |error|, rms log error) of the UNet library runs under these constants."""
    values, overhead = job
    preset = preset_for(dict(values), overhead)
    cfg = hardware(preset)
    errs = []
    for r in load():
        if 51 <= int(r["row"]) <= 73:  # type: ignore[call-overload]  # the UNet layers, one run each
            llc = preset.new_llc()
            cyc = simulate(program(r, "auto"), cfg, None, functional=False, check=False, preset=preset, llc=llc).cycles
            errs.append(cyc / int(r["auto_cycles"]) - 1)  # type: ignore[call-overload]
    return statistics.median(abs(e) for e in errs), math.sqrt(statistics.fmean(math.log1p(e) ** 2 for e in errs))


def miss_penalty(seen: dict, workers: int) -> tuple[dict[str, float], float, list[int]]:
    """The A.1-admissible point (worst error <= 5 %) of the miss penalty the UNet library runs
    favour: least median error (then rms log error). The median, because a few UNet layers are
    off for reasons a memory constant should not absorb (the 1-input-channel and 2-output-channel
    layers, both more than 40 % too fast at every penalty tried); rms log would buy them down with
    a larger penalty."""
    best: dict[float, tuple[tuple[float, float], dict[str, float], float]] = {}
    for key, cyc in seen.items():
        o, lo = best_overhead(cyc)
        m = dict(key)["llc_miss_latency"]
        if lo[0] <= 0.05 and (m not in best or lo < best[m][0]):
            best[m] = (lo, dict(key), o)
    cands = [best[m] for m in sorted(best)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        scores = list(pool.map(unet_loss, [(tuple(p.items()), o) for _, p, o in cands]))
    print("\nmiss penalty by the UNet library runs (best A.1 point of each):")
    for (lo, p, o), (med, rms) in zip(cands, scores, strict=True):
        print(f"  {p}  overhead {o:g}: A.1 worst {100 * lo[0]:.1f}%; UNet median {100 * med:.1f}%, rms log {rms:.3f}")
    (_, p, o), _ = min(zip(cands, scores, strict=True), key=lambda t: t[1])
    return p, o, seen[tuple(p.items())]


def table(cycles: Sequence[int]) -> None:
    print(f"{'shape (M x K -> N)':<20} {'tiles':<12} {'measured':>10} {'model':>10} {'error':>8}")
    for x, cyc in zip(MEASUREMENTS, cycles, strict=True):
        tiles = ",".join(str(v) for v in library(x)[1].values())
        err = 100 * (cyc - x.cycles) / x.cycles
        print(f"{f'{x.m} x {x.k} -> {x.n}':<20} {tiles:<12} {x.cycles:>10,} {cyc:>10,} {err:>+7.1f}%")
    print(f"worst |error| {100 * loss(cycles)[0]:.1f}%")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2, help="simulation processes")
    ap.add_argument("--dram-rows", action="store_true", help="also fit a DMA stall per DRAM row-buffer miss")
    ap.add_argument("--llc", action="store_true", help="fit firesim-f1-llc-cache: the LLC modelled, histories replayed")
    ap.add_argument("--check", action="store_true", help="only print the error table of the recorded preset")
    args = ap.parse_args()
    p = FIRESIM_F1_LLC_CACHE if args.llc else FIRESIM_F1_LLC
    print(f"preset {p.name}; platform: library {p.library.name}; RTL {p.rtl.name}")
    if args.check:
        values = {
            k: float(getattr(p, k)) for k in (*COARSE, "dram_row_miss", *(("llc_miss_latency",) if args.llc else ()))
        }
        print(f"recorded preset {p.name}: {values}, kernel_overhead {p.kernel_overhead:g}\n")
        table(simulate_all(tuple(values.items()), p.kernel_overhead))
        return
    t0 = time.time()
    best, overhead, cycles0, seen = fit(args.workers, args.dram_rows or args.llc, args.llc)
    if args.llc:
        best, overhead, cycles0 = miss_penalty(seen, args.workers)
    cycles = simulate_all(tuple(best.items()), overhead)
    if cycles != [round(c + overhead) for c in cycles0]:
        raise SystemExit(f"the overhead did not shift the kernels exactly: {cycles} vs {cycles0} + {overhead:g}")
    print(f"\nfitted in {time.time() - t0:.0f} s: " + ", ".join(f"{k}={v:g}" for k, v in best.items()))
    print(f"kernel_overhead={overhead:g} (wr_latency = rd_latency, wr_bytes_per_cycle = rd_bytes_per_cycle)\n")
    table(cycles)


if __name__ == "__main__":
    main()
