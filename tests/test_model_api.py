"""The calibration and fusion models' API: ``fit(scores, key)`` (and the deprecated order),
scikit-learn's conventions (``get_params``/``set_params``, ``NotFittedError``), ``save``/``load``.
"""

from __future__ import annotations

import inspect

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


def test_fusion_data_takes_scores_then_key_and_swaps_the_old_order(data):
    from bosaris_dask.objectives import fusion_data

    key, systems, _ = data
    new = fusion_data(systems, key)
    with pytest.warns(FutureWarning, match=r"fusion_data\(key, scores\) is deprecated") as record:
        old = fusion_data(key, systems)
    assert len(record) == 1 and record[0].filename == __file__
    for a, b in zip(old.scores, new.scores, strict=True):
        np.testing.assert_array_equal(a.compute(), b.compute())
    np.testing.assert_array_equal(old.classes.compute(), new.classes.compute())


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


@pytest.mark.parametrize("make", [LinearCalibrator, PAVCalibrator])
def test_properties_of_fitted_attributes_say_not_fitted(make):
    """``scale_`` and ``n_blocks_`` (properties over fitted attributes) said "object has no
    attribute" before fit: Python passed their NotFittedError on to ``__getattr__``."""
    derived = [name for name, value in inspect.getmembers(make, lambda v: isinstance(v, property))
               if name.endswith("_") and not name.startswith("_")]  # fmt: skip
    assert {LinearCalibrator: {"scale_"}, PAVCalibrator: {"n_blocks_"}}[make] <= set(derived)
    for name in derived:
        with pytest.raises(NotFittedError, match=f"not fitted yet: call fit first [(]{name} is"):
            getattr(make(), name)
        assert not hasattr(make(), name)
    if make is PAVCalibrator:  # a deprecated property warns once (the review: twice)
        with pytest.warns(FutureWarning) as said, pytest.raises(NotFittedError, match="n_blocks "):
            PAVCalibrator().n_blocks  # noqa: B018
        assert len(said) == 1


@pytest.mark.parametrize("make", [LinearFuser, LinearCalibrator, PAVCalibrator, QualityFuser])
def test_fitted_attributes_exist_only_once_fitted_as_sklearn_checks(make, data, tmp_path):
    """Fitted attributes were set to None (weights_, ...) or 0/False/{} in __init__: an unfitted
    model showed ``converged_ = False`` and ``counts_ = {}`` as if they were results, and
    scikit-learn's rule (a ``vars`` name ending with ``_``) called it fitted."""
    key, systems, quality = data
    model = make()
    declared = type(model)._fitted_names()
    assert {"counts_"} <= declared and not declared & {"llr_base_", "systems_"}
    assert not [name for name in vars(model) if name.endswith("_")]
    for name in declared:
        assert not hasattr(model, name)
        with pytest.raises(NotFittedError, match=f"not fitted yet: call fit first [(]{name} "):
            getattr(model, name)
    with pytest.raises(AttributeError, match="has no attribute 'weigths_'") as typo:
        model.weigths_  # noqa: B018 (a misspelt name is no fitted attribute)
    assert not isinstance(typo.value, NotFittedError)
    args = {QualityFuser: (systems, key, quality), LinearCalibrator: (systems[0], key),
            PAVCalibrator: (systems[0], key)}.get(make, (systems, key))  # fmt: skip
    fitted = model.fit(*args)
    assert all(hasattr(fitted, name) for name in declared)  # every one set by fit ...
    fitted.save(tmp_path / "m.json")
    loaded = type(model).load(tmp_path / "m.json")
    assert all(hasattr(loaded, name) for name in declared)  # ... and by load
    assert looks_fitted(fitted) and looks_fitted(loaded) and not looks_fitted(make())
    fitted.set_params(**({"small_val": 0.0} if make is PAVCalibrator else {"train_prior": 0.2}))
    assert not looks_fitted(fitted)  # a new parameter forgets the fit


def looks_fitted(model) -> bool:
    """scikit-learn's ``check_is_fitted`` rule (it also wants ``BaseEstimator``'s tags)."""
    return any(v.endswith("_") and not v.startswith("__") for v in vars(model))


def test_get_and_set_params():
    fuser = LinearFuser(0.1, l2=0.01, max_iter=7)
    assert fuser.get_params() == {"train_prior": 0.1, "l2": 0.01, "method": "auto", "gtol": 1e-8,
                                  "max_iter": 7, "split_every": None, "persist": False}  # fmt: skip
    assert QualityFuser(0.2, l2=0.5).get_params()["l2"] == 0.5
    assert set(QualityFuser().get_params()) == {*fuser.get_params(), "qtrans"}
    assert PAVCalibrator(small_val=0).get_params() == {"small_val": 0.0, "pseudo_counts": True,
                                                       "bound": 1e6}  # fmt: skip
    assert fuser.set_params(train_prior=0.01, l2=0) is fuser
    assert (fuser.train_prior, fuser.l2, fuser.max_iter) == (0.01, 0.0, 7)
    assert repr(fuser) == "LinearFuser(train_prior=0.01, max_iter=7)"
    with pytest.raises(OptionError, match="has no parameter 'alpha'"):
        fuser.set_params(alpha=1)
    with pytest.raises(OptionError):
        fuser.set_params(train_prior=1.5)  # checked as __init__ checks it
    assert fuser.train_prior == 0.01  # unchanged by the rejected call


@pytest.mark.parametrize("make", [LinearFuser, LinearCalibrator, QualityFuser])
def test_the_training_prior_of_earlier_releases_still_works_with_a_warning(make):
    """The training prior was ``prior`` (where ``evaluate``'s ``priors`` are operating points
    and the CLI says ``--train-prior``): ``train_prior`` now, the old name for one release."""
    with pytest.warns(FutureWarning, match=f"prior= of {make.__name__} is deprecated.*"
                      "use train_prior="):  # fmt: skip
        model = make(prior=0.1)
    assert model.get_params()["train_prior"] == 0.1 and "prior" not in model.get_params()
    with pytest.warns(FutureWarning, match="use train_prior="):
        model.set_params(prior=0.2)
    with pytest.warns(FutureWarning, match=f"{make.__name__}.prior is deprecated"):
        assert model.prior == 0.2 == model.train_prior
    with pytest.raises(TypeError, match="both prior= .* and train_prior="):
        make(prior=0.1, train_prior=0.2)
    with pytest.raises(TypeError, match=f"{make.__name__}\\(\\) got both prior= .* and train_"):
        make(0.1, prior=0.2)  # the first positional argument is train_prior
    # a model pickled by an earlier release (its attribute ``prior``) unpickles renamed
    state = {**make(0.3).__dict__}
    state["prior"] = state.pop("train_prior")
    old = make.__new__(make)
    old.__setstate__(state)
    assert old.get_params()["train_prior"] == 0.3 and "prior" not in vars(old)


def test_model_files_of_earlier_releases_load(tmp_path):
    """Their training prior is ``"prior"``; files written now say ``"train_prior"``."""
    import json

    d = {"format": "bosaris_dask.model/1", "kind": "linear_fusion", "prior": 0.05,
         "weights": [1.0, 2.0], "offset": -1.0}  # fmt: skip
    (tmp_path / "old.json").write_text(json.dumps(d))
    model = load_model(tmp_path / "old.json")
    assert model.train_prior == 0.05 and model.weights_.tolist() == [1.0, 2.0]
    model.save(tmp_path / "new.json")
    saved = json.loads((tmp_path / "new.json").read_text())
    assert saved["train_prior"] == 0.05 and "prior" not in saved
    del d["prior"]
    (tmp_path / "none.json").write_text(json.dumps(d))
    with pytest.raises(bd.errors.ParseError, match="none.json: the model has no 'train_prior'"):
        load_model(tmp_path / "none.json")


def test_sklearn_clone_rebuilds_an_unfitted_copy(data):
    base = pytest.importorskip("sklearn.base")
    key, systems, _ = data
    fuser = LinearFuser(0.2, l2=0.1).fit(systems, key)
    copy = base.clone(fuser)
    assert copy.get_params() == fuser.get_params() and not hasattr(copy, "weights_")


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
    assert fitted.counts_["n_missing"] == 2  # every model counts what it dropped
    assert bd.evaluate(holes, key, allow_missing=True).n_missing.values.tolist() == [2]


def test_pav_block_count_is_a_fitted_attribute():
    tar, non = np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.5, 0.5])
    pav = PAVCalibrator(small_val=0).fit_arrays(tar, non)
    assert pav.n_blocks_ == 3  # score_bounds_ [-1e6, 0.5 | 1.0, 1.5 | 2.0, 1e6]: three blocks
    with pytest.warns(FutureWarning, match="use n_blocks_"):
        assert pav.n_blocks == 3
    assert not hasattr(PAVCalibrator(), "n_blocks_")


@pytest.mark.parametrize("model", ["linear_fusion", "linear_calibration", "pav", "quality"])
def test_a_changed_parameter_drops_the_fit(data, model, tmp_path):
    """set_params(train_prior=...) after fit kept the weights fitted at the old prior beside the new
    one, and save wrote them as a model of the new prior; a quality fuser applied its fitted W
    to quality mapped by a new qtrans (LLRs off by up to 0.9)."""
    key, systems, quality = data
    make, scores, extra, change = {
        "linear_fusion": (LinearFuser, systems, (), {"train_prior": 0.01}),
        "linear_calibration": (LinearCalibrator, systems[0], (), {"l2": 5.0}),
        "pav": (PAVCalibrator, systems[0], (), {"small_val": 0.5}),
        "quality": (QualityFuser, systems, (quality,), {"qtrans": [[2.0]]}),
    }[model]
    fitted = make().fit(scores, key, *extra)
    kept = fitted.to_dict()
    assert fitted.set_params(split_every=4) if model != "pav" else True  # how a fit runs
    assert fitted.to_dict() == kept  # ... keeps the fit
    fitted.set_params(**change)
    with pytest.raises(NotFittedError):
        fitted.transform(scores, *extra)
    with pytest.raises(NotFittedError):
        fitted.save(tmp_path / "m.json")
    assert fitted.fit(scores, key, *extra).to_dict() != kept  # fitted again, at the new value


def test_a_models_llr_base_survives_load_and_save_and_apply_follows_it(tmp_path):
    """A model trained by the CLI on base-10 LLRs lost its "llr_base" when loaded and saved in
    Python: `apply` then read base-10 scores as natural logs (-2.039 for -1.037)."""
    from bosaris_dask.calibration import apply_model
    from bosaris_dask.cli import main

    rng = np.random.default_rng(2)
    ids = [f"m{i}" for i in range(40)]
    lines = [f"{m} s{j} {'target' if i == j else 'nontarget'}" for i, m in enumerate(ids)
             for j in range(40)]  # fmt: skip
    (tmp_path / "k.txt").write_text("\n".join(lines) + "\n")
    scores = np.where(np.eye(40, dtype=bool), 1.0, -1.0) + rng.normal(0, 1, (40, 40))
    rows = [f"{m} s{j} {float(scores[i, j])!r}" for i, m in enumerate(ids) for j in range(40)]
    (tmp_path / "s.txt").write_text("\n".join(rows) + "\n")
    k, s = str(tmp_path / "k.txt"), str(tmp_path / "s.txt")
    assert main(["calibrate", "--key", k, "--scores", s, "-q", "--llr-base", "10",
                 "--model-out", str(tmp_path / "m10.json")]) == 0  # fmt: skip
    model = load_model(tmp_path / "m10.json")
    assert model.llr_base_ == "10" and load_model(model.to_dict()).llr_base_ == "10"
    model.save(tmp_path / "resaved.json")
    for name in ("m10", "resaved"):
        assert main(["apply", "-q", "--model", str(tmp_path / f"{name}.json"), "--scores", s,
                     "--out", str(tmp_path / f"{name}.zarr")]) == 0  # fmt: skip
    want = bd.read(tmp_path / "m10.zarr").score.values
    np.testing.assert_array_equal(bd.read(tmp_path / "resaved.zarr").score.values, want)
    applied = apply_model(load_model(tmp_path / "resaved.json"), bd.read(tmp_path / "s.txt"))
    np.testing.assert_allclose(applied.score.values, want, rtol=1e-12)  # base 10 in and out
    natural = apply_model(model, bd.read(tmp_path / "s.txt"), llr_base="e")
    assert not np.allclose(natural.score.values, want)
    # Class.load(path).transform follows the base too (it read base-10 scores as natural logs
    # and wrote natural-log LLRs: -2.146 where apply wrote -1.073), as does transform_arrays
    loaded = bd.LinearCalibrator.load(tmp_path / "m10.json")
    np.testing.assert_allclose(loaded.transform(bd.read(s)).score.values, want, rtol=1e-12)
    np.testing.assert_allclose(loaded.transform_arrays(scores.ravel()), want.ravel(), rtol=1e-12)
    assert main(["calibrate", "--key", k, "--scores", s, "-q", "--llr-base", "10", "--method",
                 "pav", "--model-out", str(tmp_path / "p10.json")]) == 0  # fmt: skip
    assert main(["apply", "-q", "--model", str(tmp_path / "p10.json"), "--scores", s,
                 "--out", str(tmp_path / "p10.zarr")]) == 0  # fmt: skip
    pav = bd.PAVCalibrator.load(tmp_path / "p10.json")
    want = bd.read(tmp_path / "p10.zarr").score.values
    np.testing.assert_allclose(pav.transform(bd.read(s)).score.values, want, rtol=1e-12)
    np.testing.assert_allclose(pav.transform_arrays(scores), want, rtol=1e-12)
    assert model.fit_arrays(np.r_[1.0, -0.5], np.r_[0.0, 1.0]).llr_base_ == "e"  # a Python fit


def test_ndx_must_be_a_trial_list(data, tmp_path, capsys):
    from bosaris_dask.cli import main

    key, systems, _ = data
    cal = LinearCalibrator().fit(systems[0], key)
    with pytest.raises(TrialError, match="ndx must be an Ndx or a Key .*, not scores"):
        cal.transform(systems[0], ndx=systems[1])
    with pytest.raises(TrialError, match="not scores"):
        PAVCalibrator().fit(systems[0], key).transform(systems[0], ndx=systems[1])
    cal.save(tmp_path / "cal.json")
    bd.write(systems[0], tmp_path / "s.zarr")
    s = str(tmp_path / "s.zarr")
    assert main(["apply", "--model", str(tmp_path / "cal.json"), "--scores", s, "--ndx", s,
                 "--out", str(tmp_path / "o.zarr")]) == 1  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert err == f"bosaris-dask: error: --ndx {s} holds scores, not a trial list (an Ndx or a Key)"


@pytest.mark.parametrize(
    "field, value, message",
    [("weights", 1.5, "weights must be a list of numbers"),
     ("weights", None, "weights must be a list of numbers"),
     ("weights", [[1.0], [2.0]], "weights must be a list of numbers"),
     ("weights", [1.0, float("nan")], "weights must hold finite numbers"),
     ("offset", float("inf"), "offset must hold finite numbers"),
     ("offset", True, "offset must be a number"),  # JSON's true was applied as 1
     ("weights", [True, 1.0], "weights must be a list of numbers"),
     ("offset", "1", "offset must be a number"),  # a string was read as the number it spells
     ("weights", ["1.0", 2.0], "weights must be a list of numbers"),
     ("format", "bosaris_dask.model/2", "format 'bosaris_dask.model/2' is not"),
     # two names beside the fit's weights (an edited file): which weight is whose?
     ("systems", ["a", "b", "c"], "systems names 3 systems, weights holds 2: one weight per")],
)  # fmt: skip
def test_a_malformed_model_file_is_named(data, tmp_path, field, value, message):
    """Each was a TypeError traceback at apply time, or blamed on the data ("1979 scored trials
    have a non-finite score")."""
    import json

    key, systems, _ = data
    d = LinearFuser().fit(systems, key).to_dict()
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**d, field: value}))
    with pytest.raises(bd.errors.ParseError, match=f"bad.json: {message}"):
        load_model(path)


def test_a_calibration_model_of_several_weights_is_malformed(tmp_path):
    # was "b.json is a linear calibration of 2 systems: give 2 --scores" at apply time
    import json

    d = {"format": "bosaris_dask.model/1", "kind": "linear_calibration", "prior": 0.5,
         "weights": [1.0, 2.0], "offset": 0.0}  # fmt: skip
    (tmp_path / "b.json").write_text(json.dumps(d))
    with pytest.raises(bd.errors.ParseError, match="b.json: a linear_calibration has one "
                       "weight, got 2"):  # fmt: skip
        load_model(tmp_path / "b.json")


def test_fuser_parameters_are_checked_where_given(data):
    key, systems, _ = data
    for bad in ({"method": "bogus"}, {"max_iter": 1.5}, {"max_iter": True}, {"gtol": "x"},
                {"l2": "x"}):  # fmt: skip
        with pytest.raises(OptionError, match=next(iter(bad))):
            LinearFuser(**bad)
    with pytest.raises(TrialError, match="no system to fuse"):
        LinearFuser().fit_arrays(np.ones((3, 0)), np.zeros((3, 0)))
    fitted = LinearFuser(max_iter=7).fit(systems, key)
    assert load_model(fitted.to_dict()).max_iter == 7  # saved with the model


def test_a_quality_fusion_without_quality_says_so(data):
    key, systems, _ = data
    none = make_quality(bd.trials.quality_table(MODELS, np.full((6, 1), np.nan)),
                        bd.trials.quality_table(SEGMENTS, np.ones((8, 1))))  # fmt: skip
    with pytest.warns(bd.fusion.fit_checks.FitWarning, match="no training trial has quality"):
        fuser = QualityFuser().fit(systems, key, none)
    assert fuser.fit_warnings_ and not fuser.quality_matrix_.any()


def test_the_cli_prints_the_packages_warnings_in_one_line(capsys):
    """A QualityBackoffWarning from `fuse --apply` or `apply` was printed as Python prints a
    warning: a source path and line, then the source line."""
    import warnings

    from bosaris_dask.cli import _one_line_warnings
    from bosaris_dask.fusion import QualityBackoffWarning

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with _one_line_warnings():
            warnings.warn("4 trials have no quality: ...", QualityBackoffWarning, stacklevel=1)
    assert capsys.readouterr().err == "warning: 4 trials have no quality: ...\n"


def test_a_malformed_quality_model_is_named(data, tmp_path):
    import json

    key, systems, quality = data
    d = QualityFuser().fit(systems, key, quality).to_dict()
    cases = [("linear", "abc", "linear must be a linear fusion model"),
             ("qtrans", "abc", "qtrans must be a list of lists"),
             ("qtrans", [[1.0], [1.0, 2.0]], "qtrans must be a list")]  # fmt: skip
    for field, value, message in cases:
        path = tmp_path / "q.json"
        path.write_text(json.dumps({**d, field: value}))
        with pytest.raises(bd.errors.ParseError, match=f"q.json: {message}"):
            load_model(path)


def test_a_fusion_refuses_its_systems_in_another_order(tmp_path, capsys):
    """A fusion applied to its systems in another order multiplied each system's scores by
    another's weight, silently; the model now records the names it was trained on."""
    from bosaris_dask.cli import main

    rng = np.random.default_rng(4)
    classes = np.where(np.eye(30, dtype=bool), 1, -1)
    key = make_key([f"m{i}" for i in range(30)], [f"s{j}" for j in range(30)], classes)
    bd.write(key, tmp_path / "key.zarr")
    for name, w in (("a", 1.0), ("b", 0.3)):
        values = classes * w + rng.normal(0, 1, classes.shape)
        bd.write(
            make_scores(key.model.values, key.segment.values, values), tmp_path / f"{name}.zarr"
        )
    a, b, model = (str(tmp_path / n) for n in ("a.zarr", "b.zarr", "fusion.json"))
    k = str(tmp_path / "key.zarr")
    assert main(["fuse", "--key", k, "--scores", a, "--scores", b, "--model-out", model, "-q"]) == 0
    fitted = load_model(model)
    assert fitted.kind == "linear_fusion" and fitted.systems_ == ["a", "b"]
    fitted.save(tmp_path / "resaved.json")  # the names survive a Python round trip
    assert load_model(tmp_path / "resaved.json").systems_ == ["a", "b"]
    out = str(tmp_path / "o.zarr")
    for argv in (["apply", "--model", model, "--scores", b, "--scores", a, "--out", out],
                 ["fuse", "--key", k, "--scores", a, "--scores", b, "--model-out", model,
                  "--apply", b, "--apply", a, "--out", out]):  # fmt: skip
        assert main(argv) == 1
        assert "the fusion's systems are a, b in that order, not b, a" in capsys.readouterr().err
    assert main(["apply", "--model", model, "--scores", a, "--scores", b, "--out", out, "-q"]) == 0
    # eval files named as the dev ones but for a part all share (devA/evalA): checked too; it
    # was not, and a swapped pair fused with EER 12% where the right order gave 4% (audit)
    import shutil

    for name in ("a", "b"):
        shutil.copytree(tmp_path / f"{name}.zarr", tmp_path / f"eval_{name}.zarr")
    ea, eb = (str(tmp_path / f"eval_{n}.zarr") for n in ("a", "b"))
    swapped = ["apply", "--model", model, "--scores", eb, "--scores", ea, "--out", out]
    assert main(swapped) == 1
    assert "systems are a, b in that order, not eval_b, eval_a" in capsys.readouterr().err
    assert main(["apply", "--model", model, "--scores", ea, "--scores", eb, "--out", out]) == 0
    assert "cannot be checked" not in capsys.readouterr().err
    # names that cannot tell: the pairing is said
    for name, other in (("a", "x1"), ("b", "y2")):
        shutil.copytree(tmp_path / f"{name}.zarr", tmp_path / f"{other}.zarr")
    x1, y2 = (str(tmp_path / f"{n}.zarr") for n in ("x1", "y2"))
    assert main(["apply", "--model", model, "--scores", x1, "--scores", y2, "--out", out]) == 0
    assert (
        "the systems are taken in the order given (x1 as a, y2 as b); their names differ "
        "from the training ones, so the order cannot be checked"
    ) in capsys.readouterr().err


def test_fits_take_names_as_evaluate_does(data):
    """``fit(..., names=)`` names a system's bad trials in errors and its weight in fit notes,
    as ``evaluate(names=)`` does; a fusion of several systems keeps the names (``systems_``)."""
    key, systems, quality = data
    fused = LinearFuser().fit(systems, key, names=["dev1", "dev2"])
    assert fused.systems_ == ["dev1", "dev2"] and fused.to_dict()["systems"] == ["dev1", "dev2"]
    assert LinearFuser().fit(systems, key).systems_ is None  # a new fit forgets them
    assert QualityFuser().fit(systems, key, quality, names=["a", "b"]).systems_ == ["a", "b"]
    assert LinearCalibrator().fit(systems[0], key, names=["dev1"]).systems_ is None
    values = systems[1].score.values.copy()
    values[0, 0], values[2, 1] = np.nan, np.inf
    holed = make_scores(MODELS, SEGMENTS, values)
    expected = r"^dev2: 2 trials have a non-finite score, e\.g\. \(m0, s0\)"
    for fit in (lambda: LinearFuser().fit([systems[0], holed], key, names=["dev1", "dev2"]),
                lambda: QualityFuser().fit([systems[0], holed], key, quality,
                                           names=["dev1", "dev2"]),
                lambda: LinearCalibrator().fit(holed, key, names=["dev2"]),
                lambda: PAVCalibrator().fit(holed, key, names=["dev2"])):  # fmt: skip
        with pytest.raises(bd.errors.ScoreError, match=expected):
            fit()
    unscored = make_scores(MODELS, SEGMENTS, systems[1].score.values,
                           score_mask=np.arange(48).reshape(6, 8) != 9)  # fmt: skip
    with pytest.raises(bd.errors.MissingTrialsError, match=r"^dev2: 1 key trial has no score"):
        LinearFuser().fit([systems[0], unscored], key, names=["dev1", "dev2"])
    for names, message in ((["a"], "1 names for 2 systems"),
                           ("ab", r"not the string 'ab' \(give \['ab'\]\)"),
                           (["a", "a"], "system name 'a' is given twice")):  # fmt: skip
        with pytest.raises(OptionError, match=message):
            LinearFuser().fit(systems, key, names=names)
    constant = make_scores(MODELS, SEGMENTS, np.full((6, 8), 1000.0))
    with pytest.warns(bd.fusion.fit_checks.FitWarning, match="the weight of dev2 and the offset"):
        LinearFuser().fit([systems[0], constant], key, names=["dev1", "dev2"])


def test_transform_names_a_trial_whose_score_is_not_finite(data):
    """Python's transform said '1 scored trials have a non-finite score' (the CLI named the
    file and trial, Python users nothing); the lazy chunk's error names one by its ids."""
    key, systems, quality = data
    values = systems[1].score.values.copy()
    values[4, 6] = np.inf
    holed = make_scores(MODELS, SEGMENTS, values, chunks=(3, 4))
    fitted = [(LinearFuser().fit(systems, key), [systems[0], holed], {}),
              (QualityFuser().fit(systems, key, quality), [systems[0], holed],
               {"quality": quality}),
              (LinearCalibrator().fit(systems[1], key), holed, {}),
              (PAVCalibrator().fit(systems[1], key), holed, {})]  # fmt: skip
    for model, scores, extra in fitted:
        with pytest.raises(
            bd.errors.ScoreError,
            match=r"^1 scored trials of a chunk have a "
            r"non-finite score.*, e\.g\. \(m4, s6\)$",
        ):
            model.transform(scores, **extra).score.compute()


def test_a_fit_without_one_class_raises_its_own_error_class():
    # the CLI told this error from the others by its text
    from bosaris_dask.errors import NoClassError, ScoreError

    key = make_key(["a"], ["u", "v"], np.array([[-1, -1]]))
    scores = make_scores(["a"], ["u", "v"], np.array([[0.5, -1.0]]))
    with pytest.raises(NoClassError, match="found 0 targets and 2 non-targets") as caught:
        LinearFuser().fit([scores], key)
    assert isinstance(caught.value, ScoreError)  # what it was: kept for callers catching that


def test_a_fusion_applied_in_python_checks_the_names_it_is_given(data):
    """``transform(..., names=)`` (and ``apply_model``) refuse the fitted systems' names in
    another order, as the command line does: before, only the command line could tell."""
    from bosaris_dask.calibration import apply_model

    key, systems, quality = data
    fused = LinearFuser().fit(systems, key, names=["a", "b"])
    qfused = QualityFuser().fit(systems, key, quality, names=["a", "b"])
    swapped = "LinearFuser.transform: the fusion's systems are a, b in that order, not b, a"
    with pytest.raises(OptionError, match=swapped):
        fused.transform(systems[::-1], names=["b", "a"])
    with pytest.raises(OptionError, match=swapped):
        apply_model(fused, systems[::-1], names=["b", "a"])
    with pytest.raises(OptionError, match="QualityFuser.transform: the fusion's systems are a, b"):
        qfused.transform(systems[::-1], quality, names=["b", "a"])
    want = fused.transform(systems).score.values
    for names in (["a", "b"], ["eval-a", "eval-b"], None):  # the same, another set's, unnamed
        np.testing.assert_array_equal(fused.transform(systems, names=names).score.values, want)
        np.testing.assert_array_equal(apply_model(fused, systems, names=names).score.values, want)
    unnamed = LinearFuser().fit(systems, key)  # fitted without names: nothing to check
    assert (
        unnamed.transform(systems[::-1], names=["b", "a"]).sizes == fused.transform(systems).sizes
    )
