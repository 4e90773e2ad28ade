"""What one CPU-issued RoCC command costs the core, from the code `export` writes for it.

The CPU issues every instruction of a program outside the hardware loops' commands, and the
exported C is what runs them: up to `STRAIGHT_LIMIT` instructions become straight-line macro
calls (the compiler folds each command's operands into a few `lui`/`addi` and the custom
instruction), a longer stream becomes a table replayed by a `switch` (`export._table_kernel`),
which loads, decodes and packs every operand at run time. The two forms cost an order of
magnitude apart, so the model charges the form the program is exported as.

`INSTRUCTIONS_PER_COMMAND` is measured, not assumed: `scripts/fit_cpu_issue.py` exports
CPU-issued streams of six shapes in both forms, runs them on Spike with the Gemmini extension
(whose `Cycles taken` counts retired instructions) and takes each form's mean instructions per
command. Rows (commands: instructions per command), Spike c703940 + libgemmini 5b1254a,
riscv64-unknown-elf-gcc 12.2 with gemmini-rocc-tests' flags:

    straight  1190: 2.09  585: 2.35  361: 2.36  163: 2.19  163: 2.23  98: 2.21  -> 2.24
    table     1190: 25.89 585: 26.05 361: 26.01 163: 26.40 163: 26.40 98: 26.57 -> 26.22

Every row is within 7 % of its form's mean (the script's `--check` holds 10 %); the kernel's
few dozen fixed instructions (call, fence, `read_cycles`) are inside the fitted `kernel_overhead`.

Cycles per command = instructions per command x `Preset.cpu_cpi`. Rocket, the core of every
preset's platform, is a single-issue in-order pipeline: it retires at most one instruction per
cycle (Asanovic et al., "The Rocket Chip Generator", UCB/EECS-2016-17), so CPI 1 is a floor;
cold instruction-cache misses of a long straight-line stream and the table's data-cache misses
and indirect-jump mispredictions raise it, by an amount no measurement in reference A.1 shows
(those kernels issue a few dozen commands). The RoCC command itself leaves at commit through a
decoupled queue (rocket-chip `LazyRoCC`'s `cmd` Decoupled port) and adds no cycle while Gemmini
accepts it; back-pressure is the reservation station's, which the model times. The report shows
each CPU-stream winner's sensitivity to the CPI.
"""

from __future__ import annotations

from typing import Literal

Form = Literal["straight", "table"]

STRAIGHT_LIMIT = 20000
"""Programs of at most this many instructions are exported as straight-line C (`export.c_source`)."""

INSTRUCTIONS_PER_COMMAND: dict[Form, float] = {"straight": 2.24, "table": 26.22}
"""RISC-V instructions the exported C retires per RoCC command (scripts/fit_cpu_issue.py)."""


def form_of(instructions: int, straight_limit: int = STRAIGHT_LIMIT) -> Form:
    """How a program of `instructions` CPU-issued instructions is exported."""
    return "straight" if instructions <= straight_limit else "table"


def issue_cycles(instructions: int, cpi: float) -> float:
    """CPU cycles to issue one command of a program of `instructions` instructions."""
    return INSTRUCTIONS_PER_COMMAND[form_of(instructions)] * cpi
