"""The suite: the 20 instances of reference §7.3 and the inline spec grammar."""

from __future__ import annotations

import pytest
from zomboss.targets.gemmini.suite import SUITE, conv_out_dims, workload

from zomboss.errors import WorkloadError

MATMULS = {  # id: (I, J, K) with A I×K, B K×J
    "mm512": (512, 512, 512), "r50_s2_expand": (12544, 256, 64), "r50_s2_reduce": (12544, 64, 256),
    "r50_s3_expand": (3136, 512, 128), "r50_s3_reduce": (3136, 128, 512), "r50_s4_expand": (784, 1024, 256),
    "r50_s4_reduce": (784, 256, 1024), "r50_s5_expand": (196, 2048, 512), "mm1k": (1024, 1024, 1024),
    "mm256": (256, 256, 256), "skinny_32": (32, 2048, 2048), "mlp_64": (64, 2048, 2560),
    "bert_ffn1": (128, 3072, 768), "bert_qkv": (128, 768, 768), "odd_pad": (100, 200, 300),
}  # fmt: skip
CONVS = {  # id: (N, H=W, C, K, R=S, stride, pad, output H=W)
    "conv_56_64": (4, 58, 64, 64, 3, 1, 0, 56), "conv_28_128": (4, 30, 128, 128, 3, 1, 0, 28),
    "conv_14_256": (4, 16, 256, 256, 3, 1, 0, 14), "conv1_r50": (1, 224, 3, 64, 7, 2, 3, 112),
    "conv_s2": (1, 56, 128, 128, 3, 2, 1, 28),
}  # fmt: skip


def test_suite_ids_and_order() -> None:
    assert [w.id for w in SUITE] == [*MATMULS, *CONVS]


@pytest.mark.parametrize("wid", sorted(MATMULS))
def test_matmul_shapes(wid: str) -> None:
    w = workload(wid)
    assert (w.op, w["M"], w["N"], w["K"], w["bias"], w["relu"]) == ("matmul", *MATMULS[wid], 0, 0)


@pytest.mark.parametrize("wid", sorted(CONVS))
def test_conv_shapes(wid: str) -> None:
    w = workload(wid)
    n, hw, c, k, r, stride, pad, out = CONVS[wid]
    assert (w.op, w["N"], w["H"], w["W"], w["C"], w["K"], w["R"], w["S"]) == ("conv", n, hw, hw, c, k, r, r)
    assert (w["stride"], w["pad"], conv_out_dims(w)) == (stride, pad, (out, out))


def test_inline_specs() -> None:
    w = workload("matmul:M=8,N=16,K=32,bias=1")
    assert (w["M"], w["N"], w["K"], w["bias"], w["relu"]) == (8, 16, 32, 1, 0)
    c = workload("conv:N=1,H=8,W=9,C=3,K=4,R=3,S=3")
    assert (c["stride"], c["pad"], conv_out_dims(c)) == (1, 0, (6, 7))
    assert workload(w.id) == w  # the canonical spec reads back


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("mm513", "unknown Gemmini workload 'mm513'"),
        ("matmul:M=8,N=8", "missing key 'K'"),
        ("matmul:M=8,N=8,K=8,Q=1", "unknown key 'Q'"),
        ("matmul:M=8,N=x,K=8", "value of 'N' must be an integer"),
        ("matmul:M=8,N=8,K=8,relu=2", "relu=2 is outside 0..1"),
        ("conv:N=1,H=8,W=8,C=3,K=4,R=3,S=3,pad=3", "pad=3 must be smaller than the kernel"),
        ("conv:N=1,H=2,W=8,C=3,K=4,R=5,S=3", "does not fit"),
        ("conv:N=1,H=8,W=8,C=3,K=4,R=3,S=3,stride=0", "stride=0 is outside 1..2147483647"),
        ("gemv:M=1", "unknown op 'gemv'"),
    ],
)
def test_bad_specs_name_the_problem(spec: str, needle: str) -> None:
    with pytest.raises(WorkloadError, match=needle):
        workload(spec)
