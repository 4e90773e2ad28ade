"""The LLM guide's loop: a language model steering the search inside the legal mapping space.

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

from typing import Any

from zomboss.errors import ZombossError
from zomboss.knowledge import KB
from zomboss.llm import LlmClient, LlmError, LlmRefused, Reply, open_client
from zomboss.mapping import KnobMapping, MappingError
from zomboss.results import Store
from zomboss.solvers.guides.base import Proposal, SearchState
from zomboss.solvers.guides.cost import CostGuide
from zomboss.solvers.guides.llm.answer import ANSWER_SCHEMA, TOOLS, AnswerParser, Ids, Parsed, Rank, Refine
from zomboss.solvers.guides.llm.intent import complete_intent
from zomboss.solvers.guides.llm.prompt import (
    SHOW_DIAGNOSTICS,
    SHOW_OFFERED,
    SYSTEM,
    kv,
    rejection_lines,
    state_message,
    task_message,
)
from zomboss.solvers.space import skeletons
from zomboss.target import resolve_kb

MODES = ("tools", "json_schema", "json_object", "text")


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

    def store_calls(self, store: Store, target: str, workload: str, config: str) -> None:
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
        diags = self._new_rejections(state) + self._diags
        return state_message(state, ids, n, self.rounds + 1, self.max_rounds, diags)

    def _new_rejections(self, state: SearchState) -> list[str]:
        out = rejection_lines(state.rejected[self._rejected_seen :])
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
                    parsed.diagnostics.append(f"refine {a.base} {kv(edits)}: {e}")
                    continue
                if m.key() in seen:
                    same = next((i for i, x in ids.simulated.items() if x.key() == m.key()), None)
                    parsed.diagnostics.append(
                        f"refine {a.base} {kv(edits)}: "
                        + (f"is {same}, already simulated" if same else "already proposed")
                    )
                    continue
                seen.add(m.key())
                out.append(Proposal(edits, base=base.key(), source="llm:refine", note=f"refine {a.base} {kv(edits)}"))
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
                    out.append(Proposal(m.as_dict(), source="llm:intent", note=f"intent hard {kv(dict(a.hard))}"))
        return out

    def _kb(self, state: SearchState) -> KB | None:
        """The search's KB, else the space's target's under the space's parameters (None when the
        space names no registered target, as in tests, or the target refuses the parameters)."""
        if self.kb is None and state.kb is not None:
            self.kb = state.kb
        if self.kb is None:
            sp = state.space
            try:
                base = resolve_kb(sp.target, {})
                overrides = {k: v for k, v in sp.params.items() if base.params.get(k) != v}
                self.kb = base if not overrides else resolve_kb(sp.target, overrides)
            except ZombossError:
                return None
        return self.kb

    def _skeleton_list(self, state: SearchState) -> list[dict[str, str]]:
        if self._skeletons is None:
            kb = self._kb(state)
            found: list[dict[str, str]] = []
            if kb is not None:
                try:
                    found = [s.as_dict() for s in skeletons(kb, state.space.op, state.shape, limit=50_000)]
                except ZombossError:
                    found = []
            if not found:  # the skeletons the search already knows
                ms = [state.default.mapping, *state.references.values(), *(c.mapping for c in state.pool)]
                found = [dict(state.space.skeleton(m)) for m in ms]
            self._skeletons = found
        return self._skeletons
