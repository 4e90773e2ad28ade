"""An ONNX model as the compiler reads it: its nodes with their attributes and the static shape
of every tensor, after the user's `--dim NAME=VALUE` values are put into the dynamic
dimensions and ONNX's shape inference has filled in what the file's value info leaves out.

Weights are never needed: only the model's structure and shapes are read (external data is not
loaded), so a file without its weights, or a graph whose weights are plain inputs, compiles.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from zomboss.errors import ZombossError


class NetworkError(ZombossError):
    """A model that cannot be read or whose shapes are not all known."""

    exit_code = 2


@dataclass(frozen=True)
class Node:
    """One operator: its name (made unique when the file gives none), type, tensors and attributes."""

    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any]


@dataclass(frozen=True)
class Graph:
    """The nodes in the file's (topological) order and the static shape of every known tensor."""

    name: str
    nodes: tuple[Node, ...]
    shapes: Mapping[str, tuple[int, ...]]
    outputs: frozenset[str]  # the graph's outputs: never folded into a consumer's layer
    opset: int = 23  # the default domain's opset: some operators' defaults changed with it

    def shape(self, tensor: str, node: Node) -> tuple[int, ...]:
        """The static shape of `tensor`, or an error naming the node that needs it."""
        if tensor not in self.shapes:
            raise NetworkError(
                f"{self.name}: node {node.name!r} ({node.op_type}): the shape of {tensor!r} is unknown "
                "(give it in the model's value_info, or its dynamic dimensions with --dim NAME=VALUE)"
            )
        return self.shapes[tensor]

    def consumers(self, tensor: str) -> list[Node]:
        return self._consumers.get(tensor, [])

    def producer(self, tensor: str) -> Node | None:
        return self._producer.get(tensor)

    @cached_property
    def _consumers(self) -> dict[str, list[Node]]:
        """tensor -> the nodes reading it (built once: patterns ask for every node)."""
        out: dict[str, list[Node]] = {}
        for n in self.nodes:
            for t in dict.fromkeys(n.inputs):
                out.setdefault(t, []).append(n)
        return out

    @cached_property
    def _producer(self) -> dict[str, Node]:
        return {t: n for n in self.nodes for t in n.outputs}


def load_model(path: Path) -> Any:
    """The ModelProto of an ONNX file, its external weights not loaded; a file that is not an
    ONNX model is one clear error naming it."""
    import onnx
    from google.protobuf.message import DecodeError

    if not path.is_file():
        raise NetworkError(f"{path}: no such file (and not a built-in network: see `zomboss compile --list`)")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except (DecodeError, ValueError, RuntimeError) as e:
        raise NetworkError(f"{path}: not an ONNX model ({type(e).__name__}: {str(e)[:120]})") from None
    if not model.graph.node:
        raise NetworkError(f"{path}: not an ONNX model (no graph nodes)")
    return model


def read_graph(model: Any, name: str, dims: Mapping[str, int]) -> Graph:
    """The graph of `model` with every tensor shape static: dynamic dimensions of the graph's
    inputs take their `dims` value (a missing one, or a name no input has, is an error), then
    ONNX shape inference runs."""
    import onnx
    from onnx import helper, shape_inference

    model = onnx.ModelProto.FromString(model.SerializeToString())  # the caller's model stays as it was
    init = {t.name for t in model.graph.initializer}
    used: set[str] = set()
    for vi in model.graph.input:
        if vi.name in init or not vi.type.HasField("tensor_type"):
            continue
        for i, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                continue
            key = d.dim_param
            if not key or key not in dims:
                what = f"the dynamic dimension {key!r}" if key else f"an unnamed dynamic dimension (axis {i})"
                hint = f"--dim {key}=VALUE" if key else "a static shape in the file"
                raise NetworkError(f"{name}: input {vi.name!r} has {what}: give {hint}")
            used.add(key)
            d.Clear()
            d.dim_value = dims[key]
    unknown = sorted(set(dims) - used)
    if unknown:
        raise NetworkError(f"--dim {unknown[0]}: no input of {name} has a dynamic dimension of that name")
    try:
        inferred = shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as e:  # noqa: BLE001 - onnx raises its own error types per checker stage
        raise NetworkError(f"{name}: ONNX shape inference failed: {type(e).__name__}: {str(e)[:200]}") from None
    shapes: dict[str, tuple[int, ...]] = {}
    g = inferred.graph
    for vi in [*g.input, *g.value_info, *g.output]:
        if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            continue
        dimv = vi.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dimv):
            shapes[vi.name] = tuple(int(d.dim_value) for d in dimv)
    for t in g.initializer:
        shapes[t.name] = tuple(int(x) for x in t.dims)
    nodes = []
    seen: set[str] = set()
    for i, n in enumerate(g.node):
        node_name = n.name or f"{n.op_type}_{i}"
        while node_name in seen:
            node_name = f"{node_name}_{i}"
        seen.add(node_name)
        attrs = {a.name: _attr(helper.get_attribute_value(a)) for a in n.attribute}
        nodes.append(Node(node_name, n.op_type, tuple(n.input), tuple(n.output), attrs))
    opset = next((int(o.version) for o in inferred.opset_import if o.domain in ("", "ai.onnx")), 23)
    return Graph(name, tuple(nodes), shapes, frozenset(o.name for o in g.output), opset)


def _attr(v: Any) -> Any:
    """Attribute values as plain Python (bytes as text, repeated fields as tuples); tensors and
    graphs are kept as they are (nothing here reads them)."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list):
        return tuple(_attr(x) for x in v)
    return v
