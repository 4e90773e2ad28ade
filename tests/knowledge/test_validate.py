"""`zomboss.knowledge.validate`: a KB whose names, rules, hazards or examples do not resolve
is refused before it reaches ASP, with the doc line of the culprit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.toydoc import TOY, TOY_TEXT, with_rule, write_doc
from zomboss import expr as ex
from zomboss.doc import DocError, parse_doc
from zomboss.doc import model as dm
from zomboss.knowledge import load_kb
from zomboss.knowledge.validate import check_names, number


def test_number_evaluates_parameters_and_refuses_the_rest() -> None:
    loc = dm.Loc("m.md", 3)
    dim = ex.Ref(("dim",))
    assert number(ex.Bin("+", ex.Bin("*", dim, ex.Int(2)), ex.Int(1)), {"dim": 4}, loc, "size") == 9
    with pytest.raises(DocError, match=r"m\.md:3: size: unknown parameter 'rows'"):
        number(ex.Bin("+", ex.Ref(("rows",)), ex.Int(1)), {"dim": 4}, loc, "size")
    with pytest.raises(DocError, match="size: expected a number"):
        number(ex.Bin("==", dim, ex.Int(4)), {"dim": 4}, loc, "size")


def test_the_toy_doc_passes_and_names_that_merge_do_not(tmp_path: Path) -> None:
    check_names(parse_doc(TOY_TEXT, str(TOY)))  # the toy doc is valid: nothing raised
    merged = TOY_TEXT.replace("instr fence()", "instr FENCE()\n  unit ctrl\n\ninstr fence()", 1)
    with pytest.raises(DocError, match="instruction 'fence' differs from instruction 'FENCE'"):
        check_names(parse_doc(merged, "m.md"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (with_rule('rule x.y on load "m": nowhere > 1'), r"rule x\.y uses unknown name 'nowhere' \(on load\)"),
        (with_rule('rule x.z on nothing* "m": rows > 0'), r"rule x\.z applies to 'nothing\*', which matches no"),
        (
            TOY_TEXT.replace("needs fence", "needs vset", 1).replace("after store writes", "after addi writes", 1),
            r"hazard fence\.raw: addi declares no writes of 'dram'",
        ),
        (
            TOY_TEXT.replace("```example load.fits ok", "```example no.such ok", 1),
            "example names unknown rule 'no.such'",
        ),
    ],
)
def test_unresolved_rules_hazards_and_examples_are_refused(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(DocError, match=rf"^{tmp_path / 'm.md'}:\d+.*{message}"):
        load_kb(write_doc(tmp_path, text), use_cache=False)
