"""PLENA instruction-level simulator: functional (emulator-exact numerics) and timed.

Every instruction PLENA's transactional emulator decodes is executed with the emulator's
semantics (plena.md §6; the emulator is normative where PLENA's ISA text disagrees), on
NumPy state vectorised per instruction (`machine.Machine`: VRAM rows of BF16 values, MRAM
tiles, FP/INT SRAMs, the four float32 matrix accumulators, registers and CSRs, and an HBM
image in MXFP8). The semantics live in one table per instruction family (`sem_matrix`,
`sem_vector`, `sem_scalar`, `sem_dma`, `sem_control`). Programs are decoded once into
closures; hardware loops re-run the decoded closures. A timing-only run decodes only what
addresses, trip counts and costs depend on.

Every executed instruction (loop iterations included) is checked against the doc's rules by
the KB checker with the register contents it sees, and an illegal program stops with the
rule id, program line and values (`IllegalProgram`). The loop guard and the loop bookkeeping
C_BREAK can invalidate are enforced here as well.

Cycles are reported under the `rtl` and `emu` models (and optionally `overlap`), see
`timing.py`, with instruction counts per mnemonic and per unit and HBM traffic.

The entry points (`simulate`, `trace`) live here; decoding in `decode.py`, hardware loops in
`hwloop.py`, one run and its steady-state executor in `run.py`.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np
from zomboss.targets.plena import hbm as H
from zomboss.targets.plena import timing as T
from zomboss.targets.plena.config import PlenaConfig
from zomboss.targets.plena.machine import MASK32, Machine
from zomboss.targets.plena.numerics import bf16_round, fp16_then_bf16
from zomboss.targets.plena.run import PlenaRun, Run

from zomboss.errors import ZombossError
from zomboss.machine import steady as steady
from zomboss.program import Instr, Program


def _hbm_from(hbm: H.Hbm | bytes | bytearray | np.ndarray | None) -> H.Hbm:
    if isinstance(hbm, H.Hbm):
        return H.Hbm(hbm.array())
    return H.Hbm(hbm)


def _initialise(
    m: Machine,
    fpsram_init: np.ndarray | Sequence[float] | None,
    intsram_init: np.ndarray | Sequence[int] | None,
    vram_init: np.ndarray | Mapping[int, np.ndarray] | None,
    fpsram_fp16: bool,
) -> None:
    if fpsram_init is not None:
        vals = np.asarray(fpsram_init, dtype=np.float32).reshape(-1)
        if vals.size > m.FS.size:
            raise ZombossError(f"fpsram_init has {vals.size} values; the FP SRAM holds {m.FS.size}")
        m.FS[: vals.size] = fp16_then_bf16(vals) if fpsram_fp16 else bf16_round(vals)
    if intsram_init is not None:
        ivals = np.asarray(intsram_init, dtype=np.int64).reshape(-1)
        if ivals.size > m.IS.size:
            raise ZombossError(f"intsram_init has {ivals.size} values; the INT SRAM holds {m.IS.size}")
        m.IS[: ivals.size] = (ivals & MASK32).astype(np.uint32)
    if vram_init is not None:
        flat = m.V.reshape(-1)
        items = vram_init.items() if isinstance(vram_init, Mapping) else [(0, vram_init)]
        for base, data in items:
            vals = np.asarray(data, dtype=np.float32).reshape(-1)
            if base < 0 or base + vals.size > flat.size:
                raise ZombossError(
                    f"vram_init at element {base} ({vals.size} values) does not fit VRAM ({flat.size} elements)"
                )
            flat[base : base + vals.size] = bf16_round(vals)


def simulate(
    program: Program,
    cfg: PlenaConfig,
    hbm: H.Hbm | bytes | bytearray | np.ndarray | None = None,
    *,
    fpsram_init: np.ndarray | Sequence[float] | None = None,
    intsram_init: np.ndarray | Sequence[int] | None = None,
    vram_init: np.ndarray | Mapping[int, np.ndarray] | None = None,
    fpsram_fp16: bool = True,
    modes: Sequence[str] = T.DEFAULT_MODES,
    check: bool = True,
    max_instructions: int | None = None,
    functional: bool = True,
    extrapolate: bool = False,
) -> PlenaRun:
    """Run a program and return the final state with cycles under each timing mode.

    `hbm` is the initial HBM image (bytes; see `hbm.place_mx_tensor`); it is copied.
    `fpsram_init` values go through fp16 first, as PLENA's harness preloads them
    (`fpsram_fp16=False` rounds straight to BF16). `vram_init` is a flat element array placed
    at address 0, or a mapping {element address: flat values}. With `check`, every executed
    instruction is checked against the doc's rules and the first violation raises
    `IllegalProgram` (rule id, program line, values). `max_instructions` caps the executed
    instructions (LimitError beyond; a program whose loops multiplied out exceed it is
    refused before it starts): legal programs always terminate, but nested loops may take
    longer than anyone would wait.

    `functional=False` is a timing-only run: no data moves and nothing is computed, only what
    timing and control flow read (registers, CSRs, loop counters, INT SRAM, DMA addresses),
    so cycles, counts and HBM bytes equal the functional run's and the final state holds no
    data (`PlenaRun.functional` says so). The simulator's own data-access faults are not
    raised; with `check` the doc's rules still refuse every illegal instruction. A program
    whose addresses could depend on its data (`needs_data`) runs functionally anyway.

    `extrapolate` lets a timing-only run (no checker, no `overlap`) advance over the steady
    iterations of its hardware loops instead of simulating each (`_Steady`): cycles agree
    with the full run's within a fraction of a percent, `PlenaRun.steady` says what was
    extrapolated, and the final state's registers are the extrapolated ones."""
    t0 = time.perf_counter()
    with _no_gc():  # decoding allocates a few objects per static instruction and makes no cycles
        run = Run(program, cfg, _hbm_from(hbm), modes, check, max_instructions, functional, extrapolate)
        _initialise(run.m, fpsram_init, intsram_init, vram_init, fpsram_fp16)
        with np.errstate(all="ignore"):
            for _ in run.execute():
                pass
        return run.result(time.perf_counter() - t0)


@contextmanager
def _no_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def trace(
    program: Program,
    cfg: PlenaConfig,
    hbm: H.Hbm | bytes | bytearray | np.ndarray | None = None,
    *,
    fpsram_init: np.ndarray | Sequence[float] | None = None,
    intsram_init: np.ndarray | Sequence[int] | None = None,
    vram_init: np.ndarray | Mapping[int, np.ndarray] | None = None,
) -> Iterator[tuple[Instr, dict[int, int]]]:
    """The dynamic instruction stream with register contents per register operand position
    (gp and a: the value; f: the BF16 bit pattern), as `kb check` needs.

    The stream ends after the first instruction that breaks a doc rule (the consumer's checker
    reports it; executing past it could run forever, e.g. with a clobbered loop counter). A
    fault only the simulator can see (the loop guard, C_LOOP_END after C_BREAK) raises
    `IllegalProgram`."""
    run = Run(program, cfg, _hbm_from(hbm), (), check=True)
    _initialise(run.m, fpsram_init, intsram_init, vram_init, True)
    with np.errstate(all="ignore"):
        yield from run.execute(trace=True)
