"""VTA from its doc: every rule's ok/bad programs agree across the Python checker, clingo and
the generated simulator; the reference's golden program (§7.3) decodes and computes what
the reference says; export round-trips; random legal mappings verify bit for bit."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from zomboss.targets.vta import export as X

from zomboss.errors import IllegalProgram, WorkloadError
from zomboss.knowledge.asp import program_facts
from zomboss.knowledge.query import asp_blind, check_program
from zomboss.legality import Checker
from zomboss.machine import Memories
from zomboss.mapping import space
from zomboss.program import parse_program
from zomboss.target import Mode, get_target
from zomboss.workload import Workload

T = get_target("vta")
KB = T.kb({})


def _rules() -> list[str]:
    return [r.id for r in KB.rules if r.patterns and not r.generated]


def _check(program) -> set[str]:
    ch = Checker(KB, record=True)
    found = ch.check(T.trace(program, {}))
    by_asp = {(v.rule, v.pos - 1) for v in check_program(KB, program_facts(KB, ch.events))}
    blind = {p - 1 for p in asp_blind(KB, ch.events)}
    assert {(v.rule, v.index) for v in found if not v.rule.startswith("isa.") and v.index not in blind} == by_asp
    return {v.rule for v in found}


@pytest.mark.parametrize("rule", _rules())
def test_rule_has_ok_and_bad_programs_that_checkers_and_simulator_agree_on(rule, tmp_path):
    for ok in (True, False):
        examples = [e for e in KB.examples if e.rule == rule and e.ok == ok]
        assert examples, f"{rule} has no {'ok' if ok else 'bad'} example"
        for e in examples:
            found = _check(parse_program(KB, e.text, str(e.loc)))
            path = tmp_path / "p.asm"
            path.write_text(e.text)
            if ok:
                assert found == set(), f"{e.loc}: {found}"
                assert T.simulate_file(path, {}).verified is None  # checked and timed
            else:
                assert rule in found, f"{e.loc}: raised {found}"
                with pytest.raises(IllegalProgram) as err:
                    T.simulate_file(path, {})
                assert rule in {v.rule for v in err.value.violations}


GOLDEN_73 = [  # reference §7.3: (hi, lo) words of the small golden program
    (0x0000000100010001, 0x0000001000000000), (0x0000000100010001, 0x0000000080000080),
    (0x0000000100010001, 0x0000000C00000140), (0, 0x0002000800200082), (0, 0x000200080020000A),
    (0x0002B00000000000, 0x0002000800200004), (0x0000900000000000, 0x0002000800200004),
    (0x007F800000000000, 0x0002000800200044), (0x0000000100010001, 0x0000001000000229), (0, 0x13),
]  # fmt: skip


def _golden_run(instrs) -> np.ndarray:
    mem = Memories(KB, {"dram": 0x4010})
    d = mem.arrays["dram"]
    d[0x1000:0x1004] = 0  # uop 0 = (dst 0, src 0, wgt 0)
    oc, ic = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    d[0x2000:0x2100] = (((3 * oc + 5 * ic) % 15) - 7).astype(np.int8).view(np.uint8).ravel()
    d[0x3000:0x3010] = (10 * (np.arange(16) - 8)).astype(np.int8).view(np.uint8)
    T.sim(KB).run(instrs, mem, check=True)
    return d[0x4000:0x4010].view(np.int8).copy()


def test_reference_golden_program_decodes_encodes_and_computes():
    instrs = [X.decode(KB, (hi << 64) | lo) for hi, lo in GOLDEN_73]
    assert [i.op for i in instrs] == ["LOAD_UOP", "LOAD_WGT", "LOAD_INP", "GEMM", "GEMM", "ALU", "ALU", "ALU",
                                      "STORE", "FINISH"]  # fmt: skip
    assert [X.encode(KB, i) for i in instrs] == [(hi << 64) | lo for hi, lo in GOLDEN_73]
    assert instrs[5].args[-3:] == (3, 1, 2)  # SHR, use_imm, imm 2
    assert _golden_run(instrs).tolist() == [77, 17, 0, 0, 25] * 3 + [77]
    # without the ALU ops the GEMM is the last writer: the store truncates (§3.7)
    g = instrs[4]
    no_alu = [*instrs[:4], type(g)(g.op, (1 | 8, *g.args[1:])), *instrs[8:]]
    assert _golden_run(no_alu).tolist() == [54, 70, 86, 102, 100] * 3 + [54]


def test_export_round_trips_through_the_native_encoding(tmp_path):
    wl = T.workload("dense_128")
    out = T.export(wl, tmp_path / "k.asm", {})
    program = T.lower(T.instance(wl, {}), T.reference_mappings(wl, {})["library"])
    assert X.read(KB, tmp_path / "k.asm.bin") == list(program.instrs)
    uops = np.frombuffer((tmp_path / "k.asm.uop.bin").read_bytes(), dtype="<u4")
    assert len(uops) == program.meta["uops"] and uops.size > 0
    side = json.loads((tmp_path / "k.asm.json").read_text())
    assert side["workload"] == "dense_128" and side["native"] == ["k.asm.bin", "k.asm.uop.bin"]
    res = T.simulate_file(out, {})
    assert (
        res.verified is True and res.cycles == T.evaluate(T.instance(wl, {}), program_mapping(wl), Mode.TIMING).cycles
    )


def program_mapping(wl):
    return T.reference_mappings(wl, {})["library"]


def test_a_missing_token_is_refused_and_a_wrong_result_is_caught(tmp_path):
    wl = T.workload("dense_128")
    inst = T.instance(wl, {})
    program = T.lower(inst, program_mapping(wl))
    i = next(k for k, x in enumerate(program.instrs) if x.op == "GEMM" and x.args[1] == 0)
    bad = list(program.instrs)
    bad[i] = type(bad[i])(bad[i].op, (bad[i].args[0] & ~1, *bad[i].args[1:]))  # drop its l2g pop
    path = tmp_path / "bad.asm"
    path.write_text("".join(x.text() + "\n" for x in bad))
    with pytest.raises(IllegalProgram) as err:
        T.simulate_file(path, {})
    assert "dep.balance" in {v.rule for v in err.value.violations}
    j = next(k for k, x in enumerate(program.instrs) if x.op == "ALU")
    wrong = list(program.instrs)
    wrong[j] = type(wrong[j])("ALU", (*wrong[j].args[:-1], wrong[j].args[-1] + 1))  # shift by 9, not 8
    from zomboss.program import Program

    run, ok = T._run(inst, Program("vta", tuple(wrong), program.meta), Mode.VERIFIED)
    assert ok is False and run.cycles > 0


@st.composite
def _conv_case(draw):
    c, k = draw(st.sampled_from([16, 32])), draw(st.sampled_from([16, 32, 48]))
    r = draw(st.sampled_from([1, 3]))
    h, w = draw(st.integers(3, 9)), draw(st.integers(3, 9))
    s, p = draw(st.sampled_from([1, 2])), (draw(st.sampled_from([0, 1])) if r == 3 else 0)
    shape = {"N": 1, "H": h, "W": w, "C": c, "K": k, "R": r, "S": r, "stride": s, "pad": p,
             "shift": draw(st.integers(0, 9)), "relu": draw(st.integers(0, 1)), "clip": draw(st.integers(0, 1))}  # fmt: skip
    ho, wo = (h + 2 * p - r) // s + 1, (w + 2 * p - r) // s + 1
    assume(ho >= 1 and wo >= 3)
    divs = lambda n: [d for d in range(1, n + 1) if n % d == 0]  # noqa: E731
    knobs = {"tile_b": 1, "tile_h": draw(st.sampled_from(divs(ho))), "tile_w": draw(st.sampled_from(divs(wo))),
             "tile_ci": draw(st.sampled_from(divs(c // 16))), "tile_co": draw(st.sampled_from(divs(k // 16))),
             "oc_nthread": draw(st.integers(1, 2)), "h_nthread": draw(st.integers(1, 2))}  # fmt: skip
    return Workload(f"conv2d:{sorted(shape.items())}", "conv2d", shape), knobs


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(_conv_case(), st.integers(0, 3))
def test_random_legal_mappings_equal_the_numpy_reference(case, seed):
    wl, knobs = case
    sp = space(KB, "conv2d")
    m = sp.mapping(knobs, wl.shape)
    assume(not sp.violations(KB, m, wl.shape))
    ev = T.evaluate(T.instance(wl, {}, seed), m, Mode.VERIFIED)
    assert ev.verified is True and sum(ev.breakdown.values()) == ev.cycles


@pytest.mark.parametrize(
    "spec",
    ["conv2d:H=8,W=8,C=3,K=16,R=3,S=3", "dense:M=1,N=1000,K=512", "conv2d:H=2,W=2,C=16,K=16,R=3,S=3"],
)
def test_a_shape_vta_cannot_run_is_refused_by_workload(spec):
    """At `workload()`, as every command and `zomboss compile` read it, not when it is built."""
    with pytest.raises(WorkloadError, match="channels must be multiples of 16 and the kernel must fit"):
        get_target("vta").workload(spec)
