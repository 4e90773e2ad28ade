"""The built-in networks generate, infer their shapes and map as the issue describes (layer
counts, dedup, what each target leaves unmapped), without solving anything."""

from __future__ import annotations

from collections import Counter

import pytest

from zomboss.networks.builtin import BUILTINS
from zomboss.networks.families import families
from zomboss.networks.graph import read_graph
from zomboss.networks.layers import map_graph
from zomboss.target import get_target


def mapped(name, target):
    t = get_target(target)
    return map_graph(read_graph(BUILTINS[name].build(), name, {}), families(t.describe()["ops"]), t.workload)


@pytest.mark.parametrize(
    "name, target, distinct, instances",
    [
        ("resnet18", "gemmini", 16, 21),  # 20 convolutions and the classifier
        ("resnet50", "gemmini", 24, 54),  # 53 convolutions and the classifier
        ("resnet18", "vta", 10, 19),  # conv1 (3 channels) and the classifier (1000 outputs) refused
        ("resnet50", "vta", 22, 52),
        ("bert-base", "gemmini", 5, 360),  # 4x12 projections, 2x12 FFN, 2x12x12 attention matmuls
        ("smollm-135m-prefill", "plena", 7, 18),
        ("smollm-135m-decode", "plena", 6, 9),  # attention of 3 stacked queries refused
        ("llama-3.2-1b-prefill", "plena", 8, 43),  # the FFN too large for one ffn kernel
        ("llama-3.2-1b-decode", "plena", 8, 43),
    ],
)
def test_builtin_maps(name, target, distinct, instances):
    m = mapped(name, target)
    d = m.distinct()
    assert (len(d), sum(x.multiplicity for x in d)) == (distinct, instances)


def test_resnet18_on_vta_says_why_conv1_and_fc_are_not_mapped():
    m = mapped("resnet18", "vta")
    by = {u["op_type"]: u for u in m.unsupported()}
    assert by["Conv"]["nodes"] == ["conv1"] and by["Gemm"]["nodes"] == ["fc"]
    assert all("multiples of 16" in r for u in (by["Conv"], by["Gemm"]) for r in u["reasons"])
    assert by["Conv bias"]["count"] == 19


def test_bert_on_gemmini_leaves_the_non_gemm_operators_listed():
    m = mapped("bert-base", "gemmini")
    counts = Counter({u["op_type"]: u["count"] for u in m.unsupported()})
    assert counts["Softmax"] == 12 and counts["LayerNormalization"] == 24 and counts["Gelu"] == 12


def test_decoder_decode_groups_query_heads_over_their_kv_head():
    m = mapped("llama-3.2-1b-decode", "plena")
    attn = next(d for d in m.distinct() if d.workload.op == "attention")
    assert dict(attn.workload.shape) == {"sq": 4, "skv": 2048, "d": 64, "causal": 0}
    assert attn.multiplicity == 4 * 8  # sequences x kv heads
