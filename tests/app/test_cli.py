"""The CLI's kb commands, run in-process exactly as a user types them."""

from __future__ import annotations

import json
from pathlib import Path

from zomboss.app import main

TOY = str(Path(__file__).resolve().parents[1] / "data" / "toy.md")


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
    m.write_text(
        '{"op": "matmul", "shape": {"M": 16, "N": 16, "K": 16}, "mapping": {"op": "matmul", "knobs": {"tile_i": 1, "tile_q": 1}}}'
    )
    assert main(["kb", "check", TOY, str(m)]) == 2
    assert "no knob 'tile_q'" in capsys.readouterr().err


def _default_mapping(capsys, target: str, wid: str) -> dict:
    assert main(["default", target, wid, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["mapping"]


def test_kb_check_reads_the_mapping_default_prints(tmp_path, capsys):
    """One JSON form everywhere: `kb check` reads exactly the `mapping` of `default --json`."""
    m = _default_mapping(capsys, "gemmini", "mm256")
    assert set(m) == {"op", "knobs"}
    good = tmp_path / "g.json"
    good.write_text(json.dumps({"workload": "mm256", "mapping": m}))
    assert main(["kb", "check", "gemmini", str(good)]) == 0
    assert "legal" in capsys.readouterr().out
    bad = tmp_path / "b.json"
    bad.write_text(
        json.dumps({"workload": "mm256", "mapping": {**m, "knobs": {**m["knobs"], "tile_k": 64, "tile_i": 8}}})
    )
    assert main(["kb", "check", "gemmini", str(bad), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert {"map.tile_k_range", "map.hw_spad_fit", "map.hw_acc_fit"} <= {v["rule"] for v in out["violations"]}
    assert out["core"]

    p = _default_mapping(capsys, "plena", "lin_60m_q")
    pj = tmp_path / "p.json"
    pj.write_text(json.dumps({"workload": "lin_60m_q", "mapping": p}))
    assert main(["kb", "check", "plena", str(pj)]) == 0
    capsys.readouterr()
    a = tmp_path / "a.json"
    a.write_text(
        json.dumps(
            {
                "workload": "attn_1kc",
                "mapping": {
                    "op": "attention",
                    "knobs": {
                        "algorithm": "flash",
                        "loop_order": "kv_outer",
                        "mask": "elementwise",
                        "hoist_csr": "false",
                    },
                },
            }
        )
    )
    assert main(["kb", "check", "plena", str(a), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [v["rule"] for v in out["violations"]] == ["att.kv_outer_state"]
    assert out["violations"][0]["values"]["sq"] == 1024
    wrong = tmp_path / "w.json"
    wrong.write_text(json.dumps({"workload": "mm256", "mapping": {**m, "op": "conv"}}))
    assert main(["kb", "check", "gemmini", str(wrong)]) == 2
    err = capsys.readouterr().err
    assert "the mapping is for" in err and "conv" in err
    flat = tmp_path / "f.json"
    flat.write_text(json.dumps({"workload": "mm256", "mapping": m["knobs"]}))
    assert main(["kb", "check", "gemmini", str(flat)]) == 2
    assert "the form `zomboss default --json` prints" in capsys.readouterr().err


def test_default_verify_none_times_only_and_says_so(capsys):
    assert main(["default", "gemmini", "mm256", "--verify", "none", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["verified"] is None and d["verify"] == "none" and "timing only" in d["verify_reason"]
    assert d["cycles"] > 0 and "extrapolation" in d


def test_default_verify_auto_verifies_what_it_can_and_times_the_rest(capsys, monkeypatch):
    assert main(["default", "gemmini", "mm256", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["verified"] is True and d["verify"] == "full"
    monkeypatch.setattr("zomboss.verify.default.MAX_VERIFIED_INSTRUCTIONS", 1000)
    assert main(["default", "gemmini", "mm256", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["verified"] is None and d["verify"] == "none" and "more than the 1,000" in d["verify_reason"]
