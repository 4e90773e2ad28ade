"""BF16 rounding and PLENA's MXFP8 quantizer against hand-computed values (plena.md §2;
the E4M3 cases are the ones PLENA's emulator pins in its own unit tests)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zomboss.targets.plena import numerics as N

F32_MAX = float(np.finfo(np.float32).max)


@pytest.mark.parametrize(
    ("x", "want"),
    [
        (1.0, 1.0),
        (1 + 2**-8, 1.0),  # tie -> even mantissa 0
        (1 + 3 * 2**-8, 1 + 2**-6),  # tie -> even mantissa 2
        (1 + 2**-8 + 2**-20, 1 + 2**-7),  # just above the tie
        (-(1 + 2**-8), -1.0),
        (3.3895313892515355e38, 3.3895313892515355e38),  # largest BF16
        (F32_MAX, math.inf),  # rounds past the largest BF16
        (0.0, 0.0),
        (2**-130, 2**-130),  # float32 subnormal that BF16 keeps
    ],
)
def test_bf16_round_to_nearest_even(x: float, want: float) -> None:
    got = N.bf16_round(np.array([x], dtype=np.float32))[0]
    assert float(got) == want
    assert N.bf16_scalar(x) == want


def test_bf16_special_values() -> None:
    out = N.bf16_round(np.array([np.nan, np.inf, -np.inf], dtype=np.float32))
    assert np.isnan(out[0]) and out[1] == np.inf and out[2] == -np.inf
    assert math.isnan(N.bf16_scalar(math.nan))
    assert N.bf16_scalar(1e39) == math.inf  # beyond float32 entirely
    assert N.bf16_bits_scalar(1.0) == 0x3F80 and N.bf16_bits_scalar(-2.0) == 0xC000
    assert int(N.bf16_bits(np.float32(1.5))[0]) == 0x3FC0
    assert float(N.bf16_from_bits(np.array([0x4049]))[0]) == 3.140625


def test_fp16_preload_path() -> None:
    # PLENA preloads the FP SRAM from fp16: 1e-6 becomes the fp16 subnormal 17 * 2^-24
    assert float(N.fp16_then_bf16(np.array([1e-6]))[0]) == 17 * 2**-24
    assert float(N.fp16_then_bf16(np.array([70000.0]))[0]) == math.inf  # past fp16's range


@pytest.mark.parametrize(
    ("code", "value"),
    [
        (0x07, 0.0068359375),
        (0x87, -0.0068359375),
        (0x01, 0.0009765625),
        (0x04, 0.00390625),
        (0x00, 0.0),
        (0x38, 1.0),
        (0x3F, 1.875),
    ],
)
def test_e4m3_decode(code: int, value: float) -> None:
    assert float(N.e4m3_decode(np.array([code]))[0]) == value


@pytest.mark.parametrize(("code", "value"), [(127, 1.0), (124, 0.125), (130, 8.0), (0, 0.0), (254, 2.0**127)])
def test_e8m0_decode(code: int, value: float) -> None:
    assert float(N.e8m0_decode(np.array([code]))[0]) == value


@pytest.mark.parametrize(
    ("v", "code"),
    [
        (0.0, 0x00),
        (1.0, 0x38),
        (1.875, 0x3F),
        (-1.0, 0xB8),
        (1.0625, 0x38),  # mantissa 0.5 ulp: a tie, to even
        (1.0859375, 0x38),  # 0.6875 ulp truncates to 0.5 first, then ties to even (plain rounding gives 0x39)
        (1.1875, 0x3A),  # 1.5 ulp: tie to even 2
        (1.328125, 0x3A),  # 2.625 ulp -> 2.5 -> 2
        (-1.1875, 0xBA),
        (1.97, 0x3F),  # 7.76 ulp rounds to 8 but saturates at 7 instead of carrying
        (0.005, 0x05),  # exponent clamps to -7: PLENA's subnormal, 0.64 * 8 = 5.12 -> 5
        (2.0**-7, 0x07),  # exponent -7 counts as subnormal too: 8 saturates to 7
        (0.75, 0x34),
    ],
)
def test_e4m3_encode(v: float, code: int) -> None:
    assert int(N.e4m3_encode(np.array([v], dtype=np.float32))[0]) == code


def test_round_hw_truncates_then_rounds_half_even() -> None:
    y = np.array([0.72, 0.5, 1.5, 2.5, 2.625, 2.74, 2.76], dtype=np.float32)
    assert N.round_hw(y).tolist() == [0.0, 0.0, 2.0, 2.0, 2.0, 2.0, 3.0]


def test_mx_block_hand_computed() -> None:
    x = np.array([1, 2, 3, 4, 0.5, -1, 0, 7], dtype=np.float32)  # max 7: shared exponent 2
    codes, scales = N.mx_quantize(x)
    assert scales.tolist() == [129]
    assert codes.tolist() == [0x28, 0x30, 0x34, 0x38, 0x20, 0xA8, 0x00, 0x3E]
    np.testing.assert_array_equal(N.mx_dequantize(codes, scales), x)


def test_mx_emulator_case_block4() -> None:
    codes, scales = N.mx_quantize(np.array([0.5, 1.0, 2.0, 4.0], dtype=np.float32), block=4)
    assert codes.tolist() == [32, 40, 48, 56] and scales.tolist() == [129]


def test_mx_rounding_within_a_block() -> None:
    # block max 1.9 -> e = 0; 0.1 is normal at k = -4: (1.6 - 1) * 8 = 4.8 -> 4.75 -> 5
    x = np.array([1.9, 0.1, -0.3, 1.0, 0, 0, 0, 0], dtype=np.float32)
    q = N.mx_fake_quant(x)
    assert q[:4].tolist() == [1.875, 2.0**-4 * 1.625, -(2.0**-2) * 1.25, 1.0]


def test_mx_zero_and_extreme_blocks() -> None:
    x = np.array([[0] * 8, [2.0**127] + [0] * 7, [1e-39] * 8], dtype=np.float32)
    codes, scales = N.mx_quantize(x)
    # zero block -> byte 0; e = 127 -> 254; the 1e-9 added before log2 floors e at -30 (byte 97),
    # so a block of tiny values keeps that scale and its elements round to 0
    assert scales.tolist() == [[0], [254], [97]]
    q = N.mx_dequantize(codes, scales)
    assert q[0].tolist() == [0.0] * 8 and q[1, 0] == 2.0**127 and not q[2].any() and not codes[2].any()


def test_mx_rejects_partial_blocks() -> None:
    with pytest.raises(ValueError, match="whole blocks"):
        N.mx_quantize(np.zeros(12, dtype=np.float32))


magnitudes = st.one_of(st.just(0.0), st.floats(1e-3, 1e4), st.floats(-1e4, -1e-3))


@settings(max_examples=60, deadline=None)
@given(st.lists(magnitudes, min_size=8, max_size=8))
def test_mx_error_bound_and_idempotence(vals: list[float]) -> None:
    x = np.array(vals, dtype=np.float32)
    q = N.mx_fake_quant(x)
    amax = float(np.abs(x).max())
    assert np.all(np.abs(q - x) <= amax / 8 + 1e-30)  # 3 mantissa bits relative to the block scale
    np.testing.assert_array_equal(N.mx_fake_quant(q), q)  # decoded values re-encode exactly
    np.testing.assert_array_equal(N.bf16_round(q), q)  # and are exact in BF16
