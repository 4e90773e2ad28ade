"""The doc compiler is bounded (nesting, size, integer magnitudes) and never wraps integers at 32 bits."""

from __future__ import annotations

import time

import pytest

from tests.toydoc import TOY, TOY_TEXT, with_rule, write_doc
from zomboss.app import main
from zomboss.doc import DocError
from zomboss.knowledge import load_kb, query
from zomboss.legality import check_program_text

# ---- 3. the doc compiler is bounded ---------------------------------------------------------


def _nest(fn: str, depth: int) -> str:
    e = "rows"
    for i in range(depth):
        e = f"{fn}({e}, {('cols', 'dram', 'local')[i % 3]} + {i})"
    return e


def test_min_nested_25_deep_is_refused_with_its_location(tmp_path):
    doc = write_doc(tmp_path, with_rule(f'rule load.bomb on load "nested": {_nest("min", 25)} >= 0'))
    t0 = time.perf_counter()
    with pytest.raises(DocError, match=r"m\.md:\d+: rule load\.bomb \(on load\): .* needs more than 1024 ASP rules"):
        load_kb(doc, use_cache=False)
    assert time.perf_counter() - t0 < 10


def test_deep_and_large_expressions_are_refused(tmp_path):
    deep = "-" * 60 + "rows"
    with pytest.raises(DocError, match=r"m\.md:\d+:\d+: expression nested more than 48 deep"):
        load_kb(write_doc(tmp_path, with_rule(f'rule load.deep on load "d": {deep} < 0')), use_cache=False)
    long_sum = " + ".join(["rows"] * 100)
    with pytest.raises(DocError, match="nested more than 48 deep"):
        load_kb(write_doc(tmp_path, with_rule(f'rule load.sum on load "s": {long_sum} > 0')), use_cache=False)
    # lets that double each other: the inlined tree is huge, the check is linear
    lets = "".join(f"  let l{i + 1} = l{i} + l{i}\n" for i in range(40))
    text = TOY_TEXT.replace(
        "  let blocks = cdiv(cols, dim)\n", "  let blocks = cdiv(cols, dim)\n  let l0 = rows\n" + lets
    )
    text = text.replace("rule load.fits on load", 'rule load.lets on load "l": l40 > 0\nrule load.fits on load', 1)
    with pytest.raises(DocError, match=r"m\.md:\d+: load: let l12: expression of \d+ nodes \(limit 4096"):
        load_kb(write_doc(tmp_path, text), use_cache=False)


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ("param huge = 1 << (1 << 33)", r"parameter 'huge': shift by 8589934592 \(defined for 0\.\.128\)"),
        (
            "param a = 65536\nparam b = a * a\nparam c = b * b\nparam d = c * c\nparam e = d * d\nparam f = e * e",
            "parameter 'd': the value is beyond the 128-bit",
        ),
        ("param big = " + "9" * 60, r"integer literal beyond the 128-bit limit"),
        ("param z = 7 / (dim - 4)", r"parameter 'z': division by zero"),
    ],
)
def test_integer_magnitudes_are_bounded(tmp_path, param, message):
    doc = write_doc(tmp_path, TOY_TEXT.replace("param max_blocks = 2", "param max_blocks = 2\n" + param, 1))
    t0 = time.perf_counter()
    with pytest.raises(DocError, match=r"m\.md:\d+(:\d+)?: .*" + message):
        load_kb(doc, use_cache=False)
    assert time.perf_counter() - t0 < 10


def test_huge_operands_in_programs_are_refused():
    kb = load_kb(TOY)
    with pytest.raises(Exception, match=r"p\.txt:1:\d+: operand 0x.* beyond the 128-bit limit"):
        check_program_text(kb, "load 0x" + "f" * 200 + ", 0, 4, 4\n", "p.txt", None, {})


# ---- 4. no silent wrap-around at 32 bits -------------------------------------------------------


def test_parameters_beyond_32_bits_are_exact_in_the_kb(capsys):
    assert main(["kb", "query", "gemmini", "param(max_bytes,V)", "--param", "max_bytes=4294967297"]) == 0
    assert capsys.readouterr().out.strip() == 'param(max_bytes,"4294967297")'
    assert main(["kb", "query", str(TOY), "param(dim,V)", "--param", "dim=4294967297"]) == 2


def test_ranges_beyond_32_bits(tmp_path):
    doc = write_doc(tmp_path, TOY_TEXT.replace("imm: int 0..255", "imm: int 0..99999999999"))
    kb = load_kb(doc, use_cache=False)
    assert query(kb.asp, 'operand_range(addi,"imm",L,H)') == ['operand_range(addi,"imm",0,"99999999999")']
    # the range rule compares against the exact bound; a value beyond 32 bits is checked by Python
    ok = check_program_text(kb, "addi gp1, gp0, 2147483648\naddi gp1, gp0, 7\n", "p.txt", None, {})
    assert ok.legal and ok.python_only == 1
    bad = check_program_text(kb, "addi gp1, gp0, 100000000000\naddi gp1, gp0, -1\n", "p.txt", None, {})
    assert [v.rule for v in bad.violations] == ["addi.imm.range"] * 2


def test_intermediate_overflow_is_left_to_python(tmp_path):
    doc = write_doc(tmp_path, with_rule('rule load.prod on load "p": rows * 1000000000 < 2000000000'))
    kb = load_kb(doc, use_cache=False)
    r = check_program_text(kb, "load 4096, 0, 4, 1\nload 4096, 0, 4, 3\n", "p.txt", None, {})
    assert [(v.rule, v.index) for v in r.violations if v.rule == "load.prod"] == [("load.prod", 1)]
    assert r.python_only == 1  # 3 * 10^9 does not fit clingo's integers
