"""PLENA's architectural state and the shared vocabulary of its semantic tables.

`Machine` holds one run's state (VRAM rows of BF16 values as float32, MRAM tiles, FP/INT
SRAMs, the matrix accumulators, registers and CSRs, the HBM image) and the address checks
every family uses. Each instruction family has a table (`sem_matrix`, `sem_vector`,
`sem_scalar`, `sem_dma`, `sem_control`) mapping a mnemonic to its `Semantics`: a decoder
for the functional run and, separately, what a timing-only run executes (nothing, for an
instruction that only moves or computes data). Decoders register themselves with `@data` or
`@always`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from zomboss.program import Instr

from . import hbm as H
from .config import PlenaConfig

MASK32 = 0xFFFFFFFF

Runner = Callable[[], int | None]  # executes one static instruction; returns a jump target or None


class Fault(Exception):
    """An access the emulator would abort on (the checker normally refuses it first)."""

    def __init__(self, rule: str, message: str, values: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.rule, self.message, self.values = rule, message, dict(values or {})


class Machine:
    """Mutable architectural state of one run."""

    def __init__(self, cfg: PlenaConfig, hbm: H.Hbm) -> None:
        self.cfg = cfg
        self.V = np.zeros((cfg.vram_rows, cfg.vlen), dtype=np.float32)
        self.M = np.zeros((cfg.mram_tiles, cfg.mlen, cfg.mlen), dtype=np.float32)
        self.FS = np.zeros(cfg.fpsram_size, dtype=np.float32)
        self.IS = np.zeros(cfg.intsram_size, dtype=np.uint32)
        self.gp = [0] * 16
        self.f = [0.0] * 8
        self.a = [0] * 8
        self.csr = {"scale": 0, "stride": 1, "v_mask": 0}
        self.m_acc = np.zeros((cfg.blen, cfg.blen), dtype=np.float32)
        self.v_acc = np.zeros(cfg.blen, dtype=np.float32)
        self.hm_acc = np.zeros((cfg.broadcast, cfg.mlen, cfg.mlen), dtype=np.float32)
        self.hv_acc = np.zeros((cfg.broadcast, cfg.mlen), dtype=np.float32)
        self.hbm = hbm
        self.loops: list[list[int]] = []  # [start_pc, counter register, iteration base, line, count]
        self.executed = 0
        self.dma_cycles = 0
        self.last_dma = 0
        self.dma_phase = 0  # sum of the DMA start addresses mod hbm_block: their alignment decides costs
        self.read_blocks = 0
        self.write_blocks = 0
        self._masks: dict[int, np.ndarray] = {}
        self.row = _row_check(cfg.vlen, cfg.vram_rows)
        self.tile = _tile_check(cfg.mlen * cfg.mlen, cfg.mram_tiles)

    def lane_mask(self) -> np.ndarray:
        """Element mask of V_MASK: bit h enables elements [h*HLEN, (h+1)*HLEN)."""
        vm = self.csr["v_mask"]
        m = self._masks.get(vm)
        if m is None:
            lanes = self.cfg.vlen // self.cfg.hlen
            bits = np.array([(vm >> h) & 1 for h in range(lanes)], dtype=bool)
            m = self._masks[vm] = np.repeat(bits, self.cfg.hlen)
        return m


def _row_check(vlen: int, nrows: int) -> Callable[..., int]:
    def row(addr: int, n: int = 1) -> int:
        """VRAM row index of an address that starts n consecutive rows."""
        if addr % vlen:
            raise Fault("sim.vram_align", f"VRAM address {addr} is not a multiple of VLEN ({vlen})", {"address": addr})
        r = addr // vlen
        if r + n > nrows:
            raise Fault(
                "sim.vram_range", f"VRAM rows {r}..{r + n - 1} are outside VRAM ({nrows} rows)", {"address": addr}
            )
        return r

    return row


def _tile_check(te: int, tiles: int) -> Callable[[int], tuple[int, int]]:
    def tile(addr: int) -> tuple[int, int]:
        """(MRAM tile, element offset inside it) of an MRAM address."""
        t, off = divmod(addr, te)
        if t >= tiles:
            raise Fault("sim.mram_range", f"MRAM address {addr} is outside the {tiles} tiles", {"address": addr})
        return t, off

    return tile


Decoder = Callable[[Instr, int, Machine], Runner]


@dataclass(frozen=True)
class Semantics:
    """One mnemonic's behaviour: `run` decodes a static instruction (program counter and
    machine given) into the closure the functional run executes; `timing` is what a
    timing-only run executes instead, None when the instruction only moves or computes data
    (its cost and hazards do not depend on the data it touches)."""

    run: Decoder
    timing: Decoder | None


def data(table: dict[str, Semantics], *ops: str) -> Callable[[Decoder], Decoder]:
    """Register a decoder for `ops`: instructions a timing-only run skips."""

    def register(decode: Decoder) -> Decoder:
        table.update(dict.fromkeys(ops, Semantics(decode, None)))
        return decode

    return register


def always(table: dict[str, Semantics], *ops: str) -> Callable[[Decoder], Decoder]:
    """Register a decoder for `ops`: instructions every run executes (registers, CSRs, loops:
    what addresses and trip counts depend on)."""

    def register(decode: Decoder) -> Decoder:
        table.update(dict.fromkeys(ops, Semantics(decode, decode)))
        return decode

    return register
