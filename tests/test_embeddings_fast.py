"""The compiled (numba) top-N kernel of the cohort statistics against the numpy path, bit for
bit, and against a brute-force full sort; skipped where numba is not installed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.embeddings import fast_top
from bosaris_dask.embeddings.cohort import _stats_block, cohort_stats
from bosaris_dask.embeddings.store import from_arrays

pytest.importorskip("numba")


def _unit(x):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).sum(axis=1, keepdims=True))


@st.composite
def blocks(draw):
    """Sorted running best values and a block of float32 scores, often with ties (few
    distinct values) and with signed zeros."""
    rows, n, width = draw(st.integers(1, 9)), draw(st.integers(1, 40)), draw(st.integers(1, 60))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = draw(st.sampled_from(["few", "many"]))
    if values == "few":
        pool = np.array([-1.0, -0.5, 0.0, 0.25, 0.5, 1.0], dtype=np.float32)
        top = rng.choice(pool, size=(rows, n))
        s = rng.choice(pool, size=(rows, width))
    else:
        top = rng.normal(size=(rows, n)).astype(np.float32)
        s = rng.normal(size=(rows, width)).astype(np.float32)
    return np.sort(top, axis=1), s


@settings(max_examples=200, deadline=None)
@given(blocks())
def test_kernel_keeps_the_n_largest_sorted(problem):
    top, s = problem
    n = top.shape[1]
    expected = np.sort(np.concatenate([top, s], axis=1), axis=1)[:, -n:]  # full sort
    fast_top.top_kernel()(top, s)
    np.testing.assert_array_equal(top, expected)


@st.composite
def cohorts(draw):
    """Rows and a cohort of random sizes and dimension; ``ties``: cohort rows repeated (equal
    scores), or small-integer embeddings (many equal scores)."""
    m, k, d = draw(st.integers(1, 12)), draw(st.integers(2, 80)), draw(st.integers(1, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["normal", "repeated", "integers"]))
    if kind == "integers":
        a = rng.integers(-1, 2, size=(m, d)).astype(np.float64)
        c = rng.integers(-1, 2, size=(k, d)).astype(np.float64)
        a[(a == 0).all(axis=1), 0] = 1.0  # no zero vector (cosine undefined)
        c[(c == 0).all(axis=1), 0] = 1.0
    else:
        a, c = rng.normal(size=(m, d)), rng.normal(size=(k, d))
        if kind == "repeated":
            c[: k // 2] = c[0]
    top_n = draw(st.integers(2, k))
    block = draw(st.integers(1, k + 3))
    return _unit(a), _unit(c), top_n, block


@settings(max_examples=100, deadline=None)
@given(cohorts())
def test_compiled_statistics_equal_the_numpy_path_bit_for_bit(problem):
    a, c, top_n, block = problem
    numpy_path = _stats_block(a, c, top_n, block, compiled=False)
    compiled = _stats_block(a, c, top_n, block, compiled=True)
    np.testing.assert_array_equal(compiled.view(np.int64), numpy_path.view(np.int64))
    scores = (a @ c.T).astype(np.float32).astype(np.float64)  # brute force: a full sort
    best = np.sort(scores, axis=1)[:, ::-1][:, :top_n]
    np.testing.assert_allclose(compiled[:, 2], best.mean(axis=1), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(compiled[:, 3], best.std(axis=1), rtol=1e-5, atol=1e-7)


def test_disabling_numba_gives_the_numpy_path_and_the_same_statistics(monkeypatch):
    rng = np.random.default_rng(3)
    x = from_arrays([f"x{i}" for i in range(20)], rng.normal(size=(20, 6)))
    c = from_arrays([f"c{i}" for i in range(300)], rng.normal(size=(300, 6)))
    with_numba = cohort_stats(x, c, top_n=17, block=40)
    monkeypatch.setenv(fast_top.DISABLE_ENV, "1")
    assert fast_top.top_kernel() is None
    without = cohort_stats(x, c, top_n=17, block=40)
    for name in ("cohort_mean", "cohort_std", "top_mean", "top_std"):
        np.testing.assert_array_equal(with_numba[name].values, without[name].values)
