"""The cohort statistics without scoring the whole cohort: the full mean and std from the
cohort's moments (against brute-force numpy statistics of the exact products and of the float32
scores, within the documented bounds), and the top-N by the float32 screen (bit for bit the
streaming selection's, under ties, duplicated cohort vectors, N up to the cohort size, tiny
cohorts, unnormalized rows and overflowing buffers)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.embeddings import cohort as cohort_module
from bosaris_dask.embeddings import from_arrays, scores_from_embeddings
from bosaris_dask.embeddings.cohort import _stats_block, _top_block, cohort_stats
from bosaris_dask.embeddings.cohort_moments import (
    _moments_numpy,
    _rows_numpy,
    cohort_moments,
    row_moments,
)
from bosaris_dask.embeddings.cohort_screen import screen_kernels, screen_top
from bosaris_dask.embeddings.kernel import score_block
from bosaris_dask.embeddings.rounding import exact_pairs, screen_factors

pytest.importorskip("numba")


def _unit(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.sqrt((x * x).sum(axis=1, keepdims=True))


@st.composite
def problems(draw):
    """Rows, a cohort, N and a block: normal, repeated cohort rows (ties), small integers
    (many equal scores), unnormalized rows of mixed scales (the dot backend), or a cohort of
    near copies of a row (scores closer than the screen's float32 error)."""
    m, k, d = draw(st.integers(1, 12)), draw(st.integers(2, 90)), draw(st.integers(1, 24))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["normal", "repeated", "integers", "dot", "near"]))
    if kind == "integers":
        a = rng.integers(-1, 2, size=(m, d)).astype(np.float64)
        c = rng.integers(-1, 2, size=(k, d)).astype(np.float64)
        a[(a == 0).all(axis=1), 0] = 1.0
        c[(c == 0).all(axis=1), 0] = 1.0
    else:
        a, c = rng.normal(size=(m, d)), rng.normal(size=(k, d))
        if kind == "repeated":
            c[: k // 2] = c[0]
            a[0] = c[0]
        elif kind == "near":  # scores closer than the float32 products can tell apart
            c = a[0] + 1e-7 * rng.normal(size=(k, d))
    if kind == "dot":
        a *= 10.0 ** rng.uniform(-3, 3, size=(m, 1))
        c *= 10.0 ** rng.uniform(-3, 3, size=(k, 1))
    else:
        a, c = _unit(a), _unit(c)
    top_n = draw(st.one_of(st.integers(2, k), st.just(k)))
    block = draw(st.integers(1, k + 3))
    capacity = draw(st.sampled_from([None, top_n + 2, top_n + 9]))
    return a, c, top_n, block, capacity


@settings(max_examples=60, deadline=None)
@given(problems())
def test_screened_top_n_equals_the_streaming_selection_bit_for_bit(problem):
    a, c, top_n, block, capacity = problem
    reference = _stats_block(a, c, top_n, block)[:, 2:]
    found = screen_top(a, c, c.astype(np.float32), top_n=top_n, block=block, capacity=capacity)
    assert found is not None
    top, over = found
    ok = np.setdiff1d(np.arange(len(a)), over)
    exact = score_block(a, c)  # every cohort score exactly rounded: the N largest, sorted
    np.testing.assert_array_equal(top[ok], np.sort(exact, axis=1)[ok, -top_n:])
    screened = _top_block(a, c, c.astype(np.float32), None, top_n, block)
    np.testing.assert_array_equal(screened.view(np.int64), reference.view(np.int64))
    mean, cov = cohort_moments(c)
    guessed = _top_block(a, c, c.astype(np.float32), None, top_n, block, row_moments(a, mean, cov))
    np.testing.assert_array_equal(guessed.view(np.int64), reference.view(np.int64))
    brute = np.sort((a @ c.T).astype(np.float32).astype(np.float64), axis=1)[:, ::-1][:, :top_n]
    scale = np.abs(brute).max(initial=0.0)
    np.testing.assert_allclose(screened[:, 0], brute.mean(axis=1), rtol=1e-6, atol=1e-7 * scale)


def test_overflowing_rows_fall_back_to_the_exact_selection():
    # every cohort score equal: no buffer can tell them apart, every row overflows
    c = np.tile(_unit(np.ones((1, 4))), (600, 1))
    a = _unit(np.random.default_rng(0).normal(size=(3, 4)))
    top, over = screen_top(a, c, c.astype(np.float32), top_n=5, block=64)
    assert over.tolist() == [0, 1, 2]
    screened = _top_block(a, c, c.astype(np.float32), None, 5, 64)
    assert screened.tobytes() == _stats_block(a, c, 5, 64)[:, 2:].tobytes()


@pytest.mark.parametrize("block", [64, 500, 4096])
def test_whole_runs_of_a_wide_product_are_counted_before_they_are_read(block):
    # products wider than the scan's runs of 64 scores (the hypothesis test's are mostly
    # narrower): runs without a candidate are skipped, a run with one is read
    rng = np.random.default_rng(5)
    a, c = _unit(rng.normal(size=(7, 12))), _unit(rng.normal(size=(1300, 12)))
    c[700] = a[3]  # a row's best score in the middle of a run
    top, over = screen_top(a, c, c.astype(np.float32), top_n=25, block=block)
    assert over.size == 0
    np.testing.assert_array_equal(top, np.sort(score_block(a, c), axis=1)[:, -25:])
    assert top[3, -1] == score_block(a[3:4], c[700:701])[0, 0]  # its own copy, found


def test_the_screen_bound_holds_on_adversarial_rows():
    # rows whose float32 products lose the most: the bound must cover |v - r| for every pair
    rng = np.random.default_rng(1)
    d = 256
    a = _unit(rng.normal(size=(64, d)) + 1e3 * (rng.random((64, d)) < 0.01))
    c = _unit(np.vstack([a[:32] + 1e-7 * rng.normal(size=(32, d)), rng.normal(size=(64, d))]))
    v = a.astype(np.float32) @ c.astype(np.float32).T
    r = score_block(a, c).astype(np.float64)
    na, nc = np.linalg.norm(a, axis=1), np.linalg.norm(c, axis=1)
    k, t = screen_factors(d, float(na.max()), float(nc.max()))
    assert (np.abs(v.astype(np.float64) - r) <= k * na[:, None] * nc[None, :] + t).all()


def test_exact_pairs_are_the_bits_of_the_block_kernel():
    rng = np.random.default_rng(2)
    a, c = rng.normal(size=(40, 9)), rng.normal(size=(70, 9))
    a[0] = [0.5, 2.0**-25, 2.0**-60, 0, 0, 0, 0, 0, 0]  # a float32 tie broken below float64
    c[0] = [1, 1, 1, 0, 0, 0, 0, 0, 0]
    rows, cols = np.repeat(np.arange(40), 70), np.tile(np.arange(70), 40)
    got = exact_pairs(a, c, rows, cols)
    np.testing.assert_array_equal(got, score_block(a, c).ravel())
    compiled = exact_pairs(a, c, rows, cols, dots=screen_kernels()["dots"])  # any order
    np.testing.assert_array_equal(compiled, got)
    assert got[0] == np.float32(0.5 + 2.0**-24)
    one = exact_pairs(a, c, np.array([0]), np.array([0]))  # a pair alone: the same bits
    assert one[0] == got[0]


@pytest.mark.parametrize("shape", [(1, 3), (5, 1), (700, 7), (300, 40)])
def test_moments_equal_numpy_statistics_of_the_exact_products(shape):
    n, d = shape
    rng = np.random.default_rng(n)
    c = _unit(rng.normal(size=(n, d)) + 0.2)
    e = _unit(rng.normal(size=(11, d)))
    mean, cov = cohort_moments(c)
    got = row_moments(e, mean, cov)
    x = e @ c.T  # float64 products: within ~1e-15 of the exact ones
    np.testing.assert_allclose(got[:, 0], x.mean(axis=1), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[:, 1], x.std(axis=1), rtol=1e-9, atol=1e-12)
    # the float32 scores' statistics are within the documented 2^-24 bounds
    r = x.astype(np.float32).astype(np.float64)
    u = 2.0**-24
    slack = 1e-13
    assert (np.abs(r.mean(axis=1) - got[:, 0]) <= u * np.abs(x).mean(axis=1) + slack).all()
    rms = np.sqrt((x * x).mean(axis=1))
    assert (np.abs(r.std(axis=1) - got[:, 1]) <= u * rms + slack).all()
    # the compiled loops and the numpy path: the same bits
    m2, c2 = _moments_numpy(c)
    assert m2.tobytes() == mean.tobytes() and c2.tobytes() == cov.tobytes()
    assert _rows_numpy(e, mean, cov).tobytes() == got.tobytes()


def test_a_degenerate_cohort_has_zero_spread_exactly():
    c = np.tile(_unit(np.array([[0.3, -0.7, 0.2, 0.1]])), (1000, 1))
    mean, cov = cohort_moments(c)
    assert mean.tobytes() == c[0].tobytes() and not cov.any()
    assert (row_moments(_unit(np.eye(4)), mean, cov)[:, 1] == 0.0).all()


def test_rounding_below_zero_variance_is_clipped():
    cov = -1e-30 * np.eye(3)  # as rounding could leave e^T cov e for a flat direction
    got = row_moments(np.eye(3), np.zeros(3), cov)
    assert (got[:, 1] == 0.0).all()


def test_z_t_s_norms_score_no_cohort_pair(monkeypatch):
    rng = np.random.default_rng(4)
    e, t, c = rng.normal(size=(6, 5)), rng.normal(size=(7, 5)), rng.normal(size=(30, 5))

    def refuse(*args, **kwargs):
        raise AssertionError("the cohort was scored")

    monkeypatch.setattr(cohort_module, "score_block", refuse)
    ids = lambda p, n: [f"{p}{i}" for i in range(n)]  # noqa: E731
    cohort = from_arrays(ids("c", 30), c)
    s = scores_from_embeddings(from_arrays(ids("e", 6), e), from_arrays(ids("t", 7), t),
                               norm="s", cohort=cohort).score.values  # fmt: skip
    raw = _unit(e) @ _unit(t).T
    x_e, x_t = _unit(e) @ _unit(c).T, _unit(t) @ _unit(c).T
    z = (raw - x_e.mean(axis=1)[:, None]) / x_e.std(axis=1)[:, None]
    tn = (raw - x_t.mean(axis=1)[None, :]) / x_t.std(axis=1)[None, :]
    np.testing.assert_allclose(s, 0.5 * (z + tn), rtol=2e-6, atol=2e-6)
    st_ = cohort_stats(from_arrays(ids("e", 6), e), from_arrays(ids("c", 30), c))
    assert np.isnan(st_.top_mean.values).all()


def test_streaming_method_is_the_reference():
    rng = np.random.default_rng(5)
    x = from_arrays([f"x{i}" for i in range(9)], rng.normal(size=(9, 6)))
    c = from_arrays([f"c{i}" for i in range(80)], rng.normal(size=(80, 6)))
    from bosaris_dask.embeddings.cohort import side_statistics
    from bosaris_dask.embeddings.prepare import prepare

    side, co = prepare(x), prepare(c)
    (new,) = side_statistics([side], co, top_n=7, block=16)
    (old,) = side_statistics([side], co, top_n=7, block=16, method="streaming")
    assert new[:, 2:].tobytes() == old[:, 2:].tobytes()
    np.testing.assert_allclose(new[:, :2], old[:, :2], rtol=1e-6, atol=1e-7)
    with pytest.raises(Exception, match="method must be"):
        side_statistics([side], co, top_n=7, method="sort")


def test_statistics_on_a_local_cluster_equal_the_threaded_ones():
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(6)
    x = from_arrays([f"x{i}" for i in range(40)], rng.normal(size=(40, 8)), chunk_rows=16)
    c = from_arrays([f"c{i}" for i in range(300)], rng.normal(size=(300, 8)))
    threaded = cohort_stats(x, c, top_n=12, block=64)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)  # fmt: skip
    with cluster, distributed.Client(cluster):
        remote = cohort_stats(x, c, top_n=12, block=64)
    for name in ("cohort_mean", "cohort_std", "top_mean", "top_std"):
        assert remote[name].values.tobytes() == threaded[name].values.tobytes()


@pytest.mark.parametrize("guess", [np.inf, -np.inf, 0.3, "moments"])
def test_a_wrong_guess_costs_time_never_bits(guess):
    rng = np.random.default_rng(7)
    a, c = _unit(rng.normal(size=(20, 6))), _unit(rng.normal(size=(400, 6)))
    c[:50] = c[1]  # ties
    mean, cov = cohort_moments(c)
    moments = row_moments(a, mean, cov)
    if guess == "moments":
        g = cohort_module._guess(moments, 9, 400)
    else:
        g = np.full(20, float(guess))
    top, over = screen_top(a, c, c.astype(np.float32), top_n=9, block=64, guess=g)
    ok = np.setdiff1d(np.arange(20), over)
    np.testing.assert_array_equal(top[ok], np.sort(score_block(a, c), axis=1)[ok, -9:])
    screened = _top_block(a, c, c.astype(np.float32), None, 9, 64, moments)
    assert screened.tobytes() == _stats_block(a, c, 9, 64)[:, 2:].tobytes()


def test_a_cohort_spread_across_a_row_gets_the_std_of_its_products(monkeypatch):
    # dot scores, a cohort 1e7 times wider across the row than along it: e^T Sigma e's terms
    # cancel, and its float64 rounding made the std 0.94% off (z-norm scores 0.36% off)
    rng = np.random.default_rng(2)
    d, n = 8, 200
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    c = (
        np.outer(0.5 + 1e-3 * rng.normal(size=n), q[:, 0])
        + 1e4 * rng.normal(size=(n, d - 1)) @ q[:, 1:].T
    )
    e = np.outer([1.0, 2.0, 0.5], q[:, 0])
    ids = [f"c{i}" for i in range(n)]
    got = cohort_stats(from_arrays(["a", "b", "c"], e), from_arrays(ids, c), backend="dot")
    x = e @ c.T  # float64 products: ~1e-11 off here, against a spread of ~1e-3
    np.testing.assert_allclose(got.cohort_std.values, x.std(axis=1), rtol=1e-6)
    np.testing.assert_allclose(got.cohort_mean.values, x.mean(axis=1), rtol=1e-12)
    # ordinary cosine rows keep the moments' statistics: no cohort product is computed
    called = []
    monkeypatch.setattr(cohort_module, "direct_moments", lambda *a: called.append(a))
    cohort_stats(from_arrays(["a", "b"], rng.normal(size=(2, d))),
                 from_arrays(ids, rng.normal(size=(n, d)) + 0.2))  # fmt: skip
    assert called == []
