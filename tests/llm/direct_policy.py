"""A scripted direct-generation agent for the loopback server: it searches the doc, checks a
program, evaluates it, looks at the output and submits it. With `program` set (e.g. an
exported Candidate-0) it plays a perfect model; without, it writes the same wrong program
every time, so the run ends as failed with its reason."""

from __future__ import annotations

from typing import Any

from tests.llm.server import Action, tool, usage

WRONG = "; not a kernel\n"


def make_direct_policy(program: str | None = None, query: str = "rule"):
    def policy(body: dict[str, Any], i: int) -> Action:
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        prog = program or WRONG
        u = usage(prompt=20_000 + 100 * turn, completion=300, cached=15_000 if turn else 0)
        steps = [
            ("search_doc", {"query": query}),
            ("check_program", {"program": prog}),
            ("run_evaluation", {"program": prog}),
            ("view_output", {}),
            ("get_stats", {"program": prog}),
            ("submit", {"program": prog}),
        ]
        name, args = steps[min(turn, len(steps) - 1)]
        return tool(name, args, u)

    return policy


direct_policy = make_direct_policy()
