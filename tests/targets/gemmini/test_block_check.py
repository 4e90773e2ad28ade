"""The simulator checks each hardware loop's expansion with `check_block` (all commands at
once) and falls back to `Checker.step`: on random mappings, lowered and then randomly
broken, the verdict — legal with the same cycles, or refused with the same violations (rule,
values, line) — is the one stepping through every command gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zomboss.targets.gemmini import TARGET, simulator
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.simulator import simulate

from zomboss.errors import IllegalProgram, ZombossError
from zomboss.legality import check_block
from zomboss.mapping import iter_knob_edits, space
from zomboss.program import Instr, Program

CFG = GemminiConfig.default()
SPECS = (
    "matmul:M=48,N=64,K=80",
    "matmul:M=40,N=24,K=72,bias=1",
    "matmul:M=32,N=32,K=32,relu=1",
    "conv:N=1,H=6,W=6,C=20,K=24,R=3,S=3,pad=1",
    "conv:N=2,H=8,W=8,C=16,K=16,R=3,S=3,stride=2",
)


def outcome(program: Program, fast: bool) -> tuple[Any, ...]:
    """What the checked timing simulation says, with or without the block path."""
    with pytest.MonkeyPatch.context() as m:
        if not fast:
            m.setattr(simulator, "check_block", lambda checker, blk: False)
        try:
            r = simulate(program, CFG, None, functional=False, timing=True, check=True)
        except IllegalProgram as e:
            return ("illegal", [v.to_json() for v in e.violations])
        except ZombossError as e:
            return (type(e).__name__, str(e))
    return ("ok", r.cycles, r.counts)


@st.composite
def programs(draw: st.DrawFn) -> Program:
    """A random legal mapping's program (a walk of knob edits from the library's), with up
    to two operands of its configuration and loop instructions replaced by edge values or by
    another instruction's operands: often still legal, often refused inside an expansion."""
    wl = TARGET.workload(draw(st.sampled_from(SPECS)))
    inst = TARGET.instance(wl, {})
    sp = space(CFG.kb(), wl.op)
    m = TARGET.reference_mappings(wl, {})["library"]
    for _ in range(draw(st.integers(0, 4))):
        edits = list(iter_knob_edits(sp, m, wl.shape))
        name, value = edits[draw(st.integers(0, len(edits) - 1))]
        cand = sp.mapping({**m.as_dict(), name: value}, wl.shape)
        if not sp.violations(CFG.kb(), cand, wl.shape):
            m = cand
    instrs = list(TARGET.lower(inst, m).instrs)
    configs = [i for i, ins in enumerate(instrs) if ins.op.startswith(("config", "loop_"))]
    loads = [i for i in configs if instrs[i].op == "config_ld"]  # block stride, pixel repeats, ...
    for _ in range(draw(st.integers(0, 2))):
        i = draw(st.sampled_from(configs + loads * 4))
        ins = instrs[i]
        j = draw(st.integers(0, len(ins.args) - 1))
        old = ins.args[j]
        other = draw(st.sampled_from(instrs)).args
        choices = [0, 1, 2, 5, 8, 16, 0xFFFFFFFF, old + 1, old - 1, old * 2, old // 2, *other]
        instrs[i] = Instr(ins.op, (*ins.args[:j], draw(st.sampled_from(choices)), *ins.args[j + 1 :]), ins.line)
    outs = [i for i, ins in enumerate(instrs) if ins.op == "loop_ws_addrs_dc" and ins.args[1]]
    if outs and draw(st.booleans()):  # a later loop reads an earlier one's output: fenced or not
        c = draw(st.sampled_from(outs))
        later = [i for i, ins in enumerate(instrs) if ins.op == "loop_ws_addrs_ab" and i > c]
        if later:
            i = draw(st.sampled_from(later))
            instrs[i] = Instr("loop_ws_addrs_ab", (instrs[c].args[1], instrs[i].args[1]), instrs[i].line)
    return Program("gemmini", tuple(instrs))


@settings(max_examples=40, deadline=None)
@given(programs())
def test_block_path_gives_steps_verdict(program):
    assert outcome(program, True) == outcome(program, False)


def test_the_suite_defaults_take_the_block_path(monkeypatch):
    """Legal expansions never need the fallback (the speed of checked simulation)."""
    calls = []
    monkeypatch.setattr(simulator, "check_block", lambda ch, blk: calls.append(check_block(ch, blk)) or calls[-1])
    for spec in SPECS:
        wl = TARGET.workload(spec)
        program = TARGET.lower(TARGET.instance(wl, {}), TARGET.reference_mappings(wl, {})["library"])
        simulate(program, CFG, None, functional=False, timing=False, check=True)
    assert calls and all(calls)
