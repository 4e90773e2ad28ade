"""Machines described by their docs alone: their memories and typed views (`memories`), effects
executed on them (`effects`), the generic simulator (`simulator`) and timing model (`timing`),
the steady-state extrapolation any timing model may use (`steady`) and the number formats that
need care (`numformats`).
Imports `legality` and the layers below it; knows no particular machine.
"""

from __future__ import annotations

from zomboss.machine.effects import apply
from zomboss.machine.memories import Memories, views
from zomboss.machine.numformats import (
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
    exp32,
    exp_scalar,
    fp16_then_bf16,
    mac32,
    mx_dequantize,
    mx_fake_quant,
    mx_quantize,
    mx_spacing,
    reci32,
    reci_scalar,
    rmax32,
    round_hw,
    rsum32,
    sqrt_scalar,
)
from zomboss.machine.simulator import GenericSim, Run
from zomboss.machine.steady import Mark, Policy, Report, Skip, runs

__all__ = [
    "E4M3_BIAS",
    "E4M3_EXP_MAX",
    "E4M3_EXP_MIN",
    "E4M3_VALUES",
    "E8M0_BIAS",
    "E8M0_VALUES",
    "GenericSim",
    "MX_BLOCK",
    "Mark",
    "Memories",
    "Policy",
    "Report",
    "Run",
    "Skip",
    "apply",
    "bf16_bits",
    "bf16_bits_scalar",
    "bf16_from_bits",
    "bf16_round",
    "bf16_scalar",
    "e4m3_decode",
    "e4m3_encode",
    "e8m0_decode",
    "exp32",
    "exp_scalar",
    "fp16_then_bf16",
    "mac32",
    "mx_dequantize",
    "mx_fake_quant",
    "mx_quantize",
    "mx_spacing",
    "reci32",
    "reci_scalar",
    "rmax32",
    "round_hw",
    "rsum32",
    "runs",
    "sqrt_scalar",
    "views",
]
