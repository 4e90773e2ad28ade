"""The CPU's cost of issuing a command, held to the code that issues it: the instructions the
exported C retires per command on Spike (scripts/fit_cpu_issue.py measures them; Spike's
`Cycles taken` counts retired instructions) are the model's per-command count, within 10 %, for
streams of three shapes in each export form, and the model charges the form the program is
exported in. The Spike test skips, with the reason, where ../shared/tools/spike or the RISC-V
cross compiler is absent."""

from __future__ import annotations

import pytest
from zomboss.targets.gemmini.export import c_source
from zomboss.targets.gemmini.issue import INSTRUCTIONS_PER_COMMAND, STRAIGHT_LIMIT, form_of, issue_cycles
from zomboss.targets.gemmini.presets import DEFAULT_PRESET, get_preset
from zomboss.targets.gemmini.simulator import simulate

from tests.support import SPIKE, load_script, spike_missing
from zomboss.target import get_target


def _script():
    return load_script("fit_cpu_issue")


@pytest.mark.skipif(spike_missing() is not None, reason=spike_missing() or "")
def test_the_per_command_cost_is_the_exported_codes_measured_instruction_count(tmp_path):
    fit = _script()
    shapes = (
        "matmul:M=52,N=48,K=80,bias=1,relu=1",  # ragged tiles, bias, ReLU
        "conv:N=1,H=8,W=8,C=16,K=32,R=3,S=3,stride=1,pad=1",  # 3x3 window
        "conv:N=1,H=8,W=8,C=64,K=16,R=1,S=1,stride=1,pad=0",  # pointwise
    )
    rows = fit.measure(SPIKE, fit.unpack(SPIKE, tmp_path / "spk"), tmp_path, shapes)
    assert {(r.shape, r.form) for r in rows} == {(s, f) for s in shapes for f in ("straight", "table")}
    assert not fit.off_rows(rows), [(r.shape, r.form, r.per_command) for r, _ in fit.off_rows(rows)]
    # the two forms really differ by an order of magnitude: one constant could not hold both
    assert INSTRUCTIONS_PER_COMMAND["table"] > 10 * INSTRUCTIONS_PER_COMMAND["straight"]


def test_off_rows_reports_a_row_more_than_ten_percent_away():
    fit = _script()
    near, far = fit.Row("s", "straight", 100, 230), fit.Row("t", "table", 100, 3000)
    assert [r for r, _ in fit.off_rows([near, far])] == [far]


@pytest.mark.parametrize("spec", ["matmul:M=64,N=48,K=80", "matmul:M=512,N=512,K=384"])
def test_the_model_charges_the_form_the_program_is_exported_in(spec, cfg):
    """A short CPU-issued stream is exported straight-line and charged the straight-line cost;
    one over STRAIGHT_LIMIT instructions is exported as a table and charged the table's."""
    t = get_target("gemmini")
    wl = t.workload(spec)
    inst = t.instance(wl, {})
    program = t.lower(inst, t.reference_mappings(wl, {})["exo"])
    form = form_of(len(program))
    assert form == ("straight" if len(program) <= STRAIGHT_LIMIT else "table")
    addrs = {k: v for k, v in inst.buffers.__dict__.items() if k != "scale_bits"}
    source = c_source(wl, program, addrs, inst.buffers.scale_bits)
    assert ("switch (*p++)" in source) == (form == "table")
    sim = simulate(program, cfg, functional=False, check=False)
    cpi = get_preset(DEFAULT_PRESET).cpu_cpi
    assert sim.stats["cpu_issue"] == pytest.approx(INSTRUCTIONS_PER_COMMAND[form] * cpi)
    assert issue_cycles(len(program), cpi) == sim.stats["cpu_issue"]


def test_the_docs_estimate_charges_the_measured_counts(cfg):
    """gemmini.md's cost estimate restates issue.py's figures as integer parameters (x100, at the
    default preset's CPI): the two must not drift apart."""
    params = cfg.kb().params
    cpi = get_preset(DEFAULT_PRESET).cpu_cpi
    assert params["cost_issue_x100"] == round(100 * INSTRUCTIONS_PER_COMMAND["straight"] * cpi)
    assert params["cost_issue_table_x100"] == round(100 * INSTRUCTIONS_PER_COMMAND["table"] * cpi)
    assert params["straight_limit"] == STRAIGHT_LIMIT
