"""PLENA's number formats (plena.md §2): BF16 and its MXFP8 recipe live once, in the core
(`zomboss.numformats`), so that the doc-driven simulator and this target's hand-written one
share them; this module names them for the target's code."""

from __future__ import annotations

from zomboss.machine import (
    E4M3_BIAS,
    E4M3_EXP_MAX,
    E4M3_EXP_MIN,
    E4M3_VALUES,
    E8M0_BIAS,
    E8M0_VALUES,
    MX_BLOCK,
    bf16_bits,
    bf16_bits_scalar,
    bf16_from_bits,
    bf16_round,
    bf16_scalar,
    e4m3_decode,
    e4m3_encode,
    e8m0_decode,
    fp16_then_bf16,
    mx_dequantize,
    mx_fake_quant,
    mx_quantize,
    mx_spacing,
    round_hw,
)

__all__ = [
    "E4M3_BIAS",
    "E4M3_EXP_MAX",
    "E4M3_EXP_MIN",
    "E4M3_VALUES",
    "E8M0_BIAS",
    "E8M0_VALUES",
    "MX_BLOCK",
    "bf16_bits",
    "bf16_bits_scalar",
    "bf16_from_bits",
    "bf16_round",
    "bf16_scalar",
    "e4m3_decode",
    "e4m3_encode",
    "e8m0_decode",
    "fp16_then_bf16",
    "mx_dequantize",
    "mx_fake_quant",
    "mx_quantize",
    "mx_spacing",
    "round_hw",
]
