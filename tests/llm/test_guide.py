"""The LLM guide inside the real search loop (a fake target on the knobs.md space, a loopback
server): sensible answers, every kind of bad answer, fallback, record/replay, the stable
prompt prefix, intents completed by clingo + CP-SAT, and the key kept out of results."""

from __future__ import annotations

import json

import pytest

from tests.llm.conftest import KEY, SHAPE, c0, make_state
from tests.llm.server import POLICIES, Loopback, reply, status, tool, usage
from zomboss.llm import LlmClient, LlmConfig
from zomboss.results import Store
from zomboss.solvers.guides.llm import LlmGuide, complete_intent, task_message
from zomboss.solvers.search import SolveConfig, solve


def guide(srv: Loopback | None, **kw) -> LlmGuide:
    rec, rep = kw.pop("record", None), kw.pop("replay", None)
    cfg = LlmConfig(
        base_url=srv.base_url if srv else None,
        model="m",
        api_key=KEY,
        timeout=kw.pop("timeout", 2.0),
        retries=kw.pop("retries", 1),
        backoff=0.001,
    )
    return LlmGuide(client=LlmClient(cfg, record=rec, replay=rep, sleep=lambda s: None), **kw)


def run(fake, workload, g: LlmGuide, budget: int = 12):
    return solve(fake, workload, {}, SolveConfig(budget=budget, pool_seconds=0.6), guide=g)


def reported(srv: Loopback) -> int:
    """The tokens the server reported (its scripted usage) over every answer it sent."""
    return sum(1000 + 10 * i + 50 + i for i in range(len(srv.requests)))


def test_sensible_answers_give_a_verified_faster_kernel_and_exact_tokens(fake, workload):
    with Loopback(POLICIES["sensible"]) as srv:
        g = guide(srv)
        res = run(fake, workload, g)
    assert res.verified and res.cycles < res.default_cycles
    assert res.source.startswith("llm:") and not res.guide_note.startswith("fell back")
    assert res.tokens == reported(srv) == g.client.usage.total
    u = g.usage()
    assert u["cached"] == 600 * len(srv.requests) and u["reasoning"] == 5 * len(srv.requests)
    assert u["calls"] == len(srv.requests) <= 8


def test_the_stable_prefix_is_byte_identical_across_rounds(fake, workload):
    with Loopback(POLICIES["sensible"]) as srv:
        run(fake, workload, guide(srv))
    assert len(srv.requests) >= 3
    prefixes = {json.dumps(r["messages"][:2]) for r in srv.requests}
    assert len(prefixes) == 1
    assert srv.requests[0]["messages"][2] != srv.requests[1]["messages"][2]
    first = srv.raw_requests[0].decode()
    stable = json.dumps(srv.requests[0]["messages"][1]["content"])[1:-1]
    assert stable in first and first.index(stable) < first.index("Round 1")
    # the agent sees the mapping interface: knobs, domains, constraints with doc lines; not an ISA
    task = srv.requests[0]["messages"][1]["content"]
    assert "- tile: int 1..64" in task and "g.fit" in task and "knobs.md:" in task and "/work" not in task


@pytest.mark.parametrize("policy", ["garbage", "illegal", "http500", "http429", "timeout", "drop", "mixed"])
def test_bad_answers_fall_back_and_still_return_a_verified_kernel(fake, workload, policy):
    with Loopback(POLICIES[policy]) as srv:
        g = guide(srv, timeout=0.3)
        res = run(fake, workload, g)
    assert res.verified and res.guide_note.startswith("fell back to the cost guide")
    assert res.cycles <= res.default_cycles and res.simulations > 0  # the cost guide carried on
    assert KEY not in json.dumps(res.to_json())


def test_illegal_answers_come_back_with_rule_and_doc_line(fake, workload):
    with Loopback(POLICIES["illegal"]) as srv:
        run(fake, workload, guide(srv))
    second = srv.requests[1]["messages"][2]["content"]
    assert "illegal, g.fit [knobs.md:" in second and 'no knob "no_such_knob"' in second
    assert "is outside 1..64" in second and 'no simulated candidate "s99"' in second


def test_nothing_simulated_is_lost_when_the_server_dies_midway(fake, workload):
    good = tool("rank", {"candidates": ["c1", "c2", "c3", "c4"]}, usage(10, 5))
    with Loopback([good, status(500)]) as srv:
        g = guide(srv)
        res = run(fake, workload, g)
    assert "HTTP 500" in res.guide_note and res.verified
    sources = [h["source"] for h in res.history]
    k = sources.count("llm:rank")
    assert k >= 2 and sources[:k] == ["llm:rank"] * k and len(sources) > k  # the cost guide went on from there
    assert res.tokens == 15


def test_record_then_replay_with_no_server_gives_identical_results(fake, workload, tmp_path):
    rec = tmp_path / "run.jsonl"
    with Loopback(POLICIES["sensible"]) as srv:
        first = run(fake, workload, guide(srv, record=rec)).to_json()
    second = run(fake, workload, guide(None, replay=rec)).to_json()
    for d in (first, second):
        d.pop("wall_s")
        for call in d.get("llm", {}).get("per_call", []):
            call.pop("wall_s", None)  # a replay takes no time; everything else must be identical
    assert first == second and first["tokens"] > 0
    assert KEY not in rec.read_text()


def test_replay_of_a_fallback_run_reproduces_the_fallback(fake, workload, tmp_path):
    rec = tmp_path / "run.jsonl"
    with Loopback(POLICIES["mixed"]) as srv:
        first = run(fake, workload, guide(srv, record=rec, timeout=0.3)).to_json()
    second = run(fake, workload, guide(None, replay=rec)).to_json()
    assert first["guide_note"] == second["guide_note"] and first["mapping"] == second["mapping"]


def test_tools_refused_degrades_to_json_schema_then_text(fake, workload):
    def script(body, i):
        if "tools" in body or body.get("response_format", {}).get("type") == "json_schema":
            return status(400, message="unsupported")
        return reply('{"form": "rank", "candidates": ["c1"]}', u=usage(7, 3))

    with Loopback(script) as srv:
        g = guide(srv, max_rounds=2)
        res = run(fake, workload, g)
    assert g.mode == "json_object" and res.verified
    assert [("tools" in r, r.get("response_format", {}).get("type")) for r in srv.requests[:3]] == [
        (True, None),
        (False, "json_schema"),
        (False, "json_object"),
    ]


def test_rounds_are_bounded_and_the_guard_stops_without_gains(fake, workload):
    # always the same harmless ranking of an already simulated candidate: no progress
    with Loopback(lambda b, i: tool("rank", {"candidates": ["s0"]})) as srv:
        g = guide(srv, max_failures=99, patience=2, max_rounds=8)
        res = run(fake, workload, g)
    assert len(srv.requests) == 2 and "stopped after 2 rounds" in res.guide_note and res.verified
    with Loopback(POLICIES["sensible"]) as srv:
        g = guide(srv, max_rounds=1)
        run(fake, workload, g)
    assert len(srv.requests) == 1


def test_intent_is_completed_into_legal_mappings(kb, sp):
    state = make_state(kb, sp)
    sks = [dict(sp.skeleton(c.mapping)) for c in state.pool]
    from zomboss.solvers.space import skeletons

    sks = [s.as_dict() for s in skeletons(kb, "gemm", SHAPE)]
    got, diags = complete_intent(sp, SHAPE, kb, {"loop": "sw", "buf": 1}, {"tile": 5}, 4, c0(sp), set(), sks)
    assert got and not diags
    for m in got:
        assert m["loop"] == "sw" and m["buf"] == 1 and m["tile"] == 5
        assert sp.violations(kb, m, SHAPE) == []
    got, diags = complete_intent(sp, SHAPE, kb, {"loop": "hw", "order": "ji"}, {}, 4, c0(sp), set(), sks)
    assert not got and "g.hw_order" in diags[0] and "knobs.md:" in diags[0]


def test_intent_answers_in_the_search(fake, workload, kb):
    with Loopback([tool("intent", {"hard": {"loop": "sw"}, "preferred": {"tile": 8}}, usage(5, 5))]) as srv:
        g = guide(srv, max_rounds=1, kb=kb)
        res = run(fake, workload, g)
    sims = [h for h in res.history if h["source"] == "llm:intent"]
    assert sims and res.verified and not res.rejected


def test_per_call_rows_reach_the_store_without_the_key(fake, workload, tmp_path):
    store = Store(tmp_path / "r.sqlite")
    with Loopback(POLICIES["sensible"]) as srv:
        g = guide(srv)
        res = run(fake, workload, g)
    g.store_calls(store, "fake", workload.id, "fake-config")
    store.put("fake", workload.id, "solve:llm", "fake-config", True, res.to_json())
    rows = [t for t in store.trials("fake", workload.id, "fake-config") if t.mode == "llm"]
    assert len(rows) == len(srv.requests) and sum(t.tokens or 0 for t in rows) == res.tokens
    assert {"prompt", "completion", "cached", "reasoning"} <= set(rows[0].payload)
    store.close()
    assert KEY.encode() not in (tmp_path / "r.sqlite").read_bytes()


def test_task_message_is_deterministic(sp):
    assert task_message(sp, "w", SHAPE) == task_message(sp, "w", SHAPE)
