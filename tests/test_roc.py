"""The small exact kernels: hull, PAV blocks, EER, PRBEP, minDCF, minCllr, the thinned DET curve."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ndtri

from bosaris_dask import roc
from bosaris_dask import steppy_roc as steppy_roc_module
from bosaris_dask.passes.score_summary import ScoreSummary
from bosaris_dask.steppy_roc import _cell_changes, steppy_roc

from . import reference as ref


def test_hand_worked_hull_and_summaries():
    # scores ascending: non non non tar non tar tar (values -2 -1 0 1 1.5 2 3)
    n_tar = np.array([0, 0, 0, 1, 0, 1, 1])
    n_non = np.array([1, 1, 1, 0, 1, 0, 0])
    hull = roc.hull_from_counts(n_tar, n_non)
    assert hull.misses.tolist() == [0, 0, 1, 3] and hull.false_alarms.tolist() == [4, 1, 0, 0]
    assert np.isclose(
        roc.hull_eer(hull), 1 / 7
    )  # segment (Pfa 1/4, 0) -> (0, 1/3) meets Pmiss = Pfa
    assert roc.hull_prbep(hull) == 0.5  # segment (fa 1, miss 0) -> (fa 0, miss 1)
    dcf, pmiss, pfa = roc.min_bayes_error(hull, np.array([0.0]))
    assert (dcf[0], pmiss[0], pfa[0]) == (0.125, 0.0, 0.25)
    # PAV blocks: [3 non], [1 tar + 1 non], [2 tar]; the middle one has LLR log(1) - log(T/N)
    middle = np.log1p(np.exp(np.log(3 / 4))) / 3 + np.log1p(np.exp(-np.log(3 / 4))) / 4
    assert np.isclose(roc.hull_min_cllr(hull), middle / 2 / np.log(2), rtol=1e-15)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(300, 3000),
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["smooth", "noisy", "pure runs", "ties"]),
)
def test_hull_of_many_points_is_exact(n, seed, kind):
    """Exercises the Qhull pre-filter (over 256 points) against an exact rational check."""
    rng = np.random.default_rng(seed)
    if kind == "smooth":  # large counts, locally convex: the hard case for pruning
        n_tar = rng.poisson(np.linspace(1, 200, n) ** 1.5)
        n_non = rng.poisson(np.linspace(200, 1, n) ** 1.5)
    elif kind == "pure runs":
        n_tar = rng.integers(0, 3, n) * (rng.random(n) < 0.3)
        n_non = rng.integers(0, 3, n) * (n_tar == 0)
    elif kind == "ties":
        n_tar = rng.integers(0, 2, n)
        n_non = rng.integers(0, 2, n)
    else:
        n_tar = rng.integers(0, 50, n)
        n_non = rng.integers(0, 50, n)
    n_tar[-1] += 1
    n_non[0] += 1
    hull = roc.hull_from_counts(n_tar, n_non)
    misses = np.concatenate([[0], np.cumsum(n_tar)])
    fas = n_non.sum() - np.concatenate([[0], np.cumsum(n_non)])
    ref.check_hull(misses, fas, hull.misses, hull.false_alarms)


def test_pav_blocks_have_increasing_posteriors():
    rng = np.random.default_rng(0)
    n_tar, n_non = rng.integers(0, 5, 500), rng.integers(0, 5, 500)
    starts, t, n = roc.pav_blocks(n_tar, n_non)
    assert starts[0] == 0 and starts[-1] == 500 and t.sum() == n_tar.sum()
    post = t / (t + n)
    assert np.all(np.diff(post) > 0)
    for a, b, bt, bn in zip(starts[:-1], starts[1:], t, n, strict=True):
        assert n_tar[a:b].sum() == bt and n_non[a:b].sum() == bn


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 400),
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["smooth", "noisy", "pure runs", "ties", "separated"]),
    empty=st.tuples(st.integers(0, 3), st.integers(0, 3)),
)
def test_summaries_equal_the_exact_rational_reference(n, seed, kind, empty):
    """Hull, PAV blocks, EER, PRBEP and minCllr against tests/reference.py (Fractions, no roc),
    with ``empty`` bins before and after the data (pooled into the first and last PAV blocks:
    no hull vertex repeats)."""
    rng = np.random.default_rng(seed)
    if kind == "smooth":
        n_tar = rng.poisson(np.linspace(1, 60, n) ** 1.5)
        n_non = rng.poisson(np.linspace(60, 1, n) ** 1.5)
    elif kind == "pure runs":
        n_tar = rng.integers(0, 3, n) * (rng.random(n) < 0.3)
        n_non = rng.integers(0, 3, n) * (n_tar == 0)
    elif kind == "ties":
        n_tar, n_non = rng.integers(0, 2, n), rng.integers(0, 2, n)
    elif kind == "separated":  # every non-target below every target: EER 0, minCllr 0
        cut = rng.integers(0, n + 1)
        n_tar = np.where(np.arange(n) >= cut, rng.integers(0, 4, n), 0)
        n_non = np.where(np.arange(n) < cut, rng.integers(0, 4, n), 0)
    else:
        n_tar, n_non = rng.integers(0, 20, n), rng.integers(0, 20, n)
    n_tar[-1] += 1
    n_non[0] += 1
    n_tar, n_non = (np.pad(a, empty) for a in (n_tar, n_non))
    n = len(n_tar)
    tar = np.repeat(np.arange(n, dtype=np.float64), n_tar)  # bin i holds the score i
    non = np.repeat(np.arange(n, dtype=np.float64), n_non)
    hull = roc.hull_from_counts(n_tar, n_non)
    assert (hull.misses.tolist(), hull.false_alarms.tolist()) == ref.hull(tar, non)
    starts, t, nn = roc.pav_blocks(n_tar, n_non)
    blocks = ref.pav(tar, non)
    assert t.tolist() == [b[2] for b in blocks] and nn.tolist() == [b[3] for b in blocks]
    filled = np.flatnonzero(n_tar + n_non)  # a block starts at its first non-empty bin
    first = filled[np.searchsorted(filled, starts[:-1])]
    assert first.tolist() == [b[0] for b in blocks]
    np.testing.assert_allclose(roc.hull_eer(hull), ref.eer(tar, non), rtol=1e-12, atol=0)
    np.testing.assert_allclose(roc.hull_prbep(hull), ref.prbep(tar, non), rtol=1e-12, atol=0)
    np.testing.assert_allclose(roc.hull_min_cllr(hull), ref.min_cllr(tar, non), rtol=1e-12, atol=0)
    if non.max() < tar.min():
        assert ref.eer(tar, non) == ref.min_cllr(tar, non) == 0.0


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(3, 3000),
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["smooth", "noisy", "pure runs", "ties", "huge"]),
)
def test_the_compiled_hull_loop_finds_the_same_vertices(n, seed, kind):
    """The compiled loop (numba; forced here from 0 points on) against the Python loop, and
    against the exact rational check; "huge" counts bring the cumulative sums near 2**31 (and
    some past it, where the Python loop runs)."""

    pytest.importorskip("numba")
    rng = np.random.default_rng(seed)
    if kind == "smooth":
        n_tar = rng.poisson(np.linspace(1, 200, n) ** 1.5)
        n_non = rng.poisson(np.linspace(200, 1, n) ** 1.5)
    elif kind == "pure runs":
        n_tar = rng.integers(0, 3, n) * (rng.random(n) < 0.3)
        n_non = rng.integers(0, 3, n) * (n_tar == 0)
    elif kind == "ties":
        n_tar = rng.integers(0, 2, n)
        n_non = rng.integers(0, 2, n)
    elif kind == "huge":
        n_tar = rng.integers(0, 2**31 // n * 2, n)
        n_non = rng.integers(0, 2**31 // n * 2, n)
    else:
        n_tar = rng.integers(0, 50, n)
        n_non = rng.integers(0, 50, n)
    n_tar[-1] += 1
    n_non[0] += 1
    x = np.concatenate([[0], np.cumsum(n_non)])
    y = np.concatenate([[0], np.cumsum(n_tar)])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(roc, "_COMPILED_HULL_POINTS", 0)
        mp.setattr(roc, "_COMPILED_HULL_POINTS_LOADED", 0)  # (the bound once numba is loaded)
        fast = roc.convex_minorant(x, y)
    np.testing.assert_array_equal(fast, roc.convex_minorant(x, y, fast=False))
    ref.check_hull(y, x[-1] - x, y[fast], x[-1] - x[fast])


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 5000),
    seed=st.integers(0, 2**32 - 1),
    resolution=st.sampled_from([0.005, 0.05, 1.0]),
    dense=st.booleans(),
)
def test_steppy_roc_keeps_the_points_whose_probit_cell_changes(n, seed, resolution, dense):
    """The thinned DET curve against the direct rule at every bin edge, and where each axis's
    cell changes against the probit of every point."""
    rng = np.random.default_rng(seed)
    hi = 10**6 if dense else 3
    n_tar = rng.integers(0, hi, n) * (rng.random(n) < 0.5)
    n_non = rng.integers(0, hi, n) * (rng.random(n) < 0.5)
    n_tar[0] += 1
    n_non[-1] += 1
    s = ScoreSummary(np.dtype(np.float64), lo=np.arange(n, dtype=np.uint64),
                     bits=np.zeros(n, np.int8), n_tar=n_tar, n_non=n_non,
                     softplus_units=(0, 0))  # fmt: skip
    pmiss = np.concatenate([[0], np.cumsum(n_tar)]) / n_tar.sum()
    pfa = (n_non.sum() - np.concatenate([[0], np.cumsum(n_non)])) / n_non.sum()
    cells = np.floor(ndtri(np.clip(np.stack([pmiss, pfa]), 1e-12, 1 - 1e-12)) / resolution)
    keep = np.ones(len(pmiss), dtype=bool)
    keep[1:-1] = (cells[:, 1:-1] != cells[:, :-2]).any(axis=0)
    got_pmiss, got_pfa = steppy_roc(s, resolution)
    np.testing.assert_array_equal(got_pmiss, pmiss[keep])
    np.testing.assert_array_equal(got_pfa, pfa[keep])
    for axis, (p, falling) in enumerate(((pmiss, False), (pfa, True))):  # each axis alone
        want = np.flatnonzero(cells[axis, 1:] != cells[axis, :-1]) + 1
        np.testing.assert_array_equal(_cell_changes(p, resolution, falling), want)
        with pytest.MonkeyPatch.context() as mp:  # the searches, which long curves take
            mp.setattr(steppy_roc_module, "_DIRECT", 0)
            np.testing.assert_array_equal(_cell_changes(p, resolution, falling), want)


def test_steppy_roc_of_a_summary_without_targets_keeps_every_point():
    """pmiss is 0 / 0 at every point (as the direct rule has it, NaN cells all differ)."""
    s = ScoreSummary(np.dtype(np.float64), lo=np.arange(4, dtype=np.uint64),
                     bits=np.zeros(4, np.int8), n_tar=np.zeros(4, np.int64),
                     n_non=np.array([3, 1, 0, 0]), softplus_units=(0, 0))  # fmt: skip
    with np.errstate(invalid="ignore"):
        pmiss, pfa = steppy_roc(s)
    assert np.isnan(pmiss).all() and pfa.tolist() == [1.0, 0.25, 0.0, 0.0, 0.0]


def test_trailing_empty_bins_join_the_last_pav_block_and_get_its_llr():
    """An empty last bin was a vertex of its own (the hull's last point repeated), so PAV made
    it an empty block and its optimal LLR was NaN."""
    from bosaris_dask.calibration.optimal import optimal_llr_table

    hull = roc.hull_from_counts(np.array([1, 2, 0]), np.array([2, 1, 0]))
    assert hull.misses.tolist() == [0, 1, 3] and hull.false_alarms.tolist() == [3, 1, 0]
    llr = optimal_llr_table([1, 2, 0], [2, 1, 0])
    np.testing.assert_allclose(llr, [-np.log(2), np.log(2), np.log(2)], rtol=1e-15)
