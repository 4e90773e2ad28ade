"""Measure what one CPU-issued RoCC command costs in the C that `zomboss export gemmini` writes.

Exports CPU-issued streams (the Exo-style mapping: the CPU issues every mvin, preload, compute
and mvout) of several shapes in both export forms (straight-line macros, and the table
replayed by a switch), runs each on Spike with the Gemmini extension, where `Cycles taken`
counts retired instructions between the kernel's two `read_cycles()`, and takes per form the
mean of the rows' instructions per command (the model charges a per-command cost only; the
kernel's few fixed instructions are inside the fitted `kernel_overhead`). Every kernel must
also print "Correct result".

    python scripts/fit_cpu_issue.py              # measure and fit; prints the rows and the fit
    python scripts/fit_cpu_issue.py --check      # exit 1 unless targets/gemmini/issue.py's
                                                 # per-command counts are within 10 % of every row

The committed constants (`targets/gemmini/issue.py`) come from one run of this script; the
timing model multiplies them by the preset's `cpu_cpi`. Spike is the bundle beside the project
(`../shared/tools/spike`, or --spike DIR); it needs riscv64-unknown-elf-gcc.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from zomboss.targets.gemmini.export import export_c
from zomboss.targets.gemmini.issue import INSTRUCTIONS_PER_COMMAND, Form

from zomboss.target import get_target

ROOT = Path(__file__).resolve().parents[1]
SPIKE = ROOT.parent / "shared" / "tools" / "spike"
TOLERANCE = 0.10

# CPU-issued streams: matmuls with and without bias/ReLU and ragged tiles, 3x3 and 1x1 convs,
# a strided conv; 98 to 1,190 commands (enough that the fixed part does not dominate a row)
SHAPES = (
    "matmul:M=128,N=128,K=128",
    "matmul:M=64,N=48,K=80,bias=1,relu=1",
    "matmul:M=52,N=48,K=80,bias=1,relu=1",
    "conv:N=1,H=8,W=8,C=16,K=32,R=3,S=3,stride=1,pad=1",
    "conv:N=1,H=14,W=14,C=32,K=32,R=3,S=3,stride=2,pad=1",
    "conv:N=1,H=8,W=8,C=64,K=16,R=1,S=1,stride=1,pad=0",
)
FORMS: dict[Form, int] = {"straight": 1 << 62, "table": 0}  # the export's straight_limit per form


@dataclass(frozen=True)
class Row:
    """One exported kernel measured on Spike."""

    shape: str
    form: Form
    commands: int
    instructions: int

    @property
    def per_command(self) -> float:
        return self.instructions / self.commands


def unpack(bundle: Path, dest: Path) -> Path:
    """Spike, libgemmini and the rocc-tests headers, unpacked from the bundle into `dest`."""
    with tarfile.open(bundle / "spike-gemmini.tar.xz") as tar:
        tar.extractall(dest, filter="data")
    return dest


def run_on_spike(bundle: Path, spk_root: Path, c_file: Path) -> int:
    """Compile and run one exported test; its retired instructions between the kernel's two
    `read_cycles()` (SystemExit unless it printed "Correct result")."""
    env = {**os.environ, "SPK_ROOT": str(spk_root), "SPIKE_TIMEOUT": "600"}
    res = subprocess.run(
        ["bash", str(bundle / "run_gemmini_c.sh"), str(c_file)], capture_output=True, text=True, env=env, timeout=900
    )
    found = re.search(r"Cycles taken: (\d+)", res.stdout)
    if res.returncode != 0 or found is None or "Correct result" not in res.stdout:
        raise SystemExit(f"{c_file.name}: not a correct run on Spike:\n{res.stdout[-600:]}{res.stderr[-600:]}")
    return int(found.group(1))


def measure(bundle: Path, spk_root: Path, work: Path, shapes: tuple[str, ...] = SHAPES) -> list[Row]:
    """Every shape in every form, exported as `zomboss export` writes it and run on Spike."""
    target = get_target("gemmini")
    rows: list[Row] = []
    for shape in shapes:
        wl = target.workload(shape)
        inst = target.instance(wl, {})
        mapping = target.reference_mappings(wl, {})["exo"]
        program = target.lower(inst, mapping)
        bufs = inst.buffers
        addrs = {k: v for k, v in bufs.__dict__.items() if k != "scale_bits"}
        for form, limit in FORMS.items():
            name = re.sub(r"[^A-Za-z0-9]+", "_", shape)
            c_file = export_c(wl, program, work / f"{name}_{form}.c", addrs, bufs.scale_bits, straight_limit=limit)
            rows.append(Row(shape, form, len(program.instrs), run_on_spike(bundle, spk_root, c_file)))
            print(
                f"{shape:55s} {form:8s} {rows[-1].commands:6d} commands {rows[-1].per_command:6.2f} instr/cmd",
                file=sys.stderr,
            )
    return rows


def fit(rows: list[Row]) -> dict[Form, float]:
    """Per form, the mean instructions per command over its rows."""
    return {form: float(np.mean([r.per_command for r in rows if r.form == form])) for form in FORMS}


def off_rows(rows: list[Row], per_command: dict[Form, float] = INSTRUCTIONS_PER_COMMAND) -> list[tuple[Row, float]]:
    """The rows whose measured instructions per command differ from the model's by over 10 %."""
    errs = [(r, per_command[r.form] / r.per_command - 1.0) for r in rows]
    return [(r, e) for r, e in errs if abs(e) > TOLERANCE]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spike", type=Path, default=SPIKE, help="the Spike bundle folder (default: %(default)s)")
    ap.add_argument(
        "--check", action="store_true", help="exit 1 unless the committed counts match every row within 10 %%"
    )
    ap.add_argument("--json", action="store_true", help="print the rows and the fit as JSON")
    args = ap.parse_args(argv)
    if not (args.spike / "spike-gemmini.tar.xz").exists():
        raise SystemExit(f"no Spike bundle at {args.spike} (pass --spike DIR)")
    with tempfile.TemporaryDirectory() as tmp:
        spk_root = unpack(args.spike, Path(tmp) / "spk")
        rows = measure(args.spike, spk_root, Path(tmp))
    fitted = fit(rows)
    bad = off_rows(rows)
    if args.json:
        print(
            json.dumps({"rows": [asdict(r) for r in rows], "fit": fitted, "off": [asdict(r) for r, _ in bad]}, indent=1)
        )
    else:
        for form, per in fitted.items():
            print(f"{form:8s} {per:.2f} instructions per command (committed: {INSTRUCTIONS_PER_COMMAND[form]})")
        for r, e in bad:
            print(f"off: {r.shape} {r.form}: measured {r.per_command:.2f}, model {e:+.1%}")
    return 1 if args.check and bad else 0


if __name__ == "__main__":
    sys.exit(main())
