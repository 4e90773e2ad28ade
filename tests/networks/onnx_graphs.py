"""Small ONNX graphs built with onnx.helper for the network tests: a conv->relu->conv chain, a
two-layer MLP (plus a third, identical layer and an operator no target maps), and a Llama-style
decoder block at tiny sizes. Weights are graph inputs with shapes only, as in the built-ins."""

from __future__ import annotations

from typing import Any

from onnx import TensorProto, helper


def _vi(name: str, shape: list[Any] | None) -> Any:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _model(nodes: list[Any], name: str, inputs: list[Any], output: str) -> Any:
    graph = helper.make_graph(nodes, name, inputs, [_vi(output, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


def conv_chain(channels: int = 16, hw: int = 8, bias: bool = True) -> Any:
    """conv(3x3, pad 1) -> relu -> conv(3x3, pad 1), NCHW, batch 1."""
    b1, b2 = (["b1"], ["b2"]) if bias else ([], [])
    nodes = [
        helper.make_node("Conv", ["x", "w1", *b1], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", *b2], ["y"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    w = [channels, channels, 3, 3]
    inputs = [_vi("x", [1, channels, hw, hw]), _vi("w1", w), _vi("w2", w)]
    inputs += [_vi("b1", [channels]), _vi("b2", [channels])] if bias else []
    return _model(nodes, "conv_chain", inputs, "y")


def mlp(batch: Any = 16, width: int = 32, unsupported: str | None = None) -> Any:
    """fc1 (+bias, relu) -> fc2 -> fc3 (fc2 and fc3 alike), then `unsupported` (an op type)."""
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="fc1.bias"),
        helper.make_node("Relu", ["hb"], ["hr"], name="fc1.relu"),
        helper.make_node("MatMul", ["hr", "w2"], ["h2"], name="fc2"),
        helper.make_node("MatMul", ["h2", "w3"], ["y"], name="fc3"),
    ]
    out = "y"
    if unsupported:
        nodes.append(helper.make_node(unsupported, ["y"], ["z"], name="odd"))
        out = "z"
    w = [width, width]
    inputs = [_vi("x", [batch, width]), _vi("w1", w), _vi("b1", [width]), _vi("w2", w), _vi("w3", w)]
    return _model(nodes, "mlp", inputs, out)


def decoder_block(seq: int = 64, hidden: int = 64, inter: int = 128) -> Any:
    """RMSNorm -> q/k/v -> RoPE -> causal attention (one head) -> o -> residual -> RMSNorm ->
    SiLU-gated FFN -> residual."""
    mm = [
        ("q", "n1", hidden),
        ("k", "n1", hidden),
        ("v", "n1", hidden),
    ]
    nodes = [helper.make_node("RMSNormalization", ["x", "g1"], ["n1"], name="norm1", axis=-1)]
    nodes += [helper.make_node("MatMul", [src, f"w{n}"], [n], name=f"{n}_proj") for n, src, _ in mm]
    nodes += [
        helper.make_node("RotaryEmbedding", ["q", "cos", "sin", "pos"], ["qr"], name="q_rope", num_heads=1),
        helper.make_node("RotaryEmbedding", ["k", "cos", "sin", "pos"], ["kr"], name="k_rope", num_heads=1),
        helper.make_node(
            "Attention", ["qr", "kr", "v"], ["a"], name="attn", q_num_heads=1, kv_num_heads=1, is_causal=1
        ),
        helper.make_node("MatMul", ["a", "wo"], ["o"], name="o_proj"),
        helper.make_node("Add", ["x", "o"], ["x2"], name="residual1"),
        helper.make_node("RMSNormalization", ["x2", "g2"], ["n2"], name="norm2", axis=-1),
        helper.make_node("MatMul", ["n2", "wg"], ["g"], name="gate_proj"),
        helper.make_node("Sigmoid", ["g"], ["sg"], name="act.sigmoid"),
        helper.make_node("Mul", ["g", "sg"], ["silu"], name="act"),
        helper.make_node("MatMul", ["n2", "wu"], ["u"], name="up_proj"),
        helper.make_node("Mul", ["silu", "u"], ["gu"], name="gate_up"),
        helper.make_node("MatMul", ["gu", "wd"], ["d"], name="down_proj"),
        helper.make_node("Add", ["x2", "d"], ["y"], name="residual2"),
    ]
    sq = [hidden, hidden]
    inputs = [_vi("x", [1, seq, hidden]), _vi("g1", [hidden]), _vi("g2", [hidden])]
    inputs += [_vi(f"w{n}", sq) for n in ("q", "k", "v", "o")]
    inputs += [_vi("wg", [hidden, inter]), _vi("wu", [hidden, inter]), _vi("wd", [inter, hidden])]
    inputs += [_vi("cos", [seq, hidden // 2]), _vi("sin", [seq, hidden // 2])]
    inputs.append(helper.make_tensor_value_info("pos", TensorProto.INT64, [1, seq]))
    return _model(nodes, "decoder_block", inputs, "y")
