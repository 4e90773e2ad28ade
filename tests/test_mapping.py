"""The core mapping interface: spaces from the doc, canonical mappings, JSON, conversions from
clingo skeletons and CP-SAT sizings, and enumeration completeness against brute force."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zomboss import expr as ex
from zomboss.doc import DocError
from zomboss.knowledge import load_kb
from zomboss.mapping import MappingError, Space, space
from zomboss.solvers.space import SizingModel, group_skeletons, skeletons

DOC = Path(__file__).parent / "data" / "knobs.md"
SHAPE = {"M": 32, "N": 16, "bias": 0}


@pytest.fixture(scope="module")
def kb():
    return load_kb(DOC)


@pytest.fixture(scope="module")
def sp(kb) -> Space:
    return space(kb, "gemm")


def test_space_from_doc(sp):
    assert [k.name for k in sp.knobs] == ["loop", "order", "unroll", "flavour", "init", "tile", "buf"]
    assert sp.knob("flavour").default == "b" and sp.knob("buf").default == 2
    assert sp.knob("tile").default == 1  # no canonical value: the lower bound
    assert sp.knob("init").values == ("zero", "bias")
    assert sp.keys == ("M", "N", "bias")


def test_inactive_knobs_take_their_canonical_value(sp):
    m = sp.mapping({"loop": "hw", "order": "ij", "init": "zero", "tile": 3}, SHAPE)
    assert m.as_dict() == {
        "loop": "hw",
        "order": "ij",
        "unroll": "false",
        "flavour": "b",
        "init": "zero",
        "tile": 3,
        "buf": 2,
    }
    # values given for inactive knobs are replaced: equal kernels compare equal
    other = sp.mapping({**m.as_dict(), "unroll": "true", "flavour": "c", "buf": 4}, SHAPE)
    assert other == m


def test_active_knobs_are_required_and_checked(sp):
    with pytest.raises(MappingError, match="lacks knob 'unroll'"):
        sp.mapping({"loop": "sw", "order": "ij", "init": "zero", "tile": 3, "buf": 1}, SHAPE)
    with pytest.raises(MappingError, match="'order' = 'ik' is not one of"):
        sp.mapping({"loop": "hw", "order": "ik", "init": "zero", "tile": 3}, SHAPE)
    with pytest.raises(MappingError, match="outside 1..64"):
        sp.mapping({"loop": "hw", "order": "ij", "init": "zero", "tile": 0}, SHAPE)
    with pytest.raises(MappingError, match="must be an integer"):
        sp.mapping({"loop": "hw", "order": "ij", "init": "zero", "tile": "3"}, SHAPE)
    with pytest.raises(MappingError, match="no knob 'tiles'"):
        sp.mapping({"loop": "hw", "order": "ij", "init": "zero", "tile": 3, "tiles": 1}, SHAPE)


def test_booleans_accepted_for_false_true_knobs(sp):
    m = sp.mapping(
        {"loop": "sw", "order": "ji", "unroll": True, "flavour": "a", "init": "zero", "tile": 2, "buf": 1}, SHAPE
    )
    assert m["unroll"] == "true" and m.flag("unroll") is True


def test_json_round_trip(sp):
    m = sp.mapping(
        {"loop": "sw", "order": "ji", "unroll": "true", "flavour": "a", "init": "zero", "tile": 2, "buf": 1}, SHAPE
    )
    j = m.to_json()
    assert j == {"op": "gemm", "knobs": m.as_dict()}
    assert sp.from_json(j, SHAPE) == m
    with pytest.raises(MappingError, match="field 'op'"):
        sp.from_json({"op": "conv", "knobs": {}}, SHAPE)
    with pytest.raises(MappingError, match="'knobs' must be an object"):
        sp.from_json({"op": "gemm", "knobs": [1]}, SHAPE)
    with pytest.raises(MappingError, match="field 'tile_i'"):
        sp.from_json({"op": "gemm", "knobs": {}, "tile_i": 1}, SHAPE)


def test_violations_name_the_constraint_and_doc_line(kb, sp):
    m = sp.mapping({"loop": "hw", "order": "ji", "init": "bias", "tile": 20}, SHAPE)
    found = {v.rule: v for v in sp.violations(kb, m, SHAPE)}
    assert set(found) == {"g.cover", "g.fit", "g.bias", "g.hw_order"}
    assert found["g.hw_order"].doc_loc.endswith(":28")
    assert found["g.fit"].values["tile"] == 20


def _brute_force(kb, sp, shape):
    """Every canonical assignment of the symbolic knobs that no symbolic-only constraint rules out."""
    integer = {k.name for k in sp.integer}
    cons = [c for c in sp.constraints if not {r.name for r in ex.refs(c.expr)} & integer]
    out = set()
    for combo in itertools.product(*(k.values for k in sp.symbolic)):
        vals = dict(zip((k.name for k in sp.symbolic), combo, strict=True))
        full = sp.complete({**vals, **{k.name: k.default for k in sp.integer}}, shape)
        env = {**sp.params, **shape, **full}
        ok = all(ex.compile_python(c.expr, env.__contains__, sp.symbols.__contains__)(env) for c in cons)
        if ok:
            out.add(tuple((k.name, full[k.name]) for k in sp.symbolic))
    return out


@pytest.mark.parametrize("shape", [SHAPE, {"M": 4, "N": 4, "bias": 1}, {"M": 100, "N": 8, "bias": 0}])
def test_enumeration_equals_brute_force(kb, sp, shape):
    got = [s.choices for s in skeletons(kb, "gemm", shape)]
    assert len(got) == len(set(got)), "a skeleton was enumerated twice"
    assert set(got) == _brute_force(kb, sp, shape)


def test_enumeration_is_deterministic(kb):
    a = [s.choices for s in skeletons(kb, "gemm", SHAPE)]
    b = [s.choices for s in skeletons(kb, "gemm", SHAPE)]
    assert a == b


def test_cpsat_sizing_becomes_a_legal_mapping(kb, sp):
    for sk in skeletons(kb, "gemm", SHAPE):
        model = SizingModel(sp, SHAPE, sk.as_dict())
        sol = model.solve(ex.Un("neg", ex.Ref(("tile",))))  # largest tile
        if sk.as_dict()["flavour"] == "c":  # two blocks needed: cdiv(32, 4 * tile) >= 2
            assert sol is not None and sol.values["tile"] == 7
        assert sol is not None
        m = sp.from_skeleton(sk.as_dict(), sol.values, SHAPE)
        assert sp.violations(kb, m, SHAPE) == []
        if sk.as_dict()["loop"] == "hw":
            assert sol.values["buf"] == 2  # inactive: fixed to its canonical value


def test_skeletons_sharing_an_integer_problem_are_grouped(kb, sp):
    groups = group_skeletons(sp, (s.as_dict() for s in skeletons(kb, "gemm", SHAPE)))
    # the integer problem depends on loop (buf's condition) and flavour (g.flavour) only
    assert {tuple(k for k, _ in key) for key in groups} == {("loop", "flavour")}


@settings(max_examples=60, deadline=None)
@given(
    loop=st.sampled_from(["hw", "sw"]),
    order=st.sampled_from(["ij", "ji"]),
    unroll=st.booleans(),
    flavour=st.sampled_from(["a", "b", "c"]),
    init=st.sampled_from(["zero", "bias"]),
    tile=st.integers(1, 64),
    buf=st.integers(1, 4),
    M=st.integers(1, 200),
    bias=st.integers(0, 1),
)
def test_python_asp_and_cpsat_agree_on_legality(kb, sp, loop, order, unroll, flavour, init, tile, buf, M, bias):
    from zomboss.legality import check_mapping_values

    shape = {"M": M, "N": 8, "bias": bias}
    m = sp.mapping(dict(loop=loop, order=order, unroll=unroll, flavour=flavour, init=init, tile=tile, buf=buf), shape)
    py = {v.rule for v in sp.violations(kb, m, shape)}
    report = check_mapping_values(kb, "gemm", sp.flat(m, shape), "m")  # raises if ASP disagrees
    assert {v.rule for v in report.violations} == py
    model = SizingModel(sp, shape, dict(sp.skeleton(m)))
    pins = [ex.Bin("==", ex.Ref((k.name,)), ex.Int(m.int(k.name))) for k in sp.integer]
    for p in pins:
        model.tr.require(p)
    assert (model.solve() is not None) == (not py)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('knob a: {x, y}\n  knob n: int 1..4 when a == x and n > 1 "bad"', "reads integer knob 'n'"),
        ("knob a: {x, y} when b == x\n  knob b: {x, y} when a == x", "form a cycle"),
        ("knob a: {x, y} = z", "must be one of x, y"),
        ("knob n: int 1..4 = 9", "outside 1..4"),
        ("knob a: {x, y}\n  knob a: {x, y}", "declared twice"),
    ],
)
def test_bad_knob_declarations_are_refused(tmp_path, text, message):
    doc = tmp_path / "bad.md"
    doc.write_text(f"```isa\ninstr nop()\n  unit ctrl\nworkload w(M)\nmapping w {{\n  {text}\n}}\n```\n")
    with pytest.raises(DocError, match=message):
        load_kb(doc, use_cache=False)
