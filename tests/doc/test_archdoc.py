"""The doc parser: structure, located syntax errors, and robustness to arbitrary edits."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zomboss import expr as ex
from zomboss.doc import DocError, parse_doc
from zomboss.knowledge import compile_doc
from zomboss.target import doc_path, target_names

TOY = Path(__file__).resolve().parents[1] / "data" / "toy.md"
TEXT = TOY.read_text()


def test_toy_doc_structure():
    doc = parse_doc(TEXT, "toy.md")
    assert [p.name for p in doc.params] == ["dim", "sp_kib", "sp_rows", "max_blocks"]
    load = next(i for i in doc.instrs if i.name == "load")
    assert [o.name for o in load.operands] == ["dram", "local", "cols", "rows"]
    assert load.unit == "load" and load.uses[0].alias == "cfg"
    assert load.reads[0].memory == "dram" and load.reads[0].when is not None
    rule = next(r for r in doc.rules if r.id == "load.block")
    assert rule.patterns == ("load",)
    assert isinstance(rule.expr, ex.Bin) and rule.expr.op == "->"
    # locations are Markdown lines
    assert TEXT.splitlines()[rule.loc.line - 1].startswith("rule load.block")
    assert {(e.rule, e.ok) for e in doc.examples} >= {("load.block", True), ("load.block", False)}
    assert all(e.text.strip() for e in doc.examples)


def test_prose_is_ignored():
    doc = parse_doc("# Title\n\nparam x = nonsense ((( in prose\n\n```python\nparam = 1\n```\n", "p.md")
    assert doc.params == [] and doc.instrs == []


@pytest.mark.parametrize(
    ("edit", "where", "expected"),
    [
        (("rows: int 1..dim)", "rows: int 1..dim"), "load(dram", "expected ',', ')'"),
        (("knob df: {ws, os}", "knob df: {ws os}"), "knob df", "expected ',', '}'"),
        (("param max_blocks = 2", "param max_blocks = "), "param max_blocks", "expected"),
        (("latency 5 + rows", "latency 5 + + rows"), "latency 5", "expected"),
    ],
)
def test_syntax_errors_are_located(edit, where, expected):
    bad = TEXT.replace(*edit)
    with pytest.raises(DocError) as e:
        parse_doc(bad, "toy.md")
    msg = str(e.value)
    m = re.match(r"toy\.md:(\d+):(\d+): (.*)", msg)
    assert m, msg
    line = int(m.group(1))
    assert expected in m.group(3)
    # the reported line is the edited line or the one right after it (an error at end of statement)
    target = next(i for i, s in enumerate(bad.splitlines(), 1) if where in s)
    assert target <= line <= target + 2, (msg, target)


def test_unterminated_block():
    with pytest.raises(DocError, match=r"x\.md:3:1: expected a closing ```"):
        parse_doc("# t\n\n```isa\nparam a = 1\n", "x.md")


def test_bad_example_header():
    with pytest.raises(DocError, match=r"x\.md:1:4: expected 'example RULE_ID ok'"):
        parse_doc("```example foo maybe\nx\n```\n", "x.md")


def test_unknown_function():
    with pytest.raises(DocError, match=r"x\.md:2:\d+: unknown function 'sqrt'"):
        parse_doc("```isa\nparam a = sqrt(4)\n```\n", "x.md")


_LOC = re.compile(r"^toy\.md:\d+(:\d+)?: ")
_REAL_DOCS = {name: doc_path(name).read_text() for name in target_names()}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pos=st.integers(min_value=0, max_value=len(TEXT) - 1),
    cut=st.integers(min_value=0, max_value=12),
    insert=st.text(alphabet="(){}[],:.=+-*/<>!#\"'\nabcxyz019 _", max_size=6),
)
def test_mutated_docs_never_crash_and_errors_have_locations(pos, cut, insert):
    mutated = TEXT[:pos] + insert + TEXT[pos + cut :]
    try:
        parse_doc(mutated, "toy.md")
    except DocError as e:
        assert _LOC.match(str(e)), str(e)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # scripts/fuzz.py runs longer
@given(
    name=st.sampled_from(sorted(_REAL_DOCS)),
    frac=st.floats(min_value=0, max_value=1, exclude_max=True),
    cut=st.integers(min_value=0, max_value=20),
    insert=st.text(alphabet="(){}[],:.=+-*/<>!#\"'\n`abcxyz019 _", max_size=8),
)
def test_mutated_shipped_docs_report_locations(name, frac, cut, insert):
    """Edits anywhere in the shipped docs either still compile or fail with file:line."""
    text = _REAL_DOCS[name]
    pos = int(frac * len(text))
    mutated = text[:pos] + insert + text[pos + cut :]
    path = f"{name}.md"
    try:
        compile_doc(parse_doc(mutated, path), name, {})
    except DocError as e:
        assert re.match(rf"^{name}\.md:\d+(:\d+)?: ", str(e)), str(e)
