"""The mapping interface: knob documentation, JSON round trips with named errors, the pure validator."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, fields

import pytest
from zomboss.targets.plena.layout import Geometry
from zomboss.targets.plena.mapping import (
    MAPPINGS,
    AttentionMapping,
    LinearMapping,
    MappingError,
    RmsnormMapping,
    RopeMapping,
    check,
    describe,
    from_json,
    library_default,
    to_json,
    validate,
)
from zomboss.targets.plena.suite import SUITE, workload


@pytest.mark.parametrize("op", sorted(MAPPINGS))
def test_every_knob_documents_its_legal_range(op: str) -> None:
    rows = describe(MAPPINGS[op])
    assert rows
    for r in rows:
        assert r["doc"]
        assert r.get("choices") or r.get("range"), r["name"]
        if "choices" in r:
            assert r["default"] in r["choices"]


def test_mappings_are_frozen() -> None:
    m = LinearMapping()
    with pytest.raises(FrozenInstanceError):
        m.k_chunk = 8  # type: ignore[misc]


@pytest.mark.parametrize("wl", SUITE, ids=lambda w: w.id)
def test_library_default_is_legal_and_round_trips(wl) -> None:
    m = library_default(wl)
    assert m.op == wl.op
    assert validate(m, wl) == []
    assert from_json(to_json(m)) == m
    assert from_json(json.dumps(to_json(m))) == m


def test_library_default_is_the_compilers_choice() -> None:
    m = library_default(workload("lin_60m_q"))
    assert (m.k_chunk, m.n_block, m.order, m.m_block, m.unroll, m.hoist_csr) == (
        4, 1, "kchunk_outer", 1, False, False
    )  # fmt: skip
    a = library_default(workload("attn_128c"))
    assert (a.algorithm, a.loop_order, a.mask) == ("flash", "q_outer", "elementwise")


@pytest.mark.parametrize(
    "data, named",
    [
        ({"op": "conv", "knobs": {}}, "field 'op'"),
        ({"op": "linear", "knobs": {"k_chonk": 4}}, "knobs.k_chonk"),
        ({"op": "linear", "knobs": {"k_chunk": "4"}}, "knobs.k_chunk"),
        ({"op": "linear", "knobs": {"k_chunk": True}}, "knobs.k_chunk"),
        ({"op": "linear", "knobs": {"unroll": 1}}, "knobs.unroll"),
        ({"op": "linear", "knobs": {"order": "row_outer"}}, "knobs.order"),
        ({"op": "attention", "knobs": {"algorithm": "paged"}}, "knobs.algorithm"),
        ({"op": "rope", "knobs": [1]}, "field 'knobs'"),
        ({"op": "rope", "knobs": {}, "extra": 1}, "field 'extra'"),
        ("{not json", "not JSON"),
        ([1, 2], "JSON object"),
    ],
)
def test_from_json_names_the_bad_field(data, named: str) -> None:
    with pytest.raises(MappingError, match=named.replace("(", r"\(")):
        from_json(data)


def test_from_json_keeps_defaults_for_missing_knobs() -> None:
    m = from_json({"op": "linear", "knobs": {"k_chunk": 8}})
    assert m == LinearMapping(k_chunk=8)


@pytest.mark.parametrize(
    "mapping, spec, fragment",
    [
        (LinearMapping(k_chunk=65), "linear:M=64,K=384,N=384", "k_chunk=65"),
        (LinearMapping(k_chunk=0), "linear:M=64,K=384,N=384", "k_chunk=0"),
        (LinearMapping(n_block=7), "linear:M=64,K=384,N=384", "n_block=7"),
        (LinearMapping(m_block=2), "linear:M=64,K=384,N=384", "m_block=2"),
        (LinearMapping(k_chunk=64, n_block=2), "linear:M=4,K=4096,N=1024", "lin.mram_fit"),
        (RopeMapping(rotate="on_chip"), "rope_64x64", "head_dim=64"),
        (AttentionMapping(loop_order="kv_outer"), "attn_1kc", "FP SRAM"),
        (AttentionMapping(algorithm="one_pass", loop_order="kv_outer"), "attn_64", "only the flash algorithm"),
        (RmsnormMapping(row_mode="parallel"), "rmsnorm:rows=1024,hidden=64", "FP SRAM"),
        (LinearMapping(order="sideways"), "lin_60m_q", "order='sideways'"),
        (RopeMapping(), "lin_60m_q", "mapping is for rope"),
    ],
)
def test_validate_lists_violations(mapping, spec: str, fragment: str) -> None:
    wl = workload(spec)
    errs = validate(mapping, wl)
    assert any(fragment in e for e in errs), errs
    with pytest.raises(MappingError, match="illegal"):
        check(mapping, wl)


def test_validate_reports_every_violation_and_depends_on_the_machine() -> None:
    wl = workload("linear:M=64,K=384,N=384")
    assert len(validate(LinearMapping(k_chunk=0, n_block=99), wl)) == 2
    small = workload("linear:M=64,K=128,N=64")  # K/MLEN = 2 < the compiler's chunk of 4: one chunk
    assert validate(library_default(small), small) == []
    one_pass = AttentionMapping(algorithm="one_pass")
    dec = workload("attn_dec")  # 32 V tiles
    assert validate(one_pass, dec) == []
    assert any("one_pass" in e for e in validate(one_pass, dec, Geometry(mram_tiles=16)))


def test_validate_is_pure() -> None:
    wl = workload("lin_60m_q")
    m = LinearMapping(k_chunk=99)
    before = to_json(m)
    assert validate(m, wl) == validate(m, wl)
    assert to_json(m) == before


@pytest.mark.parametrize("op", sorted(MAPPINGS))
def test_knob_names_match_dataclass_fields(op: str) -> None:
    assert [r["name"] for r in describe(MAPPINGS[op])] == [f.name for f in fields(MAPPINGS[op])]
