"""Every legality rule of every shipped doc has a passing and a failing program, and both
checkers (Python predicates and clingo) agree on them.

Doc rules carry their programs as ```example RULE ok|bad``` blocks; the generated operand
range/register rules are exercised by moving one operand of an instruction taken from the
doc's own ok examples to the edge of its range (positive) and one past it (negative).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from zomboss import expr as ex
from zomboss.errors import IllegalProgram
from zomboss.knowledge import KB, Violation, load_kb
from zomboss.knowledge import facts as F
from zomboss.knowledge.asp import check_asp, program_facts
from zomboss.knowledge.query import asp_blind, check_program, solve_atoms
from zomboss.legality import Checker
from zomboss.program import Instr, Program, parse_program
from zomboss.target import doc_path, get_target

TOY = Path(__file__).resolve().parents[1] / "data" / "toy.md"
DOCS = {"toy": TOY, "gemmini": None, "plena": None}
TOY_KB = load_kb(TOY)


def _kb(name: str) -> KB:
    return load_kb(DOCS[name] or doc_path(name))


def _toy_trace(program: Program):
    """The toy machine's only state-changing instruction is `addi rd, rs, imm`; register
    operands are reported with the contents they have when the instruction runs."""
    regs = [0] * 4
    for ins in program.instrs:
        kinds = [o.kind for o in TOY_KB.instrs[ins.op].operands]
        vals = {i: regs[a % 4] for i, (a, k) in enumerate(zip(ins.args, kinds, strict=True)) if k == "gp"}
        yield ins, vals
        if ins.op == "addi" and ins.args[0] < 4:
            regs[ins.args[0]] = (regs[ins.args[1] % 4] + ins.args[2]) % (1 << 32)


def _events(name: str, kb: KB, program: Program):
    if name == "toy":
        return list(_toy_trace(program))
    return list(get_target(name).trace(program, {}))


def _check(name: str, kb: KB, program: Program) -> list[Violation]:
    ch = Checker(kb)
    ch.record = True
    found = ch.check(_events(name, kb, program))
    by_asp = check_program(kb, program_facts(kb, ch.events))
    blind = {p - 1 for p in asp_blind(kb, ch.events)}
    assert {(v.rule, v.index) for v in found if not v.rule.startswith("isa.") and v.index not in blind} == {
        (v.rule, v.pos - 1) for v in by_asp
    }
    return found


def _rule_ids(kb: KB) -> list[str]:
    return [r.id for r in kb.rules if r.patterns and r.loc and not r.id.endswith((".range", ".reg"))] + [
        h.id for h in kb.hazards
    ]


def _doc_rule_cases():
    for name in DOCS:
        kb = _kb(name)
        for rid in _rule_ids(kb):
            for ok in (True, False):
                yield pytest.param(name, rid, ok, id=f"{name}:{rid}:{'ok' if ok else 'bad'}")


@pytest.mark.parametrize(("name", "rule", "ok"), list(_doc_rule_cases()))
def test_doc_rule_examples(name, rule, ok):
    kb = _kb(name)
    examples = [e for e in kb.examples if e.rule == rule and e.ok == ok]
    assert examples, f"{name}: rule {rule} has no '{'ok' if ok else 'bad'}' example"
    for e in examples:
        program = parse_program(kb, e.text, f"{e.loc}")
        found = {v.rule for v in _check(name, kb, program)}
        if ok:
            assert found == set(), f"{e.loc}: ok example of {rule} raised {found}"
        else:
            assert rule in found, f"{e.loc}: bad example of {rule} did not raise it (raised {found})"


def _range_cases():
    for name in DOCS:
        kb = _kb(name)
        for r in kb.rules:
            if r.id.endswith((".range", ".reg")):
                yield pytest.param(name, r.id, id=f"{name}:{r.id}")


def _base_program(kb: KB, mnemonic: str) -> tuple[Program, int]:
    """An ok example containing the mnemonic, and the index of its first occurrence."""
    for e in kb.examples:
        if not e.ok:
            continue
        prog = parse_program(kb, e.text, str(e.loc))
        for i, ins in enumerate(prog.instrs):
            if ins.op == mnemonic:
                return prog, i
    pytest.fail(f"no ok example uses {mnemonic}, so its operand rules cannot be exercised")


def _render(kb: KB, program: Program) -> str:
    """Program text with register operands written with their file's prefix (`gp3`)."""
    lines = []
    for ins in program.instrs:
        kinds = {i: o.kind for i, o in enumerate(kb.instrs[ins.op].operands) if o.kind in kb.regfiles}
        lines.append(ins.text(kinds))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("name", "rid"), list(_range_cases()))
def test_operand_rules(name, rid, tmp_path):
    kb = _kb(name)
    rule = kb.rule_by_id[rid]
    mnemonic = rule.patterns[0]
    operand = rid[len(mnemonic) + 1 :].rsplit(".", 1)[0]
    ins = kb.instrs[mnemonic]
    pos = [o.name for o in ins.operands].index(operand)
    o = ins.operands[pos]
    if rid.endswith(".reg"):
        good, bad = [kb.regfiles[o.kind].count - 1], [kb.regfiles[o.kind].count]
    else:
        lo, hi = (int(ex.evaluate(x, kb.params)) for x in (o.lo, o.hi))  # type: ignore[call-overload, arg-type]
        good, bad = [lo, hi], [hi + 1] + ([lo - 1] if lo > 0 else [])
    prog, at = _base_program(kb, mnemonic)

    def with_value(v: int) -> Program:
        instrs = list(prog.instrs)
        old = instrs[at]
        args = list(old.args)
        args[pos] = v
        instrs[at] = Instr(old.op, tuple(args), old.line)
        return Program(prog.target, tuple(instrs), prog.meta)

    for v in bad:
        found = [x for x in _check(name, kb, with_value(v)) if x.index == at]
        assert rid in {x.rule for x in found}, f"{operand}={v} did not raise {rid}"
    if name != "toy":  # the target's simulator refuses the program too, naming the rule
        path = tmp_path / "bad.txt"
        path.write_text(_render(kb, with_value(bad[0])))
        with pytest.raises(IllegalProgram) as refused:
            get_target(name).simulate_file(path, {})
        assert rid in {x.rule for x in refused.value.violations}
    for v in good:
        found = [x for x in _check(name, kb, with_value(v)) if x.index == at]
        assert rid not in {x.rule for x in found}, f"{operand}={v} raised {rid}"


@pytest.mark.parametrize("name", ["gemmini", "plena"])
def test_the_program_check_leaves_out_only_the_mapping_spaces(name):
    """Program checks ground `check_asp` (the KB without its mapping spaces): it keeps
    every program violation rule and gives the whole KB's verdict on the doc's bad examples."""
    kb = _kb(name)
    lean = check_asp(kb)
    lean_lines = set(lean.splitlines())
    assert all(line in lean_lines for line in kb.asp.splitlines() if line.startswith("violation("))
    assert "mviolation(" not in lean and "mviolation(" in kb.asp
    bad = [e for e in kb.examples if not e.ok][:3]
    for e in bad:
        prog = parse_program(kb, e.text, str(e.loc))
        ch = Checker(kb)
        ch.record = True
        ch.check(_events(name, kb, prog))
        facts = program_facts(kb, ch.events)
        whole = {v for v in F.decode(F.ViolationFact, solve_atoms(kb.asp, facts)) if v.pos > 0}
        assert whole and set(check_program(kb, facts)) == whole, e.loc
