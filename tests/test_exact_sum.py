"""Exact, grouping-independent sums (bosaris_dask.passes.exact_sum) against rational arithmetic."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.passes import exact_sum

GRID = 2**exact_sum.GRID_BITS


def _reference(values) -> int:
    """Each term rounded half-to-even to the grid, added as Python integers."""
    return sum(round(Fraction(float(v)) * GRID) for v in values)


terms = st.one_of(
    st.floats(0, 2.0**-50),  # below and around the grid
    st.floats(0, 50.0),  # ordinary softplus terms
    st.floats(2.0**16, 2.0**18),  # both sides of the exact path's threshold
    st.floats(0, 1.7e308),  # anything finite
)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(terms, max_size=40), cuts=st.lists(st.integers(0, 40), max_size=5))
def test_totals_equal_rational_arithmetic_under_any_grouping(values, cuts):
    x = np.array(values, dtype=np.float64)
    whole = exact_sum.total([x])
    assert whole == _reference(values)
    edges = [0, *sorted(c for c in cuts if c <= len(x)), len(x)]
    parts = [x[a:b] for a, b in zip(edges[:-1], edges[1:], strict=True)]
    assert sum(exact_sum.total([p]) for p in parts) == whole
    limbs = sum(exact_sum.to_limbs(exact_sum.total([p])) for p in parts)
    assert exact_sum.from_limbs(limbs) == whole
    try:
        expected = float(Fraction(whole, GRID))  # correctly rounded
    except OverflowError:
        expected = float("inf")
    assert exact_sum.to_float(whole) == expected


def test_block_units_weights_pick_their_terms():
    rng = np.random.default_rng(2)
    z = np.concatenate([rng.exponential(size=1000), [3e5, 1e300]])
    w = (rng.random(z.size) < 0.3).astype(np.float64)
    w[-2:] = [1.0, 0.0]
    got = exact_sum.block_units(z.copy(), [w], np.empty(z.size), np.empty(z.size))
    assert got == [_reference(z), _reference(z[w == 1])]


def test_a_block_longer_than_the_exact_limit_is_refused():
    n = exact_sum.MAX_BLOCK + 1
    try:
        exact_sum.block_units(np.zeros(n), [], np.empty(n), np.empty(n))
    except ValueError as err:
        assert "at most 65536 terms" in str(err)
    else:
        raise AssertionError("no error")


def test_a_total_beyond_float64_is_inf():
    assert exact_sum.to_float(exact_sum.total([np.full(4, 1.7e308)])) == float("inf")


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(0, 3000),
    share=st.sampled_from([0.0, 0.01, 0.2, 0.25, 0.26, 0.5, 0.74, 0.76, 0.99, 1.0]),
    big=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_subset_mask_gives_the_sums_of_its_weights(n, share, big, seed):
    rng = np.random.default_rng(seed)
    z = rng.exponential(size=n) ** 3
    if big and n:
        z[rng.integers(0, n, size=3)] = [3e5, 1e300, 2.0**17]
    subset = rng.random(n) < share
    w = subset.astype(np.float64)
    got = exact_sum.block_units_subset(z.copy(), subset, *(np.empty(n) for _ in range(3)))
    assert got == exact_sum.block_units(z.copy(), [w], np.empty(n), np.empty(n))
    assert got == [_reference(z), _reference(z[subset])]


@settings(max_examples=50, deadline=None)
@given(
    totals=st.lists(st.integers(0, 2**1000), min_size=1, max_size=8),
    copies=st.integers(1, 2**20),
)
def test_many_limb_vectors_at_once_equal_one_at_a_time(totals, copies):
    """Merged limb vectors (each limb a sum of up to 2**20 limbs) read back at once, and one
    at a time, exactly: the same Python ints as exact arithmetic on the totals."""
    limbs = np.stack([exact_sum.to_limbs(u) for u in totals]) * copies
    got = exact_sum.from_limbs_array(limbs.reshape(len(totals), 1, -1)).reshape(-1).tolist()
    assert got == [u * copies for u in totals]
    assert [exact_sum.from_limbs(x) for x in limbs] == [u * copies for u in totals]
    assert all(type(g) is int for g in got)
