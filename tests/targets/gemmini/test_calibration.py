"""The default timing preset reproduces the FireSim measurements it was fitted to (±15 %)."""

from __future__ import annotations

import pytest
from zomboss.targets.gemmini.default import matmul_program
from zomboss.targets.gemmini.presets import DEFAULT_PRESET, FIRESIM_F1_MEASUREMENTS
from zomboss.targets.gemmini.simulator import simulate


@pytest.mark.parametrize("x", FIRESIM_F1_MEASUREMENTS, ids=lambda x: f"{x.m}x{x.k}->{x.n}")
def test_default_preset_reproduces_firesim_within_15_percent(cfg, x):
    r = simulate(matmul_program(x.m, x.n, x.k, cfg), cfg, None, functional=False, check=False, preset=DEFAULT_PRESET)
    assert abs(r.cycles - x.cycles) <= 0.15 * x.cycles, f"model {r.cycles} vs measured {x.cycles}"
