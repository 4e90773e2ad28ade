"""Fixtures for the LLM tests: the small mapping space of tests/data/knobs.md, a fake
target on it (cycles from a closed form, always verified) so the real `solve()` loop runs in
milliseconds, and a loopback chat-completions server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from zomboss.knowledge import load_kb
from zomboss.mapping import KnobMapping, Space, space
from zomboss.program import Instr, Program
from zomboss.solvers import search
from zomboss.solvers.guides.base import SearchState, Simulated
from zomboss.solvers.space import build_pool
from zomboss.target import Evaluation, Mode
from zomboss.workload import Workload

DOC = Path(__file__).parents[1] / "data" / "knobs.md"
SHAPE = {"M": 32, "N": 16, "bias": 0}
KEY = "sk-test-SECRET-0123456789abcdef"


@pytest.fixture(scope="session")
def kb():
    return load_kb(DOC)


@pytest.fixture(scope="session")
def sp(kb) -> Space:
    return space(kb, "gemm")


def c0(sp: Space) -> KnobMapping:
    return sp.mapping({"loop": "hw", "order": "ij", "init": "zero", "tile": 1}, SHAPE)


def cycles_of(m: KnobMapping) -> int:
    """A closed-form 'simulator': bigger tiles and sw loops with unroll are faster."""
    tile, buf = m.int("tile"), m.int("buf")
    base = 10_000 // tile + 50 * buf
    if m.sym("loop") == "sw":
        base -= 20 if m.sym("unroll") == "true" else -30
    return max(base, 1)


def make_state(kb, sp: Space) -> SearchState:
    d = c0(sp)
    pool = build_pool(kb, "gemm", SHAPE, k=2, near=d)
    default = Simulated(
        d, cycles_of(d), {"compute": 1, "memory": 2, "stall": 0, "overhead": 0}, "candidate-0", None, None, 0.0
    )
    return SearchState(sp, dict(SHAPE), default, {}, pool.candidates())


@dataclass
class _Inst:
    workload: Workload
    params: dict[str, int]
    seed: int


class FakeTarget:
    """Enough of the Target protocol for `solve()` on the knobs.md space."""

    name = "fake"
    doc = DOC

    def __init__(self, kb) -> None:
        self._kb = kb
        self.evaluations = 0

    def kb(self, params: Any) -> Any:
        return self._kb

    def instance(self, wl: Workload, params: Any, seed: int = 0) -> _Inst:
        return _Inst(wl, dict(params), seed)

    def reference_mappings(self, wl: Workload, params: Any) -> dict[str, KnobMapping]:
        return {"library": c0(space(self._kb, "gemm"))}

    def lower(self, inst: _Inst, mapping: KnobMapping) -> Program:
        """One instruction per knob: distinct mappings are distinct programs here."""
        return Program("fake", tuple(Instr(k, (hash(str(v)),)) for k, v in mapping.as_dict().items()))

    def evaluate(self, inst: _Inst, mapping: KnobMapping, mode: Mode) -> Evaluation:
        self.evaluations += 1
        cyc = cycles_of(mapping)
        bd = {"compute": cyc // 2, "memory": cyc - cyc // 2, "stall": 0, "overhead": 0}
        ok = True if mode is Mode.VERIFIED else None
        return Evaluation("fake", inst.workload.id, mapping, mode, cyc, ok, bd, 10, 0.0, inst.seed)

    def bound(self, wl: Workload, params: Any, mapping: KnobMapping | None = None) -> int:
        return 1


@pytest.fixture
def fake(kb, monkeypatch) -> FakeTarget:
    monkeypatch.setattr(search, "config_key", lambda name, params: "fake-config")
    return FakeTarget(kb)


@pytest.fixture
def workload() -> Workload:
    return Workload("gemm_small", "gemm", dict(SHAPE))


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch) -> Iterator[None]:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ZOMBOSS_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    yield


class _Clock:
    """The `time` module as the openai client sees it in these tests: its retry waits are
    recorded in `waits` instead of slept (the loopback server keeps the real clock)."""

    def __init__(self, waits: list[float]) -> None:
        self.waits = waits

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@pytest.fixture(autouse=True)
def openai_waits(monkeypatch) -> list[float]:
    """The waits the openai client's own retries chose, in order (not slept)."""
    waits: list[float] = []
    openai = pytest.importorskip("openai")
    monkeypatch.setattr(openai._base_client, "time", _Clock(waits))
    return waits
