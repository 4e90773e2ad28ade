"""Reading a model: dynamic dimensions need --dim values, a file that is not ONNX is one error."""

from __future__ import annotations

import pytest

from tests.networks.onnx_graphs import mlp
from zomboss.networks.graph import NetworkError, load_model, read_graph


def test_shapes_are_inferred_through_the_graph():
    g = read_graph(mlp(), "mlp", {})
    assert g.shapes["h2"] == (16, 32) and g.shapes["w1"] == (32, 32)
    assert [n.name for n in g.nodes] == ["fc1", "fc1.bias", "fc1.relu", "fc2", "fc3"]


def test_a_missing_dim_names_it():
    with pytest.raises(NetworkError, match=r"input 'x' has the dynamic dimension 'batch': give --dim batch=VALUE"):
        read_graph(mlp(batch="batch"), "mlp", {})


def test_a_dim_no_input_has_is_refused():
    with pytest.raises(NetworkError, match="--dim seq: no input of mlp"):
        read_graph(mlp(batch="batch"), "mlp", {"batch": 4, "seq": 2})


def test_the_callers_model_is_left_as_it_was():
    model = mlp(batch="batch")
    read_graph(model, "mlp", {"batch": 4})
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def test_a_file_that_is_not_onnx_is_one_clear_error(tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_text("not a protobuf at all \x00\xff")
    with pytest.raises(NetworkError, match=rf"{bad}: not an ONNX model"):
        load_model(bad)
    with pytest.raises(NetworkError, match="no such file"):
        load_model(tmp_path / "absent.onnx")
