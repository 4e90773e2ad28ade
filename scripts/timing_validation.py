"""The generic timing model (a doc's timing vocabulary, zomboss/machine/timing.py) against the
hand-written timing models: PLENA's `rtl` clock and Gemmini's event model.

Usage: python scripts/timing_validation.py [--target T ...] [--mappings N] [--seed S]
       [--ids ID ...] [--max-instructions K] [--json OUT] [--markdown OUT]

Per target and op family, on the suite defaults (Candidate-0) and on N random legal mappings
(seeded: `ranking.random_mappings`, a random skeleton sized under a random objective plus a
few random knob edits) of the family's smallest suite instance, whose sound bound is within
`--within` times Candidate-0's (absurd corners, 1-element tiles, take minutes to simulate and say
nothing the others do not), it runs each kernel timing-only on both models and reports the exact matches, the median and worst relative error
(generic / hand-written - 1) and Spearman's rank correlation between the two. A kernel whose
hand-written run executes more than K instructions is left out of the generic run (the
generic simulator times about 20k instructions a second) and counted as skipped. `--doc PATH`
times the generic side from another version of the target's doc (a doc edit's effect on the
agreement), with the target's own parameters.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ranking import random_mappings, spearman  # noqa: E402

from zomboss.mapping import KnobMapping, space  # noqa: E402
from zomboss.target import get_target  # noqa: E402

TARGETS = ("plena", "gemmini")


@dataclass(frozen=True)
class Row:
    """One kernel timed by both models (`generic` None: skipped, too long for the generic run)."""

    target: str
    family: str
    workload: str
    kind: str  # "default" or "random"
    mapping: str
    hand: int
    generic: int | None
    instructions: int
    wall_s: float

    @property
    def error(self) -> float | None:
        return None if self.generic is None else self.generic / self.hand - 1.0


def _plena(wl, mapping: KnobMapping | None, cap: int) -> tuple[int, int | None, int]:  # noqa: ANN001
    """(rtl cycles, generic cycles or None, instructions) of one PLENA kernel, timing-only."""
    from zomboss.targets.plena.simulator import simulate

    from zomboss.machine import GenericSim

    t: Any = get_target("plena")
    inst: Any = t.instance(wl, {})
    k = t.kernel(inst, mapping)
    hbm0, fp = inst.staged(k.layout)
    hand = simulate(k.program, inst.cfg, hbm0, fpsram_init=fp, modes=("rtl",), check=False, functional=False)
    if hand.instructions > cap:
        return hand.cycles["rtl"], None, hand.instructions
    run = _cached(("plena", DOC_OVERRIDE.get("plena")), lambda: GenericSim(_kb("plena", inst.cfg.kb))).run(
        k.program.instrs, None, check=False
    )
    if run.instructions != hand.instructions:
        raise AssertionError(
            f"{wl.id}: the generic run executed {run.instructions} instructions, not {hand.instructions}"
        )
    return hand.cycles["rtl"], run.cycles, hand.instructions


def _gemmini(wl, mapping: KnobMapping | None, cap: int) -> tuple[int, int | None, int]:  # noqa: ANN001
    """(event-model cycles, generic cycles or None, executed commands) of one Gemmini kernel."""
    from zomboss.targets.gemmini import generic as G
    from zomboss.targets.gemmini.presets import get_preset
    from zomboss.targets.gemmini.simulator import simulate

    from zomboss.machine import GenericSim

    t = get_target("gemmini")
    inst: Any = t.instance(wl, {})
    m = mapping if mapping is not None else t.reference_mappings(wl, {})["library"]
    program = t.lower(inst, m)
    hand = simulate(program, inst.cfg, None, functional=False, timing=True)
    n = int(hand.stats.get("instructions", 0)) if hasattr(hand, "stats") else 0
    if n > cap:
        return hand.cycles, None, n

    def make() -> Any:
        if "gemmini" not in DOC_OVERRIDE:
            return G.generic_sim(inst.cfg)
        rtl = get_preset(inst.cfg.preset).rtl
        return GenericSim(_kb("gemmini", None), {G.MACRO: lambda: G.LoopHook(inst.cfg, rtl)})

    run = _cached(("gemmini", inst.cfg.preset, DOC_OVERRIDE.get("gemmini")), make).run(
        program.instrs, None, check=False
    )
    return hand.cycles, run.cycles, run.instructions


_SIMS: dict[tuple, object] = {}
DOC_OVERRIDE: dict[str, Path] = {}  # target -> the doc the generic side is timed from (`--doc`)


def _kb(target: str, default: Any) -> Any:
    """The KB the generic side uses: the target's (`default`), or one compiled from `--doc`."""
    if target not in DOC_OVERRIDE:
        return default
    from zomboss.doc import parse_doc
    from zomboss.knowledge import compile_doc

    path = DOC_OVERRIDE[target]
    return compile_doc(parse_doc(path.read_text(), str(path)), target, {})


def _cached(key: tuple, make: Callable[[], object]):  # noqa: ANN202
    if key not in _SIMS:
        _SIMS[key] = make()
    return _SIMS[key]


RUNNERS = {"plena": _plena, "gemmini": _gemmini}


def _smallest(t, wls: Sequence) -> dict[str, Any]:  # noqa: ANN001
    """Per family, its suite instance with the smallest bound (where random mappings are drawn)."""
    out: dict[str, Any] = {}
    for wl in wls:
        cur = out.get(wl.op)
        if cur is None or (t.bound(wl, {}), wl.id) < (t.bound(cur, {}), cur.id):
            out[wl.op] = wl
    return out


def rows(
    target: str,
    ids: Sequence[str],
    n_random: int,
    seed: int,
    cap: int,
    log: Callable[[str], None],
    within: float = 8.0,
) -> list[Row]:
    """Every kernel of one target, both models."""
    t = get_target(target)
    suite = list(t.suite())
    wls = [w for w in suite if not ids or w.id in ids]
    out = []
    jobs: list[tuple[Any, KnobMapping | None, str]] = [(wl, None, "default") for wl in wls]
    if n_random:
        for wl in _smallest(t, wls).values():
            kb = t.kb({})
            sp = space(kb, wl.op)
            ref = sp.cost("bound", t.reference_mappings(wl, {})["library"], wl.shape)
            below = None if ref is None else int(within * ref) + 1
            for m in random_mappings(kb, wl.op, wl.shape, n_random, seed, below=below):
                jobs.append((wl, m, "random"))
    for wl, mp, kind in jobs:
        t0 = time.perf_counter()
        hand, gen, n = RUNNERS[target](wl, mp, cap)
        r = Row(
            target,
            wl.op,
            wl.id,
            kind,
            "Candidate-0" if mp is None else json.dumps(mp.as_dict(), sort_keys=True),
            hand,
            gen,
            n,
            round(time.perf_counter() - t0, 2),
        )
        err = "skipped" if r.error is None else f"{r.error:+.4f}"
        log(
            f"{target:8} {r.family:10} {r.workload:18} {kind:8} hand {hand:>11} generic {gen!s:>11} err {err} ({r.wall_s} s)"
        )
        out.append(r)
    return out


@dataclass(frozen=True)
class Summary:
    target: str
    family: str
    kind: str
    compared: int
    skipped: int
    exact: int
    median_err: float
    worst_err: float  # the largest |error|, signed
    spearman: float


def summarise(rs: Sequence[Row]) -> list[Summary]:
    """Per target, family and kind (defaults / random mappings)."""
    out = []
    keys = sorted({(r.target, r.family, r.kind) for r in rs}, key=lambda k: (TARGETS.index(k[0]), k[1], k[2]))
    for target, fam, kind in keys:
        grp = [r for r in rs if (r.target, r.family, r.kind) == (target, fam, kind)]
        done = [r for r in grp if r.generic is not None]
        errs = [r.error for r in done if r.error is not None]
        worst = max(errs, key=abs) if errs else math.nan
        rho = spearman([r.hand for r in done], [float(r.generic or 0) for r in done])
        out.append(
            Summary(
                target,
                fam,
                kind,
                len(done),
                len(grp) - len(done),
                sum(r.generic == r.hand for r in done),
                statistics.median(abs(e) for e in errs) if errs else math.nan,
                worst,
                rho,
            )
        )
    return out


def markdown(summaries: Sequence[Summary]) -> str:
    """The table of the report (errors in percent of the hand-written cycles)."""
    lines = [
        "| target | family | kernels | compared | exact | median abs error | worst error | Spearman |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for s in summaries:
        kind = "suite defaults" if s.kind == "default" else "random mappings"
        skipped = f" (+{s.skipped} skipped)" if s.skipped else ""
        rho = "-" if math.isnan(s.spearman) else f"{s.spearman:.3f}"
        lines.append(
            f"| {s.target} | {s.family} | {kind} | {s.compared}{skipped} | {s.exact} | "
            f"{100 * s.median_err:.2f}% | {100 * s.worst_err:+.2f}% | {rho} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", action="append", choices=TARGETS, help="default: both")
    ap.add_argument("--mappings", type=int, default=8, help="random legal mappings per family (default 8)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ids", nargs="*", default=[], help="only these suite instances (and their families)")
    ap.add_argument("--max-instructions", type=int, default=2_000_000, help="skip longer kernels' generic runs")
    ap.add_argument("--within", type=float, default=8.0, help="random mappings' bound at most this x Candidate-0's")
    ap.add_argument("--doc", action="append", default=[], metavar="TARGET=PATH", help="time the generic side from PATH")
    ap.add_argument("--json", help="write every row as JSON here")
    ap.add_argument("--markdown", help="write the summary table here")
    args = ap.parse_args(argv)
    for spec in args.doc:
        name, _, path = spec.partition("=")
        DOC_OVERRIDE[name] = Path(path)
    t0 = time.perf_counter()
    all_rows: list[Row] = []
    for target in args.target or TARGETS:
        ids = [i for i in args.ids if i in {w.id for w in get_target(target).suite()}] if args.ids else []
        if args.ids and not ids:
            continue
        all_rows += rows(
            target, ids, args.mappings, args.seed, args.max_instructions, lambda s: print(s, flush=True), args.within
        )
    table = markdown(summarise(all_rows))
    print(table)
    print(f"{len(all_rows)} kernels in {time.perf_counter() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in all_rows], indent=1) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
