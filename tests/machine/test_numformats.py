"""The core's number-format hooks (`zomboss.numformats`): BF16 round-to-nearest-even and the
MXFP8 recipe against independent pure-Python references, the one implementation PLENA's
hand-written simulator uses, and their use by name from a doc's effects."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zomboss.doc import parse_doc
from zomboss.knowledge import compile_doc
from zomboss.machine import Memories, apply
from zomboss.machine import numformats as nf


def _f32(bits: int) -> float:
    return float(np.array([bits], dtype=np.uint32).view(np.float32)[0])


def _bf16_value(p: int) -> Fraction:
    """The value of a non-negative BF16 pattern; 0x7F80 (infinity) counts as 2^128, where
    IEEE rounding puts the overflow threshold."""
    return Fraction(2**128) if p == 0x7F80 else Fraction(_f32(p << 16))


def _bf16_reference(bits: int) -> int:
    """BF16 pattern of a float32 pattern by exact comparison with its two neighbours."""
    sign, mag = bits & 0x80000000, bits & 0x7FFFFFFF
    if mag >= 0x7F800000:  # inf stays inf; NaN: any NaN will do
        return bits >> 16 if mag == 0x7F800000 else 0x7FC0
    lo = mag >> 16
    x, a, b = Fraction(_f32(mag)), _bf16_value(lo), _bf16_value(lo + 1)
    pick = lo if x - a < b - x or (x - a == b - x and lo % 2 == 0) else lo + 1
    return (sign >> 16) | pick


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=16))
def test_bf16_round_is_round_to_nearest_even(bits: list[int]) -> None:
    x = np.array(bits, dtype=np.uint32).view(np.float32)
    got = nf.bf16_round(x).view(np.uint32) >> 16
    for b, g, v in zip(bits, got.tolist(), x.tolist(), strict=True):
        want = _bf16_reference(b)
        if want == 0x7FC0:
            assert math.isnan(_f32(g << 16))
            assert math.isnan(nf.bf16_scalar(v))
        else:
            assert g == want, hex(b)
            assert nf.bf16_bits_scalar(v) == want  # the scalar unit's form agrees


def _mx_reference(block: list[float]) -> list[float]:
    """The MX recipe of plena.md §2 one element at a time: the scale 2^e with
    e = floor(log2(amax + 1e-9)) in float32; each scaled value's exponent k clamps to
    [-7, 7]; its mantissa field, m·8 (m - 1 for a normal k), is truncated to quarters,
    rounded half to even and saturated at 7."""
    amax = max(abs(v) for v in block)
    if amax == 0:
        return [0.0] * len(block)
    e = max(-127, min(127, math.floor(float(np.log2(np.float32(amax) + np.float32(1e-9))))))
    out = []
    for v in block:
        s = float(np.float32(v) / np.float32(2.0**e))
        if s == 0:
            out.append(0.0)
            continue
        raw = math.floor(float(np.log2(np.float32(abs(s)) + np.float32(1e-9))))
        k = max(-7, min(7, raw))
        mant = abs(s) / 2.0**k
        y = (mant - 1) * 8 if k != -7 else mant * 8
        field = min(7, max(0, round(math.floor(y * 4) / 4)))  # Python's round: half to even
        field = 7 if raw > 7 else field
        val = (1 + field / 8 if k != -7 else field / 8) * 2.0**k
        out.append(math.copysign(val * 2.0**e, v))
    return out


finite = st.floats(-1e6, 1e6, allow_nan=False, width=32)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, min_size=8, max_size=8), st.integers(-20, 20))
def test_mx_fake_quant_follows_the_recipe(vals: list[float], shift: int) -> None:
    x = np.ldexp(np.array(vals, dtype=np.float32), shift).astype(np.float32)
    got = nf.mx_fake_quant(x).tolist()
    assert got == _mx_reference(x.tolist())
    codes, scales = nf.mx_quantize(x)
    assert nf.mx_dequantize(codes, scales).tolist() == got


def test_plena_uses_the_core_implementation() -> None:
    """One implementation: PLENA's numerics module and its semantics re-use the core's."""
    from zomboss.targets.plena import numerics, sem_dma, sem_matrix, sem_scalar, sem_vector, simulator

    for name in numerics.__all__:
        assert getattr(numerics, name) is getattr(nf, name), name
    assert sem_vector.bf16_round is sem_matrix.bf16_round is sem_dma.bf16_round is simulator.bf16_round
    assert sem_vector.bf16_round is nf.bf16_round and sem_scalar.bf16_scalar is nf.bf16_scalar


DOC = """
```isa
memory v { rows: 4, width: 8, type: bf16 }
memory s { rows: 4, width: 8, type: fp32 }
instr vadd(d: int 0..3, a: int 0..3, b: int 0..3)
  unit u
  effect { v[d] = add(v[a], v[b]) }
instr vmul(d: int 0..3, a: int 0..3, b: int 0..3)
  unit u
  effect { v[d] = mul(v[a], v[b]) }
instr mxq(d: int 0..3, a: int 0..3)
  unit u
  effect { s[d] = cast(s[a], fmt = "mxfp8") }
```
"""


@settings(max_examples=60, deadline=None)
@given(st.lists(finite, min_size=16, max_size=16))
def test_a_bf16_memory_rounds_every_write_and_cast_names_a_hook(vals: list[float]) -> None:
    kb = compile_doc(parse_doc(DOC, "t.md"), "t", {})
    mem = Memories(kb)
    x = nf.bf16_round(np.array(vals[:8], dtype=np.float32))
    y = nf.bf16_round(np.array(vals[8:], dtype=np.float32))
    mem.arrays["v"][0], mem.arrays["v"][1] = x, y
    apply(mem, kb.instrs["vadd"].effects[0], {"d": 2, "a": 0, "b": 1})
    apply(mem, kb.instrs["vmul"].effects[0], {"d": 3, "a": 0, "b": 1})
    with np.errstate(over="ignore"):
        assert mem.arrays["v"][2].tobytes() == nf.bf16_round(x + y).tobytes()  # f32 op, then BF16
        assert mem.arrays["v"][3].tobytes() == nf.bf16_round(x * y).tobytes()
    mem.arrays["s"][0] = np.array(vals[:8], dtype=np.float32)
    apply(mem, kb.instrs["mxq"].effects[0], {"d": 1, "a": 0})
    assert mem.arrays["s"][1].tobytes() == nf.mx_fake_quant(mem.arrays["s"][0]).tobytes()
