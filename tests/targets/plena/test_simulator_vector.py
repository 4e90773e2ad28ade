"""Vector instructions against NumPy: element-wise ops, masks, shifts, reductions, top-k."""

from __future__ import annotations

import numpy as np
import pytest
from zomboss.targets.plena.numerics import bf16_round

RNG = np.random.default_rng(3)
A = bf16_round(RNG.standard_normal(64).astype(np.float32) * 4)
B = bf16_round(RNG.standard_normal(64).astype(np.float32) * 4)
INIT = {0: A, 64: B, 128: np.full(64, 99.0, dtype=np.float32)}  # row 2 pre-filled: masks must not keep it
FPS = [0.0, 1.5, -2.25, 10.0]  # FP SRAM constants (fp16-exact)
SETUP = """
S_ADDI_INT gp1, gp0, 64
S_ADDI_INT gp2, gp0, 128
S_LD_FP f1, gp0, 1
S_LD_FP f2, gp0, 2
S_LD_FP f3, gp0, 3
"""


def out(r) -> np.ndarray:
    return r.vram[128:192]


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ("V_ADD_VV gp2, gp0, gp1, 0", A + B),
        ("V_SUB_VV gp2, gp0, gp1, 0", A - B),  # rs1 - rs2 (the ISA text says the opposite)
        ("V_MUL_VV gp2, gp0, gp1, 0", A * B),
        ("V_ADD_VF gp2, gp0, f1, 0", A + np.float32(1.5)),
        ("V_SUB_VF gp2, gp0, f2, 0, 0", A - np.float32(-2.25)),
        ("V_SUB_VF gp2, gp0, f2, 0, 1", np.float32(-2.25) - A),  # reversed order
        ("V_SUB_VF gp2, gp0, f0, 0, 1", -A),  # negate with f0
        ("V_MUL_VF gp2, gp0, f1, 0", A * np.float32(1.5)),
        ("V_MUL_VF gp2, gp0, f0, 0", np.zeros(64, dtype=np.float32)),
        ("V_MAX_VF gp2, gp0, f1, 0", np.maximum(A, np.float32(1.5))),
        ("V_MIN_VF gp2, gp0, f2, 0", np.minimum(A, np.float32(-2.25))),
        ("V_EXP_V gp2, gp0, 0", np.exp(A)),
        ("V_RECI_V gp2, gp1, 0", np.float32(1) / B),
    ],
)
def test_elementwise(run, line: str, want: np.ndarray) -> None:
    r = run(SETUP + line, vram_init=INIT, fpsram_init=FPS)
    np.testing.assert_array_equal(out(r), bf16_round(want.astype(np.float32)))
    np.testing.assert_array_equal(r.vram[:64], A)  # sources untouched


def test_exp_clamps_its_argument(run) -> None:
    r = run("S_ADDI_INT gp1, gp0, 64\nV_EXP_V gp1, gp0, 0", vram_init={0: np.array([100.0, -100.0] * 32)})
    assert (
        r.vram[64] == bf16_round(np.array([np.exp(np.float32(88))]))[0]
        and r.vram[65] == bf16_round(np.array([np.exp(np.float32(-88))]))[0]
    )


@pytest.mark.parametrize(
    ("line", "full"),
    [
        ("V_ADD_VV gp2, gp0, gp1, 1", A + B),
        ("V_MUL_VF gp2, gp0, f1, 1", A * np.float32(1.5)),
        ("V_SUB_VF gp2, gp0, f1, 1, 1", np.float32(1.5) - A),
        ("V_MAX_VF gp2, gp0, f0, 1", np.maximum(A, 0)),
    ],
)
def test_masked_lanes_keep_rs1(run, line: str, full: np.ndarray) -> None:
    asm = SETUP + "S_ADDI_INT gp3, gp0, 5\nC_SET_V_MASK_REG gp3\n" + line  # lanes 0 and 2 (HLEN = 16)
    r = run(asm, vram_init=INIT, fpsram_init=FPS)
    lane = np.repeat([True, False, True, False], 16)
    np.testing.assert_array_equal(out(r), bf16_round(np.where(lane, full, A).astype(np.float32)))


@pytest.mark.parametrize(("shift", "lo"), [(0, 0), (5, 5), (63, 63), (64, 64), (1000, 64)])
def test_shift_moves_towards_higher_indices(run, shift: int, lo: int) -> None:
    r = run(f"S_ADDI_INT gp1, gp0, 64\nS_ADDI_INT gp3, gp0, {shift}\nV_SHFT_V gp1, gp0, gp3", vram_init={0: A})
    got = r.vram[64:128]
    assert not got[:lo].any()
    np.testing.assert_array_equal(got[lo:], A[: 64 - lo])


def test_reductions_accumulate_into_their_register(run) -> None:
    asm = (
        SETUP
        + """
V_RED_SUM f3, gp0              ; 10 + sum(A)
V_RED_MAX f1, gp1              ; max(1.5, max(B))
V_RED_MAX f2, gp0
V_RED_SUM f0, gp0              ; f0: dropped
"""
    )
    r = run(asm, vram_init=INIT, fpsram_init=FPS)
    assert r.f[3] == float(bf16_round(np.array([np.float32(10) + A.sum(dtype=np.float32)]))[0])
    assert r.f[1] == max(1.5, float(B.max())) and r.f[2] == max(-2.25, float(A.max())) and r.f[0] == 0.0


def test_reduction_max_seeded_low_keeps_negative_rows(run) -> None:
    r = run("S_LD_FP f1, gp0, 0\nV_RED_MAX f1, gp0, 0", vram_init={0: np.full(64, -3.0)}, fpsram_init=[-60000.0])
    assert r.f[1] == -3.0


def test_topk_matches_the_emulator_case(run) -> None:
    logits = np.full(64, -100.0, dtype=np.float32)
    logits[[7, 3, 9, 0, 31]] = [4.0, 4.0, 2.0, 1.0, 0.5]
    r = run("S_ADDI_INT gp1, gp0, 64\nS_ADDI_INT gp2, gp0, 10\nV_TOPK gp1, gp0, gp2, 0", vram_init={0: logits})
    assert r.intsram[10:14].tolist() == [3, 7, 9, 0]  # descending, ties to the lower index
    e = np.exp(np.array([0, 0, -2, -3], dtype=np.float32))
    np.testing.assert_array_equal(r.fpsram[64:68], bf16_round(e / e.sum(dtype=np.float32)))


def test_topk_policy_1_reads_128_logits(run) -> None:
    logits = bf16_round(RNG.standard_normal(128).astype(np.float32))
    logits[100] = 50.0
    r = run("V_TOPK gp0, gp0, gp0, 1", vram_init={0: logits})
    want = np.argsort(-logits, kind="stable")[:8]
    assert r.intsram[:8].tolist() == want.tolist() and r.intsram[0] == 100
    assert abs(float(r.fpsram[:8].sum()) - 1.0) < 0.02
