"""gemmini.md's sound `cost bound` restates timing constants as integer `bound_*` parameters: each
must be the least value any preset the doc's mapping space simulates on (`presets.preset_for`:
firesim-f1-llc and firesim-f1-llc-current) uses, or the bound could exceed the simulated cycles
after a refit. These tests keep the parameters and `presets.py` / `issue.py` from drifting apart."""

from __future__ import annotations

import math
import random

import pytest
from zomboss.targets.gemmini.issue import INSTRUCTIONS_PER_COMMAND, STRAIGHT_LIMIT
from zomboss.targets.gemmini.presets import FIRESIM_F1_LLC, FIRESIM_F1_LLC_CURRENT, preset_for

from tests.random_mappings import random_mapping
from zomboss.mapping import space
from zomboss.target import get_target

PRESETS = (FIRESIM_F1_LLC, FIRESIM_F1_LLC_CURRENT)


def _least(value) -> float:  # noqa: ANN001
    return min(value(p) for p in PRESETS)


def test_the_bound_covers_every_preset_the_doc_can_select(cfg):
    """The two presets are those `preset_for` picks for the doc's own feature parameters and for
    the current RTL's: a third one would need its constants in the minima below."""
    params = cfg.kb().params
    assert preset_for(params) is FIRESIM_F1_LLC
    assert preset_for({k: 1 for k in FIRESIM_F1_LLC.rtl.kb_params}) is FIRESIM_F1_LLC_CURRENT


def test_the_bound_params_are_the_presets_constants(cfg):
    params = cfg.kb().params
    dim = params["dim"]
    expected = {
        "bound_overhead": _least(lambda p: p.kernel_overhead),
        "bound_rd_latency": _least(lambda p: p.rd_latency),
        "bound_wr_latency": _least(lambda p: p.wr_latency),
        "bound_drain": _least(lambda p: p.array_latency),
        "bound_store": _least(lambda p: p.store_fixed_acc),
        "bound_ld_entries": _least(lambda p: p.max_rd_inflight // dim + 1),
        "bound_ld_hold": _least(lambda p: p.rd_latency + p.spad_write_latency),
    }
    for name, value in expected.items():
        assert params[name] == math.floor(value), name
    # bandwidths: tenths of a byte per cycle, rounded down (a slower channel only lowers the bound)
    assert params["bound_rd_x10"] == math.floor(10 * _least(lambda p: p.rd_bytes_per_cycle) + 1e-9)
    assert params["bound_wr_x10"] == math.floor(10 * _least(lambda p: p.wr_bytes_per_cycle) + 1e-9)
    assert params["beat_bytes"] == min(p.beat_bytes for p in PRESETS)


def test_the_bound_charges_the_measured_issue_cost(cfg):
    """CPU cycles per command, x100 rounded down: issue.py's measured instructions per command x
    the presets' CPI, for each export form; the form's threshold is issue.py's."""
    params = cfg.kb().params
    for form, name in (("straight", "bound_issue_x100"), ("table", "bound_issue_table_x100")):
        least = _least(lambda p, f=form: 100 * INSTRUCTIONS_PER_COMMAND[f] * p.cpu_cpi)  # type: ignore[misc]
        assert params[name] == math.floor(least + 1e-9), name
        assert params[name] <= least + 1e-9, name
    assert params["straight_limit"] == STRAIGHT_LIMIT


# With a prohibitive table cost and no straight-line form, the bound is the CPU-issue chain alone:
# bound_overhead + (the bound's instruction floor) x 10**6
ISSUE_ONLY = {"bound_issue_table_x100": 10**8, "straight_limit": 0}


@pytest.mark.parametrize("spec", ["matmul:M=37,N=50,K=71,bias=1", "conv:N=1,H=15,W=15,C=3,K=20,R=3,S=3,stride=2,pad=1"])
def test_the_bounds_instruction_floor_is_at_most_the_lowered_program(spec):
    """The bound charges a table's issue cost once its floor on the unrolled stream's CPU-issued
    instructions exceeds straight_limit, which is sound only if the floor never exceeds the
    program's length (the slow property test rarely reaches a table: its shapes are small)."""
    t = get_target("gemmini")
    wl = t.workload(spec)
    sp = space(t.kb(ISSUE_ONLY), wl.op)
    rng = random.Random(spec)
    checked = 0
    for _ in range(200):
        m = random_mapping(t, wl, rng.randint(0, 10_000), [rng.randint(-3, 3) for _ in range(16)], within=50.0)
        if m is None or m.get("loop") != "sw":
            continue
        bound = sp.cost("bound", m, wl.shape)
        assert bound is not None
        floor = (bound - sp.params["bound_overhead"]) // 10**6
        assert 0 < floor <= len(t.lower(t.instance(wl, {}, 0), m)), m.key()
        checked += 1
        if checked == 4:
            break
    assert checked == 4
