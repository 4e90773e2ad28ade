"""Shared fixtures of the PLENA simulator tests: the default machine and a one-call runner."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping

import pytest
from zomboss.targets.plena.asm import parse_program
from zomboss.targets.plena.config import PlenaConfig
from zomboss.targets.plena.counts import executions
from zomboss.targets.plena.run import PlenaRun
from zomboss.targets.plena.simulator import simulate

from zomboss.program import Program


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


def dynamic_counts(program: Program) -> Counter[str]:
    """Executed count per mnemonic."""
    c: Counter[str] = Counter()
    for ins, n in zip(program.instrs, executions(program), strict=True):
        c[ins.op] += n
    return c
