"""Number formats that need care, implemented once for every machine: BF16 rounding (ties to
even), the fp16-then-BF16 preload path, and an MXFP8 quantizer (E4M3 elements, E8M0 block
scales). A doc names them (`FORMATS`: an element type whose every write narrows; `HOOKS`:
conversions an effect may apply); hand-written simulators import the same functions, so a
doc-driven simulator and a hand-written one cannot round differently.

Arrays of BF16 values are carried as float32 holding exactly-representable values (a doc's
`bf16_packed` memory stores their 16-bit patterns instead, `bf16_bits` / `bf16_from_bits`). The MX
quantizer is PLENA's hardware recipe (targets/plena/plena.md §2), not the OCP one: the block
maximum maps into [1, 2), elements are rounded by "truncate to two fractional bits, then round
half to even", and mantissas saturate instead of carrying into the exponent. Everything here
is vectorised except the `*_scalar` forms (one value per scalar instruction).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

MX_BLOCK = 8  # elements per E8M0 scale byte
E4M3_BIAS = 7
E4M3_EXP_MIN = -7  # biased exponent 0: PLENA's "subnormal" range, value m/8 * 2^-7
E4M3_EXP_MAX = 7
E8M0_BIAS = 127
_EPS = np.float32(1e-9)  # added before log2, as PLENA's quantizers do
_SIXTEEN, _ONE, _HALF_ULP, _HIGH16 = np.uint32(16), np.uint32(1), np.uint32(0x7FFF), np.uint32(0xFFFF0000)
_QUIET = np.uint32(0x00400000)

# ---------------------------------------------------------------------------------------
# BF16
# ---------------------------------------------------------------------------------------


def bf16_round(x: npt.ArrayLike) -> np.ndarray:
    """Round float32 values to the nearest BF16 value (ties to even), returned as float32.

    NaNs stay NaN (quietened, sign kept: a payload whose low half would carry must not round
    into ±0); infinities and overflow to infinity behave as in IEEE round-to-nearest-even.
    """
    f = np.ascontiguousarray(x, dtype=np.float32)
    u = f.view(np.uint32)
    t = np.right_shift(u, _SIXTEEN)  # in-place steps: this runs once per VRAM write
    np.bitwise_and(t, _ONE, out=t)
    np.add(t, _HALF_ULP, out=t)
    np.add(t, u, out=t)
    np.bitwise_and(t, _HIGH16, out=t)
    nan = np.isnan(f)
    if nan.any():
        t[nan] = (u[nan] | _QUIET) & _HIGH16
    return t.view(np.float32)


def bf16_bits(x: np.ndarray | float) -> np.ndarray:
    """The 16-bit patterns of BF16 values (input already BF16-exact, or rounded here)."""
    return (bf16_round(np.asarray(x, dtype=np.float32)).view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def bf16_from_bits(bits: np.ndarray) -> np.ndarray:
    """float32 values of 16-bit BF16 patterns."""
    return (np.asarray(bits, dtype=np.uint32) << np.uint32(16)).view(np.float32)


_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


def bf16_scalar(x: float) -> float:
    """One value rounded to float32 (as PLENA's f32 arithmetic does) and then to BF16.

    Pure Python (struct) because the scalar unit calls it once per instruction."""
    try:
        u = _U32.unpack(_F32.pack(x))[0]
    except OverflowError:  # beyond float32: IEEE rounding gives infinity
        return math.inf if x > 0 else -math.inf
    if (u & 0x7F800000) == 0x7F800000 and u & 0x007FFFFF:
        return math.nan
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return _F32.unpack(_U32.pack(u))[0]


def bf16_bits_scalar(x: float) -> int:
    """The 16-bit pattern of one BF16 value."""
    try:
        return _U32.unpack(_F32.pack(bf16_scalar(x)))[0] >> 16
    except OverflowError:
        return 0x7F80 if x > 0 else 0xFF80


def fp16_then_bf16(x: np.ndarray) -> np.ndarray:
    """FP SRAM preload path: PLENA's harness writes fp16 and the emulator widens it to BF16."""
    with np.errstate(over="ignore"):  # past fp16's range is infinity, as the preload gives
        return bf16_round(np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32))


# ---------------------------------------------------------------------------------------
# E4M3 / E8M0 decoding
# ---------------------------------------------------------------------------------------


def _e4m3_table() -> np.ndarray:
    codes = np.arange(256, dtype=np.int64)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    e = (codes >> 3) & 0xF
    m = codes & 0x7
    normal = np.ldexp(1.0 + m / 8.0, e - E4M3_BIAS)
    sub = np.ldexp(m / 8.0, E4M3_EXP_MIN)
    val = np.where(e == 0, sub, normal)
    val = np.where(e == 0xF, np.where(m == 0, np.inf, np.nan), val)  # all-ones exponent: IEEE inf/NaN
    return (sign * val).astype(np.float32)


def _e8m0_table() -> np.ndarray:
    b = np.arange(256, dtype=np.int64)
    val = np.ldexp(1.0, b - E8M0_BIAS)
    val = np.where(b == 0, 0.0, val)  # byte 0 decodes to 0 (PLENA's FpType cast)
    val = np.where(b == 255, np.inf, val)
    return val.astype(np.float32)


E4M3_VALUES = _e4m3_table()
E8M0_VALUES = _e8m0_table()


def e4m3_decode(codes: np.ndarray) -> np.ndarray:
    return E4M3_VALUES[np.asarray(codes, dtype=np.uint8)]


def e8m0_decode(codes: np.ndarray) -> np.ndarray:
    return E8M0_VALUES[np.asarray(codes, dtype=np.uint8)]


# ---------------------------------------------------------------------------------------
# MX quantization (PLENA's hardware recipe)
# ---------------------------------------------------------------------------------------


def round_hw(y: np.ndarray) -> np.ndarray:
    """PLENA's mantissa rounding: truncate to two fractional bits, then round half to even."""
    y = np.asarray(y, dtype=np.float32)
    quarter = np.floor(y * np.float32(4.0)) / np.float32(4.0)
    return np.rint(quarter)


def _floor_log2(x: np.ndarray) -> np.ndarray:
    """floor(log2(x + 1e-9)) computed in float32, as the Rust and PyTorch quantizers do."""
    with np.errstate(divide="ignore"):
        return np.floor(np.log2(x + _EPS)).astype(np.int32)


def e4m3_encode(v: np.ndarray) -> np.ndarray:
    """E4M3 codes of block-scaled values (|v| < 2 in normal use), PLENA's rounding."""
    v = np.asarray(v, dtype=np.float32)
    a = np.abs(v)
    raw = _floor_log2(a)
    overflow = raw > E4M3_EXP_MAX
    k = np.clip(raw, E4M3_EXP_MIN, E4M3_EXP_MAX)
    mant = a / np.ldexp(np.float32(1.0), k).astype(np.float32)
    normal = k != E4M3_EXP_MIN
    field = np.where(normal, round_hw((mant - np.float32(1.0)) * np.float32(8.0)), round_hw(mant * np.float32(8.0)))
    field = np.clip(field, 0, 7).astype(np.int32)
    field = np.where(overflow, 7, field)
    code = (np.where(v < 0, 0x80, 0) | ((k + E4M3_BIAS) << 3) | field).astype(np.uint8)
    return np.where(v == 0, np.uint8(0), code).astype(np.uint8)


def mx_quantize(x: np.ndarray, block: int = MX_BLOCK) -> tuple[np.ndarray, np.ndarray]:
    """Quantize rows (last axis a multiple of `block`) to MXFP8: (E4M3 codes, E8M0 scale codes).

    Returns uint8 arrays shaped like `x` and like `x` with the last axis divided by `block`.
    """
    x = np.asarray(x, dtype=np.float32)
    if x.shape[-1] % block:
        raise ValueError(f"MX rows must hold whole blocks of {block} elements, got {x.shape[-1]}")
    blocks = x.reshape(*x.shape[:-1], x.shape[-1] // block, block)
    amax = np.max(np.abs(blocks), axis=-1)
    e = np.clip(_floor_log2(amax), -E8M0_BIAS, E8M0_BIAS)
    zero = amax == 0
    scale_val = np.ldexp(np.float32(1.0), e).astype(np.float32)
    scale_val = np.where(zero, np.float32(1.0), scale_val)
    scaled = blocks / scale_val[..., None]
    codes = e4m3_encode(scaled).reshape(x.shape)
    scales = np.where(zero, 0, e + E8M0_BIAS).astype(np.uint8)  # e = -127 also gives byte 0 (decodes to 0)
    return codes, scales


def mx_dequantize(codes: np.ndarray, scales: np.ndarray, block: int = MX_BLOCK) -> np.ndarray:
    """float32 values of MXFP8 codes with one scale code per `block` elements of a row."""
    vals = e4m3_decode(codes)
    s = e8m0_decode(scales)
    out = vals.reshape(*vals.shape[:-1], vals.shape[-1] // block, block) * s[..., None]
    return out.reshape(vals.shape).astype(np.float32)


def mx_fake_quant(x: np.ndarray, block: int = MX_BLOCK) -> np.ndarray:
    """What a tensor becomes after a trip through HBM: quantize, then dequantize."""
    return mx_dequantize(*mx_quantize(x, block), block)


def mx_spacing(x: np.ndarray, block: int = MX_BLOCK) -> np.ndarray:
    """Per element of rows `x`, the distance from its MXFP8 code (as `mx_quantize` picks it)
    to the next larger code of its block: 2^(block exponent) · 2^k/8 with k the element's
    E4M3 exponent (the subnormal range spaced as k = -6, the larger step above it)."""
    codes, scales = mx_quantize(x, block)
    k = np.maximum(((codes.astype(np.int32) >> 3) & 0xF) - E4M3_BIAS, E4M3_EXP_MIN + 1)
    e = scales.astype(np.int32) - E8M0_BIAS
    e = np.repeat(e, block, axis=-1).reshape(codes.shape)
    out = np.ldexp(np.float32(1.0), e + k - 3).astype(np.float32)
    return np.where(np.repeat(scales, block, axis=-1).reshape(codes.shape) == 0, np.float32(0.0), out)


# ---------------------------------------------------------------------------------------
# Float functions whose last bit matters
# ---------------------------------------------------------------------------------------


def exp_scalar(x: float) -> float:
    """exp of a double by the C library (NumPy's float64 exp differs in the last bit on a few
    percent of arguments, which BF16 rounding can expose at a tie)."""
    return math.exp(x) if not math.isnan(x) else x


def reci_scalar(x: float) -> float:
    """1/x in double; ±0 gives ±infinity."""
    return (math.copysign(math.inf, x) if x == 0 else 1.0 / x) if not math.isnan(x) else x


def sqrt_scalar(x: float) -> float:
    """sqrt in double; a negative argument gives NaN."""
    return math.sqrt(x) if x >= 0 else math.nan


def _elementwise(fn: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    def run(x: np.ndarray) -> np.ndarray:
        a = np.asarray(x, dtype=np.float64)
        return np.array([fn(v) for v in a.reshape(-1).tolist()], dtype=np.float64).reshape(a.shape)

    run.__doc__ = f"{fn.__name__} on every element (one Python call each: meant for scalar registers)"
    return run


def exp32(x: np.ndarray) -> np.ndarray:
    """NumPy's float32 exp (a vector unit computing in binary32)."""
    with np.errstate(all="ignore"):
        return np.exp(np.asarray(x, dtype=np.float32))


def reci32(x: np.ndarray) -> np.ndarray:
    """1/x in float32."""
    with np.errstate(all="ignore"):
        return np.float32(1.0) / np.asarray(x, dtype=np.float32)


def rsum32(x: np.ndarray) -> np.ndarray:
    """Sum of the last axis in float32, in NumPy's pairwise order (keepdims)."""
    return np.asarray(x, dtype=np.float32).sum(axis=-1, keepdims=True, dtype=np.float32)


def mac32(c: np.ndarray, a: np.ndarray, b: np.ndarray, bt: int = 0) -> np.ndarray:
    """c + a @ b (bt=1: a @ bᵀ, b stored transposed) in float32: the product by NumPy's
    float32 matmul (BLAS sgemm, whose summation order a systolic-array model inherits), then
    one float32 addition."""
    f = np.float32
    bb = np.asarray(b, dtype=f)
    return np.asarray(c, dtype=f) + np.matmul(np.asarray(a, dtype=f), np.swapaxes(bb, -1, -2) if bt else bb)


def rmax32(x: np.ndarray) -> np.ndarray:
    """Max of the last axis in float32 by NumPy's reduction (its pick between ±0 is its own)."""
    return np.asarray(x, dtype=np.float32).max(axis=-1, keepdims=True)


def fmax(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise max that ignores a NaN operand and keeps `a` on a tie (±0), as Python's
    max(a, b) does; np.fmax's choice between ±0 depends on the array length (SIMD)."""
    a, b = np.asarray(a), np.asarray(b)
    return np.where(np.isnan(a), b, np.where(b > a, b, a))


# float operations by name (arrays in, arrays out), for effects
FUNCS: dict[str, Callable[..., np.ndarray]] = {
    "exp": _elementwise(exp_scalar),
    "reci": _elementwise(reci_scalar),
    "sqrt": _elementwise(sqrt_scalar),
    "exp32": exp32,
    "reci32": reci32,
    "rsum32": rsum32,
    "mac32": mac32,
    "rmax32": rmax32,
    "fmax": fmax,
}

# ---------------------------------------------------------------------------------------
# The names a doc may use
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Format:
    """An element type held as `storage` values that every write narrows with `narrow` (None:
    plain NumPy conversion) and every read widens with `widen` (None: reads give what is
    stored; a format with `widen` and no `narrow` is read-only codes)."""

    name: str
    storage: type
    narrow: Callable[[np.ndarray], np.ndarray] | None = None
    widen: Callable[[np.ndarray], np.ndarray] | None = None  # codes -> values on every read

    @property
    def coded(self) -> bool:
        """Whether storage holds the format's own bit encoding (read through `widen`), so that
        the same bytes seen as another type mean something: a byte view of a `bf16_packed` row."""
        return self.widen is not None


# Two BF16 element types, equal in every value an effect computes: `bf16` keeps float32 values
# rounded to BF16 (4 bytes an element, read without conversion: the form PLENA's doc and its
# hand-written simulator share), `bf16_packed` keeps the 16-bit patterns (2 bytes an element, as
# hardware stores them, so byte views and external memories see real BF16 bytes).
FORMATS: dict[str, Format] = {
    "bf16": Format("bf16", np.float32, bf16_round),
    "bf16_packed": Format("bf16_packed", np.uint16, bf16_bits, bf16_from_bits),
    "e4m3": Format("e4m3", np.uint8, None, e4m3_decode),  # MX element codes (PLENA's E4M3 table)
    "e8m0": Format("e8m0", np.uint8, None, e8m0_decode),  # MX scale codes: 2^(b - 127); 0 decodes to 0
}

# element-wise conversions by name (arrays in, float32 arrays out); MX works on the last axis
HOOKS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "bf16": bf16_round,
    "fp16_bf16": fp16_then_bf16,
    "mxfp8": mx_fake_quant,
    "mx_codes": lambda x: mx_quantize(x)[0],  # E4M3 codes of blocks of MX_BLOCK along the row
    "mx_scales": lambda x: mx_quantize(x)[1],  # their E8M0 scale codes, one per block
}
