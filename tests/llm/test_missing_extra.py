"""Without the `llm` extra (no openai package) `solve --guide llm` and `direct` stop with one
line naming the extra to install, before any work; everything else runs. The missing package
is simulated in a fresh interpreter (`sys.modules["openai"] = None` makes its import fail)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

RUN = (
    "import sys; sys.modules['openai'] = None; sys.modules['httpx2'] = None\n"
    "from zomboss.app import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def zomboss_without_openai(*args: str, tmp_path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ZOMBOSS_RESULTS": str(tmp_path), "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    return subprocess.run(
        [sys.executable, "-c", RUN, *args], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path
    )


@pytest.mark.parametrize(
    "args",
    [
        ("solve", "plena", "rope_4x64", "--guide", "llm", "--budget", "2"),
        ("direct", "plena", "rope_4x64"),
    ],
    ids=["solve-guide-llm", "direct"],
)
def test_the_llm_commands_name_the_extra(args, tmp_path):
    proc = zomboss_without_openai(*args, tmp_path=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'zomboss[llm]'" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_cost_guide_needs_no_openai(tmp_path):
    proc = zomboss_without_openai("solve", "plena", "rope_4x64", "--budget", "2", "--json", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
