"""Benchmark: the generic (doc-driven) simulator beside the hand-written ones (issue #27).

Usage: python scripts/generic_sim_speed.py [--gemmini IDS] [--plena IDS] [--vta IDS] [--all]
       [--no-hand] [--interpreter] [--timing-only] [--json OUT]

Per suite default (Candidate-0), executed instructions per CPU second of:
* `generic functional`: the doc's effects on the machine's memories, every rule checked, timed
  (what a VERIFIED evaluation runs);
* `generic timing`: the schedule alone (no memories, no rules; register effects only, which
  addresses and loop counts need);
* `generic extrapolated`: timing-only with the steady iterations of hardware loops replayed
  (`zomboss/machine/replay.py`; Gemmini's doc has none, its loops are macro hooks), counted as
  the instructions it stands for (the replayed ones included), an equivalent rate stated apart
  (`instr` is what was executed);
* the hand-written Gemmini and PLENA simulators in the same three modes (VTA has none);
* with `--interpreter`, the generic simulator with every effect interpreted
  (`GenericSim(fast=False)`, the path before effects were compiled), in the same run.
With `--timing-only` the functional rows are left out: `--all --timing-only` times every suite
default's schedule in minutes.

IDS are comma-separated suite ids; the defaults are the suite defaults each simulator runs in
seconds (`--all`: every suite default, which takes hours at the generic simulator's baseline).
Rates are CPU time (process time), which other jobs on a shared machine distort less than wall
time, the least of `--reps` runs for timing-only ones (functional runs change their memories and
run once); the summary sums instructions and CPU seconds over the workloads of each row.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from zomboss.machine import GenericSim, Run, fp16_then_bf16
from zomboss.machine.memories import Memories
from zomboss.program import Program
from zomboss.target import Mode, get_target

GEMMINI = ("mm256", "odd_pad")
PLENA = ("lin_60m_kv", "rms_64x384", "sm_64x128", "ffn_16x128x256", "attn_64", "rope_64x128")
FIELDS = ("target", "simulator", "mode", "instructions", "equivalent", "rate")
VTA = ("dense_128", "dense_48x256x256_wrap")


@dataclass(frozen=True)
class Row:
    """One simulation: which simulator and mode, on what, how many instructions in what CPU time
    (`equivalent`: the instructions an extrapolated run stands for, skipped ones included)."""

    target: str
    workload: str
    simulator: str  # "generic", "interpreter" (the generic one, effects interpreted) or "hand-written"
    mode: str  # "functional", "timing" or "extrapolated"
    instructions: int
    cpu_s: float
    cycles: int
    equivalent: int = 0
    verified: bool | None = None

    @property
    def rate(self) -> float:
        return (self.equivalent or self.instructions) / max(self.cpu_s, 1e-9)


DEFAULT_REPS = 3  # --reps: timing-only runs are repeated and the least CPU time kept (the machine is shared)
REPS = DEFAULT_REPS


def _cpu(fn: Callable[[], object], reps: int = 1) -> tuple[object, float]:
    """fn's result and its least CPU time over `reps` runs (each after a garbage collection: the
    garbage of the runs before it is not its own)."""
    best, out = float("inf"), None
    for _ in range(reps):
        gc.collect()
        c0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - c0)
    return out, best


INTERPRETER = False  # --interpreter: also the generic simulator with every effect interpreted
FUNCTIONAL = True  # --timing-only: False


def _generic(
    target: str, wid: str, sim: GenericSim, program: Program, mem: Memories, verify: Callable[[], bool | None]
) -> list[Row]:
    """The generic simulator's functional (checked) run and its timing-only runs (and, with
    `--interpreter`, the same runs of the interpreter, `GenericSim(fast=False)`, first, on a
    copy of the memories)."""
    rows = []
    if INTERPRETER:
        slow = GenericSim(sim.kb, sim.macros, fast=False)
        copy = Memories(sim.kb, {k: len(a) for k, a in mem.arrays.items() if a.ndim == 1})
        for k, a in mem.arrays.items():
            copy.arrays[k][...] = a
        if FUNCTIONAL:
            run, cpu = _cpu(lambda: slow.run(program.instrs, copy, check=True))
            assert isinstance(run, Run)
            rows.append(Row(target, wid, "interpreter", "functional", run.instructions, cpu, run.cycles))
        run, cpu = _cpu(lambda: slow.run(program.instrs), REPS)
        assert isinstance(run, Run)
        rows.append(Row(target, wid, "interpreter", "timing", run.instructions, cpu, run.cycles))
    if FUNCTIONAL:
        run, cpu = _cpu(lambda: sim.run(program.instrs, mem, check=True))
        assert isinstance(run, Run)
        rows.append(Row(target, wid, "generic", "functional", run.instructions, cpu, run.cycles, verified=verify()))
    timed, cpu = _cpu(lambda: sim.run(program.instrs), REPS)
    assert isinstance(timed, Run)
    rows.append(Row(target, wid, "generic", "timing", timed.instructions, cpu, timed.cycles))
    ext, cpu = _cpu(lambda: sim.run(program.instrs, extrapolate=True), REPS)
    assert isinstance(ext, Run)
    replayed = (ext.extrapolation or {}).get("instructions", 0)
    rows.append(
        Row(target, wid, "generic", "extrapolated", ext.instructions - replayed, cpu, ext.cycles, ext.instructions)
    )
    return rows


def gemmini(wid: str, hand: bool) -> list[Row]:
    from zomboss.targets.gemmini import TARGET
    from zomboss.targets.gemmini import generic as G
    from zomboss.targets.gemmini.simulator import simulate

    wl = TARGET.workload(wid)
    inst = TARGET.instance(wl, {})
    program = TARGET.lower(inst, TARGET.reference_mappings(wl, {})["library"])
    sim = G.generic_sim(inst.cfg)
    dram = inst.dram()
    mem = Memories(sim.kb, {"dram": len(dram.mem) + G.SLACK})
    mem.arrays["dram"][: len(dram.mem)] = dram.mem

    def verify() -> bool:
        out = dram.copy()
        out.mem[:] = mem.arrays["dram"][: len(dram.mem)]
        return bool(inst.verify(out))

    rows = _generic("gemmini", wid, sim, program, mem, verify)
    if hand:
        if FUNCTIONAL:
            d = inst.dram()
            res, cpu = _cpu(lambda: simulate(program, inst.cfg, d, functional=True, timing=True))
            n = sum(res.counts.values())  # type: ignore[attr-defined]
            rows.append(Row("gemmini", wid, "hand-written", "functional", n, cpu, res.cycles, verified=inst.verify(d)))  # type: ignore[attr-defined]
        n = 0  # the instructions of the full run, what the extrapolated one stands for
        for how, ext in (("timing", False), ("extrapolated", True)):
            res, cpu = _cpu(lambda ext=ext: simulate(program, inst.cfg, None, functional=False, extrapolate=ext), REPS)
            k = sum(res.counts.values())  # type: ignore[attr-defined]
            n = n or k
            rows.append(Row("gemmini", wid, "hand-written", how, k, cpu, res.cycles, n if ext else 0))  # type: ignore[attr-defined]
    return rows


def plena(wid: str, hand: bool) -> list[Row]:
    from zomboss.targets.plena import TARGET
    from zomboss.targets.plena.simulator import simulate
    from zomboss.targets.plena.verify import check_output

    wl = TARGET.workload(wid)
    inst = TARGET.instance(wl, {})
    k = TARGET.kernel(inst, None)
    hbm0, fp = inst.staged(k.layout)
    sim = GenericSim(inst.cfg.kb)
    img = hbm0.array()
    mem = Memories(inst.cfg.kb, {"hbm": 2 * img.size})  # room for what the kernel stores
    mem.arrays["hbm"][: img.size] = img
    mem.arrays["fpsram"][: fp.size, 0] = fp16_then_bf16(fp)
    rows = _generic("plena", wid, sim, k.program, mem, lambda: None)
    if hand:
        if FUNCTIONAL:
            res, cpu = _cpu(lambda: simulate(k.program, inst.cfg, hbm0, fpsram_init=fp))
            ok = check_output(0, res, k.layout, inst.reference, hbm0).passed  # type: ignore[arg-type]
            n = res.instructions  # type: ignore[attr-defined]
            rows.append(Row("plena", wid, "hand-written", "functional", n, cpu, res.cycles["rtl"], verified=ok))  # type: ignore[attr-defined]
        n = 0  # the instructions of the full run, what the extrapolated one stands for
        for how, ext in (("timing", False), ("extrapolated", True)):
            res, cpu = _cpu(
                lambda ext=ext: simulate(k.program, inst.cfg, check=False, functional=False, extrapolate=ext), REPS
            )
            r = res.instructions  # type: ignore[attr-defined]
            n = n or r
            rows.append(Row("plena", wid, "hand-written", how, r, cpu, res.cycles["rtl"], n if ext else 0))  # type: ignore[attr-defined]
    return rows


def vta(wid: str, hand: bool) -> list[Row]:
    t = get_target("vta")
    wl = t.workload(wid)
    inst = t.instance(wl, {}, 0)
    m = t.reference_mappings(wl, {})["library"]
    rows = []
    for mode, name in ((Mode.VERIFIED, "functional"), (Mode.TIMING, "timing"))[0 if FUNCTIONAL else 1 :]:
        ev, cpu = _cpu(
            lambda mode=mode: t.evaluate(inst, m, mode, extrapolate=False), REPS if mode is Mode.TIMING else 1
        )
        e = ev  # CPU time here includes the lowering
        rows.append(Row("vta", wid, "generic", name, e.instructions, cpu, e.cycles, verified=e.verified))  # type: ignore[attr-defined]
    return rows


def summary(rows: list[Row]) -> list[tuple[str, str, str, int, int, float]]:
    """Per (target, simulator, mode): instructions, equivalent instructions, rate over all rows."""
    out = []
    modes = ("functional", "timing", "extrapolated")
    sims = ("interpreter", "generic", "hand-written")
    keys = sorted(
        {(r.target, r.simulator, r.mode) for r in rows}, key=lambda k: (k[0], sims.index(k[1]), modes.index(k[2]))
    )
    for key in keys:
        sel = [r for r in rows if (r.target, r.simulator, r.mode) == key]
        n = sum(r.instructions for r in sel)
        eq = sum(r.equivalent or r.instructions for r in sel)
        cpu = sum(r.cpu_s for r in sel)
        out.append((*key, n, eq, eq / max(cpu, 1e-9)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gemmini", default=",".join(GEMMINI), help="suite ids ('' for none)")
    ap.add_argument("--plena", default=",".join(PLENA), help="suite ids ('' for none)")
    ap.add_argument("--vta", default=",".join(VTA), help="suite ids ('' for none)")
    ap.add_argument("--all", action="store_true", help="every suite default of the three targets")
    ap.add_argument("--no-hand", action="store_true", help="the generic simulator alone")
    ap.add_argument("--interpreter", action="store_true", help="also the generic simulator's interpreter path")
    ap.add_argument("--timing-only", action="store_true", help="leave out the functional rows")
    ap.add_argument(
        "--reps", type=int, default=DEFAULT_REPS, help="timing-only runs per row (the least CPU time is kept)"
    )
    ap.add_argument("--json", help="write the rows and the summary as JSON here")
    args = ap.parse_args(argv)
    global INTERPRETER, REPS, FUNCTIONAL
    INTERPRETER, REPS, FUNCTIONAL = args.interpreter, max(1, args.reps), not args.timing_only
    runs = {"gemmini": gemmini, "plena": plena, "vta": vta}
    ids = {name: [w for w in getattr(args, name).split(",") if w] for name in runs}
    if args.all:
        ids = {name: [w.id for w in get_target(name).suite()] for name in runs}
    rows: list[Row] = []
    print(f"{'target':8} {'workload':16} {'simulator':13} {'mode':13} {'instr':>9} {'cpu s':>7} {'instr/s':>11} cycles")
    for name, fn in runs.items():
        for wid in ids[name]:
            for r in fn(wid, not args.no_hand):
                rows.append(r)
                eq = f" (stands for {r.equivalent:,})" if r.equivalent else ""
                ok = "" if r.verified is None else f" verified={r.verified}"
                print(
                    f"{r.target:8} {r.workload:16} {r.simulator:13} {r.mode:13} {r.instructions:>9,} "
                    f"{r.cpu_s:>7.3f} {r.rate:>11,.0f} {r.cycles:,}{eq}{ok}",
                    flush=True,
                )
    print("\nsummary (instructions and CPU seconds summed over the workloads; extrapolated: equivalent)")
    print(f"{'target':8} {'simulator':13} {'mode':13} {'instr':>10} {'equivalent':>11} {'instr/s':>11}")
    table = summary(rows)
    for target, sim, mode, n, eq, rate in table:
        print(f"{target:8} {sim:13} {mode:13} {n:>10,} {eq:>11,} {rate:>11,.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "rows": [asdict(r) | {"rate": r.rate} for r in rows],
                    "summary": [dict(zip(FIELDS, s, strict=True)) for s in table],
                    "load": [round(x, 2) for x in os.getloadavg()],
                },
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
