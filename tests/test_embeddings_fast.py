"""The fast paths of scores from embeddings: the compiled (numba) top-N kernel of the cohort
statistics against the numpy path, bit for bit, and against a brute-force full sort (skipped
where numba is not installed); the single-precision block kernel: the same bits under any
chunking and BLAS thread count, within its error bound of a float64 reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.embeddings import fast_top, scores_from_embeddings
from bosaris_dask.embeddings.cohort import _stats_block, cohort_stats
from bosaris_dask.embeddings.store import from_arrays

needs_numba = pytest.mark.skipif(fast_top.top_kernel() is None, reason="numba not installed")


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


@needs_numba
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


@needs_numba
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


@needs_numba
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


# --- the single-precision block kernel -----------------------------------------------------


@st.composite
def problems(draw):
    m, n, d = draw(st.integers(1, 300)), draw(st.integers(1, 300)), draw(st.integers(1, 64))
    # chunks of at least a sixth of a side: few blocks (each costs whole 256 x 256 tiles)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    e = rng.normal(size=(m, d)) * draw(st.sampled_from([1e-3, 1.0, 1e4]))
    t = rng.normal(size=(n, d)).astype(np.float32)
    if draw(st.booleans()):
        e[: m // 2] = t[0]  # equal vectors: cosines of 1 and ties
    chunkings = [(draw(st.integers(-(-m // 6), m)), draw(st.integers(-(-n // 6), n)))
                 for _ in range(2)]  # fmt: skip
    return e, t, chunkings


def _scores(e, t, chunks, precision="single"):
    return scores_from_embeddings(from_arrays([f"e{i}" for i in range(len(e))], e),
                                  from_arrays([f"t{i}" for i in range(len(t))], t),
                                  chunks=chunks, precision=precision)  # fmt: skip


@settings(max_examples=25, deadline=None)
@given(problems())
def test_single_precision_is_chunking_independent_and_within_its_bound(problem):
    e, t, chunkings = problem
    first, second = (_scores(e, t, c).score.values for c in chunkings)
    np.testing.assert_array_equal(first.view(np.int32), second.view(np.int32))  # same bits
    ue, ut = _unit(e), _unit(t)
    ref = ue @ ut.T
    bound = (e.shape[1] + 2) * 2.0**-24 * (np.abs(ue) @ np.abs(ut).T) + 1e-15
    assert first.dtype == np.float32
    assert (np.abs(first.astype(np.float64) - ref) <= bound).all()


def test_single_precision_recomputes_the_same_bits_whatever_the_blas_threads():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    rng = np.random.default_rng(11)
    e, t = rng.normal(size=(700, 48)), rng.normal(size=(600, 48))
    s = _scores(e, t, (300, 260)).score
    first = s.values
    for threads in (1, 2, 4):
        with threadpoolctl.threadpool_limits(threads, user_api="blas"):
            np.testing.assert_array_equal(s.values.view(np.int32), first.view(np.int32))
    # whole blocks: one chunk gives the same bits as many
    whole = _scores(e, t, (700, 600)).score.values
    np.testing.assert_array_equal(whole.view(np.int32), first.view(np.int32))


def test_single_precision_evaluates_as_its_stored_matrix():
    from bosaris_dask.metrics import evaluate
    from bosaris_dask.trials import key_from_labels, make_scores

    rng = np.random.default_rng(12)
    labels_e, labels_t = np.arange(90) % 9, rng.integers(0, 9, size=110)
    centres = rng.normal(size=(9, 16))
    e = centres[labels_e] + rng.normal(size=(90, 16))
    t = centres[labels_t] + rng.normal(size=(110, 16))
    lazy = _scores(e, t, (32, 40))
    key = key_from_labels(lazy.model.values, labels_e, lazy.segment.values, labels_t)
    stored = make_scores(lazy.model.values, lazy.segment.values, lazy.score.values)
    a, b = evaluate(lazy, key), evaluate(stored, key)
    for name in ("eer", "min_dcf", "act_dcf", "cllr", "min_cllr"):
        np.testing.assert_array_equal(a[name].values, b[name].values)


def test_precision_errors():
    from bosaris_dask.errors import OptionError

    e = from_arrays(["e"], [[1.0, 0.0]])
    with pytest.raises(OptionError, match="precision must be one of double, single"):
        scores_from_embeddings(e, e, precision="half")
    with pytest.raises(OptionError, match="cohort normalization"):
        scores_from_embeddings(e, e, precision="single", norm="z", cohort=e)
