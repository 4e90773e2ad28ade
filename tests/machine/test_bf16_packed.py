"""`bf16_packed`, the 2-byte BF16 element type (tests/data/bf16_packed.md): its memories and
views take 2 bytes an element, a store rounds to nearest even exactly as `bf16_round` (and
ml_dtypes' bfloat16) does and a load gives the stored value back, on chip, through a view over
a row of bytes and in a byte-addressed memory; byte and BF16 views of one row see each other's
writes; and effects compute on it bit for bit as on the float32-held `bf16`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zomboss.doc import parse_doc
from zomboss.errors import ZombossError
from zomboss.knowledge import compile_doc
from zomboss.machine import GenericSim, Memories, apply, bf16_bits, bf16_from_bits, bf16_round, views
from zomboss.machine.memories import EffectError
from zomboss.program import Instr

# a signalling NaN widened to float64, a product past float32's range: IEEE results, not faults
pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in cast:RuntimeWarning")

DOC = Path(__file__).parents[1] / "data" / "bf16_packed.md"
KB = compile_doc(parse_doc(DOC.read_text(), str(DOC)), "bf16_packed", {})

# float32 bit patterns: anything, plus the cases rounding gets wrong first — ties (low half
# 0x8000) and their neighbours, subnormals, infinities, NaNs with any payload, values that
# round up to infinity
_HIGH = st.integers(0, 0xFFFF)
BITS = st.one_of(
    st.integers(0, 2**32 - 1),
    st.builds(lambda h, lo: h << 16 | lo, _HIGH, st.sampled_from([0x8000, 0x7FFF, 0x8001, 0, 0xFFFF])),
    st.builds(lambda s, m: s << 31 | m, st.integers(0, 1), st.integers(0, 0x007FFFFF)),  # subnormals
    st.builds(lambda s, m: s << 31 | 0x7F800000 | m, st.integers(0, 1), st.integers(0, 0x007FFFFF)),  # inf, NaN
    st.builds(lambda s, lo: s << 31 | 0x7F7F0000 | lo, st.integers(0, 1), st.integers(0x8000, 0xFFFF)),
)
ROW = st.lists(BITS, min_size=8, max_size=8).map(lambda b: np.array(b, dtype=np.uint32).view(np.float32))


def _run(mem: Memories, op: str, **args: int) -> None:
    for eff in KB.instrs[op].effects:
        apply(mem, eff, args)


def _same_bf16(got: np.ndarray, want: np.ndarray) -> None:
    """16-bit patterns equal, except that a NaN need only be a NaN of the same sign."""
    got, want = np.asarray(got, np.uint16), np.asarray(want, np.uint16)
    nan = (want & 0x7F80 == 0x7F80) & (want & 0x7F != 0)
    assert np.array_equal(got[~nan], want[~nan]), (got, want)
    assert ((got[nan] & 0x7F80 == 0x7F80) & (got[nan] & 0x7F != 0) & (got[nan] >> 15 == want[nan] >> 15)).all()


def test_memories_and_views_take_two_bytes_an_element() -> None:
    """The byte size, the capacity of a view over bytes, and the bytes a view covers."""
    mem = Memories(KB, {"dram": 40})
    v = views(KB)
    assert mem.arrays["vb"].dtype == np.uint16 and mem.arrays["vb"].nbytes == 8 * 8 * 2
    assert mem.arrays["vf"].nbytes == 8 * 8 * 4  # the float32-held bf16 is unchanged
    assert (v["vb"].elem_bytes, v["buf_bf"].elem_bytes, v["dram_bf"].elem_bytes) == (16, 16, 16)
    assert v["buf_h"].count == 4 * 16 // 2 and v["buf_bf"].count == 4  # a 16-byte row holds 8 BF16
    assert v["vb_b"].count == 8  # a row of 8 BF16 is 16 bytes: one 16-byte element
    _run(mem, "ST_D", i=1, s=0)  # dram of 40 bytes holds elements 0 and 1 (bytes 0..31)
    with pytest.raises(EffectError, match=r"dram_bf\[2\] is outside dram \(2 elements"):
        _run(mem, "ST_D", i=2, s=0)


@pytest.mark.parametrize(
    ("store", "load", "stored"),
    [
        ("ST_V", "LD_V", lambda mem: mem.arrays["vb"][3]),
        ("ST_BUF", "LD_BUF", lambda mem: mem.arrays["buf"][3].view("<u2")),
        ("ST_D", "LD_D", lambda mem: mem.arrays["dram"][48:64].view("<u2")),
    ],
    ids=["on_chip", "view_of_bytes", "external"],
)
@settings(max_examples=150, deadline=None)
@given(x=ROW)
def test_a_store_rounds_to_nearest_even_and_a_load_gives_the_bf16_value(store, load, stored, x) -> None:
    """Through an effect: float32 in, BF16 bits stored (little-endian in bytes), the value out."""
    mem = Memories(KB, {"dram": 64})
    mem.arrays["src"][0] = x
    _run(mem, store, **({"i": 3} if store == "ST_D" else {"d": 3}), s=0)
    want = bf16_bits(x)
    _same_bf16(stored(mem), want)
    _run(mem, load, **({"i": 3} if load == "LD_D" else {"s": 3}), d=1)
    got = mem.arrays["src"][1]
    ok = ~np.isnan(x)
    assert got[ok].tobytes() == bf16_round(x)[ok].tobytes() == bf16_from_bits(want)[ok].tobytes()
    assert np.isnan(got[~ok]).all() and (np.signbit(got[~ok]) == np.signbit(x[~ok])).all()


@settings(max_examples=150, deadline=None)
@given(x=ROW)
def test_the_stored_bits_are_ml_dtypes_bfloat16(x: np.ndarray) -> None:
    """An independent round-to-nearest-even: ml_dtypes' bfloat16 conversion."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    mem = Memories(KB)
    mem.arrays["src"][0] = x
    _run(mem, "ST_V", d=0, s=0)
    _same_bf16(mem.arrays["vb"][0], x.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_byte_and_bf16_views_of_one_row_see_each_others_writes() -> None:
    """BF16 stored through `buf_bf` are their little-endian bytes in `buf` (int8); bytes
    changed through `buf_b` read back as the BF16 those bytes encode."""
    x = np.array([1.0, -2.5, 3.1415926, 1e-40, -0.0, np.inf, 65504.0, 1 / 3], dtype=np.float32)
    mem = Memories(KB)
    mem.arrays["src"][0] = x
    GenericSim(KB).run([Instr("ST_BUF", (0, 0)), Instr("ST_BUF", (2, 0)), Instr("INC_B", (16,))], mem)
    bits = bf16_bits(x)
    assert mem.arrays["buf"][2].view(np.uint8).tolist() == bits.astype("<u2").view(np.uint8).tolist()
    bumped = bits.astype("<u2").view(np.uint8).reshape(8, 2).astype(np.int64) + 1  # INC_B: every byte of row 0
    assert mem.arrays["buf"][0].view(np.uint8).tolist() == (bumped & 0xFF).ravel().tolist()
    _run(mem, "LD_BUF", d=1, s=0)
    want = ((bumped[:, 0] & 0xFF) | (bumped[:, 1] & 0xFF) << 8).astype(np.uint16)
    assert mem.arrays["src"][1].tobytes() == bf16_from_bits(want).tobytes()
    mem.arrays["vb"][5] = bits  # and the other way round: a bf16_packed row read as u8
    assert views(KB)["vb_b"].dtype == np.uint8 and mem.flat(views(KB)["vb_b"])[5].tobytes() == bits.tobytes()


@settings(max_examples=50, deadline=None)
@given(x=ROW)
def test_a_bf16_packed_registers_val_is_its_16_bit_pattern(x: np.ndarray) -> None:
    """`r.val` (what rules and effects see of a register) is the BF16 pattern, as for bf16."""
    mem = Memories(KB)
    mem.arrays["src"][0] = x
    sim = GenericSim(KB)
    for k in range(4):
        sim.run([Instr("SETR", (k % 4, k % 4, k)), Instr("BITS", (8 + 2 * k, k % 4, k % 4))], mem)
    got = mem.arrays["src"].reshape(-1)[8:16].astype(np.int64).reshape(4, 2)
    assert got[:, 0].tolist() == got[:, 1].tolist()
    _same_bf16(got[:, 0], bf16_bits(x[:4]))


@settings(max_examples=100, deadline=None)
@given(x=ROW, y=ROW, w=st.lists(ROW, min_size=8, max_size=8))
def test_effects_compute_on_bf16_packed_as_on_float32_held_bf16(x: np.ndarray, y: np.ndarray, w: list) -> None:
    """The same ops on both element types end in the same values, bit for bit (NaNs included):
    a doc may switch its memories between them without changing what it computes. A mac into
    one row from several points rounds at every step (uint16 storage is no integer sum)."""
    mem = Memories(KB)
    mem.arrays["src"][0], mem.arrays["src"][1] = x, y
    mem.arrays["big"][0] = np.concatenate(w)
    for op in ("ST_V", "ST_F"):
        _run(mem, op, d=0, s=0)
        _run(mem, op, d=1, s=1)
    for d, op in enumerate(("ADD", "SUB", "MUL", "FMAX"), start=2):
        _run(mem, op, d=d, a=0, b=1)
    _run(mem, "EXP", d=6, a=0)
    _run(mem, "RSUM", d=7, a=1)
    _run(mem, "MAC", d=1, a=0, n=8)  # row 1 += src row i times w, for i < 8: one target, 8 points
    assert bf16_from_bits(mem.arrays["wt"]).tobytes() == mem.arrays["wf"].tobytes()
    assert bf16_from_bits(mem.arrays["vb"]).tobytes() == mem.arrays["vf"].tobytes()


@pytest.mark.parametrize(
    ("view", "message"),
    [
        ("view bad { of: vf, rows: 1, cols: 16, type: u8 }", "not of bf16 \\(float32 values\\)"),
        ("view bad { of: buf, rows: 1, cols: 3, type: bf16_packed }", r"1 x 3 bf16_packed \(6 bytes\) must divide"),
    ],
)
def test_views_that_cannot_share_bytes_are_refused(view: str, message: str) -> None:
    """The float32-held bf16 has no BF16 bytes to show; a packed element must tile a row."""
    text = DOC.read_text().replace("memory dram", view + "\nmemory dram")
    with pytest.raises(ZombossError, match=message):
        views(compile_doc(parse_doc(text, str(DOC)), "bf16_packed", {}))
