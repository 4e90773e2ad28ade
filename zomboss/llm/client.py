"""An OpenAI-compatible chat client for the LLM guide and the direct-generation baseline.

Built on the `openai` package, with its own transport policy so that every failure is
bounded, accounted and reproducible:

* configuration from arguments or the environment: `OPENAI_BASE_URL`, `ZOMBOSS_LLM_MODEL`,
  `OPENAI_API_KEY` (none is needed for a local server; a placeholder is sent then);
* bounded retries: the openai client retries what fails in transport itself (timeouts,
  dropped connections, HTTP 408/409/429/5xx, honouring `Retry-After` up to two minutes) with
  its own backoff; this client adds what it cannot know, within the same budget of
  `retries`: retrying unusable bodies (not JSON, no `choices`, larger than `max_answer_bytes`,
  slower than the timeout in total, dropped mid-body) with its own backoff, and a 429 whose
  `Retry-After` is longer than the openai client waits (then after `max_retry_after`);
  other 4xx are refused at once (`LlmRefused`, with the status, so a caller can drop an
  unsupported request feature such as tools or `response_format`); every HTTP attempt is
  seen through the HTTP client's event hooks, so it is counted and recorded;
* token accounting from each response's `usage`: prompt, completion, cached-prompt
  (`prompt_tokens_details.cached_tokens`) and reasoning
  (`completion_tokens_details.reasoning_tokens`) tokens, per call, including the tokens of
  attempts whose answer was then rejected;
* record / replay: `record=FILE.jsonl` writes every request with the raw body (or the error)
  of each of its attempts; `replay=FILE.jsonl` serves the same calls from that file with no
  server, through the same parsing, so a replayed run gives identical results and token
  counts. A request that differs from the recording is an error (`ReplayMismatch`).

The API key is never written anywhere: it is kept out of reprs, recordings (no headers are
recorded), exception messages, answers and requests, in any encoding an endpoint may echo it
in (`Scrubber`: every body is scrubbed, its decoded JSON strings included, before anything
reads it; every request and recording line is scrubbed the same way, so an answer that held it
never goes back out in a prompt). Recordings are written by the one output writer
(`zomboss.util.atomic_write`, `append_text`), replays read by the one input reader. Answers are
data: nothing here executes them.
"""

from __future__ import annotations

import base64
import html
import json
import os
import random
import re
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from zomboss.errors import ZombossError
from zomboss.util import append_text, atomic_write, read_text

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 3
MAX_ANSWER_BYTES = 1_000_000
PLACEHOLDER_KEY = "no-key"  # sent to servers that need none (vLLM, llama.cpp, Ollama)
RECORDING_VERSION = 1


class LlmError(ZombossError):
    """A call that failed after its retries (`reason`: a short cause such as "HTTP 500")."""

    def __init__(self, reason: str, attempts: int = 1, status: int | None = None) -> None:
        self.reason, self.attempts, self.status = reason, attempts, status
        super().__init__(f"LLM call failed after {attempts} attempt(s): {reason}")


class LlmRefused(LlmError):
    """A request the server refused (a 4xx other than 408/409/429): not retried."""


class ReplayMismatch(ZombossError):
    """A replayed run asked something the recording does not hold."""


class LlmConfigError(ZombossError):
    """No endpoint (or an unusable one) configured."""


LLM_EXTRA = "pip install 'zomboss[llm]'"


class LlmMissing(LlmConfigError):
    """The `llm` extra (the openai package) is not installed."""


def openai_module() -> ModuleType:
    """The openai package, or LlmMissing naming the extra to install (imported when a client
    first needs it: it is optional, and slow to import)."""
    try:
        import openai
    except ImportError:
        raise LlmMissing(
            f"the LLM guide (--guide llm) and `zomboss direct` need the openai package: {LLM_EXTRA}"
        ) from None
    return openai


# ---- usage -----------------------------------------------------------------------------------


def _count(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 40 else 0


@dataclass(frozen=True)
class Usage:
    prompt: int = 0
    completion: int = 0
    cached: int = 0  # part of `prompt` served from the provider's prompt cache
    reasoning: int = 0  # part of `completion` spent on hidden reasoning

    @property
    def total(self) -> int:
        return self.prompt + self.completion

    def __add__(self, o: Usage) -> Usage:
        return Usage(
            self.prompt + o.prompt, self.completion + o.completion, self.cached + o.cached, self.reasoning + o.reasoning
        )

    @classmethod
    def of(cls, data: object) -> Usage:
        """The usage fields of a response body (missing or ill-typed fields count 0)."""
        if not isinstance(data, Mapping):
            return cls()
        u = data.get("usage")
        if not isinstance(u, Mapping):
            return cls()
        pd, cd = u.get("prompt_tokens_details"), u.get("completion_tokens_details")
        return cls(
            _count(u.get("prompt_tokens")),
            _count(u.get("completion_tokens")),
            _count(pd.get("cached_tokens")) if isinstance(pd, Mapping) else 0,
            _count(cd.get("reasoning_tokens")) if isinstance(cd, Mapping) else 0,
        )

    def to_json(self) -> dict[str, int]:
        return {
            "prompt": self.prompt,
            "completion": self.completion,
            "cached": self.cached,
            "reasoning": self.reasoning,
            "total": self.total,
        }


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the raw JSON text the model wrote (parsed by the caller, as data)


@dataclass(frozen=True)
class Reply:
    content: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str
    usage: Usage  # of every attempt of this call


@dataclass
class CallRecord:
    """One logical call (all its attempts): what the results store gets per call."""

    n: int
    purpose: str
    usage: Usage
    attempts: int
    wall_s: float
    ok: bool
    reason: str = ""  # why it failed (or why an attempt was retried)
    finish_reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "purpose": self.purpose,
            **self.usage.to_json(),
            "attempts": self.attempts,
            "wall_s": round(self.wall_s, 3),
            "ok": self.ok,
            "reason": self.reason,
            "finish_reason": self.finish_reason,
        }


# ---- configuration ---------------------------------------------------------------------------


@dataclass
class LlmConfig:
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    # retries of unusable bodies wait about `backoff` first, doubling (with jitter) up to
    # max_backoff (the openai client backs off its transport retries itself)
    backoff: float = 1.0
    max_backoff: float = 30.0
    max_retry_after: float = 60.0  # a Retry-After the openai client will not wait is waited this long
    max_answer_bytes: int = MAX_ANSWER_BYTES
    max_tokens: int = 2048
    temperature: float = 0.0
    seed: int = 0

    @classmethod
    def from_options(
        cls,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        **rest: Any,
    ) -> LlmConfig:
        """Flags first, then `OPENAI_BASE_URL`, `ZOMBOSS_LLM_MODEL`, `OPENAI_API_KEY`. The
        command line's parser checks --llm-base-url; the environment's URL is checked here."""
        env_url = os.environ.get("OPENAI_BASE_URL") or None
        if not base_url and env_url is not None and not http_url(env_url):
            raise LlmConfigError(
                f"$OPENAI_BASE_URL {env_url[:80]!r}: expected an http(s) URL such as http://127.0.0.1:8000/v1"
            )
        return cls(
            base_url=base_url or env_url,
            model=model or os.environ.get("ZOMBOSS_LLM_MODEL") or None,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or None,
            timeout=float(timeout) if timeout is not None else DEFAULT_TIMEOUT,
            **rest,
        )

    def __repr__(self) -> str:  # the key is never shown, not even its length
        return f"LlmConfig(base_url={self.base_url!r}, model={self.model!r}, timeout={self.timeout})"


REDACTED = "[redacted]"


class Scrubber:
    """Removes the API key from any text before it is stored, shown or parsed, in whatever
    encoding an endpoint may echo it: as is, in JSON strings (`\\u`-escaped, at any depth of
    JSON nested in strings), percent-encoded, or in base64 (at any alignment). JSON text is
    scrubbed structurally: its decoded strings are, and the text is re-serialised only if one
    held the key; text that is not JSON and holds the key only in an encoding it cannot
    rewrite in place is replaced whole."""

    def __init__(self, key: str | None) -> None:
        self.key = key if key and key != PLACEHOLDER_KEY and len(key) >= 4 else None
        self._forms: tuple[str, ...] = ()
        if self.key:
            raw = self.key.encode("utf-8")
            forms = {self.key, urllib.parse.quote(self.key, safe=""), urllib.parse.quote_plus(self.key)}
            for pad in range(3):  # base64 of the key after 0, 1 or 2 other bytes: its stable middle
                whole = (len(raw) + pad) // 3 * 4
                for enc in (base64.b64encode, base64.urlsafe_b64encode):
                    frag = enc(b"\0" * pad + raw)[4 if pad else 0 : whole].decode("ascii")
                    if len(frag) >= 8:
                        forms.add(frag)
            self._forms = tuple(sorted(forms, key=len, reverse=True))

    def __call__(self, text: str) -> str:
        if not self.key:
            return text
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return self._text(text)
        try:
            clean = self._json(data, 0)
        except RecursionError:  # nested too deeply to walk: the text as a whole
            return self._text(text)
        return json.dumps(clean) if clean != data else self._text(text)

    def _text(self, text: str) -> str:
        for form in self._forms:
            text = text.replace(form, REDACTED)
        assert self.key is not None
        decoded = _unescape(text)
        if self.key in decoded or any(f in decoded for f in self._forms):
            return REDACTED + " (the text held the API key in an encoded form)"
        return text

    def _json(self, v: Any, depth: int) -> Any:
        if isinstance(v, str):
            out = self._text(v)
            if depth < 8 and out == v and v[:1] in '[{"':
                try:
                    inner = json.loads(v)
                except (ValueError, RecursionError):
                    return out
                clean = self._json(inner, depth + 1)
                return json.dumps(clean) if clean != inner else v
            return out
        if isinstance(v, list):
            return [self._json(x, depth) for x in v]
        if isinstance(v, dict):
            return {self._text(k): self._json(x, depth) for k, x in v.items()}
        return v


def _unescape(text: str) -> str:
    """`text` with JSON/Python backslash escapes, percent-encoding and HTML entities decoded
    (twice, for a doubly escaped echo), to look for the key in."""
    for _ in range(2):
        text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
        text = re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), text)
        text = html.unescape(urllib.parse.unquote_plus(text))
    return text


# ---- the client ----------------------------------------------------------------------------


class _Bad(Exception):
    """One attempt's failure: `retry` says whether another attempt may help."""

    def __init__(self, reason: str, retry: bool, status: int | None = None, wait: float | None = None) -> None:
        super().__init__(reason)
        self.reason, self.retry, self.status, self.wait = reason, retry, status, wait


def parse_body(text: str) -> Reply:
    """A chat-completions body as a Reply, or _Bad (retryable: the server misbehaved)."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise _Bad("the response body is not JSON", True) from None
    usage = Usage.of(data)
    if not isinstance(data, dict):
        raise _Bad("the response body is not a JSON object", True)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        err = data.get("error")
        detail = f": {str(err)[:160]}" if err else ""
        raise _BadWithUsage("the response has no choices" + detail, usage)
    ch = choices[0]
    msg = ch.get("message") if isinstance(ch, dict) else None
    if not isinstance(msg, dict):
        raise _BadWithUsage("the first choice has no message", usage)
    content = msg.get("content")
    if not isinstance(content, str):
        content = None
    calls = []
    raw_calls = msg.get("tool_calls")
    if isinstance(raw_calls, list):
        for i, tc in enumerate(raw_calls[:32]):
            fn = tc.get("function") if isinstance(tc, dict) else None
            if not isinstance(fn, dict):
                continue
            name, args = fn.get("name"), fn.get("arguments")
            if isinstance(args, dict | list):
                args = json.dumps(args)
            if isinstance(name, str) and isinstance(args, str):
                tid = tc.get("id") if isinstance(tc.get("id"), str) else f"call_{i}"
                calls.append(ToolCall(str(tid), name, args))
    fr = ch.get("finish_reason") if isinstance(ch, dict) else None
    return Reply(content, tuple(calls), fr if isinstance(fr, str) else "", usage)


class _BadWithUsage(_Bad):
    def __init__(self, reason: str, usage: Usage) -> None:
        super().__init__(reason, True)
        self.usage = usage


class LlmClient:
    """Chat completions with retries, accounting, scrubbing and record/replay."""

    def __init__(
        self,
        config: LlmConfig,
        record: str | Path | None = None,
        replay: str | Path | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self.scrub = Scrubber(config.api_key)
        self.calls: list[CallRecord] = []
        self.usage = Usage()
        self._sleep = sleep  # the waits between this client's own retries (the openai client sleeps its own)
        self._rng = random.Random(config.seed)
        self._record = Path(record) if record else None
        self._replay: list[dict[str, Any]] | None = None
        self._client: Any = None
        self._tries: list[dict[str, Any]] = []  # the HTTP attempts of the request under way (event hooks)
        self._sent_at = 0.0  # when the last of them was sent
        if replay:
            self._replay = _read_recording(Path(replay))
        else:
            self._lib = openai_module()
            if not config.base_url:
                raise LlmConfigError(
                    "no LLM endpoint: give --llm-base-url (or set OPENAI_BASE_URL), e.g. http://127.0.0.1:8000/v1,"
                    " or --llm-replay FILE.jsonl"
                )
        if self._record is not None:
            header = {"zomboss_llm_recording": RECORDING_VERSION, "model": self.config.model}
            atomic_write(self._record, json.dumps(header) + "\n")

    @property
    def tokens(self) -> int:
        return self.usage.total

    # ---- transport -------------------------------------------------------------------------
    def _openai(self) -> Any:
        """The openai client: its own timeout and retries, and an HTTP client whose event hooks
        see every attempt it makes (counted, and recorded for replay)."""
        if self._client is None:
            http = self._lib.DefaultHttpxClient(event_hooks={"request": [self._sent], "response": [self._answered]})
            self._client = self._lib.OpenAI(
                base_url=self.config.base_url,
                api_key=self.config.api_key or PLACEHOLDER_KEY,
                timeout=self.config.timeout,
                max_retries=self.config.retries,
                http_client=http,
            )
        return self._client

    def _sent(self, request: Any) -> None:
        self._sent_at = time.monotonic()
        self._tries.append({"error": "no answer (timeout, or the connection failed)", "status": None, "retry": True})

    def _answered(self, response: Any) -> None:
        code = int(response.status_code)
        if self._tries and code >= 400:
            self._tries[-1].update(error=f"HTTP {code}", status=code)
        elif self._tries:
            self._tries[-1] = {}  # answered: the caller fills in the body or why it was unusable

    def model(self) -> str:
        """The configured model, else the first one the server lists, else "default"."""
        if self.config.model:
            return self.config.model
        if self._replay is not None:
            return self._replay_model(len(self.calls))
        try:
            # a probe: no retries, the chat call that follows has them
            page = self._openai().with_options(max_retries=0).models.list(timeout=min(self.config.timeout, 10.0))
            first = next(iter(page), None)
            name = getattr(first, "id", None)
            self.config.model = name if isinstance(name, str) and name else "default"
        except (self._lib.OpenAIError, StopIteration, TypeError, ValueError):
            self.config.model = "default"
        finally:
            self._tries = []
        return self.config.model

    def _send(self, request: Mapping[str, Any], retries: int) -> tuple[list[dict[str, Any]], str | _Bad]:
        """One request through the openai client, which retries transport failures itself up to
        `retries` times: the attempts it made (as recorded) and the scrubbed body of the last,
        or why it gave up (_Bad)."""
        openai, httpx2 = self._lib, _httpx2()
        cfg = self.config
        body = dict(request)
        body.pop("purpose", None)
        self._tries = []
        chat = self._openai().with_options(max_retries=retries).chat.completions
        outcome: str | _Bad
        try:
            with chat.with_streaming_response.create(**body) as resp:
                chunks: list[bytes] = []
                size = 0
                tail = b""  # of an oversized answer: its last bytes, where the `usage` object is
                for chunk in resp.iter_bytes():
                    size += len(chunk)
                    if time.monotonic() - self._sent_at > cfg.timeout:
                        raise _Bad(f"timeout (answer not complete after {cfg.timeout:g} s)", True)
                    if size > cfg.max_answer_bytes:  # refused, but read to its end: its tokens were spent
                        tail = (b"".join(chunks) + tail + chunk)[-_TAIL_BYTES:]
                        chunks = []
                    else:
                        chunks.append(chunk)
            if size > cfg.max_answer_bytes:
                raise _BadWithUsage(
                    f"oversized answer ({size:,} bytes, more than {cfg.max_answer_bytes:,})", _tail_usage(tail)
                )
            outcome = self.scrub(b"".join(chunks).decode("utf-8", errors="replace"))
        except _Bad as b:
            outcome = b
        except openai.APITimeoutError:
            outcome = _Bad(f"timeout (no answer within {cfg.timeout:g} s)", True)
        except openai.APIConnectionError:
            outcome = _Bad("connection failed or dropped", True)
        except openai.APIStatusError as e:
            code = e.status_code
            headers = e.response.headers if e.response is not None else {}
            retry = code in (408, 409, 429) or code >= 500
            if headers.get("x-should-retry") == "false":
                retry = False
            # the openai client waits a Retry-After of up to two minutes itself; a longer one it
            # does not wait at all: this client then waits max_retry_after and tries again
            wait = cfg.max_retry_after if ("retry-after" in headers or "retry-after-ms" in headers) else None
            detail = self.scrub(_error_detail(e))
            outcome = _Bad(f"HTTP {code}" + (f" ({detail})" if detail else ""), retry, code, wait)
        except (httpx2.TransportError, httpx2.DecodingError, httpx2.StreamError):
            outcome = _Bad("connection dropped while reading the answer", True)
        except openai.OpenAIError as e:
            outcome = _Bad(self.scrub(f"{type(e).__name__}: {e}")[:200], True)
        tries, self._tries = self._tries or [{}], []
        last = tries[-1]
        if isinstance(outcome, str):
            last.clear()
            last["body"] = outcome
        else:
            last.clear()
            last.update(error=outcome.reason, status=outcome.status, wait=outcome.wait, retry=outcome.retry)
            if isinstance(outcome, _BadWithUsage):  # replayed with the tokens it cost
                last["usage"] = outcome.usage.to_json()
        return tries, outcome

    def _wait(self, attempt: int, hint: float | None) -> float:
        cfg = self.config
        back = min(cfg.max_backoff, cfg.backoff * (2**attempt)) * (0.5 + self._rng.random() / 2)
        if hint is not None:
            back = max(back, min(hint, cfg.max_retry_after))
        return back

    # ---- calls -------------------------------------------------------------------------------
    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        response_format: Mapping[str, Any] | None = None,
        purpose: str = "",
        max_tokens: int | None = None,
    ) -> Reply:
        """One call (with its retries). Raises LlmError (LlmRefused for a refused request)."""
        request: dict[str, Any] = {
            "model": self.model() if self._replay is None else self._replay_model(len(self.calls)),
            "messages": [dict(m) for m in messages],
            "temperature": self.config.temperature,
            "max_tokens": max_tokens or self.config.max_tokens,
            "seed": self.config.seed,
        }
        if tools:
            request["tools"] = [dict(t) for t in tools]
        if tool_choice is not None:
            request["tool_choice"] = tool_choice
        if response_format is not None:
            request["response_format"] = dict(response_format)
        if self.scrub.key:  # an answer that held the key never goes back out in a prompt
            text = json.dumps(request)
            clean = self.scrub(text)
            if clean != text:
                request = json.loads(clean)
        n = len(self.calls)
        t0 = time.perf_counter()
        attempts: list[dict[str, Any]] = []  # every HTTP attempt, as recorded (and replayed)
        recorded = self._replayed(n, request) if self._replay is not None else None
        usage = Usage()
        reply: Reply | None = None
        failure: _Bad | None = None
        reasons: list[str] = []
        rounds = 0  # this client's own retries (of what the openai client does not retry)
        while len(attempts) <= self.config.retries:
            if recorded is not None:  # a replay serves one recorded attempt at a time
                if len(attempts) >= len(recorded):
                    raise ReplayMismatch(f"replay: call {n} has fewer attempts recorded than the run needs")
                tries = [recorded[len(attempts)]]
                got: str | _Bad = _replayed_attempt(tries[0])
            else:
                tries, got = self._send(request, self.config.retries - len(attempts))
            attempts.extend(tries)
            reasons += [str(t["error"]) for t in tries[:-1] if isinstance(t, dict) and t.get("error")]
            try:
                if isinstance(got, _Bad):
                    raise got
                reply = parse_body(got)
                usage = usage + reply.usage
                failure = None
                break
            except _Bad as b:
                if isinstance(b, _BadWithUsage):
                    usage = usage + b.usage
                failure = b
                reasons.append(b.reason)
                if not b.retry or len(attempts) > self.config.retries:
                    break
                if recorded is None:
                    self._sleep(self._wait(rounds, b.wait))
                rounds += 1
        wall = time.perf_counter() - t0
        if self._record is not None:
            line = json.dumps({"n": n, "purpose": purpose, "request": request, "attempts": attempts})
            append_text(self._record, self.scrub(line) + "\n")
        self.usage = self.usage + usage
        if reply is None:
            assert failure is not None
            self.calls.append(CallRecord(n, purpose, usage, len(attempts), wall, False, failure.reason))
            cls = LlmRefused if not failure.retry else LlmError
            raise cls(failure.reason, len(attempts), failure.status)
        retried = "; ".join(reasons)[:300]
        self.calls.append(CallRecord(n, purpose, usage, len(attempts), wall, True, retried, reply.finish_reason))
        return reply

    def _replay_model(self, n: int) -> str:
        if self.config.model:
            return self.config.model
        assert self._replay is not None
        req = self._replay[n].get("request") if n < len(self._replay) else None
        model = req.get("model") if isinstance(req, dict) else None
        return model if isinstance(model, str) else "default"

    def _replayed(self, n: int, request: Mapping[str, Any]) -> list[dict[str, Any]]:
        assert self._replay is not None
        if n >= len(self._replay):
            raise ReplayMismatch(f"replay: the run makes call {n}, but the recording holds only {len(self._replay)}")
        rec = self._replay[n]
        want = rec.get("request")
        if want != json.loads(json.dumps(request)):
            where = _first_difference(want, json.loads(json.dumps(request)))
            raise ReplayMismatch(f"replay: call {n} differs from the recording ({where})")
        atts = rec.get("attempts")
        if not isinstance(atts, list) or not atts:
            raise ReplayMismatch(f"replay: call {n} has no recorded attempts")
        return atts

    def summary(self) -> dict[str, Any]:
        return {
            "calls": len(self.calls),
            **self.usage.to_json(),
            "failed_calls": sum(1 for c in self.calls if not c.ok),
            "model": self.config.model,
        }


def _error_detail(e: Any) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        msg = body.get("message") or (body.get("error") or {}).get("message") if isinstance(body, dict) else None
        if isinstance(msg, str):
            return msg[:160]
    return ""


def _replayed_attempt(att: object) -> str | _Bad:
    """A recorded attempt: its body, or the failure it was."""
    if not isinstance(att, dict):
        raise ReplayMismatch("replay: an attempt of the recording is not an object")
    if "body" in att and isinstance(att["body"], str):
        return att["body"]
    reason = str(att.get("error", "recorded failure"))
    status = att.get("status") if isinstance(att.get("status"), int) else None
    if isinstance(att.get("usage"), Mapping):  # a refused answer whose tokens were counted
        u = att["usage"]
        return _BadWithUsage(
            reason,
            Usage(
                _count(u.get("prompt")),
                _count(u.get("completion")),
                _count(u.get("cached")),
                _count(u.get("reasoning")),
            ),
        )
    return _Bad(reason, bool(att.get("retry", True)), status, None)


_TAIL_BYTES = 64 << 10  # of an oversized answer, the bytes kept to find its `usage` in


def _tail_usage(tail: bytes) -> Usage:
    """The `usage` object of a response body from its last bytes (OpenAI-compatible servers
    write it after the choices), so that an answer refused for its size still counts the
    tokens it cost. Usage() when the tail holds none."""
    text = tail.decode("utf-8", errors="replace")
    for m in reversed(list(re.finditer(r'"usage"\s*:\s*\{', text))):
        try:
            u, _ = json.JSONDecoder().raw_decode(text, m.end() - 1)
        except (json.JSONDecodeError, RecursionError):
            continue
        return Usage.of({"usage": u})
    return Usage()


def _httpx2() -> ModuleType:
    """The HTTP library of the openai client (its errors while a body is read)."""
    import httpx2

    return httpx2


def _first_difference(a: object, b: object, path: str = "request") -> str:
    if type(a) is not type(b):
        return f"{path}: recorded {type(a).__name__}, now {type(b).__name__}"
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only in the {'recording' if k in a else 'run'}"
            if a[k] != b[k]:
                return _first_difference(a[k], b[k], f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items recorded, {len(b)} now"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f"{path} differs"


def _read_recording(path: Path) -> list[dict[str, Any]]:
    try:
        lines = read_text(path, "an LLM recording").splitlines()
    except ZombossError as e:
        raise LlmConfigError(str(e)) from None
    out = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise LlmConfigError(f"{path}:{i}: not a recording line ({e.msg})") from None
        if not isinstance(rec, dict):
            raise LlmConfigError(f"{path}:{i}: not a recording line")
        if "zomboss_llm_recording" in rec:
            continue
        out.append(rec)
    return out


def open_client(options: Mapping[str, Any], seed: int = 0) -> LlmClient:
    """A client from the CLI's options (base_url, model, timeout, record, replay, api_key)."""
    opts = dict(options)
    record, replay = opts.pop("record", None), opts.pop("replay", None)
    cfg = LlmConfig.from_options(
        base_url=opts.pop("base_url", None),
        model=opts.pop("model", None),
        api_key=opts.pop("api_key", None),
        timeout=opts.pop("timeout", None),
        seed=seed,
        **{k: v for k, v in opts.items() if k in _CONFIG_FIELDS},
    )
    return LlmClient(cfg, record=record, replay=replay)


_CONFIG_FIELDS = {
    "retries",
    "backoff",
    "max_backoff",
    "max_retry_after",
    "max_answer_bytes",
    "max_tokens",
    "temperature",
}


def http_url(text: str) -> bool:
    """Whether `text` is an http(s) URL with a host (and a valid port, if any)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)
