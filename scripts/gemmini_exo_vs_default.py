"""Library default vs Exo-style schedule on the Gemmini suite, in the cycle model.

For each suite instance: cycles of the compiler default (tiled_matmul_auto / tiled_conv_auto
of the preset's library revision, through the hardware loop FSMs) and of the Exo-style
mapping (reference §8.1: hoisted configs, unrolled streams, 4-block mvins, zero-mvin init,
scratchpad-filling tiles), the ratio default/exo, and each schedule's cycles over the roofline
bound (`bounds.bound_cycles`: array-bound cycles or minimum DRAM traffic at the preset's
bandwidth, whichever is larger). Big instances run timing-only; the instances named by --verify
(default: mm512 and mm256) also run functionally on full data and are checked against
NumPy. Compare the geometric means with Autocomp's published 5.6x (GEMM) / 2.7x (conv)
over the library (expert Exo-opt code ≈ 4x / 2.5x, reference §8.2), keeping in mind that
those were measured on a different FireSim platform.

    .venv/bin/python scripts/gemmini_exo_vs_default.py [--preset NAME] [--matmul-only] [--verify ID ...]
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from zomboss.targets.gemmini import TARGET
from zomboss.targets.gemmini.bounds import bound_cycles
from zomboss.targets.gemmini.mapping import exo_style, library_default
from zomboss.targets.gemmini.presets import DEFAULT_PRESET, PRESETS, get_preset
from zomboss.targets.gemmini.verify import run

from zomboss.target import Mode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default=DEFAULT_PRESET, choices=sorted(PRESETS))
    ap.add_argument("--matmul-only", action="store_true", help="skip the five convolutions")
    ap.add_argument(
        "--verify",
        nargs="*",
        default=["mm512", "mm256"],
        metavar="ID",
        help="instances simulated functionally and checked against NumPy",
    )
    args = ap.parse_args(argv)
    preset = get_preset(args.preset)
    params = preset.rtl.kb_params  # the KB of the preset's RTL (its feature flags, gemmini.md §4 and §9)
    cfg = TARGET.config(params)
    ops = ("matmul",) if args.matmul_only else ("matmul", "conv")
    print(f"preset {args.preset}; ratio = default cycles / exo-style cycles; x bound = cycles / roofline lower bound")
    print(
        f"{'instance':<16}{'default':>12}{'exo-style':>12}{'ratio':>8}{'def/bound':>10}{'exo/bound':>10}"
        f"  {'verified':<10}{'wall':>7}"
    )
    ratios: dict[str, list[float]] = {op: [] for op in ops}
    over: dict[str, list[tuple[float, float]]] = {op: [] for op in ops}
    ok = True
    for wl in TARGET.suite():
        if wl.op not in ops:
            continue
        t0 = time.perf_counter()
        full = wl.id in args.verify
        mode = Mode.VERIFIED if full else Mode.TIMING
        inst = TARGET.instance(wl, params)
        # fully simulated: the table in docs/targets/gemmini.md compares the model's cycles, not their extrapolation
        lib = run(inst, library_default(wl, cfg, preset.library), mode, preset=args.preset, extrapolate=False)
        exo = run(inst, exo_style(wl, cfg), mode, preset=args.preset, extrapolate=False)
        ratio = lib.cycles / exo.cycles
        bound = bound_cycles(wl, cfg, args.preset)
        ratios[wl.op].append(ratio)
        over[wl.op].append((lib.cycles / bound, exo.cycles / bound))
        verdict = "-" if not full else ("yes" if lib.verified and exo.verified else "NO")
        ok &= verdict != "NO"
        print(
            f"{wl.id:<16}{lib.cycles:>12,}{exo.cycles:>12,}{ratio:>8.2f}"
            f"{lib.cycles / bound:>10.2f}{exo.cycles / bound:>10.2f}  {verdict:<10}"
            f"{time.perf_counter() - t0:>6.1f}s",
            flush=True,
        )
    for op, rs in ratios.items():
        geo = math.exp(sum(math.log(r) for r in rs) / len(rs))
        anchor = "5.6x Autocomp / ~4x Exo-opt" if op == "matmul" else "2.7x Autocomp / ~2.5x Exo-opt"
        print(f"geomean default/exo-style ({op}, {len(rs)} instances): {geo:.2f}x   (published: {anchor})")
        for k, name in ((0, "default"), (1, "exo-style")):
            g = math.exp(sum(math.log(o[k]) for o in over[op]) / len(over[op]))
            print(f"  geomean {name} cycles / roofline bound ({op}): {g:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
