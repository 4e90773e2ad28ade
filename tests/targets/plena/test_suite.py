"""The PLENA suite ids and shapes, inline specs, and the baseline envelope's refusals."""

from __future__ import annotations

import pytest
from zomboss.targets.plena.suite import SUITE, check_shape, workload

from zomboss.errors import WorkloadError

EXPECTED = {
    "lin_60m_q": ("linear", {"M": 64, "K": 384, "N": 384}),
    "lin_60m_kv": ("linear", {"M": 64, "K": 384, "N": 128}),
    "lin_135m_q": ("linear", {"M": 64, "K": 576, "N": 576}),
    "lin_135m_up": ("linear", {"M": 32, "K": 576, "N": 1536}),
    "lin_1b_q": ("linear", {"M": 16, "K": 2048, "N": 2048}),
    "lin_8b_k": ("linear", {"M": 4, "K": 4096, "N": 1024}),
    "rms_4x384": ("rmsnorm", {"rows": 4, "hidden": 384}),
    "rms_64x384": ("rmsnorm", {"rows": 64, "hidden": 384}),
    "rms_64x576": ("rmsnorm", {"rows": 64, "hidden": 576}),
    "rms_16x2048": ("rmsnorm", {"rows": 16, "hidden": 2048}),
    "rms_4x4096": ("rmsnorm", {"rows": 4, "hidden": 4096}),
    "rms_64x4096": ("rmsnorm", {"rows": 64, "hidden": 4096}),
    "sm_64x64": ("softmax", {"rows": 64, "cols": 64}),
    "sm_16x64": ("softmax", {"rows": 16, "cols": 64}),
    "sm_64x128": ("softmax", {"rows": 64, "cols": 128}),
    "sm_32x256": ("softmax", {"rows": 32, "cols": 256}),
    "sm_64x512": ("softmax", {"rows": 64, "cols": 512}),
    "sm_16x1024": ("softmax", {"rows": 16, "cols": 1024}),
    "ffn_64x64x128": ("ffn", {"rows": 64, "hidden": 64, "inter": 128}),
    "ffn_16x128x256": ("ffn", {"rows": 16, "hidden": 128, "inter": 256}),
    "ffn_64x384x1408": ("ffn", {"rows": 64, "hidden": 384, "inter": 1408}),
    "ffn_32x576x1536": ("ffn", {"rows": 32, "hidden": 576, "inter": 1536}),
    "ffn_128x576x1536": ("ffn", {"rows": 128, "hidden": 576, "inter": 1536}),
    "ffn_4x2880x2880": ("ffn", {"rows": 4, "hidden": 2880, "inter": 2880}),
    "attn_64": ("attention", {"sq": 64, "skv": 64, "d": 64, "causal": 0}),
    "attn_128c": ("attention", {"sq": 128, "skv": 128, "d": 64, "causal": 1}),
    "attn_256": ("attention", {"sq": 256, "skv": 256, "d": 64, "causal": 0}),
    "attn_512c": ("attention", {"sq": 512, "skv": 512, "d": 64, "causal": 1}),
    "attn_1kc": ("attention", {"sq": 1024, "skv": 1024, "d": 64, "causal": 1}),
    "attn_dec": ("attention", {"sq": 16, "skv": 2048, "d": 64, "causal": 0}),
    "rope_4x64": ("rope", {"rows": 4, "head_dim": 64}),
    "rope_64x64": ("rope", {"rows": 64, "head_dim": 64}),
    "rope_256x64": ("rope", {"rows": 256, "head_dim": 64}),
    "rope_64x128": ("rope", {"rows": 64, "head_dim": 128}),
    "rope_512x128": ("rope", {"rows": 512, "head_dim": 128}),
    "rope_128x2048": ("rope", {"rows": 128, "head_dim": 2048}),
}


def test_suite_has_exactly_the_36_instances_in_order() -> None:
    assert [w.id for w in SUITE] == list(EXPECTED)
    for w in SUITE:
        op, shape = EXPECTED[w.id]
        assert (w.op, dict(w.shape)) == (op, shape)
        assert workload(w.id) is w
        check_shape(w)  # every instance is inside the baseline envelope


@pytest.mark.parametrize(
    "spec, canonical",
    [
        ("linear:M=64,K=384,N=384", "linear:M=64,K=384,N=384"),
        ("rmsnorm:rows=4,hidden=384", "rmsnorm:rows=4,hidden=384"),
        ("softmax:rows=64,cols=128", "softmax:rows=64,cols=128"),
        ("ffn:rows=64,hidden=384,inter=1408", "ffn:rows=64,hidden=384,inter=1408"),
        ("attention:sq=128,skv=128,d=64,causal=1", "attention:sq=128,skv=128,d=64,causal=1"),
        ("attention:causal=1,skv=128,sq=128", "attention:sq=128,skv=128,d=64,causal=1"),
        ("rope:rows=64,head_dim=128", "rope:rows=64,head_dim=128"),
    ],
)
def test_inline_specs_parse_to_a_canonical_id(spec: str, canonical: str) -> None:
    wl = workload(spec)
    assert wl.id == canonical == wl.spec


@pytest.mark.parametrize(
    "spec, named",
    [
        ("linear:M=64,K=100,N=64", "K=100"),
        ("linear:M=6,K=64,N=64", "M=6"),
        ("linear:M=64,K=64,N=96", "N=96"),
        ("rmsnorm:rows=4,hidden=100", "hidden=100"),
        ("softmax:rows=3,cols=64", "rows=3"),
        ("ffn:rows=4,hidden=64,inter=8192", "inter=8192"),
        ("attention:sq=64,skv=100", "skv=100"),
        ("attention:sq=64,skv=128,causal=1", "causal=1"),
        ("attention:sq=64,skv=64,causal=2", "causal=2"),
        ("attention:sq=64,skv=64,d=32", "d=32"),
        ("rope:rows=4,head_dim=96", "head_dim=96"),
        ("linear:M=64,K=64", "'N'"),
        ("linear:M=64,K=64,N=64,Q=1", "'Q'"),
        ("conv:N=1", "'conv'"),
        ("lin_60m", "lin_60m"),
    ],
)
def test_bad_specs_name_the_offending_key(spec: str, named: str) -> None:
    with pytest.raises(WorkloadError, match=named):
        workload(spec)
