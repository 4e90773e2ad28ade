"""The sampled blocks every target's `--verify sampled` checks, and their JSON."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from zomboss.verify import sample_blocks, sample_json


@given(rows=st.integers(1, 40), cols=st.integers(1, 40), n=st.integers(0, 50), seed=st.integers(0, 99))
def test_distinct_in_grid_order_with_the_first_and_the_last(rows: int, cols: int, n: int, seed: int) -> None:
    b = sample_blocks((rows, cols), n, seed)
    assert len(b) == min(max(n, 2), rows * cols) == len(set(b))
    assert b[0] == (0, 0) and b[-1] == (rows - 1, cols - 1) and list(b) == sorted(b)
    assert b == sample_blocks((rows, cols), n, seed)


def test_the_json_names_every_block() -> None:
    d = sample_json(((0, 0), (2, 3)), 12, 345, ((2, 3),))
    assert d == {"blocks": 2, "of": 12, "instructions": 345, "sampled": [[0, 0], [2, 3]], "wrong": [[2, 3]]}
