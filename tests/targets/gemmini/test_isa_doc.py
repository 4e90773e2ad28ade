"""The ISA doc and the simulator agree: the doc's signatures are the contract's, its parameters
are the simulator's defaults, and the simulator refuses every `bad` example (naming the rule)
and runs every `ok` example."""

from __future__ import annotations

import pytest
from zomboss.targets.gemmini.config import DEFAULT_PARAMS, GemminiConfig
from zomboss.targets.gemmini.isa import OPERANDS, QUEUE
from zomboss.targets.gemmini.simulator import DOC, simulate

from zomboss.errors import IllegalProgram
from zomboss.knowledge import load_kb
from zomboss.legality import parse_program


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    return load_kb(DOC, use_cache=False)


def test_doc_signatures_are_the_contract(kb):
    assert {name: tuple(o.name for o in ins.operands) for name, ins in kb.instrs.items()} == OPERANDS


def test_doc_units_match_the_queues(kb):
    unit = {0: "load", 1: "ex", 2: "store"}
    for name, ins in kb.instrs.items():
        q = QUEUE[name]
        assert ins.unit == (unit[q] if q is not None else ins.unit)
        if q is None:
            assert ins.unit in ("ctrl", "loop")


def test_doc_parameters_are_the_simulator_defaults(kb):
    for k, v in DEFAULT_PARAMS.items():
        assert kb.params[k] == v
    cfg = GemminiConfig.from_params(kb.params)
    assert cfg == GemminiConfig()
    assert (cfg.max_block_len, cfg.max_block_len_acc) == (kb.params["max_block_len"], kb.params["max_block_len_acc"])
    assert (cfg.sp_bank_rows, cfg.acc_rows) == (kb.params["sp_bank_rows"], kb.params["acc_rows"])


def test_overridden_parameters_reach_the_simulator(kb):
    small = load_kb(DOC, {"dim": 8, "sp_capacity_kib": 64}, use_cache=False)
    cfg = GemminiConfig.from_params(small.params)
    assert (cfg.dim, cfg.sp_rows, cfg.max_block_len) == (8, 8192, 8)


def _examples():
    kb = load_kb(DOC)
    for e in kb.examples:
        yield pytest.param(e.rule, e.ok, e.text, str(e.loc), id=f"{e.rule}:{'ok' if e.ok else 'bad'}")


@pytest.mark.parametrize(("rule", "ok", "text", "loc"), list(_examples()))
def test_simulator_follows_every_doc_example(kb, cfg, rule, ok, text, loc):
    program = parse_program(kb, text, loc)
    if ok:
        simulate(program, cfg, None)
    else:
        with pytest.raises(IllegalProgram) as e:
            simulate(program, cfg, None)
        assert rule in {v.rule for v in e.value.violations}
        assert all(v.doc_loc.startswith(str(DOC)) or "gemmini.md" in v.doc_loc for v in e.value.violations)


def test_every_doc_rule_has_both_examples(kb):
    have = {(e.rule, e.ok) for e in kb.examples}
    rules = [r.id for r in kb.rules if r.patterns and not r.id.endswith(".range")] + [h.id for h in kb.hazards]
    for r in rules:
        assert (r, True) in have and (r, False) in have, r
