"""The built-in networks, generated in code with onnx.helper (no download, no weights: a
weight is a graph input with its shape, which is all the compiler reads): ResNet-18 and
ResNet-50 at batch 1 (batch norm folded into the convolutions, as for inference), the BERT-base
encoder at sequence length 128, and one Llama-style decoder layer at the sizes of SmolLM-135M
and Llama-3.2-1B, for prefill (128 tokens) and decode (4 sequences, one new token each over
2,047 cached ones: attention over 2,048 keys).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

OPSET = 23  # Attention, RMSNormalization and RotaryEmbedding are standard operators from 23


@dataclass(frozen=True)
class Builtin:
    """A built-in network: its name, what it is, and the function that builds its ModelProto."""

    name: str
    about: str
    build: Callable[[], Any] = field(repr=False)


class _Net:
    """A graph under construction: inputs with shapes, nodes, fresh tensor names."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.inputs: list[Any] = []
        self.nodes: list[Any] = []
        self.counter = 0

    def input(self, name: str, shape: tuple[int, ...]) -> str:
        from onnx import TensorProto, helper

        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        return name

    def node(self, op: str, inputs: list[str], name: str, outputs: int = 1, **attrs: Any) -> list[str]:
        from onnx import helper

        outs = [f"{name}:{i}" if outputs > 1 else name for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs

    def model(self, output: str) -> Any:
        from onnx import TensorProto, helper

        out = helper.make_tensor_value_info(output, TensorProto.FLOAT, None)
        graph = helper.make_graph(self.nodes, self.name, self.inputs, [out])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="zomboss")


# ---- ResNet ----------------------------------------------------------------------------------


def _conv(net: _Net, x: str, name: str, cin: int, cout: int, k: int, stride: int, relu: bool) -> str:
    w = net.input(f"{name}.weight", (cout, cin, k, k))
    b = net.input(f"{name}.bias", (cout,))
    pad = k // 2
    (y,) = net.node("Conv", [x, w, b], name, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)
    return net.node("Relu", [y], f"{name}.relu")[0] if relu else y


def _resnet(depth: int) -> Any:
    bottleneck = depth == 50
    blocks = {18: (2, 2, 2, 2), 50: (3, 4, 6, 3)}[depth]
    net = _Net(f"resnet{depth}")
    x = net.input("image", (1, 3, 224, 224))
    x = _conv(net, x, "conv1", 3, 64, 7, 2, relu=True)
    (x,) = net.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, n in enumerate(blocks, 1):
        width = 64 * 2 ** (stage - 1)
        cout = width * 4 if bottleneck else width
        for i in range(n):
            stride = 2 if i == 0 and stage > 1 else 1
            p = f"layer{stage}.{i}"
            if bottleneck:
                y = _conv(net, x, f"{p}.conv1", cin, width, 1, 1, relu=True)
                y = _conv(net, y, f"{p}.conv2", width, width, 3, stride, relu=True)
                y = _conv(net, y, f"{p}.conv3", width, cout, 1, 1, relu=False)
            else:
                y = _conv(net, x, f"{p}.conv1", cin, width, 3, stride, relu=True)
                y = _conv(net, y, f"{p}.conv2", width, cout, 3, 1, relu=False)
            short = (
                _conv(net, x, f"{p}.downsample", cin, cout, 1, stride, relu=False) if stride > 1 or cin != cout else x
            )
            (s,) = net.node("Add", [y, short], f"{p}.add")
            (x,) = net.node("Relu", [s], f"{p}.relu")
            cin = cout
    (x,) = net.node("GlobalAveragePool", [x], "avgpool")
    (x,) = net.node("Flatten", [x], "flatten")
    w = net.input("fc.weight", (1000, cin))
    b = net.input("fc.bias", (1000,))
    (y,) = net.node("Gemm", [x, w, b], "fc", transB=1)
    return net.model(y)


# ---- BERT --------------------------------------------------------------------------------------


def _linear(net: _Net, x: str, name: str, k: int, n: int, bias: bool = True) -> str:
    w = net.input(f"{name}.weight", (k, n))
    (y,) = net.node("MatMul", [x, w], name)
    if bias:
        (y,) = net.node("Add", [y, net.input(f"{name}.bias", (n,))], f"{name}.bias_add")
    return y


def _bert(layers: int = 12, seq: int = 128, hidden: int = 768, heads: int = 12, inter: int = 3072) -> Any:
    net = _Net("bert-base")
    d = hidden // heads
    x = net.input("hidden_states", (1, seq, hidden))
    shape_heads = net.input("shape.heads", (4,))
    shape_flat = net.input("shape.flat", (3,))
    for i in range(layers):
        p = f"encoder.{i}"

        def split(t: str, what: str, perm: list[int], p: str = p) -> str:
            (r,) = net.node("Reshape", [t, shape_heads], f"{p}.{what}.reshape")
            return net.node("Transpose", [r], f"{p}.{what}.transpose", perm=perm)[0]

        q = split(_linear(net, x, f"{p}.attention.query", hidden, hidden), "q", [0, 2, 1, 3])
        k = split(_linear(net, x, f"{p}.attention.key", hidden, hidden), "k", [0, 2, 3, 1])
        v = split(_linear(net, x, f"{p}.attention.value", hidden, hidden), "v", [0, 2, 1, 3])
        (s,) = net.node("MatMul", [q, k], f"{p}.attention.scores")
        (s,) = net.node("Mul", [s, net.input(f"{p}.attention.scale", (1,))], f"{p}.attention.scale_mul")
        (a,) = net.node("Softmax", [s], f"{p}.attention.softmax", axis=-1)
        (c,) = net.node("MatMul", [a, v], f"{p}.attention.context")
        (c,) = net.node("Transpose", [c], f"{p}.attention.context.transpose", perm=[0, 2, 1, 3])
        (c,) = net.node("Reshape", [c, shape_flat], f"{p}.attention.context.reshape")
        o = _linear(net, c, f"{p}.attention.output", hidden, hidden)
        (o,) = net.node("Add", [o, x], f"{p}.attention.residual")
        o = _layernorm(net, o, f"{p}.attention.norm", hidden)
        f = _linear(net, o, f"{p}.intermediate", hidden, inter)
        (f,) = net.node("Gelu", [f], f"{p}.intermediate.gelu")
        f = _linear(net, f, f"{p}.output", inter, hidden)
        (f,) = net.node("Add", [f, o], f"{p}.output.residual")
        x = _layernorm(net, f, f"{p}.output.norm", hidden)
    return _with_shapes(net.model(x), {"shape.heads": (1, seq, heads, d), "shape.flat": (1, seq, hidden)})


def _layernorm(net: _Net, x: str, name: str, hidden: int) -> str:
    g, b = net.input(f"{name}.weight", (hidden,)), net.input(f"{name}.bias", (hidden,))
    return net.node("LayerNormalization", [x, g, b], name, axis=-1)[0]


def _with_shapes(model: Any, shapes: dict[str, tuple[int, ...]]) -> Any:
    """The Reshape targets as constant initializers (tiny: shape inference needs their values)."""
    from onnx import numpy_helper

    graph = model.graph
    for name, value in shapes.items():
        import numpy as np

        graph.initializer.append(numpy_helper.from_array(np.array(value, dtype=np.int64), name))
        for i, vi in enumerate(graph.input):
            if vi.name == name:
                del graph.input[i]
                break
    return model


# ---- Llama-style decoder layer ----------------------------------------------------------------


@dataclass(frozen=True)
class LlamaSize:
    hidden: int
    heads: int
    kv_heads: int
    inter: int


SMOLLM_135M = LlamaSize(hidden=576, heads=9, kv_heads=3, inter=1536)
LLAMA32_1B = LlamaSize(hidden=2048, heads=32, kv_heads=8, inter=8192)
PREFILL = (1, 128, 0)  # batch, new tokens, cached tokens
DECODE = (4, 1, 2047)


def _decoder(name: str, size: LlamaSize, batch: int, seq: int, cached: int) -> Any:
    net = _Net(name)
    h, d = size.hidden, size.hidden // size.heads
    x = net.input("hidden_states", (batch, seq, h))
    cos = net.input("rope.cos_cache", (cached + seq, d // 2))
    sin = net.input("rope.sin_cache", (cached + seq, d // 2))
    pos = net.input("position_ids", (batch, seq))
    (n,) = net.node("RMSNormalization", [x, net.input("input_norm.weight", (h,))], "input_norm", axis=-1)
    q = _linear(net, n, "self_attn.q_proj", h, size.heads * d, bias=False)
    k = _linear(net, n, "self_attn.k_proj", h, size.kv_heads * d, bias=False)
    v = _linear(net, n, "self_attn.v_proj", h, size.kv_heads * d, bias=False)
    (q,) = net.node("RotaryEmbedding", [q, cos, sin, pos], "self_attn.q_rope", num_heads=size.heads)
    (k,) = net.node("RotaryEmbedding", [k, cos, sin, pos], "self_attn.k_rope", num_heads=size.kv_heads)
    inputs = [q, k, v]
    if cached:
        past = (batch, size.kv_heads, cached, d)
        inputs += ["", net.input("past_key", past), net.input("past_value", past)]
    attrs = {"q_num_heads": size.heads, "kv_num_heads": size.kv_heads, "is_causal": 0 if cached else 1}
    (a,) = net.node("Attention", inputs, "self_attn.attention", **attrs)
    o = _linear(net, a, "self_attn.o_proj", size.heads * d, h, bias=False)
    (x2,) = net.node("Add", [x, o], "self_attn.residual")
    (n2,) = net.node("RMSNormalization", [x2, net.input("post_norm.weight", (h,))], "post_norm", axis=-1)
    g = _linear(net, n2, "mlp.gate_proj", h, size.inter, bias=False)
    (sg,) = net.node("Sigmoid", [g], "mlp.act.sigmoid")
    (g,) = net.node("Mul", [g, sg], "mlp.act")
    u = _linear(net, n2, "mlp.up_proj", h, size.inter, bias=False)
    (gu,) = net.node("Mul", [g, u], "mlp.gate_up")
    dn = _linear(net, gu, "mlp.down_proj", size.inter, h, bias=False)
    (y,) = net.node("Add", [x2, dn], "mlp.residual")
    return net.model(y)


BUILTINS: dict[str, Builtin] = {
    b.name: b
    for b in (
        Builtin("resnet18", "ResNet-18, batch 1, 224x224 (batch norm folded)", lambda: _resnet(18)),
        Builtin("resnet50", "ResNet-50, batch 1, 224x224 (batch norm folded)", lambda: _resnet(50)),
        Builtin("bert-base", "BERT-base encoder, 12 layers, batch 1, sequence 128", _bert),
        Builtin(
            "smollm-135m-prefill",
            "one Llama-style decoder layer at SmolLM-135M's sizes, prefill of 128 tokens",
            lambda: _decoder("smollm-135m-prefill", SMOLLM_135M, *PREFILL),
        ),
        Builtin(
            "smollm-135m-decode",
            "one decoder layer at SmolLM-135M's sizes, decode: 4 sequences, 1 new token over 2,047 cached",
            lambda: _decoder("smollm-135m-decode", SMOLLM_135M, *DECODE),
        ),
        Builtin(
            "llama-3.2-1b-prefill",
            "one Llama-style decoder layer at Llama-3.2-1B's sizes, prefill of 128 tokens",
            lambda: _decoder("llama-3.2-1b-prefill", LLAMA32_1B, *PREFILL),
        ),
        Builtin(
            "llama-3.2-1b-decode",
            "one decoder layer at Llama-3.2-1B's sizes, decode: 4 sequences, 1 new token over 2,047 cached",
            lambda: _decoder("llama-3.2-1b-decode", LLAMA32_1B, *DECODE),
        ),
    )
}
