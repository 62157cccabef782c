"""bosaris_dask.passes.unique against numpy's np.unique, on random integer arrays."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.passes.unique import unique


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from([np.uint32, np.uint64, np.int64, np.intp, np.int8, np.bool_]),
    st.integers(0, 300),
    st.integers(1, 1000),
    st.integers(0, 2**32 - 1),
)
def test_unique_equals_numpy(dtype, n, spread, seed):
    x = np.random.default_rng(seed).integers(0, spread, size=n).astype(dtype)
    got = unique(x.reshape(-1, 1) if n % 2 else x)
    want = np.unique(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_floats_are_refused():
    with pytest.raises(TypeError, match="integers"):
        unique(np.array([1.0, np.nan]))
