"""Shared helpers for the Gemmini tests: program text, DRAM setup, Candidate-0, a KB cache dir."""

from __future__ import annotations

import numpy as np
import pytest
from zomboss.targets.gemmini import TARGET
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.dram import Dram

from zomboss.program import Instr, Program

ONE = 0x3F800000
GARB = 0xFFFFFFFF


@pytest.fixture(autouse=True)
def _kb_cache(tmp_path_factory, monkeypatch):
    """Keep compiled KBs out of the user's cache."""
    monkeypatch.setenv("ZOMBOSS_CACHE", str(tmp_path_factory.getbasetemp() / "kb-cache"))


@pytest.fixture
def cfg() -> GemminiConfig:
    return GemminiConfig.default()


def prog(*lines: tuple) -> Program:
    """A program from (mnemonic, *operands) tuples."""
    return Program("gemmini", tuple(Instr(op, tuple(args), i + 1) for i, (op, *args) in enumerate(lines)))


def put(dram: Dram, arr: np.ndarray) -> int:
    addr = dram.alloc(arr.nbytes)
    dram.write(addr, arr)
    return addr


def rand_i8(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def library_program(spec: str) -> Program:
    """Candidate-0 of a workload: the library mapping lowered on its instance's placement."""
    wl = TARGET.workload(spec)
    return TARGET.lower(TARGET.instance(wl, {}), TARGET.reference_mappings(wl, {})["library"])


SPAD_IDS = {"loop_spad_ids": 1}  # the KB of an RTL whose loop FSMs have spad ids (ucb-bar/gemmini)


def dev_library_program(spec: str) -> Program:
    """The dev library's kernel (gemmini-rocc-tests dev: pinned halves, first-layer pixels,
    downsampling) as the current RTL runs it: its mapping lowered under `loop_spad_ids = 1`."""
    from zomboss.targets.gemmini.mapping import library_default
    from zomboss.targets.gemmini.presets import CURRENT_LIBRARY

    wl = TARGET.workload(spec)
    return TARGET.lower(TARGET.instance(wl, SPAD_IDS), library_default(wl, TARGET.config(SPAD_IDS), CURRENT_LIBRARY))
