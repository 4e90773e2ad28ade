"""`check_block` (every rule over a block of commands at once, NumPy) against Checker.step
(one command at a time): on random blocks, legal and illegal, block either vouches for all
of them — and leaves the checker exactly as stepping does — or changes nothing."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz import strategies as S
from zomboss import expr as ex
from zomboss.errors import ZombossError
from zomboss.expr import vector as vx
from zomboss.knowledge import load_kb
from zomboss.legality import Block, Checker, check_block
from zomboss.legality.block import memos
from zomboss.program import Instr

TOY = Path(__file__).resolve().parents[1] / "data" / "toy.md"


@pytest.fixture(scope="module")
def kb():
    return load_kb(TOY)


def snapshot(ch: Checker) -> tuple[Any, ...]:
    """Everything of a checker that later checks read."""
    written = {k: (list(w.los), list(w.his), list(w.lines)) for k, w in ch._written.items()}
    return copy.deepcopy(ch.state), copy.deepcopy(ch._prev), dict(ch._prev_pos), written, dict(ch._epochs), ch.index


Cmd = tuple[str, tuple[int, ...]]

# mostly legal operands (so that blocks pass often), with edges that break rules
commands = st.one_of(
    st.tuples(st.just("config_ld"), st.tuples(st.sampled_from([0, 0, 1, 2]), st.integers(0, 64), st.integers(0, 9))),
    st.tuples(
        st.just("load"),
        st.tuples(
            st.sampled_from([0, 4096, 4100, 8192, 12288]),
            st.sampled_from([0, 8, 100, 252, 253, 0x80000000 | 4]),
            st.integers(1, 9),
            st.integers(0, 5),
        ),
    ),
    st.tuples(
        st.just("store"), st.tuples(st.sampled_from([4096, 4104, 8192, 20480]), st.integers(0, 300), st.integers(1, 5))
    ),
    st.tuples(st.just("addi"), st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(0, 300))),
    st.tuples(st.just("vset"), st.tuples(st.integers(0, 3))),
    st.tuples(st.just("vadd"), st.tuples(st.integers(0, 3), st.integers(0, 3))),
)
programs = st.lists(commands, max_size=10)


def agrees(ch: Checker, ref: Checker, cmds: list[Cmd], blk: Block) -> bool:
    """`check_block(ch, blk)` agrees with stepping `ref` through `cmds` (the same commands)."""
    before = snapshot(ch)
    assert snapshot(ref) == before
    ok = check_block(ch, blk)
    found = [v for op, args in cmds for v in ref.step(Instr(op, args, blk.line))]
    if ok:
        assert found == [] and snapshot(ch) == snapshot(ref)
    else:
        assert snapshot(ch) == before
        for op, args in cmds:  # the caller's fallback
            ch.step(Instr(op, args, blk.line))
    return ok


@settings(max_examples=150, deadline=None)
@given(programs, programs, programs)
def test_block_agrees_with_step(kb, prefix, body, suffix):
    ch, ref = Checker(kb), Checker(kb)
    for op, args in prefix:  # some entry state: configs, writes, a previous vector op...
        ch.step(Instr(op, args, 1))
        ref.step(Instr(op, args, 1))
    agrees(ch, ref, body, Block.of(body, line=2))
    for op, args in suffix:  # and what comes after sees the same state
        assert ch.step(Instr(op, args, 3)) == ref.step(Instr(op, args, 3))


def _relocated(cmds: list[Cmd], bases: tuple[int, int]) -> list[Cmd]:
    """The commands with their DRAM operands moved (what differs between loops of one template)."""
    return [
        (op, (args[0] + bases[op == "store"], *args[1:])) if op in ("load", "store") else (op, args)
        for op, args in cmds
    ]


def _templated(cmds: list[Cmd], template: object, line: int) -> Block:
    plain = Block.of(cmds, line)
    return Block(
        plain.n,
        plain.groups,
        line,
        template,
        tuple(frozenset({0}) if op in ("load", "store") else frozenset() for op, _, _ in plain.groups),
    )


@settings(max_examples=100, deadline=None)
@given(
    programs,
    st.lists(st.tuples(programs, st.tuples(st.sampled_from([0, 4, 4096]), st.sampled_from([0, 8, 4096]))), max_size=4),
)
def test_memo_across_blocks_of_one_template(kb, body, rounds):
    """A block of one template reuses what an earlier one computed only while the entry state
    it read is the same: configs, writes and stores in between change the verdict."""
    ch, ref = Checker(kb), Checker(kb)
    template = object()
    for between, bases in [([], (0, 0)), *rounds]:
        for op, args in between:
            ch.step(Instr(op, args, 1))
            ref.step(Instr(op, args, 1))
        cmds = _relocated(body, bases)
        agrees(ch, ref, cmds, _templated(cmds, template, 2))


def test_block_takes_the_fast_path_and_reports_nothing_itself(kb):
    cmds: list[Cmd] = [
        ("config_ld", (0, 16, 8)),
        ("load", (4096, 0, 8, 4)),
        ("store", (8192, 0, 2)),
        ("load", (4096, 16, 4, 4)),
        ("vset", (1,)),
    ]
    ch, ref = Checker(kb), Checker(kb)
    assert agrees(ch, ref, cmds, Block.of(cmds))
    # a load of what the store wrote, with no fence: refused by stepping, with its rule
    bad = [("load", (8192, 0, 4, 4))]
    assert not agrees(ch, ref, bad, Block.of(bad))
    assert [v.rule for v in Checker(kb).check((Instr(op, a, 1), None) for op, a in cmds + bad)] == ["fence.raw"]
    # fences, and rules on register values, are left to step
    assert not check_block(Checker(kb), Block.of([("fence", ())]))
    assert not check_block(Checker(kb), Block.of([("vset", (1,)), ("vadd", (1, 2))]))


def _column_env(values: dict[str, np.ndarray]) -> Any:
    class Env:
        def col(self, name: str) -> vx.Col:
            return vx.column(values[name])

        def memo(self, node: int, compute: Any) -> vx.Col:
            return compute()

    return Env()


@settings(max_examples=150, deadline=None)
@given(
    S.expressions(),
    st.lists(st.tuples(st.integers(-40, 40), st.integers(-40, 40), st.integers(-3, 200)), min_size=1, max_size=6),
)
def test_columns_evaluate_as_python_does(e, rows):
    """vexpr's meaning is expr.py's: value, truth and undefinedness row by row (or Unsupported)."""
    names = ("x", "y", "z")
    values = {n: np.array([r[i] for r in rows], dtype=np.int64) for i, n in enumerate(names)}
    try:
        c = vx.compile_vec(e, lambda r: r.name)(_column_env(values))
    except vx.Unsupported:
        return
    f = ex.compile_python(e, lambda n: n in names, lambda n: False)
    for i, r in enumerate(rows):
        try:
            want: Any = f(dict(zip(names, r, strict=True)))
        except ex.EVAL_ERRORS:
            want = None
        bad = c.bad is not None and bool(np.broadcast_to(c.bad, (len(rows),))[i])
        got = np.broadcast_to(c.val, (len(rows),))[i]
        if want is None:
            assert bad, (ex.show(e), r)
        elif c.kind == vx.BOOL:
            assert not bad and bool(got) == bool(want), (ex.show(e), r)
        else:
            assert not bad and int(got) == want, (ex.show(e), r)


@settings(max_examples=25, deadline=None)
@given(S.toy_rule_docs(), st.lists(commands, min_size=1, max_size=8), programs)
def test_generated_rules(tmp_path_factory, doc, body, prefix):
    """Any rule the notation can write (edge constants, every operator) on `load`."""
    path = tmp_path_factory.mktemp("doc") / "toy.md"
    path.write_text(doc[0], encoding="utf-8")
    try:
        kb = load_kb(path, use_cache=False)
    except ZombossError:
        return  # a rule the KB build refuses (e.g. a constant beyond clingo's integers)
    ch, ref = Checker(kb), Checker(kb)
    for op, args in prefix:
        ch.step(Instr(op, args, 1))
        ref.step(Instr(op, args, 1))
    agrees(ch, ref, body, Block.of(body, line=2))


def test_memos_stay_within_their_byte_budget(kb, monkeypatch):
    cmds: list[Cmd] = [("config_ld", (0, 16, 8)), ("load", (4096, 0, 8, 4)), ("store", (8192, 0, 2))]
    ch, ref = Checker(kb), Checker(kb)
    template = object()
    assert agrees(ch, ref, cmds, _templated(cmds, template, 2))
    assert memos(kb).of(template) and 0 < memos(kb).size <= memos(kb).budget
    monkeypatch.setattr(memos(kb), "budget", 0)
    other = object()
    assert agrees(ch, ref, cmds, _templated(cmds, other, 2))
    assert memos(kb).size == 0 and not memos(kb).of(template) and not memos(kb).of(other)
