"""The chat client against a real loopback HTTP server: retries and their limits, Retry-After,
token accounting, record/replay, and the API key kept out of everything it writes."""

from __future__ import annotations

import json

import pytest

from tests.llm.conftest import KEY
from tests.llm.server import (
    Loopback,
    drop,
    drop_mid_body,
    raw,
    reply,
    sleep,
    status,
    usage,
)
from zomboss.llm import LlmClient, LlmConfig, LlmConfigError, LlmError, LlmRefused, ReplayMismatch, Usage

MSG = [{"role": "user", "content": "hello"}]


def client(srv: Loopback, waits: list[float] | None = None, **kw) -> LlmClient:
    rec = kw.pop("record", None)
    cfg = LlmConfig(base_url=srv.base_url, model="m", api_key=KEY, timeout=kw.pop("timeout", 2.0), backoff=0.001, **kw)
    return LlmClient(cfg, record=rec, sleep=(waits.append if waits is not None else lambda s: None))


def test_a_good_answer_and_its_usage():
    with Loopback([reply("hi", u=usage(11, 7, cached=5, reasoning=3))]) as srv:
        c = client(srv)
        r = c.chat(MSG)
    assert r.content == "hi" and r.usage == Usage(11, 7, 5, 3)
    assert c.usage.total == 18 and c.calls[0].attempts == 1 and c.calls[0].ok
    body = srv.requests[0]
    assert body["model"] == "m" and body["messages"] == MSG and body["temperature"] == 0


@pytest.mark.parametrize(
    "fault",
    [
        status(500),
        status(502),
        status(429, {"Retry-After": "0"}),
        drop(),
        drop_mid_body(),
        raw(b"<html>garbage</html>"),
        raw(b'{"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 0}}'),
        raw(b'{"choices": [{"message": {"content": "' + b"x" * 5000 + b'"}}]}'),
        sleep(1.0),
    ],
    ids=["500", "502", "429", "drop", "drop-mid-body", "not-json", "no-choices", "oversized", "timeout"],
)
def test_each_fault_is_retried_then_the_answer_is_used(fault):
    with Loopback([fault, reply("ok", u=usage(3, 2))]) as srv:
        c = client(srv, timeout=0.4, max_answer_bytes=4000)
        r = c.chat(MSG)
    assert r.content == "ok" and c.calls[0].attempts == 2 and c.calls[0].reason
    assert c.usage.prompt >= 3


def test_tokens_of_rejected_attempts_are_counted():
    with Loopback(
        [raw(b'{"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 1}}'), reply("ok", u=usage(3, 2))]
    ) as srv:
        c = client(srv)
        c.chat(MSG)
    assert c.usage == Usage(12, 3, 0, 0)


def test_retries_are_bounded_and_the_reason_is_kept():
    with Loopback([status(503)]) as srv:
        c = client(srv, retries=2)
        with pytest.raises(LlmError, match="HTTP 503") as e:
            c.chat(MSG)
    assert e.value.attempts == 3 and len(srv.requests) == 3
    assert not c.calls[0].ok


def test_retry_after_is_honoured_and_capped(openai_waits):
    # the openai client waits the first two (its own retries), this client the third, which is
    # longer than the openai client waits at all: both record into one list
    waits = openai_waits
    with Loopback(
        [
            status(429, {"Retry-After": "7"}),
            status(429, {"retry-after-ms": "250"}),
            status(429, {"Retry-After": "9999"}),
            reply("ok"),
        ]
    ) as srv:
        c = client(srv, waits, max_retry_after=30.0)
        c.chat(MSG)
    assert waits[0] >= 7.0 and 0.25 <= waits[1] < 1.0 and waits[2] == 30.0


def test_backoff_grows(openai_waits):
    waits = openai_waits  # the openai client backs off its retries of HTTP 500 itself
    with Loopback([status(500)]) as srv:
        cfg = LlmConfig(base_url=srv.base_url, model="m", backoff=0.01, retries=4)
        c = LlmClient(cfg, sleep=waits.append)
        with pytest.raises(LlmError):
            c.chat(MSG)
    assert len(waits) == 4 and waits[-1] > waits[0]


def test_a_refused_request_is_not_retried():
    with Loopback([status(400, message="tools are not supported")]) as srv:
        c = client(srv)
        with pytest.raises(LlmRefused) as e:
            c.chat(MSG, tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}])
    assert e.value.status == 400 and len(srv.requests) == 1


def test_tool_calls_and_response_format_are_sent_and_read():
    with Loopback([reply(None, [("rank", {"candidates": ["c1"]})])]) as srv:
        c = client(srv)
        r = c.chat(
            MSG, tools=[{"type": "function", "function": {"name": "rank", "parameters": {}}}], tool_choice="auto"
        )
        assert r.tool_calls[0].name == "rank" and json.loads(r.tool_calls[0].arguments) == {"candidates": ["c1"]}
    with Loopback([reply('{"a": 1}')]) as srv:
        c = client(srv)
        c.chat(MSG, response_format={"type": "json_object"})
        assert srv.requests[0]["response_format"] == {"type": "json_object"}


def test_record_then_replay_without_a_server(tmp_path):
    rec = tmp_path / "calls.jsonl"
    script = [status(500), reply("one", u=usage(5, 1, 2)), raw(b"junk"), reply("two", u=usage(6, 2))]
    with Loopback(script) as srv:
        c = client(srv, record=rec)
        first = [c.chat(MSG).content, c.chat([*MSG, {"role": "user", "content": "again"}]).content]
    replay = LlmClient(LlmConfig(model="m"), replay=rec)
    second = [replay.chat(MSG).content, replay.chat([*MSG, {"role": "user", "content": "again"}]).content]
    assert first == second == ["one", "two"]
    assert replay.usage == c.usage and [x.attempts for x in replay.calls] == [x.attempts for x in c.calls] == [2, 2]
    with pytest.raises(ReplayMismatch, match="differs"):
        LlmClient(LlmConfig(model="m"), replay=rec).chat([{"role": "user", "content": "something else"}])


def test_the_key_never_leaves_the_authorization_header(tmp_path):
    rec = tmp_path / "calls.jsonl"
    hostile = [
        status(500, message=f"bad key {KEY}"),
        reply(f"your key is {KEY}", u=usage(1, 1)),
    ]
    with Loopback(hostile + [status(401, message=f"invalid api key {KEY}")]) as srv:
        c = client(srv, record=rec)
        r = c.chat(MSG)
        with pytest.raises(LlmError) as e:
            c.chat(MSG)
    assert srv.headers[0]["authorization"] == f"Bearer {KEY}"  # the server gets it, nothing else does
    assert KEY not in (r.content or "") and KEY not in str(e.value) and KEY not in rec.read_text()
    assert KEY not in repr(c.config) and KEY not in json.dumps([x.to_json() for x in c.calls])
    assert all(KEY not in req.decode() for req in srv.raw_requests)


def test_configuration_from_the_environment(monkeypatch):
    with Loopback([reply("env")]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("ZOMBOSS_LLM_MODEL", "from-env")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        from zomboss.llm import open_client

        c = open_client({})
        assert c.chat(MSG).content == "env"
    assert srv.requests[0]["model"] == "from-env" and srv.headers[0]["authorization"] == f"Bearer {KEY}"


def test_the_model_is_discovered_when_not_given():
    with Loopback([reply("x")]) as srv:
        c = LlmClient(LlmConfig(base_url=srv.base_url))
        c.chat(MSG)
    assert srv.requests[0]["model"] == "loopback"


def test_no_endpoint_is_a_clear_error():
    with pytest.raises(LlmConfigError, match="--llm-base-url"):
        LlmClient(LlmConfig())


def _strings(v: object) -> list[str]:
    """Every string of a JSON value, decoded (and those of JSON nested in strings)."""
    if isinstance(v, str):
        try:
            inner = json.loads(v)
        except ValueError:
            return [v]
        return [v, *_strings(inner)] if not isinstance(inner, str | int | float) or inner != v else [v]
    if isinstance(v, list):
        return [s for x in v for s in _strings(x)]
    if isinstance(v, dict):
        return [s for k, x in v.items() for s in (k, *_strings(x))]
    return []


def test_an_endpoint_echoing_the_key_encoded_gets_it_into_no_recording_and_no_prompt(tmp_path):
    """The key echoed back `\\u`-escaped, percent-encoded, base64-encoded and inside JSON in
    a string: the answers, the recording (decoded) and every later request are free of it."""
    import base64
    import urllib.parse

    rec = tmp_path / "calls.jsonl"
    srv: Loopback

    def echo(body: dict, i: int) -> dict:
        auth = srv.headers[-1]["authorization"]
        escaped = "".join(f"\\u{ord(c):04x}" for c in auth)
        forms = [
            escaped,
            urllib.parse.quote(auth, safe=""),
            base64.b64encode(auth.encode()).decode(),
            json.dumps({"header": auth}).replace('"', '\\"'),
        ]
        content = '"you sent: ' + " | ".join(forms) + '"'
        return raw('{"choices":[{"message":{"role":"assistant","content":' + content + '}}],"usage":{}}')

    with Loopback(echo) as srv:
        c = client(srv, record=rec)
        history = list(MSG)
        for _ in range(3):  # like `zomboss direct`: each answer goes into the next prompt
            r = c.chat(history)
            history += [{"role": "assistant", "content": r.content}, {"role": "user", "content": "go on"}]
    assert srv.headers[0]["authorization"] == f"Bearer {KEY}"
    assert all(KEY not in (m["content"] or "") for m in history)
    recorded = [s for line in rec.read_text().splitlines() for s in _strings(json.loads(line))]
    assert recorded and all(KEY not in s and KEY not in urllib.parse.unquote(s) for s in recorded)
    assert "[redacted]" in rec.read_text()
    sent = [s for req in srv.requests for s in _strings(req)]
    assert all(KEY not in s and KEY not in urllib.parse.unquote(s) for s in sent)
    b64 = base64.b64encode(f"Bearer {KEY}".encode()).decode()
    assert all(b64[8:-4] not in s for s in recorded + sent)


def test_tokens_of_an_answer_refused_for_its_size_are_counted(tmp_path):
    """Issue #29, item 14: an answer over max_answer_bytes was dropped with its usage (direct
    recorded 25,821 tokens where the endpoint delivered 29,691); it is read to its end and its
    usage counted, in the run and in a replay of its recording."""
    big = b'{"choices": [{"message": {"content": "' + b"x" * 5000 + b'"}}], '
    big += b'"usage": {"prompt_tokens": 40, "completion_tokens": 1500}}'
    rec = tmp_path / "r.jsonl"
    with Loopback([raw(big), reply("ok", u=usage(3, 2))]) as srv:
        c = client(srv, max_answer_bytes=4000, record=rec)
        assert c.chat(MSG).content == "ok"
    assert c.usage == Usage(43, 1502, 0, 0)
    assert "oversized answer" in c.calls[0].reason
    replayed = LlmClient(LlmConfig(model="m"), replay=rec)
    assert replayed.chat(MSG).content == "ok" and replayed.usage == c.usage


def test_a_malformed_base_url_in_the_environment_is_named(monkeypatch):
    """Issue #29, item 19: --llm-base-url is checked by the parser, $OPENAI_BASE_URL here."""
    monkeypatch.setenv("OPENAI_BASE_URL", "::::not a url")
    with pytest.raises(LlmConfigError, match=r"\$OPENAI_BASE_URL '::::not a url': expected an http\(s\) URL"):
        LlmConfig.from_options()
    assert LlmConfig.from_options(base_url="http://127.0.0.1:9/v1").base_url == "http://127.0.0.1:9/v1"
