"""The Gemmini benchmark suite (reference §7.3) and the op schemas of inline specs.

Matmul instances are written I×J×K as in the Exo/Autocomp sources: A is I×K, B is K×J,
so `matmul:M=I,N=J,K=K`. Conv instances use NHWC inputs and HWIO weights; the Exo
convolutions come pre-padded (pad 0 on a 58×58 input gives a 56×56 output) and, like the
Exo/Autocomp conv kernels and the instances (`instance.py`), add an int32 bias unless the spec says `bias=0`.
"""

from __future__ import annotations

from zomboss.errors import WorkloadError
from zomboss.workload import FLAG, OpSchema, Workload, parse_spec

SCHEMAS: dict[str, OpSchema] = {
    "matmul": OpSchema(
        "matmul", required=("M", "N", "K"), optional={"bias": 0, "relu": 0}, limits={"bias": FLAG, "relu": FLAG}
    ),
    "conv": OpSchema(
        "conv",
        required=("N", "H", "W", "C", "K", "R", "S"),
        optional={"stride": 1, "pad": 0, "bias": 1, "relu": 0},
        positive=("stride",),
        limits={"bias": FLAG, "relu": FLAG},
    ),
}


def _mm(name: str, i: int, j: int, k: int) -> Workload:
    return Workload(name, "matmul", {"M": i, "N": j, "K": k, "bias": 0, "relu": 0})


def _conv(name: str, n: int, hw: int, c: int, k: int, r: int, stride: int, pad: int) -> Workload:
    shape = {"N": n, "H": hw, "W": hw, "C": c, "K": k, "R": r, "S": r, "stride": stride, "pad": pad}
    return Workload(name, "conv", {**shape, "bias": 1, "relu": 0})


SUITE: tuple[Workload, ...] = (
    _mm("mm512", 512, 512, 512),
    _mm("r50_s2_expand", 12544, 256, 64),
    _mm("r50_s2_reduce", 12544, 64, 256),
    _mm("r50_s3_expand", 3136, 512, 128),
    _mm("r50_s3_reduce", 3136, 128, 512),
    _mm("r50_s4_expand", 784, 1024, 256),
    _mm("r50_s4_reduce", 784, 256, 1024),
    _mm("r50_s5_expand", 196, 2048, 512),
    _mm("mm1k", 1024, 1024, 1024),
    _mm("mm256", 256, 256, 256),
    _mm("skinny_32", 32, 2048, 2048),
    _mm("mlp_64", 64, 2048, 2560),
    _mm("bert_ffn1", 128, 3072, 768),
    _mm("bert_qkv", 128, 768, 768),
    _mm("odd_pad", 100, 200, 300),
    _conv("conv_56_64", 4, 58, 64, 64, 3, 1, 0),
    _conv("conv_28_128", 4, 30, 128, 128, 3, 1, 0),
    _conv("conv_14_256", 4, 16, 256, 256, 3, 1, 0),
    _conv("conv1_r50", 1, 224, 3, 64, 7, 2, 3),
    _conv("conv_s2", 1, 56, 128, 128, 3, 2, 1),
)

_BY_ID = {w.id: w for w in SUITE}


def conv_out_dims(wl: Workload) -> tuple[int, int]:
    """Output rows and columns of a conv workload."""
    oh = (wl["H"] + 2 * wl["pad"] - wl["R"]) // wl["stride"] + 1
    ow = (wl["W"] + 2 * wl["pad"] - wl["S"]) // wl["stride"] + 1
    return oh, ow


def workload(spec: str) -> Workload:
    """A suite id or an inline `matmul:...` / `conv:...` spec; errors name the bad part."""
    spec = spec.strip()
    if spec in _BY_ID:
        return _BY_ID[spec]
    if ":" not in spec:
        raise WorkloadError(f"unknown Gemmini workload {spec!r} (suite ids: {', '.join(_BY_ID)}; or OP:KEY=VALUE,...)")
    wl = parse_spec(spec, SCHEMAS)
    if wl.op == "conv":
        if wl["pad"] >= wl["R"] or wl["pad"] >= wl["S"]:
            raise WorkloadError(f"{spec!r}: pad={wl['pad']} must be smaller than the kernel (R={wl['R']}, S={wl['S']})")
        oh, ow = conv_out_dims(wl)
        if oh < 1 or ow < 1:
            raise WorkloadError(f"{spec!r}: the kernel does not fit the padded input (output {oh}x{ow})")
    return wl
