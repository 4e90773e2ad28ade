"""The direct-generation baseline (`zomboss direct TARGET WORKLOAD`), the way KernelCraft runs
agents: the model writes the program itself, from the target's literate ISA doc.

* System prompt: the ISA doc (the same file the KB is built from), the hardware configuration
  (the KB's parameters) and the task (the workload, where its inputs lie and where the output
  must go, from the export sidecar; never the reference or Candidate-0's program).
* Tools by function calling: `search_doc` (grep the doc), `check_program` (the KB checker:
  rule, doc line, values), `run_evaluation` (simulate and verify on fresh random inputs each
  time), `view_output` (what the target reports about the mismatch), `get_stats`
  (instruction count and cycles), `submit` (the final program).
* Iteration budgets of 15 / 20 / 25 model turns by task level (KernelCraft's levels).
* The final program goes through the same checks and verification as Zomboss's kernels
  (`Target.simulate_file`, checked rule by rule) on input seeds it never saw during the run,
  two of them: a program whose output does not depend on its inputs cannot pass both, and
  the reference output is never in the simulated machine's memory to be read.

Every call's tokens are accounted (zomboss.llm) and can go to the results store.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zomboss.doc.model import MAX_DOC_BYTES
from zomboss.errors import ZombossError
from zomboss.legality import check_program_text
from zomboss.llm import LlmClient, LlmError, Usage
from zomboss.results import Record, speedup
from zomboss.target import Params, Target
from zomboss.util import atomic_write, read_json, read_text
from zomboss.verify import default_result
from zomboss.workload import Workload

LEVELS = {"matmul": 1, "linear": 1, "rmsnorm": 1, "softmax": 1, "conv": 2, "rope": 2, "ffn": 2, "attention": 2}
BUDGETS = {1: 15, 2: 20, 3: 25}
MAX_PROGRAM_CHARS = 400_000
MAX_TOOL_OUTPUT = 6_000
FINAL_SEEDS = 2

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": desc,
            "parameters": {"type": "object", "properties": props, "required": list(props)},
        },
    }
    for name, desc, props in [
        ("search_doc", "Lines of the ISA doc matching a word or regex, with context.", {"query": {"type": "string"}}),
        ("check_program", "Check a program against every rule of the ISA doc.", {"program": {"type": "string"}}),
        (
            "run_evaluation",
            "Simulate the program on fresh random inputs and compare its output with the reference.",
            {"program": {"type": "string"}},
        ),
        ("view_output", "What differs between the last evaluated output and the reference.", {}),
        ("get_stats", "Instruction count and cycles of a program.", {"program": {"type": "string"}}),
        ("submit", "Submit the final program (ends the run).", {"program": {"type": "string"}}),
    ]
]


TOOL_NAMES = ("search_doc", "check_program", "run_evaluation", "view_output", "get_stats", "submit")


def level(wl: Workload) -> int:
    return LEVELS.get(wl.op, 2)


def budget(wl: Workload) -> int:
    return BUDGETS[level(wl)]


@dataclass
class DirectResult(Record):
    target: str
    workload: str
    verified: bool
    reason: str
    cycles: int | None
    default_cycles: int | None
    instructions: int | None
    iterations: int
    budget: int
    usage: Usage
    calls: list[dict[str, Any]] = field(default_factory=list)
    tools: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def tokens(self) -> int:
        return self.usage.total

    def json_fields(self) -> dict[str, Any]:
        ratio = speedup(self.default_cycles, self.cycles)
        return {
            "target": self.target,
            "workload": self.workload,
            "mode": "direct",
            "verified": self.verified,
            "reason": self.reason,
            "cycles": self.cycles,
            "default_cycles": self.default_cycles,
            "speedup": round(ratio, 4) if ratio is not None else None,
            "instructions": self.instructions,
            "iterations": self.iterations,
            "budget": self.budget,
            "tokens": self.tokens,
            "usage": self.usage.to_json(),
            "tool_calls": self.tools,
            "calls": self.calls,
            "wall_s": round(self.wall_s, 3),
        }


def _clip(text: str, limit: int = MAX_TOOL_OUTPUT) -> str:
    return text if len(text) <= limit else text[: limit - 40] + f"\n... ({len(text) - limit + 40} more characters)"


def _strip_paths(text: str, folder: Path) -> str:
    return text.replace(str(folder) + "/", "").replace(str(folder), ".")


class Workspace:
    """The files of one run: Candidate-0's sidecar (never its program), the agent's program."""

    def __init__(self, t: Target, wl: Workload, params: Params, folder: Path) -> None:
        self.t, self.wl, self.params, self.folder = t, wl, dict(params), folder
        self.sidecar_data, self.suffix = self._export()
        self.program = folder / f"kernel{self.suffix}"
        self.last: dict[str, Any] | None = None

    def _export(self) -> tuple[dict[str, Any], str]:
        ref = self.folder / "reference"
        ref.mkdir(parents=True, exist_ok=True)
        try:
            self.t.export(self.wl, ref / "k.asm", self.params)
        except ZombossError:
            self.t.export(self.wl, ref / "k.c", self.params)
        sides = sorted(ref.glob("*.json"))
        if not sides:
            raise ZombossError(f"{self.t.name}: export wrote no sidecar to verify programs against")
        side = sides[0]
        data = read_json(side, "a sidecar")
        suffix = Path(side.name[: -len(".json")]).suffix or ".asm"
        shutil.rmtree(ref)  # Candidate-0's program is the answer: the agent never sees it
        return data, suffix

    def layout(self) -> dict[str, Any]:
        """What the agent may know: the workload and the placement, not the compiler's mapping."""
        return {k: v for k, v in self.sidecar_data.items() if k not in ("mapping", "seed", "verification")}

    def write(self, text: str, seed: int) -> Path:
        atomic_write(self.program, text)
        side = dict(self.sidecar_data)
        side["seed"] = seed
        atomic_write(self.program.with_name(self.program.name + ".json"), json.dumps(side))
        return self.program


class DirectAgent:
    def __init__(
        self,
        t: Target,
        wl: Workload,
        params: Params,
        client: LlmClient,
        iterations: int | None = None,
        seed: int = 0,
        folder: Path | None = None,
    ) -> None:
        self.t, self.wl, self.params, self.client = t, wl, dict(params), client
        self.budget = iterations or budget(wl)
        self.rng = random.Random(seed)
        self._tmp = None if folder else tempfile.TemporaryDirectory(prefix="zomboss-direct-")
        self.folder = Path(folder or self._tmp.name)  # type: ignore[union-attr]
        self.folder.mkdir(parents=True, exist_ok=True)
        self.ws = Workspace(t, wl, params, self.folder)
        self.kb = t.kb(params)
        self.doc = read_text(Path(t.doc), "an ISA doc", MAX_DOC_BYTES)
        self.used_seeds: set[int] = set()
        self.tools: dict[str, int] = {}
        self.last_program: str | None = None

    # ---- prompt ----------------------------------------------------------------------------
    def system_prompt(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in sorted(self.kb.params.items()))
        return (
            f"You write kernels in the assembly language of the {self.t.name} accelerator, whose ISA "
            "document follows. Write the complete program as text, one instruction per line, in the form "
            f"`zomboss simulate {self.t.name}` reads. Use the tools to search the doc, check the program "
            "against the machine's rules, run it on random inputs, inspect the output, and submit it. "
            f"You have {self.budget} turns.\n\n"
            f"# Hardware configuration\n{params}\n\n# ISA document ({Path(self.t.doc).name})\n\n{self.doc}"
        )

    def task_prompt(self) -> str:
        return (
            f"Task: implement {self.wl.op} for the workload {self.wl.id} ({self.wl.spec}).\n"
            "The inputs are already in memory and the output must be written where this placement says "
            "(the verification reads it from there):\n"
            + json.dumps(self.ws.layout(), indent=1)
            + "\nGenerate an efficient, correct program; call submit with it when done."
        )

    # ---- tools -------------------------------------------------------------------------------
    def _fresh_seed(self) -> int:
        while True:
            s = self.rng.randrange(1_000, 1 << 30)
            if s not in self.used_seeds:
                self.used_seeds.add(s)
                return s

    def tool(self, name: str, args: Mapping[str, Any]) -> str:
        self.tools[name] = self.tools.get(name, 0) + 1
        prog = args.get("program")
        if name in ("check_program", "run_evaluation", "get_stats", "submit"):
            if not isinstance(prog, str) or not prog.strip():
                return "error: give the program text in 'program'"
            if len(prog) > MAX_PROGRAM_CHARS:
                return f"error: the program is longer than {MAX_PROGRAM_CHARS} characters"
            self.last_program = prog
        try:
            if name == "search_doc":
                return self.search_doc(str(args.get("query", "")))
            if name == "check_program":
                return self.check(str(prog))
            if name == "run_evaluation":
                return self.evaluate(str(prog))
            if name == "view_output":
                return self.view_output()
            if name == "get_stats":
                return self.stats(str(prog))
            if name == "submit":
                return "submitted"
        except ZombossError as e:
            return _clip("error: " + _strip_paths(str(e), self.folder))
        return f"error: no tool {name!r} (tools: {', '.join(TOOL_NAMES)})"

    def search_doc(self, query: str) -> str:
        q = query.strip()
        if not q:
            return "error: give a word or regex in 'query'"
        try:
            pat = re.compile(q, re.I)
        except re.error:
            pat = re.compile(re.escape(q), re.I)
        lines = self.doc.splitlines()
        hits = [i for i, line in enumerate(lines) if pat.search(line)][:12]
        if not hits:
            return f"no line of the doc matches {q!r}"
        out, shown = [], set()
        for i in hits:
            for j in range(max(0, i - 2), min(len(lines), i + 6)):
                if j not in shown:
                    shown.add(j)
                    out.append(f"{j + 1}: {lines[j]}")
            out.append("--")
        return _clip("\n".join(out))

    def check(self, prog: str) -> str:
        path = self.ws.write(prog, 0)
        rep = check_program_text(self.kb, prog, str(path), self.t, self.params, asp_limit=2_000)
        if rep.legal:
            return f"All checks passed: {rep.checked} executed instructions, 0 violations."
        lines = [_strip_paths(str(v), self.folder) for v in rep.violations[:20]]
        more = f"\n... {len(rep.violations) - 20} more" if len(rep.violations) > 20 else ""
        return _clip(f"{len(rep.violations)} violation(s):\n" + "\n".join(lines) + more)

    def evaluate(self, prog: str) -> str:
        seed = self._fresh_seed()
        res = self.t.simulate_file(self.ws.write(prog, seed), self.params)
        d = res.to_json()
        self.last = d
        match = d.get("match_fraction")
        share = f"; {float(match):.1%} of output elements match" if isinstance(match, int | float) else ""
        verdict = "all output elements match the reference" if res.verified else "the output does not match"
        return f"{verdict}{share} (cycles {res.cycles})"

    def view_output(self) -> str:
        if self.last is None:
            return "nothing evaluated yet: call run_evaluation first"
        keys = ("verified", "match_fraction", "diff", "mismatch", "gates", "verify_reason")
        shown = {k: v for k, v in self.last.items() if k in keys}
        if len(shown) <= 1:
            shown["note"] = "the target reports only whether the output matched"
        return _clip(json.dumps(shown, default=str, indent=1))

    def stats(self, prog: str) -> str:
        path = self.ws.write(prog, 0)
        n = len(self.t.read_program(path, self.params).instrs)
        res = self.t.simulate_file(path, self.params)
        return f"{n} instructions; {res.cycles} cycles"

    # ---- the run --------------------------------------------------------------------------------
    def run(self) -> DirectResult:
        t0 = time.perf_counter()
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.system_prompt()},
            {"role": "user", "content": self.task_prompt()},
        ]
        submitted: str | None = None
        reason = ""
        turns = 0
        while turns < self.budget and submitted is None:
            turns += 1
            try:
                reply = self.client.chat(messages, tools=TOOLS, tool_choice="auto", purpose=f"direct turn {turns}")
            except LlmError as e:
                reason = f"the LLM call failed: {e.reason}"
                break
            msg: dict[str, Any] = {"role": "assistant", "content": reply.content or ""}
            if reply.tool_calls:
                msg["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in reply.tool_calls
                ]
            messages.append(msg)
            if not reply.tool_calls:
                prog = _program_in_text(reply.content or "")
                if prog:
                    self.last_program = prog
                messages.append({"role": "user", "content": "Use the tools; call submit with the final program."})
                continue
            for c in reply.tool_calls:
                try:
                    args = json.loads(c.arguments) if c.arguments.strip() else {}
                except (ValueError, RecursionError):
                    args = None
                if not isinstance(args, dict):
                    out = "error: the arguments are not a JSON object"
                else:
                    out = self.tool(c.name, args)
                    if c.name == "submit" and out == "submitted":
                        submitted = str(args["program"])
                messages.append({"role": "tool", "tool_call_id": c.id, "content": out})
        final = submitted or self.last_program
        if final is None:
            reason = reason or f"no program after {turns} turns"
            res = self._result(False, reason, None, None, turns, t0)
        else:
            ok, why, cycles, n = self.final_check(final)
            if not submitted:
                why = f"{why} (not submitted: the last program written was judged)" if ok else why
            res = self._result(ok, why if not reason else f"{reason}; {why}", cycles, n, turns, t0)
        if self._tmp is not None:
            self._tmp.cleanup()
        return res

    def final_check(self, prog: str) -> tuple[bool, str, int | None, int | None]:
        """The same checks and verification as a Zomboss kernel, on seeds never used in the run."""
        path = self.ws.write(prog, 0)
        try:
            n = len(self.t.read_program(path, self.params).instrs)
            rep = check_program_text(self.kb, prog, str(path), self.t, self.params)
        except ZombossError as e:
            return False, "does not parse: " + _strip_paths(str(e), self.folder)[:300], None, None
        if not rep.legal:
            v = rep.violations[0]
            return False, f"illegal: {_strip_paths(str(v), self.folder)[:300]}", None, n
        cycles = None
        for _ in range(FINAL_SEEDS):
            seed = self._fresh_seed()
            try:
                res = self.t.simulate_file(self.ws.write(prog, seed), self.params)
            except ZombossError as e:
                return False, "refused by the simulator: " + _strip_paths(str(e), self.folder)[:300], None, n
            cycles = res.cycles
            if not res.verified:
                return False, f"wrong output on unseen inputs (seed {seed})", cycles, n
        return True, f"verified on {FINAL_SEEDS} unseen input seeds", cycles, n

    def _result(self, ok: bool, reason: str, cycles: int | None, n: int | None, turns: int, t0: float) -> DirectResult:
        try:
            default_cycles: int | None = default_result(self.t, self.wl, self.params).cycles
        except ZombossError:
            default_cycles = None
        return DirectResult(
            self.t.name,
            self.wl.id,
            ok,
            reason,
            cycles,
            default_cycles,
            n,
            turns,
            self.budget,
            self.client.usage,
            [c.to_json() for c in self.client.calls],
            dict(self.tools),
            time.perf_counter() - t0,
        )


def _program_in_text(text: str) -> str | None:
    m = re.search(r"```(?:\w+)?\n(.*?)```", text, flags=re.S)
    return m.group(1) if m else None


def run_direct(
    t: Target,
    wl: Workload,
    params: Params,
    client: LlmClient,
    iterations: int | None = None,
    seed: int = 0,
) -> DirectResult:
    return DirectAgent(t, wl, params, client, iterations, seed).run()


def store_direct(store: Any, res: DirectResult, config: str) -> None:
    """The summary row (kind "direct") and one trials row per LLM call (mode "llm-direct")."""
    store_direct_calls(store, res, config)
    store.put(res.target, res.workload, "direct", config, res.verified, res.to_json())


def store_direct_calls(store: Any, res: DirectResult, config: str) -> None:
    """One trials row per LLM call of a direct run (mode "llm-direct"), with its usage."""
    for c in res.calls:
        store.put_trial(
            res.target,
            res.workload,
            config,
            f"direct-call:{c['n']}",
            "llm-direct",
            int(c["n"]),
            cycles=None,
            verified=None,
            guide="direct",
            wall_s=float(c["wall_s"]),
            tokens=int(c["total"]),
            payload=c,
        )
