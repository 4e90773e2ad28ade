"""A scripted chat-completions server on 127.0.0.1 for the LLM tests and demos.

It speaks enough of the OpenAI protocol for the `openai` client: `POST /v1/chat/completions`
(messages, tools / tool calls, `response_format`, `usage` with cached and reasoning details)
and `GET /v1/models`. Each request is answered by the next *action* of its script (a list,
or a function of the request body and its index): a reply, an HTTP status (with headers such
as Retry-After), a delay longer than the client's timeout, a dropped connection, a raw body
(garbage, truncated JSON, no choices, an oversized answer). Every request body and its headers
are kept for the test to inspect. Traffic is loopback only; the server stops with the test.

`python -m tests.llm.server --port 8011 --policy sensible` runs it standalone for the CLI
acceptance runs (policies: sensible, garbage, illegal, http500, http429, timeout, mixed, direct, compare: sensible
guide rounds and direct turns from one server, for `bench --compare-direct`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Action = dict[str, Any]
Script = list[Action] | Callable[[dict[str, Any], int], Action]


def usage(prompt: int = 100, completion: int = 20, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def reply(
    content: str | None = None,
    tool_calls: list[tuple[str, Any]] | None = None,
    u: dict[str, Any] | None = None,
    finish_reason: str | None = None,
) -> Action:
    """A chat completion: text content and/or tool calls `(name, arguments)`."""
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        msg["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
            for i, (name, args) in enumerate(tool_calls)
        ]
    body = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": "loopback",
        "choices": [
            {"index": 0, "message": msg, "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop")}
        ],
        "usage": u or usage(),
    }
    return {"json": body}


def tool(name: str, args: Any, u: dict[str, Any] | None = None) -> Action:
    return reply(None, [(name, args)], u)


def status(code: int, headers: Mapping[str, str] | None = None, message: str = "scripted failure") -> Action:
    return {"status": code, "headers": dict(headers or {}), "json": {"error": {"message": message, "code": code}}}


def raw(body: bytes | str, code: int = 200) -> Action:
    return {"raw": body.encode() if isinstance(body, str) else body, "status": code}


def sleep(seconds: float, then: Action | None = None) -> Action:
    return {"sleep": seconds, "then": then or reply("late")}


def drop() -> Action:
    return {"drop": True}


def drop_mid_body() -> Action:
    return {"drop_mid_body": True}


class Loopback:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.raw_requests: list[bytes] = []
        self._lock = threading.Lock()
        handler = self._handler()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> Loopback:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _next(self, body: dict[str, Any]) -> Action:
        with self._lock:
            i = len(self.requests)
            self.requests.append(body)
        if callable(self.script):
            return self.script(body, i)
        if not self.script:
            return status(500, message="script exhausted")
        return self.script[i] if i < len(self.script) else self.script[-1]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [{"id": "loopback"}]}).encode(), {})
                else:
                    self._send(404, b'{"error": {"message": "not found"}}', {})

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("content-length") or 0)
                data = self.rfile.read(n)
                with server._lock:
                    server.raw_requests.append(data)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                try:
                    body = json.loads(data)
                except json.JSONDecodeError:
                    body = {}
                self._act(server._next(body))

            def _act(self, a: Action) -> None:
                if a.get("sleep"):
                    time.sleep(float(a["sleep"]))
                    a = a.get("then") or reply("late")
                if a.get("drop"):
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if a.get("drop_mid_body"):
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "5000")
                    self.end_headers()
                    self.wfile.write(b'{"choices": [{"message": {"content": "hal')
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                code = int(a.get("status", 200))
                payload = a["raw"] if "raw" in a else json.dumps(a.get("json", {})).encode()
                self._send(code, payload, a.get("headers", {}))

            def _send(self, code: int, payload: bytes, headers: Mapping[str, str]) -> None:
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return H


# ---- policies: scripted answers that read the prompt ------------------------------------------


def _state_text(body: dict[str, Any]) -> str:
    msgs = body.get("messages") or []
    return str(msgs[-1].get("content", "")) if msgs else ""


def _offered(text: str) -> list[str]:
    return re.findall(r"^\s*(c\d+|ref-[\w-]+)\b", text, flags=re.M)


def _simulated(text: str) -> list[tuple[str, int]]:
    return [(m.group(1), int(m.group(2))) for m in re.finditer(r"^\s*(s\d+)\b.*?cycles=(\d+)", text, flags=re.M)]


def _answer(body: dict[str, Any], form: str, args: Any, u: dict[str, Any]) -> Action:
    """Answer in the way the request asks for: a tool call if tools are offered, else JSON text."""
    if body.get("tools"):
        return tool(form, args, u)
    return reply(json.dumps({"form": form, **args}), u=u)


def sensible(body: dict[str, Any], i: int) -> Action:
    """Rank the offered candidates in the first round, then refine the best kernel by doubling
    its first integer knob, then rank again; token counts are fixed per round."""
    text = _state_text(body)
    u = usage(prompt=1000 + 10 * i, completion=50 + i, cached=600, reasoning=5)
    offered = _offered(text)
    sims = _simulated(text)
    troubled = "Problems with your previous answer" in text
    if offered and (i % 2 == 0 or troubled):
        return _answer(body, "rank", {"candidates": list(reversed(offered[:4]))}, u)
    if sims:
        best = min(sims, key=lambda s: s[1])[0]
        m = re.search(r"^\s*" + best + r"\b.*?knobs: (.*)$", text, flags=re.M)
        edits = {}
        if m:
            for kv in m.group(1).split():
                k, _, v = kv.partition("=")
                if v.isdigit():
                    edits[k] = int(v) * 2
                    break
        if edits and not troubled:
            return _answer(body, "refine", {"edits": [{"base": best, "knobs": edits}]}, u)
        if edits:
            return _answer(body, "intent", {"hard": {}, "preferred": edits}, u)
    return _answer(body, "rank", {"candidates": offered[:2]}, u)


def garbage(body: dict[str, Any], i: int) -> Action:
    return [raw(b"\x00\xffnot json"), reply("I think you should try a bigger tile!"), reply("{'form': rank")][i % 3]


def illegal(body: dict[str, Any], i: int) -> Action:
    """Out-of-domain values, unknown knobs and ids, and an in-domain value the doc's
    constraints forbid (the largest value of the first integer knob, with every buffer)."""
    msgs = body.get("messages") or []
    task = str(msgs[1].get("content", "")) if len(msgs) > 1 else ""
    ints = re.findall(r"^- (\w+): int (\d+)\.\.(\d+)", task, flags=re.M)
    edits: list[dict[str, Any]] = [{"base": "s0", "knobs": {"no_such_knob": 3}}, {"base": "s99", "knobs": {}}]
    if ints:
        edits.append({"base": "s0", "knobs": {ints[0][0]: 10**9}})
        edits.append({"base": "s0", "knobs": {name: int(hi) for name, _, hi in ints}})
    return _answer(body, "refine", {"edits": edits}, usage())


POLICIES: dict[str, Callable[[dict[str, Any], int], Action]] = {
    "sensible": sensible,
    "garbage": garbage,
    "illegal": illegal,
    "http500": lambda b, i: status(500),
    "http429": lambda b, i: status(429, {"Retry-After": "0"}),
    "timeout": lambda b, i: sleep(3.0),
    "drop": lambda b, i: drop(),
    "mixed": lambda b, i: [status(500), status(429, {"Retry-After": "0"}), garbage(b, i), drop(), illegal(b, i)][i % 5],
}


def is_direct(body: dict[str, Any]) -> bool:
    """A direct-generation request (its tools include `submit`), not a guide round."""
    return any((t.get("function") or {}).get("name") == "submit" for t in body.get("tools") or [])


def both(guide: Callable[[dict[str, Any], int], Action], direct: Callable[[dict[str, Any], int], Action]):
    """One server for `bench --compare-direct`: guide rounds and direct turns each get their policy."""
    return lambda body, i: (direct if is_direct(body) else guide)(body, i)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=8011)
    ap.add_argument("--policy", default="sensible", choices=sorted(POLICIES) + ["direct", "compare"])
    args = ap.parse_args()
    if args.policy in ("direct", "compare"):
        from tests.llm.direct_policy import direct_policy

        policy = direct_policy if args.policy == "direct" else both(sensible, direct_policy)
    else:
        policy = POLICIES[args.policy]
    srv = Loopback(policy)
    srv.httpd.server_close()
    srv.httpd = ThreadingHTTPServer(("127.0.0.1", args.port), srv._handler())
    srv.httpd.daemon_threads = True
    print(f"loopback chat-completions server on http://127.0.0.1:{args.port}/v1 (policy {args.policy})", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        srv.httpd.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main()
