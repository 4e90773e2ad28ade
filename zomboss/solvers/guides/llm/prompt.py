"""The prompt: the system message and the task (role, workload, knob table, constraints, costs),
which are byte-identical in every round so providers can cache them, and the state message of a
round (the simulated candidates with cycles and breakdowns, the offered ones, the diagnostics).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from zomboss import expr as ex
from zomboss.mapping import Knob, KnobMapping, Space
from zomboss.solvers.guides.base import Rejection, SearchState, Simulated
from zomboss.solvers.guides.llm.answer import Ids

SHOW_SIMULATED = 10
SHOW_OFFERED = 8
SHOW_DIAGNOSTICS = 12

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
    return strip_folders("\n".join(lines))


def strip_folders(text: str) -> str:
    """Doc locations without their folders, so prompts (and recordings) do not depend on
    where the checkout lives: `/x/y/gemmini.md:120` -> `gemmini.md:120`."""
    return re.sub(r"[^\s\[\]()'\"]*/([^/\s\[\]()'\"]+:\d+)", r"\1", text)


def kv(values: Mapping[str, object]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items())


def _diff(m: KnobMapping, base: KnobMapping) -> str:
    b = base.as_dict()
    changed = {k: v for k, v in m.as_dict().items() if b.get(k) != v}
    return "s0 with " + kv(changed) if changed else "same as s0"


def _sim_line(sid: str, s: Simulated, s0: KnobMapping) -> str:
    bd = ",".join(f"{k}={v}" for k, v in s.breakdown.items())
    est = f" est={s.estimate}" if s.estimate is not None else ""
    knobs = kv(s.mapping.as_dict()) if sid == "s0" else _diff(s.mapping, s0)
    return f"  {sid} cycles={s.cycles}{est} [{bd}] knobs: {knobs}"


def state_message(state: SearchState, ids: Ids, n: int, round_no: int, max_rounds: int, diags: Sequence[str]) -> str:
    """The round's message: the simulated candidates (fastest first, s0 always), the offered ones
    with the doc's estimate and bound, and the problems with the previous answer."""
    s0 = state.default.mapping
    lines = [f"Round {round_no} of at most {max_rounds}; about {n} simulations are wanted now."]
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
    if diags:
        lines.append("Problems with your previous answer:")
        lines += [f"- {strip_folders(d)}" for d in diags[:SHOW_DIAGNOSTICS]]
        if len(diags) > SHOW_DIAGNOSTICS:
            lines.append(f"- ... and {len(diags) - SHOW_DIAGNOSTICS} more")
    lines.append("Answer with one JSON object (rank, refine or intent).")
    return "\n".join(lines)


def rejection_lines(rejected: Sequence[Rejection]) -> list[str]:
    """The search's verdicts on proposals: the violated rule, its doc line and the values."""
    out = []
    for r in rejected:
        what = r.proposal.note or kv(dict(r.proposal.values))
        for v in r.violations[:3]:
            vals = kv(v.get("values") or {})
            doc = f" [{v['doc']}]" if v.get("doc") else ""
            out.append(f"{what}: illegal, {v.get('rule')}{doc}: {v.get('message')}" + (f" ({vals})" if vals else ""))
    return out
