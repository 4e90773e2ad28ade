"""Exported Gemmini kernels on the real thing: Spike with the libgemmini extension (the
reference functional model, ../shared/tools/spike) compiles and runs the C that `zomboss
export` writes — Candidate-0, the Exo-style mapping and a kernel `zomboss solve` found — and
the program must print "Correct result" (it checks its own output against a C reference).

Skipped, with the reason, where ../shared/tools/spike or the RISC-V cross compiler is absent
(a user's fresh clone); .ci/run installs the compiler, so CI runs these tests."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.support import SPIKE, spike_missing
from zomboss.app import main
from zomboss.mapping import space
from zomboss.target import get_target

pytestmark = pytest.mark.skipif(spike_missing() is not None, reason=spike_missing() or "")


@pytest.fixture(scope="module")
def spk_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("spk")
    with tarfile.open(SPIKE / "spike-gemmini.tar.xz") as tar:
        tar.extractall(root, filter="data")
    return root


def _run(spk_root: Path, c_file: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPK_ROOT": str(spk_root), "SPIKE_TIMEOUT": "300"}
    return subprocess.run(
        ["bash", str(SPIKE / "run_gemmini_c.sh"), str(c_file)], capture_output=True, text=True, env=env, timeout=400
    )


@pytest.mark.parametrize(
    "workload", ["matmul:M=64,N=48,K=80,bias=1,relu=1", "conv:N=1,H=8,W=8,C=16,K=32,R=3,S=3,stride=1,pad=1"]
)
def test_candidate0_and_exo_run_correctly_on_spike(spk_root, tmp_path, workload):
    t = get_target("gemmini")
    wl = t.workload(workload)
    for name, m in t.reference_mappings(wl, {}).items():
        out = t.export(wl, tmp_path / f"{name}.c", {}, m)
        res = _run(spk_root, out)
        assert res.returncode == 0 and "Correct result" in res.stdout, f"{name}: {res.stdout[-800:]}{res.stderr[-800:]}"


def test_a_searched_kernel_runs_correctly_on_spike(spk_root, tmp_path, capsys):
    spec = "matmul:M=64,N=64,K=128"
    assert main(["solve", "gemmini", spec, "--budget", "6", "--db", str(tmp_path / "s.sqlite"), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    mapping = tmp_path / "m.json"
    mapping.write_text(json.dumps({"workload": spec, "mapping": res["mapping"]}))
    out = tmp_path / "searched.c"
    assert main(["export", "gemmini", spec, "-o", str(out), "--mapping", str(mapping)]) == 0
    run = _run(spk_root, out)
    assert run.returncode == 0 and "Correct result" in run.stdout, run.stdout[-800:] + run.stderr[-800:]


@pytest.mark.slow  # a pool build and three Spike runs: about a minute
def test_pool_candidates_run_correctly_on_spike(spk_root, tmp_path):
    """Kernels the search may pick (CP-SAT-sized pool candidates: unrolled streams with other
    orders, buffering and block widths), not only the reference points."""
    from zomboss.solvers.space import build_pool

    t = get_target("gemmini")
    wl = t.workload("matmul:M=48,N=64,K=96,bias=1")
    pool = build_pool(t.kb({}), wl.op, wl.shape, k=1, near=t.reference_mappings(wl, {})["library"], budget_s=2.5)
    picks = [c.mapping for c in pool.candidates() if c.mapping["loop"] == "sw"][::7][:3]
    assert picks
    for i, m in enumerate(picks):
        out = t.export(wl, tmp_path / f"pool{i}.c", {}, m)
        res = _run(spk_root, out)
        assert res.returncode == 0 and "Correct result" in res.stdout, f"{m.key()}: {res.stdout[-600:]}"


@pytest.mark.parametrize(
    "workload", ["matmul:M=64,N=48,K=80,bias=1,relu=1", "conv:N=1,H=8,W=8,C=16,K=32,R=3,S=3,stride=1,pad=1"]
)
def test_prefetched_streams_run_correctly_on_spike(spk_root, tmp_path, workload):
    """`prefetch` moves mvins ahead of computes in program order, which Spike executes as
    written: the Exo-style stream with its loads prefetched must still be correct there."""

    t = get_target("gemmini")
    wl = t.workload(workload)
    exo = t.reference_mappings(wl, {})["exo"]
    pre = space(t.kb({}), wl.op).mapping({**exo.to_json()["knobs"], "prefetch": "true"}, wl.shape)
    inst = t.instance(wl, {})
    assert list(t.lower(inst, pre).instrs) != list(t.lower(inst, exo).instrs)  # loads really moved
    out = t.export(wl, tmp_path / "prefetched.c", {}, pre)
    res = _run(spk_root, out)
    assert res.returncode == 0 and "Correct result" in res.stdout, f"{res.stdout[-800:]}{res.stderr[-800:]}"


def test_ragged_row_tiles_fed_first_run_correctly_on_spike(spk_root, tmp_path):
    """`ragged_first` reverses the row tiles of every weight run, so the short last row tile
    (M % DIM rows) is computed first, with the run's weights preloaded: Spike must agree."""

    t = get_target("gemmini")
    wl = t.workload("matmul:M=52,N=48,K=80,bias=1,relu=1")  # row tiles of 16, 16, 16 and 4
    sp = space(t.kb({}), wl.op)
    knobs = {**t.reference_mappings(wl, {})["exo"].to_json()["knobs"], "weight_reuse": "true", "inner_order": "kji"}
    knobs.update(acc_i=4, acc_j=1, tile_i=4)
    last, first = (sp.mapping({**knobs, "ragged_first": r}, wl.shape) for r in ("false", "true"))
    assert not sp.violations(t.kb({}), first, wl.shape)
    inst = t.instance(wl, {})
    assert list(t.lower(inst, first).instrs) != list(t.lower(inst, last).instrs)  # the runs really reversed
    out = t.export(wl, tmp_path / "ragged_first.c", {}, first)
    res = _run(spk_root, out)
    assert res.returncode == 0 and "Correct result" in res.stdout, f"{res.stdout[-800:]}{res.stderr[-800:]}"


@pytest.mark.slow  # a full `solve gemmini mm256` (the pool screens every cost class): minutes
def test_export_best_after_a_solve_runs_correctly_on_spike(spk_root, tmp_path, capsys):
    """The acceptance of `export --best`: `zomboss solve gemmini mm256`, then `zomboss export
    gemmini mm256 --best -o k.c` writes the winner, and it prints "Correct result" on Spike."""
    db = str(tmp_path / "s.sqlite")
    assert main(["solve", "gemmini", "mm256", "--db", db, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    out = tmp_path / "k.c"
    assert main(["export", "gemmini", "mm256", "--best", "--db", db, "-o", str(out), "--json"]) == 0
    best = json.loads(capsys.readouterr().out)["best"]
    assert (best["cycles"], best["verified_by"]) == (res["cycles"], "full")
    assert json.loads(out.with_suffix(".asm.json").read_text())["mapping"] == res["mapping"]
    run = _run(spk_root, out)
    assert run.returncode == 0 and "Correct result" in run.stdout, run.stdout[-800:] + run.stderr[-800:]


WINNERS = sorted((Path(__file__).resolve().parents[1] / "benchmarks" / "search").glob("gemmini_winners*.json"))


def _committed_winners() -> list[tuple[str, str]]:
    """(file, workload) of every committed winner, a mapping another file already holds for the
    same workload once (Spike runs the C, whatever the preset was)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for f in WINNERS:
        for w, m in sorted(json.loads(f.read_text())["winners"].items()):
            key = (w, json.dumps(m, sort_keys=True))
            if key not in seen:
                seen.add(key)
                out.append((f.name, w))
    return out


@pytest.mark.slow  # every committed guided winner of the Gemmini suite, each compiled and run on Spike
@pytest.mark.parametrize(("file", "workload"), _committed_winners())
def test_every_committed_gemmini_winner_runs_correctly_on_spike(spk_root, tmp_path, file, workload):
    """benchmarks/search/gemmini_winners*.json (scripts/gemmini_wins.py --mappings): the winners
    the committed bench report names, exported as `zomboss export` writes them (with the
    parameters of the RTL they were searched for) and checked by the program itself on Spike."""
    doc = json.loads((WINNERS[0].parent / file).read_text())
    t = get_target("gemmini")
    params = {k: int(v) for k, v in doc["params"].items()}
    wl = t.workload(workload)
    mapping = space(t.kb(params), wl.op).from_json(doc["winners"][workload], wl.shape, file)
    out = t.export(wl, tmp_path / f"{workload}.c", params, mapping)
    res = _run(spk_root, out)
    assert res.returncode == 0 and "Correct result" in res.stdout, f"{workload}: {res.stdout[-800:]}{res.stderr[-800:]}"
