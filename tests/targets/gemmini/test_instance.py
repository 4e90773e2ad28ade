"""The Gemmini instance's CPU references (gemmini.h's matmul and conv): exact integer results."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from targets.gemmini.instance import exact_product


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(1, 600), st.integers(1, 40), st.integers(0, 2**32 - 1), st.booleans())
def test_the_references_float_product_is_the_exact_integer_product(m, k, n, seed, extreme):
    """The references multiply 8-bit operands in float64 (BLAS); every partial sum is an integer
    below 2**53, so the product equals NumPy's int64 product, extremes (-128 everywhere) too."""
    rng = np.random.default_rng(seed)
    a = np.full((m, k), -128, np.int8) if extreme else rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = np.full((k, n), -128, np.int8) if extreme else rng.integers(-128, 128, (k, n), dtype=np.int8)
    assert np.array_equal(exact_product(a, b, k), a.astype(np.int64) @ b.astype(np.int64))
