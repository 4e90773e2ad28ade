"""A guide by its name (`--guide`)."""

from __future__ import annotations

from typing import Any

from zomboss.errors import ZombossError
from zomboss.solvers.guides import GUIDE_NAMES
from zomboss.solvers.guides.base import Guide
from zomboss.solvers.guides.cost import CostGuide
from zomboss.solvers.guides.surrogate import SurrogateGuide


def make_guide(name: str, seed: int = 0, **options: Any) -> Guide:
    if name == "cost":
        return CostGuide()
    if name == "surrogate":
        return SurrogateGuide(seed)
    if name == "llm":
        from zomboss.solvers.guides.llm import LlmGuide  # (the client and prompts load only for this guide)

        return LlmGuide(seed=seed, **options)
    raise ZombossError(f"--guide {name!r}: expected {', '.join(GUIDE_NAMES[:-1])} or {GUIDE_NAMES[-1]}")
