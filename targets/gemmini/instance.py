"""Gemmini instances: a workload made concrete for one seed and one configuration.

An instance fixes where the operands live in DRAM (the placement every lowering addresses)
and, on first use, the deterministic random inputs, the DRAM image holding them and the NumPy
reference of the output. The placement is computed without touching memory, so timing-only
evaluations (what a search runs by the thousand) never build the data; verified evaluations
build it once per instance and run on a copy of the image. The target keeps a small LRU of
instances, so every mapping of one workload is checked against the same inputs at the same
addresses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.dram import Dram, place
from zomboss.targets.gemmini.numerics import ONE_F32_BITS, f32_bits, scale_and_sat
from zomboss.targets.gemmini.suite import conv_out_dims

from zomboss.errors import WorkloadError
from zomboss.util import check_workload_bytes
from zomboss.workload import Workload


@dataclass(frozen=True)
class MatmulBuffers:
    """DRAM byte addresses of a matmul's operands: A (M×K int8), B (K×N int8), C (M×N int8),
    bias (N int32, repeated over rows; 0 = none), and the output scale (fp32 bits)."""

    a: int
    b: int
    c: int
    bias: int = 0
    scale_bits: int = ONE_F32_BITS


@dataclass(frozen=True)
class ConvBuffers:
    """DRAM byte addresses of a conv's operands: input N×H×W×C int8, weights R×S×C×K int8,
    output N×OH×OW×K int8, bias K int32 (0 = none), and the output scale (fp32 bits)."""

    input: int
    weights: int
    output: int
    bias: int = 0
    scale_bits: int = ONE_F32_BITS


Buffers = MatmulBuffers | ConvBuffers


@dataclass(frozen=True)
class InstanceData:
    """The inputs placed in a DRAM image and the expected output."""

    dram: Dram
    reference: np.ndarray


@dataclass(frozen=True, eq=False)
class GemminiInstance:
    """A workload with its placement (eager) and its data and reference (lazy, built once)."""

    workload: Workload
    params: Mapping[str, int]
    seed: int
    cfg: GemminiConfig
    buffers: Buffers
    scale: float  # the output scale (a power of two, exact in fp32)
    out_addr: int
    out_shape: tuple[int, ...]
    _sizes: tuple[int, ...] = field(repr=False)  # allocation sizes, in placement order
    _dram_bytes: int = field(repr=False)

    @cached_property
    def data(self) -> InstanceData:
        return _data(self)

    def dram(self) -> Dram:
        """A fresh copy of the input image (a functional run writes into it)."""
        return self.data.dram.copy()

    def output(self, dram: Dram) -> np.ndarray:
        """The kernel's output as it sits in `dram` (after a functional simulation)."""
        return dram.read(self.out_addr, self.data.reference.dtype, self.out_shape)

    def verify(self, dram: Dram) -> bool:
        return bool(np.array_equal(self.output(dram), self.data.reference))


def build_instance(wl: Workload, cfg: GemminiConfig, params: Mapping[str, int], seed: int = 0) -> GemminiInstance:
    """The placement of `wl`'s operands (data and reference follow on first use)."""
    if wl.op == "matmul":
        m, n, k = wl["M"], wl["N"], wl["K"]
        bias = bool(wl.shape.get("bias", 0))
        sizes = [m * k, k * n, *([4 * n] if bias else []), m * n, cfg.dim * max(k, n)]  # slack: padded tiles
        addrs = place(sizes)
        pd = addrs[2] if bias else 0
        pc = addrs[-2]
        scale = output_scale(k)
        bufs: Buffers = MatmulBuffers(addrs[0], addrs[1], pc, pd, f32_bits(scale))
        out_shape: tuple[int, ...] = (m, n)
        nbytes = m * k + k * n + 4 * n + m * n + (1 << 16)
    elif wl.op == "conv":
        nb, h, w, c, k = wl["N"], wl["H"], wl["W"], wl["C"], wl["K"]
        r, s = wl["R"], wl["S"]
        bias = bool(wl.shape.get("bias", 1))
        oh, ow = conv_out_dims(wl)
        if oh < 1 or ow < 1:
            raise WorkloadError(f"{wl.id}: the output would be empty ({oh}x{ow})")
        sizes = [nb * h * w * c, r * s * c * k, *([4 * k] if bias else []), nb * oh * ow * k, 64 * cfg.dim]
        addrs = place(sizes)
        pb = addrs[2] if bias else 0
        po = addrs[-2]
        scale = output_scale(r * s * c)
        bufs = ConvBuffers(addrs[0], addrs[1], po, pb, f32_bits(scale))
        out_shape = (nb, oh, ow, k)
        nbytes = nb * h * w * c + r * s * c * k + 4 * k + nb * oh * ow * k + (1 << 16)
    else:
        raise WorkloadError(f"{wl.id}: Gemmini has no kernels for op {wl.op!r} (ops: matmul, conv)")
    check_workload_bytes(wl.id, nbytes, timed_only=True)  # placement only; `_data` checks before allocating
    out_addr = bufs.c if isinstance(bufs, MatmulBuffers) else bufs.output
    return GemminiInstance(wl, dict(params), seed, cfg, bufs, scale, out_addr, out_shape, tuple(sizes), nbytes)


def _data(inst: GemminiInstance) -> InstanceData:
    """Random inputs for the instance's seed, written at its placement, and the reference."""
    wl = inst.workload
    check_workload_bytes(wl.id, inst._dram_bytes)  # before anything is allocated
    rng = np.random.default_rng(inst.seed)
    relu = bool(wl.shape.get("relu", 0))
    if wl.op == "matmul":
        m, n, k = wl["M"], wl["N"], wl["K"]
        a, b = _rand_i8(rng, (m, k)), _rand_i8(rng, (k, n))
        d = _bias(rng, n, k) if wl.shape.get("bias", 0) else None
        arrays = [a, b, *([d] if d is not None else [])]
        ref = matmul_reference(a, b, d, relu, inst.scale)
    else:
        nb, h, w, c, k = wl["N"], wl["H"], wl["W"], wl["C"], wl["K"]
        r, s = wl["R"], wl["S"]
        x, wt = _rand_i8(rng, (nb, h, w, c)), _rand_i8(rng, (r, s, c, k))
        bv = _bias(rng, k, r * s * c) if wl.shape.get("bias", 1) else None
        arrays = [x, wt, *([bv] if bv is not None else [])]
        ref = conv_reference(x, wt, bv, wl["stride"], wl["pad"], relu, inst.scale)
    dram = Dram(nbytes=inst._dram_bytes)
    for size in inst._sizes:  # the allocator state matches the placement
        dram.alloc(size)
    for arr, addr in zip(arrays, place(list(inst._sizes)), strict=False):
        dram.write(addr, arr)
    return InstanceData(dram, ref)


def output_scale(k: int) -> float:
    """A power-of-two output scale that keeps random int8 products of depth k mostly unsaturated.

    The sum of k products of uniform int8 values has a standard deviation of about
    sqrt(k) * 73.9^2; scaling it to about 32 spreads outputs over the int8 range. Powers of
    two are exact in fp32, so the scale itself adds no rounding.
    """
    return 2.0 ** round(math.log2(32.0 / (math.sqrt(k) * 73.9**2)))


def _rand_i8(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def _bias(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    span = int(math.sqrt(k) * 73.9**2)
    return rng.integers(-span, span + 1, size=n, dtype=np.int32)


def exact_product(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """`a @ b` over the last axis of `a` (length `k`) and the first of `b`, as int64. Products
    of 8-bit operands summed over k stay integers below 2**53 while k < 2**38, so float64
    (BLAS) computes them exactly, in every order, and far faster than NumPy's int64 product."""
    if k * 2**14 < 2**53 and a.dtype.itemsize == 1 and b.dtype.itemsize == 1:
        return np.rint(np.tensordot(a.astype(np.float64), b.astype(np.float64), axes=1)).astype(np.int64)
    return np.tensordot(a.astype(np.int64), b.astype(np.int64), axes=1)


def matmul_reference(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None, relu: bool, scale: float) -> np.ndarray:
    """scale_and_sat(A @ B + bias): the CPU reference of gemmini.h."""
    acc = exact_product(a, b, a.shape[-1])
    if bias is not None:
        acc = acc + bias.astype(np.int64)
    return scale_and_sat(acc, int(relu), scale)


def conv_reference(
    x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, stride: int, pad: int, relu: bool, scale: float
) -> np.ndarray:
    """NHWC x HWIO convolution with zero padding, + bias, then scale_and_sat (conv_cpu)."""
    n, h, wd, c = x.shape
    r, s, _, k = w.shape
    oh, ow = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    xp = np.zeros((n, h + 2 * pad, wd + 2 * pad, c), dtype=x.dtype)
    xp[:, pad : pad + h, pad : pad + wd] = x
    acc = np.zeros((n, oh, ow, k), dtype=np.int64)
    for kr in range(r):
        for kc in range(s):
            win = xp[:, kr : kr + stride * (oh - 1) + 1 : stride, kc : kc + stride * (ow - 1) + 1 : stride]
            acc += exact_product(win, w[kr, kc], c)
    if bias is not None:
        acc += bias.astype(np.int64)
    return scale_and_sat(acc, int(relu), scale)
