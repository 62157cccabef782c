"""Hypothesis invariants of scores from embeddings: under any sizes, dimensions, centering and
chunkings the scores are the float64 cosine rounded to float32 (up to the float64 error of the
sum), and AS-norm equals a brute force with a full sort, for any top-N and cohort block size."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.embeddings import from_arrays, scores_from_embeddings
from bosaris_dask.embeddings.cohort import cohort_stats


def _unit(x, center=None):
    x = x.astype(np.float64)
    if center is not None:
        x = x - center
    return x / np.sqrt((x * x).sum(axis=1, keepdims=True))


@st.composite
def problems(draw):
    m, n, d = draw(st.integers(1, 30)), draw(st.integers(1, 30)), draw(st.integers(1, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scale = draw(st.sampled_from([1e-3, 1.0, 1e4]))
    e = (rng.normal(size=(m, d)) * scale).astype(draw(st.sampled_from([np.float32, np.float64])))
    t = (rng.normal(size=(n, d)) * scale).astype(np.float32)
    center = rng.normal(size=d) * scale * 0.1 if draw(st.booleans()) else None
    chunks = (draw(st.integers(1, m)), draw(st.integers(1, n)))
    return e, t, center, chunks


@settings(max_examples=40)
@given(problems())
def test_scores_are_the_float64_cosine_rounded_under_any_chunking(problem):
    e, t, center, chunks = problem
    s = scores_from_embeddings(from_arrays([f"e{i}" for i in range(len(e))], e),
                               from_arrays([f"t{i}" for i in range(len(t))], t),
                               center=center, chunks=chunks).score.values  # fmt: skip
    ref = _unit(e, center) @ _unit(t, center).T
    bound = np.spacing(np.abs(ref).astype(np.float32)) / 2 + e.shape[1] * 4e-16
    assert s.dtype == np.float32 and s.shape == ref.shape
    assert (np.abs(s.astype(np.float64) - ref) <= bound).all()


@settings(max_examples=25)
@given(st.integers(2, 25), st.integers(1, 30), st.integers(0, 2**32 - 1), st.data())
def test_top_n_statistics_equal_a_full_sort(n_cohort, block, seed, data):
    top_n = data.draw(st.integers(2, n_cohort))
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(7, 5)).astype(np.float32)
    c = rng.normal(size=(n_cohort, 5)).astype(np.float32)
    c[: n_cohort // 3] = c[0]  # ties in the cohort scores
    st_ = cohort_stats(from_arrays([f"x{i}" for i in range(7)], x),
                       from_arrays([f"c{i}" for i in range(n_cohort)], c),
                       top_n=top_n, block=block)  # fmt: skip
    scores = (_unit(x) @ _unit(c).T).astype(np.float32).astype(np.float64)
    top = np.sort(scores, axis=1)[:, ::-1][:, :top_n]
    np.testing.assert_allclose(st_.top_mean.values, top.mean(axis=1), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(st_.top_std.values, top.std(axis=1), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(st_.cohort_mean.values, scores.mean(axis=1), rtol=1e-6,
                               atol=1e-7)  # fmt: skip
    np.testing.assert_allclose(st_.cohort_std.values, scores.std(axis=1), rtol=1e-5, atol=1e-7)
