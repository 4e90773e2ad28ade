"""Guides: what to simulate next, from the search state (the space, the pool, the simulations
so far). They speak only knob values and never emit instructions. One module per job, as in
TVM's meta_schedule: the state, proposals and protocol they share (`base`), the cost guide
(`cost`, the default), the online surrogate (`surrogate`), the LLM guide (`llm/`), and the
choice of one by name (`make`).

This module is only the names, so the command line can offer them without importing a guide.
"""

from __future__ import annotations

from typing import Literal, get_args

GuideName = Literal["cost", "surrogate", "llm"]
GUIDE_NAMES: tuple[GuideName, ...] = get_args(GuideName)
