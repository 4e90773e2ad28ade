"""The ISA doc and the simulator agree: the doc's signatures are the contract's, the machine
is the doc's parameters and local-address layout, and the simulator refuses every `bad` example
(naming the rule) and runs every `ok` example."""

from __future__ import annotations

import pytest
from zomboss.targets.gemmini.asm import ACCUMULATE, IS_ACC, READ_FULL, operands, queues
from zomboss.targets.gemmini.config import DOC, GemminiConfig, overrides_of
from zomboss.targets.gemmini.simulator import simulate

from zomboss.errors import IllegalProgram
from zomboss.knowledge import load_kb
from zomboss.program import parse_program

from .conftest import CURRENT


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    return load_kb(DOC, use_cache=False)


def test_doc_signatures_are_the_contract(kb):
    assert {name: tuple(o.name for o in ins.operands) for name, ins in kb.instrs.items()} == operands()


def test_doc_units_match_the_queues(kb):
    unit = {0: "load", 1: "ex", 2: "store"}
    for name, ins in kb.instrs.items():
        q = queues()[name]
        assert ins.unit == (unit[q] if q is not None else ins.unit)
        if q is None:
            assert ins.unit in ("ctrl", "loop")


def test_the_machine_is_the_docs(kb):
    cfg = GemminiConfig.from_kb(kb)
    assert cfg == GemminiConfig.default() and cfg.overrides == ()
    for name in ("dim", "sp_rows", "acc_rows", "sp_bank_rows", "max_block_len", "max_block_len_acc", "half_sp_rows"):
        assert getattr(cfg, name) == kb.params[name]
    lay = kb.layouts["local_addr"].bits
    assert cfg.row_mask == kb.params["row_mask"] and (cfg.row_bits - 1, 0) == lay["row"]
    assert cfg.garbage_bit == lay["garbage_bit"][0] == cfg.row_bits
    # the flag bits sit at the same positions in every configuration
    assert tuple(1 << lay[f][0] for f in ("is_acc", "accumulate", "read_full")) == (IS_ACC, ACCUMULATE, READ_FULL)


def test_overridden_parameters_reach_the_machine(kb):
    small = load_kb(DOC, {"dim": 8, "sp_capacity_kib": 64}, use_cache=False)
    cfg = GemminiConfig.from_kb(small)
    assert (cfg.dim, cfg.sp_rows, cfg.max_block_len) == (8, 8192, 8)
    assert cfg.overrides == (("dim", 8), ("sp_capacity_kib", 64)) and cfg.kb().params == small.params
    wide = GemminiConfig.from_kb(load_kb(DOC, {"dim": 8}))  # 32768 rows: a 15-bit row field
    assert (wide.row_bits, wide.garbage_bit, wide.row_mask) == (15, 15, (1 << 15) - 1)
    assert overrides_of(load_kb(DOC, {"dim": 16})) == ()  # a default value is no override


def _examples():
    kb = load_kb(DOC)
    for e in kb.examples:
        yield pytest.param(e.rule, e.ok, e.text, str(e.loc), id=f"{e.rule}:{'ok' if e.ok else 'bad'}")


@pytest.mark.parametrize(("rule", "ok", "text", "loc"), list(_examples()))
def test_simulator_follows_every_doc_example(kb, cfg, rule, ok, text, loc):
    """On the current RTL's preset, which builds every feature the examples use (the default
    preset's RTL has no pixel repeats, for one)."""
    program = parse_program(kb, text, loc)
    if ok:
        simulate(program, cfg, None, preset=CURRENT)
    else:
        with pytest.raises(IllegalProgram) as e:
            simulate(program, cfg, None, preset=CURRENT)
        assert rule in {v.rule for v in e.value.violations}
        assert all(v.doc_loc.startswith(str(DOC)) or "gemmini.md" in v.doc_loc for v in e.value.violations)


def test_every_doc_rule_has_both_examples(kb):
    have = {(e.rule, e.ok) for e in kb.examples}
    rules = [r.id for r in kb.rules if r.patterns and not r.generated] + [h.id for h in kb.hazards]
    for r in rules:
        assert (r, True) in have and (r, False) in have, r
