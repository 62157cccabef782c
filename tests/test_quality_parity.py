"""Quality fusion as the toolkit does it (issue 17 item 4): back-off to the first-stage linear
fusion, trials without quality left out of quality training, the first stage saved with the
model, and a ``Qtrans`` map of the quality vectors. Expected values are worked by hand."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from bosaris_dask.errors import TrialError
from bosaris_dask.fusion import LinearFuser, QualityBackoffWarning, QualityFuser, transform_quality
from bosaris_dask.trials import make_key, make_quality, make_scores, quality_table

# 2 models x 3 segments, 2 systems; m2 and s3 have no quality (m2: a NaN row, s3: absent)
SYS = [
    make_scores(["m1", "m2"], ["s1", "s2", "s3"], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
    make_scores(["m2", "m1"], ["s3", "s2", "s1"], [[1.0, 0.0, -1.0], [2.0, 1.0, 0.5]]),
]
QUALITY = make_quality(
    quality_table(["m1", "m2"], [[0.5], [np.nan]]), quality_table(["s1", "s2"], [[2.0], [-1.0]])
)


def _hand_model() -> QualityFuser:
    qf = QualityFuser(0.5)
    qf.linear_ = LinearFuser(0.5)
    qf.linear_.weights_, qf.linear_.offset_ = np.array([1.0, -1.0]), 0.25
    qf.weights_, qf.offset_ = np.array([2.0, 0.5]), -1.0
    qf.quality_matrix_ = np.array([[3.0, 1.0], [1.0, 0.0]])
    return qf


def test_back_off_to_the_first_stage_by_hand():
    with pytest.warns(QualityBackoffWarning, match="^4 trials have no quality"):
        out = _hand_model().transform(SYS, QUALITY).compute()
    # second system on (m, s) order: m1: [0.5, 1.0, 2.0]; m2: [-1.0, 0.0, 1.0]
    # with quality (m1,s1), (m1,s2): -1 + 2*s1 + 0.5*s2 + [qm,1] W [qs,1]
    #   [qm,1] W [qs,1] = 3*qm*qs + qm + qs;  (0.5, 2): 3 + 0.5 + 2 = 5.5; (0.5, -1): -1.5 + 0.5 - 1
    # without: 0.25 + s1 - s2
    expected = [
        [-1 + 2 + 0.25 + 5.5, -1 + 4 + 0.5 - 2.0, 0.25 + 3 - 2.0],
        [0.25 + 4 + 1.0, 0.25 + 5 - 0.0, 0.25 + 6 - 1.0],
    ]
    np.testing.assert_allclose(out.score.values, expected, rtol=1e-15)


def test_no_warning_when_every_trial_has_quality():
    q = make_quality(quality_table(["m1"], [[0.5]]), quality_table(["s1"], [[2.0]]))
    one = [make_scores(["m1"], ["s1"], [[1.0]]), make_scores(["m1"], ["s1"], [[0.5]])]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _hand_model().transform(one, q).compute()
    assert out.score.values.tolist() == [[-1 + 2 + 0.25 + 5.5]]


def test_a_model_without_its_first_stage_cannot_back_off():
    d = _hand_model().to_dict()
    del d["linear"]
    old = QualityFuser.from_dict(d)
    with pytest.raises(TrialError, match="4 trials have no quality .* no first-stage"):
        old.transform(SYS, QUALITY)


def _set(seed: int, n_models: int = 40, n_segments: int = 50):
    rng = np.random.default_rng(seed)
    models = [f"m{i}" for i in range(n_models)]
    segments = [f"s{j}" for j in range(n_segments)]
    cls = np.where(rng.random((n_models, n_segments)) < 0.2, 1, -1)
    qm = rng.normal(size=(n_models, 2))
    qs = rng.normal(size=(n_segments, 2))
    qm[:6] = np.nan  # six models without quality
    gain = 1 + 0.5 * np.tanh(np.nan_to_num(qm[:, :1]) + qs[:, 0][None, :])
    s = cls * 1.2 * gain + rng.normal(size=cls.shape)
    key = make_key(models, segments, cls, chunks=(16, 20))
    scores = make_scores(models, segments, s, chunks=(16, 20))
    quality = make_quality(quality_table(models, qm), quality_table(segments, qs))
    return key, scores, quality, cls, s, qm, qs


def test_trials_without_quality_are_left_out_of_quality_training():
    key, scores, quality, cls, s, qm, qs = _set(1)
    qf = QualityFuser(0.5, gtol=1e-10).fit([scores], key, quality)
    # the quality stage on the 34 models with quality only equals a fit on that subset alone
    sub_key = make_key([f"m{i}" for i in range(6, 40)], key.segment.values, cls[6:])
    sub_scores = make_scores(sub_key.model.values, key.segment.values, s[6:])
    sub = QualityFuser(0.5, gtol=1e-10).fit([sub_scores], sub_key, quality, linear=qf.linear_)
    np.testing.assert_allclose(qf.quality_matrix_, sub.quality_matrix_, atol=1e-8)
    np.testing.assert_allclose(qf.weights_, sub.weights_, atol=1e-8)
    assert qf.counts_["n_no_quality"] == 6 * 50
    assert qf.counts_["n_target"] + qf.counts_["n_nontarget"] == 34 * 50
    # the first stage saw every trial
    lin = LinearFuser(0.5, gtol=1e-10).fit([scores], key)
    np.testing.assert_allclose(qf.linear_.weights_, lin.weights_, atol=1e-8)


def test_first_stage_survives_the_json(tmp_path):
    key, scores, quality, *_ = _set(2)
    qf = QualityFuser(0.5).fit([scores], key, quality)
    path = tmp_path / "q.json"
    qf.save(path)
    doc = json.loads(path.read_text())
    assert doc["linear"]["kind"] == "linear_fusion"
    assert doc["linear"]["weights"] == qf.linear_.weights_.tolist()
    back = QualityFuser.load(path)
    assert back.linear_.offset_ == qf.linear_.offset_
    assert back.counts_["n_no_quality"] == 6 * 50
    with pytest.warns(QualityBackoffWarning, match="^300 trials"):
        out = back.transform([scores], quality).compute()
    sv = scores.score.values
    np.testing.assert_allclose(
        out.score.values[:6], back.linear_.offset_ + back.linear_.weights_[0] * sv[:6], rtol=1e-14
    )


def test_qtrans_maps_both_sides_before_fusion(tmp_path):
    key, scores, quality, *_ = _set(3)
    qtrans = np.array([[1.0, -2.0]])  # two measures -> one: q1 - 2 q2
    qf = QualityFuser(0.5, qtrans=qtrans, gtol=1e-10).fit([scores], key, quality)
    mapped = make_quality(
        quality_table(quality.model.values, quality.model_quality.values @ qtrans.T),
        quality_table(quality.segment.values, quality.segment_quality.values @ qtrans.T),
    )
    ref = QualityFuser(0.5, gtol=1e-10).fit([scores], key, mapped)
    assert qf.quality_matrix_.shape == (2, 2)
    np.testing.assert_allclose(qf.quality_matrix_, ref.quality_matrix_, atol=1e-8)
    qf.save(tmp_path / "q.json")
    back = QualityFuser.load(tmp_path / "q.json")
    np.testing.assert_array_equal(back.qtrans, qtrans)
    with pytest.warns(QualityBackoffWarning):
        a = back.transform([scores], quality).compute()
    with pytest.warns(QualityBackoffWarning):
        b = ref.transform([scores], mapped).compute()
    np.testing.assert_allclose(a.score.values, b.score.values, rtol=1e-7, atol=1e-9)


def test_transform_quality_keeps_missing_rows_and_checks_shapes():
    q = transform_quality(QUALITY, np.array([[2.0], [1.0]]))
    assert q.model_quality.values.tolist()[0] == [1.0, 0.5]
    assert np.isnan(q.model_quality.values[1]).all()
    with pytest.raises(TrialError, match="Qtrans has 2 columns"):
        transform_quality(QUALITY, np.ones((1, 2)))
