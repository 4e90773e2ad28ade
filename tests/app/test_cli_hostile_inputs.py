"""Hostile and edge inputs (cache, kb check, doc compiler, integers, checkers, ignored input,
messages, cache folder), replayed through the command line as a user would run them:
`zomboss ...` in a subprocess under a 1 GB address-space limit and a limit of 10 CPU seconds (wall time would fail on a loaded machine; a hang without CPU stops after WALL).

Each probe must end with a clear result: exit 0/1 with the right output, or exit 2 with one
`zomboss: ...` line naming the input (and, where the issue asks, the doc location or rule),
never an internal error (exit 3), a traceback, an "internal inconsistency", a signal, more
than 10 s of CPU or more than 1 GB.

    python -m tests.app.test_cli_hostile_inputs          the probe script: every probe, a table
    pytest tests/app/test_cli_hostile_inputs.py         the same as tests
"""

from __future__ import annotations

import json
import os
import pickle
import re
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_BIN = Path(sys.executable).parent / "zomboss"  # the installed command (.venv/bin/zomboss)
ZOMBOSS = [str(_BIN)] if _BIN.exists() else [sys.executable, "-m", "zomboss"]
TOY = ROOT / "tests" / "data" / "toy.md"
TOY_TEXT = TOY.read_text()
MEMORY = 1 << 30  # RLIMIT_AS of every probe
SECONDS = 10  # RLIMIT_CPU of every probe: CPU seconds, so that a loaded machine does not fail it
WALL = 120.0  # and a wall-clock stop for a probe that hangs without using the CPU
# `make test` replays these (one or more per class of the issue); ZOMBOSS_PROBES=all, or the
# script (python -m tests.app.test_cli_hostile_inputs), replays every probe
QUICK = {
    "planted pickle in the KB cache",
    "simulate plena: nested loops 4194303 x 33000",
    "kb check plena: nested loops 4194303 x 33000",
    "plena sidecar naming a 19968^3 workload (tile multiples)",
    "gemmini sidecar naming a 20000^3 matmul, buffers matching",
    "--param max_bytes=4294967297",
    "kb check gemmini: loop_ws_bounds 65535, ...",
    "gemmini: --param scale_one=0",
    "gemmini --param sp_capacity_kib=1",
    "gemmini --param rs_ld=0",
    "simulate gemmini: a binary .asm",
    "simulate: a 100k-deep JSON sidecar",
    "export plena -o /",
    "a corrupt results database",
    "a ZOMBOSS_CACHE under a file",
}


@dataclass
class Result:
    code: int
    out: str
    err: str
    seconds: float  # CPU seconds


@dataclass
class Probe:
    section: int
    name: str
    make: Callable[[Path], list[str]]  # builds its files in a folder, returns the CLI arguments
    codes: tuple[int, ...]  # acceptable exit codes
    expect: str = ""  # a regex the stdout + stderr must match
    env: Callable[[Path], dict[str, str]] = lambda folder: {}  # extra environment, given the folder
    after: Callable[[Path, Result], None] | None = None  # further checks


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (SECONDS, SECONDS + 1))


def cli(args: list[str], folder: Path, env: dict[str, str] | None = None, seconds: float = WALL) -> Result:
    e = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    e.pop("ZOMBOSS_DEBUG", None)
    t0 = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        p = subprocess.run(
            [*ZOMBOSS, *args],
            cwd=folder,
            env=e,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=seconds,
            preexec_fn=_limit,
        )
    except subprocess.TimeoutExpired as x:
        out = x.stdout.decode(errors="replace") if isinstance(x.stdout, bytes) else (x.stdout or "")
        return Result(-999, out, f"TIMEOUT after {seconds:g} s", time.monotonic() - t0)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return Result(p.returncode, p.stdout, p.stderr, cpu)


def _write(folder: Path, name: str, text: str | bytes) -> Path:
    p = folder / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


def _toy(folder: Path, edit: Callable[[str], str] = lambda t: t, name: str = "m.md") -> str:
    return str(_write(folder, name, edit(TOY_TEXT)))


def _with_rule(rule: str) -> Callable[[str], str]:
    return lambda t: t.replace("rule load.fits on load", rule + "\nrule load.fits on load", 1)


def _with_param(param: str) -> Callable[[str], str]:
    return lambda t: t.replace("param max_blocks = 2", "param max_blocks = 2\n" + param, 1)


def _nest(fn: str, depth: int) -> str:
    e = "rows"
    for i in range(depth):
        e = f"{fn}({e}, {('cols', 'dram', 'local')[i % 3]} + {i})"
    return e


# ---- section 1: the cache folder holds data only -------------------------------------------


class _Marker:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):  # unpickling runs `touch path`
        return (os.system, (f"touch {self.path}",))


def _planted(folder: Path) -> list[str]:
    doc = _toy(folder)
    cache = folder / "cache"
    r = cli(["kb", "build", doc], folder, {"ZOMBOSS_CACHE": str(cache)})
    assert r.code == 0, r.err
    planted = pickle.dumps(_Marker(str(folder / "executed")))
    for entry in (cache / "kb").glob("*.json"):
        entry.write_bytes(planted)
        entry.with_suffix(".pickle").write_bytes(planted)
    (cache / "archdoc-lalr-0000000000000000.cache").write_bytes(planted)  # lark's old cache file
    (cache / "kb" / "archdoc-lalr-0000000000000000.cache").write_bytes(planted)
    return ["kb", "query", doc, "param(dim,V)"]


def _not_executed(folder: Path, r: Result) -> None:
    assert not (folder / "executed").exists(), "a planted cache file was executed"


# ---- section 2: hangs ------------------------------------------------------------------------

NESTED_LOOPS = (
    "C_LOOP_START gp1, 4194303\nC_LOOP_START gp2, 33000\nS_ADDI_INT gp5, gp5, 1\nC_LOOP_END gp2\nC_LOOP_END gp1\n"
)


def _loops(folder: Path, cmd: list[str]) -> list[str]:
    return [*cmd, str(_write(folder, "loops.asm", NESTED_LOOPS))]


# ---- section 3: memory bombs -----------------------------------------------------------------


def _export(target: str, wl: str, out: Path) -> None:
    """Set-up done in this process (the probe itself runs in a subprocess)."""
    from zomboss.target import get_target

    t = get_target(target)
    t.export(t.workload(wl), out, {})


def _plena_sidecar(folder: Path, shape: dict[str, int]) -> list[str]:
    _export("plena", "rms_4x384", folder / "k.asm")
    side = json.loads((folder / "k.asm.json").read_text())
    side["workload"] = {"id": "big", "op": "linear", "shape": shape}
    (folder / "k.asm.json").write_text(json.dumps(side))
    return ["simulate", "plena", "k.asm"]


def _gemmini_sidecar(folder: Path, spec: str, matching_buffers: bool) -> list[str]:
    _export("gemmini", "mm256", folder / "g.c")
    side = json.loads((folder / "g.asm.json").read_text())
    side["workload"] = spec
    if matching_buffers:  # what the placement of a 20000^3 matmul would be: past the buffer check
        n = 20000
        side["buffers"] = {"a": 4096, "b": 4096 + n * n, "c": 4096 + 2 * n * n, "bias": 0, "scale_bits": 939524096}
    (folder / "g.asm.json").write_text(json.dumps(side))
    return ["simulate", "gemmini", "g.asm"]


# ---- section 5: mappings at edge values --------------------------------------------------------


def _gemmini_mapping(folder: Path, tile: int) -> list[str]:
    from zomboss.target import get_target

    t = get_target("gemmini")
    m = t.reference_mappings(t.workload("mm256"), {})["library"].to_json()
    m["knobs"]["tile_i"] = tile
    return ["kb", "check", "gemmini", str(_write(folder, "m.json", json.dumps({"workload": "mm256", "mapping": m})))]


LOOP_WS_MAX = (
    "loop_ws_bounds 65535, 65535, 65535, 0, 0, 0\nloop_ws_addrs_ab 0x10000, 0x20000\n"
    "loop_ws_addrs_dc 0, 0x30000\nloop_ws_strides_ab 128, 96\nloop_ws_strides_dc 0, 96\n"
    "loop_ws 0, 0, 0, 0, 0, 0, 0, 0, 0\n"
)


# ---- section 7: results stores ------------------------------------------------------------------


def _bench(db: str) -> list[str]:
    return ["bench", "--defaults-only", "--suite", "plena", "--only", "rms_4x384", "--workers", "1", "--db", db]


def _corrupt_db(folder: Path) -> list[str]:
    _write(folder, "r.db", os.urandom(8192))
    return _bench("r.db")


def _foreign_db(folder: Path) -> list[str]:
    con = sqlite3.connect(folder / "r.db")
    con.execute("CREATE TABLE results (a, b)")
    con.execute("INSERT INTO results VALUES (1, 2)")
    con.commit()
    con.close()
    return _bench("r.db")


def _bad_row(folder: Path) -> list[str]:
    r = cli(_bench("r.db"), folder)
    assert r.code == 0, r.err
    con = sqlite3.connect(folder / "r.db")
    con.execute("UPDATE results SET payload = '{not json'")
    con.execute("UPDATE trials SET payload = '[1, 2'")
    con.commit()
    con.close()
    return _bench("r.db")


# ---- section 8: the cache and the store where users expect them -----------------------------------


def _readonly_cache(folder: Path) -> dict[str, str]:
    blocker = folder / "not-a-folder"
    blocker.write_text("x")
    return {"ZOMBOSS_CACHE": str(blocker / "cache")}


def _elsewhere(folder: Path) -> list[str]:
    (folder / "elsewhere").mkdir()
    return ["bench", "--defaults-only", "--suite", "plena", "--only", "rms_4x384", "--workers", "1"]


def _concurrent(folder: Path, r: Result) -> None:
    """Two bench processes on one store share the instances (each row computed once)."""
    args = [
        "bench",
        "--defaults-only",
        "--suite",
        "plena",
        "--only",
        "rms_4x384",
        "--only",
        "sm_64x128",
        "--workers",
        "1",
        "--db",
        "shared.db",
        "--json",
    ]
    e = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen([*ZOMBOSS, *args], cwd=folder, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-400:] for o in outs]
    con = sqlite3.connect(folder / "shared.db")
    rows = con.execute("SELECT target, workload, kind FROM results").fetchall()
    trials = con.execute("SELECT COUNT(*), COUNT(DISTINCT target || workload || mapping || mode || seed) FROM trials")
    n, distinct = trials.fetchone()
    con.close()
    assert sorted(w for _, w, _ in rows) == ["rms_4x384", "sm_64x128"]
    assert n == distinct


def _store_named(folder: Path, r: Result) -> None:
    assert not (folder / "elsewhere" / "results").exists()


def _results_env(folder: Path) -> dict[str, str]:
    return {"ZOMBOSS_RESULTS": str(folder / "store")}


def _deep_sidecar(folder: Path) -> list[str]:
    _write(folder, "k.asm.json", "[" * 100_000 + "]" * 100_000)
    return ["simulate", "plena", str(_write(folder, "k.asm", "S_ADDI_INT gp1, gp0, 1\n"))]


PROBES: list[Probe] = [
    # 1 code execution from the cache
    Probe(1, "planted pickle in the KB cache", _planted, (0,), r"param\(dim,4\)", after=_not_executed),
    # 2 hangs
    Probe(
        2,
        "simulate plena: nested loops 4194303 x 33000",
        lambda f: _loops(f, ["simulate", "plena"]),
        (1, 2),
        r"--max-instructions",
    ),
    Probe(
        2,
        "kb check plena: nested loops 4194303 x 33000",
        lambda f: _loops(f, ["kb", "check", "plena"]),
        (1, 2),
        r"--max-instructions",
    ),
    Probe(
        2,
        "kb check plena: a long loop streams under the budget",
        lambda f: [
            "kb",
            "check",
            "plena",
            str(_write(f, "l.asm", "C_LOOP_START gp1, 40000\nS_ADDI_INT gp5, gp5, 1\nC_LOOP_END gp1\n")),
            "--asp-limit",
            "2000",
        ],
        (0,),
        r"80,?00\d instructions checked",
    ),
    # 3 memory bombs
    Probe(
        3,
        "min nested 25 deep",
        lambda f: ["kb", "build", _toy(f, _with_rule(f'rule load.bomb on load "n": {_nest("min", 25)} >= 0'))],
        (2,),
        r"m\.md:\d+: rule load\.bomb .*1024 ASP rules",
    ),
    Probe(
        3,
        "params that square each other",
        lambda f: [
            "kb",
            "build",
            _toy(f, _with_param("param a = 65536\nparam b = a * a\nparam c = b * b\nparam d = c * c\nparam e = d * d")),
        ],
        (2,),
        r"m\.md:\d+(:\d+)?: .*parameter 'd'.*128-bit",
    ),
    Probe(
        3,
        "1 << (1 << 33)",
        lambda f: ["kb", "build", _toy(f, _with_param("param huge = 1 << (1 << 33)"))],
        (2,),
        r"m\.md:\d+(:\d+)?: .*shift",
    ),
    Probe(
        3,
        "plena sidecar naming a 20000x20000 workload",
        lambda f: _plena_sidecar(f, {"M": 20000, "K": 20000, "N": 20000}),
        (2,),
        r"k\.asm\.json: .*(20000|bytes|elements)",
    ),
    Probe(
        3,
        "plena sidecar naming a 19968^3 workload (tile multiples)",
        lambda f: _plena_sidecar(f, {"M": 19968, "K": 19968, "N": 19968}),
        (2,),
        r"k\.asm\.json: .*(MiB|bytes|limit)",
    ),
    Probe(
        3,
        "gemmini sidecar naming a 20000^3 matmul",
        lambda f: _gemmini_sidecar(f, "matmul:M=20000,N=20000,K=20000", False),
        (2,),
        r"g\.asm\.json: ",
    ),
    Probe(
        3,
        "gemmini sidecar naming a 20000^3 matmul, buffers matching",
        lambda f: _gemmini_sidecar(f, "matmul:M=20000,N=20000,K=20000", True),
        (2,),
        r"g\.asm\.json: .*(MiB|bytes|limit)",
    ),
    Probe(
        3,
        "default gemmini on a 20000^3 matmul",
        lambda f: ["default", "gemmini", "matmul:M=20000,N=20000,K=20000", "--verify", "full"],
        (2,),
        r"(MiB|bytes|limit)",
    ),
    Probe(
        3,
        "default plena on a 19968^3 linear",
        lambda f: ["default", "plena", "linear:M=19968,K=19968,N=19968", "--verify", "full"],
        (2,),
        r"GiB, more than the 256 MiB",
    ),
    # 4 silent 32-bit wrap-around
    Probe(
        4,
        "--param max_bytes=4294967297",
        lambda f: ["kb", "query", "gemmini", "param(max_bytes,V)", "--param", "max_bytes=4294967297"],
        (0,),
        r'^param\(max_bytes,"4294967297"\)$',
    ),
    Probe(
        4,
        "doc range int 0..99999999999",
        lambda f: [
            "kb",
            "query",
            _toy(f, lambda t: t.replace("imm: int 0..255", "imm: int 0..99999999999")),
            'operand_range(addi,"imm",L,H)',
        ],
        (0,),
        r'operand_range\(addi,"imm",0,"99999999999"\)',
    ),
    # 5 refusals name their rule
    Probe(5, "mapping tile_i = 0", lambda f: _gemmini_mapping(f, 0), (1,), r"matmul\.tile_i\.range"),
    Probe(5, "mapping tile_i = 65535", lambda f: _gemmini_mapping(f, 65535), (1,), r"map\.hw_spad_fit"),
    Probe(5, "mapping tile_i = 2^31", lambda f: _gemmini_mapping(f, 2**31), (1,), r"map\.hw_acc_fit"),
    Probe(
        5,
        "kb check gemmini: loop_ws_bounds 65535, ...",
        lambda f: ["kb", "check", "gemmini", str(_write(f, "ws.asm", LOOP_WS_MAX))],
        (1,),
        r"loop_ws\.capacity",
    ),
    Probe(
        5,
        "simulate gemmini: loop_ws_bounds 65535, ...",
        lambda f: ["simulate", "gemmini", str(_write(f, "ws.asm", LOOP_WS_MAX))],
        (1, 2),
        r"loop_ws\.capacity",
    ),
    Probe(
        5,
        "division by zero in a rule",
        lambda f: [
            "kb",
            "check",
            _toy(f, _with_rule('rule load.ratio on load "r": rows / (cols - 4) >= 0')),
            str(_write(f, "p.txt", "load 4096, 0, 4, 4\nload 4096, 0, 8, 4\n")),
        ],
        (1,),
        r"load\.ratio",
    ),
    # 6 silently ignored input
    Probe(
        6, "gemmini: unknown --param", lambda f: ["default", "gemmini", "mm256", "--param", "bogus=3"], (2,), r"bogus"
    ),
    Probe(
        6,
        "gemmini: --param scale_one=0",
        lambda f: ["default", "gemmini", "mm256", "--param", "scale_one=0"],
        (2,),
        r"scale_one",
    ),
    Probe(
        6,
        "plena: unknown --param",
        lambda f: ["default", "plena", "rms_4x384", "--param", "bogus=3"],
        (2,),
        r"bogus",
    ),
    Probe(
        6,
        "doc defining MVIN and mvin",
        lambda f: [
            "kb",
            "build",
            _toy(
                f,
                lambda t: t.replace(
                    "instr fence()\n  unit ctrl", "instr fence()\n  unit ctrl\n\ninstr FENCE()\n  unit ctrl"
                ),
            ),
        ],
        (2,),
        r"m\.md:\d+:\d+: .*only by case",
    ),
    Probe(
        6,
        "doc with an instruction named not",
        lambda f: [
            "kb",
            "build",
            _toy(
                f,
                lambda t: t.replace(
                    "instr fence()\n  unit ctrl", "instr fence()\n  unit ctrl\n\ninstr not()\n  unit ctrl"
                ),
            ),
        ],
        (2,),
        r"m\.md:\d+:\d+: .*'not'",
    ),
    Probe(
        6,
        "doc with an instruction named __",
        lambda f: [
            "kb",
            "build",
            _toy(
                f,
                lambda t: t.replace(
                    "instr fence()\n  unit ctrl", "instr fence()\n  unit ctrl\n\ninstr __()\n  unit ctrl"
                ),
            ),
        ],
        (2,),
        r"m\.md:\d+:\d+: .*'__'",
    ),
    Probe(6, "empty doc", lambda f: ["kb", "build", str(_write(f, "e.md", ""))], (2,), r"e\.md.*isa"),
    Probe(
        6,
        "doc without isa blocks",
        lambda f: ["kb", "build", str(_write(f, "e.md", "# prose\n\nonly prose\n"))],
        (2,),
        r"e\.md.*isa",
    ),
    Probe(
        6,
        "kb query '#include \"file\"'",
        lambda f: ["kb", "query", "gemmini", '#include "/etc/passwd"'],
        (2,),
        r"#include|atom",
    ),
    Probe(
        6,
        "bench --only an unknown id",
        lambda f: ["bench", "--defaults-only", "--only", "nosuch", "--db", "r.db", "--workers", "1"],
        (2,),
        r"nosuch",
    ),
    # 7 internal errors instead of messages
    Probe(
        7,
        "gemmini --param sp_capacity_kib=1",
        lambda f: ["default", "gemmini", "mm256", "--param", "sp_capacity_kib=1"],
        (2,),
        r"sp_capacity_kib",
    ),
    Probe(
        7,
        "gemmini --param acc_capacity_kib=1",
        lambda f: ["default", "gemmini", "mm256", "--param", "acc_capacity_kib=1"],
        (2,),
        r"acc_capacity_kib",
    ),
    Probe(
        7, "gemmini --param rs_ld=0", lambda f: ["default", "gemmini", "mm256", "--param", "rs_ld=0"], (2,), r"rs_ld"
    ),
    Probe(
        7,
        "kb check: a binary .asm",
        lambda f: ["kb", "check", "gemmini", str(_write(f, "b.asm", bytes(range(256)) * 8))],
        (2,),
        r"b\.asm: not UTF-8",
    ),
    Probe(
        7,
        "simulate gemmini: a binary .asm",
        lambda f: ["simulate", "gemmini", str(_write(f, "b.asm", bytes(range(256)) * 8))],
        (2,),
        r"b\.asm: not UTF-8",
    ),
    Probe(
        7,
        "simulate plena: a binary .asm",
        lambda f: ["simulate", "plena", str(_write(f, "b.asm", bytes(range(256)) * 8))],
        (2,),
        r"b\.asm: not UTF-8",
    ),
    Probe(
        7,
        "kb check: 100k-deep JSON",
        lambda f: ["kb", "check", "gemmini", str(_write(f, "d.json", "[" * 100_000 + "]" * 100_000))],
        (2,),
        r"d\.json: JSON nested",
    ),
    Probe(
        7,
        "simulate: a 100k-deep JSON sidecar",
        _deep_sidecar,
        (2,),
        r"k\.asm\.json: JSON nested",
    ),
    Probe(
        7,
        "export --mapping: 100k-deep JSON",
        lambda f: [
            "export",
            "gemmini",
            "mm256",
            "-o",
            "k.c",
            "--mapping",
            str(_write(f, "d.json", "{" + '"a":{' * 50_000 + "}" * 50_001)),
        ],
        (2,),
        r"d\.json: JSON nested",
    ),
    Probe(7, "export gemmini -o /", lambda f: ["export", "gemmini", "mm256", "-o", "/"], (2,), r"/: "),
    Probe(7, "export plena -o /", lambda f: ["export", "plena", "rms_4x384", "-o", "/"], (2,), r"/: "),
    Probe(
        7,
        "export into a missing folder",
        lambda f: ["export", "plena", "rms_4x384", "-o", "no/such/k.asm"],
        (0,),
        r"wrote no/such/k\.asm",
    ),
    Probe(
        7,
        "export over a folder's file in an unwritable place",
        lambda f: ["export", "plena", "rms_4x384", "-o", "/proc/k.asm"],
        (2,),
        r"/proc/k\.asm",
    ),
    Probe(7, "a corrupt results database", _corrupt_db, (2,), r"r\.db: "),
    Probe(7, "a foreign results database", _foreign_db, (2,), r"r\.db: .*(not a Zomboss|results store)"),
    Probe(7, "one bad row in the results database", _bad_row, (0,), r"warning: .*skipping"),
    # 8 the cache and the store where users expect them
    Probe(
        8,
        "an unwritable ZOMBOSS_CACHE",
        lambda f: ["kb", "query", _toy(f), "param(dim,V)"],
        (0,),
        r"warning: cannot write the KB cache",
        env=lambda f: {"ZOMBOSS_CACHE": "/proc/zomboss-cache"},
    ),
    Probe(
        8,
        "a ZOMBOSS_CACHE under a file",
        lambda f: ["kb", "query", _toy(f), "param(dim,V)"],
        (0,),
        r"param\(dim,4\)",
        env=_readonly_cache,
    ),
    Probe(
        8,
        "bench from another folder writes the documented store and says where",
        lambda f: _elsewhere(f),
        (0,),
        r"store",
        env=_results_env,
        after=_store_named,
    ),
    Probe(
        8, "two concurrent bench runs share one store", lambda f: ["workloads", "plena"], (0,), "", after=_concurrent
    ),
]


def replay(probe: Probe, folder: Path) -> tuple[Result, list[str]]:
    """Run one probe in `folder`; (its result, what is wrong with it)."""
    args = probe.make(folder)
    env = probe.env(folder)
    cwd = folder / "elsewhere" if (folder / "elsewhere").is_dir() else folder
    r = cli(args, cwd, env)
    problems = []
    both = r.out + r.err
    if r.code == -999:
        problems.append(f"no answer within {WALL:g} s")
    elif r.code in (-24, -9, 128 + 24):  # SIGXCPU (or the hard kill after it)
        problems.append(f"more than {SECONDS} CPU seconds")
    elif r.code not in probe.codes:
        problems.append(f"exit {r.code} (expected {probe.codes})")
    for bad in ("Traceback", "internal error", "internal inconsistency", "MemoryError", "out of memory"):
        if bad in both:
            problems.append(f"prints {bad!r}")
    last = (r.err.strip().splitlines() or [""])[-1]
    if r.code == 2 and not re.match(r"zomboss: \S", last):
        problems.append(f"a refusal must end with one 'zomboss: ...' line: {r.err[-300:]!r}")
    if probe.expect and not re.search(probe.expect, both, re.M):
        problems.append(f"output does not match {probe.expect!r}")
    if probe.after is not None and not problems:
        try:
            probe.after(folder, r)
        except AssertionError as e:
            problems.append(f"check failed: {e}")
    return r, problems


@pytest.fixture(scope="module", autouse=True)
def _warm_kbs():
    """Build the shipped KBs once (into the session's cache) so probes time their own work."""
    from zomboss.knowledge import load_kb
    from zomboss.target import doc_path

    for name in ("gemmini", "plena"):
        load_kb(doc_path(name))


_ALL = os.environ.get("ZOMBOSS_PROBES") == "all"


@pytest.mark.slow
@pytest.mark.parametrize("probe", [p for p in PROBES if _ALL or p.name in QUICK], ids=lambda p: f"{p.section}-{p.name}")
def test_probe(probe, tmp_path):
    r, problems = replay(probe, tmp_path)
    assert not problems, (
        f"{problems}\nexit {r.code} in {r.seconds:.1f} s\nstdout: {r.out[-600:]}\nstderr: {r.err[-600:]}"
    )


def main() -> int:
    os.environ.setdefault("ZOMBOSS_CACHE", tempfile.mkdtemp(prefix="zomboss-probe-cache-"))
    os.environ.setdefault("ZOMBOSS_RESULTS", tempfile.mkdtemp(prefix="zomboss-probe-results-"))
    from zomboss.knowledge import load_kb
    from zomboss.target import doc_path

    for name in ("gemmini", "plena"):
        load_kb(doc_path(name))
    failed = 0
    for probe in PROBES:
        with tempfile.TemporaryDirectory(prefix="zomboss-probe-") as d:
            r, problems = replay(probe, Path(d))
        failed += bool(problems)
        last = (r.err.strip().splitlines() or r.out.strip().splitlines() or [""])[-1][:110]
        status = "ok  " if not problems else "FAIL"
        print(f"{status} {probe.section} {probe.name:58s} exit {r.code:3d} {r.seconds:5.1f}s  {last}")
        for p in problems:
            print(f"       {p}")
    print(f"{len(PROBES) - failed}/{len(PROBES)} probes pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
