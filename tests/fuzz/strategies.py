"""Hypothesis strategies for hostile and edge inputs: integers at the edges of clingo's and
Python's ranges, expressions (typed, with deep nesting and case-split bombs), docs (valid,
generated and corrupted), programs with hostile operands and loops, mapping files and
parameter overrides."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import strategies as st

from zomboss import expr as ex

TOY = Path(__file__).resolve().parents[1] / "data" / "toy.md"
TOY_TEXT = TOY.read_text()

EDGE_INTS = [
    0,
    1,
    -1,
    2,
    3,
    4,
    -4,
    7,
    64,
    255,
    65535,
    65536,
    (1 << 30),
    (1 << 31) - 1,
    -(1 << 31),
    1 << 31,
    -(1 << 31) - 1,
    (1 << 32) - 1,
    1 << 32,
    (1 << 63) - 1,
    1 << 64,
    -(1 << 64),
    (1 << 127) - 1,
]

ints = st.one_of(st.sampled_from(EDGE_INTS), st.integers(-300, 300), st.integers(-(1 << 70), 1 << 70))
small_ints = st.one_of(st.sampled_from([0, 1, 2, 3, 4, 7, 8, 16, 31, 32, 33, 64]), st.integers(-8, 70))

VARS = ("x", "y", "z")


def _int_exprs(leaves: st.SearchStrategy[ex.Expr], bools: st.SearchStrategy[ex.Expr]) -> st.SearchStrategy[ex.Expr]:
    def extend(c: st.SearchStrategy[ex.Expr]) -> st.SearchStrategy[ex.Expr]:
        return st.one_of(
            st.builds(ex.Bin, st.sampled_from(["+", "-", "*", "/", "%", "&", "|"]), c, c),
            st.builds(ex.Bin, st.sampled_from(["<<", ">>"]), c, st.one_of(small_ints.map(ex.Int), c)),
            st.builds(lambda f, a, b: ex.Call(f, (a, b)), st.sampled_from(["min", "max", "cdiv"]), c, c),
            st.builds(lambda a: ex.Call("abs", (a,)), c),
            st.builds(lambda a: ex.Un("neg", a), c),
            st.builds(ex.Cond, bools, c, c),
        )

    return st.recursive(leaves, extend, max_leaves=12)


def expressions(variables: tuple[str, ...] = VARS) -> st.SearchStrategy[ex.Expr]:
    """Boolean expressions (rules) over integer variables, every operator of the notation."""
    leaves = st.one_of(ints.map(ex.Int), st.sampled_from(variables).map(lambda n: ex.Ref((n,))))
    bools: st.SearchStrategy[ex.Expr] = st.deferred(lambda: bool_exprs)
    nums = _int_exprs(leaves, bools)
    cmp = st.builds(ex.Bin, st.sampled_from(list(ex.CMP_OPS)), nums, nums)
    inset = st.builds(lambda a, items: ex.InSet(a, tuple(items)), nums, st.lists(nums, min_size=1, max_size=3))
    base = st.one_of(cmp, inset, nums)  # a number as a condition means "non-zero"
    bool_exprs = st.recursive(
        base,
        lambda c: st.one_of(
            st.builds(ex.Bin, st.sampled_from(list(ex.BOOL_OPS)), c, c),
            st.builds(lambda a: ex.Un("not", a), c),
        ),
        max_leaves=6,
    )
    return bool_exprs


def nested(fn: str, depth: int, leaf: str = "x") -> ex.Expr:
    e: ex.Expr = ex.Ref((leaf,))
    for i in range(depth):
        e = ex.Call(fn, (e, ex.Int(i))) if fn in ("min", "max", "cdiv") else ex.Bin(fn, e, ex.Int(i + 1))
    return e


# ---- docs ---------------------------------------------------------------------------------

LOAD_NAMES = ("rows", "cols", "dram", "local", "local.row", "local.is_acc", "cfg.stride", "cfg.block_stride", "blocks")


@st.composite
def toy_rule_docs(draw: st.DrawFn) -> tuple[str, ex.Expr]:
    """The toy doc plus one generated rule on `load` (any operator, edge constants)."""
    e = draw(expressions(LOAD_NAMES))
    rule = f'rule fz.gen on load "generated": {ex.show(e)}\n'
    return TOY_TEXT.replace("rule load.fits on load", rule + "rule load.fits on load", 1), e


@st.composite
def param_docs(draw: st.DrawFn) -> str:
    """The toy doc with generated parameters: chains that square, shift and divide."""
    n = draw(st.integers(1, 6))
    lines = []
    names = ["dim", "sp_rows"]
    for i in range(n):
        e = draw(
            _int_exprs(st.one_of(ints.map(ex.Int), st.sampled_from(names).map(lambda x: ex.Ref((x,)))), st.nothing())
        )
        lines.append(f"param fz{i} = {ex.show(e)}")
        names.append(f"fz{i}")
    if draw(st.booleans()):
        lines.append(f"param fz_sq = {' * '.join([names[-1]] * draw(st.integers(2, 8)))}")
    block = "\n".join(lines)
    return TOY_TEXT.replace("param max_blocks = 2", "param max_blocks = 2\n" + block, 1)


_HOSTILE = [
    "not",
    "__",
    "_x",
    "MVIN",
    "Load",
    "#include",
    "a.b",
    "0",
    '"',
    "%",
    ":-",
    "x(",
    "\x00",
    "é",
    "if",
    "then",
    "min(" * 30,
    "1 << (1 << 40)",
    "9" * 300,
    "0x" + "f" * 200,
    "(" * 200 + "1" + ")" * 200,
    "- " * 100 + "1",
]


@st.composite
def corrupted_docs(draw: st.DrawFn, texts: tuple[str, ...]) -> str:
    """A doc with a few edits: cut, duplicate or insert hostile tokens anywhere."""
    text = draw(st.sampled_from(texts))
    for _ in range(draw(st.integers(1, 3))):
        pos = draw(st.integers(0, max(0, len(text) - 1)))
        op = draw(st.sampled_from(["insert", "cut", "dup", "token"]))
        if op == "insert":
            text = text[:pos] + draw(st.text("(){}[],:.=+-*/<>!#\"'\n`abcxyzAZ019 _*%&|", max_size=8)) + text[pos:]
        elif op == "cut":
            text = text[:pos] + text[pos + draw(st.integers(1, 40)) :]
        elif op == "dup":
            n = draw(st.integers(1, 200))
            text = text[:pos] + text[pos : pos + n] * draw(st.integers(2, 4)) + text[pos + n :]
        else:
            text = text[:pos] + " " + draw(st.sampled_from(_HOSTILE)) + " " + text[pos:]
    return text


@st.composite
def hostile_names(draw: st.DrawFn) -> str:
    """The toy doc with one declaration renamed to a hostile name."""
    name = draw(st.sampled_from(["not", "__", "_a", "FENCE", "Fence", "STORE", "a'b", "notx", "x__"]))
    what = draw(st.sampled_from(["instr", "memory", "state", "knob value", "unit"]))
    if what == "instr":
        return TOY_TEXT.replace(
            "instr fence()\n  unit ctrl", f"instr fence()\n  unit ctrl\n\ninstr {name}()\n  unit ctrl"
        )
    if what == "memory":
        return TOY_TEXT.replace("memory dram {", f"memory {name} {{ external, type: int8 }}\nmemory dram {{")
    if what == "state":
        return TOY_TEXT.replace("state ld[2]", f"state {name} {{ a: 0 }}\nstate ld[2]")
    if what == "unit":
        return TOY_TEXT.replace("instr fence()\n  unit ctrl", f"instr fence()\n  unit {name}")
    return TOY_TEXT.replace("knob df: {ws, os}", f"knob df: {{ws, os, {name}}}")


# ---- programs -----------------------------------------------------------------------------

operand_values = st.one_of(
    st.sampled_from([0, 1, 2, 3, 4, 5, 8, 16, 255, 256, 4096, 4100, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 2**32]),
    st.integers(-5, 300),
    st.integers(0, 2**64),
)


def operand_text(v: int) -> str:
    return hex(v) if v > 4096 and v % 2 else str(v)


def programs(signatures: dict[str, list[str]], max_size: int = 8) -> st.SearchStrategy[str]:
    """Program text over a doc's mnemonics; operand kinds give the register prefix."""

    @st.composite
    def line(draw: st.DrawFn) -> str:
        op = draw(st.sampled_from(sorted(signatures)))
        parts = []
        for kind in signatures[op]:
            if kind:
                parts.append(f"{kind}{draw(st.integers(0, 20))}")
            else:
                parts.append(operand_text(draw(operand_values)))
        if draw(st.integers(0, 30)) == 0:  # occasionally the wrong operand count
            parts = parts[:-1] if parts else ["1"]
        return f"{op} {', '.join(parts)}".strip()

    return st.lists(line(), min_size=1, max_size=max_size).map(lambda ls: "\n".join(ls) + "\n")


def signatures(kb) -> dict[str, list[str]]:
    return {m: [o.kind if o.kind in kb.regfiles else "" for o in ins.operands] for m, ins in kb.instrs.items()}


# ---- mappings and parameters --------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    ints,
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)


@st.composite
def mapping_files(draw: st.DrawFn, base: dict, workload: object) -> str:
    """A kb check mapping file: the base mapping with knobs set to edge or ill-typed values,
    knobs dropped or added, or structurally broken / deeply nested JSON."""
    kind = draw(st.sampled_from(["edit", "edit", "edit", "edit", "structure", "deep", "text"]))
    if kind == "deep":
        n = draw(st.sampled_from([50, 100, 1000, 100_000]))
        return '{"workload": "x", "mapping": ' + "[" * n + "]" * n + "}"
    if kind == "text":
        return draw(st.text(max_size=40))
    knobs = dict(base["knobs"])
    for _ in range(draw(st.integers(1, 3))):
        k = draw(st.sampled_from(sorted(knobs) + ["zz_unknown"]))
        numeric = isinstance(base["knobs"].get(k), int) and not isinstance(base["knobs"].get(k), bool)
        if numeric and draw(st.integers(0, 3)) < 3:
            v = draw(ints)  # mostly well-typed: the constraints see edge values
        else:
            v = draw(
                st.one_of(json_scalars, st.sampled_from(["ws", "os", "hw", "sw", "true", "false", "NOT", "x) :- a."]))
            )
        if draw(st.integers(0, 9)) == 9:
            knobs.pop(k, None)
        else:
            knobs[k] = v
    mapping = {"op": base["op"], "knobs": knobs}
    data: dict = {"workload": workload, "mapping": mapping}
    if kind == "structure":
        data = draw(
            st.sampled_from(
                [
                    {"mapping": mapping},
                    {"workload": workload},
                    {"workload": 5, "mapping": mapping},
                    {"workload": workload, "mapping": {"op": 3, "knobs": knobs}},
                    {"workload": workload, "mapping": []},
                    {"op": base["op"], "shape": {"M": draw(ints)}, "mapping": mapping},
                    [1, 2],
                ]
            )
        )
    return json.dumps(data)


def overrides(param_names: list[str]) -> st.SearchStrategy[dict[str, int]]:
    values = st.one_of(st.sampled_from(EDGE_INTS), st.integers(-3, 70), st.integers(1 << 100, 1 << 140))
    return st.dictionaries(st.sampled_from(param_names + ["no_such_param"]), values, max_size=2)


# ---- results stores, special files, LLM recordings (issue 29) ---------------------------------

_JSON_LEAVES = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8)
json_values = st.recursive(
    _JSON_LEAVES,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=12), kids, max_size=4),
    max_leaves=12,
)
# what a column of a hostile store may hold: any SQLite value, or JSON text of any value
sql_values = (
    st.none()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=True)
    | st.text(max_size=16)
    | st.binary(max_size=8)
    | json_values.map(lambda v: json.dumps(v))
)
# payloads: a real field name with a value of any type, beside other keys
_PAYLOAD_KEYS = ("cycles", "verified", "mapping", "wall_s", "speedup", "breakdown", "optimum_cycles", "error")
payloads = st.dictionaries(st.sampled_from(_PAYLOAD_KEYS) | st.text(max_size=6), json_values, max_size=5).map(
    json.dumps
) | json_values.map(json.dumps)


@st.composite
def store_schemas(draw: st.DrawFn) -> dict[str, list[str]]:
    """Tables of a database given as `--db`: Zomboss's own (possibly with columns renamed,
    dropped or added, or the claims table of an older version), foreign ones, or none."""
    from zomboss.results.store import COLUMNS, OLD_CLAIMS

    tables: dict[str, list[str]] = {}
    for name, cols in COLUMNS.items():
        how = draw(st.sampled_from(["ours", "ours", "absent", "renamed", "fewer", "more", "old"]))
        if how == "ours":
            tables[name] = list(cols)
        elif how == "renamed":
            tables[name] = [f"c{i}" for i in range(len(cols))]
        elif how == "fewer":
            tables[name] = list(cols[:-1])
        elif how == "more":
            tables[name] = [*cols, "extra"]
        elif how == "old" and name == "claims":
            tables[name] = list(OLD_CLAIMS)
    for name in draw(st.lists(st.sampled_from(["users", "results2", "x y"]), max_size=2)):
        tables[name] = ["a", "b"]
    return tables


@st.composite
def store_rows(draw: st.DrawFn, width: int) -> list[list[object]]:
    """Rows for a table of `width` columns: mostly well-typed text keys with hostile values and
    JSON payloads of any shape."""
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        row: list[object] = [draw(st.sampled_from(["t", "w", "k", "c"]) | sql_values) for _ in range(width)]
        if width and draw(st.booleans()):
            row[-2 if width > 1 else 0] = draw(payloads)
        rows.append(row)
    return rows


# a special file as an input or an output: devices, a FIFO nobody writes, links to them, a folder
special_files = st.sampled_from(
    ["/dev/zero", "/dev/urandom", "/dev/null", "/dev/full", "fifo", "link:/dev/zero", "link:fifo", "folder"]
)


@st.composite
def recordings(draw: st.DrawFn) -> bytes:
    """An `--llm-replay` file: a header and lines of any JSON, records with hostile requests
    and attempts, lines that are not JSON, bytes that are not UTF-8."""
    lines: list[bytes] = []
    if draw(st.booleans()):
        lines.append(json.dumps({"zomboss_llm_recording": draw(json_values), "model": draw(json_values)}).encode())
    for n in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["record", "json", "text", "bytes"]))
        if kind == "record":
            attempts = draw(
                st.lists(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "body": json_values.map(json.dumps) | st.text(max_size=30),
                            "error": json_values,
                            "status": json_values,
                            "retry": json_values,
                        },
                    )
                    | json_values,
                    max_size=3,
                )
            )
            rec = {"n": draw(st.just(n) | json_values), "request": draw(json_values), "attempts": attempts}
            lines.append(json.dumps(rec).encode())
        elif kind == "json":
            lines.append(json.dumps(draw(json_values)).encode())
        elif kind == "text":
            lines.append(draw(st.text(max_size=40)).encode("utf-8", "surrogatepass"))
        else:
            lines.append(draw(st.binary(max_size=40)))
    return b"\n".join(lines)


# how an endpoint may echo the API key back
KEY_ENCODINGS = ("raw", "json-escaped", "nested-json", "percent", "base64", "html")


@st.composite
def key_echoes(draw: st.DrawFn) -> tuple[str, str]:
    """(key, response body) with the key echoed in some encoding, somewhere in the body."""
    import base64
    import html
    import urllib.parse

    key = "sk-" + draw(st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", min_size=8))
    said = draw(st.text(max_size=10)) + "Bearer " + key + draw(st.text(max_size=10))
    how = draw(st.sampled_from(KEY_ENCODINGS))
    if how == "raw":
        content = said
    elif how == "json-escaped":
        content = said  # json.dumps(..., ensure_ascii) below escapes; add explicit \u escapes too
    elif how == "nested-json":
        content = json.dumps({"headers": {"authorization": said}})
    elif how == "percent":
        content = urllib.parse.quote(said, safe="")
    elif how == "base64":
        content = base64.b64encode(said.encode("utf-8", "surrogatepass")).decode()
    else:
        content = html.escape(said).replace("-", "&#45;")
    body = {"choices": [{"message": {"role": "assistant", "content": content}}], "usage": {}}
    text = json.dumps(body)
    if how == "json-escaped":
        text = text.replace(key, "".join(f"\\u{ord(c):04x}" for c in key))
    return key, text


# ---- issue #29: CLI argument values and VTA sidecars -------------------------------------------

# (command line before the flag, flag): every numeric or URL flag of every command
CLI_FLAGS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("solve", "plena", "rope_4x64"), "--budget"),
    (("solve", "plena", "rope_4x64"), "--seed"),
    (("solve", "plena", "rope_4x64"), "--samples"),
    (("solve", "plena", "rope_4x64"), "--time-limit"),
    (("solve", "plena", "rope_4x64"), "--gap"),
    (("solve", "plena", "rope_4x64"), "--llm-timeout"),
    (("solve", "plena", "rope_4x64"), "--llm-max-rounds"),
    (("solve", "plena", "rope_4x64"), "--llm-base-url"),
    (("direct", "plena", "rope_4x64"), "--iterations"),
    (("direct", "plena", "rope_4x64"), "--seed"),
    (("default", "plena", "rope_4x64"), "--samples"),
    (("default", "plena", "rope_4x64"), "--seed"),
    (("space", "plena", "rope_4x64"), "--count-seconds"),
    (("simulate", "plena", "p.asm"), "--max-instructions"),
    (("kb", "check", "plena", "m.json"), "--asp-limit"),
    (("kb", "check", "plena", "m.json"), "--max-instructions"),
    (("bench",), "--workers"),
    (("bench",), "--budget"),
    (("bench",), "--seed"),
    (("bench",), "--time-limit"),
)


def cli_values() -> st.SearchStrategy[str]:
    """Hostile text for a flag's value: numbers at and past every edge, floats that are not
    numbers, huge and negative integers, URLs and non-URLs, and arbitrary text."""
    return st.one_of(
        st.sampled_from(
            [
                "0",
                "-0",
                "-1",
                "-7",
                "1",
                "0.0",
                "nan",
                "-nan",
                "inf",
                "-inf",
                "1e309",
                "0x10",
                "1_000",
                " 3 ",
                "4294967295",
                "4294967296",
                "9" * 5000,
                "",
                "::::not a url",
                "http://",
                "http://h:99999/v1",
                "ftp://h/v1",
                "http://127.0.0.1:8000/v1",
                "https://[::1]:8000/v1",
                "http://[::1/v1",
            ]
        ),  # fmt: skip
        st.integers(-(1 << 70), 1 << 70).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.text(max_size=12),
    )


@st.composite
def vta_sidecar_edits(draw: st.DrawFn) -> dict[str, object]:
    """Edits to a VTA export's sidecar: hostile seeds, DRAM entries (offsets off either end,
    long or odd hex, wrong shapes) and workload specs."""
    ints = st.one_of(st.sampled_from(EDGE_INTS), st.integers(-(1 << 20), 1 << 20))
    entry = st.one_of(
        st.tuples(ints, st.integers(0, 300_000).map(lambda n: "00" * n)).map(list),
        st.tuples(ints, st.text(max_size=8)).map(list),
        st.lists(st.one_of(ints, st.text(max_size=4), st.none()), max_size=3),
    )
    edits: dict[str, object] = {}
    if draw(st.booleans()):
        edits["seed"] = draw(st.one_of(ints, st.text(max_size=4), st.none(), st.floats(), st.booleans()))
    if draw(st.booleans()):
        edits["dram"] = draw(st.one_of(st.lists(entry, max_size=3), ints, st.text(max_size=4), st.none()))
    if draw(st.booleans()):
        key = draw(st.sampled_from(["M", "N", "K", "shift", "relu", "clip", "stride", "bogus"]))
        edits["workload"] = f"dense:M=16,N=16,K=16,{key}={draw(st.one_of(ints.map(str), st.text(max_size=6)))}"
    return edits
