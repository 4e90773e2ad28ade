"""Repetition in the notation: a `for i in lo..hi { ... }` clause inside an instruction, and
`all(i in lo..hi: e)` / `any(...)` in expressions (rules, constraints), each expanded when the
doc is read, so the KB, its ASP program and the simulator see the written-out form."""

from __future__ import annotations

import pytest

from zomboss.doc import DocError, parse_doc
from zomboss.knowledge import compile_doc
from zomboss.legality import check_program_text
from zomboss.machine import GenericSim
from zomboss.program import Instr

DOC = """
```isa
param n = 4
state tile[4] {{ rows: 0 }}
memory spad {{ rows: 64, width: 4, type: int8 }}
instr CFG(r: int 0..16)
  unit ctl
  for i in 0..3 {{
    sets tile[i].rows = r + i
  }}
  latency 1
instr LOADT(base: int 0..60)
  unit ld
  for i in 0..1 {{
    writes spad[base + 2 * i : base + 2 * i + 1]
  }}
  latency 1
rule cfg.fit on CFG "every tile's rows fit in 16": all(i in 0..3: r + i <= 16)
rule cfg.some on CFG "some tile is not empty": any(i in 0..3: r + i > {least})
{extra}
```
"""


def _kb(extra: str = "", least: int = 0):
    return compile_doc(parse_doc(DOC.format(extra=extra, least=least), "rep.md"), "rep", {})


def test_a_for_clause_writes_out_its_clauses_once_per_value():
    kb = _kb()
    cfg, load = kb.instrs["CFG"], kb.instrs["LOADT"]
    assert [(s.state, s.field) for s in cfg.sets] == [("tile", "rows")] * 4
    assert len(load.writes) == 2 and load.writes[1].memory == "spad"
    sim = GenericSim(kb)
    run = sim.run([Instr("CFG", (3,))], check=True)
    assert run.instructions == 1


def test_all_and_any_are_the_written_out_conjunction_and_disjunction():
    kb = _kb(least=15)
    bad = check_program_text(kb, "CFG 14\n", "p.asm", None, {})  # 14 + 3 > 16: the last tile does not fit
    assert [v.rule for v in bad.violations] == ["cfg.fit"]
    ok = check_program_text(kb, "CFG 13\n", "p.asm", None, {})  # 13..16 fit, and 13 + 3 > 15
    assert not ok.violations
    none = check_program_text(kb, "CFG 10\n", "p.asm", None, {})  # 10 + 3 = 13: no tile above 15
    assert [v.rule for v in none.violations] == ["cfg.some"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            "instr BAD(x: int 0..1)\n  unit u\n  for i in 0..1 {\n    latency 3\n  }",
            "repeats uses, reads, writes, sets",
        ),
        ("instr BAD(x: int 0..1)\n  unit u\n  for i in 3..1 {\n    reads spad[0 : 1]\n  }", "at most 1024 values"),
        ('rule r.wide on CFG "m": all(i in 0..100: r > i)', "at most 64 values"),
    ],
)
def test_a_repetition_out_of_bounds_or_of_the_wrong_clause_is_refused(extra, message):
    with pytest.raises(DocError, match=message):
        _kb(extra)


def test_a_for_clause_may_not_hide_a_family_variable():
    extra = "instr M{k}(x: int 0..1) for k in 0..1\n  unit u\n  for k in 0..1 {\n    reads spad[k : k + 1]\n  }"
    with pytest.raises(DocError, match="hides the family variable k"):
        _kb(extra)
