"""The hulls of many histograms at once against the one-hull functions of :mod:`bosaris_dask.roc`
(themselves checked against exact rational references in ``tests/test_roc.py``): the same
vertices and the same EER, minCllr and minimum Bayes error, bit for bit, compiled or not."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

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
