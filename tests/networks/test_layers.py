"""Operators mapped onto each target's op families: folding, dedup, refusals said with reasons."""

from __future__ import annotations

import pytest

from tests.networks.onnx_graphs import conv_chain, decoder_block, mlp
from zomboss.networks.families import families
from zomboss.networks.graph import read_graph
from zomboss.networks.layers import map_graph
from zomboss.target import get_target


def mapped(model, target, dims=None):
    t = get_target(target)
    return map_graph(read_graph(model, "m", dims or {}), families(t.describe()["ops"]), t.workload)


def test_conv_relu_conv_on_gemmini_folds_bias_and_relu():
    m = mapped(conv_chain(), "gemmini")
    assert [layer.nodes for layer in m.layers] == [("conv1", "relu1"), ("conv2",)]
    first, second = (layer.workload for layer in m.layers)
    assert first.op == "conv" and first["relu"] == 1 and first["bias"] == 1 and first["pad"] == 1
    assert second["relu"] == 0 and second["bias"] == 1
    assert m.unmapped == ()


def test_a_bias_the_family_lacks_is_reported_and_nothing_folds_past_it():
    m = mapped(conv_chain(), "vta")
    assert [layer.nodes for layer in m.layers] == [("conv1",), ("conv2",)]  # relu not moved before the bias
    assert all(layer.workload["relu"] == 0 for layer in m.layers)
    kinds = {u["op_type"]: u["reasons"] for u in m.unsupported()}
    assert kinds == {
        "Conv bias": {"the target's conv2d has no bias": 2},
        "Relu": {"not folded into conv2d: it comes after a step conv2d does not do": 1},
    }
    # the two convolutions are one distinct layer, solved once
    assert [(d.multiplicity, d.nodes) for d in m.distinct()] == [(2, ("conv1", "conv2"))]


def test_mlp_dedup_counts_and_an_unmapped_operator_by_type():
    m = mapped(mlp(unsupported="Erf"), "gemmini")
    d = m.distinct()
    assert [(x.workload.id, x.multiplicity) for x in d] == [
        ("matmul:M=16,N=32,K=32,bias=1,relu=1", 1),
        ("matmul:M=16,N=32,K=32,bias=0,relu=0", 2),
    ]
    assert d[0].nodes == ("fc1", "fc1.bias", "fc1.relu")
    assert m.unsupported() == [
        {"op_type": "Erf", "count": 1, "reasons": {"no pattern maps this operator": 1}, "nodes": ["odd"]}
    ]


def test_a_family_without_flags_leaves_the_bias_add_and_relu_unmapped():
    m = mapped(mlp(width=64), "plena")
    assert {u["op_type"]: u["count"] for u in m.unsupported()} == {"Add": 1, "Relu": 1}
    assert sum(d.multiplicity for d in m.distinct()) == 3


def test_decoder_block_on_plena_maps_every_family():
    m = mapped(decoder_block(), "plena")
    ops = {layer.workload.op: layer.nodes for layer in m.layers}
    assert set(ops) == {"rmsnorm", "linear", "rope", "attention", "ffn"}
    assert ops["ffn"] == ("gate_proj", "act.sigmoid", "act", "up_proj", "gate_up", "down_proj")
    attn = next(layer for layer in m.layers if layer.workload.op == "attention")
    assert dict(attn.workload.shape) == {"sq": 64, "skv": 64, "d": 64, "causal": 1}
    assert [u.op_type for u in m.unmapped] == ["Add", "Add"]  # the residuals
    assert {d.workload.id: d.multiplicity for d in m.distinct()}["linear:M=64,K=64,N=64"] == 4


def test_an_ffn_the_target_refuses_is_mapped_by_parts_with_a_note():
    m = mapped(decoder_block(inter=64 * 65), "plena")
    assert "ffn" not in {layer.workload.op for layer in m.layers}
    assert m.notes and "inter=4160 is too large" in m.notes[0]
    assert {u.op_type for u in m.unmapped} == {"Add", "Sigmoid", "Mul"}


def test_a_shape_beyond_the_targets_limits_is_unmapped_with_its_reason():
    m = mapped(conv_chain(channels=8), "vta")
    assert not m.layers
    reasons = {r for u in m.unsupported() for r in u["reasons"]}
    assert any("multiples of 16" in r for r in reasons)


def test_dynamic_dimensions_take_their_dim_values():
    m = mapped(mlp(batch="batch"), "gemmini", {"batch": 8})
    assert m.layers[0].workload["M"] == 8


@pytest.mark.parametrize(
    "target, kinds",
    [
        ("gemmini", {"gemm": "matmul", "conv": "conv"}),
        ("vta", {"gemm": "dense", "conv": "conv2d"}),
        (
            "plena",
            {
                "gemm": "linear",
                "rmsnorm": "rmsnorm",
                "softmax": "softmax",
                "ffn": "ffn",
                "attention": "attention",
                "rope": "rope",
            },
        ),
    ],
)
def test_families_are_found_by_their_keys(target, kinds):
    fams = families(get_target(target).describe()["ops"])
    assert {k: f.op for k, f in fams.items()} == kinds


def _softmax_model(opset, shape, **attrs):
    from onnx import TensorProto, helper

    node = helper.make_node("Softmax", ["x"], ["y"], name="sm", **attrs)
    vi = helper.make_tensor_value_info
    graph = helper.make_graph([node], "sm", [vi("x", TensorProto.FLOAT, shape)], [vi("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize(
    "opset, attrs, shape",
    [
        (23, {}, {"rows": 4 * 2, "cols": 64}),  # the last axis
        (11, {}, {"rows": 4, "cols": 2 * 64}),  # before opset 13: coerced to 2-D at axis 1
        (11, {"axis": 2}, {"rows": 4 * 2, "cols": 64}),
    ],
)
def test_softmax_follows_its_opsets_axis_semantics(opset, attrs, shape):
    m = mapped(_softmax_model(opset, [4, 2, 64], **attrs), "plena")
    assert dict(m.layers[0].workload.shape) == shape


def test_softmax_over_an_inner_axis_is_unmapped_with_its_reason():
    m = mapped(_softmax_model(23, [4, 64, 8], axis=1), "plena")
    assert m.unmapped[0].reason == "axis=1 (only the last axis maps)"


def test_an_operator_whose_shape_is_unknown_is_unmapped_not_fatal():
    from onnx import TensorProto, helper

    vi = helper.make_tensor_value_info
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"], name="nz"),  # a data-dependent shape
        helper.make_node("Cast", ["nz"], ["f"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("MatMul", ["f", "w"], ["y"], name="mm"),
        helper.make_node("MatMul", ["x", "w2"], ["z"], name="mm2"),
    ]
    inputs = [
        vi("x", TensorProto.FLOAT, [16, 32]),
        vi("w", TensorProto.FLOAT, [16, 16]),
        vi("w2", TensorProto.FLOAT, [32, 32]),
    ]
    outputs = [vi("y", TensorProto.FLOAT, None), vi("z", TensorProto.FLOAT, None)]
    model = helper.make_model(
        helper.make_graph(nodes, "g", inputs, outputs), opset_imports=[helper.make_opsetid("", 23)]
    )
    m = mapped(model, "gemmini")
    assert [layer.nodes for layer in m.layers] == [("mm2",)]
    why = {u.node: u.reason for u in m.unmapped}
    assert "the shape of 'f' is unknown" in why["mm"]
