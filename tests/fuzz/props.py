"""The fuzzing properties, one per class of hostile input. Each runs its example in a forked
child under a memory and a time limit (`harness.run`) and asserts a clear error or a correct
result: never a hang, an unbounded allocation, a traceback, a silent wrap-around or an
"internal inconsistency" between the Python and ASP checks.

`PROPERTIES` maps a class name to (strategies, check); tests/fuzz/test_fuzz.py runs each
briefly under `make test`, scripts/fuzz.py runs them for minutes and counts examples.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import json
import os
import pickle
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.fuzz import strategies as S
from tests.fuzz.harness import check, run
from zomboss import expr as ex

EXAMPLES: collections.Counter[str] = collections.Counter()  # examples tried, per class
OUTCOMES: collections.Counter[tuple[str, str]] = collections.Counter()  # (class, outcome kind)
_TMP = Path(tempfile.mkdtemp(prefix="zomboss-fuzz-"))
_COUNTER = itertools.count()


def _note(cls: str, kind: str) -> None:
    EXAMPLES[cls] += 1
    OUTCOMES[(cls, kind)] += 1


def _fresh(name: str, text: str) -> Path:
    d = _TMP / f"{next(_COUNTER)}"
    d.mkdir()
    p = d / name
    p.write_text(text, encoding="utf-8")
    return p


@functools.cache
def _kb(name: str) -> Any:
    from zomboss.knowledge import load_kb
    from zomboss.target import doc_path

    return load_kb(S.TOY if name == "toy" else doc_path(name))


# ---- 1. expressions: the Python semantics and the ASP translation agree -------------------


def _agree(e: ex.Expr, values: tuple[int, ...]) -> tuple[str, bool | None, bool | None, bool]:
    """(status, python says violated, clingo says violated, some value beyond 32 bits)."""
    from zomboss.knowledge import solve_atoms

    env = dict(zip(S.VARS, values, strict=False))
    names = set(S.VARS)

    def violated(expr: ex.Expr) -> bool:
        f = ex.compile_python(expr, lambda n: n in names, lambda n: False)
        try:
            return not f(env)
        except ex.EVAL_ERRORS:
            return True

    try:
        ex.check_limits(e)
    except ex.ExprError:
        return "limit", None, None, False
    py = violated(e)
    folded = ex.fold(e, {})
    assert violated(folded) == py, f"folding changed the meaning: {ex.show(e)} -> {ex.show(folded)} at {env}"
    src = ex.python_source(folded, lambda r: f"env[{r.name!r}]", wide=True)
    try:
        eval(compile(src, "<wide>", "eval"), {**ex.PY_GLOBALS, "env": env})  # noqa: S307 - generated from our AST
        wide = False
    except ex.Wide:
        wide = True
    except ex.EVAL_ERRORS:
        wide = False
    ctx = ex.AspContext(lambda r, v: [f"val({json.dumps(r.name)},{v})"], lambda n: False)
    try:
        conjs = ex.asp_violated(folded, ctx)
    except ex.ExprError as err:
        assert "ASP rules" in str(err) or "32-bit" in str(err), str(err)
        return "untranslatable", py, None, wide
    facts = "".join(
        f"val({json.dumps(k)},{v})." if ex.ASP_MIN <= v <= ex.ASP_MAX else f"wide({json.dumps(k)})."
        for k, v in env.items()
    )
    rules = "\n".join(f"violated :- {', '.join(c) or '#true'}." for c in conjs)
    atoms = solve_atoms("#defined val/2. #defined wide/1.\n" + facts + "\n" + rules + "\n")
    return "ok", py, any(a.name == "violated" for a in atoms), wide


def check_expr(e: ex.Expr, values: tuple[int, ...]) -> None:
    out = run(lambda: _agree(e, values))
    _note("expressions", out.kind if out.kind != "ok" else out.value[0])
    check(out)
    if out.kind == "ok":
        status, py, asp, wide = out.value
        if status == "ok" and not wide:
            assert py == asp, (
                f"Python says {'violated' if py else 'holds'}, clingo the opposite: {ex.show(e)} at {values}"
            )


# ---- 2. deep nesting and case-split bombs ------------------------------------------------


def check_bomb(fn: str, depth: int) -> None:
    e = ex.Bin(">=", S.nested(fn, depth), ex.Int(0))

    def go() -> str:
        ctx = ex.AspContext(lambda r, v: [f"val({v})"], lambda n: False)
        try:
            ex.check_limits(e)
            ex.asp_violated(ex.fold(e, {}), ctx)
        except ex.ExprError as err:
            return str(err)
        return "translated"

    out = run(go, seconds=10)
    _note("bombs", out.kind)
    check(out)


# ---- 3. docs: generated rules, parameters, corrupted text, hostile names -----------------


def _compile(path: Path) -> Any:
    from zomboss.knowledge import load_kb, solve_atoms

    kb = load_kb(path, use_cache=False)
    solve_atoms(kb.asp)  # the KB is a program clingo reads (and satisfiable)
    return kb


def check_rule_doc(doc: tuple[str, ex.Expr], program: str) -> None:
    text, _ = doc
    path = _fresh("toy.md", text)
    prog = _fresh("p.txt", program)

    def go() -> str:
        from zomboss.legality import check_program_text

        kb = _compile(path)
        r = check_program_text(kb, program, str(prog), None, {}, max_instructions=10_000, progress=None)
        return r.text()

    out = run(go)
    _note("generated rules", out.kind)
    check(out)


def check_param_doc(text: str) -> None:
    path = _fresh("toy.md", text)

    def go() -> list[tuple[str, str, str]]:
        from zomboss.knowledge import query

        kb = _compile(path)
        got = {a.split(",", 1)[0][6:]: a.split(",", 1)[1][:-1] for a in query(kb.asp, "param(N,V)")}
        return [(k, str(v), got.get(k, "")) for k, v in kb.params.items()]

    out = run(go)
    _note("parameters", out.kind)
    check(out, located=str(path) + ":")
    if out.kind == "ok":
        for name, value, shown in out.value:  # every fact is exact: a number, or the string of one
            assert shown in (value, f'"{value}"'), f"param({name}) is {value} but the KB says {shown}"


def check_corrupted_doc(text: str) -> None:
    _corrupted(text, "corrupted docs")


def check_corrupted_shipped_doc(text: str) -> None:
    _corrupted(text, "corrupted shipped docs")


def _corrupted(text: str, cls: str) -> None:
    path = _fresh("doc.md", text)
    out = run(lambda: _compile(path).counts)
    _note(cls, out.kind)
    check(out, located=str(path) + ":")


def check_hostile_names(text: str) -> None:
    path = _fresh("toy.md", text)
    out = run(lambda: _compile(path).counts)
    _note("names", out.kind)
    check(out, located=str(path) + ":")


# ---- 4. programs under kb check ------------------------------------------------------------


def check_program(name: str, program: str) -> None:
    kb = _kb(name)
    prog = _fresh("p.asm", program)

    def go() -> str:
        from zomboss.legality import check_program_text
        from zomboss.target import get_target

        target = None if name == "toy" else get_target(name)
        r = check_program_text(kb, program, str(prog), target, {}, max_instructions=200_000, progress=None)
        return r.text()[-200:]

    out = run(go, seconds=60)
    _note(f"programs ({name})", out.kind)
    check(out)


def check_hostile_loops(depth: int, counts: list[int], body: str) -> None:
    """PLENA hardware loops with huge trip counts: the budget stops them, with a message."""
    kb = _kb("plena")
    lines = [f"C_LOOP_START gp{i + 1}, {c}" for i, c in enumerate(counts[:depth])]
    lines += [body] + [f"C_LOOP_END gp{i + 1}" for i in reversed(range(min(depth, len(counts))))]
    program = "\n".join(lines) + "\n"
    prog = _fresh("loop.asm", program)

    def go() -> str:
        from zomboss.legality import check_program_text
        from zomboss.target import get_target

        return check_program_text(
            kb, program, str(prog), get_target("plena"), {}, asp_limit=500, max_instructions=5_000, progress=None
        ).text()

    out = run(go, seconds=60)
    _note("hostile loops", out.kind)
    check(out)


# ---- 5. mapping files -------------------------------------------------------------------------

MAPPING_BASES = {
    "toy": (
        {"op": "matmul", "knobs": {"tile_i": 4, "tile_k": 4, "df": "os"}},
        None,
    ),
}


def check_mapping(name: str, text: str) -> None:
    path = _fresh("m.json", text)
    target = str(S.TOY) if name == "toy" else name

    def go() -> str:
        from zomboss.app.check import check_file

        return check_file(target, path, {}, progress=False).text()

    _kb(name)
    out = run(go)
    _note(f"mappings ({name})", out.kind)
    check(out)


# ---- 6. parameter overrides ---------------------------------------------------------------------


def check_overrides(name: str, ov: dict[str, int]) -> None:
    def go() -> list[tuple[str, str, str]]:
        from zomboss.knowledge import load_kb, query
        from zomboss.target import doc_path

        kb = load_kb(S.TOY if name == "toy" else doc_path(name), ov, use_cache=False)
        got = {a.split(",", 1)[0][6:]: a.split(",", 1)[1][:-1] for a in query(kb.asp, "param(N,V)")}
        return [(k, str(v), got.get(k, "")) for k, v in kb.params.items()]

    out = run(go, seconds=60)
    _note(f"overrides ({name})", out.kind)
    check(out)
    if out.kind == "ok":
        for pname, value, shown in out.value:
            assert shown in (value, f'"{value}"'), f"param({pname}) is {value} but the KB says {shown}"


def check_target_overrides(name: str, ov: dict[str, int], program: str) -> None:
    """Parameter overrides through a target: its configuration, Candidate-0 of a small
    workload (lowered and simulated timing-only) and a hostile program under the budget."""
    prog = _fresh("p.asm", program)

    def go() -> str:
        from zomboss.errors import ZombossError
        from zomboss.target import Mode, get_target

        t = get_target(name)
        wl = t.workload(SMALL[name])
        inst = t.instance(wl, ov)
        ev = t.evaluate(inst, t.reference_mappings(wl, ov)["library"], Mode.TIMING)
        try:
            t.simulate_file(prog, ov, 50_000)
        except ZombossError as e:  # a refusal of the program, not of the overrides
            return f"{ev.cycles} cycles; program: {str(e)[:80]}"
        return f"{ev.cycles} cycles"

    out = run(go, seconds=60)
    _note(f"target overrides ({name})", out.kind)
    check(out)


SMALL = {"gemmini": "matmul:M=32,N=32,K=32", "plena": "rms_4x384", "vta": "dense:M=16,N=16,K=16"}


# ---- issue #29: CLI argument values, VTA sidecars ---------------------------------------------

_COUNTS = {"--budget": 1, "--samples": 1, "--iterations": 1, "--max-instructions": 1, "--llm-max-rounds": 1}


def _accepted(flag: str, v: object) -> bool:
    """Whether a parsed value is inside the range docs/cli.md gives the flag."""
    if flag in _COUNTS or flag == "--workers":
        return isinstance(v, int) and v >= 1
    if flag == "--asp-limit":
        return isinstance(v, int) and v >= 0
    if flag == "--seed":
        return isinstance(v, int) and 0 <= v < 1 << 32
    if flag == "--gap":
        return isinstance(v, float) and 0.0 <= v <= 1.0
    if flag == "--llm-base-url":
        return isinstance(v, str) and v.startswith(("http://", "https://"))
    return isinstance(v, float) and 0.0 < v < float("inf")  # seconds


def check_cli_argument(case: tuple[tuple[str, ...], str], value: str) -> None:
    """A flag's value is parsed into its documented range or refused by argparse with a
    one-line error naming the flag (exit 2): never an exception, never a value outside it."""
    prefix, flag = case

    def go() -> tuple[str, object, str]:
        import contextlib
        import io

        from zomboss.app.cli import build_parser

        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                ns = build_parser().parse_args([*prefix, f"{flag}={value}"])
            except SystemExit as e:
                return "exit", e.code, err.getvalue()
        return "ok", getattr(ns, flag[2:].replace("-", "_")), err.getvalue()

    out = run(go, seconds=30)
    _note("CLI arguments", out.kind)
    check(out)
    if out.kind == "ok":
        kind, v, err = out.value
        if kind == "exit":
            assert v == 2 and f"error: argument {flag}" in err, f"{flag}={value!r}: {err[-300:]}"
        else:
            assert _accepted(flag, v), f"{flag}={value!r} was accepted as {v!r}"


@functools.cache
def _vta_export() -> Path:
    from zomboss.target import get_target

    t = get_target("vta")
    d = _TMP / "vta-export"
    d.mkdir(exist_ok=True)
    return t.export(t.workload(SMALL["vta"]), d / "k.asm", {})


def check_vta_sidecar(edits: dict[str, object]) -> None:
    """A VTA export whose sidecar was edited: verified, or refused with one line naming the
    sidecar; never a NumPy error, a hang or an allocation without limit."""
    base = _vta_export()
    side = _fresh("k.asm.json", json.dumps({**json.loads(base.with_name("k.asm.json").read_text()), **edits}))
    prog = side.with_name("k.asm")
    prog.write_text(base.read_text())

    def go() -> bool | None:
        from zomboss.target import get_target

        return get_target("vta").simulate_file(prog, {}, 200_000).verified

    out = run(go, seconds=60)
    _note("VTA sidecars", out.kind)
    check(out, located=str(side) if out.kind == "error" and "workload" not in edits else None)
    if out.kind == "ok" and not {"dram", "workload"} & set(edits):  # the same workload and bytes, any seed
        assert out.value is True, f"the unedited program failed verification with {edits}"


# ---- 7. the cache folder: planted and modified entries --------------------------------------


class _Planted:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return (os.system, (f"touch {self.marker}",))


def check_cache(kind: str, data: bytes, pos: int) -> None:
    cache = _TMP / f"cache{next(_COUNTER)}"
    marker = cache.parent / f"{cache.name}.executed"
    doc = _fresh("toy.md", S.TOY_TEXT)

    def go() -> tuple[bool, dict[str, int]]:
        os.environ["ZOMBOSS_CACHE"] = str(cache)
        from zomboss.knowledge import cache_dir, forget_loaded, load_kb

        forget_loaded()
        first = load_kb(doc)
        (entry,) = cache_dir().glob("*.json")
        payload = entry.read_bytes()
        if kind == "pickle":
            planted = pickle.dumps(_Planted(str(marker)))
            entry.write_bytes(planted)
            entry.with_suffix(".pickle").write_bytes(planted)
        elif kind == "bytes":
            entry.write_bytes(data)
        elif kind == "flip":
            i = pos % len(payload)
            entry.write_bytes(payload[:i] + bytes([payload[i] ^ 0x20]) + payload[i + 1 :])
        else:  # a well-formed entry whose program runs a script, with a matching checksum
            import hashlib

            head, _, body = payload.partition(b"\n")
            body = body.replace(b"#defined wide/2.", b'#script (python)\\nimport os; os.system(\\"touch x\\")\\n#end.')
            header = json.loads(head)
            header["sha256"] = hashlib.sha256(body).hexdigest()
            entry.write_bytes(json.dumps(header).encode() + b"\n" + body)
        forget_loaded()
        second = load_kb(doc)
        return second.asp == first.asp, second.params

    out = run(go)
    _note("cache entries", out.kind)
    check(out)
    assert not marker.exists(), "a planted cache file was executed"
    if out.kind == "ok":
        same, params = out.value
        assert same and params["dim"] == 4


# ---- results stores, special files, LLM recordings (issue 29) -----------------------------------


def check_store(schema: dict[str, list[str]], rows: dict[str, list[list[object]]]) -> None:
    """A database given as `--db` with any tables and rows: opened (a Zomboss store) or refused
    unchanged (anything else); an opened one answers every read, skipping bad rows."""
    import hashlib
    import sqlite3

    db = _TMP / f"store{next(_COUNTER)}.db"
    con = sqlite3.connect(db)
    for name, cols in schema.items():
        con.execute(f'CREATE TABLE "{name}" ({", ".join(f"{chr(34)}{c}{chr(34)}" for c in cols)})')
        for row in rows.get(name, []):
            row = (row + [None] * len(cols))[: len(cols)]
            con.execute(f'INSERT INTO "{name}" VALUES ({",".join("?" * len(cols))})', row)
    con.commit()
    con.close()
    before = hashlib.sha256(db.read_bytes()).hexdigest()

    def go() -> str:
        from zomboss.results import Store

        s = Store(db)
        try:
            list(s.rows())
            s.trials("t", "w", "c")
            s.winner("t", "w", "c")
            s.claim("t", "w", "k", "c")
            s.claimant("t", "w", "k", "c")
            s.release("t", "w", "k", "c")
        finally:
            s.close()
        return "opened"

    out = run(go)
    _note("stores", out.kind)
    check(out, located=str(db))
    if out.kind == "error":
        assert hashlib.sha256(db.read_bytes()).hexdigest() == before, "a refused database was changed"


def _special(kind: str) -> Path:
    d = _TMP / f"special{next(_COUNTER)}"
    d.mkdir()
    if kind == "folder":
        return d
    if kind.endswith("fifo"):
        os.mkfifo(d / "fifo")
    if kind.startswith("link:"):
        target = kind[5:]
        link = d / "file.md"
        link.symlink_to(d / "fifo" if target == "fifo" else target)
        return link
    return d / "fifo" if kind == "fifo" else Path(kind)


def check_special_input(kind: str, reader: str) -> None:
    """A special file as every kind of input: refused at its limit or read (empty), never read
    until memory runs out, never a hang."""
    path = _special(kind)

    def go() -> None:
        if reader == "program":
            from zomboss.app.check import check_file

            check_file(str(S.TOY), path, {}, progress=False)
        elif reader == "doc":
            from zomboss.knowledge import load_kb

            load_kb(path, use_cache=False)
        elif reader == "replay":
            from zomboss.llm import LlmClient, LlmConfig

            LlmClient(LlmConfig(model="m"), replay=path).chat([{"role": "user", "content": "x"}])
        else:
            from zomboss.util import read_json

            read_json(path, "a sidecar")

    out = run(go)
    _note("special files (inputs)", out.kind)
    check(out)


def check_special_output(kind: str) -> None:
    """A special file as an output: refused, and left as it was."""
    path = _special(kind)
    if not path.exists() and not path.is_symlink():
        return
    mode = path.lstat().st_mode

    def go() -> None:
        from zomboss.util import append_text, atomic_write

        try:
            atomic_write(path, "x")
        finally:
            append_text(path, "y")

    out = run(go)
    _note("special files (outputs)", out.kind)
    check(out)
    assert out.kind == "error" and path.lstat().st_mode == mode, f"{path} was written: {out}"


def check_recording(data: bytes) -> None:
    """Any `--llm-replay` file: replayed, or refused with a message."""
    path = _TMP / f"rec{next(_COUNTER)}.jsonl"
    path.write_bytes(data)

    def go() -> None:
        from zomboss.llm import LlmClient, LlmConfig

        c = LlmClient(LlmConfig(model="m"), replay=path)
        for _ in range(2):
            c.chat([{"role": "user", "content": "x"}])

    out = run(go)
    _note("recordings", out.kind)
    check(out)


def _decodings(text: str) -> list[str]:
    """`text` in every encoding an echo of the key could take, decoded."""
    import base64
    import binascii
    import html
    import urllib.parse

    out = [text, urllib.parse.unquote(text), html.unescape(text)]
    with contextlib.suppress(ValueError):
        out += [str(x) for x in _strings_of(json.loads(text))]
    for run_ in re.findall(r"[A-Za-z0-9+/=_-]{8,}", text):
        for skip in range(4):
            chunk = run_[skip:]
            chunk = chunk[: len(chunk) // 4 * 4]
            with contextlib.suppress(binascii.Error, ValueError):
                out.append(base64.b64decode(chunk + "==", altchars=b"-_" if "-" in chunk else None).decode("latin-1"))
    return [d for x in out for d in (x, urllib.parse.unquote(x), html.unescape(x))]


def _strings_of(v: object) -> list[str]:
    if isinstance(v, str):
        try:
            return [v, *_strings_of(json.loads(v))] if v[:1] in "[{" else [v]
        except ValueError:
            return [v]
    if isinstance(v, list):
        return [s for x in v for s in _strings_of(x)]
    if isinstance(v, dict):
        return [s for k, x in v.items() for s in (k, *_strings_of(x))]
    return []


def check_scrub(case: tuple[str, str]) -> None:
    """An endpoint echoing the key in any encoding: nothing the client keeps holds it."""
    key, body = case
    from zomboss.llm.client import Scrubber

    clean = Scrubber(key)(body)
    _note("recordings (key echoes)", "ok")
    assert not any(key in d for d in _decodings(clean)), f"the key survived scrubbing: {clean[:300]}"


# ---- 8. kb query patterns ---------------------------------------------------------------------


def check_query(pattern: str) -> None:
    kb = _kb("toy")

    def go() -> list[str]:
        from zomboss.knowledge import query

        return query(kb.asp, pattern)[:5]

    out = run(go)
    _note("query patterns", out.kind)
    check(out)
    if out.kind == "ok":
        assert not re.search(r"#|@|:-", pattern.split('"')[0]), f"{pattern!r} was accepted"


_patterns = st.one_of(
    st.text('abcpqrVXY_(),"#:-.@ 0123456789%*', max_size=30),
    st.sampled_from(
        [
            "param(dim,V)",
            "param(V)",
            '#include "/etc/passwd"',
            "p) :- q. r(",
            "param(X,@f(1))",
            "rule_text(I,T)",
            "x(" * 40 + ")" * 40,
            "param(dim,4294967297)",
            "capacity(M,R).",
            "a :- b",
            "#script (python) #end",
            "violation(_,_)",
            "operand_range(M,N,L,H)",
        ]
    ),
)


@functools.cache
def _target_signatures(name: str) -> dict[str, list[str]]:
    return S.signatures(_kb(name))


def _programs(name: str) -> st.SearchStrategy[str]:
    return st.deferred(lambda: S.programs(_target_signatures(name)))


@functools.cache
def _base_mapping(name: str) -> tuple[dict, object]:
    if name == "toy":
        return MAPPING_BASES["toy"]
    from zomboss.target import get_target

    t = get_target(name)
    wl = t.suite()[0]
    m = t.reference_mappings(wl, {})["library"]
    return m.to_json(), wl.id


def _mapping_case(name: str) -> st.SearchStrategy[tuple[str, str]]:
    def build(_: int) -> st.SearchStrategy[tuple[str, str]]:
        base, wl = _base_mapping(name)
        if name == "toy":
            return S.mapping_files(base, None).map(
                lambda t: (name, t.replace('"workload": null', '"op": "matmul", "shape": {"M": 64, "N": 16, "K": 16}'))
            )
        return S.mapping_files(base, wl).map(lambda t: (name, t))

    return st.just(0).flatmap(build)


_TARGET_PARAMS = {
    "gemmini": [
        "dim",
        "sp_capacity_kib",
        "acc_capacity_kib",
        "sp_banks",
        "acc_banks",
        "max_bytes",
        "rs_ld",
        "rs_ex",
        "rs_st",
    ],
    "plena": ["mlen", "vlen", "blen", "hlen", "mram_tiles", "fpsram_size", "hbm_m_prefetch", "hbm_v_prefetch"],
    # issue #29: the timing constants and queue depths the doc's domains bound
    "vta": ["bus_bytes", "dma_setup", "dma_row", "gemm_fill", "alu_fill", "alu_ii", "cmd_depth", "dep_depth"],
}
_PARAMS = {
    "toy": ["dim", "sp_kib", "max_blocks"],
    "gemmini": ["dim", "sp_capacity_kib", "max_bytes"],
    "plena": ["mlen", "vlen", "blen"],
}

PROPERTIES: dict[str, tuple[tuple[st.SearchStrategy[Any], ...], Callable[..., None]]] = {
    "expressions": ((S.expressions(), st.tuples(S.ints, S.ints, S.ints)), check_expr),
    "bombs": ((st.sampled_from(["min", "max", "cdiv", "*", "<<", "+"]), st.integers(1, 200)), check_bomb),
    "generated rules": ((S.toy_rule_docs(), _programs("toy")), check_rule_doc),
    "parameters": ((S.param_docs(),), check_param_doc),
    "corrupted docs": ((S.corrupted_docs((S.TOY_TEXT,)),), check_corrupted_doc),
    "names": ((S.hostile_names(),), check_hostile_names),
    "programs (toy)": ((st.just("toy"), _programs("toy")), check_program),
    "programs (gemmini)": ((st.just("gemmini"), _programs("gemmini")), check_program),
    "programs (plena)": ((st.just("plena"), _programs("plena")), check_program),
    "hostile loops": (
        (
            st.integers(1, 3),
            st.lists(st.sampled_from([1, 2, 1000, 33000, 4194303, 0, 4194304]), min_size=3, max_size=3),
            st.sampled_from(["S_ADDI_INT gp5, gp5, 1", "C_LOOP_END gp1", "S_ADDI_INT gp1, gp1, 1", "C_BREAK"]),
        ),
        check_hostile_loops,
    ),
    "mappings (toy)": ((_mapping_case("toy"),), lambda case: check_mapping(*case)),
    "mappings (gemmini)": ((_mapping_case("gemmini"),), lambda case: check_mapping(*case)),
    "mappings (plena)": ((_mapping_case("plena"),), lambda case: check_mapping(*case)),
    "overrides (toy)": ((st.just("toy"), S.overrides(_PARAMS["toy"])), check_overrides),
    "overrides (gemmini)": ((st.just("gemmini"), S.overrides(_PARAMS["gemmini"])), check_overrides),
    "overrides (plena)": ((st.just("plena"), S.overrides(_PARAMS["plena"])), check_overrides),
    "target overrides (gemmini)": (
        (st.just("gemmini"), S.overrides(_TARGET_PARAMS["gemmini"]), _programs("gemmini")),
        check_target_overrides,
    ),
    "target overrides (plena)": (
        (st.just("plena"), S.overrides(_TARGET_PARAMS["plena"]), _programs("plena")),
        check_target_overrides,
    ),
    "target overrides (vta)": (
        (st.just("vta"), S.overrides(_TARGET_PARAMS["vta"]), _programs("vta")),
        check_target_overrides,
    ),
    "CLI arguments": ((st.sampled_from(S.CLI_FLAGS), S.cli_values()), check_cli_argument),
    "VTA sidecars": ((S.vta_sidecar_edits(),), check_vta_sidecar),
    "cache entries": (
        (st.sampled_from(["pickle", "bytes", "flip", "script"]), st.binary(max_size=64), st.integers(0, 10**6)),
        check_cache,
    ),
    "query patterns": ((_patterns,), check_query),
    "stores": (
        (
            S.store_schemas(),
            st.fixed_dictionaries({t: S.store_rows(w) for t, w in (("results", 9), ("trials", 13), ("claims", 7))}),
        ),
        check_store,
    ),
    "special files (inputs)": (
        (S.special_files, st.sampled_from(["program", "doc", "replay", "sidecar"])),
        check_special_input,
    ),
    "special files (outputs)": ((S.special_files,), check_special_output),
    "recordings": ((S.recordings(),), check_recording),
    "recordings (key echoes)": ((S.key_echoes(),), check_scrub),
}
# corrupted shipped docs are slower to build: scripts/fuzz.py adds them
SLOW_PROPERTIES: dict[str, tuple[tuple[st.SearchStrategy[Any], ...], Callable[..., None]]] = {}


def _shipped_texts() -> tuple[str, ...]:
    from zomboss.target import doc_path

    return tuple(doc_path(n).read_text() for n in ("gemmini", "plena"))


SLOW_PROPERTIES["corrupted shipped docs"] = (
    (st.deferred(lambda: S.corrupted_docs(_shipped_texts())),),
    check_corrupted_shipped_doc,
)
