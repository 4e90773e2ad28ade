"""The answer parser: the three forms, lenient values, localized diagnostics, and no crash
on arbitrary bytes, text or JSON (hypothesis)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.llm.conftest import SHAPE, c0
from zomboss.llm import Reply, ToolCall, Usage
from zomboss.solvers.guides.llm import AnswerParser, Ids, Intent, Rank, Refine, extract_json


def ids(sp):
    other = sp.mapping(
        {"loop": "sw", "order": "ij", "unroll": "true", "flavour": "a", "init": "zero", "tile": 2, "buf": 1}, SHAPE
    )
    return Ids({"s0": c0(sp)}, {"c1": other, "ref-exo": other})


def text(s: str) -> Reply:
    return Reply(s, (), "stop", Usage())


def call(name: str, args: object) -> Reply:
    return Reply(
        None, (ToolCall("1", name, args if isinstance(args, str) else json.dumps(args)),), "tool_calls", Usage()
    )


def test_the_three_forms(sp):
    p = AnswerParser(sp, ids(sp))
    got = p.parse(text('{"form": "rank", "candidates": ["ref-exo", "c1", "c9"]}'))
    assert got.actions == [Rank(("ref-exo", "c1"))] and 'no offered candidate "c9"' in got.diagnostics[0]
    got = p.parse(call("refine", {"edits": [{"base": "s0", "knobs": {"tile": "4", "loop": " SW "}}]}))
    assert got.actions == [Refine("s0", (("tile", 4), ("loop", "sw")))] and not got.diagnostics
    got = p.parse(text('Sure! ```json\n{"form": "intent", "hard": {"loop": "sw"}, "preferred": {"tile": 8.0}}\n```'))
    assert got.actions == [Intent((("loop", "sw"),), (("tile", 8),))]


def test_json_in_prose_thinking_and_action_lists(sp):
    p = AnswerParser(sp, ids(sp))
    got = p.parse(text('<think>maybe {"form": "rank"}</think> I pick {"candidates": ["c1"]} because.'))
    assert got.actions == [Rank(("c1",))]
    got = p.parse(
        text(json.dumps({"actions": [{"form": "rank", "candidates": ["c1"]}, {"base": "s0", "knobs": {"tile": 3}}]}))
    )
    assert [type(a) for a in got.actions] == [Rank, Refine]


def test_diagnostics_name_the_problem(sp):
    p = AnswerParser(sp, ids(sp))
    d = p.parse(
        call("refine", {"edits": [{"base": "s0", "knobs": {"tiles": 4, "tile": 999, "loop": "fast"}}]})
    ).diagnostics
    assert any('no knob "tiles"' in x for x in d)
    assert any("'tile' = 999 is outside 1..64" in x for x in d)
    assert any("'loop' = 'fast' is not one of {hw, sw}" in x for x in d)
    assert (
        "no simulated candidate"
        in p.parse(call("refine", {"edits": [{"base": "c1", "knobs": {"tile": 2}}]})).diagnostics[0]
    )
    assert "unknown tool" in p.parse(call("rm -rf", "{}")).diagnostics[0]
    assert "holds no JSON" in p.parse(text("bigger tiles!")).diagnostics[0]
    assert "cut off" in p.parse(Reply('{"form": "ra', (), "length", Usage())).diagnostics[0]
    assert "too long" in p.parse(text("x" * 100_000)).diagnostics[0]
    assert "unknown form" in p.parse(text('{"form": "exec", "cmd": "ls"}')).diagnostics[0]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(
            st.sampled_from(
                ["form", "candidates", "edits", "base", "knobs", "hard", "preferred", "actions", "tile", "loop", "x"]
            )
            | st.text(max_size=8),
            inner,
            max_size=6,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_crash(sp, data):
    p = AnswerParser(sp, ids(sp))
    s = data.decode("utf-8", errors="replace")
    for r in (text(s), call("rank", s), call("refine", s), Reply(s, (ToolCall("x", s, s),), s, Usage())):
        got = p.parse(r)
        assert got.actions or got.diagnostics


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(json_values, st.sampled_from(["rank", "refine", "intent", None]))
def test_arbitrary_json_never_crashes_and_only_valid_actions_pass(sp, value, form):
    p = AnswerParser(sp, ids(sp))
    doc = json.dumps(value)
    got = p.parse(call(form, doc) if form else text(doc))
    assert got.actions or got.diagnostics
    names = {k.name for k in sp.knobs}
    for a in got.actions:
        if isinstance(a, Rank):
            assert set(a.ids) <= {"c1", "ref-exo"}
        elif isinstance(a, Refine):
            assert a.base == "s0" and {k for k, _ in a.edits} <= names
            for k, v in a.edits:
                sp.knob(k).coerce(v, "test")
        else:
            for k, v in (*a.hard, *a.preferred):
                sp.knob(k).coerce(v, "test")


def test_deep_nesting_and_huge_numbers(sp):
    p = AnswerParser(sp, ids(sp))
    assert p.parse(text("[" * 50_000)).diagnostics
    assert p.parse(text('{"base": "s0", "knobs": {"tile": 1e400}}')).diagnostics
    assert p.parse(text('{"base": "s0", "knobs": {"tile": 123456789012345678901234567890}}')).diagnostics
    assert extract_json("") == [] and extract_json("{") == []
