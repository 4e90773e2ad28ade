"""How tight the docs' sound `cost bound`s are (benchmarks/bounds/report.md).

Two tables, in Markdown on stdout:

* per target and op family: bound / simulated cycles over random legal mappings of the
  family's smallest suite instance (`tests/random_mappings.py`, the property test's draws;
  timing-only, no extrapolation), median and 10th percentile, and whether any bound exceeded
  its cycles (a bug); Gemmini's on the slow test's small inline shapes instead, per RTL
  (`tests/solvers/test_bound.py`: GEMMINI_SHAPES, the doc's own and the current RTL's params);
* per suite instance: the bound minimised over the whole legal space (CP-SAT per cost class,
  `solvers.space.build_pool`, proven; "-" where the budget ran out before every class was
  bounded) over the best known kernel's cycles (`benchmarks/search/report.md`'s `best`), and,
  for instances given a `zomboss solve --json` result (`--solved FILE ...`), the bound of that
  result's own mapping over its cycles;
* with `--winners FILE` (`benchmarks/search/gemmini_winners.json`), per listed instance: the bound
  of the committed winner's mapping over its simulated cycles (timing-only, no extrapolation).

    PYTHONPATH=. .venv/bin/python scripts/bound_tightness.py --samples 200 \\
        --instances vta plena --solved results/*.json > benchmarks/bounds/tables.md
    PYTHONPATH=. .venv/bin/python scripts/bound_tightness.py --samples 200 --families gemmini \\
        --winners benchmarks/search/gemmini_winners.json --winner-ids odd_pad conv_s2
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
from pathlib import Path

from tests.random_mappings import families, random_mapping
from tests.solvers.test_bound import GEMMINI_CURRENT, GEMMINI_SHAPES
from zomboss.mapping import space
from zomboss.solvers.space import build_pool
from zomboss.target import Mode, Target, get_target, target_names
from zomboss.workload import Workload

REPORT = Path(__file__).resolve().parent.parent / "benchmarks" / "search" / "report.md"


def best_known(path: Path = REPORT) -> dict[tuple[str, str], int]:
    """(target, workload) -> the `best` column of the committed guided-search report."""
    out: dict[tuple[str, str], int] = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 5 and re.fullmatch(r"\d+", cells[4] or "") and cells[0] in target_names():
            out[(cells[0], cells[1])] = int(cells[4])
    return out


def _ratios(t: Target, wl: Workload, params: dict[str, int], samples: int, seed: str) -> tuple[list[float], int]:
    """bound / simulated cycles of `samples` random legal mappings (the slow test's draws for
    `seed`), and how many bounds exceeded their cycles."""
    sp = space(t.kb(params), wl.op)
    rng = random.Random(seed)
    ratios: list[float] = []
    bad = tries = 0
    while len(ratios) < samples and tries < 20 * samples:
        tries += 1
        pick = rng.randint(0, 10_000)
        m = random_mapping(t, wl, pick, [rng.randint(-3, 3) for _ in range(16)], within=8.0, params=params)
        if m is None:
            continue
        b = sp.cost("bound", m, wl.shape) or 0
        cycles = t.evaluate(t.instance(wl, params, 0), m, Mode.TIMING, extrapolate=False).cycles
        ratios.append(b / cycles)
        bad += b > cycles
    return ratios, bad


def _row(target: str, op: str, instance: str, ratios: list[float], bad: int) -> str:
    ratios = sorted(ratios)
    p10 = ratios[len(ratios) // 10]
    return (
        f"| {target} | {op} | {instance} | {len(ratios)} | {statistics.median(ratios):.3f} | {p10:.3f} "
        f"| {ratios[-1]:.3f} | {bad} |"
    )


def family_rows(samples: int, only: set[str] | None) -> list[str]:
    rows = ["| target | op family | instance | mappings | bound / cycles: median | 10th percentile | max | violations |",
            "|---|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for target, wid in families():
        if only and target not in only:
            continue
        t = get_target(target)
        wl = t.workload(wid)
        if "bound" not in space(t.kb({}), wl.op).costs:
            rows.append(f"| {target} | {wl.op} | {wid} | - | no bound | | | |")
            continue
        if target == "gemmini":  # the slow test's small shapes, per RTL
            for rtl, params in (("dosa", {}), ("current", GEMMINI_CURRENT)):
                ratios, bad = [], 0
                shapes = GEMMINI_SHAPES[wl.op]
                for spec in shapes:
                    r, b = _ratios(t, t.workload(spec), params, -(-samples // len(shapes)), f"gemmini/{rtl}/{spec}")
                    ratios += r
                    bad += b
                rows.append(_row(target, wl.op, f"{len(shapes)} small shapes, {rtl} RTL", ratios, bad))
            continue
        ratios, bad = _ratios(t, wl, {}, samples, f"{target}/{wid}")  # the slow property test's draws
        rows.append(_row(target, wl.op, wid, ratios, bad))
    return rows


def winner_rows(path: Path, ids: list[str]) -> list[str]:
    """The bound of each committed winner's mapping over its simulated cycles."""
    d = json.loads(path.read_text())
    t = get_target("gemmini")
    params = d["params"]
    rows = ["| workload | winner's bound | its cycles | bound / cycles | issued by |", "|---|---:|---:|---:|---|"]
    for wid in ids or list(d["winners"]):
        wl = t.workload(wid)
        sp = space(t.kb(params), wl.op)
        m = sp.from_json(d["winners"][wid], wl.shape)
        b = sp.cost("bound", m, wl.shape) or 0
        cycles = t.evaluate(t.instance(wl, params, 0), m, Mode.TIMING, extrapolate=False).cycles
        rows.append(f"| {wid} | {b:,} | {cycles:,} | {b / cycles:.3f} | {m.get('loop')} |")
    return rows


def instance_rows(targets: set[str], solved: list[Path], budget: float) -> list[str]:
    best = best_known()
    own: dict[tuple[str, str], tuple[int, int | None]] = {}
    for path in solved:
        d = json.loads(path.read_text())
        t = get_target(d["target"])
        wl = t.workload(d["workload"])
        sp = space(t.kb({}), wl.op)
        m = sp.from_json(d["mapping"], wl.shape)
        own[(d["target"], d["workload"])] = (d["cycles"], sp.cost("bound", m, wl.shape))
    rows = ["| target | workload | best known | space bound | space bound / best | solved | its own bound / its cycles | wall s |",
            "|---|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for name in sorted(targets | {k[0] for k in own}):
        t = get_target(name)
        for wl in t.suite():
            key = (name, wl.id)
            if name not in targets and key not in own:
                continue
            low: int | None = None
            t0 = time.perf_counter()
            if name in targets:
                low = build_pool(t.kb({}), wl.op, wl.shape, k=1, budget_s=budget).lowest_bound()
            wall = time.perf_counter() - t0
            b = best.get(key)
            ratio = f"{low / b:.1%}" if low and b else "-"
            sc, sb = own.get(key, (None, None))
            mine = f"{sb / sc:.1%}" if sc and sb else "-"
            rows.append(
                f"| {name} | {wl.id} | {b or '-'} | {low or '-'} | {ratio} | {sc or '-'} | {mine} | {wall:.1f} |"
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=200, help="random legal mappings per op family")
    ap.add_argument("--families", nargs="*", help="targets of the family table (default: all)")
    ap.add_argument("--instances", nargs="*", default=[], help="targets whose suite gets the space bound")
    ap.add_argument("--solved", nargs="*", type=Path, default=[], help="`zomboss solve --json` outputs")
    ap.add_argument("--budget", type=float, default=600.0, help="CP-SAT deterministic seconds per instance")
    ap.add_argument("--winners", type=Path, help="a gemmini_winners*.json: the bound of each winner over its cycles")
    ap.add_argument("--winner-ids", nargs="*", default=[], help="the instances of --winners (default: all)")
    args = ap.parse_args()
    if args.samples:
        print("\n".join(family_rows(args.samples, set(args.families) if args.families else None)))
        print()
    if args.instances or args.solved:
        print("\n".join(instance_rows(set(args.instances), args.solved, args.budget)))
        print()
    if args.winners:
        print("\n".join(winner_rows(args.winners, args.winner_ids)))


if __name__ == "__main__":
    main()
