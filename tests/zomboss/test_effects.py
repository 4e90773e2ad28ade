"""The effect notation and its interpreter: families expand, effects parse into records that
never reach ASP, and `effects.apply` keeps sequential semantics while vectorising."""

from __future__ import annotations

import numpy as np
import pytest

from zomboss.archdoc import DocError, parse_doc
from zomboss.effects import Memories, apply
from zomboss.knowledge import compile_doc

DOC = """
```isa
param n = 8
memory a { rows: n, width: 4, type: int32 }
memory b { rows: n, width: 4, type: int8 }
layout w { width: 32, lo: 7..0, hi: 15..8 }
memory idx { rows: n, width: 1, type: u32 }
instr cp{k}(d: int 0..7, s: int 0..7, c: int 0..8) for k in 0..1
  unit u
  writes a[d : d + c]
  effect over i < c { a[d + i] = add(a[d + i], a[s + i]) }
instr acc(d: int 0..7, c: int 0..8)
  unit u
  effect over i < c, r in idx[0 : 2] as w { a[d] = add(a[d], b[r.lo]) }
instr nar(d: int 0..7)
  unit u
  effect { b[d] = cast(a[d], scale = 1, shift = 2, round = 1, sat = 1) }
```
"""


def _kb():
    return compile_doc(parse_doc(DOC, "t.md"), "t", {})


def test_families_expand_and_effects_stay_out_of_asp():
    kb = _kb()
    assert set(kb.instrs) == {"cp0", "cp1", "acc", "nar"} and kb.instrs["cp1"].family == "cp{k}"
    assert "effect" not in kb.asp and "add" not in kb.asp


def test_overlapping_reads_are_applied_in_order():
    kb = _kb()
    mem = Memories(kb)
    mem.arrays["a"][:, :] = np.arange(8)[:, None]
    env = {"d": 1, "s": 0, "c": 4, **kb.params}
    apply(mem, kb.instrs["cp0"].effects[0], env)  # a[i+1] += a[i], sequentially: a prefix sum
    assert mem.arrays["a"][:5, 0].tolist() == [0, 1, 3, 6, 10]


def test_repeated_targets_accumulate_and_rows_decode_through_layouts():
    kb = _kb()
    mem = Memories(kb)
    mem.arrays["idx"][:2, 0] = [3 | (9 << 8), 5]
    mem.arrays["b"][3] = 2
    mem.arrays["b"][5] = -1
    apply(mem, kb.instrs["acc"].effects[0], {"d": 0, "c": 3, **kb.params})  # 3 x (b[3] + b[5])
    assert mem.arrays["a"][0].tolist() == [3, 3, 3, 3]


@pytest.mark.parametrize(("v", "want"), [(6, 2), (10, 2), (14, 4), (-6, -2), (1000, 127), (-1000, -128)])
def test_cast_rounds_half_even_and_saturates(v, want):
    kb = _kb()
    mem = Memories(kb)
    mem.arrays["a"][2] = v
    apply(mem, kb.instrs["nar"].effects[0], {"d": 2, **kb.params})
    assert mem.arrays["b"][2, 0] == want


def test_bad_family_member_is_located():
    with pytest.raises(DocError, match="t.md:2:"):
        parse_doc("```isa\ninstr x{k}(a: int 0..1) for k, j in {(1, 2), (3)}\n  unit u\n```\n", "t.md")
