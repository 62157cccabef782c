"""The calibration and fusion models' API: ``fit(scores, key)`` (and the deprecated order),
scikit-learn's conventions (``get_params``/``set_params``, ``NotFittedError``), ``save``/``load``.
"""

from __future__ import annotations

import numpy as np
import pytest

import bosaris_dask as bd
from bosaris_dask.calibration import LinearCalibrator, PAVCalibrator, load_model
from bosaris_dask.errors import NotFittedError, OptionError, TrialError
from bosaris_dask.fusion import LinearFuser, QualityFuser
from bosaris_dask.trials import make_key, make_quality, make_scores

MODELS = [f"m{i}" for i in range(6)]
SEGMENTS = [f"s{j}" for j in range(8)]


@pytest.fixture(scope="module")
def data():
    """A key (targets on a diagonal band) and two overlapping systems, 6 x 8 trials."""
    rng = np.random.default_rng(3)
    classes = np.where(np.add.outer(np.arange(6), -np.arange(8)) % 3 == 0, 1, -1)
    key = make_key(MODELS, SEGMENTS, classes)
    systems = [make_scores(MODELS, SEGMENTS, classes * w + rng.normal(0, 1.5, classes.shape))
               for w in (1.0, 0.7)]  # fmt: skip
    quality = make_quality(
        bd.trials.quality_table(MODELS, rng.normal(size=(6, 1))),
        bd.trials.quality_table(SEGMENTS, rng.normal(size=(8, 1))),
    )
    return key, systems, quality


def _split(key, systems):
    """Target and non-target scores as numpy arrays ``(n, K)``, from the key's mask."""
    mask = key.trial_mask.values
    stacked = np.stack([s.score.values for s in systems], axis=-1)
    return stacked[mask == 1], stacked[mask == -1]


def test_fit_takes_scores_then_key(data):
    key, systems, _ = data
    fuser = LinearFuser(0.3, gtol=1e-12).fit(systems, key)
    expected = LinearFuser(0.3, gtol=1e-12).fit_arrays(*_split(key, systems))
    np.testing.assert_allclose(fuser.weights_, expected.weights_, rtol=1e-8)
    cal = LinearCalibrator(0.3, gtol=1e-12).fit(systems[0], key)
    tar, non = _split(key, systems[:1])
    expected = LinearCalibrator(0.3, gtol=1e-12).fit_arrays(tar[:, 0], non[:, 0])
    np.testing.assert_allclose(cal.scale_, expected.scale_, rtol=1e-8)
    pav = PAVCalibrator().fit(systems[0], key)
    np.testing.assert_array_equal(
        pav.score_bounds_, PAVCalibrator().fit_arrays(tar[:, 0], non[:, 0]).score_bounds_
    )


@pytest.mark.parametrize("method", ["fit", "fit_transform"])
@pytest.mark.parametrize("model", ["linear_fusion", "linear_calibration", "pav"])
def test_the_old_order_is_swapped_with_a_future_warning(data, model, method):
    key, systems, _ = data
    make, scores = {
        "linear_fusion": (lambda: LinearFuser(0.3), systems),
        "linear_calibration": (lambda: LinearCalibrator(0.3), systems[0]),
        "pav": (lambda: PAVCalibrator(), systems[0]),
    }[model]
    new = getattr(make(), method)(scores, key)
    with pytest.warns(FutureWarning, match=rf"{method}\(key, scores\) is deprecated") as record:
        old = getattr(make(), method)(key, scores)
    assert len(record) == 1 and record[0].filename == __file__  # points at the caller
    if method == "fit":
        assert old.to_dict() == new.to_dict()
    else:
        np.testing.assert_array_equal(old.score.values, new.score.values)


def test_quality_fuser_takes_scores_key_quality(data):
    key, systems, quality = data
    new = QualityFuser(0.5).fit(systems, key, quality)
    with pytest.warns(FutureWarning, match=r"QualityFuser.fit\(key, scores\)"):
        old = QualityFuser(0.5).fit(key, systems, quality)
    assert old.to_dict() == new.to_dict()
    assert new.quality_matrix_.shape == (2, 2)


@pytest.mark.parametrize("model", [LinearFuser(), LinearCalibrator(), PAVCalibrator(),
                                   QualityFuser()])  # fmt: skip
def test_not_fitted_is_sklearn_like(model, data):
    _, systems, quality = data
    with pytest.raises(NotFittedError, match="not fitted yet"):
        model.to_dict()
    with pytest.raises(NotFittedError):
        model.transform(systems[0]) if not isinstance(model, QualityFuser) else model.transform(
            systems, quality)  # fmt: skip
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)
    assert issubclass(NotFittedError, TrialError) and bd.NotFittedError is NotFittedError
    if isinstance(model, LinearCalibrator):
        assert not hasattr(model, "scale_")  # an AttributeError until fitted


def test_get_and_set_params():
    fuser = LinearFuser(0.1, l2=0.01, max_iter=7)
    assert fuser.get_params() == {"prior": 0.1, "l2": 0.01, "method": "auto", "gtol": 1e-8,
                                  "max_iter": 7, "split_every": None, "persist": False}  # fmt: skip
    assert QualityFuser(0.2, l2=0.5).get_params()["l2"] == 0.5
    assert set(QualityFuser().get_params()) == {*fuser.get_params(), "qtrans"}
    assert PAVCalibrator(small_val=0).get_params() == {"small_val": 0.0, "pseudo_counts": True,
                                                       "bound": 1e6}  # fmt: skip
    assert fuser.set_params(prior=0.01, l2=0) is fuser
    assert (fuser.prior, fuser.l2, fuser.max_iter) == (0.01, 0.0, 7)
    assert repr(fuser) == "LinearFuser(prior=0.01, max_iter=7)"
    with pytest.raises(OptionError, match="has no parameter 'alpha'"):
        fuser.set_params(alpha=1)
    with pytest.raises(OptionError):
        fuser.set_params(prior=1.5)  # checked as __init__ checks it
    assert fuser.prior == 0.01  # unchanged by the rejected call


def test_sklearn_clone_rebuilds_an_unfitted_copy(data):
    base = pytest.importorskip("sklearn.base")
    key, systems, _ = data
    fuser = LinearFuser(0.2, l2=0.1).fit(systems, key)
    copy = base.clone(fuser)
    assert copy.get_params() == fuser.get_params() and copy.weights_ is None


def test_save_and_load_round_trip(data, tmp_path):
    key, systems, quality = data
    for model in (LinearFuser(0.2).fit(systems, key), LinearCalibrator().fit(systems[0], key),
                  PAVCalibrator().fit(systems[0], key),
                  QualityFuser().fit(systems, key, quality)):  # fmt: skip
        path = tmp_path / f"{model.kind}.json"
        model.save(path)
        back = type(model).load(path)
        assert type(back) is type(model) and back.to_dict() == model.to_dict()
        assert load_model(path).to_dict() == model.to_dict()
        assert type(model).load_json is not None  # the name of earlier releases still works


@pytest.mark.parametrize("model", ["linear_fusion", "linear_calibration", "pav", "quality"])
def test_missing_trials_policy_is_that_of_evaluate(data, model):
    """A key trial without a score is an error unless allow_missing (then dropped, counted)."""
    key, systems, quality = data
    mask = np.ones((6, 8), dtype=bool)
    mask[0, :2] = False  # two key trials without a score
    holes = make_scores(MODELS, SEGMENTS, systems[0].score.values, mask)
    make, scores, extra = {
        "linear_fusion": (LinearFuser, [holes, systems[1]], ()),
        "linear_calibration": (LinearCalibrator, holes, ()),
        "pav": (PAVCalibrator, holes, ()),
        "quality": (QualityFuser, [holes, systems[1]], (quality,)),
    }[model]
    with pytest.raises(bd.errors.MissingTrialsError, match="2 key trials have no score"):
        make().fit(scores, key, *extra)
    with pytest.raises(bd.errors.MissingTrialsError):
        bd.evaluate(holes, key)  # the same policy
    fitted = make().fit(scores, key, *extra, allow_missing=True)
    if model != "pav":  # the engine's PAV bins do not count them
        assert fitted.counts_["n_missing"] == 2
    assert bd.evaluate(holes, key, allow_missing=True).n_missing.values.tolist() == [2]


def test_pav_block_count_is_a_fitted_attribute():
    tar, non = np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.5, 0.5])
    pav = PAVCalibrator(small_val=0).fit_arrays(tar, non)
    assert pav.n_blocks_ == 3  # score_bounds_ [-1e6, 0.5 | 1.0, 1.5 | 2.0, 1e6]: three blocks
    with pytest.warns(FutureWarning, match="use n_blocks_"):
        assert pav.n_blocks == 3
    assert not hasattr(PAVCalibrator(), "n_blocks_")
