"""Input a doc or a query would silently ignore is refused, with its location."""

from __future__ import annotations

import pytest

from tests.toydoc import TOY, TOY_TEXT, write_doc
from zomboss.app import main
from zomboss.doc import DocError, parse_doc
from zomboss.knowledge import load_kb, query

# ---- 6. silently ignored input is refused, with its location --------------------------------


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("instr FENCE()\n  unit ctrl", r"instruction 'FENCE' differs from instruction 'fence' .* only by case"),
        ("instr not()\n  unit ctrl", r"instruction 'not' cannot be an ASP constant"),
        ("instr __()\n  unit ctrl", r"instruction '__' cannot be an ASP constant"),
        ("instr nop()\n  unit Load", r"unit 'Load' differs from unit 'load'"),
    ],
)
def test_names_that_would_merge_or_break_the_kb(tmp_path, edit, message):
    doc = write_doc(
        tmp_path, TOY_TEXT.replace("instr fence()\n  unit ctrl", "instr fence()\n  unit ctrl\n\n" + edit, 1)
    )
    with pytest.raises(DocError, match=rf"^{tmp_path / 'm.md'}:\d+:\d+: {message}"):
        load_kb(doc, use_cache=False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no ```isa blocks"),
        ("# prose\n\nonly\n", "no ```isa blocks"),
        ("```isa\nparam a = 1\n```\n", "declare no instruction"),
    ],
)
def test_docs_without_a_machine_are_refused(tmp_path, text, message, capsys):
    doc = write_doc(tmp_path, text)
    assert main(["kb", "build", str(doc), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"zomboss: {doc}:1: ") and message in err


@pytest.mark.parametrize(
    "pattern", ['#include "/etc/passwd"', "p :- q", "param(X,@f(1))", "x). #script (python) #end. y(", "param(dim,V) q"]
)
def test_query_patterns_are_atoms_only(pattern, capsys):
    assert main(["kb", "query", str(TOY), pattern]) == 2
    assert "expected an atom" in capsys.readouterr().err


def test_query_patterns_still_match():
    kb = load_kb(TOY)
    assert query(kb.asp, "param(dim,_)") == ["param(dim,4)"]
    assert query(kb.asp, 'rule_applies("load.block",M).') == ['rule_applies("load.block",load)']
    assert query(kb.asp, "capacity(spad , R)") == ["capacity(spad,256)"]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("capcity(M,R)", "the KB has no predicate capcity/2 (did you mean capacity/2?)"),
        ("capacity(M)", "the KB has no predicate capacity/1 (did you mean capacity/2?)"),
        ("nothing_like_it", "the KB has no predicate nothing_like_it/0; its predicates: "),
    ],
)
def test_a_query_of_an_unknown_predicate_is_an_error_naming_the_kbs(pattern, message, capsys):
    assert main(["kb", "query", str(TOY), pattern]) == 2
    err = capsys.readouterr().err
    assert message in err and "param/2" in err and err.count("\n") == 1


def test_a_known_predicate_without_atoms_answers_nothing(capsys):
    kb = load_kb(TOY)
    assert query(kb.asp, "violation(R,I)") == []


def test_costs_of_a_mapping_are_kept():
    from zomboss.target import doc_path

    doc = parse_doc(doc_path("gemmini").read_text(), "g.md")
    assert {c.name for ms in doc.mappings for c in ms.costs} == {"estimate", "bound"}
