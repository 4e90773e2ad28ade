"""A graph's operators mapped to workloads of a target's op families, and the distinct layers
(same family and shape: one search, counted with multiplicity).

Patterns are tried largest first: a decoder's feed-forward block (three MatMuls around a SiLU
gate) becomes one `ffn` layer when the target has that kind and accepts the shape, else its
parts are mapped on their own (and a note says why). Then each remaining node: MatMul and Gemm
(a following bias Add and Relu folded when the family has the flag), Conv (its bias and a
following Relu folded likewise), Softmax, RMSNormalization, RotaryEmbedding and Attention. The
target's own `workload()` checks every shape against its limits; what it refuses, and every
operator no pattern covers, is an `Unmapped` entry with the reason: nothing is dropped silently.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from zomboss.errors import WorkloadError
from zomboss.networks.families import Family
from zomboss.networks.graph import Graph, NetworkError, Node
from zomboss.workload import Workload

# Operators that only move, reshape or describe data: unmapped like the others, said so.
LAYOUT = frozenset(
    {"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Constant", "Gather",
     "Concat", "Slice", "Split", "Cast", "Expand"}
)  # fmt: skip

EPILOGUE = ("bias", "relu")  # the flags a layer may fold, in the order they apply


@dataclass(frozen=True)
class Layer:
    """One mapped occurrence: the ONNX nodes it covers, the target's workload and how many
    instances of it the nodes compute (a batched MatMul's batch, an attention's heads)."""

    nodes: tuple[str, ...]
    kind: str
    workload: Workload
    count: int = 1


@dataclass(frozen=True)
class Unmapped:
    """An operator (or a part of one, such as a Conv's bias) no layer covers, and why."""

    node: str
    op_type: str
    reason: str


@dataclass(frozen=True)
class Distinct:
    """A distinct layer: one workload, solved once, and every node it stands for."""

    workload: Workload
    kind: str
    multiplicity: int
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class Mapped:
    """The network as the target sees it: its layers in graph order, what stays unmapped, and
    notes on patterns that were not fused (why their parts were mapped on their own)."""

    layers: tuple[Layer, ...]
    unmapped: tuple[Unmapped, ...]
    notes: tuple[str, ...] = ()

    def distinct(self) -> tuple[Distinct, ...]:
        """Layers grouped by workload, in order of first appearance; multiplicity sums counts."""
        groups: dict[str, list[Layer]] = {}
        for layer in self.layers:
            groups.setdefault(layer.workload.id, []).append(layer)
        return tuple(
            Distinct(ls[0].workload, ls[0].kind, sum(x.count for x in ls), tuple(n for x in ls for n in x.nodes))
            for ls in groups.values()
        )

    def unsupported(self) -> list[dict[str, object]]:
        """Unmapped operators by type: count, nodes and the reasons with their counts."""
        by: dict[str, list[Unmapped]] = {}
        for u in self.unmapped:
            by.setdefault(u.op_type, []).append(u)
        return [
            {
                "op_type": op,
                "count": len(us),
                "reasons": {r: sum(u.reason == r for u in us) for r in dict.fromkeys(u.reason for u in us)},
                "nodes": [u.node for u in us],
            }
            for op, us in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        ]


class _Refused(Exception):
    """A node a pattern recognises but cannot map (the message is the reason)."""


@dataclass(frozen=True)
class _Candidate:
    kind: str
    shape: Mapping[str, int]
    nodes: tuple[str, ...]
    count: int = 1
    # flag -> the node that supplies it ("" when it is part of the anchor node, e.g. a Conv's bias input)
    flags: Mapping[str, str] = field(default_factory=dict)


def map_graph(graph: Graph, fams: Mapping[str, Family], workload: Callable[[str], Workload]) -> Mapped:
    """Map every node of `graph` onto `fams` (the target's families by kind); `workload` is the
    target's spec reader, which refuses shapes beyond its limits (WorkloadError)."""
    consumed: set[str] = set()
    layers: list[Layer] = []
    unmapped: list[Unmapped] = []
    notes: list[str] = []
    by_name = {n.name: n for n in graph.nodes}

    def place(cand: _Candidate) -> Layer | str:
        fam = fams.get(cand.kind)
        if fam is None:
            return f"the target has no {cand.kind} op family"
        missing = [k for k in cand.shape if not fam.has(k)]
        if missing:
            return f"the target's {fam.op} has no {missing[0]!r}"
        kv, folded, blocked = dict(cand.shape), [], False
        for flag, src in cand.flags.items():  # in graph order: nothing folds past a step left out
            blocked = blocked or not fam.has(flag)
            if not blocked:
                kv[flag] = 1
                folded += [src] if src else []
        kv |= {f: 0 for f in EPILOGUE if fam.has(f) and f not in kv}
        spec = f"{fam.op}:" + ",".join(f"{k}={v}" for k, v in kv.items())
        try:
            wl = workload(spec)
        except WorkloadError as e:
            return str(e)
        return Layer((*cand.nodes, *folded), cand.kind, wl, cand.count)

    for node in graph.nodes:  # composite patterns first: a fused layer covers several nodes
        if node.op_type != "MatMul" or "ffn" not in fams:
            continue
        ffn = _ffn(graph, node)
        if ffn is None or consumed & set(ffn.nodes):
            continue
        got = place(ffn)
        if isinstance(got, Layer):
            layers.append(got)
            consumed |= set(got.nodes)
        else:
            notes.append(f"feed-forward block ending at {node.name!r} mapped by parts, not as {fams['ffn'].op}: {got}")

    for node in graph.nodes:
        if node.name in consumed:
            continue
        pattern = PATTERNS.get(node.op_type)
        if pattern is None:
            why = "moves or reshapes data only" if node.op_type in LAYOUT else "no pattern maps this operator"
            unmapped.append(Unmapped(node.name, node.op_type, why))
            continue
        try:
            cand = pattern(graph, node)
        except (_Refused, NetworkError) as e:  # NetworkError: a shape inference could not give
            unmapped.append(Unmapped(node.name, node.op_type, str(e)))
            continue
        got = place(cand)
        if isinstance(got, str):
            unmapped.append(Unmapped(node.name, node.op_type, got))
            continue
        layers.append(got)
        consumed |= set(got.nodes)
        fam = fams[cand.kind]
        for flag, src in cand.flags.items():  # an epilogue step not folded: said, with why
            if got.workload.shape.get(flag) == 1:  # folded (`place` sets a flag only then)
                continue
            why = f"the target's {fam.op} has no {flag}" if not fam.has(flag) else ""
            why = why or f"not folded into {fam.op}: it comes after a step {fam.op} does not do"
            if not src:  # part of the anchor node itself (a Conv's or Gemm's bias input)
                unmapped.append(Unmapped(node.name, f"{node.op_type} {flag}", why))
            elif src not in consumed:
                unmapped.append(Unmapped(src, by_name[src].op_type, why))
                consumed.add(src)
    order = {n.name: i for i, n in enumerate(graph.nodes)}
    layers.sort(key=lambda layer: order[layer.nodes[0]])
    unmapped.sort(key=lambda u: order.get(u.node, len(order)))
    return Mapped(tuple(layers), tuple(unmapped), tuple(notes))


# ---- helpers ---------------------------------------------------------------------------------


def _only_consumer(graph: Graph, tensor: str, op_type: str) -> Node | None:
    """The single consumer of `tensor` when it is an `op_type` and `tensor` is not an output."""
    if tensor in graph.outputs:
        return None
    users = graph.consumers(tensor)
    return users[0] if len(users) == 1 and users[0].op_type == op_type else None


def _epilogue(graph: Graph, node: Node, n: int, cand_flags: dict[str, str], bias_from_add: bool) -> None:
    """Fold a bias Add (a row vector of `n` values) and then a Relu after `node`, when each is
    the only consumer of what comes before it."""
    out = node.outputs[0]
    if bias_from_add and "bias" not in cand_flags:
        add = _only_consumer(graph, out, "Add")
        if add is not None:
            other = add.inputs[1] if add.inputs[0] == out else add.inputs[0]
            shape = graph.shapes.get(other)
            if shape is not None and shape and shape[-1] == n and math.prod(shape) == n:
                cand_flags["bias"] = add.name
                out = add.outputs[0]
    relu = _only_consumer(graph, out, "Relu")
    if relu is not None:
        cand_flags["relu"] = relu.name


def _has_input(node: Node, i: int) -> bool:
    return len(node.inputs) > i and bool(node.inputs[i])


# ---- single-node patterns --------------------------------------------------------------------


def _matmul(graph: Graph, node: Node) -> _Candidate:
    a, b = graph.shape(node.inputs[0], node), graph.shape(node.inputs[1], node)
    if len(a) < 2 or len(b) < 2:
        raise _Refused(f"a matrix-vector product (shapes {list(a)} x {list(b)})")
    if len(b) == 2:
        m, k, n, count = math.prod(a[:-1]), a[-1], b[1], 1
    else:
        batch = _broadcast(a[:-2], b[:-2], node)
        m, k, n, count = a[-2], a[-1], b[-1], math.prod(batch)
    flags: dict[str, str] = {}
    _epilogue(graph, node, n, flags, bias_from_add=True)
    return _Candidate("gemm", {"M": m, "N": n, "K": k}, (node.name,), count, flags)


def _gemm(graph: Graph, node: Node) -> _Candidate:
    a, b = graph.shape(node.inputs[0], node), graph.shape(node.inputs[1], node)
    if node.attrs.get("alpha", 1.0) != 1.0 or (_has_input(node, 2) and node.attrs.get("beta", 1.0) != 1.0):
        raise _Refused("alpha or beta other than 1 (a scaled Gemm)")
    m, k = (a[1], a[0]) if node.attrs.get("transA", 0) else (a[0], a[1])
    n = b[0] if node.attrs.get("transB", 0) else b[1]
    flags: dict[str, str] = {"bias": ""} if _has_input(node, 2) else {}
    _epilogue(graph, node, n, flags, bias_from_add=not flags)
    return _Candidate("gemm", {"M": m, "N": n, "K": k}, (node.name,), 1, flags)


def _conv(graph: Graph, node: Node) -> _Candidate:
    x, w = graph.shape(node.inputs[0], node), graph.shape(node.inputs[1], node)
    if len(x) != 4:
        raise _Refused(f"a {len(x) - 2}-D convolution (only 2-D maps)")
    if node.attrs.get("group", 1) != 1:
        raise _Refused(f"a grouped convolution (group={node.attrs['group']})")
    if any(d != 1 for d in node.attrs.get("dilations", (1, 1))):
        raise _Refused(f"a dilated convolution (dilations={list(node.attrs['dilations'])})")
    strides = tuple(node.attrs.get("strides", (1, 1)))
    if len(set(strides)) != 1:
        raise _Refused(f"unequal strides {list(strides)}")
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "VALID"):
        raise _Refused(f"auto_pad={auto_pad} (give explicit pads)")
    pads = tuple(node.attrs.get("pads", (0, 0, 0, 0))) if auto_pad == "NOTSET" else (0, 0, 0, 0)
    if len(set(pads)) != 1:
        raise _Refused(f"asymmetric padding {list(pads)}")
    shape = {"N": x[0], "H": x[2], "W": x[3], "C": x[1], "K": w[0], "R": w[2], "S": w[3]}
    shape |= {"stride": strides[0], "pad": pads[0]}
    flags: dict[str, str] = {"bias": ""} if _has_input(node, 2) else {}
    _epilogue(graph, node, w[0], flags, bias_from_add=False)
    return _Candidate("conv", shape, (node.name,), 1, flags)


def _last_axis(node: Node, rank: int, default: int = -1) -> None:
    axis = int(node.attrs.get("axis", default))
    if axis not in (-1, rank - 1):
        raise _Refused(f"axis={axis} (only the last axis maps)")


def _softmax(graph: Graph, node: Node) -> _Candidate:
    x = graph.shape(node.inputs[0], node)
    if graph.opset < 13:  # the input coerced to 2-D at `axis` (default 1): rows before it, columns from it
        axis = int(node.attrs.get("axis", 1)) % len(x)
        return _Candidate("softmax", {"rows": math.prod(x[:axis]), "cols": math.prod(x[axis:])}, (node.name,))
    _last_axis(node, len(x))
    return _Candidate("softmax", {"rows": math.prod(x[:-1]), "cols": x[-1]}, (node.name,))


def _rmsnorm(graph: Graph, node: Node) -> _Candidate:
    x = graph.shape(node.inputs[0], node)
    _last_axis(node, len(x))
    return _Candidate("rmsnorm", {"rows": math.prod(x[:-1]), "hidden": x[-1]}, (node.name,))


def _rope(graph: Graph, node: Node) -> _Candidate:
    x = graph.shape(node.inputs[0], node)
    if node.attrs.get("interleaved", 0):
        raise _Refused("interleaved rotation (only rotate-half maps)")
    if len(x) == 4:
        rows, head = x[0] * x[1] * x[2], x[3]
    else:
        heads = int(node.attrs.get("num_heads", 0))
        if len(x) != 3 or heads < 1 or x[-1] % heads:
            raise _Refused(f"input {list(x)} without a num_heads dividing its last axis")
        rows, head = x[0] * x[1] * heads, x[-1] // heads
    if node.attrs.get("rotary_embedding_dim", 0) not in (0, head):
        raise _Refused(f"a partial rotation (rotary_embedding_dim={node.attrs['rotary_embedding_dim']})")
    return _Candidate("rope", {"rows": rows, "head_dim": head}, (node.name,))


def _heads(graph: Graph, node: Node, i: int, attr: str) -> tuple[int, int, int, int]:
    """(batch, heads, sequence, head size) of the Attention input `i` (4-D, or 3-D with `attr`)."""
    s = graph.shape(node.inputs[i], node)
    if len(s) == 4:
        return s[0], s[1], s[2], s[3]
    heads = int(node.attrs.get(attr, 0))
    if len(s) != 3 or heads < 1 or s[-1] % heads:
        raise _Refused(f"input {i} of shape {list(s)} without {attr} dividing its last axis")
    return s[0], heads, s[1], s[2] // heads


def _attention(graph: Graph, node: Node) -> _Candidate:
    if _has_input(node, 3):
        raise _Refused("an explicit attention mask (only causal or none maps)")
    if node.attrs.get("softcap", 0.0):
        raise _Refused("a softcap")
    b, hq, sq, d = _heads(graph, node, 0, "q_num_heads")
    _, hkv, skv, dk = _heads(graph, node, 1, "kv_num_heads")
    _, _, _, dv = _heads(graph, node, 2, "kv_num_heads")
    if _has_input(node, 4):
        skv += graph.shape(node.inputs[4], node)[2]
    if d != dk or d != dv:
        raise _Refused(f"unequal head sizes (q {d}, k {dk}, v {dv})")
    scale = node.attrs.get("scale")
    if scale is not None and abs(float(scale) - d**-0.5) > 1e-6:
        raise _Refused(f"scale={scale} (only 1/sqrt(head size) maps)")
    if hq % hkv:
        raise _Refused(f"{hq} query heads over {hkv} key/value heads")
    nodes = (node.name,)
    if node.attrs.get("is_causal", 0):
        if sq != skv:
            raise _Refused(f"causal attention with {sq} queries over {skv} keys (a KV cache)")
        return _Candidate("attention", {"sq": sq, "skv": skv, "d": d, "causal": 1}, nodes, b * hq)
    # the query heads sharing a key/value head are one attention of their stacked queries
    group = hq // hkv
    return _Candidate("attention", {"sq": sq * group, "skv": skv, "d": d, "causal": 0}, nodes, b * hkv)


def _broadcast(a: Sequence[int], b: Sequence[int], node: Node) -> tuple[int, ...]:
    out = []
    for x, y in zip(
        reversed((1,) * (len(b) - len(a)) + tuple(a)), reversed((1,) * (len(a) - len(b)) + tuple(b)), strict=True
    ):
        if x != y and 1 not in (x, y):
            raise _Refused(f"batch dimensions {list(a)} and {list(b)} do not broadcast")
        out.append(max(x, y))
    return tuple(reversed(out))


PATTERNS: dict[str, Callable[[Graph, Node], _Candidate]] = {
    "MatMul": _matmul,
    "Gemm": _gemm,
    "Conv": _conv,
    "Softmax": _softmax,
    "RMSNormalization": _rmsnorm,
    "RotaryEmbedding": _rope,
    "Attention": _attention,
}


# ---- composite patterns ------------------------------------------------------------------------


def _ffn(graph: Graph, down: Node) -> _Candidate | None:
    """down(silu(x·Wg) * (x·Wu)), SiLU written t·sigmoid(t): the feed-forward block of a
    Llama-style decoder, anchored at its down projection."""
    mul = graph.producer(down.inputs[0])
    if mul is None or mul.op_type != "Mul" or _only_consumer(graph, mul.outputs[0], "MatMul") is not down:
        return None
    for silu_out, up_out in ((mul.inputs[0], mul.inputs[1]), (mul.inputs[1], mul.inputs[0])):
        silu, up = graph.producer(silu_out), graph.producer(up_out)
        if silu is None or up is None or silu.op_type != "Mul" or up.op_type != "MatMul":
            continue
        for g_out, s_out in ((silu.inputs[0], silu.inputs[1]), (silu.inputs[1], silu.inputs[0])):
            sig, gate = graph.producer(s_out), graph.producer(g_out)
            if sig is None or gate is None or sig.op_type != "Sigmoid" or gate.op_type != "MatMul":
                continue
            if sig.inputs[0] != g_out or gate.inputs[0] != up.inputs[0]:
                continue
            if {n.name for n in graph.consumers(g_out)} != {sig.name, silu.name} or g_out in graph.outputs:
                continue
            if any(len(graph.consumers(t)) != 1 for t in (s_out, silu_out, up_out)):
                continue
            x = graph.shapes.get(gate.inputs[0])
            wg, wu, wd = (graph.shapes.get(n.inputs[1]) for n in (gate, up, down))
            if x is None or wg is None or wu is None or wd is None or not (len(wg) == len(wu) == len(wd) == 2):
                return None
            hidden, inter = x[-1], wg[1]
            if wu != (hidden, inter) or wd != (inter, hidden):
                return None
            nodes = (gate.name, sig.name, silu.name, up.name, mul.name, down.name)
            return _Candidate("ffn", {"rows": math.prod(x[:-1]), "hidden": hidden, "inter": inter}, nodes)
    return None
