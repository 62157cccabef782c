"""Calibration: linear (logistic regression) and PAV maps against scipy, BOSARIS, brute force."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import optimize as sciopt
from scipy.special import expit

from bosaris_dask.calibration import (
    LinearCalibrator,
    PAVCalibrator,
    apply_model,
    interpolate_map,
    linear_calibrate,
    load_model,
    pav_calibrate,
    pav_map,
)
from bosaris_dask.errors import ScoreError, TrialError
from bosaris_dask.trials import key_from_labels, make_key, make_ndx, make_scores

from . import reference

GAUSS = Path(__file__).parent / "data" / "gauss1"  # see its README.md


@pytest.fixture(scope="module")
def gauss():
    oracle = json.loads((GAUSS / "oracle.json").read_text())
    return np.loadtxt(GAUSS / "tar.txt"), np.loadtxt(GAUSS / "non.txt"), oracle


def nxe(theta, tar, non, prior):
    """Normalized prior-weighted cross-entropy of ``scale * s + offset``, by definition."""
    plo = math.log(prior / (1 - prior))
    ent = -prior * math.log(prior) - (1 - prior) * math.log(1 - prior)
    lt, ln = theta[0] * tar + theta[1] + plo, theta[0] * non + theta[1] + plo
    return (
        prior * np.mean(np.logaddexp(0, -lt)) + (1 - prior) * np.mean(np.logaddexp(0, ln))
    ) / ent


def newton_reference(tar, non, prior):
    """The exact optimum: scipy BFGS on the brute-force objective, polished by Newton steps."""
    plo = math.log(prior / (1 - prior))
    ent = -prior * math.log(prior) - (1 - prior) * math.log(1 - prior)
    X = [np.c_[tar, np.ones_like(tar)], np.c_[non, np.ones_like(non)]]
    w = [prior / len(tar) / ent, (1 - prior) / len(non) / ent]

    def grad_hess(theta):
        g, H = np.zeros(2), np.zeros((2, 2))
        for Xc, wc, y in zip(X, w, (1.0, -1.0), strict=True):
            e = expit(-y * (Xc @ theta + plo))
            g += wc * Xc.T @ (-y * e)
            H += wc * (Xc.T * (e * (1 - e))) @ Xc
        return g, H

    x = sciopt.minimize(
        nxe,
        np.array([1.0, 0.0]),
        args=(tar, non, prior),
        jac=lambda t, *a: grad_hess(t)[0],
        method="BFGS",
        options={"gtol": 1e-12},
    ).x
    for _ in range(3):
        g, H = grad_hess(x)
        x = x - np.linalg.solve(H, g)
    assert np.linalg.norm(grad_hess(x)[0]) < 1e-13
    return x


def cllr(tar_llr, non_llr):
    return (np.mean(np.logaddexp(0, -tar_llr)) + np.mean(np.logaddexp(0, non_llr))) / 2 / np.log(2)


def act_dcf(tar_llr, non_llr, plo):
    """Bayes error rate of LLRs thresholded at -plo (accept iff llr >= -plo)."""
    plo = np.asarray(plo)[:, None]
    pmiss = np.mean(tar_llr[None, :] < -plo, axis=1)
    pfa = np.mean(non_llr[None, :] >= -plo, axis=1)
    return expit(plo[:, 0]) * pmiss + expit(-plo[:, 0]) * pfa


# --------------------------------------------------------------------------------------------
# linear calibration
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", [0, 1, 2])
def test_gauss1_linear_calibration(gauss, which: int) -> None:
    tar, non, oracle = gauss
    ref = oracle["linear_calibration"][which]
    prior = ref["prior"]
    cal = LinearCalibrator(prior, gtol=1e-10, split_every=2).fit_arrays(tar, non, chunk=5000)
    theta = np.array([cal.scale_, cal.offset_])
    best = newton_reference(tar, non, prior)
    np.testing.assert_allclose(theta, best, rtol=0, atol=1e-8)
    assert cal.objective_ == pytest.approx(nxe(theta, tar, non, prior), rel=1e-12)
    assert cal.objective_ <= nxe(best, tar, non, prior) + 1e-15
    assert cal.objective_ <= ref["nxe"] + 1e-12
    np.testing.assert_allclose(theta, [ref["scale"], ref["offset"]], atol=1e-4)
    calibrated = cal.transform_arrays(tar), cal.transform_arrays(non)
    # Cllr (p = 0.5) of the calibrated scores: first-order in the ~3e-5 parameter difference
    assert cllr(*calibrated) == pytest.approx(ref["calibrated_cllr"], abs=1e-6)
    assert cal.converged_ and cal.counts_["n_target"] == 2000


def test_linear_calibration_trial_objects_dev_eval(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    ml, sl = rng.integers(0, 5, 30), rng.integers(0, 5, 40)
    key = key_from_labels(
        [f"m{i}" for i in range(30)], ml, [f"s{j}" for j in range(40)], sl, chunks=(8, 11)
    )
    cls = np.where(ml[:, None] == sl[None, :], 1, -1)
    s = (cls > 0) * 3.0 + rng.normal(size=cls.shape) * 2
    mask = rng.random(cls.shape) > 0.05
    scores = make_scores(
        key.model.values, key.segment.values, np.where(mask, s, np.nan), mask, chunks=(8, 11)
    )
    cal = LinearCalibrator(0.3, gtol=1e-10).fit(scores, key, allow_missing=True)
    ref = LinearCalibrator(0.3, gtol=1e-10).fit_arrays(s[mask & (cls > 0)], s[mask & (cls < 0)])
    np.testing.assert_allclose([cal.scale_, cal.offset_], [ref.scale_, ref.offset_], atol=1e-10)
    assert cal.counts_["n_missing"] == int((~mask).sum())
    # eval: another ndx over a subset of ids
    ndx = make_ndx(key.model.values[:10], key.segment.values[5:], rng.random((10, 35)) > 0.5)
    out = cal.transform(scores, ndx=ndx).compute()
    want = ndx.trial_mask.values & mask[:10, 5:]
    np.testing.assert_array_equal(out.score_mask.values, want)
    np.testing.assert_allclose(out.score.values[want], cal.scale_ * s[:10, 5:][want] + cal.offset_)
    path = tmp_path / "MODEL.json"
    cal.save(path)
    d = json.loads(path.read_text())
    assert d["kind"] == "linear_calibration" and d["weights"] == [cal.scale_]
    back = load_model(path)
    assert isinstance(back, LinearCalibrator) and back.scale_ == cal.scale_
    with pytest.raises(TrialError, match="one Scores"):
        cal.fit([scores], key)


def test_linear_calibrate_function_and_1d_check() -> None:
    cal = linear_calibrate(np.array([1.0, 2.0, 0.0]), np.array([0.0, -1.0, 0.5]), train_prior=0.2)
    assert cal.train_prior == 0.2 and cal.transform_arrays(np.array([1.0])).shape == (1,)
    with pytest.raises(TrialError, match="1-D"):
        LinearCalibrator().fit_arrays(np.ones((2, 2)), np.zeros((2, 2)))
    # a score matrix maps elementwise, as a PAV calibrator's does (was "expected (n, 1)")
    matrix = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]])
    want = cal.offset_ + cal.scale_ * matrix
    np.testing.assert_allclose(cal.transform_arrays(matrix), want, rtol=1e-15)


# --------------------------------------------------------------------------------------------
# PAV: the reference map
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("small_val", "name"), [(0.0, "small_val_0"), (1e-3, "small_val_0p001")])
def test_gauss1_pav_map(gauss, small_val: float, name: str) -> None:
    tar, non, oracle = gauss
    ref = oracle["pav_calibration"][name]
    cal = PAVCalibrator(small_val=small_val).fit_arrays(tar, non)
    np.testing.assert_array_equal(cal.score_bounds_, ref["score_bounds"])
    np.testing.assert_allclose(cal.llr_bounds_, ref["llr_bounds"], rtol=0, atol=1e-12)
    grid = np.asarray(oracle["pav_calibration"]["grid"])
    np.testing.assert_allclose(cal.transform_arrays(grid), ref["llr_on_grid"], rtol=0, atol=1e-12)


def test_laplace_optimal_llrs_are_the_toolkit_s(gauss) -> None:
    """BOSARIS's Laplace-smoothed ``opt_loglr`` on gauss1 (the oracle's first LLRs, range and
    Cllr): within about 1e-6, the increasing ramp the toolkit adds to its LLRs (the
    prior log-odds of the dummies instead of the real trials' was 9e-4 off)."""
    from bosaris_dask.calibration import optimal_llrs_arrays

    tar, non, oracle = gauss
    ref = oracle["cllr"]
    t, n = optimal_llrs_arrays(tar, non, laplace=True)
    np.testing.assert_allclose(t[:5], ref["opt_loglr_laplace_tar_first5"], rtol=0, atol=1.5e-6)
    np.testing.assert_allclose(n[:5], ref["opt_loglr_laplace_non_first5"], rtol=0, atol=1.5e-6)
    both = np.concatenate([t, n])
    np.testing.assert_allclose([both.min(), both.max()], ref["opt_loglr_laplace_range"],
                               rtol=0, atol=1.5e-6)  # fmt: skip
    assert cllr(t, n) == pytest.approx(ref["cllr_of_opt_loglr_laplace"], abs=1e-8)


def test_pav_bins_of_the_toolkit_cllr_laplace(gauss) -> None:
    """The PAV map with pseudo-counts lies between the raw PAV LLRs and the range BOSARIS reports
    for its Laplace-smoothed ``opt_loglr`` (which adds pseudo-counts at *both* ends)."""
    tar, non, oracle = gauss
    cal = PAVCalibrator(small_val=0.0).fit_arrays(tar, non)
    lo, hi = oracle["cllr"]["opt_loglr_laplace_range"]
    raw_lo = oracle["cllr"]["opt_loglr_raw_range"][0]
    assert raw_lo < cal.llr_bounds_[0] < lo + 1e-3 and abs(cal.llr_bounds_[-1] - hi) < 3e-3
    assert np.isfinite(cal.llr_bounds_).all()


# --------------------------------------------------------------------------------------------
# PAV: properties
# --------------------------------------------------------------------------------------------

scores_lists = st.lists(
    st.one_of(st.integers(-6, 6).map(float), st.floats(-8, 8, allow_nan=False)),
    min_size=1,
    max_size=40,
)
PLO = np.linspace(-9, 9, 181)


@settings(max_examples=150, deadline=None)
@given(tar=scores_lists, non=scores_lists)
def test_pure_pav_on_its_training_set_gives_act_dcf_equal_min_dcf(tar, non) -> None:
    tar, non = np.array(tar), np.array(non)
    cal = PAVCalibrator(small_val=0.0, pseudo_counts=False).fit_arrays(tar, non)
    act = act_dcf(cal.transform_arrays(tar), cal.transform_arrays(non), PLO)
    np.testing.assert_allclose(act, reference.min_dcf(tar, non, PLO), rtol=0, atol=1e-12)


@settings(max_examples=150, deadline=None)
@given(tar=scores_lists, non=scores_lists, pseudo_counts=st.booleans())
def test_flat_pav_map_equals_the_brute_force_pav(tar, non, pseudo_counts) -> None:
    """Knots against a plain pool-adjacent-violators loop in exact rationals (tests/reference)."""
    cal = PAVCalibrator(small_val=0.0, pseudo_counts=pseudo_counts).fit_arrays(
        np.array(tar), np.array(non)
    )
    blocks = reference.pav(tar, non, pseudo_counts=pseudo_counts)
    np.testing.assert_array_equal(cal.score_bounds_, [s for b in blocks for s in b[:2]])
    llr = np.repeat(reference.pav_llrs(blocks), 2)
    np.testing.assert_allclose(cal.llr_bounds_, llr, rtol=0, atol=1e-13)
    assert (np.isinf(cal.llr_bounds_) == np.isinf(llr)).all()


def test_gauss1_pav_map_equals_the_brute_force_pav(gauss) -> None:
    tar, non, _ = gauss
    for pseudo_counts in (True, False):
        cal = PAVCalibrator(small_val=0.0, pseudo_counts=pseudo_counts).fit_arrays(tar, non)
        blocks = reference.pav(tar, non, pseudo_counts=pseudo_counts)
        np.testing.assert_array_equal(cal.score_bounds_, [s for b in blocks for s in b[:2]])
        llr = np.repeat(reference.pav_llrs(blocks), 2)
        np.testing.assert_allclose(cal.llr_bounds_, llr, rtol=0, atol=1e-13)


@settings(max_examples=150, deadline=None)
@given(tar=scores_lists, non=scores_lists, small_val=st.sampled_from([0.0, 1e-6, 1e-3, 0.1]))
def test_default_pav_map_is_finite_monotone_and_near_optimal(tar, non, small_val) -> None:
    tar, non = np.array(tar), np.array(non)
    cal = PAVCalibrator(small_val=small_val).fit_arrays(tar, non)
    assert np.isfinite(cal.llr_bounds_).all()
    data = np.unique(np.r_[tar, non])
    assert np.isfinite(cal.transform_arrays(data)).all()
    assert (np.diff(cal.transform_arrays(data)) >= 0).all()
    # strictly increasing in exact arithmetic; float64 resolves it at these spacings even in
    # the outer blocks, whose ramp rises by 2 * small_val over about 1e6
    grid = np.r_[-3e6, -1.5e6, np.linspace(-12, 12, 97), 1.5e6, 3e6]
    llr = cal.transform_arrays(grid)
    assert np.isfinite(llr).all()
    if small_val > 0:
        assert (np.diff(llr) > 0).all()  # ranks unseen scores like the raw scores
    else:
        assert (np.diff(llr) >= 0).all()
    tl, nl = cal.transform_arrays(tar), cal.transform_arrays(non)
    assert (act_dcf(tl, nl, PLO) >= reference.min_dcf(tar, non, PLO) - 1e-12).all()


@settings(max_examples=100, deadline=None)
@given(tar=scores_lists, non=scores_lists)
def test_bins_coarse_inside_pav_blocks_give_the_same_map(tar, non) -> None:
    """What the engine relies on: pooling bins inside a PAV block changes nothing."""
    tar, non = np.array(tar), np.array(non)
    values, inverse = np.unique(np.r_[tar, non], return_inverse=True)
    n_tar = np.bincount(inverse[: len(tar)], minlength=len(values))
    n_non = np.bincount(inverse[len(tar) :], minlength=len(values))
    fine = PAVCalibrator(small_val=1e-3).fit_bins(values, values, n_tar, n_non)
    # pool the distinct values that fall inside each block's score span
    block = np.searchsorted(fine.score_bounds_[1::2], values, side="left")
    starts = np.flatnonzero(np.r_[True, np.diff(block) > 0])
    coarse = PAVCalibrator(small_val=1e-3).fit_bins(
        values[starts],
        values[np.r_[starts[1:], len(values)] - 1],
        np.add.reduceat(n_tar, starts),
        np.add.reduceat(n_non, starts),
    )
    np.testing.assert_array_equal(coarse.score_bounds_, fine.score_bounds_)
    np.testing.assert_allclose(coarse.llr_bounds_, fine.llr_bounds_, rtol=0, atol=1e-13)


def test_pav_hand_worked_and_unseen_scores() -> None:
    # augmented: -1e6 T | 0 N | 0.5 N | 1 T | 1.5 N | 2 T | 3 T | 1e6 N, T' = N' = 4
    cal = PAVCalibrator(small_val=0.0).fit_arrays(
        np.array([1.0, 2.0, 3.0]), np.array([0, 1.5, 0.5])
    )
    np.testing.assert_array_equal(cal.score_bounds_, [-1e6, 0.5, 1.0, 1.5, 2.0, 1e6])
    ln2 = math.log(2)
    np.testing.assert_allclose(cal.llr_bounds_, [-ln2, -ln2, 0, 0, ln2, ln2], atol=1e-15)
    # between blocks: linear interpolation; at 0.75, half-way from -ln2 to 0
    np.testing.assert_allclose(
        cal.transform_arrays(np.array([0.75, 1.75, -7e6, 7e6])),
        [-ln2 / 2, ln2 / 2, -ln2, ln2],
        atol=1e-15,
    )
    assert cal.n_blocks_ == 3 and cal.counts_ == {"n_target": 3, "n_nontarget": 3}


def test_raw_pav_has_infinite_ends_and_roundtrips(tmp_path: Path) -> None:
    cal = PAVCalibrator(small_val=0.0, pseudo_counts=False).fit_arrays(
        np.array([2.0, 3.0, 1.0]), np.array([0.0, -1.0, 1.5])
    )
    assert cal.llr_bounds_[0] == -np.inf and cal.llr_bounds_[-1] == np.inf
    probe = np.array([-5.0, -1.0, 0.0, 0.5, 1.0, 1.25, 1.5, 1.75, 2.0, 9.0])
    llr = cal.transform_arrays(probe)
    assert llr[0] == llr[1] == llr[2] == -np.inf and llr[-1] == llr[-2] == np.inf
    assert not np.isnan(llr).any() and (llr[1:] >= llr[:-1]).all()
    path = tmp_path / "pav.json"
    cal.save(path)
    assert "Infinity" in path.read_text()
    back = load_model(path)
    np.testing.assert_array_equal(back.transform_arrays(probe), llr)


def test_interpolate_map_edges() -> None:
    x = np.array([0.0, 1.0, 2.0, 2.0])  # the last block is a single score
    y = np.array([0.0, 1.0, 2.0, 4.0])
    out = interpolate_map(np.array([-1.0, 0.5, 1.5, 2.0, 5.0, 1e300]), x, y)
    # below: the first ramp's slope (1) at first, then bending, at most its half-rise (0.5)
    # further: 0 - 0.5 * (1 - 1 / (1 + 2 * 1 / 1)); above a single-score block: flat
    np.testing.assert_allclose(out, [-1 / 3, 0.5, 1.5, 4.0, 4.0, 4.0], rtol=1e-15)
    far = interpolate_map(np.array([-1e300, -1e6, -1e3, -1.0]), x, y)
    assert far[0] == -0.5 and (np.diff(far) > 0).all() and far[0] >= y[0] - 0.5


def test_pav_map_beyond_its_knots_rises_by_at_most_small_val() -> None:
    # a training set whose top block spans 1e-3 (scores 5e6 and 5e6 + 1e-3): continuing its
    # ramp's slope (2 per unit) mapped 6e6 to about 2e6 nats; the set supports about 3.4
    rng = np.random.default_rng(0)
    tar = np.r_[rng.normal(1, 1, 200), 5e6, 5e6 + 1e-3, 5e6 + 1e-3]
    non = rng.normal(0, 1, 2000)
    cal = PAVCalibrator(small_val=1e-3).fit_arrays(tar, non)
    top, bottom = cal.llr_bounds_[-1], cal.llr_bounds_[0]
    assert cal.score_bounds_[-1] == 5e6 + 1e-3 and 3 < top < 4
    llr = cal.transform_arrays(np.array([5e6 + 1e-3, 5e6 + 1, 6e6, 1e300]))
    assert llr[0] == top and (np.diff(llr) >= 0).all() and llr[-1] <= top + 1e-3
    low = cal.transform_arrays(np.array([-1e300, -1e12, -1e6]))
    assert (np.diff(low) > 0).all() and bottom - 1e-3 <= low[0] < bottom


def test_bins_validation() -> None:
    with pytest.raises(ScoreError, match="ascending"):
        pav_map([0.0, 0.5], [1.0, 2.0], [1, 1], [1, 1])
    with pytest.raises(ScoreError, match="non-negative integers"):
        pav_map([0.0], [0.0], [-1], [1])
    with pytest.raises(ScoreError, match="targets and non-targets"):
        pav_map([0.0, 1.0], [0.0, 1.0], [1, 2], [0, 0])
    with pytest.raises(ScoreError, match="finite"):
        pav_map([np.nan], [0.0], [1], [1])
    # empty bins are ignored, even out of order with their neighbours
    a = pav_map([0.0, 5.0, 1.0], [0.0, 5.0, 1.0], [1, 0, 0], [0, 0, 1])
    with pytest.raises(ScoreError):
        pav_map([0.0, 5.0, 1.0], [0.0, 5.0, 1.0], [1, 1, 0], [0, 0, 1])
    b = pav_map([0.0, 1.0], [0.0, 1.0], [1, 0], [0, 1])
    np.testing.assert_array_equal(a[0], b[0])
    with pytest.raises(ScoreError, match="non-finite"):
        pav_calibrate(np.array([np.inf]), np.array([0.0]))


# --------------------------------------------------------------------------------------------
# PAV on trial objects
# --------------------------------------------------------------------------------------------


def _pav_trials(seed=0):
    rng = np.random.default_rng(seed)
    cls = rng.choice(np.array([1, -1, 0], np.int8), p=[0.2, 0.7, 0.1], size=(17, 23))
    s = np.round((cls == 1) * 2.0 + rng.normal(size=cls.shape), 1).astype(np.float32)
    mask = rng.random(cls.shape) > 0.05
    models, segments = [f"m{i}" for i in range(17)], [f"s{j}" for j in range(23)]
    key = make_key(models, segments, cls, chunks=(5, 6))
    perm = rng.permutation(23)
    scores = make_scores(
        models,
        np.array(segments)[perm],
        np.where(mask, s, np.inf)[:, perm],
        mask[:, perm],
        chunks=(4, 7),
    )
    return key, scores, cls, s, mask


def test_pav_fit_and_transform_trial_objects() -> None:
    key, scores, cls, s, mask = _pav_trials()
    cal = PAVCalibrator().fit(scores, key, allow_missing=True)
    s64 = s.astype(np.float64)
    ref = PAVCalibrator().fit_arrays(s64[(cls == 1) & mask], s64[(cls == -1) & mask])
    np.testing.assert_array_equal(cal.score_bounds_, ref.score_bounds_)
    np.testing.assert_array_equal(cal.llr_bounds_, ref.llr_bounds_)
    assert cal.counts_ == {
        "n_target": int(((cls == 1) & mask).sum()),
        "n_nontarget": int(((cls == -1) & mask).sum()),
        "n_missing": int(((cls != 0) & ~mask).sum()),  # dropped, and said, as the fits do
    }
    out = cal.fit_transform(scores, key, allow_missing=True).compute()
    want = (cls != 0) & mask
    assert list(out.segment.values) == list(key.segment.values) and out.score.dtype == np.float64
    np.testing.assert_array_equal(out.score_mask.values, want)
    np.testing.assert_array_equal(out.score.values[want], ref.transform_arrays(s64[want]))
    lazy = cal.transform(scores)  # all scores, on the scores' own ids
    assert list(lazy.segment.values) == list(scores.segment.values)
    with pytest.raises(ScoreError):  # an inf that is a score
        cal.transform(make_scores(["a"], ["b"], [[np.inf]])).score.compute()
    bad = scores.copy()
    bad["score_mask"] = xr.ones_like(bad.score_mask)
    with pytest.raises(ScoreError, match="non-finite"):
        PAVCalibrator().fit(bad, key)


def test_load_model_rejects_unknown_kinds() -> None:
    with pytest.raises(TrialError, match="unknown model kind"):
        load_model({"kind": "svm"})
    with pytest.raises(TrialError, match="non-decreasing"):
        PAVCalibrator.from_dict({"kind": "pav", "score_bounds": [1.0, 0.0], "llr_bounds": [0, 1]})


def test_apply_model_dispatches_by_kind() -> None:
    key, scores, cls, s, mask = _pav_trials(2)
    pav = PAVCalibrator().fit(scores, key, allow_missing=True)
    lin = LinearCalibrator().fit(scores, key, allow_missing=True)
    for model in (pav, lin):
        loaded = load_model(model.to_dict())
        xr.testing.assert_equal(
            apply_model(loaded, [scores], ndx=key).compute(),
            model.transform(scores, ndx=key).compute(),
        )
    with pytest.raises(TrialError, match="one Scores"):
        apply_model(pav, [scores, scores])
    with pytest.raises(TrialError, match="no quality"):
        apply_model(lin, scores, quality=xr.Dataset())


@settings(max_examples=300, deadline=None)
@given(
    x=st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=6, unique=True),
    y=st.lists(st.floats(-50, 50), min_size=6, max_size=6),
    scale=st.sampled_from([1e-170, 1.0]),
)
def test_interpolated_map_is_monotone_right_below_each_knot(x, y, scale) -> None:
    """y0 + slope * (s - x0) can round past y1 just below a knot (seen at 1e-171 spacings)."""
    knots = np.sort(np.array(x)) * scale
    assume(len(np.unique(knots)) == len(knots))  # no knot lost to underflow
    values = np.sort(np.array(y[: len(knots)]))
    s = np.sort(np.r_[knots, np.nextafter(knots, -np.inf), np.nextafter(knots, np.inf)])
    out = interpolate_map(s, knots, values)
    assert (np.diff(out) >= 0).all()
    np.testing.assert_array_equal(interpolate_map(knots, knots, values), values)


@pytest.mark.parametrize("seed", range(6))
def test_default_fit_is_at_the_minimum_to_float_precision(seed: int) -> None:
    # the gradient test alone (gtol 1e-8 of the starting gradient) left the scale and offset
    # about 1e-7 (relative) from the minimum on skewed sets like these; the last pass's
    # gradient and Hessian give one more Newton step for free
    rng = np.random.default_rng(seed)
    tar, non = rng.normal(1.5, 1.2, 47), rng.normal(-1.0, 1.0, 29155)
    cal = LinearCalibrator(0.9).fit_arrays(tar, non)
    best = newton_reference(tar, non, 0.9)
    np.testing.assert_allclose([cal.scale_, cal.offset_], best, rtol=1e-11)
