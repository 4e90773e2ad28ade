"""Matrix instructions against NumPy: every M_* op, its accumulator and its write-out."""

from __future__ import annotations

import numpy as np
import pytest
from zomboss.targets.plena import hbm as H
from zomboss.targets.plena.numerics import bf16_round, mx_fake_quant

RNG = np.random.default_rng(7)
W = RNG.standard_normal((64, 64)).astype(np.float32)
W2 = RNG.standard_normal((64, 64)).astype(np.float32)
WQ, W2Q = mx_fake_quant(W), mx_fake_quant(W2)
X = bf16_round(RNG.standard_normal((64, 64)).astype(np.float32))  # 64 VRAM rows from address 0

LOAD = """
S_ADDI_INT gp1, gp0, 4096
C_SET_SCALE_REG gp1
H_PREFETCH_M gp0, gp0, a0, 0, 0        ; W -> tile 0
S_ADDI_INT gp1, gp0, 4608
C_SET_ADDR_REG a1, gp0, gp1
S_ADDI_INT gp1, gp0, 4096
H_PREFETCH_M gp1, gp0, a1, 0, 0        ; W2 (at HBM 4608) -> tile 1
"""


@pytest.fixture(scope="module")
def image() -> H.Hbm:
    h = H.Hbm()
    H.place_mx_tensor(h, 0, W)
    H.place_mx_tensor(h, 4608, W2)
    return h


def rows(run, base: int, n: int) -> np.ndarray:
    return run.vram[base : base + n * 64].reshape(n, 64)


def test_m_mm_full_tile(run, image) -> None:
    asm = (
        LOAD
        + """
S_ADDI_INT gp2, gp0, 0          ; column slice c*MLEN
S_LUI_INT gp3, 2                ; output at 8192
C_LOOP_START gp4, 16
M_MM 0, gp2, gp0
M_MM_WO gp3, gp0, 0
S_ADDI_INT gp2, gp2, 256
S_ADDI_INT gp3, gp3, 4
C_LOOP_END gp4
"""
    )
    r = run(asm, hbm=image, vram_init=X.reshape(-1))
    np.testing.assert_array_equal(rows(r, 8192, 4), bf16_round(X[:4] @ WQ))
    assert r.counts["M_MM"] == 16 and not r.vram[8192 + 256 : 8192 + 512].any()


def test_m_mm_accumulates_over_k_tiles_in_fp32(run, image) -> None:
    # X[4, 128] column-block-major with 4 physical rows: block 0 at 0, block 1 at 256
    x = bf16_round(RNG.standard_normal((4, 128)).astype(np.float32))
    img = np.concatenate([x[:, :64].reshape(-1), x[:, 64:].reshape(-1)])
    asm = (
        LOAD
        + """
S_ADDI_INT gp5, gp0, 256
S_ADDI_INT gp6, gp0, 4352       ; tile 1, column slice 4
S_ADDI_INT gp7, gp0, 256        ; tile 0, column slice 4
S_LUI_INT gp3, 2
M_MM 0, gp7, gp0
M_MM 0, gp6, gp5
M_MM_WO gp3, gp0, 8             ; columns 8..12 of rows 128..131
"""
    )
    r = run(asm, hbm=image, vram_init=img)
    want = np.concatenate([WQ, W2Q])[:, 4:8]
    got = rows(r, 8192, 4)[:, 8:12]
    np.testing.assert_allclose(got, (x.astype(np.float64) @ want), rtol=2**-7, atol=1e-6)
    assert not rows(r, 8192, 4)[:, :8].any()


def test_m_tmm_uses_the_transposed_tile(run, image) -> None:
    asm = (
        LOAD
        + """
S_ADDI_INT gp2, gp0, 512        ; c = 8: rows 8..12 of the stored tile
S_LUI_INT gp3, 2
M_TMM 0, gp0, gp2
M_MM_WO gp3, gp0, 0
"""
    )
    r = run(asm, hbm=image, vram_init=X.reshape(-1))
    np.testing.assert_array_equal(rows(r, 8192, 4)[:, :4], bf16_round(X[:4] @ WQ[8:12, :].T))


def test_m_mm_wo_stride_register_and_clearing(run, image) -> None:
    asm = (
        LOAD
        + """
S_ADDI_INT gp2, gp0, 3          ; rows MLEN*3 elements apart
S_LUI_INT gp3, 2
M_MM 0, gp0, gp0
M_MM_WO gp3, gp2, 4
M_MM_WO gp3, gp0, 8             ; the accumulator was cleared: zeros
"""
    )
    r = run(asm, hbm=image, vram_init=X.reshape(-1))
    want = bf16_round(X[:4] @ WQ[:, :4])
    for i in range(4):
        np.testing.assert_array_equal(r.vram[8192 + i * 192 + 4 : 8192 + i * 192 + 8], want[i])
    assert not r.vram[8192 + 8 : 8192 + 12].any()


def test_m_mv_and_m_tmv(run, image) -> None:
    asm = (
        LOAD
        + """
S_ADDI_INT gp2, gp0, 12         ; element-granular offset 12
S_LUI_INT gp3, 2
M_MV 0, gp2, gp0
M_MV_WO gp3, 16
S_ADDI_INT gp4, gp0, 4096       ; tile 1 base
M_TMV 0, gp4, gp0
M_MV_WO gp3, 20
"""
    )
    r = run(asm, hbm=image, vram_init=X.reshape(-1))
    np.testing.assert_array_equal(r.vram[8192 + 16 : 8192 + 20], bf16_round(X[0] @ WQ[:, 12:16]))
    np.testing.assert_array_equal(r.vram[8192 + 20 : 8192 + 24], bf16_round(X[0] @ W2Q[0:4, :].T))


def test_m_btmm_contiguous_heads_fixed_scale(run, image) -> None:
    asm = (
        LOAD
        + """
S_ADDI_INT gp2, gp0, 32         ; head column offset h = 32
S_LUI_INT gp3, 2
M_BTMM 0, gp2, gp0
M_BMM_WO gp3, 0
"""
    )
    r = run(asm, hbm=image, vram_init=X.reshape(-1))
    out = r.vram[8192 : 8192 + 4 * 64 * 64].reshape(4, 64, 64)
    for b in range(4):
        q = X[:, b * 16 : (b + 1) * 16]
        np.testing.assert_array_equal(out[b], bf16_round((q @ WQ[:, 32:48].T) * np.float32(0.25)))


def test_m_bmm_interleaved_heads(run, image) -> None:
    asm = (
        LOAD
        + """
S_ADDI_INT gp2, gp0, 16         ; head row offset h = 16
S_LUI_INT gp3, 2
M_BMM 0, gp2, gp0
M_BMM 0, gp2, gp0               ; accumulates
M_BMM_WO gp3, 0
"""
    )
    r = run(asm, hbm=image, vram_init=X.reshape(-1))
    out = r.vram[8192 : 8192 + 4 * 64 * 64].reshape(4, 64, 64)
    for b in range(4):
        q = X.reshape(64, 16, 4)[:, :, b]
        one = (q @ WQ[16:32, :]) * np.float32(0.25)
        np.testing.assert_array_equal(out[b], bf16_round(one + one))


def test_m_bmv_and_m_btmv_honour_rd(run, image) -> None:
    asm = (
        LOAD
        + """
S_ADDI_INT gp2, gp0, 4096       ; tile 1
S_ADDI_INT gp5, gp0, 48         ; + head offset in rd
S_LUI_INT gp3, 2
M_BTMV gp5, gp2, gp0
M_BMV_WO gp3, 0
M_BMV gp5, gp2, gp0
M_BMV_WO gp3, 256
"""
    )
    r = run(asm, hbm=image, vram_init=X.reshape(-1))
    got_t = r.vram[8192 : 8192 + 256].reshape(4, 64)
    got_i = r.vram[8192 + 256 : 8192 + 512].reshape(4, 64)
    for b in range(4):
        np.testing.assert_array_equal(
            got_t[b], bf16_round((X[0, b * 16 : (b + 1) * 16] @ W2Q[:, 48:64].T) * np.float32(0.25))
        )
        np.testing.assert_array_equal(
            got_i[b], bf16_round((X[0].reshape(16, 4)[:, b] @ W2Q[48:64, :]) * np.float32(0.25))
        )


def test_bmm_scale_is_a_parameter(run, config_for, image) -> None:
    c = config_for({"bmm_scale_num": 1, "bmm_scale_den": 1})  # the RTL's behaviour: no scale
    asm = (
        LOAD
        + """
S_LUI_INT gp3, 2
M_BTMV gp0, gp0, gp0
M_BMV_WO gp3, 0
"""
    )
    r = run(asm, config=c, hbm=image, vram_init=X.reshape(-1))
    np.testing.assert_array_equal(r.vram[8192:8256], bf16_round(X[0, :16] @ WQ[:, :16].T))
