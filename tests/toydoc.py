"""The toy doc the tests of the doc compiler, the KB and the checkers edit (tests/data/toy.md)."""

from __future__ import annotations

from pathlib import Path

TOY = Path(__file__).parent / "data" / "toy.md"
TOY_TEXT = TOY.read_text()


def write_doc(tmp_path: Path, text: str, name: str = "m.md") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def with_rule(rule: str) -> str:
    """The toy doc with `rule` added before its `load.fits` rule."""
    return TOY_TEXT.replace("rule load.fits on load", rule + "\nrule load.fits on load", 1)
