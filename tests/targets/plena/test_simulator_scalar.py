"""Scalar FP (BF16) and INT (u32) instructions, SRAM accesses, CSRs and hard-wired zeros."""

from __future__ import annotations

import math

import numpy as np
from zomboss.targets.plena.numerics import bf16_scalar

FPS = [0.0, 1.0, 2.0**-8, 3.0, -1.0, 100.0, 0.5]
LOAD = "".join(f"S_LD_FP f{i}, gp0, {i}\n" for i in range(1, 7))


def test_fp_arithmetic_rounds_to_bf16(run) -> None:
    asm = (
        LOAD
        + """
S_ADD_FP f7, f1, f2            ; 1 + 2^-8 is a tie: stays 1.0
S_ST_FP f7, gp0, 10
S_SUB_FP f7, f3, f2            ; 3 - 2^-8 -> 2.984375 (BF16 of 2.99609375)
S_ST_FP f7, gp0, 11
S_MUL_FP f7, f3, f3
S_ST_FP f7, gp0, 12
S_MAX_FP f7, f4, f6
S_ST_FP f7, gp0, 13
S_EXP_FP f7, f5                ; exp(clamp(100, -88, 88))
S_ST_FP f7, gp0, 14
S_RECI_FP f7, f3
S_ST_FP f7, gp0, 15
S_SQRT_FP f7, f3
S_ST_FP f7, gp0, 16
"""
    )
    r = run(asm, fpsram_init=FPS)
    got = r.fpsram[10:17].tolist()
    assert got == [
        1.0,
        bf16_scalar(3 - 2**-8),
        9.0,
        0.5,
        bf16_scalar(math.exp(88)),
        bf16_scalar(1 / 3),
        bf16_scalar(math.sqrt(3)),
    ]
    assert got[1] == 3.0  # 2.99609375 rounds to 3.0 in BF16 (8 significant bits)


def test_fp_special_values(run) -> None:
    r = run("S_RECI_FP f1, f0\nS_LD_FP f2, gp0, 4\nS_SQRT_FP f3, f2", fpsram_init=FPS)
    assert r.f[1] == math.inf and math.isnan(r.f[3])


def test_f0_writes_are_dropped(run) -> None:
    r = run(LOAD + "S_ADD_FP f0, f1, f3\nS_EXP_FP f0, f1\nS_ADD_FP f7, f0, f1", fpsram_init=FPS)
    assert r.f[0] == 0.0 and r.f[7] == 1.0
    assert r.cycles["emu"] == 6 + 0 + 0 + 1  # the emulator skips f0 arithmetic entirely


def test_fpsram_loads_stores_and_map(run) -> None:
    vals = np.arange(64, dtype=np.float32) / 4
    asm = """
S_ADDI_INT gp1, gp0, 200
S_LD_FP f1, gp1, 3             ; FPSRAM[203]
S_ST_FP f1, gp1, 500           ; FPSRAM[700]
S_ADDI_INT gp2, gp0, 640
S_MAP_V_FP gp2, gp1, 0         ; VRAM row 10 = FPSRAM[200..264)
"""
    r = run(asm, fpsram_init=np.concatenate([np.zeros(200), vals]))
    assert r.f[1] == 0.75 and r.fpsram[700] == 0.75
    np.testing.assert_array_equal(r.vram[640:704], vals)


def test_fpsram_preload_goes_through_fp16_unless_asked(run) -> None:
    assert run("", fpsram_init=[1e-6]).fpsram[0] == 17 * 2.0**-24
    assert run("", fpsram_init=[1e-6], fpsram_fp16=False).fpsram[0] == bf16_scalar(1e-6)


def test_integer_arithmetic_wraps_at_32_bits(run) -> None:
    asm = """
S_LUI_INT gp1, 4194303         ; 0xFFFFF000
S_ADDI_INT gp1, gp1, 4095      ; 0xFFFFFFFF
S_ADDI_INT gp2, gp1, 1         ; wraps to 0
S_SUB_INT gp3, gp0, gp1        ; 0 - 0xFFFFFFFF = 1
S_SUB_INT gp4, gp0, gp3        ; 0 - 1 = 0xFFFFFFFF
S_ADD_INT gp5, gp1, gp1        ; 0xFFFFFFFE
S_MUL_INT gp6, gp1, gp1        ; 1
S_LUI_INT gp7, 1               ; 4096
"""
    g = run(asm).gp
    assert g[1:8] == (0xFFFFFFFF, 0, 1, 0xFFFFFFFF, 0xFFFFFFFE, 1, 4096)


def test_gp0_is_hard_wired_to_zero(run) -> None:
    r = run(
        "S_ADDI_INT gp0, gp0, 5\nS_LUI_INT gp0, 3\nS_ADDI_INT gp1, gp0, 0\nS_LD_INT gp0, gp0, 0",
        check=False,
        intsram_init=[9],
    )
    assert r.gp[0] == 0 and r.gp[1] == 0


def test_intsram_loads_and_stores(run) -> None:
    r = run("S_LD_INT gp1, gp0, 2\nS_ADDI_INT gp2, gp0, 100\nS_ST_INT gp1, gp2, 23", intsram_init=[0, 0, 0xDEADBEEF])
    assert r.gp[1] == 0xDEADBEEF and r.intsram[123] == 0xDEADBEEF


def test_csrs_and_address_registers(run) -> None:
    asm = """
S_ADDI_INT gp1, gp0, 1
S_ADDI_INT gp2, gp0, 5
C_SET_ADDR_REG a3, gp1, gp2    ; the emulator takes rs1 as the high word
C_SET_ADDR_REG a4, gp0, gp2
C_SET_SCALE_REG gp2
C_SET_STRIDE_REG gp1
C_SET_V_MASK_REG gp2
"""
    r = run(asm)
    assert r.a[3] == (1 << 32) | 5 and r.a[4] == 5
    assert dict(r.csr) == {"scale": 5, "stride": 1, "v_mask": 5}


def test_csr_defaults(run) -> None:
    assert dict(run("").csr) == {"scale": 0, "stride": 1, "v_mask": 0}
