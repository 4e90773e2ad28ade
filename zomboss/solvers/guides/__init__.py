"""Guides: what to simulate next, from the search state (the space, the pool, the
simulations so far). They speak only knob values and never emit instructions: the cost and
surrogate guides (`base`) and the LLM guide (`llm`).
"""

from __future__ import annotations

from zomboss.solvers.guides.base import (
    STALE_AFTER,
    CostGuide,
    Guide,
    Proposal,
    Rejection,
    SearchState,
    Simulated,
    make_guide,
)
from zomboss.solvers.guides.llm import (
    AnswerParser,
    Ids,
    Intent,
    LlmGuide,
    Rank,
    Refine,
    complete_intent,
    extract_json,
    task_message,
)

__all__ = [
    "AnswerParser",
    "CostGuide",
    "Guide",
    "Ids",
    "Intent",
    "LlmGuide",
    "Proposal",
    "Rank",
    "Refine",
    "Rejection",
    "STALE_AFTER",
    "SearchState",
    "Simulated",
    "complete_intent",
    "extract_json",
    "make_guide",
    "task_message",
]
