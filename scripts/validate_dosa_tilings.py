#!/usr/bin/env python3
"""Validate the Gemmini timing model on DOSA's measured non-default tilings (never fitted on).

Every row of `scripts/data/dosa_firesim_f1.csv` (derived from `ucb-bar/dosa`'s FireSim dataset by
`scripts/extract_dosa_rows.py`) is a layer that FireSim ran twice on the platform of preset
`firesim-f1-llc`: with DOSA's own tiling and loop permutation (`tiled_cycles`) and with the
library's `tiled_*_auto` (`auto_cycles`). For each row the script builds the program that
binary issued (`platform.tiled_matmul` / `platform.tiled_conv`: the dosa library's tiled_matmul
and tiled_conv with that tiling and permutation, on the RTL's 4 MiB scratchpad and
accumulator, which the explicit tilings need), simulates it timing-only and reports:

* per row: measured and model cycles and the relative error;
* the median and worst absolute error, and the Spearman rank correlation of model and FireSim
  cycles over all rows;
* for pairs of rows of the same layer whose measured cycles differ by more than 10 %, the
  share the model orders the same way (what a search relies on).

With a preset that models the LLC (`firesim-f1-llc-cache`) each tiled program runs on the cache
its layer's library run left, as in the binary (the template times the library run, then the
tiled one, on the same arrays); a library run starts on an empty cache (what the previous layer
left is not replayed).

The held-out library defaults (`auto_cycles`) are reported per network, as the dosa library's
tiled_*_auto programs (what `zomboss default gemmini conv:...,bias=0` simulates on this preset,
at other DRAM addresses; tests/targets/gemmini/test_platform.py checks the two agree). Only the
five BERT rows of reference A.1 (rows 74-78) were used by the fit (`scripts/fit_gemmini_timing.py`).

    .venv/bin/python scripts/validate_dosa_tilings.py [--preset NAME] [--workers N] [--rows 0-73]
        [--networks bert,resnet50,retinanet,unet] [--auto-networks bert,resnet50,retinanet,unet]
        [--set KEY=VALUE ...] [--json OUT] [--cache results/dosa_validation.jsonl]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from zomboss.targets.gemmini import TARGET, platform
from zomboss.targets.gemmini.config import GemminiConfig, machine_kb
from zomboss.targets.gemmini.dram import Dram
from zomboss.targets.gemmini.instance import ConvBuffers, MatmulBuffers
from zomboss.targets.gemmini.lowering import lower
from zomboss.targets.gemmini.platform import ConvCall, MatmulCall
from zomboss.targets.gemmini.presets import DEFAULT_PRESET, PRESETS, Preset, get_preset
from zomboss.targets.gemmini.simulator import simulate
from zomboss.targets.gemmini.verify import run

from zomboss.errors import ZombossError
from zomboss.mapping import IllegalMapping, space
from zomboss.program import Program
from zomboss.target import Mode
from zomboss.workload import Workload

DATA = Path(__file__).with_name("data") / "dosa_firesim_f1.csv"
NETWORKS = ("bert", "resnet50", "retinanet", "unet")
FIT_ROWS = frozenset(range(74, 79))  # reference A.1: the library default at default buffer sizes


def load(path: Path = DATA) -> list[dict[str, object]]:
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("#")]
    out = []
    for r in csv.DictReader(lines):
        out.append({k: (v if k in ("predictor", "network", "op", "perm") else int(v)) for k, v in r.items()})
    return out


def hardware(preset: str | Preset) -> GemminiConfig:
    """The scratchpad and accumulator the preset's RTL was built with (16-byte / 64-byte rows)."""
    rtl = get_preset(preset).rtl
    params = {**rtl.kb_params, "acc_capacity_kib": rtl.acc_capacity_kib, "sp_capacity_kib": rtl.sp_capacity_kib}
    return GemminiConfig.from_kb(machine_kb(tuple(sorted(params.items()))))


def dim_tiles(x: int) -> int:
    return 1 if x < 16 else x >> 4  # matmul_tilings.c: element tile -> DIM tiles


def program(r: dict[str, object], kind: str) -> Program:
    """The program of row r's explicit tiling (kind 'tiled') or library default ('auto')."""
    return _build(r, kind)[0]


def _build(r: dict[str, object], kind: str) -> tuple[Program, Workload, MatmulBuffers | ConvBuffers]:
    lib_cfg = TARGET.config({})  # gemmini_params.h of the library: default buffer sizes
    dram = Dram()
    if r["op"] == "matmul":
        i, k, j = int(r["P"]), int(r["C"]), int(r["K"])  # type: ignore[call-overload]
        a, b, c = dram.alloc(i * k), dram.alloc(k * j), dram.alloc(i * j)
        call = MatmulCall(i, j, k, a, b, 0, c, k, j, j, j, repeating_bias=True)
        if kind == "auto":
            instrs = platform.tiled_matmul_auto(call, lib_cfg)
        else:
            t = (dim_tiles(int(r["tile_P"])), dim_tiles(int(r["tile_K"])), dim_tiles(int(r["tile_C"])))  # type: ignore[call-overload]
            instrs = platform.tiled_matmul(call, lib_cfg, *t, str(r["perm"]))
        wl = Workload(f"row{r['row']}", "matmul", {"M": i, "N": j, "K": k, "bias": 0, "relu": 0})
        bufs: MatmulBuffers | ConvBuffers = MatmulBuffers(a, b, c)
    else:
        st, rk, ch, kk = (int(r[x]) for x in ("stride", "R", "C", "K"))  # type: ignore[call-overload]
        side = int(r["P"]) * st  # type: ignore[call-overload]
        pad = rk // 2
        out_dim = (side + 2 * pad - rk) // st + 1
        x = dram.alloc(side * side * ch)
        w = dram.alloc(rk * rk * ch * kk)
        o = dram.alloc(out_dim * out_dim * kk)
        call = ConvCall(1, side, side, ch, kk, rk, st, pad, x, w, 0, o)
        if kind == "auto":
            instrs = platform.tiled_conv_auto(call, lib_cfg)
        else:
            tile = tuple(int(r[f"tile_{d}"]) for d in "NQPKSRC")  # type: ignore[call-overload]
            instrs = platform.tiled_conv(call, lib_cfg, tile, str(r["perm"]))  # type: ignore[arg-type]
        shape = {"N": 1, "H": side, "W": side, "C": ch, "K": kk, "R": rk, "S": rk, "stride": st, "pad": pad}
        wl = Workload(f"row{r['row']}", "conv", {**shape, "bias": 0, "relu": 0})
        bufs = ConvBuffers(x, w, o)
    return Program("gemmini", tuple(instrs), {"row": r["row"], "kind": kind}), wl, bufs


def as_mapping(r: dict[str, object], cfg: GemminiConfig) -> str:
    """Whether row r's tiling is a legal Gemmini mapping (loop = hw, no pinning) that lowers to
    the very program FireSim ran: 'mapping', or why not (the violated rule, or what the
    mapping space cannot say)."""
    prog, wl, bufs = _build(r, "tiled")
    values: dict[str, object]
    if r["op"] == "matmul":
        values = {f"tile_{x}": dim_tiles(int(r[f"tile_{d}"])) for x, d in (("i", "P"), ("j", "K"), ("k", "C"))}  # type: ignore[call-overload]
        values.update(loop="hw", order=platform.matmul_order(str(r["perm"])), acc_init="overwrite")
    else:
        t = {d: int(r[f"tile_{d}"]) for d in "NQPKSRC"}  # type: ignore[call-overload]
        values = {"loop": "hw", "tile_b": t["N"], "tile_orows": t["Q"], "tile_ocols": t["P"], "tile_och": t["K"],
                  "tile_ich": t["C"], "tile_krows": t["S"], "tile_kcols": t["R"], "acc_init": "zero",
                  "downsample": False, "first_layer": False}  # fmt: skip  # the dosa library: neither
    values.update(reuse_a=False, reuse_b=False)
    kb = cfg.kb()
    try:
        m = space(kb, str(r["op"])).mapping(values, wl.shape)
        space(kb, str(r["op"])).check(kb, m, wl.shape)
    except IllegalMapping as e:
        return e.violations[0].rule
    except ZombossError as e:
        return f"not in the space ({str(e).splitlines()[0][:60]})"
    if list(lower(m, wl, bufs, cfg).instrs) == list(prog.instrs):
        return "mapping"
    if r["op"] == "conv" and _nontrivial(r, str(r["perm"])) != _nontrivial(r, platform.CONV_AUTO_PERM):
        return "loop order"  # the hw conv lowering has tiled_conv_auto's fixed order
    return "program differs"


def _nontrivial(r: dict[str, object], perm: str) -> str:
    """The loops of `perm` with more than one iteration for row r's conv tiling."""
    st, rk = int(r["stride"]), int(r["R"])  # type: ignore[call-overload]
    out = (int(r["P"]) * st + 2 * (rk // 2) - rk) // st + 1  # type: ignore[call-overload]
    lim = {"N": 1, "Q": out, "P": out, "K": r["K"], "S": rk, "R": rk, "C": r["C"]}
    return "".join(d for d in perm if -(-int(lim[d]) // int(r[f"tile_{d}"])) > 1)  # type: ignore[call-overload]


def spec(r: dict[str, object]) -> str:
    """The inline workload of row r as `zomboss default gemmini SPEC` takes it (batch 1, no bias:
    the DOSA templates set NO_BIAS)."""
    if r["op"] == "matmul":
        return f"matmul:M={r['P']},N={r['K']},K={r['C']}"
    st, rk = int(r["stride"]), int(r["R"])  # type: ignore[call-overload]
    side = int(r["P"]) * st  # type: ignore[call-overload]
    return f"conv:N=1,H={side},W={side},C={r['C']},K={r['K']},R={rk},S={rk},stride={st},pad={rk // 2},bias=0"


def default_row(job: tuple[dict[str, object], str | Preset]) -> tuple[int, int]:
    """Cycles of `zomboss default gemmini SPEC` (Candidate-0 at the instance's placement, on the
    doc's configuration), timing-only and fully simulated (a validation of the model measures
    the model itself, not its steady-state extrapolation)."""
    r, preset = job
    wl = TARGET.workload(spec(r))
    inst = TARGET.instance(wl, {})
    lib = TARGET.reference_mappings(wl, {})["library"]
    return int(r["row"]), run(inst, lib, Mode.TIMING, preset=preset, extrapolate=False).cycles  # type: ignore[call-overload]


def simulate_row(job: tuple[dict[str, object], str, str | Preset]) -> tuple[int, str, int, float, str]:
    r, kind, preset = job
    t0 = time.perf_counter()
    cfg = hardware(preset)
    p = get_preset(preset)
    llc = p.new_llc()
    if llc is not None and kind == "tiled":  # the binary ran the layer's library default just before
        simulate(program(r, "auto"), cfg, None, functional=False, check=False, preset=p, llc=llc)
    cyc = simulate(program(r, kind), cfg, None, functional=False, check=False, preset=p, llc=llc).cycles
    expressed = as_mapping(r, cfg) if kind == "tiled" else ""
    return int(r["row"]), kind, cyc, time.perf_counter() - t0, expressed  # type: ignore[call-overload]


def ranks(xs: Sequence[float]) -> list[float]:
    """Ranks from 1, ties sharing their average rank."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for t in range(i, j + 1):
            out[order[t]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Rank correlation; NaN where it is undefined (fewer than two rows, or all ranks tied)."""
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    var = sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)
    return cov / math.sqrt(var) if var > 0 else math.nan


def layer(r: dict[str, object]) -> tuple[object, ...]:
    return tuple(r[k] for k in ("op", "C", "K", "P", "Q", "R", "S", "stride"))


def tiling(r: dict[str, object]) -> tuple[object, ...]:
    return (*(r[f"tile_{d}"] for d in "NQPKSRC"), r["perm"])


def with_overrides(preset: str, sets: Sequence[str]) -> Preset:
    """The preset with `KEY=VALUE` constants changed (`--set`): a sensitivity study, never a fit.
    A bad key or value is reported by name."""
    base = get_preset(preset)
    kw: dict[str, object] = {}
    for item in sets:
        key, eq, value = item.partition("=")
        old = getattr(base, key, None) if eq else None
        if not isinstance(old, (int, float)) or isinstance(old, bool):
            raise SystemExit(f"--set {item!r}: expected KEY=NUMBER with KEY a numeric constant of preset {preset}")
        try:
            kw[key] = type(old)(float(value)) if isinstance(old, float) else int(value)
        except ValueError:
            raise SystemExit(f"--set {item!r}: {value!r} is not a {type(old).__name__}") from None
    return base.with_(**kw)


def label(preset: str, sets: Sequence[str]) -> str:
    """The cache key of a preset with overrides, e.g. `firesim-f1-llc[rd_latency=125]`."""
    return f"{preset}[{','.join(sets)}]" if sets else preset


def pair_agreement(
    rows: Sequence[dict[str, object]],
    model: dict[int, int],
    gap: float = 0.10,
    *,
    distinct: bool = False,
    network: str | None = None,
) -> tuple[int, int]:
    """(pairs the model orders like FireSim, pairs) over same-layer pairs differing by > gap.

    With `distinct`, pairs of rows with the very same tiling and permutation (repeat runs of one
    binary: the same program, so no model can order them) are left out. With `network`, only the
    pairs whose first row is of that network count (a layer shape two networks share, such as
    RetinaNet's ResNet-50 backbone, pairs rows across them)."""
    groups: dict[tuple[object, ...], list[dict[str, object]]] = defaultdict(list)
    for r in rows:
        groups[layer(r)].append(r)
    agree = total = 0
    for g in groups.values():
        for x in range(len(g)):
            for y in range(x + 1, len(g)):
                mx, my = int(g[x]["tiled_cycles"]), int(g[y]["tiled_cycles"])  # type: ignore[call-overload]
                if abs(mx - my) <= gap * min(mx, my):
                    continue
                if distinct and tiling(g[x]) == tiling(g[y]):
                    continue
                if network is not None and g[x]["network"] != network:
                    continue
                total += 1
                px, py = model[int(g[x]["row"])], model[int(g[y]["row"])]  # type: ignore[call-overload]
                agree += (px < py) == (mx < my) and px != py
    return agree, total


def repeatability(rows: Sequence[dict[str, object]], kind: str) -> dict[str, float]:
    """How far FireSim's cycles of one program spread over the runs that measured it: a floor
    under any model's error. A layer's library default ('auto') ran in each of the three
    predictor binaries (and twice in one binary where a network repeats a layer); a 'tiled'
    program ran more than once where two predictors chose the same tiling. Spread of a group:
    max / min - 1."""
    groups: dict[tuple[object, ...], list[int]] = defaultdict(list)
    for r in rows:
        key = layer(r) if kind == "auto" else (*layer(r), *tiling(r))
        groups[key].append(int(r[f"{kind}_cycles"]))  # type: ignore[call-overload]
    spreads = [max(c) / min(c) - 1 for c in groups.values() if len(c) > 1]
    if not spreads:
        return {"groups": 0}
    return {
        "groups": len(spreads),
        "median_spread": statistics.median(spreads),
        "max_spread": max(spreads),
        "over_10pct": sum(x > 0.10 for x in spreads),
    }


def summary(label: str, rows: Sequence[dict[str, object]], model: dict[int, int], key: str) -> dict[str, float]:
    errs = [(model[int(r["row"])] - int(r[key])) / int(r[key]) for r in rows]  # type: ignore[call-overload]
    worst = max(range(len(errs)), key=lambda i: abs(errs[i]))
    rho = spearman([int(r[key]) for r in rows], [model[int(r["row"])] for r in rows])  # type: ignore[call-overload]
    out = {
        "rows": len(rows),
        "median_abs_error": statistics.median(abs(e) for e in errs),
        "mean_signed_error": statistics.fmean(errs),
        "worst_error": errs[worst],
        "worst_row": int(rows[worst]["row"]),  # type: ignore[call-overload]
        "spearman": rho,
    }
    print(
        f"{label:<34} rows {len(rows):>3}  median |err| {100 * out['median_abs_error']:5.1f}%  "
        f"mean {100 * out['mean_signed_error']:+6.1f}%  worst {100 * out['worst_error']:+6.1f}% (row {out['worst_row']})  "
        f"Spearman {rho:.3f}"
    )
    return out


def _name(r: dict[str, object]) -> str:
    if r["op"] == "matmul":
        return f"mm {r['P']}x{r['C']}->{r['K']}"
    return f"conv {r['P']}^2 {r['C']}->{r['K']} k{r['R']} s{r['stride']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default=DEFAULT_PRESET, choices=sorted(PRESETS))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rows", default="0-221", help="row range a-b (inclusive)")
    ap.add_argument(
        "--auto-networks",
        default="bert,resnet50,retinanet,unet",
        help="networks whose held-out library defaults are simulated too ('' for none); one "
        "simulation per layer, since a layer's rows ran the same library binary",
    )
    ap.add_argument(
        "--networks",
        default="bert,resnet50,retinanet,unet",
        help="networks whose explicit tilings are simulated (unet's take the longest)",
    )
    ap.add_argument(
        "--defaults",
        default="",
        help="networks whose held-out library rows are also run as `zomboss default gemmini SPEC` "
        "(Candidate-0 at the instance placement, e.g. resnet50)",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change a numeric constant of the preset (e.g. rd_latency=125): a what-if study of the "
        "validation's sensitivity, cached under its own key; repeatable",
    )
    ap.add_argument("--json", type=Path, help="write per-row results and summaries here")
    ap.add_argument(
        "--cache",
        type=Path,
        help="append each simulation to this JSON-lines file and reuse what it holds (resumable runs)",
    )
    args = ap.parse_args(argv)
    lo, hi = (int(x) for x in args.rows.split("-"))
    nets = set(args.networks.split(","))
    rows = [r for r in load() if lo <= int(r["row"]) <= hi and r["network"] in nets]  # type: ignore[call-overload]
    preset, key = with_overrides(args.preset, args.set), label(args.preset, args.set)
    jobs: list[tuple[dict[str, object], str, str | Preset]] = [(r, "tiled", preset) for r in rows]
    auto_nets = {n for n in args.auto_networks.split(",") if n}
    same_auto: dict[int, int] = {}  # row -> the row whose library binary (one per layer) is simulated
    first: dict[tuple[object, ...], int] = {}
    for r in rows:
        if r["network"] in auto_nets:
            same_auto[int(r["row"])] = first.setdefault(layer(r), int(r["row"]))  # type: ignore[call-overload]
    jobs += [(r, "auto", preset) for r in rows if same_auto.get(int(r["row"])) == r["row"]]  # type: ignore[call-overload]
    jobs.sort(key=lambda j: -int(j[0]["tiled_cycles"]))  # type: ignore[call-overload]  # longest first
    t0 = time.perf_counter()
    res: dict[tuple[int, str], int] = {}
    how: dict[int, str] = {}
    done: set[tuple[int, str]] = set()
    if args.cache and args.cache.exists():
        for line in args.cache.read_text().splitlines():
            c = json.loads(line)
            if c["preset"] == key:
                res[c["row"], c["kind"]] = c["cycles"]
                if c["kind"] == "tiled":
                    how[c["row"]] = c["as_mapping"]
                done.add((c["row"], c["kind"]))
    todo = [j for j in jobs if (int(j[0]["row"]), j[1]) not in done]  # type: ignore[call-overload]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(simulate_row, j) for j in todo]
        for fut in as_completed(futures):
            row, kind, cyc, wall, expressed = fut.result()
            res[row, kind] = cyc
            if kind == "tiled":
                how[row] = expressed
            if args.cache:
                rec = {"preset": key, "row": row, "kind": kind, "cycles": cyc, "as_mapping": expressed}
                with args.cache.open("a") as f:
                    f.write(json.dumps({**rec, "wall_s": round(wall, 1)}) + "\n")
    for row, rep in same_auto.items():
        res[row, "auto"] = res[rep, "auto"]
    print(f"preset {key}: {len(todo)} simulations in {time.perf_counter() - t0:.0f} s ({len(done)} cached)\n")
    tiled = {row: c for (row, k), c in res.items() if k == "tiled"}
    print(f"{'row':>4} {'network':<10} {'layer':<26} {'tile N,Q,P,K,S,R,C':<24} {'perm':<8} "
          f"{'FireSim':>11} {'model':>11} {'error':>7}  as a mapping")  # fmt: skip
    for r in rows:
        name = _name(r)
        tile = ",".join(str(r[f"tile_{d}"]) for d in "NQPKSRC")
        m, x = tiled[int(r["row"])], int(r["tiled_cycles"])  # type: ignore[call-overload]
        print(f"{r['row']:>4} {r['network']:<10} {name:<26} {tile:<24} {r['perm']:<8} {x:>11,} {m:>11,} "
              f"{100 * (m - x) / x:>+6.1f}%  {how[int(r['row'])]}")  # fmt: skip
    print("\nexplicit tilings (target.gemmini_cycle; validation only, never fitted):")
    report: dict[str, object] = {"preset": key}
    report["tiled"] = summary("all", rows, tiled, "tiled_cycles")
    for op in ("matmul", "conv"):
        sub = [r for r in rows if r["op"] == op]
        if len(sub) > 2:
            report[f"tiled_{op}"] = summary(f"  {op}", sub, tiled, "tiled_cycles")
    for net in NETWORKS:
        sub = [r for r in rows if r["network"] == net]
        if len(sub) > 2:
            report[f"tiled_{net}"] = summary(f"  {net}", sub, tiled, "tiled_cycles")
    legal = [r for r in rows if how[int(r["row"])] == "mapping"]  # type: ignore[call-overload]
    if len(legal) > 2:
        report["tiled_as_mappings"] = summary("  legal hw-loop mappings", legal, tiled, "tiled_cycles")
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        counts[how[int(r["row"])]] += 1  # type: ignore[call-overload]
    print("  as a mapping: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])))
    report["as_mapping"] = dict(counts)
    agree, total = pair_agreement(rows, tiled)
    if total:
        print(f"same-layer pairs differing by > 10 % in FireSim: {total}; model orders {agree} "
              f"({100 * agree / total:.1f}%) the same way")  # fmt: skip
    report["pairs"] = {"agree": agree, "total": total}
    d_agree, d_total = pair_agreement(rows, tiled, distinct=True)
    if d_total:
        print(f"  of them with different tilings (not repeat runs of one binary): {d_total}; model orders "
              f"{d_agree} ({100 * d_agree / d_total:.1f}%) the same way")  # fmt: skip
    report["pairs_distinct_tilings"] = {"agree": d_agree, "total": d_total}
    by_net = {n: pair_agreement(rows, tiled, distinct=True, network=n) for n in NETWORKS}
    by_net = {n: at for n, at in by_net.items() if at[1]}
    if by_net:
        print("  by network: " + ", ".join(f"{n} {a}/{t}" for n, (a, t) in by_net.items()))
    report["pairs_distinct_by_network"] = {n: {"agree": a, "total": t} for n, (a, t) in by_net.items()}
    for kind in ("tiled", "auto"):
        spread = report[f"repeatability_{kind}"] = repeatability(rows, kind)
        if spread["groups"]:
            print(
                f"FireSim repeat runs of one {'tiling' if kind == 'tiled' else 'library default'}: {spread['groups']} "
                f"programs, spread median {100 * spread['median_spread']:.1f}%, max {100 * spread['max_spread']:.1f}%, "
                f"{spread['over_10pct']} over 10%"
            )
    if auto_nets:
        auto = {row: c for (row, k), c in res.items() if k == "auto"}
        print("\nheld-out library defaults (target.gemmini_auto_cycle; only rows 74-78 were fitted):")
        fitted = [r for r in rows if int(r["row"]) in FIT_ROWS and (int(r["row"]), "auto") in res]  # type: ignore[call-overload]
        if len(fitted) > 2:
            summary("  fitted rows (A.1)", fitted, auto, "auto_cycles")
        held = [r for r in rows if int(r["row"]) not in FIT_ROWS and (int(r["row"]), "auto") in res]  # type: ignore[call-overload]
        if held:
            report["auto_held_out"] = summary("all held out", held, auto, "auto_cycles")
        for net in NETWORKS:
            sub = [r for r in held if r["network"] == net]
            if len(sub) > 2:
                report[f"auto_{net}"] = summary(f"  {net}", sub, auto, "auto_cycles")
        convs = [r for r in held if r["op"] == "conv"]
        if len(convs) > 2:
            report["auto_conv"] = summary("  all convs", convs, auto, "auto_cycles")
        print(f"\n{'row':>4} {'network':<10} {'layer':<26} {'FireSim auto':>13} {'model':>11} {'error':>7}")
        for r in [*fitted, *held]:
            x, m = int(r["auto_cycles"]), auto[int(r["row"])]  # type: ignore[call-overload]
            print(f"{r['row']:>4} {r['network']:<10} {_name(r):<26} {x:>13,} {m:>11,} {100 * (m - x) / x:>+6.1f}%")
        report["auto_rows"] = {int(r["row"]): [int(r["auto_cycles"]), auto[int(r["row"])]] for r in [*fitted, *held]}  # type: ignore[call-overload]
    default_nets = {n for n in args.defaults.split(",") if n}
    if default_nets:
        picked = [r for r in rows if r["network"] in default_nets and int(r["row"]) not in FIT_ROWS]  # type: ignore[call-overload]
        seen_specs: dict[str, dict[str, object]] = {}
        for r in picked:
            seen_specs.setdefault(spec(r), r)
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            dres = dict(pool.map(default_row, [(r, preset) for r in seen_specs.values()]))
        by_spec = {sp: dres[int(r["row"])] for sp, r in seen_specs.items()}  # type: ignore[call-overload]
        dmodel = {int(r["row"]): by_spec[spec(r)] for r in picked}  # type: ignore[call-overload]
        print(f"\nheld-out rows as `zomboss default gemmini SPEC` ({', '.join(sorted(default_nets))}; never fitted):")
        report["defaults"] = summary("  zomboss default", picked, dmodel, "auto_cycles")
        print(f"{'row':>4} {'spec':<62} {'FireSim auto':>13} {'default':>11} {'error':>7}")
        for r in picked:
            x, m = int(r["auto_cycles"]), dmodel[int(r["row"])]  # type: ignore[call-overload]
            print(f"{r['row']:>4} {spec(r):<62} {x:>13,} {m:>11,} {100 * (m - x) / x:>+6.1f}%")
        report["default_rows"] = {
            int(r["row"]): [spec(r), int(r["auto_cycles"]), dmodel[int(r["row"])]] for r in picked
        }  # type: ignore[call-overload]
    report["tiled_rows"] = {
        int(r["row"]): [int(r["tiled_cycles"]), tiled[int(r["row"])], how[int(r["row"])]]  # type: ignore[call-overload]
        for r in rows
    }
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
