"""`zomboss.legality.kb_check`: what `kb check` decides on a program or a mapping file, with
the Python predicates and clingo cross-checked (a disagreement is an internal error)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.toydoc import TOY
from zomboss.errors import WorkloadError, ZombossError
from zomboss.knowledge import KB, load_kb
from zomboss.legality import kb_check
from zomboss.legality.kb_check import check_mapping_values, check_program_text, mapping_values
from zomboss.target import sidecar_path


@pytest.fixture(scope="module")
def kb() -> KB:
    return load_kb(TOY)


def test_a_legal_program_and_an_unfenced_load(kb: KB) -> None:
    ok = check_program_text(kb, "store 4096, 0, 2\nfence\nload 4096, 0, 4, 4\n", "ok.txt", None, {})
    assert ok.legal and ok.checked == 3 and ok.asp_checked == 3
    assert ok.text() == "ok.txt: legal (3 instructions checked)"
    bad = check_program_text(kb, "store 4096, 0, 2\nload 4100, 0, 4, 4\nload 8192, 253, 4, 4\n", "bad.txt", None, {})
    assert [(v.rule, v.line) for v in bad.violations] == [("fence.raw", 2), ("load.fits", 3)]
    js = bad.to_json()
    assert js["legal"] is False and js["violations_total"] == 2 and js["path"] == "bad.txt"
    assert bad.text().endswith("bad.txt: illegal: 2 violation(s)")


def test_clingo_checks_only_the_prefix_it_is_given(kb: KB) -> None:
    text = "load 4096, 0, 4, 4\n" * 5 + "load 4096, 253, 4, 4\n"
    r = check_program_text(kb, text, "p.txt", None, {}, asp_limit=2)
    assert r.checked == 6 and r.asp_checked == 2 and [v.rule for v in r.violations] == ["load.fits"]
    assert "clingo cross-checked the first 2" in r.text()
    with pytest.raises(ZombossError, match="--asp-limit -1"):
        check_program_text(kb, text, "p.txt", None, {}, asp_limit=-1)


def test_a_disagreement_with_clingo_is_an_internal_error(kb: KB, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kb_check, "check_program", lambda kb, facts: [])  # clingo "finds" nothing
    with pytest.raises(ZombossError, match="internal inconsistency between the Python and ASP checkers"):
        check_program_text(kb, "load 4096, 253, 4, 4\n", "p.txt", None, {})


def _file(knobs: dict[str, Any]) -> dict[str, Any]:
    return {"op": "matmul", "shape": {"M": 64, "N": 16, "K": 16}, "mapping": {"op": "matmul", "knobs": knobs}}


def test_a_mapping_file_is_read_and_its_broken_constraint_named(kb: KB) -> None:
    op, values = mapping_values(kb, _file({"tile_i": 8, "tile_k": 2, "df": "os"}), "m.json", None)
    assert op == "matmul" and values["M"] == 64 and values["tile_i"] == 8 and values["df"] == "os"
    r = check_mapping_values(kb, op, values, "m.json")
    assert [v.rule for v in r.violations] == ["map.os"] and r.core
    _, legal = mapping_values(kb, _file({"tile_i": 4, "tile_k": 2, "df": "os"}), "m.json", None)
    assert check_mapping_values(kb, op, legal, "m.json").legal


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_file({"tile_i": "8", "tile_k": 2, "df": "os"}), "knob 'tile_i' must be an integer"),
        (_file({"tile_i": 8, "tile_k": 2, "df": 1}), "knob 'df' must be one of"),
        ({**_file({}), "shape": {"M": -1}}, r"workload key 'M' = -1 is outside"),
        ({**_file({}), "op": "conv", "mapping": {"knobs": {}}}, "has no mapping space for op 'conv'"),
        ({**_file({}), "op": "conv"}, "the mapping is for \"matmul\" but the workload is 'conv'"),
        ({"mapping": {}}, "'mapping' must be"),
    ],
)
def test_ill_typed_mapping_files_are_refused(kb: KB, data: dict[str, Any], message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        mapping_values(kb, data, "m.json", None)


@pytest.mark.parametrize(
    ("knob", "value", "message"),
    [
        ("buffers_a", 99, "is outside 1..2"),
        ("inner_order", "bogus", "is not one of {ijk"),
        ("dataflow", "xs", "is not"),
    ],
)
def test_an_inactive_knob_outside_its_domain_is_refused(knob: str, value: object, message: str) -> None:
    """A hardware-loop mapping makes the unrolled stream's knobs inactive: their values are
    replaced, so an out-of-domain one would pass unseen; it is refused, naming the domain, by
    the check `export --mapping` makes (Knob.coerce, issue #29 item 13)."""
    from zomboss.target import get_target

    t = get_target("gemmini")
    wl = t.workload("mm256")
    knobs = t.reference_mappings(wl, {})["library"].to_json()
    good = {"workload": "mm256", "mapping": knobs}
    op, _ = mapping_values(t.kb({}), good, "m.json", t.workload)
    assert op == "matmul"
    bad = {"workload": "mm256", "mapping": {**knobs, "knobs": {**knobs["knobs"], knob: value}}}
    with pytest.raises(WorkloadError) as e:
        mapping_values(t.kb({}), bad, "m.json", t.workload)
    assert str(e.value).startswith(f"m.json: knob '{knob}' = {value!r} {message}")
    from zomboss.mapping import MappingError, space

    with pytest.raises(MappingError) as same:  # the path `export --mapping` reads a mapping by
        space(t.kb({}), "matmul").mapping(bad["mapping"]["knobs"], wl.shape, "m.json")
    assert str(same.value) == str(e.value)


@pytest.mark.parametrize("program", ["S_ADDI_INT gp32, gp0, 1\n", "C_LOOP_START gp4, 2\nC_LOOP_END gp99\n"])
def test_a_register_index_past_a_state_array_names_the_operand_rule(tmp_path: Any, capsys: Any, program: str) -> None:
    """Issue #29, item 16: PLENA's gp32 indexes loop[32] (32 records): `kb check` ended in an
    internal inconsistency between the checkers, `simulate` named loop[32] without a doc line.
    Both now name the operand's own rule with its doc line, then the missing record."""
    from zomboss.app import main
    from zomboss.target import get_target

    t = get_target("plena")
    out = t.export(t.workload("rms_4x384"), tmp_path / "k.asm", {})
    prog = tmp_path / "p.asm"
    prog.write_text(program)
    sidecar_path(prog).write_text(sidecar_path(out).read_text())
    assert main(["kb", "check", "plena", str(prog)]) == 1
    text = capsys.readouterr()
    assert "internal inconsistency" not in text.err
    assert re.search(r"\.rd\.reg \(\S*plena\.md:\d+\): rd of \w+ must name a register of gp \(0\.\.15\)", text.out)
    assert re.search(r"isa\.state_index \(\S*plena\.md:\d+\): \w+ names loop\[\d+\], which does not exist", text.out)
    assert main(["simulate", "plena", str(prog)]) == 1
    err = capsys.readouterr().err
    assert re.search(r"^zomboss: \S*p\.asm:\d+: \w+: \w+\.rd\.reg \(\S*plena\.md:\d+\)", err)
