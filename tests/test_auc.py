"""AUC: exact Mann-Whitney (ties counted half) against pairwise counting and scikit-learn; the
area under the ROCCH against an independent hull; the engine's bounds under random chunkings."""

from __future__ import annotations

from fractions import Fraction
from unittest import mock

import dask
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from bosaris_dask import metrics
from bosaris_dask.passes import pass1_bins
from bosaris_dask.trials import make_key, make_scores

from . import reference as ref


def _pairwise_auc(tar, non):
    tar, non = np.asarray(tar)[:, None], np.asarray(non)[None, :]
    return float(Fraction(int(2 * (tar > non).sum() + (tar == non).sum()), 2 * tar.size * non.size))


def _upper_hull_area(tar, non):
    """Area under the upper convex hull of the ROC points (Pfa, Pd), by a monotone chain."""
    misses, fas = ref.roc_points(np.asarray(tar), np.asarray(non))
    pts = sorted({(Fraction(int(f), len(non)), Fraction(len(tar) - int(m), len(tar)))
                  for m, f in zip(misses, fas, strict=True)})  # fmt: skip
    hull: list[tuple[Fraction, Fraction]] = []
    for p in pts:
        while len(hull) >= 2:
            (ox, oy), (ax, ay) = hull[-2], hull[-1]
            if (ax - ox) * (p[1] - oy) - (ay - oy) * (p[0] - ox) >= 0:  # not a right turn
                hull.pop()
            else:
                break
        hull.append(p)
    area = sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(hull, hull[1:]))  # noqa: B905
    return float(area)


scores = st.lists(st.integers(-6, 6), min_size=1, max_size=25)


@settings(max_examples=100, deadline=None)
@given(tar=scores, non=scores, scale=st.sampled_from([1.0, 0.5, 1e-3]))
def test_auc_is_mann_whitney_with_half_ties(tar, non, scale):
    tar, non = np.array(tar) * scale, np.array(non) * scale  # heavy ties
    got = metrics.auc(tar, non)
    assert got == _pairwise_auc(tar, non)
    labels = np.r_[np.ones(len(tar)), np.zeros(len(non))]
    assert got == pytest.approx(roc_auc_score(labels, np.r_[tar, non]), abs=1e-15)
    rocch = metrics.auc_rocch(tar, non)
    assert rocch == _upper_hull_area(tar, non)
    assert rocch >= got


def test_hand_worked_auc():
    assert metrics.auc([1.0, 2.0, 3.0], [0.0, 2.0]) == 0.75  # 4 ordered + 1 tie / 2, of 6
    # ROC points (Pfa, Pd): (0, 0), (0, 1/3), (1/2, 2/3), (1/2, 1), (1, 1); the hull skips
    # (1/2, 2/3): area 1/2 * (1/3 + 1) / 2 + 1/2 = 5/6
    assert metrics.auc_rocch([1.0, 2.0, 3.0], [0.0, 2.0]) == pytest.approx(5 / 6, rel=1e-15)
    ds = metrics.evaluate_arrays([1.0, 2.0, 3.0], [0.0, 2.0], priors=[0.5])
    assert ds.auc.item() == ds.auc_low.item() == ds.auc_high.item() == 0.75


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), coarse=st.sampled_from([2, 6, 20]),
       ties=st.sampled_from([2, 1000, None]), dense=st.booleans())  # fmt: skip
def test_engine_bounds_contain_the_exact_auc(seed, coarse, ties, dense):
    """Dense (sub-histogram) refinement leaves mixed coarse bins: then only bounds are known."""
    rng = np.random.default_rng(seed)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(6, 9), p=[0.7, 0.3])
    mask[0, 0], mask[-1, -1] = 1, -1
    values = rng.normal(size=mask.shape) + (mask == 1)
    values = np.round(values * ties) / ties if ties else values
    key = make_key(range(6), range(9), mask, chunks=(4, 5))
    sc = make_scores(range(6), range(9), values, chunks=(2, 7))
    with (
        mock.patch.object(pass1_bins, "default_coarse_bits", lambda n: coarse),
        dask.config.set(
            {"bosaris_dask.raw-limit": 0 if dense else 1 << 22, "bosaris_dask.dense-budget": 64}
        ),  # fmt: skip
    ):
        ds = metrics.evaluate(sc, key, priors=[0.5])
    exact = _pairwise_auc(values[mask == 1], values[mask == -1])
    low, high = ds.auc_low.item(), ds.auc_high.item()
    assert low <= exact <= high
    if low == high:
        assert ds.auc.item() == exact
    else:
        assert np.isnan(ds.auc.item())
    assert ds.auc_rocch.item() == _upper_hull_area(values[mask == 1], values[mask == -1])


def test_engine_auc_is_not_exact_after_dense_refinement_but_bounded():
    rng = np.random.default_rng(0)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(6, 9), p=[0.7, 0.3])
    values = rng.normal(size=mask.shape) + (mask == 1)
    key = make_key(range(6), range(9), mask, chunks=(4, 5))
    sc = make_scores(range(6), range(9), values, chunks=(2, 7))
    with (
        mock.patch.object(pass1_bins, "default_coarse_bits", lambda n: 2),
        dask.config.set({"bosaris_dask.raw-limit": 0, "bosaris_dask.dense-budget": 64}),
    ):
        ds = metrics.evaluate(sc, key, priors=[0.5])
    assert np.isnan(ds.auc.item()) and ds.auc_low.item() < ds.auc_high.item()
