"""The references for equalized metrics and the two-way bootstrap, checked on hand-worked
cases and against tests/reference.py (which computes the hull another way, by PAV)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy.special import logit

from tests import reference as ref
from tests import reference_conditions as rc


def test_equalized_weights_hand_worked():
    # partition A: 2 targets, 4 non-targets; B: 1 target, 8 non-targets
    classes = [1, 1] + [-1] * 4 + [1] + [-1] * 8
    parts = ["A"] * 6 + ["B"] * 9
    w = rc.equalized_weights(classes, parts)
    assert w[:2] == [1, 1] and w[6] == 2  # targets: max 2 -> A 2/2, B 2/1
    assert w[2:6] == [2] * 4 and w[7:] == [1] * 8  # non-targets: max 8 -> A 8/4, B 8/8
    # weighted class totals are equal across partitions
    assert sum(w[:2]) == w[6] and sum(w[2:6]) == sum(w[7:])


def test_weighted_curve_hand_worked():
    # targets 2 (weight 1) and 0 (weight 3); non-target 1 (weight 1)
    # ROC (Pfa, Pmiss): (1, 0), (1, 3/4), (0, 3/4), (0, 1); hull (0, 3/4)-(1, 0) meets the
    # diagonal at 3/4 (1 - x) = x: x = 3/7
    scores, classes = [2.0, 0.0, 1.0], [1, 1, -1]
    pmiss, pfa = rc.weighted_roc(scores, classes, [1, 3, 1])
    assert pmiss == [0, Fraction(3, 4), Fraction(3, 4), 1] and pfa == [1, 1, 0, 0]
    assert rc.weighted_eer(scores, classes, [1, 3, 1]) == 3 / 7
    assert rc.weighted_eer(scores, classes, [1, 1, 1]) == 1 / 3 == ref.eer([2.0, 0.0], [1.0])
    # minDCF at P = 0.5: the point (0, 3/4) costs 3/8, normalized 3/4
    assert rc.weighted_min_dcf(scores, classes, [1, 3, 1], 0.5) == 0.75
    # actDCF at P = 0.5 (threshold 0): accepts all: Pmiss 0, Pfa 1 -> normalized 1
    assert rc.weighted_act_dcf(scores, classes, [1, 3, 1], 0.5) == 1.0
    # at P = 0.1 (threshold 2.197): rejects all: Pmiss 1, Pfa 0 -> 0.1 / 0.1
    assert rc.weighted_act_dcf(scores, classes, [1, 3, 1], 0.1) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(8))
def test_unit_and_integer_weights_agree_with_the_unweighted_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 25))
    scores = np.round(rng.normal(size=n) * 2, 0) / 2  # ties
    classes = rng.choice([1, -1], size=n)
    classes[:2] = [1, -1]
    tar, non = scores[classes == 1], scores[classes == -1]
    ones = [1] * n
    assert rc.weighted_eer(scores, classes, ones) == pytest.approx(ref.eer(tar, non), abs=1e-15)
    for p in (0.5, 0.1, 0.9):
        raw = float(ref.min_dcf(tar, non, logit(p)))
        assert rc.weighted_min_dcf(scores, classes, ones, p) == pytest.approx(
            raw / min(p, 1 - p), abs=1e-12
        )
        act = ref.dcf_at(tar, non, logit(p))[0] / min(p, 1 - p)
        assert rc.weighted_act_dcf(scores, classes, ones, p) == pytest.approx(act, abs=1e-12)
    # integer weights are repeated trials
    w = rng.integers(1, 4, size=n)
    rt, rn = np.repeat(tar, w[classes == 1]), np.repeat(non, w[classes == -1])
    assert rc.weighted_eer(scores, classes, w) == pytest.approx(ref.eer(rt, rn), abs=1e-15)
    assert rc.weighted_min_dcf(scores, classes, w, 0.2) == pytest.approx(
        float(ref.min_dcf(rt, rn, logit(0.2))) / 0.2, abs=1e-12
    )


def test_equalized_metrics_of_balanced_partitions_are_the_plain_ones():
    # two partitions with the same class counts: every weight is 1
    scores = [0.5, 1.5, -1.0, 0.0, 2.0, 0.2, -0.3, 0.4]
    classes = [1, 1, -1, -1, 1, 1, -1, -1]
    parts = ["a"] * 4 + ["b"] * 4
    out = rc.equalized_metrics(scores, classes, parts, [0.5])
    tar = [s for s, c in zip(scores, classes, strict=True) if c == 1]
    non = [s for s, c in zip(scores, classes, strict=True) if c == -1]
    assert out["eer"] == pytest.approx(ref.eer(tar, non))
    assert out["operating_points"][0]["min_dcf"] == pytest.approx(
        float(ref.min_dcf(tar, non, 0.0)) / 0.5
    )


def test_two_way_multiplicity_hand_worked():
    # models m1, m2 in group x, m3 in y; segments s1 in u, s2 in v
    # draw: x twice (y never); u once, v once -> m1/m2 rows 2, m3 row 0
    mult = rc.two_way_multiplicity(["x", "x", "y"], ["u", "v"], ["x", "x"], ["v", "u"])
    assert mult.tolist() == [[2, 2], [2, 2], [0, 0]]
    mult = rc.two_way_multiplicity(["x", "x", "y"], ["u", "v"], ["y", "x"], ["v", "v"])
    assert mult.tolist() == [[0, 2], [0, 2], [0, 2]]
    scores = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    key = np.array([[1, -1], [-1, 1], [1, 0]])
    tar, non = rc.resample(scores, key, mult)
    assert tar.tolist() == [4.0, 4.0] and non.tolist() == [2.0, 2.0]


def test_draws_have_mean_multiplicity_one_and_are_reproducible():
    groups = [f"g{i}" for i in range(5)]
    for poisson in (False, True):
        rng = np.random.default_rng(0)
        totals = np.zeros(5)
        for _ in range(4000):
            m = rc.group_multiplicities(groups, rc.draw_groups(groups, rng, poisson=poisson))
            totals += [m[g] for g in groups]
            if not poisson:
                assert sum(m.values()) == 5
        assert np.allclose(totals / 4000, 1.0, atol=0.08)
    a = rc.draw_groups(groups, np.random.default_rng(3))
    assert a == rc.draw_groups(groups, np.random.default_rng(3))


def test_bootstrap_eer_resamples_are_repeated_trials():
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(6, 5)) + 0.0
    key = rng.choice([1, -1], size=(6, 5))
    key[0, 0], key[0, 1] = 1, -1
    scores += key  # targets higher
    mg, sg = ["a", "a", "b", "b", "c", "c"], ["u", "u", "v", "w", "w"]
    values = rc.bootstrap(ref.eer, scores, key, mg, sg, resamples=30, seed=7)
    again = rc.bootstrap(ref.eer, scores, key, mg, sg, resamples=30, seed=7)
    np.testing.assert_array_equal(values, again)
    draw = np.random.default_rng(7)  # the first resample, redone by hand
    mult = rc.two_way_multiplicity(mg, sg, rc.draw_groups(mg, draw), rc.draw_groups(sg, draw))
    tar = [s for s, k, m in zip(scores.ravel(), key.ravel(), mult.ravel(), strict=True)
           for _ in range(m) if k == 1]  # fmt: skip
    non = [s for s, k, m in zip(scores.ravel(), key.ravel(), mult.ravel(), strict=True)
           for _ in range(m) if k == -1]  # fmt: skip
    if tar and non:
        assert values[0] == ref.eer(np.array(tar), np.array(non))
    else:
        assert np.isnan(values[0])
    lo, hi = rc.percentile_interval(values, 0.9)
    finite = values[np.isfinite(values)]
    assert finite.min() <= lo <= hi <= finite.max()
