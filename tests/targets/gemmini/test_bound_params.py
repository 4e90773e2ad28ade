"""gemmini.md's sound `cost bound` restates timing constants as integer `bound_*` parameters: each
must be the least value any preset the doc's mapping space simulates on (`presets.preset_for`:
firesim-f1-llc and firesim-f1-llc-current) uses, or the bound could exceed the simulated cycles
after a refit. These tests keep the parameters and `presets.py` / `issue.py` from drifting apart."""

from __future__ import annotations

import math

from zomboss.targets.gemmini.issue import INSTRUCTIONS_PER_COMMAND, STRAIGHT_LIMIT
from zomboss.targets.gemmini.presets import FIRESIM_F1_LLC, FIRESIM_F1_LLC_CURRENT, preset_for

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
