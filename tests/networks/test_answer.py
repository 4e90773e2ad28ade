"""The network's answer: totals are the per-layer results times their multiplicity, shares sum
to one, a layer without a verified kernel is left out and named, the report is written."""

from __future__ import annotations

import pytest

from zomboss.networks.answer import LayerResult, NetworkResult, write_report
from zomboss.networks.layers import Distinct
from zomboss.workload import Workload


def _layer(n, mult):
    return Distinct(Workload(f"matmul:M={n}", "matmul", {"M": n}), "gemm", mult, (f"node{n}",))


def _result(payloads, clock=None):
    layers = tuple(LayerResult.of(_layer(i, m), p) for i, (m, p) in enumerate(payloads, 1))
    unsupported = ({"op_type": "Erf", "count": 2, "reasons": {"no pattern": 2}, "nodes": ["a", "b"]},)
    return NetworkResult("net", "tgt", "solve:cost:2:0", layers, unsupported, clock_hz=clock)


def test_totals_are_the_sum_of_layers_times_multiplicity():
    res = _result(
        [
            (3, {"verified": True, "default_cycles": 100, "cycles": 50}),
            (1, {"verified": True, "default_cycles": 200, "cycles": 200}),
        ]
    )
    assert res.default_cycles == 3 * 100 + 200 and res.cycles == 3 * 50 + 200
    assert res.speedup == pytest.approx(500 / 350)
    rows = res.layer_rows()
    assert sum(r["share"] for r in rows) == pytest.approx(1) and sum(r["share_default"] for r in rows) == pytest.approx(
        1
    )
    d = res.to_json()
    assert d["complete"] and d["layer_instances"] == 4 and d["seconds"] is None
    assert any("states no clock" in line for line in res.summary())


def test_time_at_the_clock_when_the_target_states_one():
    res = _result([(1, {"verified": True, "default_cycles": 2_000_000, "cycles": 1_000_000})], clock=1e8)
    assert res.to_json()["seconds"] == pytest.approx(0.01)
    assert "10.000 ms at 100 MHz" in "\n".join(res.summary())


def test_a_failed_layer_is_left_out_and_named():
    res = _result([(2, {"verified": True, "default_cycles": 10, "cycles": 5}), (1, {"error": "boom"})])
    assert not res.complete and res.cycles == 10
    assert res.to_json()["missing"] == ["matmul:M=2"]
    assert any(line.startswith("INCOMPLETE") for line in res.summary())


def test_the_report_has_the_layer_table_and_the_plot(tmp_path):
    pytest.importorskip("matplotlib")
    res = _result([(3, {"verified": True, "default_cycles": 100, "cycles": 50, "optimum_cycles": 50})])
    written = write_report(res, tmp_path, {"network": "net"})
    text = (tmp_path / "report.md").read_text()
    assert "| `matmul:M=1` | 3 | node1 | yes | 100 | 50 | 2.000 | 50 | 0.00% |" in text
    assert "| Erf | 2 |" in text and "![where the network's time goes](time.png)" in text
    assert {p.name for p in written.files} == {"report.md", "time.png", "time.svg"}
