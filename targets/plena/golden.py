"""Golden references on PLENA's precision path (reference §6), and the suite's input data.

Inputs are drawn as §5.2 suggests (N(0,1) activations, weights scaled by 1/sqrt(fan_in),
attention q/k/v scaled by 0.5, RoPE tables for θ = 10000) and pass through PLENA's MXFP8
quantizer exactly as they do on the way through HBM; every intermediate the hardware keeps
in VRAM or an FP register is rounded to BF16 at the step where PLENA's own
"hardware-accurate" golden rounds it. Matrix products accumulate in float32.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from zomboss.errors import WorkloadError
from zomboss.workload import Workload

from .numerics import bf16_round, mx_fake_quant
from .templates import RMS_EPS, attention_scale, softmax_scale

ROPE_THETA = 10000.0
QKV_SCALE = 0.5

Arrays = Mapping[str, np.ndarray]


def rotate_half(x: np.ndarray) -> np.ndarray:
    """[-x2, x1] for x = [x1, x2] split at the middle of the last axis."""
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def rope_tables(rows: int, head_dim: int, theta: float = ROPE_THETA) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [rows, head_dim] for positions 0..rows-1 (HF's concatenated-halves layout)."""
    inv_freq = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    ang = np.arange(rows, dtype=np.float64)[:, None] * inv_freq[None, :]
    emb = np.concatenate([ang, ang], axis=-1)
    return np.cos(emb).astype(np.float32), np.sin(emb).astype(np.float32)


def make_inputs(wl: Workload, seed: int) -> dict[str, np.ndarray]:
    """The float32 tensors a kernel's HBM inputs are quantized from, keyed by input name."""
    rng = np.random.default_rng(seed)

    def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    s = wl.shape
    if wl.op == "linear":
        return {"X": normal(s["M"], s["K"]), "W": normal(s["K"], s["N"], scale=1 / math.sqrt(s["K"]))}
    if wl.op == "rmsnorm":
        return {"X": normal(s["rows"], s["hidden"])}
    if wl.op == "softmax":
        return {"X": normal(s["rows"], s["cols"])}
    if wl.op == "ffn":
        h, i = s["hidden"], s["inter"]
        return {
            "X": normal(s["rows"], h),
            "W_up": normal(h, i, scale=1 / math.sqrt(h)),
            "W_gate": normal(h, i, scale=1 / math.sqrt(h)),
            "W_down": normal(i, h, scale=1 / math.sqrt(i)),
        }
    if wl.op == "attention":
        return {
            "Q": normal(s["sq"], s["d"], scale=QKV_SCALE),
            "K": normal(s["skv"], s["d"], scale=QKV_SCALE),
            "V": normal(s["skv"], s["d"], scale=QKV_SCALE),
        }
    if wl.op == "rope":
        x = normal(s["rows"], s["head_dim"])
        cos, sin = rope_tables(s["rows"], s["head_dim"])
        return {"X": x, "X_rot": rotate_half(x), "COS": cos, "SIN": sin}
    raise WorkloadError(f"no golden reference for op {wl.op!r}")


def quantize_inputs(inputs: Arrays) -> dict[str, np.ndarray]:
    """What each input holds after its trip through HBM (MXFP8, block 8 along rows)."""
    return {k: mx_fake_quant(v) for k, v in inputs.items()}


def _softmax_rows(s: np.ndarray) -> np.ndarray:
    """PLENA's softmax chain on already-scaled BF16 scores: bf16 after max, subtract, exp,
    row sum and divide."""
    m = np.max(s, axis=-1, keepdims=True)
    t = bf16_round(s - m)
    e = bf16_round(np.exp(t))
    total = bf16_round(np.sum(e, axis=-1, keepdims=True, dtype=np.float32))
    return bf16_round(e / total)


def reference(wl: Workload, q: Arrays) -> np.ndarray:
    """The golden output [rows, cols] (float32 holding BF16 values) from quantized inputs."""
    s = wl.shape
    if wl.op == "linear":
        return bf16_round(q["X"] @ q["W"])
    if wl.op == "rmsnorm":
        x = q["X"]
        r = bf16_round(1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True, dtype=np.float32) + RMS_EPS))
        return bf16_round(x * r)
    if wl.op == "softmax":
        return _softmax_rows(bf16_round(q["X"] * np.float32(softmax_scale(s["cols"]))))
    if wl.op == "ffn":
        up = bf16_round(q["X"] @ q["W_up"])
        gate = bf16_round(q["X"] @ q["W_gate"])
        h = bf16_round(up / (1.0 + np.exp(-up)) * gate)
        return bf16_round(h @ q["W_down"])
    if wl.op == "attention":
        scores = bf16_round((q["Q"] @ q["K"].T) * np.float32(attention_scale(s["d"])))
        if s["causal"]:
            future = np.triu(np.ones((s["sq"], s["skv"]), dtype=bool), k=1)
            scores = np.where(future, -np.inf, scores).astype(np.float32)
        return bf16_round(_softmax_rows(scores) @ q["V"])
    if wl.op == "rope":
        return bf16_round(bf16_round(q["X"] * q["COS"]) + bf16_round(q["X_rot"] * q["SIN"]))
    raise WorkloadError(f"no golden reference for op {wl.op!r}")


def golden(wl: Workload, seed: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(raw inputs, golden output) for one seed."""
    inputs = make_inputs(wl, seed)
    return inputs, reference(wl, quantize_inputs(inputs))
