"""`zomboss direct` against the loopback server on the smallest instances: a perfect scripted
model (it submits the exported Candidate-0 program) is verified on unseen inputs; a wrong
one fails with its reason; tokens are accounted; the key stays out of the results."""

from __future__ import annotations

import pytest

from tests.llm.conftest import KEY
from tests.llm.direct_policy import make_direct_policy
from tests.llm.server import Loopback
from zomboss.llm import LlmClient, LlmConfig
from zomboss.results import Store
from zomboss.solvers.direct import TOOLS, budget, run_direct, store_direct
from zomboss.target import get_target


def client(srv: Loopback) -> LlmClient:
    return LlmClient(LlmConfig(base_url=srv.base_url, model="m", api_key=KEY, retries=0))


def test_a_perfect_agent_is_verified_on_unseen_inputs(tmp_path):
    t = get_target("gemmini")
    wl = t.workload("matmul:M=16,N=16,K=16")
    t.export(wl, tmp_path / "k.c", {})
    program = (tmp_path / "k.asm").read_text()
    with Loopback(make_direct_policy(program, "mvin")) as srv:
        res = run_direct(t, wl, {}, client(srv), iterations=8)
    assert res.verified, res.reason
    assert "unseen" in res.reason and res.iterations == 6 and res.tokens == sum(20_300 + 100 * i for i in range(6))
    assert res.tools == {
        "search_doc": 1,
        "check_program": 1,
        "run_evaluation": 1,
        "view_output": 1,
        "get_stats": 1,
        "submit": 1,
    }
    first = srv.requests[0]
    assert t.doc.read_text()[:200] in first["messages"][0]["content"]  # the ISA doc is the system prompt
    seen = first["messages"][0]["content"] + first["messages"][1]["content"]
    assert "\n".join(program.strip().splitlines()[1:6]) not in seen  # never Candidate-0's program
    assert {x["function"]["name"] for x in first["tools"]} == {x["function"]["name"] for x in TOOLS}
    tool_out = [m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_out[1].startswith("All checks passed") and tool_out[2].startswith("all output elements match")


def test_a_wrong_program_fails_with_its_reason_and_tokens_are_stored(tmp_path):
    t = get_target("plena")
    wl = t.workload("linear:M=64,K=64,N=64")
    with Loopback(make_direct_policy()) as srv:
        res = run_direct(t, wl, {}, client(srv), iterations=3)
    assert not res.verified and res.reason and res.iterations == 3
    store = Store(tmp_path / "r.sqlite")
    store_direct(store, res, "cfg")
    rows = [x for x in store.trials("plena", wl.id, "cfg") if x.mode == "llm-direct"]
    assert len(rows) == 3 and sum(x.tokens or 0 for x in rows) == res.tokens
    store.close()
    assert KEY.encode() not in (tmp_path / "r.sqlite").read_bytes()


@pytest.mark.parametrize(
    ("spec", "turns"), [("matmul:M=16,N=16,K=16", 15), ("conv:N=1,H=8,W=8,C=16,K=16,R=3,S=3,stride=1,pad=1", 20)]
)
def test_budgets_by_level(spec, turns):
    assert budget(get_target("gemmini").workload(spec)) == turns


def test_an_endpoint_echoing_the_key_escaped_gets_it_into_no_prompt_and_no_recording(tmp_path):
    """The endpoint answers with a tool call whose arguments hold the Authorization header
    `\\u`-escaped: `search_doc` would have put the decoded key into its result, and so into
    the next request and the recording."""
    import json

    srv: Loopback

    def echo(body: dict, i: int) -> dict:
        auth = srv.headers[-1]["authorization"]
        args = json.dumps({"query": auth})
        msg = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "search_doc", "arguments": args}}
        ]}  # fmt: skip
        text = json.dumps({"choices": [{"message": msg, "finish_reason": "tool_calls"}], "usage": {}})
        escaped = "".join(f"\\u{ord(c):04x}" for c in auth)
        assert auth in text
        return {"raw": text.replace(auth, escaped).encode(), "status": 200}

    rec = tmp_path / "direct.jsonl"
    t = get_target("gemmini")
    wl = t.workload("matmul:M=16,N=16,K=16")
    with Loopback(echo) as srv:
        cfg = LlmConfig(base_url=srv.base_url, model="m", api_key=KEY, retries=0)
        run_direct(t, wl, {}, LlmClient(cfg, record=rec), iterations=3)
    assert srv.headers[0]["authorization"] == f"Bearer {KEY}" and len(srv.requests) == 3
    for req in srv.requests[1:]:
        assert KEY not in json.dumps(req, ensure_ascii=False)
    for line in rec.read_text().splitlines():
        assert KEY not in json.dumps(json.loads(line), ensure_ascii=False)
        assert KEY not in line
