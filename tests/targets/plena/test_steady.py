"""Steady-state extrapolation in PLENA's timing-only runs: what it skips, that it agrees with
full simulation (hand-written loops, every suite default, random legal mappings of every op
family), that it never reorders two candidates more than 2% apart, and that functional and
checked runs still execute every instruction."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from zomboss.targets.plena import TARGET
from zomboss.targets.plena.asm import parse_program
from zomboss.targets.plena.builder import structure
from zomboss.targets.plena.run import PlenaRun
from zomboss.targets.plena.simulator import simulate

from zomboss.mapping import KnobMapping, space
from zomboss.program import Loop, Program
from zomboss.target import Mode

KB = TARGET.kb({})
CFG = TARGET.config({})
TOLERANCE = 0.01  # extrapolated cycles within 1% of the full run's


def both(program: Program) -> tuple[PlenaRun, PlenaRun]:
    """(full, extrapolated) timing-only runs."""
    kw = {"check": False, "functional": False}
    return simulate(program, CFG, **kw), simulate(program, CFG, extrapolate=True, **kw)


def error(full: PlenaRun, ext: PlenaRun) -> float:
    return max(abs(ext.cycles[m] - full.cycles[m]) / full.cycles[m] for m in full.cycles)


def assert_same_run(full: PlenaRun, ext: PlenaRun) -> None:
    """Alike iterations cost the same: the lowering's programs extrapolate exactly."""
    assert ext.cycles == full.cycles and ext.counts == full.counts and ext.breakdown == full.breakdown
    assert (ext.instructions, ext.hbm_read_bytes, ext.hbm_write_bytes) == (
        full.instructions,
        full.hbm_read_bytes,
        full.hbm_write_bytes,
    )
    assert (ext.gp, ext.a, dict(ext.csr)) == (full.gp, full.a, dict(full.csr))


# ---- hand-written loops ------------------------------------------------------------------------

STRIDED = """
S_ADDI_INT gp1, gp0, 0
C_SET_ADDR_REG a1, gp0, gp1
S_ADDI_INT gp3, gp0, {start}
S_ADDI_INT gp4, gp0, 0
C_LOOP_START gp2, 300
H_PREFETCH_V gp4, gp3, a1, 0, 0
S_ADDI_INT gp3, gp3, {stride}
V_ADD_VV gp5, gp4, gp4, 0
C_LOOP_END gp2
"""


@pytest.mark.parametrize(("start", "stride", "period"), [(0, 64, 1), (0, 32, 2), (16, 16, 4)])
def test_a_strided_dma_loop_extrapolates_once_its_alignment_repeats(start: int, stride: int, period: int) -> None:
    """A DMA's cost depends on its start address mod 64 bytes; the alignment phase counter
    makes the detector wait for a period over which the residues repeat."""
    full, ext = both(parse_program(KB, STRIDED.format(start=start, stride=stride), "t.asm"))
    assert_same_run(full, ext)
    assert ext.steady is not None and ext.steady["extrapolated"] == 1 and ext.steady["periods"] == {str(period): 1}
    assert full.steady is None


def test_a_loop_whose_alignment_never_repeats_within_the_bound_is_simulated_in_full() -> None:
    full, ext = both(parse_program(KB, STRIDED.format(start=0, stride=8), "t.asm"))  # period 8 > max_period
    assert_same_run(full, ext)
    assert ext.steady is not None and ext.steady["fallbacks"] == 1 and ext.steady["skipped_iterations"] == 0


NESTED = """
S_ADDI_INT gp4, gp0, 0
C_LOOP_START gp1, 40
S_ADDI_INT gp5, gp4, 0
C_LOOP_START gp2, 300
V_ADD_VV gp5, gp5, gp5, 0
V_MUL_VV gp6, gp5, gp5, 0
S_ADDI_INT gp5, gp5, 64
C_LOOP_END gp2
S_ADDI_INT gp4, gp4, 128
C_LOOP_END gp1
"""


def test_nested_loops_extrapolate_at_every_level() -> None:
    full, ext = both(parse_program(KB, NESTED, "t.asm"))
    assert_same_run(full, ext)
    assert ext.steady is not None and ext.steady["runs"] >= 2 and ext.steady["extrapolated"] >= 2
    assert ext.steady["simulated_iterations"] < full.instructions // 100


@pytest.mark.parametrize("op", ["S_ST_INT gp4, gp0, 3", "S_LD_INT gp4, gp0, 3", "S_ADDI_INT gp2, gp2, 0"])
def test_loops_that_touch_state_beyond_the_registers_run_in_full(op: str) -> None:
    """INT SRAM contents (which a later load could turn into an address) and a written loop
    counter are state the linear registers do not carry: such loops are not extrapolated."""
    asm = f"C_LOOP_START gp2, 600\nS_ADDI_INT gp3, gp3, 64\n{op}\nC_LOOP_END gp2\n"
    full, ext = both(parse_program(KB, asm, "t.asm"))
    assert ext.cycles == full.cycles and ext.steady is not None and ext.steady["runs"] == 0


def test_the_loop_guard_still_counts_every_instruction(config_for) -> None:
    from zomboss.errors import IllegalProgram

    cfg = config_for({"max_loop_instructions": 2000})
    asm = "C_LOOP_START gp1, 2\nC_LOOP_START gp2, 1200\nS_ADDI_INT gp3, gp3, 1\nC_LOOP_END gp2\nC_LOOP_END gp1\n"
    program = parse_program(cfg.kb, asm, "t.asm")
    for extrapolate in (False, True):
        with pytest.raises(IllegalProgram, match="max_loop_instructions"):
            simulate(program, cfg, check=False, functional=False, extrapolate=extrapolate)


def test_functional_and_checked_runs_execute_every_instruction() -> None:
    wl = TARGET.workload("rope_128x2048")
    inst, lib = TARGET.instance(wl, {}), TARGET.reference_mappings(wl, {})["library"]
    timing = TARGET.evaluate(inst, lib, Mode.TIMING)
    assert timing.report["steady"]["skipped_iterations"] > 0 and timing.report["verify"] == "none"
    checked = TARGET.evaluate(inst, lib, Mode.CHECKED)
    assert "steady" not in checked.report and checked.cycles == timing.cycles
    program = TARGET.lower(inst, lib)
    assert simulate(program, CFG, functional=True, check=False, extrapolate=True).steady is None


def test_full_simulation_can_be_asked_for() -> None:
    wl = TARGET.workload("lin_60m_q")
    inst, lib = TARGET.instance(wl, {}), TARGET.reference_mappings(wl, {})["library"]
    assert "steady" not in TARGET.evaluate(inst, lib, Mode.TIMING, extrapolate=False).report
    assert "steady" in TARGET.evaluate(inst, lib, Mode.TIMING).report


def test_the_lowerings_structure_describes_only_its_own_instructions() -> None:
    wl = TARGET.workload("ffn_64x64x128")
    program = TARGET.lower(TARGET.instance(wl, {}), TARGET.reference_mappings(wl, {})["library"])
    known = structure(program)
    assert known is not None and known.ops == {i.op for i in program.instrs}
    assert any(isinstance(it, Loop) for it in known.nest)
    rebuilt = Program("plena", program.instrs[:-1], program.meta)  # a mutation keeping the meta
    assert structure(rebuilt) is None


# ---- every suite default -----------------------------------------------------------------------

QUICK = ("lin_135m_q", "lin_1b_q", "rms_64x4096", "sm_16x1024", "ffn_16x128x256", "attn_256", "rope_128x2048")


def _default_program(wid: str) -> Program:
    wl = TARGET.workload(wid)
    return TARGET.lower(TARGET.instance(wl, {}), TARGET.reference_mappings(wl, {})["library"])


@pytest.mark.parametrize("wid", QUICK)
def test_defaults_extrapolate_exactly(wid: str) -> None:
    full, ext = both(_default_program(wid))
    assert_same_run(full, ext)
    assert ext.steady is not None and ext.steady["skipped_iterations"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("wid", [w.id for w in TARGET.suite() if w.id not in QUICK])
def test_every_default_extrapolates_exactly(wid: str) -> None:
    full, ext = both(_default_program(wid))
    assert_same_run(full, ext)


# ---- random legal mappings -----------------------------------------------------------------------

SPECS = {  # shapes whose loops are long enough to extrapolate
    "linear": (
        "linear:M=4,K=512,N=256",
        "linear:M=16,K=320,N=128",
        "linear:M=68,K=512,N=256",
        "linear:M=128,K=128,N=128",
    ),
    "rmsnorm": ("rmsnorm:rows=4,hidden=1024", "rmsnorm:rows=16,hidden=192", "rmsnorm:rows=64,hidden=1024"),
    "softmax": ("softmax:rows=8,cols=512", "softmax:rows=64,cols=256", "softmax:rows=68,cols=64"),
    "ffn": ("ffn:rows=4,hidden=192,inter=256", "ffn:rows=16,hidden=64,inter=128", "ffn:rows=32,hidden=192,inter=256"),
    "attention": ("attention:sq=128,skv=256", "attention:sq=16,skv=512", "attention:sq=256,skv=256,causal=1"),
    "rope": ("rope:rows=16,head_dim=128", "rope:rows=64,head_dim=512", "rope:rows=16,head_dim=512"),
}
SHAPES = {op: st.sampled_from(specs) for op, specs in SPECS.items()}


def _draw_mapping(data: st.DataObject, op: str, shape: dict[str, int]) -> KnobMapping:
    sp = space(KB, op)
    vals = {
        k.name: data.draw(st.sampled_from(k.values)) if k.values else data.draw(st.integers(1, 8)) for k in sp.knobs
    }
    m = sp.mapping(vals, shape)
    assume(sp.violations(KB, m, shape) == [])
    return m


@pytest.mark.parametrize("op", sorted(SHAPES))
@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_random_legal_mappings_extrapolate_within_one_percent(op: str, data: st.DataObject) -> None:
    wl = TARGET.workload(data.draw(SHAPES[op], label="workload"))
    program = TARGET.lower(TARGET.instance(wl, {}), _draw_mapping(data, op, dict(wl.shape)))
    full, ext = both(program)
    assert error(full, ext) < TOLERANCE
    assert ext.counts == full.counts and ext.instructions == full.instructions


@pytest.mark.parametrize("op", sorted(SHAPES))
@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_extrapolation_never_reorders_candidates_more_than_two_percent_apart(op: str, data: st.DataObject) -> None:
    wl = TARGET.workload(data.draw(SHAPES[op], label="workload"))
    inst = TARGET.instance(wl, {})
    a, b = (both(TARGET.lower(inst, _draw_mapping(data, op, dict(wl.shape)))) for _ in range(2))
    fa, fb = a[0].cycles["rtl"], b[0].cycles["rtl"]
    if abs(fa - fb) > 0.02 * min(fa, fb):
        assert (fa < fb) == (a[1].cycles["rtl"] < b[1].cycles["rtl"])


# ---- lazily built nests (large linears) ------------------------------------------------------------


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_a_lazily_built_linear_is_the_flat_one(data: st.DataObject) -> None:
    """Above LAZY_STATIC the linear lowering keeps its nest lazily (`program.Loop`): the same
    instruction stream, and extrapolated cycles within 1% of the flat program's full run."""
    from zomboss.targets.plena import lowering

    wl = TARGET.workload(data.draw(SHAPES["linear"], label="workload"))
    m = _draw_mapping(data, "linear", dict(wl.shape))
    flat = lowering.lower(KB, m, wl).program
    old, lowering.LAZY_STATIC = lowering.LAZY_STATIC, 0
    try:
        lazy = lowering.lower(KB, m, wl).program
    finally:
        lowering.LAZY_STATIC = old
    assert lazy.nest is not None and (lazy.digest(), len(lazy)) == (flat.digest(), len(flat))
    full = simulate(flat, CFG, check=False, functional=False)
    ext = simulate(lazy, CFG, check=False, functional=False, extrapolate=True)
    assert error(full, ext) < TOLERANCE and ext.instructions == full.instructions
