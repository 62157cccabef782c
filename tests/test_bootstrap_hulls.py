"""The hulls of many histograms at once against the one-hull functions of :mod:`bosaris_dask.roc`
(themselves checked against exact rational references in ``tests/test_roc.py``): the same
vertices and the same EER, minCllr and minimum Bayes error, bit for bit, compiled or not."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit

from bosaris_dask import roc
from bosaris_dask.bootstrap.hulls import row_hulls, rows_eer, rows_min_bayes_error, rows_min_cllr
from bosaris_dask.passes import jit


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 12),
    bins=st.integers(1, 300),
    scale=st.sampled_from([1, 3, 1000, 10**6, 10**9]),
    empty=st.tuples(st.integers(0, 3), st.integers(0, 3)),
    numpy_path=st.booleans(),
)
def test_every_row_equals_its_own_hull_bit_for_bit(seed, rows, bins, scale, empty, numpy_path):
    """Random counts (sparse, tied, pure runs, large: past ``2**31`` the rows take the
    one-hull loop), empty bins before and after, on the compiled and the numpy paths."""
    rng = np.random.default_rng(seed)
    n_tar = rng.poisson(rng.random(bins) * scale * rng.random(), (rows, bins))
    n_non = rng.poisson(rng.random(bins) * scale, (rows, bins))
    n_tar[:, -1] += 1  # every row has both classes
    n_non[:, 0] += 1
    n_tar, n_non = (np.pad(a, ((0, 0), empty)) for a in (n_tar, n_non))
    plo = np.array([-7.0, -2.2, 0.0, 1.5])
    if numpy_path:
        os.environ[jit.DISABLE_ENV] = "1"
    try:
        hulls = row_hulls(n_tar, n_non)
    finally:
        os.environ.pop(jit.DISABLE_ENV, None)
    eer, min_cllr = rows_eer(hulls), rows_min_cllr(hulls)
    bayes = rows_min_bayes_error(hulls, plo)
    for r in range(rows):
        hull = roc.hull_from_counts(n_tar[r], n_non[r])
        run = slice(hulls.starts[r], hulls.starts[r + 1])
        assert hulls.misses[run].tolist() == hull.misses.tolist()
        assert hulls.false_alarms[run].tolist() == hull.false_alarms.tolist()
        assert eer[r] == roc.hull_eer(hull)
        assert min_cllr[r] == roc.hull_min_cllr(hull)
        np.testing.assert_array_equal(bayes[r], roc.min_bayes_error(hull, plo)[0])


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_tar=st.integers(1, 40),
    n_non=st.integers(1, 60),
    n_edges=st.integers(1, 12),
    decimals=st.sampled_from([0, 1, 2]),
)
def test_the_exact_metrics_of_every_resample_lie_between_its_bound_and_its_bins(
    seed, n_tar, n_non, n_edges, decimals
):
    """Each resample (weighted trials) binned at random edges: its exact EER, minCllr and
    minDCF (brute force over its trials, repeated by their weights) are at most the bins' and
    at least their other bounds' (each bin's non-targets below its targets): the comparison's ``bins
    ±R`` is their difference at most, so it bounds every resample's binning error."""
    from bosaris_dask.bootstrap.replicates import replicate_metrics
    from tests import reference as ref

    rng = np.random.default_rng(seed)
    tar, non = (np.round(rng.normal(m, 1, n), decimals) for m, n in ((1, n_tar), (0, n_non)))
    edges = np.sort(rng.uniform(-3, 4, n_edges))
    weights = [np.ones(n_tar, int), np.ones(n_non, int)]
    rows = [weights] + [[rng.poisson(1, n_tar), rng.poisson(1, n_non)] for _ in range(4)]
    rows = [r for r in rows if r[0].sum() and r[1].sum()]
    plo = np.array([-2.2, 0.0, 1.5])

    def counts(scores, w):
        return np.bincount(np.searchsorted(edges, scores, side="right"), weights=w,
                           minlength=n_edges + 1)  # fmt: skip

    hist_tar = np.array([counts(tar, w_t) for w_t, _ in rows])
    hist_non = np.array([counts(non, w_n) for _, w_n in rows])
    # the exact Cllr sums (natural-log LLRs), as the bootstrap pass accumulates them
    sp_tar = np.array([np.sum(w_t * np.logaddexp(0, -tar)) for w_t, _ in rows])
    sp_non = np.array([np.sum(w_n * np.logaddexp(0, non)) for _, w_n in rows])
    out = replicate_metrics(hist_tar, hist_non, sp_tar, sp_non, plo, np.zeros(3, int))
    for r, (w_t, w_n) in enumerate(rows):
        t, n = np.repeat(tar, w_t), np.repeat(non, w_n)
        exact = {
            "eer": ref.eer(t, n),
            "min_cllr": ref.min_cllr(t, n),
            "min_dcf": ref.min_dcf(t, n, plo) / np.minimum(expit(plo), expit(-plo)),
        }
        for name, value in exact.items():  # fmt: skip
            assert np.all(out[f"{name}_bound"][r] <= value + 1e-12), (name, r)
            assert np.all(value <= out[name][r] + 1e-12), (name, r)
        # the calibration loss the other way round: between the binned value (at least 0) and
        # the bound
        loss = ref.cllr(t, n) - exact["min_cllr"]
        assert 0 <= out["cllr_cal"][r] <= loss + 1e-12, r
        assert loss <= out["cllr_cal_bound"][r] + 1e-12, r
