"""The effect notation and its interpreter: families expand, effects parse into records that
never reach ASP, and `effects.apply` keeps sequential semantics while vectorising."""

from __future__ import annotations

import numpy as np
import pytest

from zomboss.doc import DocError, parse_doc
from zomboss.knowledge import compile_doc
from zomboss.machine import Memories, apply
from zomboss.program import Instr

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


# ---- views of tensors, split rows, byte-stepped views, scalar reads, fp32 casts, macros ----------

DOC2 = """
```isa
memory m { rows: 4, width: 4, type: int32 }
memory ext { external, type: int8 }
view m_e { of: m, rows: 1, cols: 1 }
view x32 { of: ext, rows: 1, cols: 1, type: int32, step: 1 }
view x8 { of: ext, rows: 1, cols: 1, type: int8 }
tensor t { rows: 1, cols: 3, type: int64 }
view t_e { of: t, rows: 1, cols: 1 }
instr latch(p: int 0..99, q: int 0..99, r: int 0..99)
  unit u
  effect { t[0] = pack(p, q, r) }
instr spread(d: int 0..3)
  unit u
  effect over i < 3 {
    let v = t_e[i]
    m_e[d * 4 + i] = fill(v + i)
  }
instr put32(a: int 0..64, b: int 0..64, v: int 0..65535, w: int 0..65535)
  unit u
  effect over k < 2 { x32[if k == 0 then a else b] = fill(if k == 0 then v else w) }
instr scale(d: int 0..3, bits: int 0..2147483647)
  unit u
  effect over i < 4 { m_e[d * 4 + i] = cast(x8[i], fscale = bits, round = 1, sat = 1, bits = 8, relu = 0) }
instr expand(n: int 0..9)
  unit u
  macro "toy.expand"
```
"""


def _kb2():
    return compile_doc(parse_doc(DOC2, "t2.md"), "t2", {})


def test_scalar_reads_see_what_an_earlier_instruction_left_in_a_tensor():
    from zomboss.machine import GenericSim
    from zomboss.program import Instr

    kb = _kb2()
    mem = Memories(kb, {"ext": 64})
    sim = GenericSim(kb, {"toy.expand": lambda: lambda ins, state: ()})
    sim.run([Instr("latch", (7, 8, 9)), Instr("spread", (2,))], mem, timing=False)
    assert mem.arrays["m"][2].tolist() == [7, 9, 11, 0]  # split row: element d*4+i is m[d][i]
    assert mem.arrays["t"].tolist() == [[7, 8, 9]]


def test_a_byte_stepped_view_writes_overlapping_elements_in_order():
    from zomboss.machine import views

    kb = _kb2()
    assert views(kb)["x32"].stride == 1 and views(kb)["x8"].stride == 1
    mem = Memories(kb, {"ext": 16})
    apply(mem, kb.instrs["put32"].effects[0], {"a": 0, "b": 2, "v": 0x1111, "w": 0x2222, **kb.params})
    want = np.zeros(16, np.uint8)
    want[0:4] = np.frombuffer(np.int32(0x1111).tobytes(), np.uint8)
    want[2:6] = np.frombuffer(np.int32(0x2222).tobytes(), np.uint8)  # the second write wins where they overlap
    assert mem.arrays["ext"].tolist() == want.tolist()


def test_fp32_scale_rounds_half_even_and_saturates_to_the_named_width():
    kb = _kb2()
    mem = Memories(kb, {"ext": 8})
    mem.arrays["ext"][:4] = np.array([3, 5, -3, 127], dtype=np.int8).view(np.uint8)
    half = int(np.float32(2.5).view(np.uint32))
    apply(mem, kb.instrs["scale"].effects[0], {"d": 1, "bits": half, **kb.params})
    assert mem.arrays["m"][1].tolist() == [8, 12, -8, 127]  # 7.5 -> 8, 12.5 -> 12, -7.5 -> -8, 317.5 -> 127


def test_a_declared_macro_needs_a_hook_and_its_expansion_runs():
    from zomboss.errors import ZombossError
    from zomboss.machine import GenericSim
    from zomboss.program import Instr

    kb = _kb2()
    with pytest.raises(ZombossError, match="no Python hook for macro"):
        GenericSim(kb)

    def hook(ins, state):
        return [Instr("latch", (ins.args[0], 0, 0)), Instr("spread", (0,))] if ins.op == "expand" else []

    mem = Memories(kb, {"ext": 8})
    run = GenericSim(kb, {"toy.expand": lambda: hook}).run([Instr("expand", (5,))], mem, timing=False)
    assert run.instructions == 3 and run.counts == {"expand": 1, "latch": 1, "spread": 1}
    assert mem.arrays["m"][0].tolist() == [5, 1, 2, 0]


GEMM = """
```isa
param n = 64
memory acc { rows: n, width: 16, type: int32 }
memory inp { rows: n, width: 16, type: int8 }
memory wgt { rows: 4, width: 256, type: int8 }
view acc_t { of: acc, rows: 1, cols: 16 }
view inp_t { of: inp, rows: 1, cols: 16 }
view wgt_t { of: wgt, rows: 16, cols: 16 }
instr gemm(c: int 0..1000000000)
  unit u
  effect over i < c, j < 4 { acc_t[i % n] = mac(acc_t[i % n], inp_t[(i + j) % n], wgt_t[j], bt = 1) }
memory out { rows: n, width: 16, type: int32 }
view out_t { of: out, rows: 1, cols: 16 }
instr spread(c: int 0..64)
  unit u
  effect over i < c { out_t[i] = mac(acc_t[i], inp_t[i], wgt_t[i % 4], bt = 1) }
instr fold(c: int 0..64)
  unit u
  effect over i < c { out_t[i % 8] = mac(acc_t[i], inp_t[(i + 3) % n], wgt_t[i % 4], bt = 1) }
```
"""


def test_an_effect_computed_in_chunks_equals_one_computed_at_once(monkeypatch):
    """A GEMM's points (each reading a 16x16 weight) accumulate into repeated targets, and
    distinct targets are written in one round: in chunks of a few points, the same result."""
    from zomboss.machine import effects

    kb = compile_doc(parse_doc(GEMM, "g.md"), "g", {})
    rng = np.random.default_rng(0)
    mems = []
    for chunk in (effects.CHUNK_VALUES, 3 * 256):
        monkeypatch.setattr(effects, "CHUNK_VALUES", chunk)
        mem = Memories(kb)
        mem.arrays["inp"][:] = (
            rng.integers(-128, 128, mem.arrays["inp"].shape, dtype=np.int8) if not mems else mems[0][0]
        )
        mem.arrays["wgt"][:] = (
            rng.integers(-128, 128, mem.arrays["wgt"].shape, dtype=np.int8) if not mems else mems[0][1]
        )
        inp, wgt = mem.arrays["inp"].copy(), mem.arrays["wgt"].copy()
        apply(mem, kb.instrs["gemm"].effects[0], {"c": 200, **kb.params})
        apply(mem, kb.instrs["spread"].effects[0], {"c": 64, **kb.params})  # distinct targets
        spread = mem.arrays["out"].copy()
        apply(mem, kb.instrs["fold"].effects[0], {"c": 64, **kb.params})  # each target written 8 times, in order
        mems.append((inp, wgt, mem.arrays["acc"].copy(), spread, mem.arrays["out"].copy()))
    for got, want in zip(mems[1][2:], mems[0][2:], strict=True):
        assert np.array_equal(got, want) and want.any()


def test_an_effect_beyond_the_values_an_instruction_may_compute_is_refused_at_once():
    import time

    from zomboss.machine.effects import MAX_VALUES
    from zomboss.machine.memories import EffectError

    kb = compile_doc(parse_doc(GEMM, "g.md"), "g", {})
    t0 = time.perf_counter()
    with pytest.raises(EffectError, match=f"more than the {MAX_VALUES:,} one instruction may"):
        apply(Memories(kb), kb.instrs["gemm"].effects[0], {"c": (1 << 24) // 4, **kb.params})
    assert time.perf_counter() - t0 < 10


def _mac_doc(dt: str) -> str:
    return f"""
```isa
param n = 64
memory acc {{ rows: n, width: 16, type: int32 }}
memory inp {{ rows: n, width: 16, type: {dt} }}
memory wgt {{ rows: 4, width: 256, type: {dt} }}
view acc_t {{ of: acc, rows: 1, cols: 16 }}
view inp_t {{ of: inp, rows: 1, cols: 16 }}
view wgt_t {{ of: wgt, rows: 16, cols: 16 }}
instr gemm_t(c: int 0..4096)
  unit u
  effect over i < c, j < 4 {{ acc_t[i % n] = mac(acc_t[i % n], inp_t[(i + j) % n], wgt_t[j], bt = 1) }}
instr gemm(c: int 0..4096)
  unit u
  effect over i < c, j < 4 {{ acc_t[i % n] = mac(acc_t[i % n], inp_t[(3 * i + j) % n], wgt_t[(i + j) % 4]) }}
```
"""


@pytest.mark.parametrize("dt", ["int8", "int16", "int32"])  # float32, float64 and int64 sums
@pytest.mark.parametrize("instr", ["gemm_t", "gemm"])
@pytest.mark.parametrize("c", [64, 640, 200])  # every target 4, 40 times; 200: targets 3 or 4 times (irregular)
def test_an_accumulating_mac_summed_per_target_equals_one_product_per_point(monkeypatch, dt, instr, c):
    """The fast form of `dst = mac(dst, x, y)` (points sorted by target, products summed in a
    batched matmul) against the general one (a product per point, scatter-added), with values
    that wrap the int32 accumulator, and against NumPy."""
    from zomboss.machine import effects

    kb = compile_doc(parse_doc(_mac_doc(dt), "g.md"), "g", {})
    info = np.iinfo(dt)
    got, took = [], []
    real = effects.accumulate_mac

    def fast_form(*a):
        took.append(real(*a))
        return took[-1]

    for fast in (True, False):
        monkeypatch.setattr(effects, "accumulate_mac", fast_form if fast else lambda *a: False)
        mem = Memories(kb)
        r = np.random.default_rng(c)
        for name in ("inp", "wgt"):
            mem.arrays[name][:] = r.integers(info.min, info.max, mem.arrays[name].shape, dtype=dt, endpoint=True)
        mem.arrays["acc"][:] = r.integers(-(2**31), 2**31 - 1, mem.arrays["acc"].shape, dtype=np.int32)
        start = mem.arrays["acc"].copy()
        apply(mem, kb.instrs[instr].effects[0], {"c": c, **kb.params})
        got.append(mem.arrays["acc"].copy())
    assert np.array_equal(got[0], got[1])
    inp = mem.arrays["inp"].astype(np.int64)
    wgt = mem.arrays["wgt"].astype(np.int64).reshape(4, 16, 16)
    want = start.astype(np.int64)
    for i in range(c):
        for j in range(4):
            x = inp[(i + j) % 64] if instr == "gemm_t" else inp[(3 * i + j) % 64]
            want[i % 64] += wgt[j] @ x if instr == "gemm_t" else x @ wgt[(i + j) % 4]
    assert np.array_equal(got[0], want.astype(np.int32))
    assert took == [c != 200]  # the fast form where every target has as many points, else the general one


TYPED = """
```isa
memory buf { rows: 4, width: 16, type: int8 }
view buf_w { of: buf, rows: 1, cols: 1, type: int32 }
view buf_b { of: buf, rows: 1, cols: 1 }
instr PUT(i: int 0..15, v: int 0..0xffffff)
  unit u
  effect { buf_w[i] = fill(v) }
instr DOUBLE(n: int 0..64)
  unit u
  effect over k < n { buf_b[k] = add(buf_b[k], buf_b[k]) }
```
"""


def test_an_on_chip_memory_of_bytes_is_read_and_written_through_views_of_other_types():
    """An int32 result in a row of bytes: the int32 view and the byte view share storage
    (little-endian), each write seen by the other."""
    from zomboss.machine import GenericSim

    kb = compile_doc(parse_doc(TYPED, "typed.md"), "typed", {})
    mem = Memories(kb)
    GenericSim(kb).run([Instr("PUT", (1, 0x030201)), Instr("DOUBLE", (8,)), Instr("PUT", (2, 7))], mem)
    row0 = mem.arrays["buf"][0]
    assert row0[:12].tolist() == [0, 0, 0, 0, 2, 4, 6, 0, 7, 0, 0, 0]
    assert mem.arrays["buf"].view(np.int32)[0, 1] == 0x060402


@pytest.mark.parametrize(
    ("view", "message"),
    [
        (
            "view bad { of: buf, rows: 1, cols: 3, type: int32 }",
            r"an element of 1 x 3 int32 \(12 bytes\) must divide a row",
        ),
        (
            "view bad { of: buf, rows: 1, cols: 1, type: bf16 }",
            "a view may change the type of a memory of plain numbers only",
        ),
    ],
)
def test_a_typed_view_that_does_not_tile_a_row_of_plain_numbers_is_refused(view, message):
    from zomboss.errors import ZombossError
    from zomboss.machine import views

    kb = compile_doc(parse_doc(TYPED.replace("view buf_b", view + "\nview buf_b"), "typed.md"), "typed", {})
    with pytest.raises(ZombossError, match=message):
        views(kb)
