"""The Python API (zomboss/api.py) beyond the docs/python-api.md walk-through: its errors are the
command line's, `strict_llm` raises with the stored kernel, export takes every form of mapping."""

from __future__ import annotations

import json
import time

import pytest

import zomboss

PLENA = ("plena", "rope_4x64")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"budget": 0}, "budget=0"),
        ({"verify": "bogus"}, "verify='bogus'"),
        ({"guide": "nope"}, "guide='nope'"),
        ({"time_limit": 0}, "time_limit=0"),
        ({"exhaustive": True, "verify": "none"}, "verifies its winner whole"),
        ({"params": {"nosuch": 1}}, "nosuch"),
        ({"fresh": "yes"}, "fresh='yes'"),
    ],
)
def test_bad_options_are_one_clear_error(kwargs, message, tmp_path):
    with pytest.raises(zomboss.ZombossError, match=message):
        zomboss.solve(*PLENA, db=tmp_path / "z.sqlite", **kwargs)


def test_unknown_names_are_errors():
    with pytest.raises(zomboss.ZombossError, match="unknown target"):
        zomboss.get_target("nosuch")
    with pytest.raises(zomboss.ZombossError, match="unknown op"):
        zomboss.get_workload("plena", "nosuch:M=1")
    with pytest.raises(zomboss.ZombossError, match="no predicate"):
        zomboss.query("plena", "capcity(M,R)")


class _NoSleep:
    def sleep(self, seconds: float) -> None:
        pass

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


def test_strict_llm_raises_with_the_stored_kernel(tmp_path, monkeypatch):
    openai = pytest.importorskip("openai")
    monkeypatch.setattr(openai._base_client, "time", _NoSleep())  # its retry waits, not slept here
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    db = tmp_path / "z.sqlite"
    with pytest.raises(zomboss.LlmFellBack) as e:
        zomboss.solve(
            *PLENA, guide="llm", budget=2, llm_base_url="http://127.0.0.1:9/v1", llm_timeout=0.3, strict_llm=True, db=db
        )
    assert e.value.exit_code == 3 and e.value.result.verified
    path = zomboss.export(*PLENA, tmp_path / "k.asm", best=True, db=db)  # it was stored all the same
    assert path.exists()


def test_export_takes_a_mapping_in_every_form(tmp_path):
    c0 = zomboss.default(*PLENA)
    (tmp_path / "m.json").write_text(json.dumps({"workload": PLENA[1], "mapping": c0.mapping}))
    outs = [
        zomboss.export(*PLENA, tmp_path / "a.asm"),
        zomboss.export(*PLENA, tmp_path / "b.asm", mapping=c0.mapping),
        zomboss.export(*PLENA, tmp_path / "c.asm", mapping=tmp_path / "m.json"),
    ]
    programs = {"\n".join(ln for ln in p.read_text().splitlines() if not ln.startswith(";")) for p in outs}
    assert len(programs) == 1  # Candidate-0 three ways (the header comments name the source)
    with pytest.raises(zomboss.ZombossError, match="no results store"):
        zomboss.export(*PLENA, tmp_path / "d.asm", best=True, db=tmp_path / "none.sqlite")


def test_the_package_exports_exactly_the_api_and_its_version():
    """`zomboss/__init__.py` lists the API's names without importing it (it loads on first
    use): the two lists must stay one."""
    import zomboss
    import zomboss.api

    assert sorted(zomboss.__all__) == sorted([*zomboss.api.__all__, "__version__"])
