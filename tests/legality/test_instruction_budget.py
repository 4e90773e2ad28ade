"""`kb check` streams programs under an instruction budget (clingo cross-checks a prefix), reports
progress, caps and counts violations, and the simulators share the same budget."""

from __future__ import annotations

import time

import pytest

from tests.toydoc import TOY
from zomboss.app import main
from zomboss.app.check import check_file
from zomboss.knowledge import load_kb
from zomboss.legality import check_program_text
from zomboss.util import LimitError

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
    with pytest.raises(SystemExit) as e:  # refused by the parser (issue #29 item 19)
        main(["simulate", "plena", str(prog), "--max-instructions", "0"])
    assert e.value.code == 2
    assert "argument --max-instructions: expected at least 1, got 0" in capsys.readouterr().err


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
