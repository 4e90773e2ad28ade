"""H_PREFETCH_M, H_PREFETCH_V and H_STORE_V: MX (de)quantization, SCALE/STRIDE CSRs, traffic."""

from __future__ import annotations

import numpy as np
from zomboss.targets.plena import hbm as H
from zomboss.targets.plena.numerics import bf16_round, mx_fake_quant

RNG = np.random.default_rng(11)
X = RNG.standard_normal((8, 128)).astype(np.float32)  # at HBM 1024: scales from 1024 + 1024
W = RNG.standard_normal((64, 128)).astype(np.float32)  # at HBM 4096: scales from 4096 + 8192


def image() -> H.Hbm:
    h = H.Hbm()
    H.place_mx_tensor(h, 1024, X)
    H.place_mx_tensor(h, 4096, W)
    return h


def test_prefetch_v_strided_block(run) -> None:
    asm = """
S_ADDI_INT gp1, gp0, 1024
C_SET_ADDR_REG a1, gp0, gp1
C_SET_SCALE_REG gp1            ; 8 x 128 elements
S_ADDI_INT gp2, gp0, 128
C_SET_STRIDE_REG gp2
S_ADDI_INT gp3, gp0, 576       ; row 4, second 64-column block
S_ADDI_INT gp4, gp0, 640       ; VRAM rows 10..13
H_PREFETCH_V gp4, gp3, a1, 1, 0
"""
    r = run(asm, hbm=image())
    np.testing.assert_array_equal(r.vram[640:896].reshape(4, 64), mx_fake_quant(X)[4:8, 64:])
    assert r.hbm_read_bytes == 64 * 4 * 2 and r.hbm_write_bytes == 0


def test_prefetch_m_strided_tile_and_sticky_csrs(run) -> None:
    asm = """
S_ADDI_INT gp1, gp0, 4096
C_SET_ADDR_REG a2, gp0, gp1
S_LUI_INT gp1, 2               ; SCALE_REG = 64 * 128
C_SET_SCALE_REG gp1
S_ADDI_INT gp2, gp0, 128
C_SET_STRIDE_REG gp2
S_ADDI_INT gp3, gp0, 64
S_ADDI_INT gp4, gp0, 4096
H_PREFETCH_M gp0, gp0, a2, 1, 0    ; columns 0..64 -> tile 0
H_PREFETCH_M gp4, gp3, a2, 1, 1    ; columns 64..128 -> tile 1 (KV precision: also MXFP8)
"""
    r = run(asm, hbm=image())
    np.testing.assert_array_equal(r.mram[0], mx_fake_quant(W)[:, :64])
    np.testing.assert_array_equal(r.mram[1], mx_fake_quant(W)[:, 64:])
    assert r.counts["H_PREFETCH_M"] == 2 and r.hbm_read_bytes == 2 * 64 * 128


def test_store_then_reload(run) -> None:
    vals = bf16_round(RNG.standard_normal((4, 64)).astype(np.float32) * 3)
    asm = """
S_ADDI_INT gp1, gp0, 8192
C_SET_ADDR_REG a1, gp0, gp1
S_ADDI_INT gp2, gp0, 256       ; a 4 x 64 tensor
C_SET_SCALE_REG gp2
H_STORE_V gp0, gp0, a1, 0, 0
S_ADDI_INT gp3, gp0, 256
H_PREFETCH_V gp3, gp0, a1, 0, 0
"""
    r = run(asm, vram_init=vals.reshape(-1))
    np.testing.assert_array_equal(r.hbm_tensor(8192, 4, 64), mx_fake_quant(vals))
    np.testing.assert_array_equal(r.vram[256:512].reshape(4, 64), mx_fake_quant(vals))
    assert r.hbm_write_bytes == 64 * 8 and r.hbm_read_bytes == 64 * 8 + 64 * 8  # RMW reads + the prefetch


def test_reads_past_the_image_are_zero(run) -> None:
    asm = "S_ADDI_INT gp1, gp0, 256\nC_SET_SCALE_REG gp1\nS_LUI_INT gp2, 100\nC_SET_ADDR_REG a1, gp0, gp2\nH_PREFETCH_V gp0, gp0, a1, 0, 0"
    r = run(asm, hbm=image(), vram_init=np.ones(256))
    assert not r.vram[:256].any()


def test_strided_store_places_rows_and_scales(run) -> None:
    vals = bf16_round(RNG.standard_normal((4, 64)).astype(np.float32))
    asm = """
S_ADDI_INT gp1, gp0, 1024      ; an 8 x 128 tensor at 0: rows 128 bytes apart
C_SET_SCALE_REG gp1
S_ADDI_INT gp2, gp0, 128
C_SET_STRIDE_REG gp2
S_ADDI_INT gp3, gp0, 576       ; rows 4..7, columns 64..128
H_STORE_V gp0, gp3, a0, 1, 0
"""
    r = run(asm, vram_init=vals.reshape(-1))
    full = r.hbm_tensor(0, 8, 128)
    np.testing.assert_array_equal(full[4:, 64:], mx_fake_quant(vals))
    assert not full[:4].any() and not full[4:, :64].any()
