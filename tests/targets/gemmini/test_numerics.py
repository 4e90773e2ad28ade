"""Gemmini's fp32 scaling and rounding shift match the C definitions of gemmini_params.h."""

from __future__ import annotations

import numpy as np
import pytest
from zomboss.targets.gemmini.numerics import (
    acc_readout,
    f32_bits,
    f32_from_bits,
    rounding_right_shift,
    scale_and_sat,
    scale_sat8,
)


def test_f32_bits_round_trip():
    assert f32_bits(1.0) == 0x3F800000
    assert f32_from_bits(0x3C000000) == np.float32(1 / 128)
    assert f32_bits(float(f32_from_bits(0x40490FDB))) == 0x40490FDB


@pytest.mark.parametrize(
    ("x", "scale", "want"),
    [
        (3, 0.5, 2),  # 1.5 -> 2 (ties to even)
        (5, 0.5, 2),  # 2.5 -> 2
        (7, 0.5, 4),  # 3.5 -> 4
        (-5, 0.5, -2),  # -2.5 -> -2
        (-7, 0.5, -4),
        (1000, 1.0, 127),  # saturates
        (-1000, 1.0, -128),
        (100, 0.3333333, 33),
    ],
)
def test_scale_rounds_half_to_even_and_saturates(x, scale, want):
    assert scale_sat8(np.array([x], dtype=np.int32), np.float32(scale))[0] == want


def test_scale_is_an_fp32_product():
    # 2^24 + 1 is not representable in fp32: the int32 -> fp32 conversion rounds it first
    x = np.array([(1 << 24) + 1], dtype=np.int32)
    got = scale_sat8(x, np.float32(2.0**-24))
    assert got[0] == 1


def test_acc_readout_applies_relu_after_saturation():
    x = np.array([-300, -5, 0, 5, 300], dtype=np.int32)
    assert acc_readout(x, np.float32(1.0), 1).tolist() == [0, 0, 0, 5, 127]
    assert acc_readout(x, np.float32(1.0), 0).tolist() == [-128, -5, 0, 5, 127]


def _rrs_reference(x: int, shift: int) -> int:
    """ROUNDING_RIGHT_SHIFT written out for one integer (gemmini_params.h)."""
    if shift <= 0:
        return x
    q = x >> shift
    r = (x >> (shift - 1)) & 1
    rest = (x & ((1 << (shift - 1)) - 1)) != 0 if shift > 1 else False
    return q + (r & (int(rest) | (q & 1)))


def test_rounding_right_shift_matches_the_c_macro():
    xs = np.arange(-70, 71, dtype=np.int64)
    for shift in range(0, 6):
        got = rounding_right_shift(xs, shift).tolist()
        assert got == [_rrs_reference(int(x), shift) for x in xs]


def test_scale_and_sat_wraps_the_accumulator_first():
    big = np.array([(1 << 31) + 5], dtype=np.int64)  # wraps to a large negative int32
    assert scale_and_sat(big, 0, 1.0)[0] == -128
