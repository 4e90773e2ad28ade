"""The CLI's kb commands, run in-process exactly as a user types them."""

from __future__ import annotations

import json
from pathlib import Path

from zomboss.cli import main

TOY = str(Path(__file__).parent / "data" / "toy.md")


def test_kb_build_and_out(tmp_path, capsys):
    out = tmp_path / "t.lp"
    assert main(["kb", "build", TOY, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "toy:" in text and "facts" in text and "rules" in text
    assert "param(dim,4)." in out.read_text()
    import clingo

    ctl = clingo.Control(["--warn=none"])
    ctl.load(str(out))
    ctl.ground([("base", [])])
    assert ctl.solve().satisfiable


def test_kb_query(capsys):
    assert main(["kb", "query", TOY, "param(dim,V)"]) == 0
    assert capsys.readouterr().out.strip() == "param(dim,4)"
    assert main(["kb", "query", TOY, "capacity(M,R)", "--param", "dim=8", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == ["capacity(spad,128)"]


def test_kb_check_program_exit_codes(tmp_path, capsys):
    good = tmp_path / "good.txt"
    good.write_text("config_ld 0, 16, 8\nload 4096, 0, 8, 4\n")
    bad = tmp_path / "bad.txt"
    bad.write_text("config_ld 0, 16, 2\nload 4096, 0, 8, 4\n")
    assert main(["kb", "check", TOY, str(good)]) == 0
    assert main(["kb", "check", TOY, str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:2: load: load.block (" in out and "toy.md:" in out and "cfg.block_stride=2" in out


def test_bad_inputs_are_one_line_errors(tmp_path, capsys):
    broken = tmp_path / "b.md"
    broken.write_text("```isa\nparam a = (1\n```\n")
    assert main(["kb", "build", str(broken)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"zomboss: {broken}:2:") and "expected" in err and "Traceback" not in err
    assert main(["kb", "query", TOY, "capacity(M,R", "--param", "dim=x"]) == 2
    assert "--param" in capsys.readouterr().err
    assert main(["kb", "query", TOY, "Capacity(M)"]) == 2
    assert "expected an atom" in capsys.readouterr().err
    m = tmp_path / "m.json"
    m.write_text('{"op": "matmul", "shape": {"M": 16, "N": 16, "K": 16}, "mapping": {"tile_i": 1, "tile_q": 1}}')
    assert main(["kb", "check", TOY, str(m)]) == 2
    assert "unknown knob 'tile_q'" in capsys.readouterr().err


def test_kb_check_mapping_files_of_both_targets(tmp_path, capsys):
    """Mappings as the targets print them (Gemmini: flat with "op"; PLENA: {"op", "knobs"})."""
    from zomboss.targets.gemmini import TARGET as GEMMINI
    from zomboss.targets.gemmini.mapping import library_default
    from zomboss.targets.plena import TARGET as PLENA
    from zomboss.targets.plena.mapping import library_default as plena_default
    from zomboss.targets.plena.mapping import to_json

    m = library_default(GEMMINI.workload("mm256")).to_json()
    good = tmp_path / "g.json"
    good.write_text(json.dumps({"workload": "mm256", "mapping": m}))
    assert main(["kb", "check", "gemmini", str(good)]) == 0
    assert "legal" in capsys.readouterr().out
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({"workload": "mm256", "mapping": {**m, "tile_k": 64, "tile_i": 8}}))
    assert main(["kb", "check", "gemmini", str(bad), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert {v["rule"] for v in out["violations"]} == {"map.tile_k_range", "map.hw_spad_fit", "map.hw_acc_fit"}
    assert out["core"]

    p = to_json(plena_default(PLENA.workload("attn_1kc")))
    pj = tmp_path / "p.json"
    pj.write_text(
        json.dumps({"workload": "attn_1kc", "mapping": {**p, "knobs": {**p["knobs"], "loop_order": "kv_outer"}}})
    )
    assert main(["kb", "check", "plena", str(pj), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [v["rule"] for v in out["violations"]] == ["att.kv_outer_state"]
    assert out["violations"][0]["values"]["sq"] == 1024
    wrong = tmp_path / "w.json"
    wrong.write_text(json.dumps({"workload": "mm256", "mapping": {**m, "op": "conv"}}))
    assert main(["kb", "check", "gemmini", str(wrong)]) == 2
    assert "the mapping is for 'conv'" in capsys.readouterr().err
