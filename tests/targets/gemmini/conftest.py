"""Shared helpers for the Gemmini tests: program text, DRAM setup, Candidate-0, a KB cache dir."""

from __future__ import annotations

import numpy as np
import pytest
from zomboss.targets.gemmini import TARGET
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.dram import Dram
from zomboss.targets.gemmini.presets import CURRENT_LIBRARY, CURRENT_RTL

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


CURRENT = "firesim-f1-llc-current"  # the preset of the current RTL (ucb-bar/gemmini defaultConfig)
# the KB of that RTL: spad ids, first-layer pixel repeats and the OS dataflow (`Rtl.kb_params`)
RTL_FEATURES = CURRENT_RTL.kb_params


def dev_library_program(spec: str) -> Program:
    """The dev library's kernel (gemmini-rocc-tests dev: pinned halves, first-layer pixels,
    downsampling) as the current RTL runs it: its mapping lowered under that RTL's KB."""
    from zomboss.targets.gemmini.mapping import library_default

    wl = TARGET.workload(spec)
    return TARGET.lower(
        TARGET.instance(wl, RTL_FEATURES), library_default(wl, TARGET.config(RTL_FEATURES), CURRENT_LIBRARY)
    )
