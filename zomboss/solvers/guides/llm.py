"""The LLM guide: a language model steering the search inside the legal mapping space.

The model sees the mapping interface, never the ISA manual: the workload, the knobs with
their legal domains and conditions, the doc's constraints (id, expression, doc line), the
doc's cost expressions, the simulated candidates with cycles, estimates and cycle
breakdowns, the solver's offered candidates, and the diagnostics of its own rejected
proposals (rule id, doc line, values). It answers with JSON — by tool call, by
`response_format` JSON schema, by JSON mode, or as JSON in text, whichever the server
accepts — in one of three forms:

* `rank`: an order of offered candidates (`c7`, `ref-exo`) to simulate;
* `refine`: knob edits of simulated candidates (`{"base": "s3", "knobs": {"tile": 8}}`);
* `intent`: hard knobs (fixed), preferred knobs (a soft objective), the rest automatic;
  clingo's skeletons and CP-SAT complete it into a batch of legal mappings.

Answers are parsed as data only (never executed): shape, knob names and domains are checked
here and every problem becomes a diagnostic in the next round; the search then checks every
proposal against the KB. The stable part of the prompt (role, task, knob table) comes first
and is byte-identical in every round, so providers can cache it. Rounds are bounded
(`max_rounds`), a convergence guard stops after `patience` rounds without a faster kernel,
and after a call that fails its retries, or `max_failures` rounds in a row that give nothing
to simulate, the guide hands the rest of the run to the cost guide and says so in `note`;
nothing simulated is lost, and the search still returns a verified kernel.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from zomboss import expr as ex
from zomboss.errors import ZombossError
from zomboss.knowledge import KB
from zomboss.llm import LlmClient, LlmError, LlmRefused, Reply, ToolCall, open_client
from zomboss.mapping import Knob, KnobMapping, MappingError, Space
from zomboss.solvers.guides.base import CostGuide, Proposal, SearchState, Simulated

FORMS = ("rank", "refine", "intent")
MODES = ("tools", "json_schema", "json_object", "text")
MAX_ANSWER_CHARS = 64_000  # longer answers are not read
MAX_ACTIONS = 16
MAX_ITEMS = 32  # per list in an answer
SHOW_SIMULATED = 10
SHOW_OFFERED = 8
SHOW_DIAGNOSTICS = 12

# ---- the answer: forms, schema, parser -----------------------------------------------------


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


# ---- prompts --------------------------------------------------------------------------------

SYSTEM = """You guide a search for the fastest kernel of one workload on the {target} accelerator.
You never write instructions. You choose points of a mapping space: every point the machine's
rules allow is lowered by the compiler to a correct program, simulated for its cycles, and the
fastest is verified against a NumPy reference. Illegal or malformed choices cost a round and
come back to you as diagnostics (rule id, doc line, values).

Ids: s0 is Candidate-0, the compiler's default (verified); sN are simulated candidates; cN and
ref-NAME are legal candidates the solver offers, not yet simulated.

Answer with exactly one JSON object (or call one of the tools rank, refine, intent):
  {{"form": "rank", "candidates": ["c3", "c1"]}}                 simulate offered candidates, best first
  {{"form": "refine", "edits": [{{"base": "s2", "knobs": {{"KNOB": VALUE}}}}]}}   change knobs of simulated ones
  {{"form": "intent", "hard": {{"KNOB": VALUE}}, "preferred": {{"KNOB": VALUE}}}}   fix some knobs, prefer others;
                                                                 the solver completes legal mappings
Values are integers or the symbols listed in a knob's domain. Fewer cycles is better; the
breakdown (compute/memory/stall/overhead) tells where the cycles go."""


def _knob_line(k: Knob) -> str:
    dom = "{" + ", ".join(k.values) + "}" if k.values else f"int {k.lo}..{k.hi}"
    when = f"; only when {ex.show(k.when)} (else {k.default})" if k.when is not None else ""
    doc = f": {k.doc}" if k.doc else ""
    return f"- {k.name}: {dom}{when}{doc}"


def task_message(sp: Space, workload: str, shape: Mapping[str, int]) -> str:
    """The stable task description: the same bytes in every round of a run."""
    refs: set[str] = set()
    for c in sp.constraints:
        refs |= {r.name for r in ex.refs(c.expr)}
    for _, e in sp.lets:
        refs |= {r.name for r in ex.refs(e)}
    for k in sp.knobs:
        if k.when is not None:
            refs |= {r.name for r in ex.refs(k.when)}
    params = {n: v for n, v in sorted(sp.params.items()) if n in refs or n.upper() in refs or n.lower() in refs}
    lines = [
        f"Workload {workload}: {sp.op}(" + ", ".join(f"{k}={shape[k]}" for k in sp.keys if k in shape) + ")",
    ]
    if params:
        lines.append("Machine parameters: " + ", ".join(f"{n}={v}" for n, v in params.items()))
    lines.append("")
    lines.append("Knobs (name: domain; condition; meaning):")
    lines += [_knob_line(k) for k in sp.knobs]
    if sp.lets:
        lines.append("")
        lines.append("Derived quantities:")
        lines += [f"- {n} = {ex.show(e)}" for n, e in sp.lets]
    lines.append("")
    lines.append("Constraints (id: rule  -- meaning [doc line]):")
    lines += [f"- {c.id}: {ex.show(c.expr)}  -- {c.message} [{c.loc}]" for c in sp.constraints]
    for name in ("estimate", "bound"):
        cost = sp.costs.get(name)
        if cost is not None:
            text = ex.show(cost.expr)
            text = text if len(text) <= 800 else text[:797] + "..."
            label = (
                "Cost estimate (the doc's analytic model; simulation decides)"
                if name == "estimate"
                else "Cost bound (a sound lower bound on cycles)"
            )
            lines.append("")
            lines.append(f"{label}: {text}")
    return _loc("\n".join(lines))


def _loc(text: str) -> str:
    """Doc locations without their folders, so prompts (and recordings) do not depend on
    where the checkout lives: `/x/y/gemmini.md:120` -> `gemmini.md:120`."""
    return re.sub(r"[^\s\[\]()'\"]*/([^/\s\[\]()'\"]+:\d+)", r"\1", text)


def _kv(values: Mapping[str, object]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items())


def _diff(m: KnobMapping, base: KnobMapping) -> str:
    b = base.as_dict()
    changed = {k: v for k, v in m.as_dict().items() if b.get(k) != v}
    return "s0 with " + _kv(changed) if changed else "same as s0"


def _sim_line(sid: str, s: Simulated, s0: KnobMapping) -> str:
    bd = ",".join(f"{k}={v}" for k, v in s.breakdown.items())
    est = f" est={s.estimate}" if s.estimate is not None else ""
    knobs = _kv(s.mapping.as_dict()) if sid == "s0" else _diff(s.mapping, s0)
    return f"  {sid} cycles={s.cycles}{est} [{bd}] knobs: {knobs}"


# ---- intent completion ------------------------------------------------------------------------


def complete_intent(
    sp: Space,
    shape: Mapping[str, int],
    kb: KB | None,
    hard: Mapping[str, int | str],
    preferred: Mapping[str, int | str],
    n: int,
    near: KnobMapping,
    exclude: set[str],
    skeletons: Sequence[Mapping[str, str]],
    time_limit: float = 0.5,
) -> tuple[list[KnobMapping], list[str]]:
    """Up to `n` legal mappings with every hard knob as given, as close to the preferred
    values as CP-SAT finds (then best by the doc's estimate), the rest automatic."""
    from zomboss.solvers.space import SizingModel

    sym_hard = {k: v for k, v in hard.items() if sp.knob(k).symbolic}
    int_hard = {k: v for k, v in hard.items() if not sp.knob(k).symbolic}
    sym_pref = {k: v for k, v in preferred.items() if sp.knob(k).symbolic}
    int_pref = {k: v for k, v in preferred.items() if not sp.knob(k).symbolic}
    canon = {k.name: str(k.default) for k in sp.symbolic}
    near_d = near.as_dict()
    cands = []
    for s in skeletons:
        full = {**canon, **s}
        if all(full.get(k) == v for k, v in sym_hard.items()):
            score = sum(1 for k, v in sym_pref.items() if full.get(k) == v)
            dist = sum(1 for k, v in full.items() if near_d.get(k) != v)
            cands.append((-score, dist, tuple(sorted(full.items())), full))
    cands.sort(key=lambda c: c[:3])
    diags: list[str] = []
    if not cands:
        diags.append(f"intent: no legal skeleton has {_kv(sym_hard)}" + _why(sp, shape, kb, near, hard))
        return [], diags
    est = sp.costs.get("estimate")
    out: list[KnobMapping] = []
    keys = set(exclude)
    tried = 0
    for _, _, _, skel in cands:
        if len(out) >= n or tried >= 3 * n + 3:
            break
        tried += 1
        try:
            model = SizingModel(sp, shape, skel)
        except ZombossError:
            continue
        ok = True
        for k, v in int_hard.items():
            if k in model.vars:
                model.model.add(model.vars[k] == int(v))
            elif model.fixed.get(k) != v:
                ok = False
        if not ok:
            continue
        devs = []
        for k, v in int_pref.items():
            if k in model.vars:
                kn = sp.knob(k)
                d = model.model.new_int_var(0, kn.hi - kn.lo + abs(int(v)), f"dev_{k}")
                model.model.add_abs_equality(d, model.vars[k] - int(v))
                devs.append(d)
        if devs:
            model.model.minimize(sum(devs))
            first = model.solve(None, time_limit)
            if first is None:
                continue
            dev = sum(abs(first.values[k] - int(v)) for k, v in int_pref.items() if k in model.vars)
            model.model.clear_objective()
            model.model.add(sum(devs) <= dev)
        sizing = model.solve(est.expr if est else None, time_limit)
        if sizing is None:
            continue
        try:
            m = sp.from_skeleton({k: skel[k] for k in skel if k in canon}, sizing.values, shape)
        except MappingError:
            continue
        if m.key() in keys:
            continue
        keys.add(m.key())
        out.append(m)
    if not out:
        diags.append(f"intent: no new legal mapping has {_kv(hard)}" + _why(sp, shape, kb, near, hard))
    return out, diags


def _why(sp: Space, shape: Mapping[str, int], kb: KB | None, near: KnobMapping, hard: Mapping[str, int | str]) -> str:
    """The doc rules Candidate-0 with the hard values breaks (a localized reason)."""
    if kb is None:
        return ""
    try:
        m = sp.mapping({**near.as_dict(), **hard}, shape, "intent")
        found = sp.violations(kb, m, shape)
    except (MappingError, ZombossError):
        return ""
    if not found:
        return ""
    v = found[0]
    return f" (applied to s0 it breaks {v.rule} [{v.doc_loc}]: {v.message}; {_kv(v.values)})"


# ---- the guide ----------------------------------------------------------------------------------


def _kb_for(sp: Space) -> KB | None:
    """The KB of a registered target under the space's parameters (None when unavailable)."""
    try:
        from zomboss.target import get_target

        t = get_target(sp.target)
        base = t.kb({})
        overrides = {k: v for k, v in sp.params.items() if base.params.get(k) != v}
        return base if not overrides else t.kb(overrides)
    except Exception:  # noqa: BLE001 - not a registered target (tests), or refused overrides
        return None


class LlmGuide:
    name = "llm"

    def __init__(
        self,
        seed: int = 0,
        *,
        client: LlmClient | None = None,
        max_rounds: int = 8,
        max_failures: int = 3,
        patience: int = 3,
        mode: str = "tools",
        kb: KB | None = None,
        workload: str | None = None,
        **options: Any,
    ) -> None:
        if mode not in MODES:
            raise ZombossError(f"LLM answer mode {mode!r}: expected one of {', '.join(MODES)}")
        self.client = client or open_client(options, seed)
        self.max_rounds, self.max_failures, self.patience = max_rounds, max_failures, patience
        self.mode = mode
        self.kb = kb
        self.workload = workload
        self.rounds = 0
        self.note = ""
        self.log: list[dict[str, Any]] = []
        self._fallback: CostGuide | None = None
        self._queue: list[Proposal] = []
        self._stable: list[dict[str, str]] | None = None
        self._diags: list[str] = []
        self._rejected_seen = 0
        self._failures = 0
        self._stale = 0
        self._best_at_round: int | None = None
        self._sims_at_round = 0
        self._skeletons: list[dict[str, str]] | None = None

    # ---- accounting -------------------------------------------------------------------------
    @property
    def tokens(self) -> int:
        return self.client.tokens

    def usage(self) -> dict[str, Any]:
        return {**self.client.summary(), "rounds": self.rounds, "per_call": [c.to_json() for c in self.client.calls]}

    def store_calls(self, store: Any, target: str, workload: str, config: str) -> None:
        """One results-store row per LLM call (mode "llm", tokens = prompt + completion)."""
        for c in self.client.calls:
            store.put_trial(
                target,
                workload,
                config,
                f"llm-call:{c.n}",
                "llm",
                c.n,
                cycles=None,
                verified=None,
                guide="llm",
                wall_s=c.wall_s,
                tokens=c.usage.total,
                payload=c.to_json(),
            )

    # ---- the protocol ---------------------------------------------------------------------
    def propose(self, state: SearchState, n: int) -> list[Proposal]:
        if self._fallback is not None:
            return self._fallback.propose(state, n)
        while True:
            seen = state.seen()
            self._queue = [p for p in self._queue if p.base is not None or self._key(state, p) not in seen]
            if self._queue:
                out, self._queue = self._queue[:n], self._queue[n:]
                return out
            if not self._next_round_allowed(state):
                return []
            if self._fallback is not None:
                return self._fallback.propose(state, n)
            self._round(state, n)
            if self._fallback is not None:
                return self._fallback.propose(state, n)

    def _key(self, state: SearchState, p: Proposal) -> str:
        try:
            return state.space.mapping(p.values, state.shape).key()
        except MappingError:
            return ""

    def _fall_back(self, why: str) -> None:
        self._fallback = CostGuide()
        self._queue = []
        self.note = f"fell back to the cost guide after round {self.rounds}: {why}"

    def _next_round_allowed(self, state: SearchState) -> bool:
        """Bounded rounds, the convergence guard, and unproductive-round counting."""
        best = state.best().cycles
        if self.rounds > 0:
            productive = len(state.simulated) > self._sims_at_round
            self._failures = 0 if productive else self._failures + 1
            improved = self._best_at_round is not None and best < self._best_at_round
            self._stale = 0 if improved else self._stale + 1
            if self._failures >= self.max_failures:
                last = self._diags[0] if self._diags else "nothing to simulate"
                self._fall_back(f"{self._failures} rounds in a row gave nothing to simulate (last: {last})")
                return True
            if self._stale >= self.patience:
                self.note = self.note or f"stopped after {self.rounds} rounds: no faster kernel in {self._stale} rounds"
                return False
        return not self.rounds >= self.max_rounds

    def _round(self, state: SearchState, n: int) -> None:
        ids = self._ids(state)
        messages = [*self._stable_messages(state), {"role": "user", "content": self._state_message(state, ids, n)}]
        self._best_at_round = state.best().cycles
        self._sims_at_round = len(state.simulated)
        self.rounds += 1
        reply = self._call(messages)
        if reply is None:
            return
        parsed = AnswerParser(state.space, ids).parse(reply)
        props = self._proposals(state, ids, parsed, n)
        self._diags = parsed.diagnostics
        self._queue = props
        self.log.append(
            {
                "round": self.rounds,
                "actions": [type(a).__name__.lower() for a in parsed.actions],
                "proposals": len(props),
                "diagnostics": parsed.diagnostics[:SHOW_DIAGNOSTICS],
                "tokens": self.client.calls[-1].usage.total if self.client.calls else 0,
            }
        )

    def _call(self, messages: list[dict[str, str]]) -> Reply | None:
        while True:
            kw: dict[str, Any] = {}
            if self.mode == "tools":
                kw = {"tools": TOOLS, "tool_choice": "auto"}
            elif self.mode == "json_schema":
                kw = {
                    "response_format": {
                        "type": "json_schema",
                        "json_schema": {"name": "answer", "schema": ANSWER_SCHEMA},
                    }
                }
            elif self.mode == "json_object":
                kw = {"response_format": {"type": "json_object"}}
            try:
                return self.client.chat(messages, purpose=f"guide round {self.rounds}", **kw)
            except LlmRefused as e:
                i = MODES.index(self.mode)
                if e.status in (400, 404, 405, 415, 422, 501) and i + 1 < len(MODES):
                    self.mode = MODES[i + 1]  # the server does not take this request form: ask more plainly
                    continue
                self._fall_back(e.reason)
                return None
            except LlmError as e:
                self._fall_back(f"LLM call failed after {e.attempts} attempt(s): {e.reason}")
                return None

    # ---- prompt parts -----------------------------------------------------------------------
    def _stable_messages(self, state: SearchState) -> list[dict[str, str]]:
        if self._stable is None:
            sp = state.space
            wl = self.workload or f"{sp.op}:" + ",".join(f"{k}={state.shape[k]}" for k in sp.keys if k in state.shape)
            self._stable = [
                {"role": "system", "content": SYSTEM.format(target=sp.target)},
                {"role": "user", "content": task_message(sp, wl, state.shape)},
            ]
        return self._stable

    def _ids(self, state: SearchState) -> Ids:
        sims = {"s0": state.default.mapping}
        for i, s in enumerate(state.simulated, 1):
            sims[f"s{i}"] = s.mapping
        seen = state.seen()
        offered: dict[str, KnobMapping] = {}
        for name, m in state.references.items():
            if m.key() not in seen:
                offered[f"ref-{name}"] = m
        for i, c in enumerate(state.pool, 1):
            if c.mapping.key() not in seen:
                offered[f"c{i}"] = c.mapping
            if len(offered) >= SHOW_OFFERED + len(state.references):
                break
        return Ids(sims, offered)

    def _state_message(self, state: SearchState, ids: Ids, n: int) -> str:
        s0 = state.default.mapping
        lines = [f"Round {self.rounds + 1} of at most {self.max_rounds}; about {n} simulations are wanted now."]
        all_sims = [("s0", state.default), *((f"s{i}", s) for i, s in enumerate(state.simulated, 1))]
        ranked = sorted(all_sims, key=lambda x: (x[1].cycles, x[0]))
        shown = ranked[:SHOW_SIMULATED]
        if not any(sid == "s0" for sid, _ in shown):
            shown.append(("s0", state.default))
        lines.append(f"Simulated ({len(all_sims)}, fastest first):")
        lines += [_sim_line(sid, s, s0) for sid, s in shown]
        if len(all_sims) > len(shown):
            lines.append(f"  ... {len(all_sims) - len(shown)} slower ones not shown")
        if ids.offered:
            est = {c.mapping.key(): c for c in state.pool}
            lines.append("Offered by the solver (legal, not simulated):")
            for cid, m in ids.offered.items():
                c = est.get(m.key())
                extra = ""
                if c is not None:
                    extra = (f" est={c.estimate}" if c.estimate is not None else "") + (
                        f" bound={c.bound}" if c.bound is not None else ""
                    )
                lines.append(f"  {cid}{extra} knobs: {_diff(m, s0)}")
        else:
            lines.append("Offered by the solver: none left (refine or give an intent).")
        diags = self._new_rejections(state) + self._diags
        if diags:
            lines.append("Problems with your previous answer:")
            lines += [f"- {_loc(d)}" for d in diags[:SHOW_DIAGNOSTICS]]
            if len(diags) > SHOW_DIAGNOSTICS:
                lines.append(f"- ... and {len(diags) - SHOW_DIAGNOSTICS} more")
        lines.append("Answer with one JSON object (rank, refine or intent).")
        return "\n".join(lines)

    def _new_rejections(self, state: SearchState) -> list[str]:
        out = []
        for r in state.rejected[self._rejected_seen :]:
            what = r.proposal.note or _kv(dict(r.proposal.values))
            for v in r.violations[:3]:
                vals = _kv(v.get("values") or {})
                doc = f" [{v['doc']}]" if v.get("doc") else ""
                out.append(
                    f"{what}: illegal, {v.get('rule')}{doc}: {v.get('message')}" + (f" ({vals})" if vals else "")
                )
        self._rejected_seen = len(state.rejected)
        return out

    # ---- answers -> proposals ----------------------------------------------------------------
    def _proposals(self, state: SearchState, ids: Ids, parsed: Parsed, n: int) -> list[Proposal]:
        seen = state.seen()
        out: list[Proposal] = []
        for a in parsed.actions:
            if isinstance(a, Rank):
                for cid in a.ids:
                    m = ids.offered[cid]
                    if m.key() not in seen:
                        seen.add(m.key())
                        out.append(Proposal(m.as_dict(), source="llm:rank", note=f"offered {cid}"))
            elif isinstance(a, Refine):
                base = ids.simulated[a.base]
                edits = dict(a.edits)
                try:
                    m = state.space.mapping({**base.as_dict(), **edits}, state.shape, "proposal")
                except MappingError as e:
                    parsed.diagnostics.append(f"refine {a.base} {_kv(edits)}: {e}")
                    continue
                if m.key() in seen:
                    same = next((i for i, x in ids.simulated.items() if x.key() == m.key()), None)
                    parsed.diagnostics.append(
                        f"refine {a.base} {_kv(edits)}: "
                        + (f"is {same}, already simulated" if same else "already proposed")
                    )
                    continue
                seen.add(m.key())
                out.append(Proposal(edits, base=base.key(), source="llm:refine", note=f"refine {a.base} {_kv(edits)}"))
            else:
                got, diags = complete_intent(
                    state.space,
                    state.shape,
                    self._kb(state),
                    dict(a.hard),
                    dict(a.preferred),
                    max(n, 4),
                    state.default.mapping,
                    seen,
                    self._skeleton_list(state),
                )
                parsed.diagnostics += diags
                for m in got:
                    seen.add(m.key())
                    out.append(Proposal(m.as_dict(), source="llm:intent", note=f"intent hard {_kv(dict(a.hard))}"))
        return out

    def _kb(self, state: SearchState) -> KB | None:
        if self.kb is None:
            self.kb = getattr(state, "kb", None) or _kb_for(state.space)
        return self.kb

    def _skeleton_list(self, state: SearchState) -> list[dict[str, str]]:
        if self._skeletons is None:
            kb = self._kb(state)
            found: list[dict[str, str]] = []
            if kb is not None:
                try:
                    from zomboss.solvers.space import skeletons

                    found = [s.as_dict() for s in skeletons(kb, state.space.op, state.shape, limit=50_000)]
                except ZombossError:
                    found = []
            if not found:  # the skeletons the search already knows
                ms = [state.default.mapping, *state.references.values(), *(c.mapping for c in state.pool)]
                found = [dict(state.space.skeleton(m)) for m in ms]
            self._skeletons = found
        return self._skeletons
