"""Issue 12, hostile and edge inputs: one test per class of defect, on its reproduction.

1 the cache folder holds data only   2 kb check streams, with a budget
3 bounded doc compiler               4 no silent 32-bit wrap-around
5 one semantics for both checkers    6 no silently ignored input
7 one-line messages, not tracebacks  8 an unusable cache folder falls back to memory
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zomboss import expr as ex
from zomboss.app import main
from zomboss.app.check import check_file
from zomboss.doc import DocError, parse_doc
from zomboss.knowledge import cache_dir, forget_loaded, load_kb, query
from zomboss.legality import check_mapping_values, check_program_text
from zomboss.util import LimitError

TOY = Path(__file__).parent / "data" / "toy.md"
TEXT = TOY.read_text()


def _doc(tmp_path: Path, text: str, name: str = "m.md") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _with_rule(rule: str) -> str:
    return TEXT.replace("rule load.fits on load", rule + "\nrule load.fits on load", 1)


# ---- 1. code execution from the cache ---------------------------------------------------------


class _Marker:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def test_planted_pickle_in_the_cache_is_never_executed(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("ZOMBOSS_CACHE", str(cache))
    doc = _doc(tmp_path, TEXT)
    load_kb(doc)
    (entry,) = cache_dir().glob("*.json")
    marker = tmp_path / "executed"
    planted = pickle.dumps(_Marker(str(marker)))
    entry.write_bytes(planted)  # in place of the entry
    entry.with_suffix(".pickle").write_bytes(planted)  # and where the old cache kept it
    (cache / "archdoc-lalr-0000000000000000.cache").write_bytes(planted)  # lark's old cache file
    code = "import sys; from zomboss.knowledge import load_kb; kb = load_kb(sys.argv[1]); print(kb.from_cache, kb.params['dim'])"
    out = subprocess.run([sys.executable, "-c", code, str(doc)], env={**os.environ}, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "4"]  # refused and rebuilt
    assert not marker.exists()


def test_modified_cache_entries_are_refused(tmp_path, monkeypatch):
    """A well-formed entry (checksum recomputed) whose program would run a script, or whose
    expressions name an unknown function, is data that is refused: the KB is rebuilt."""
    import hashlib

    monkeypatch.setenv("ZOMBOSS_CACHE", str(tmp_path / "cache"))
    doc = _doc(tmp_path, TEXT)
    good = load_kb(doc)
    (entry,) = cache_dir().glob("*.json")
    head, _, body = entry.read_bytes().partition(b"\n")
    for evil in (
        body.replace(b"#defined wide/2.", b"#script (python) import os #end."),
        body.replace(b"#defined wide/2.", b'#include \\"/etc/passwd\\".'),
        body.replace(b'["Call","cdiv"', b'["Call","__import__"', 1),
        body.replace(b'"dim":4', b'"dim":"4"', 1),
    ):
        assert evil != body
        header = json.loads(head)
        header["sha256"] = hashlib.sha256(evil).hexdigest()
        entry.write_bytes(json.dumps(header).encode() + b"\n" + evil)
        forget_loaded()
        kb = load_kb(doc)
        assert not kb.from_cache and kb.asp == good.asp
    assert load_kb(doc).from_cache  # the rebuilt entry is valid


def test_cached_kb_equals_the_built_one(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOMBOSS_CACHE", str(tmp_path / "cache"))
    doc = _doc(tmp_path, TEXT)
    built = load_kb(doc)
    cached = load_kb(doc)
    assert cached.from_cache
    for name in ("params", "memories", "regfiles", "layouts", "states", "applies", "asp", "counts", "rules", "instrs"):
        assert getattr(cached, name) == getattr(built, name), name
    assert cached.doc == built.doc


# ---- 2. kb check streams, with an instruction budget ---------------------------------------


def test_kb_check_has_an_instruction_budget(tmp_path):
    kb = load_kb(TOY)
    prog = "\n".join(["config_ld 0, 16, 8"] * 50) + "\n"
    with pytest.raises(LimitError, match=r"p\.txt: 50 instructions, more than the 20 .*--max-instructions"):
        check_program_text(kb, prog, "p.txt", None, {}, max_instructions=20)  # refused before tracing
    assert check_program_text(kb, prog, "p.txt", None, {}, max_instructions=50).legal
    # a hardware loop expands into far more instructions than its program has lines
    loop = tmp_path / "ws.asm"
    loop.write_text(
        "config_ex 1, 0, 0, 0, 1, 1, 0, 0x3F800000, 0\nconfig_st 96, 0, 0x3F800000, 0, 0, 0, 0, 0, 0, 0, 0, 0\n"
        "config_ld 0, 128, 0, 16, 1, 0x3F800000\nconfig_ld 1, 96, 0, 16, 1, 0x3F800000\n"
        "loop_ws_bounds 5, 6, 8, 0, 0, 0\nloop_ws_addrs_ab 0x10000, 0x20000\nloop_ws_addrs_dc 0, 0x30000\n"
        "loop_ws_strides_ab 128, 96\nloop_ws_strides_dc 0, 96\nloop_ws 0, 0, 0, 0, 0, 0, 0, 0, 0\n"
    )
    with pytest.raises(LimitError, match=r"executes more than 100 instructions, the kb check budget"):
        check_file("gemmini", loop, {}, max_instructions=100, progress=False)


def test_kb_check_streams_and_records_only_the_cross_checked_prefix(monkeypatch):
    from zomboss.legality import checker as legality

    kb = load_kb(TOY)
    seen = []
    real = legality.Checker.__init__

    def spy(self, *a, **kw):
        real(self, *a, **kw)
        seen.append(self)

    monkeypatch.setattr(legality.Checker, "__init__", spy)
    prog = "config_ld 0, 16, 8\nload 4096, 0, 8, 4\n" * 500
    report = check_program_text(kb, prog, "p.txt", None, {}, asp_limit=100)
    assert report.legal and report.checked == 1000 and report.asp_checked == 100
    assert len(seen[-1].events) == 100  # the Python check streams; only clingo's prefix is kept


def test_long_checks_report_progress():
    import io

    from zomboss.app.check import Progress

    out = io.StringIO()
    p = Progress("p.asm", out, every=0.0)
    p(65536)
    p(131072, final=True)
    lines = out.getvalue().splitlines()
    assert lines and lines[0].startswith("zomboss: p.asm: 65,536 instructions checked")


def test_violations_are_capped_but_counted():
    kb = load_kb(TOY)
    prog = "load 4096, 253, 4, 4\n" * 1500
    report = check_program_text(kb, prog, "p.txt", None, {}, asp_limit=10)
    assert report.total == 1500 and len(report.violations) == 1000
    assert "and 500 more violation(s)" in report.text()


def test_hazard_writes_are_checked_in_log_time():
    """Many writes without a fence: the checker's write set stays small and fast."""
    kb = load_kb(TOY)
    prog = "".join(f"store {4096 + 64 * i}, 0, 1\n" for i in range(3000)) + "load 4096, 0, 4, 4\n"
    t0 = time.perf_counter()
    report = check_program_text(kb, prog, "p.txt", None, {}, asp_limit=50)
    assert time.perf_counter() - t0 < 30
    assert [v.rule for v in report.violations] == ["fence.raw"]


# ---- 3. the doc compiler is bounded ---------------------------------------------------------


def _nest(fn: str, depth: int) -> str:
    e = "rows"
    for i in range(depth):
        e = f"{fn}({e}, {('cols', 'dram', 'local')[i % 3]} + {i})"
    return e


def test_min_nested_25_deep_is_refused_with_its_location(tmp_path):
    doc = _doc(tmp_path, _with_rule(f'rule load.bomb on load "nested": {_nest("min", 25)} >= 0'))
    t0 = time.perf_counter()
    with pytest.raises(DocError, match=r"m\.md:\d+: rule load\.bomb \(on load\): .* needs more than 1024 ASP rules"):
        load_kb(doc, use_cache=False)
    assert time.perf_counter() - t0 < 10


def test_deep_and_large_expressions_are_refused(tmp_path):
    deep = "-" * 60 + "rows"
    with pytest.raises(DocError, match=r"m\.md:\d+:\d+: expression nested more than 48 deep"):
        load_kb(_doc(tmp_path, _with_rule(f'rule load.deep on load "d": {deep} < 0')), use_cache=False)
    long_sum = " + ".join(["rows"] * 100)
    with pytest.raises(DocError, match="nested more than 48 deep"):
        load_kb(_doc(tmp_path, _with_rule(f'rule load.sum on load "s": {long_sum} > 0')), use_cache=False)
    # lets that double each other: the inlined tree is huge, the check is linear
    lets = "".join(f"  let l{i + 1} = l{i} + l{i}\n" for i in range(40))
    text = TEXT.replace("  let blocks = cdiv(cols, dim)\n", "  let blocks = cdiv(cols, dim)\n  let l0 = rows\n" + lets)
    text = text.replace("rule load.fits on load", 'rule load.lets on load "l": l40 > 0\nrule load.fits on load', 1)
    with pytest.raises(DocError, match=r"m\.md:\d+: load: let l12: expression of \d+ nodes \(limit 4096"):
        load_kb(_doc(tmp_path, text), use_cache=False)


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ("param huge = 1 << (1 << 33)", r"parameter 'huge': shift by 8589934592 \(defined for 0\.\.128\)"),
        (
            "param a = 65536\nparam b = a * a\nparam c = b * b\nparam d = c * c\nparam e = d * d\nparam f = e * e",
            "parameter 'd': the value is beyond the 128-bit",
        ),
        ("param big = " + "9" * 60, r"integer literal beyond the 128-bit limit"),
        ("param z = 7 / (dim - 4)", r"parameter 'z': division by zero"),
    ],
)
def test_integer_magnitudes_are_bounded(tmp_path, param, message):
    doc = _doc(tmp_path, TEXT.replace("param max_blocks = 2", "param max_blocks = 2\n" + param, 1))
    t0 = time.perf_counter()
    with pytest.raises(DocError, match=r"m\.md:\d+(:\d+)?: .*" + message):
        load_kb(doc, use_cache=False)
    assert time.perf_counter() - t0 < 10


def test_huge_operands_in_programs_are_refused():
    kb = load_kb(TOY)
    with pytest.raises(Exception, match=r"p\.txt:1:\d+: operand 0x.* beyond the 128-bit limit"):
        check_program_text(kb, "load 0x" + "f" * 200 + ", 0, 4, 4\n", "p.txt", None, {})


# ---- 4. no silent wrap-around at 32 bits -------------------------------------------------------


def test_parameters_beyond_32_bits_are_exact_in_the_kb(capsys):
    assert main(["kb", "query", "gemmini", "param(max_bytes,V)", "--param", "max_bytes=4294967297"]) == 0
    assert capsys.readouterr().out.strip() == 'param(max_bytes,"4294967297")'
    assert main(["kb", "query", str(TOY), "param(dim,V)", "--param", "dim=4294967297"]) == 2


def test_ranges_beyond_32_bits(tmp_path):
    doc = _doc(tmp_path, TEXT.replace("imm: int 0..255", "imm: int 0..99999999999"))
    kb = load_kb(doc, use_cache=False)
    assert query(kb.asp, 'operand_range(addi,"imm",L,H)') == ['operand_range(addi,"imm",0,"99999999999")']
    # the range rule compares against the exact bound; a value beyond 32 bits is checked by Python
    ok = check_program_text(kb, "addi gp1, gp0, 2147483648\naddi gp1, gp0, 7\n", "p.txt", None, {})
    assert ok.legal and ok.python_only == 1
    bad = check_program_text(kb, "addi gp1, gp0, 100000000000\naddi gp1, gp0, -1\n", "p.txt", None, {})
    assert [v.rule for v in bad.violations] == ["addi.imm.range"] * 2


def test_intermediate_overflow_is_left_to_python(tmp_path):
    doc = _doc(tmp_path, _with_rule('rule load.prod on load "p": rows * 1000000000 < 2000000000'))
    kb = load_kb(doc, use_cache=False)
    r = check_program_text(kb, "load 4096, 0, 4, 1\nload 4096, 0, 4, 3\n", "p.txt", None, {})
    assert [(v.rule, v.index) for v in r.violations if v.rule == "load.prod"] == [("load.prod", 1)]
    assert r.python_only == 1  # 3 * 10^9 does not fit clingo's integers


# ---- 5. one semantics: the checkers agree and every refusal names its rule ---------------------


def test_division_by_zero_violates_the_rule_in_both_checkers(tmp_path):
    doc = _doc(tmp_path, _with_rule('rule load.ratio on load "r": rows / (cols - 4) >= 0'))
    kb = load_kb(doc, use_cache=False)
    r = check_program_text(kb, "load 4096, 0, 4, 4\nload 4096, 0, 8, 4\n", "p.txt", None, {})
    (v,) = [v for v in r.violations if v.rule == "load.ratio"]
    assert v.index == 0 and v.values["cols"] == 4


def test_guarded_division_is_defined(tmp_path):
    doc = _doc(tmp_path, _with_rule('rule load.guard on load "g": cols != 4 -> rows / (cols - 4) >= 0'))
    kb = load_kb(doc, use_cache=False)
    assert check_program_text(kb, "load 4096, 0, 4, 4\n", "p.txt", None, {}).legal


def test_undefined_let_and_prev_fail_the_rules_that_read_them(tmp_path):
    text = TEXT.replace(
        "  let blocks = cdiv(cols, dim)\n", "  let blocks = cdiv(cols, dim)\n  let q = 8 / (rows - 1)\n"
    )
    doc = _doc(
        tmp_path, text.replace("rule load.fits on load", 'rule load.q on load "q": q < 100\nrule load.fits on load')
    )
    kb = load_kb(doc, use_cache=False)
    r = check_program_text(kb, "load 4096, 0, 4, 1\nload 4096, 0, 4, 2\n", "p.txt", None, {})
    (v,) = [v for v in r.violations if v.rule == "load.q"]
    assert v.index == 0 and v.values["q"] == "undefined"


@pytest.mark.parametrize(
    ("tile", "rule"), [(0, "matmul.tile_i.range"), (65535, "map.hw_spad_fit"), (2**31, "map.hw_acc_fit")]
)
def test_gemmini_mappings_name_their_constraint(tmp_path, tile, rule):
    from zomboss.target import get_target

    t = get_target("gemmini")
    wl = t.workload("mm256")
    m = t.reference_mappings(wl, {})["library"].to_json()
    m["knobs"]["tile_i"] = tile
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"workload": "mm256", "mapping": m}))
    report = check_file("gemmini", path, {}, progress=False)
    assert rule in {v.rule for v in report.violations}


def test_gemmini_loop_bounds_at_their_maximum_name_the_rule(tmp_path):
    prog = tmp_path / "ws.asm"
    prog.write_text(
        "loop_ws_bounds 65535, 65535, 65535, 0, 0, 0\nloop_ws_addrs_ab 0x10000, 0x20000\n"
        "loop_ws_addrs_dc 0, 0x30000\nloop_ws_strides_ab 128, 96\nloop_ws_strides_dc 0, 96\n"
        "loop_ws 0, 0, 0, 0, 0, 0, 0, 0, 0\n"
    )
    report = check_file("gemmini", prog, {}, progress=False)
    assert "loop_ws.capacity" in {v.rule for v in report.violations}


def test_toy_mappings_with_edge_values_agree():
    kb = load_kb(TOY)
    for tile in (0, -1, 65535, 2**31 - 1, 2**31, 2**40):
        vals = {"M": 64, "N": 16, "K": 16, "tile_i": tile, "tile_k": 4, "df": "ws"}
        check_mapping_values(kb, "matmul", vals, "m.json")  # raises on any disagreement


# ---- 6. silently ignored input is refused, with its location --------------------------------


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("instr FENCE()\n  unit ctrl", r"instruction 'FENCE' differs from instruction 'fence' .* only by case"),
        ("instr not()\n  unit ctrl", r"instruction 'not' cannot be an ASP constant"),
        ("instr __()\n  unit ctrl", r"instruction '__' cannot be an ASP constant"),
        ("instr nop()\n  unit Load", r"unit 'Load' differs from unit 'load'"),
    ],
)
def test_names_that_would_merge_or_break_the_kb(tmp_path, edit, message):
    doc = _doc(tmp_path, TEXT.replace("instr fence()\n  unit ctrl", "instr fence()\n  unit ctrl\n\n" + edit, 1))
    with pytest.raises(DocError, match=rf"^{tmp_path / 'm.md'}:\d+:\d+: {message}"):
        load_kb(doc, use_cache=False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no ```isa blocks"),
        ("# prose\n\nonly\n", "no ```isa blocks"),
        ("```isa\nparam a = 1\n```\n", "declare no instruction"),
    ],
)
def test_docs_without_a_machine_are_refused(tmp_path, text, message, capsys):
    doc = _doc(tmp_path, text)
    assert main(["kb", "build", str(doc), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"zomboss: {doc}:1: ") and message in err


@pytest.mark.parametrize(
    "pattern", ['#include "/etc/passwd"', "p :- q", "param(X,@f(1))", "x). #script (python) #end. y(", "param(dim,V) q"]
)
def test_query_patterns_are_atoms_only(pattern, capsys):
    assert main(["kb", "query", str(TOY), pattern]) == 2
    assert "expected an atom" in capsys.readouterr().err


def test_query_patterns_still_match():
    kb = load_kb(TOY)
    assert query(kb.asp, "param(dim,_)") == ["param(dim,4)"]
    assert query(kb.asp, 'rule_applies("load.block",M).') == ['rule_applies("load.block",load)']
    assert query(kb.asp, "capacity(spad , R)") == ["capacity(spad,256)"]


def test_costs_of_a_mapping_are_kept():
    from zomboss.target import doc_path

    doc = parse_doc(doc_path("gemmini").read_text(), "g.md")
    assert {c.name for ms in doc.mappings for c in ms.costs} == {"estimate", "bound"}


# ---- 7. one-line messages instead of internal errors ------------------------------------------


def test_binary_program_and_deep_json_are_one_line_errors(tmp_path, capsys):
    binary = tmp_path / "b.asm"
    binary.write_bytes(bytes(range(256)) * 4)
    assert main(["kb", "check", str(TOY), str(binary)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"zomboss: {binary}: not UTF-8 text") and err.count("\n") == 1
    deep = tmp_path / "d.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["kb", "check", str(TOY), str(deep)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"zomboss: {deep}: JSON nested 100000 deep") and err.count("\n") == 1


def test_ill_typed_mapping_values_are_named(tmp_path, capsys):
    m = tmp_path / "m.json"
    m.write_text(json.dumps({"op": "matmul", "shape": {"M": 1}, "mapping": {"op": "matmul", "knobs": {"tile_i": "x"}}}))
    assert main(["kb", "check", str(TOY), str(m)]) == 2
    assert "knob 'tile_i' must be an integer" in capsys.readouterr().err


# ---- 8. an unusable cache folder falls back to memory ------------------------------------------


def test_unwritable_cache_builds_in_memory_with_one_warning(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("ZOMBOSS_CACHE", str(blocker / "cache"))
    from zomboss.util import files as cache

    cache._WARNED.clear()
    assert main(["kb", "query", str(TOY), "param(dim,V)"]) == 0
    assert main(["kb", "query", str(TOY), "param(dim,V)"]) == 0
    out = capsys.readouterr()
    assert out.out.split() == ["param(dim,4)", "param(dim,4)"]
    assert out.err.count("warning: cannot write the KB cache") == 1


# ---- the two checkers agree on random expressions, edge values included ---------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.fuzz.strategies import expressions, ints  # noqa: E402


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(expressions(), st.tuples(ints, ints, ints))
def test_python_and_asp_agree_on_random_expressions(e, values):
    from tests.fuzz.props import _agree

    status, py, by_asp, wide = _agree(e, values)
    if status == "ok" and not wide:
        assert py == by_asp, (ex.show(e), values)


# ---- the simulators share kb check's instruction budget (issue 12, phase 2) -----------------------

NESTED_LOOPS = (
    "C_LOOP_START gp1, 4194303\nC_LOOP_START gp2, 33000\nS_ADDI_INT gp5, gp5, 1\nC_LOOP_END gp2\nC_LOOP_END gp1\n"
)


@pytest.mark.parametrize("command", [["simulate", "plena"], ["kb", "check", "plena"]])
def test_nested_loops_beyond_the_budget_are_refused_before_they_run(tmp_path, capsys, command):
    prog = tmp_path / "loops.asm"
    prog.write_text(NESTED_LOOPS)
    t0 = time.perf_counter()
    assert main([*command, str(prog)]) == 2
    assert time.perf_counter() - t0 < 5
    err = capsys.readouterr().err
    assert err.startswith(f"zomboss: {prog}: its hardware loops execute at least 276,832,386,607 instructions")
    assert "--max-instructions N" in err and err.count("\n") == 1


def test_simulate_takes_max_instructions(tmp_path, capsys):
    prog = tmp_path / "l.asm"
    prog.write_text("C_LOOP_START gp1, 500\nS_ADDI_INT gp5, gp5, 1\nC_LOOP_END gp1\n")
    assert main(["simulate", "plena", str(prog), "--max-instructions", "1000"]) == 2
    assert "more than the budget of 1,000 executed instructions" in capsys.readouterr().err
    assert main(["simulate", "plena", str(prog), "--max-instructions", "1001"]) == 0  # exactly 1001
    capsys.readouterr()
    assert main(["simulate", "plena", str(prog), "--max-instructions", "0"]) == 2
    assert "--max-instructions 0: must be at least 1" in capsys.readouterr().err


def test_gemmini_counts_loop_commands_against_the_budget(tmp_path):
    from zomboss.target import get_target
    from zomboss.util import LimitError as Limit

    t = get_target("gemmini")
    out = t.export(t.workload("mm256"), tmp_path / "k.c", {})
    asm = out.with_suffix(".asm")
    full = t.simulate_file(asm, {})
    assert full.verified
    executed = sum(full.extra["counts"].values())
    assert t.simulate_file(asm, {}, executed).verified
    with pytest.raises(
        Limit, match=rf"k\.asm:\d+: the program executes more instructions, more than the budget of {executed - 1:,}"
    ):
        t.simulate_file(asm, {}, executed - 1)


# ---- workloads are bounded before anything is allocated ------------------------------------------


@pytest.mark.parametrize(
    ("target", "spec"),
    [
        ("gemmini", "matmul:M=20000,N=20000,K=20000"),
        ("gemmini", "conv:N=64,H=512,W=512,C=256,K=64,R=3,S=3,stride=1,pad=1"),
        ("plena", "linear:M=19968,K=19968,N=19968"),
        ("plena", "attention:sq=65536,skv=65536,d=64"),
    ],
)
def test_huge_workloads_are_refused_by_size(target, spec, capsys):
    import tracemalloc

    tracemalloc.start()
    assert main(["default", target, spec, "--verify", "full"]) == 2
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 64 << 20
    assert "more than the 256 MiB a workload may have" in capsys.readouterr().err


def test_sidecars_naming_huge_workloads_are_refused_by_size(tmp_path, capsys):
    from zomboss.target import get_target

    out = get_target("plena").export(get_target("plena").workload("rms_4x384"), tmp_path / "k.asm", {})
    side = json.loads((tmp_path / "k.asm.json").read_text())
    side["workload"] = {"id": "big", "op": "linear", "shape": {"M": 19968, "K": 19968, "N": 19968}}
    (tmp_path / "k.asm.json").write_text(json.dumps(side))
    assert main(["simulate", "plena", str(out)]) == 2
    assert capsys.readouterr().err.startswith(f"zomboss: {tmp_path / 'k.asm.json'}: big: its operands take 4.5 GiB")
    get_target("gemmini").export(get_target("gemmini").workload("mm256"), tmp_path / "g.c", {})
    side = json.loads((tmp_path / "g.asm.json").read_text())
    side["workload"] = "matmul:M=20000,N=20000,K=20000"
    (tmp_path / "g.asm.json").write_text(json.dumps(side))
    assert main(["simulate", "gemmini", str(tmp_path / "g.asm")]) == 2  # (placed, then its buffers differ)
    assert capsys.readouterr().err.startswith(f"zomboss: {tmp_path / 'g.asm.json'}: buffers")
    side["buffers"] = (
        get_target("gemmini").instance(get_target("gemmini").workload(side["workload"]), {}).buffers.__dict__
    )
    (tmp_path / "g.asm.json").write_text(json.dumps(side))
    assert main(["simulate", "gemmini", str(tmp_path / "g.asm")]) == 2  # matching buffers: refused by size
    assert capsys.readouterr().err.startswith(f"zomboss: {tmp_path / 'g.asm.json'}: matmul:M=20000")


# ---- parameters outside their declared domains are refused when the configuration is built --------


@pytest.mark.parametrize(
    ("param", "rule"),
    [
        ("sp_capacity_kib=1", "cfg.library_tiling"),
        ("acc_capacity_kib=1", "cfg.tiles"),
        ("rs_ld=0", "cfg.queues"),
        ("rs_st=-1", "cfg.queues"),
        ("scale_one=0", "cfg.scale_one"),
    ],
)
def test_gemmini_parameters_outside_their_domains_name_the_rule(param, rule, capsys):
    assert main(["default", "gemmini", "mm256", "--param", param]) == 2
    err = capsys.readouterr().err
    assert "gemmini.md:" in err and f"rule {rule} " in err and f"--param {param}" in err and err.count("\n") == 1


def test_gemmini_config_needs_positive_sizes():
    from zomboss.targets.gemmini.config import ConfigError, GemminiConfig

    # a copy: load_kb memoises, and the shared KB must keep its parameters for later tests
    kb = copy.copy(load_kb(Path(__file__).parents[2] / "targets" / "gemmini" / "gemmini.md"))
    object.__setattr__(kb, "params", {**kb.params, "rs_ex": 0})
    with pytest.raises(ConfigError, match="parameter rs_ex=0 must be at least 1"):
        GemminiConfig.from_kb(kb)


# ---- every file a command reads or writes fails with its name ---------------------------------------


@pytest.mark.parametrize("target", ["gemmini", "plena"])
def test_simulate_refuses_binary_programs_and_deep_sidecars(tmp_path, capsys, target):
    binary = tmp_path / "b.asm"
    binary.write_bytes(bytes(range(256)) * 4)
    assert main(["simulate", target, str(binary)]) == 2
    assert capsys.readouterr().err.startswith(f"zomboss: {binary}: not UTF-8 text")
    prog = tmp_path / "p.asm"
    prog.write_text("fence\n" if target == "gemmini" else "S_ADDI_INT gp1, gp0, 1\n")
    (tmp_path / "p.asm.json").write_text("[" * 100_000 + "]" * 100_000)
    assert main(["simulate", target, str(prog)]) == 2
    assert capsys.readouterr().err.startswith(f"zomboss: {tmp_path / 'p.asm.json'}: JSON nested 100000 deep")


@pytest.mark.parametrize(("target", "wl"), [("gemmini", "mm256"), ("plena", "rms_4x384")])
def test_export_to_a_folder_or_an_unwritable_place_is_one_line(tmp_path, capsys, target, wl):
    assert main(["export", target, wl, "-o", "/"]) == 2
    assert capsys.readouterr().err == "zomboss: /: is a folder; give the file to write (e.g. /kernel)\n"
    assert main(["export", target, wl, "-o", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert main(["export", target, wl, "-o", "/proc/zomboss/k.c"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("zomboss: /proc/zomboss") and "internal error" not in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("param", "message"),
    [
        (
            "mram_tiles=1267650600228229401496703205376",
            r"plena\.md:\d+: memory mram: \d+ rows x 64 elements is more than",
        ),
        ("mram_tiles=0", r"plena\.md:\d+: memory mram: rows, width, banks and ports must be at least 1"),
        ("vram_rows=100000000", r"plena\.md:\d+: memory vram: .* more than the 67,108,864 elements"),
    ],
)
def test_on_chip_memories_are_bounded_at_their_declaration(param, message, capsys):
    """Found by scripts/fuzz.py (target overrides (plena)): a huge mram_tiles reached numpy."""
    assert main(["default", "plena", "rms_4x384", "--param", param]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and f"(with --param {param})" in err and err.count("\n") == 1
