"""One semantics for both checkers: Python predicates and clingo agree (edge and random values
included) and every refusal names its rule."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.strategies import expressions, ints
from tests.toydoc import TOY, TOY_TEXT, with_rule, write_doc
from zomboss import expr as ex
from zomboss.app.check import check_file
from zomboss.knowledge import load_kb
from zomboss.legality import check_mapping_values, check_program_text

# ---- 5. one semantics: the checkers agree and every refusal names its rule ---------------------


def test_division_by_zero_violates_the_rule_in_both_checkers(tmp_path):
    doc = write_doc(tmp_path, with_rule('rule load.ratio on load "r": rows / (cols - 4) >= 0'))
    kb = load_kb(doc, use_cache=False)
    r = check_program_text(kb, "load 4096, 0, 4, 4\nload 4096, 0, 8, 4\n", "p.txt", None, {})
    (v,) = [v for v in r.violations if v.rule == "load.ratio"]
    assert v.index == 0 and v.values["cols"] == 4


def test_guarded_division_is_defined(tmp_path):
    doc = write_doc(tmp_path, with_rule('rule load.guard on load "g": cols != 4 -> rows / (cols - 4) >= 0'))
    kb = load_kb(doc, use_cache=False)
    assert check_program_text(kb, "load 4096, 0, 4, 4\n", "p.txt", None, {}).legal


def test_undefined_let_and_prev_fail_the_rules_that_read_them(tmp_path):
    text = TOY_TEXT.replace(
        "  let blocks = cdiv(cols, dim)\n", "  let blocks = cdiv(cols, dim)\n  let q = 8 / (rows - 1)\n"
    )
    doc = write_doc(
        tmp_path, text.replace("rule load.fits on load", 'rule load.q on load "q": q < 100\nrule load.fits on load')
    )
    kb = load_kb(doc, use_cache=False)
    r = check_program_text(kb, "load 4096, 0, 4, 1\nload 4096, 0, 4, 2\n", "p.txt", None, {})
    (v,) = [v for v in r.violations if v.rule == "load.q"]
    assert v.index == 0 and v.values["q"] == "undefined"


@pytest.mark.parametrize(
    ("tile", "rule"), [(0, "matmul.tile_i.range"), (65535, "map.hw_spad_fit"), (2**31, "map.hw_acc_fit")]
)
def test_gemmini_mappings_name_their_constraint(tmp_path, tile, rule):
    from zomboss.target import get_target

    t = get_target("gemmini")
    wl = t.workload("mm256")
    m = t.reference_mappings(wl, {})["library"].to_json()
    m["knobs"]["tile_i"] = tile
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"workload": "mm256", "mapping": m}))
    report = check_file("gemmini", path, {}, progress=False)
    assert rule in {v.rule for v in report.violations}


def test_gemmini_loop_bounds_at_their_maximum_name_the_rule(tmp_path):
    prog = tmp_path / "ws.asm"
    prog.write_text(
        "loop_ws_bounds 65535, 65535, 65535, 0, 0, 0\nloop_ws_addrs_ab 0x10000, 0x20000\n"
        "loop_ws_addrs_dc 0, 0x30000\nloop_ws_strides_ab 128, 96\nloop_ws_strides_dc 0, 96\n"
        "loop_ws 0, 0, 0, 0, 0, 0, 0, 0, 0\n"
    )
    report = check_file("gemmini", prog, {}, progress=False)
    assert "loop_ws.capacity" in {v.rule for v in report.violations}


def test_toy_mappings_with_edge_values_agree():
    kb = load_kb(TOY)
    for tile in (0, -1, 65535, 2**31 - 1, 2**31, 2**40):
        vals = {"M": 64, "N": 16, "K": 16, "tile_i": tile, "tile_k": 4, "df": "ws"}
        check_mapping_values(kb, "matmul", vals, "m.json")  # raises on any disagreement


# ---- the two checkers agree on random expressions, edge values included ---------------------


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(expressions(), st.tuples(ints, ints, ints))
def test_python_and_asp_agree_on_random_expressions(e, values):
    from tests.fuzz.props import _agree

    status, py, by_asp, wide = _agree(e, values)
    if status == "ok" and not wide:
        assert py == by_asp, (ex.show(e), values)
