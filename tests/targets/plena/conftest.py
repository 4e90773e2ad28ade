"""Shared fixtures of the PLENA simulator tests: the default machine and a one-call runner."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest
from zomboss.targets.plena.asm import parse_program
from zomboss.targets.plena.config import PlenaConfig
from zomboss.targets.plena.simulator import PlenaRun, simulate


@pytest.fixture(scope="session")
def cfg() -> PlenaConfig:
    return PlenaConfig.from_params()


@pytest.fixture(scope="session")
def config_for() -> Callable[[Mapping[str, int]], PlenaConfig]:
    cache: dict[tuple, PlenaConfig] = {}

    def make(over: Mapping[str, int]) -> PlenaConfig:
        key = tuple(sorted(over.items()))
        if key not in cache:
            cache[key] = PlenaConfig.from_params(over)
        return cache[key]

    return make


@pytest.fixture(scope="session")
def run(cfg: PlenaConfig) -> Callable[..., PlenaRun]:
    """run(asm_text, config=None, **simulate_kwargs) -> PlenaRun."""

    def _run(asm: str, config: PlenaConfig | None = None, **kw) -> PlenaRun:
        c = config or cfg
        return simulate(parse_program(c.kb, asm, "test.asm"), c, **kw)

    return _run
