"""What users hand the command line: one-line messages instead of internal errors, workloads and
parameters bounded before anything is allocated, every file named when it fails."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from tests.toydoc import TOY
from zomboss.app import main
from zomboss.knowledge import load_kb

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
        # within the parameters' domains (param NAME in LO..HI), beyond the memories' bound
        ("mram_tiles=65536", r"plena\.md:\d+: memory mram: \d+ rows x 64 elements is more than"),
        ("vram_rows=67108864", r"plena\.md:\d+: memory vram: .* more than the 67,108,864 elements"),
    ],
)
def test_on_chip_memories_are_bounded_at_their_declaration(param, message, capsys):
    """Found by scripts/fuzz.py (target overrides (plena)): a huge mram_tiles reached numpy."""
    assert main(["default", "plena", "rms_4x384", "--param", param]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and f"(with --param {param})" in err and err.count("\n") == 1


@pytest.mark.parametrize("param", ["mram_tiles=1267650600228229401496703205376", "mram_tiles=0", "vram_rows=100000000"])
def test_memory_sizes_outside_their_parameter_domains_are_named(param, capsys):
    assert main(["default", "plena", "rms_4x384", "--param", param]) == 2
    err = capsys.readouterr().err
    name = param.split("=")[0]
    assert err.startswith(f"zomboss: --param {param}: outside the domain of {name}, 1..") and err.count("\n") == 1


# ---- numeric flags and id lists are checked by the parser ----------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["solve", "plena", "rope_4x64", "--budget", "-1"], "argument --budget: expected at least 1, got -1"),
        (["solve", "plena", "rope_4x64", "--budget", "x"], "argument --budget: expected an integer, got 'x'"),
        (["solve", "plena", "rope_4x64", "--exhaustive", "--time-limit", "0"], "--time-limit: expected a positive"),
        (["solve", "plena", "rope_4x64", "--exhaustive", "--time-limit", "inf"], "--time-limit: expected a positive"),
        (["bench", "--suite", "plena", "--workers", "0"], "argument --workers: expected at least 1, got 0"),
        # issue #29, item 19: every numeric flag of every command, the endpoint URL
        (["solve", "plena", "rope_4x64", "--guide", "surrogate", "--seed", "-7"], "--seed: expected 0..4294967295"),
        (["bench", "--seed", "2**40"], "argument --seed: expected an integer, got '2**40'"),
        (["default", "gemmini", "mm256", "--seed", "-1"], "argument --seed: expected 0..4294967295, got -1"),
        (["direct", "plena", "rope_4x64", "--seed", "-1"], "argument --seed: expected 0..4294967295, got -1"),
        (["solve", "plena", "rope_4x64", "--llm-timeout", "-5"], "--llm-timeout: expected a positive number"),
        (["solve", "plena", "rope_4x64", "--llm-timeout", "nan"], "--llm-timeout: expected a positive number"),
        (["direct", "plena", "rope_4x64", "--llm-timeout", "inf"], "--llm-timeout: expected a positive number"),
        (["solve", "plena", "rope_4x64", "--llm-base-url", "::::not a url"], "--llm-base-url: expected an http(s) URL"),
        (["solve", "plena", "rope_4x64", "--llm-base-url", "http://h:99999/v1"], "--llm-base-url: expected an http"),
        (["solve", "plena", "rope_4x64", "--llm-max-rounds", "0"], "--llm-max-rounds: expected at least 1, got 0"),
        (["solve", "plena", "rope_4x64", "--samples", "0"], "argument --samples: expected at least 1, got 0"),
        (["direct", "plena", "rope_4x64", "--iterations", "0"], "--iterations: expected at least 1, got 0"),
        (["direct", "plena", "rope_4x64", "--iterations", "-3"], "--iterations: expected at least 1, got -3"),
        (["simulate", "plena", "p.asm", "--max-instructions", "0"], "--max-instructions: expected at least 1"),
        (["kb", "check", "plena", "m.json", "--asp-limit", "-1"], "--asp-limit: expected at least 0, got -1"),
        (["bench", "--suite", "plena", "--budget", "0"], "argument --budget: expected at least 1, got 0"),
        (["bench", "--suite", "plena", "--only", ","], "--only: expected one or more comma-separated ids"),
        (["default", "gemmini", "mm256", "--samples", "0"], "argument --samples: expected at least 1, got 0"),
        (["space", "gemmini", "mm256", "--count-seconds", "-2"], "--count-seconds: expected a positive"),
    ],
)
def test_numeric_flags_are_refused_before_any_work(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_only_takes_a_comma_list_as_well_as_the_repeated_flag(tmp_path, capsys):
    db = str(tmp_path / "r.db")
    base = ["bench", "--defaults-only", "--suite", "plena", "--workers", "1", "--json", "--db", db]
    assert main([*base, "--only", "rms_4x384,rope_4x64", "--report", str(tmp_path / "r1")]) == 0
    comma = sorted(r["workload"] for r in json.loads(capsys.readouterr().out)["results"])
    assert main([*base, "--only", "rms_4x384", "--only", "rope_4x64", "--report", str(tmp_path / "r2")]) == 0
    repeated = sorted(r["workload"] for r in json.loads(capsys.readouterr().out)["results"])
    assert comma == repeated == ["rms_4x384", "rope_4x64"]


def test_a_replay_file_that_is_not_utf8_is_named(tmp_path, capsys):
    """Issue #29, item 19: an --llm-replay file that is not UTF-8 was an internal error."""
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\xff\xfe\x00bad")
    argv = ["solve", "plena", "rope_4x64", "--guide", "llm", "--llm-replay", str(bad), "--budget", "1"]
    assert main([*argv, "--db", str(tmp_path / "r.db")]) == 2
    err = capsys.readouterr().err
    assert err == f"zomboss: {bad}: not UTF-8 text (invalid start byte at byte 0); expected an LLM recording\n"
