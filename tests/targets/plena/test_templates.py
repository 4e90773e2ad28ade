"""`zomboss.targets.plena.templates`: the code templates every PLENA lowering is built from,
run on the simulator. A template's variants (the compiler's choice and the alternative the
mapping may pick) compute the same thing, and that thing is what the reference says."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from zomboss.targets.plena import templates as tp
from zomboss.targets.plena.builder import Asm
from zomboss.targets.plena.config import PlenaConfig
from zomboss.targets.plena.layout import Geometry, VramTensor
from zomboss.targets.plena.run import PlenaRun
from zomboss.targets.plena.simulator import simulate


@pytest.fixture(scope="module")
def cfg() -> PlenaConfig:
    return PlenaConfig.from_params()


@pytest.fixture(scope="module")
def geo(cfg: PlenaConfig) -> Geometry:
    return Geometry.from_params(cfg.kb.params)


def _fp(cfg: PlenaConfig, **slots: float) -> np.ndarray:
    fp = np.zeros(cfg.fpsram_size, np.float32)
    for slot, v in slots.items():
        fp[int(slot[1:])] = v
    return fp


def _run(cfg: PlenaConfig, asm: Asm, **kw: Any) -> PlenaRun:
    return simulate(asm.program(), cfg, **kw)


@pytest.mark.parametrize("strategy", ["elementwise", "sliding_window"])
def test_causal_mask_is_zero_on_and_below_the_diagonal(cfg: PlenaConfig, geo: Geometry, strategy: str) -> None:
    mask = VramTensor("mask", 0, geo.mlen, geo.mlen, geo.mlen, geo.vlen)
    asm = Asm()
    tp.causal_mask(asm, geo, mask, stage=geo.fpsram - 2 * geo.mlen, strategy=strategy)
    fp = _fp(cfg, s2=-np.inf)  # FP_RECI_HIDDEN_OR_NEG_INF holds -inf while masking
    got = _run(cfg, asm, fpsram_init=fp).vram[: geo.mlen * geo.vlen].reshape(geo.mlen, geo.vlen)[:, : geo.mlen]
    want = np.where(np.tri(geo.mlen, dtype=bool), 0.0, -np.inf)
    np.testing.assert_array_equal(got, want)


def test_silu_gate_rolled_and_unrolled_compute_silu_times_gate(cfg: PlenaConfig, geo: Geometry) -> None:
    rows = 4
    up = VramTensor("up", 0, rows, geo.vlen, rows, geo.vlen)
    gate = VramTensor("gate", up.size, rows, geo.vlen, rows, geo.vlen)
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal(up.size).astype(np.float32), rng.standard_normal(gate.size).astype(np.float32)
    init = np.concatenate([x, g])
    fp = _fp(cfg, s5=1.0)  # FP_ONE
    outs = []
    for unroll in (True, False):
        asm = Asm()
        tp.silu_gate(asm, geo, up, gate, tmp=2 * up.size, unroll=unroll)
        outs.append(_run(cfg, asm, vram_init=init, fpsram_init=fp).vram[: up.size].copy())
    np.testing.assert_array_equal(outs[0], outs[1])
    want = x / (1.0 + np.exp(-x)) * g
    np.testing.assert_allclose(outs[0], want, rtol=0.05, atol=0.02)


def test_the_scales_are_the_references() -> None:
    assert tp.softmax_scale(64) == 0.125 and tp.attention_scale(16) == 0.25
