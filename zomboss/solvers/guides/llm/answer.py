"""What the model may answer, and the reading of it: the three forms (`rank` offered candidates,
`refine` simulated ones by knob edits, `intent`: hard and preferred knobs), their JSON schema and
tool declarations, and the parser. Answers are data only, never executed: shape, knob names and
domains are checked here, and every problem becomes a diagnostic for the next round.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zomboss.llm import Reply, ToolCall
from zomboss.mapping import Knob, KnobMapping, MappingError, Space

FORMS = ("rank", "refine", "intent")
MAX_ANSWER_CHARS = 64_000  # longer answers are not read
MAX_ACTIONS = 16
MAX_ITEMS = 32  # per list in an answer


@dataclass(frozen=True)
class Rank:
    ids: tuple[str, ...]


@dataclass(frozen=True)
class Refine:
    base: str  # a simulated candidate's id (s0, s3, ...)
    edits: tuple[tuple[str, int | str], ...]


@dataclass(frozen=True)
class Intent:
    hard: tuple[tuple[str, int | str], ...]
    preferred: tuple[tuple[str, int | str], ...]


Action = Rank | Refine | Intent


@dataclass
class Parsed:
    actions: list[Action] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)


_KNOBS = {
    "type": "object",
    "description": "knob name -> value",
    "additionalProperties": {"type": ["integer", "string"]},
}
_RANK = {
    "type": "object",
    "properties": {
        "candidates": {"type": "array", "items": {"type": "string"}, "description": "offered ids, best first"},
        "reason": {"type": "string"},
    },
    "required": ["candidates"],
}
_REFINE = {
    "type": "object",
    "properties": {
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"base": {"type": "string"}, "knobs": _KNOBS},
                "required": ["base", "knobs"],
            },
        },
        "reason": {"type": "string"},
    },
    "required": ["edits"],
}
_INTENT = {
    "type": "object",
    "properties": {"hard": _KNOBS, "preferred": _KNOBS, "reason": {"type": "string"}},
    "required": ["hard"],
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "rank",
            "description": "Simulate these offered candidates (ids cN / ref-NAME), best first.",
            "parameters": _RANK,
        },
    },
    {
        "type": "function",
        "function": {
            "name": "refine",
            "description": "Simulate knob edits of simulated candidates (base: an sN id).",
            "parameters": _REFINE,
        },
    },
    {
        "type": "function",
        "function": {
            "name": "intent",
            "description": "Fix some knobs (hard), prefer values for others; the solver completes legal mappings.",
            "parameters": _INTENT,
        },
    },
]
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "form": {"type": "string", "enum": list(FORMS)},
        "candidates": _RANK["properties"]["candidates"],  # type: ignore[index]
        "edits": _REFINE["properties"]["edits"],  # type: ignore[index]
        "hard": _KNOBS,
        "preferred": _KNOBS,
        "reason": {"type": "string"},
    },
    "required": ["form"],
}


@dataclass
class Ids:
    """The names the model uses: s0 (Candidate-0), sN (simulated), cN / ref-NAME (offered)."""

    simulated: dict[str, KnobMapping]
    offered: dict[str, KnobMapping]


def _strip_thinking(text: str) -> str:
    return re.sub(r"<think>.*?(</think>|$)", "", text, flags=re.S | re.I)


def extract_json(text: str) -> list[object]:
    """JSON values in a model's text: the whole text, else fenced blocks, else the first
    object that decodes at a `{` (a bounded number of tries). Never raises."""
    text = _strip_thinking(text).strip()
    if not text:
        return []
    try:
        return [json.loads(text)]
    except (ValueError, RecursionError):
        pass
    out: list[object] = []
    for m in re.finditer(r"```(?:json)?\s*(.*?)```", text, flags=re.S):
        try:
            out.append(json.loads(m.group(1)))
        except (ValueError, RecursionError):
            continue
    if out:
        return out
    dec = json.JSONDecoder()
    for n, m in enumerate(re.finditer(r"[{\[]", text)):
        if n >= 40:
            break
        try:
            obj, _ = dec.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict | list):
            return [obj]
    return []


def _norm_value(k: Knob, v: object) -> object:
    """Lenient reading of what models write: "8" or 8.0 for an integer, True for a boolean
    knob, " WS " for a symbol. The domain is still checked by `Knob.coerce`."""
    if k.symbolic:
        if isinstance(v, bool):
            return v
        if isinstance(v, str):
            return v.strip().lower() if v.strip().lower() in k.values else v.strip()
        if isinstance(v, int) and k.boolean and v in (0, 1):
            return bool(v)
        return v
    if isinstance(v, str) and re.fullmatch(r"\s*-?\d{1,18}\s*", v):
        return int(v)
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e18:
        return int(v)
    return v


def _show(v: object, limit: int = 60) -> str:
    try:
        s = json.dumps(v)
    except (TypeError, ValueError, RecursionError):
        s = repr(v)
    return s if len(s) <= limit else s[: limit - 3] + "..."


class AnswerParser:
    """Turns a reply into actions and diagnostics. Data only; never raises."""

    def __init__(self, space: Space, ids: Ids) -> None:
        self.space, self.ids = space, ids

    def parse(self, reply: Reply) -> Parsed:
        out = Parsed()
        try:
            self._parse(reply, out)
        except Exception as e:  # noqa: BLE001 - a hostile answer must never crash the search
            out.diagnostics.append(f"the answer could not be read ({type(e).__name__})")
        if len(out.actions) > MAX_ACTIONS:
            out.diagnostics.append(f"only the first {MAX_ACTIONS} actions of an answer are used")
            del out.actions[MAX_ACTIONS:]
        return out

    def _parse(self, reply: Reply, out: Parsed) -> None:
        found = False
        for tc in reply.tool_calls[:MAX_ACTIONS]:
            found = True
            self._tool_call(tc, out)
        if not found:
            text = reply.content or ""
            if len(text) > MAX_ANSWER_CHARS:
                out.diagnostics.append(f"the answer is too long ({len(text)} characters; at most {MAX_ANSWER_CHARS})")
                return
            values = extract_json(text)
            if not values:
                why = " (cut off: finish_reason=length)" if reply.finish_reason == "length" else ""
                out.diagnostics.append(
                    "the answer holds no JSON"
                    + why
                    + ": answer with one JSON object in one of the forms rank, refine, intent"
                )
                return
            for v in values[:MAX_ACTIONS]:
                self._value(v, None, out)
        if not out.actions and not out.diagnostics:
            out.diagnostics.append("the answer asks for nothing: give a rank, refine or intent")

    def _tool_call(self, tc: ToolCall, out: Parsed) -> None:
        if tc.name not in FORMS:
            out.diagnostics.append(f"unknown tool {_show(tc.name, 40)}: the tools are rank, refine, intent")
            return
        if len(tc.arguments) > MAX_ANSWER_CHARS:
            out.diagnostics.append(f"the {tc.name} arguments are too long")
            return
        try:
            args = json.loads(tc.arguments) if tc.arguments.strip() else {}
        except (ValueError, RecursionError):
            vals = extract_json(tc.arguments)
            if not vals:
                out.diagnostics.append(f"the {tc.name} arguments are not JSON")
                return
            args = vals[0]
        self._value(args, tc.name, out)

    def _value(self, v: object, form: str | None, out: Parsed, depth: int = 0) -> None:
        if depth > 3:
            out.diagnostics.append("the answer nests actions too deeply")
            return
        if isinstance(v, list):
            for item in v[:MAX_ACTIONS]:
                self._value(item, form, out, depth + 1)
            return
        if not isinstance(v, dict):
            out.diagnostics.append(f"expected a JSON object, got {_show(v, 40)}")
            return
        if isinstance(v.get("actions"), list):
            self._value(v["actions"], form, out, depth + 1)
            return
        f = v.get("form", form)
        if f is None:
            f = (
                "rank"
                if "candidates" in v
                else "refine"
                if "edits" in v or "base" in v
                else "intent"
                if "hard" in v or "preferred" in v
                else None
            )
        if f == "rank":
            self._rank(v, out)
        elif f == "refine":
            self._refine(v, out)
        elif f == "intent":
            self._intent(v, out)
        else:
            out.diagnostics.append(f"unknown form {_show(f, 40)}: use rank, refine or intent")

    def _rank(self, v: Mapping[str, Any], out: Parsed) -> None:
        cands = v.get("candidates")
        if not isinstance(cands, list):
            out.diagnostics.append("rank: 'candidates' must be a list of offered ids")
            return
        ids: list[str] = []
        for c in cands[:MAX_ITEMS]:
            cid = f"c{c}" if isinstance(c, int) and not isinstance(c, bool) else c
            if not isinstance(cid, str):
                out.diagnostics.append(f"rank: {_show(c, 40)} is not an id")
            elif cid.strip() in self.ids.offered:
                if cid.strip() not in ids:
                    ids.append(cid.strip())
            elif cid.strip() in self.ids.simulated:
                out.diagnostics.append(f"rank: {cid.strip()} is already simulated")
            else:
                out.diagnostics.append(f"rank: no offered candidate {_show(cid, 40)}")
        if ids:
            out.actions.append(Rank(tuple(ids)))

    def _knobs(self, v: object, what: str, out: Parsed) -> dict[str, int | str] | None:
        if not isinstance(v, dict):
            out.diagnostics.append(f"{what}: knob values must be a JSON object")
            return None
        got: dict[str, int | str] = {}
        names = {k.name for k in self.space.knobs}
        for name, val in list(v.items())[: 4 * len(names) + 4]:
            if name not in names:
                out.diagnostics.append(
                    f"{what}: no knob {_show(name, 40)} (knobs: {', '.join(k.name for k in self.space.knobs)})"
                )
                continue
            k = self.space.knob(name)
            try:
                got[name] = k.coerce(_norm_value(k, val), what)
            except MappingError as e:
                out.diagnostics.append(str(e))
        return got

    def _refine(self, v: Mapping[str, Any], out: Parsed) -> None:
        edits = v.get("edits")
        if edits is None and "base" in v:
            edits = [v]
        if not isinstance(edits, list):
            out.diagnostics.append("refine: 'edits' must be a list of {base, knobs}")
            return
        for e in edits[:MAX_ITEMS]:
            if not isinstance(e, dict):
                out.diagnostics.append(f"refine: an edit must be an object {{base, knobs}}, got {_show(e, 40)}")
                continue
            base = e.get("base")
            if not isinstance(base, str) or base.strip() not in self.ids.simulated:
                hint = " (offered candidates are ranked, not refined)" if base in self.ids.offered else ""
                out.diagnostics.append(f"refine: no simulated candidate {_show(base, 40)}{hint}")
                continue
            knobs = self._knobs(e.get("knobs"), f"refine {base.strip()}", out)
            if not knobs:
                if knobs is not None:
                    out.diagnostics.append(f"refine {base.strip()}: no usable knob edit")
                continue
            out.actions.append(Refine(base.strip(), tuple(knobs.items())))

    def _intent(self, v: Mapping[str, Any], out: Parsed) -> None:
        hard = self._knobs(v.get("hard", {}), "intent hard", out)
        pref = self._knobs(v.get("preferred", {}), "intent preferred", out)
        if hard is None or pref is None:
            return
        both = sorted(set(hard) & set(pref))
        if both:
            out.diagnostics.append(f"intent: {', '.join(both)} both hard and preferred: the hard value is used")
        pref = {k: x for k, x in pref.items() if k not in hard}
        if not hard and not pref:
            out.diagnostics.append("intent: no usable hard or preferred knob")
            return
        out.actions.append(Intent(tuple(hard.items()), tuple(pref.items())))
