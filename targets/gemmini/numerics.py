"""Gemmini's integer/fp32 numerics, vectorised, bit-exact with Spike (reference §3.9).

Spike (`ucb-bar/libgemmini:gemmini_params.h`) scales with `float y = ROUND_NEAR_EVEN(x *
scale)` where `x * scale` is an fp32 product (int32 -> fp32 conversion rounds), then
saturates to int8. NumPy's float32 arithmetic and `rint` (ties to even) reproduce this.
"""

from __future__ import annotations

import numpy as np

INT8_MIN, INT8_MAX = -128, 127
ONE_F32_BITS = 0x3F800000  # fp32 1.0: MVIN_SCALE_IDENTITY / ACC_SCALE_IDENTITY


def f32_from_bits(bits: int) -> np.float32:
    """The fp32 value of a 32-bit pattern (config instructions carry scales as bits)."""
    return np.array([bits & 0xFFFFFFFF], dtype=np.uint32).view(np.float32)[0]


def f32_bits(value: float) -> int:
    """The 32-bit pattern of an fp32 value."""
    return int(np.array([value], dtype=np.float32).view(np.uint32)[0])


def scale_sat8(x: np.ndarray, scale: np.float32) -> np.ndarray:
    """ACC_SCALE / MVIN_SCALE: fp32(x) * scale, round half to even, saturate to int8."""
    y = np.rint(x.astype(np.float32) * np.float32(scale))
    return np.clip(y, INT8_MIN, INT8_MAX).astype(np.int8)


def sat8(x: np.ndarray) -> np.ndarray:
    """Saturate integers to int8."""
    return np.clip(x, INT8_MIN, INT8_MAX).astype(np.int8)


def relu(x: np.ndarray, act: int) -> np.ndarray:
    """Activation 1 is ReLU; 0 is none (other codes are hardware Gemmini does not have by default)."""
    return np.maximum(x, 0).astype(x.dtype) if act == 1 else x


def rounding_right_shift(x: np.ndarray, shift: int) -> np.ndarray:
    """ROUNDING_RIGHT_SHIFT of gemmini_params.h: an arithmetic shift rounding to nearest even."""
    x = x.astype(np.int64)
    if shift <= 0:
        return x
    q = x >> shift
    half = (x >> (shift - 1)) & 1
    rest = (x & ((1 << (shift - 1)) - 1)) != 0 if shift > 1 else np.zeros_like(x, dtype=bool)
    return q + (half & (rest | (q & 1)).astype(np.int64))


def wrap32(x: np.ndarray) -> np.ndarray:
    """int32 two's-complement wrap-around (the accumulator's adders)."""
    return x.astype(np.int64).astype(np.int32)


def acc_readout(acc: np.ndarray, scale: np.float32, act: int) -> np.ndarray:
    """int8 read-out of accumulator rows: scale, round, saturate, then ReLU (Spike `mvout`)."""
    return relu(scale_sat8(acc, scale), act)


def scale_and_sat(x: np.ndarray, act: int, scale: float) -> np.ndarray:
    """The CPU reference of gemmini.h (`scale_and_sat`): the golden output of a kernel."""
    return acc_readout(wrap32(x), np.float32(scale), act)
