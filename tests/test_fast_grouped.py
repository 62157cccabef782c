"""The compiled (numba) grouped pass 1 against its numpy path, bit for bit, and against a
brute-force histogram per group; skipped where numba is not installed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.passes import compact
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.grouped_kernels import grouped_pass1_kernel, split_pass1
from bosaris_dask.passes.keys import order_keys

from .test_fast_pass1 import chunks

pytest.importorskip("numba")


def _kernel(cls, s, m, g, n_groups, bm, pbm, block, compiled, encoded=False):
    rows, cols = np.arange(cls.shape[0]), np.arange(cls.shape[1])
    pooled = {}
    if pbm is not None:
        pooled = {"pooled_shift": 0 if pbm.adaptive else pbm.shift, "pooled_nbins": pbm.nbins,
                  "pooled_binmap": pbm if pbm.adaptive else None}  # fmt: skip
    return grouped_pass1_kernel(
        rows, cols, cls, g, s, m, system=0, shift=0 if bm.adaptive else bm.shift,
        nbins=bm.nbins, n_groups=n_groups, block=block, slice_size=4 * block,
        binmap=bm if bm.adaptive else None, compiled=compiled, encoded=encoded, **pooled,
    )  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    problem=chunks(),
    n_groups=st.integers(1, 9),
    group_dtype=st.sampled_from([np.int16, np.int32, np.int64]),
    pooled=st.sampled_from([None, "uniform", "adaptive"]),
    seed=st.integers(0, 2**16),
)
def test_compiled_grouped_pass1_equals_the_numpy_path_bit_for_bit(
    problem, n_groups, group_dtype, pooled, seed
):
    cls, s, m, bm, block = problem
    rng = np.random.default_rng(seed)
    g = rng.integers(0, n_groups, size=cls.shape).astype(group_dtype)
    _check(cls, s, m, g, n_groups, bm, _pooled_map(pooled, s), block)


def _pooled_map(pooled, s):
    bits = s.dtype.itemsize * 8
    if pooled == "uniform":
        return BinMap.uniform(bits, 7)
    if pooled == "adaptive":
        x = s.reshape(-1)
        return BinMap.from_sample(order_keys(x[np.isfinite(x)]), bits, 9)
    return None


@settings(max_examples=20, deadline=None)
@given(
    n_groups=st.integers(1, 3),
    pooled=st.sampled_from([None, "uniform", "adaptive"]),
    dtype=st.sampled_from([np.float32, np.float64]),
    seed=st.integers(0, 2**16),
)
def test_counts_past_a_byte_carry_exactly(n_groups, pooled, dtype, seed):
    # the compiled loop counts in bytes, each wrap adding 256: bins of hundreds of trials
    rng = np.random.default_rng(seed)
    shape = (40, 100)
    cls = rng.choice(np.array([-1, 0, 1], np.int8), size=shape, p=[0.6, 0.1, 0.3])
    s = rng.choice(np.array([-1.0, 0.5, 2.0]), size=shape).astype(dtype)
    m = rng.random(shape) > 0.05
    g = rng.integers(0, n_groups, size=shape).astype(np.int16)
    bm = BinMap.uniform(s.dtype.itemsize * 8, 4)
    _check(cls, s, m, g, n_groups, bm, _pooled_map(pooled, s), 1024)


def _check(cls, s, m, g, n_groups, bm, pbm, block):
    """The compiled kernel equals the numpy path bit for bit, and brute force; so do their
    encoded results (what the pass runner receives)."""
    with np.errstate(all="ignore"):
        fast = _kernel(cls, s, m, g, n_groups, bm, pbm, block, True)
        slow = _kernel(cls, s, m, g, n_groups, bm, pbm, block, False)
        encoded = [_kernel(cls, s, m, g, n_groups, bm, pbm, block, c, encoded=True)
                   for c in (True, False)]  # fmt: skip
    np.testing.assert_array_equal(fast.view(np.int64), slow.view(np.int64))
    for enc in encoded:
        assert compact.decode(enc).tobytes() == slow.tobytes()
    # brute force: each group's trials counted into its bins, non-finite scores as 0.0
    tail = 2 * pbm.nbins if pbm is not None else 0
    counts, _, missing, bad = split_pass1(fast[: len(fast) - tail], n_groups, bm.nbins)
    trial = (cls != 0) & m
    x = np.where(np.isfinite(s), s, 0).astype(s.dtype) + s.dtype.type(0)
    bins = bm.bin_of(order_keys(x))
    want = np.zeros((n_groups, bm.nbins, 2), dtype=np.int64)
    np.add.at(want, (g[trial], bins[trial], (cls[trial] > 0).astype(int)), 1)
    np.testing.assert_array_equal(counts, want)
    gone = (cls != 0) & ~m
    want_missing = np.zeros((n_groups, 2), dtype=np.int64)
    np.add.at(want_missing, (g[gone], (cls[gone] > 0).astype(int)), 1)
    np.testing.assert_array_equal(missing, want_missing)
    assert bad == int(np.count_nonzero(trial & ~np.isfinite(s)))
    if pbm is not None:
        pbins = pbm.bin_of(order_keys(x))
        n_non, n_tar = fast[len(fast) - tail :].reshape(2, -1)
        np.testing.assert_array_equal(n_non, np.bincount(pbins[trial & (cls < 0)],
                                                         minlength=pbm.nbins))  # fmt: skip
        np.testing.assert_array_equal(n_tar, np.bincount(pbins[trial & (cls > 0)],
                                                         minlength=pbm.nbins))  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(problem=chunks(), n_groups=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_compiled_per_group_sums_equal_the_numpy_terms_and_units(problem, n_groups, seed):
    # sums_into's terms (fast_pass1's) and units against softplus_terms and split_units
    # summed per slot with bincount (the numpy path); up to 6,300 trials: several runs
    from bosaris_dask.passes import exact_sum, fast_grouped
    from bosaris_dask.passes.grouped_kernels import _GroupUnits
    from bosaris_dask.passes.softplus import softplus_terms
    from bosaris_dask.passes.workspace import workspace

    cls, s, m, _, _ = problem
    c = np.where(m, cls, 0).astype(np.int8).reshape(-1)
    x = s.reshape(-1)
    g = np.random.default_rng(seed).integers(0, n_groups, x.size).astype(np.int16)
    acc = np.zeros((2, 2 * n_groups), dtype=np.int64)
    bufs = (np.empty(fast_grouped.SUMS_RUN, np.int64), np.empty(fast_grouped.SUMS_RUN, np.int64))
    with np.errstate(all="ignore"):
        big = fast_grouped.sums_into(fast_grouped.sums_kernel(), c, x, g, np.empty(x.size),
                                     acc, bufs)  # fmt: skip
        ws = workspace(np.dtype(x.dtype), exact_sum.MAX_BLOCK, exact_sum.MAX_BLOCK)
        terms = softplus_terms(c, np.where(np.isfinite(x), x, 0).astype(x.dtype), ws, False)
    assert big == bool(np.any(terms >= exact_sum.BIG))
    if big:
        return
    want = _GroupUnits(2 * n_groups)
    want.add(terms.copy(), 2 * g.astype(np.intp) + (c > 0), np.empty(x.size))
    got = _GroupUnits(2 * n_groups)
    got.add_units(acc[0], acc[1])
    assert got.total() == want.total()


def test_terms_too_large_for_the_grid_are_summed_exactly_per_group():
    cls = np.array([[1, -1, -1, 1]], dtype=np.int8)
    s = np.array([[-3e5, 2e5, -1.0, 0.5]])  # softplus terms of 3e5 and 2e5: above 2**17
    g = np.array([[1, 0, 1, 0]], dtype=np.int16)
    m = np.ones(cls.shape, bool)
    bm = BinMap.uniform(64, 8)
    fast = _kernel(cls, s, m, g, 2, bm, None, 2, True)
    slow = _kernel(cls, s, m, g, 2, bm, None, 2, False)
    np.testing.assert_array_equal(fast, slow)
    _, units, _, _ = split_pass1(fast, 2, bm.nbins)
    from bosaris_dask.passes import exact_sum

    got = [[exact_sum.to_float(u) for u in per] for per in units]  # [target, non-target]
    assert got[1][0] == pytest.approx(3e5) and got[0][1] == pytest.approx(2e5)


def test_an_evaluation_with_compiled_grouped_counts_and_selection_is_the_same_bit_for_bit(
    monkeypatch,
):
    import dask

    from bosaris_dask import metrics
    from bosaris_dask.passes import grouped_histograms

    from .test_grouped import BY, SCALED, _dense

    key, scores, tables, _, _, _ = _dense(np.float32)
    args = {"conditions": tables, "by": BY, "priors": [0.5, 0.01], "equalize": True}
    with dask.config.set(SCALED):
        slow = metrics.evaluate(scores, key, **args)
        monkeypatch.setattr(grouped_histograms, "COMPILED_TRIALS", 0)
        fast = metrics.evaluate(scores, key, **args)
    assert fast.attrs == slow.attrs
    for name in slow.data_vars:
        np.testing.assert_array_equal(fast[name].values, slow[name].values, err_msg=name)
