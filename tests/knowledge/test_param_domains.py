"""Parameter domains, `param NAME in LO..HI = EXPR` (issue #29, items 12 and 15): a value
outside its domain, an override's or a derived one's, is refused when the KB is built, naming
the parameter, its domain and its doc line."""

from __future__ import annotations

import pytest

from tests.toydoc import TOY_TEXT, write_doc
from zomboss.doc import DocError
from zomboss.knowledge import load_kb

DOMAINS = TOY_TEXT.replace("param dim = 4 ", "param dim in 2..64 = 4 ", 1).replace(
    "param sp_rows = ", "param sp_rows in dim..1 << 20 = ", 1
)


def test_the_toy_doc_declares_the_domains_edited_here():
    assert DOMAINS.count(" in 2..64 = 4") == 1 and DOMAINS.count("sp_rows in dim..1 << 20") == 1


def test_a_value_inside_its_domain_builds(tmp_path):
    kb = load_kb(write_doc(tmp_path, DOMAINS), {"dim": 8}, use_cache=False)
    assert kb.params["dim"] == 8 and kb.params["sp_rows"] == 128


@pytest.mark.parametrize("value", [1, 65, -1_000_000_000])
def test_an_override_outside_its_domain_is_named(tmp_path, value):
    doc = write_doc(tmp_path, DOMAINS)
    with pytest.raises(DocError) as e:
        load_kb(doc, {"dim": value}, use_cache=False)
    assert str(e.value) == f"--param dim={value}: outside the domain of dim, 2..64 ({doc}:6)"


def test_a_derived_value_outside_its_domain_names_the_overrides(tmp_path):
    doc = write_doc(tmp_path, DOMAINS)
    with pytest.raises(DocError) as e:
        load_kb(doc, {"sp_kib": 0}, use_cache=False)
    assert str(e.value) == (
        f"{doc}:8: parameter sp_rows = 0 is outside its domain dim..(1 << 20) = 4..1048576 (with --param sp_kib=0)"
    )


def test_a_domain_naming_a_later_parameter_is_refused(tmp_path):
    doc = write_doc(tmp_path, DOMAINS.replace("param dim in 2..64", "param dim in 2..sp_rows", 1))
    with pytest.raises(DocError, match=r"m\.md:6: the domain of 'dim' uses unknown parameter 'sp_rows'"):
        load_kb(doc, use_cache=False)


def test_a_doc_default_outside_its_domain_is_refused(tmp_path):
    doc = write_doc(tmp_path, DOMAINS.replace("param dim in 2..64 = 4", "param dim in 8..64 = 4", 1))
    with pytest.raises(DocError, match=r"m\.md:6: parameter dim = 4 is outside its domain 8\.\.64$"):
        load_kb(doc, use_cache=False)
