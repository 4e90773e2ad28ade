"""The LLM guide, by job: what the model may answer and its parser (`answer`), the prompt
(`prompt`), the completion of an intent into legal mappings by CP-SAT (`intent`), and the
guide's round loop with its fallback to the cost guide (`guide`).
"""

from __future__ import annotations

from zomboss.solvers.guides.llm.answer import AnswerParser, Ids, Intent, Rank, Refine, extract_json
from zomboss.solvers.guides.llm.guide import LlmGuide
from zomboss.solvers.guides.llm.intent import complete_intent
from zomboss.solvers.guides.llm.prompt import task_message

__all__ = [
    "AnswerParser",
    "Ids",
    "Intent",
    "LlmGuide",
    "Rank",
    "Refine",
    "complete_intent",
    "extract_json",
    "task_message",
]
