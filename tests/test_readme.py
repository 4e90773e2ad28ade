"""The README is the first five minutes of a new user: it stays short, starts with the two set-up
commands, and every command in it runs as written from an empty directory (issue #28).

Each fenced `sh` block is run command by command in its own scratch directory (so later commands
may use the files earlier ones wrote), with this environment's `bin/` first on PATH and the KB
cache and the results store in temp folders. The commands that take minutes or change the
environment are listed in SKIP with the reason; the ones that take more than a few seconds are
run by the `slow` test only (SLOW). The `text` block that follows the first-result commands is
their real output, trimmed: each of its sections must still be in the output of its command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
LIMIT = 8192

# command (as written, comment excluded) -> why the test does not run it
SKIP = {
    "make run": "installs into .venv and runs a guided bench of one instance per op family: minutes; CI runs it",
    "make test": "is this test suite (lint, types, pytest) itself",
    "pip install .": "installs into the running environment (minutes, needs the network); the packaging tests cover it",
    "pip install '.[all]'": "installs into the running environment (minutes, needs the network); as above",
}

# command -> measured wall time on the 2-core development machine; run by the `slow` test only
SLOW = {
    "zomboss solve gemmini odd_pad": "about 15 s (guided search, budget 32, winner verified on two seeds)",
    "zomboss solve plena lin_60m_q --budget 16 --json": "about 11 s (guided search, budget 16)",
}

# command -> its documented exit status (the README says "exit 1" beside each)
EXIT = {
    "zomboss kb check gemmini bad.json": 1,
    "zomboss kb check mini.md bad.asm": 1,
}

TIMEOUT_S = 120


@dataclass(frozen=True)
class Command:
    text: str  # what the shell runs: the line(s) as written, heredoc body included
    key: str  # the command without its trailing comment, for the tables above


@dataclass(frozen=True)
class Block:
    line: int
    lang: str
    body: list[str]


def _blocks(text: str) -> list[Block]:
    """Fenced blocks (``` or ~~~, any length), with the line their fence opens on."""
    out: list[Block] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(`{3,}|~{3,})\s*([\w-]*)", lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2), i
        body: list[str] = []
        i += 1
        while i < len(lines) and not _closes(lines[i], fence):
            body.append(lines[i])
            i += 1
        out.append(Block(start + 1, lang, body))
        i += 1
    return out


def _closes(line: str, fence: str) -> bool:
    s = line.strip()
    return len(s) >= len(fence) and set(s) == {fence[0]}


def _strip_comment(line: str) -> str:
    """The command without a trailing ` # comment` (quotes respected)."""
    quote = ""
    for j, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (j == 0 or line[j - 1].isspace()):
            return line[:j].rstrip()
    return line.rstrip()


def _commands(block: Block) -> list[Command]:
    """One command per line, a heredoc's body and `\\` continuations kept with their line."""
    out: list[Command] = []
    lines = block.body
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            i += 1
            continue
        text = [line]
        while text[-1].endswith("\\") and i + 1 < len(lines):
            i += 1
            text.append(lines[i])
        here = re.search(r"<<-?\s*'?(\w+)'?", line)
        if here:
            end = here.group(1)
            while i + 1 < len(lines):
                i += 1
                text.append(lines[i])
                if lines[i].strip() == end:
                    break
        out.append(Command("\n".join(text), _strip_comment(line)))
        i += 1
    return out


def _sh_blocks() -> list[Block]:
    return [b for b in _blocks(README.read_text(encoding="utf-8")) if b.lang == "sh"]


def _env(cache: Path, results: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["ZOMBOSS_CACHE"] = str(cache)
    env["ZOMBOSS_RESULTS"] = str(results)
    env.pop("OPENAI_API_KEY", None)
    return env


def _run(cmd: Command, cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(
        ["bash", "-c", cmd.text], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    want = EXIT.get(cmd.key, 0)
    assert proc.returncode == want, (
        f"README command {cmd.key!r} exited {proc.returncode}, the README implies {want}\n"
        f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    )
    return proc.stdout


def _norm(s: str) -> str:
    """What "in substance" compares: no spacing, separators, thousands commas or table rules."""
    return re.sub(r"[\s,:│┃|]", "", s)


def _first_result() -> tuple[list[Command], list[list[str]]]:
    """The commands of the sh block a `text` block follows, and that block split at blank lines:
    the trimmed output of each command, in order."""
    blocks = _blocks(README.read_text(encoding="utf-8"))
    at = next(i for i, b in enumerate(blocks) if b.lang == "text")
    assert blocks[at - 1].lang == "sh", "the sample output follows the first-result commands"
    sections: list[list[str]] = [[]]
    for line in blocks[at].body:
        if line.strip():
            sections[-1].append(line)
        elif sections[-1]:
            sections.append([])
    return _commands(blocks[at - 1]), [x for x in sections if x]


def _check_output(cmd: Command, out: str, section: list[str]) -> None:
    lines = [_norm(x) for x in out.splitlines()]
    for want in section:
        assert any(_norm(want) in got for got in lines), (
            f"the README shows {want.strip()!r} for {cmd.key!r}; its output now is:\n{out[-3000:]}"
        )


@pytest.fixture(scope="module")
def kb_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kb-cache")


def test_readme_is_short_and_starts_with_the_two_setup_commands():
    data = README.read_bytes()
    assert len(data) <= LIMIT, f"README.md is {len(data)} bytes; the limit is {LIMIT} (move depth to docs/)"
    text = data.decode("utf-8")
    before = text[: text.index("```")].strip()
    assert before == "# Zomboss", f"only the title may precede the set-up commands, found {before!r}"
    first = _blocks(text)[0]
    assert first.lang == "sh"
    assert [c.key for c in _commands(first)] == ["make run", "make test"]
    assert all("#" in line for line in first.body), "each set-up command says what it does"


def test_every_readme_command_is_run_or_skipped_with_a_reason():
    keys = [c.key for b in _sh_blocks() for c in _commands(b)]
    assert len(keys) >= 10
    for table in (SKIP, SLOW, EXIT):
        stale = sorted(set(table) - set(keys))
        assert not stale, f"the test's tables name commands the README no longer has: {stale}"
    assert all(reason for reason in SKIP.values())
    commands, sections = _first_result()
    assert len(sections) == len(commands), "one output section per first-result command"


@pytest.mark.parametrize("index", range(len(_sh_blocks())))
def test_readme_commands_run_as_written(index, tmp_path, kb_cache):
    """The fast commands of each block, in order, in one scratch directory."""
    block = _sh_blocks()[index]
    env = _env(kb_cache, tmp_path / "results")
    cwd = tmp_path / "scratch"
    cwd.mkdir()
    first, sample = _first_result()
    sections = sample if _commands(block) == first else []
    ran = 0
    for n, cmd in enumerate(_commands(block)):
        if cmd.key in SKIP or cmd.key in SLOW:
            continue
        out = _run(cmd, cwd, env)
        ran += 1
        if sections:
            _check_output(cmd, out, sections[n])
    if not ran:
        pytest.skip(f"README line {block.line}: every command is skipped or slow (see SKIP, SLOW)")


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(SLOW))
def test_slow_readme_commands_run_as_written(key, tmp_path, kb_cache):
    """Each slow command alone, in a fresh scratch directory (none depends on a file another wrote)."""
    env = _env(kb_cache, tmp_path / "results")
    cwd = tmp_path / "scratch"
    cwd.mkdir()
    first, sections = _first_result()
    cmd = next(c for b in _sh_blocks() for c in _commands(b) if c.key == key)
    out = _run(cmd, cwd, env)
    if cmd in first:
        _check_output(cmd, out, sections[first.index(cmd)])
