"""`zomboss compile`, run in-process as a user types it, on small ONNX files written by the
tests: the answer's fields, a rerun taken whole from the results store, the export manifest, the
report, the built-in list, and one clear line for bad input."""

from __future__ import annotations

import json

import onnx
import pytest

import zomboss
from tests.networks.onnx_graphs import mlp
from zomboss.app import bench, main


@pytest.fixture
def mlp_file(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp(batch="batch", unsupported="Erf"), str(path))
    return path


def _compile(capsys, *argv):
    code = main(["compile", *map(str, argv), "--budget", "2", "--workers", "1", "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_an_onnx_file_compiles_and_a_rerun_simulates_nothing(mlp_file, tmp_path, capsys, monkeypatch):
    db = tmp_path / "z.sqlite"
    code, d = _compile(capsys, mlp_file, "--target", "gemmini", "--dim", "batch=16", "--db", db)
    assert code == 0 and d["complete"] and d["target"] == "gemmini" and d["kind"] == "solve:cost:2:0"
    assert [(r["workload"], r["multiplicity"]) for r in d["layers"]] == [
        ("matmul:M=16,N=32,K=32,bias=1,relu=1", 1),
        ("matmul:M=16,N=32,K=32,bias=0,relu=0", 2),
    ]
    assert d["layers"][1]["nodes"] == ["fc2", "fc3"]
    assert d["cycles"] == sum(r["cycles"] * r["multiplicity"] for r in d["layers"])
    assert d["default_cycles"] == sum(r["default_cycles"] * r["multiplicity"] for r in d["layers"])
    assert d["unsupported"] == [
        {"op_type": "Erf", "count": 1, "reasons": {"no pattern maps this operator": 1}, "nodes": ["odd"]}
    ]
    assert d["clock_hz"] and d["seconds"] == pytest.approx(d["cycles"] / d["clock_hz"])
    for key in ("speedup", "share", "share_default", "verified", "optimum_cycles", "gap", "op"):
        assert key in d["layers"][0]

    def no_run(*args, **kwargs):
        raise AssertionError("a rerun must not solve again")

    monkeypatch.setattr(bench, "run_job", no_run)
    code, again = _compile(capsys, mlp_file, "--target", "gemmini", "--dim", "batch=16", "--db", db)
    assert code == 0 and again["cycles"] == d["cycles"] and again["layers"] == d["layers"]


def test_export_writes_every_kernel_and_a_node_manifest(mlp_file, tmp_path, capsys):
    out = tmp_path / "kernels"
    code, d = _compile(
        capsys, mlp_file, "--target", "gemmini", "--dim", "batch=8", "--db", tmp_path / "z.sqlite", "--export", out
    )
    assert code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["nodes"] == {
        "fc1": "layer01_matmul.c",
        "fc1.bias": "layer01_matmul.c",
        "fc1.relu": "layer01_matmul.c",
        "fc2": "layer02_matmul.c",
        "fc3": "layer02_matmul.c",
    }
    assert manifest["unmapped"] == [{"node": "odd", "op_type": "Erf"}]
    assert all((out / f).is_file() for layer in manifest["layers"] for f in layer["files"])
    assert str(out / "manifest.json") in d["files"] and str(out / "layer01_matmul.c") in d["files"]


def test_report_and_text_output(mlp_file, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    rep = tmp_path / "rep"
    argv = ["compile", str(mlp_file), "--target", "gemmini", "--dim", "batch=8", "--budget", "2", "--workers", "1"]
    assert main([*argv, "--db", str(tmp_path / "z.sqlite"), "--report", str(rep), "--plain"]) == 0
    text = capsys.readouterr().out
    assert "network speedup:" in text and "not mapped (1 operators, not timed): Erf x1" in text
    assert "at 1,000 MHz" in text and f"wrote {rep / 'report.md'}" in text
    assert (rep / "time.png").stat().st_size > 0 and "| Erf | 1 |" in (rep / "report.md").read_text()


def test_list_names_the_builtins(capsys):
    assert main(["compile", "--list", "--json"]) == 0
    nets = {n["name"]: n for n in json.loads(capsys.readouterr().out)}
    assert set(nets) >= {"resnet18", "resnet50", "bert-base", "llama-3.2-1b-prefill", "smollm-135m-decode"}
    assert nets["resnet50"]["targets"]["gemmini"]["instances"] == 54


@pytest.mark.parametrize(
    "argv, message",
    [
        (["{bad}", "--target", "gemmini"], "{bad}: not an ONNX model"),
        (["{mlp}", "--target", "gemmini"], "input 'x' has the dynamic dimension 'batch': give --dim batch=VALUE"),
        (["{mlp}", "--target", "gemmini", "--dim", "batch"], "--dim 'batch': expected NAME=VALUE"),
        (["{mlp}", "--target", "gemmini", "--dim", "batch=2", "--dim", "seq=3"], "--dim seq: no input of"),
        (["nosuchnet", "--target", "gemmini"], "nosuchnet: no such file (and not a built-in network"),
        (["resnet18", "--target", "gemmini", "--dim", "batch=1"], "the built-in network resnet18 has no dynamic"),
        (["resnet18"], "give MODEL (an ONNX file or a built-in name) and --target TARGET"),
        (["resnet18", "--target", "nosuch"], "unknown target"),
    ],
)
def test_bad_input_is_one_clear_line(argv, message, mlp_file, tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00\xffnot onnx")
    argv = [a.format(bad=bad, mlp=mlp_file) for a in argv]
    code = main(["compile", *argv, "--db", str(tmp_path / "z.sqlite")])
    err = capsys.readouterr().err
    assert code != 0 and message.format(bad=bad) in err and len(err.strip().splitlines()) == 1, err


def test_the_python_api_compiles_a_model_proto(tmp_path):
    res = zomboss.compile(mlp(), "gemmini", budget=2, workers=1, db=tmp_path / "z.sqlite", export=tmp_path / "k")
    assert isinstance(res, zomboss.NetworkResult) and res.complete
    assert res.cycles == sum(r.cycles * r.layer.multiplicity for r in res.layers)
    assert str(tmp_path / "k" / "manifest.json") in res.files
    with pytest.raises(zomboss.ZombossError, match="budget=0"):
        zomboss.compile(mlp(), "gemmini", budget=0)


@pytest.mark.slow
def test_a_decoder_block_compiles_on_plena(tmp_path, capsys):
    from tests.networks.onnx_graphs import decoder_block

    path = tmp_path / "block.onnx"
    onnx.save(decoder_block(), str(path))
    code, d = _compile(capsys, path, "--target", "plena", "--db", tmp_path / "z.sqlite")
    assert code == 0 and d["complete"]
    assert {r["op"] for r in d["layers"]} == {"rmsnorm", "linear", "rope", "attention", "ffn"}
    assert d["unsupported"][0]["op_type"] == "Add" and d["unsupported"][0]["count"] == 2
    assert d["clock_hz"] is None and d["seconds"] is None
