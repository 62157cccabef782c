"""A trained calibration or fusion says when its data separate the classes or leave parameters
undetermined (``fit_warnings_``, a FitWarning, the JSON's "warnings", a CLI warning line),
and says nothing for a well-posed fit."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.calibration import LinearCalibrator
from bosaris_dask.cli import main
from bosaris_dask.fusion import LinearFuser, QualityFuser
from bosaris_dask.fusion.fit_checks import FitWarning
from bosaris_dask.trials import make_key, make_quality, make_scores, quality_table
from tests.trial_text import write_trial_files


def _fit(model, tar, non):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit_arrays(tar, non)
    return model, [str(w.message) for w in caught if issubclass(w.category, FitWarning)]


def _overlapping(rng, n_tar=60, n_non=300, k=2):
    return rng.normal(1.0, 1.0, (n_tar, k)), rng.normal(-1.0, 1.0, (n_non, k))


def test_a_well_posed_fit_says_nothing():
    tar, non = _overlapping(np.random.default_rng(0))
    model, caught = _fit(LinearFuser(0.5), tar, non)
    assert model.fit_warnings_ == [] and caught == []
    assert model.to_dict()["warnings"] == []


@pytest.mark.parametrize("prior", [0.5, 0.01])
def test_separable_classes_are_reported_as_such(prior):
    rng = np.random.default_rng(1)
    tar, non = rng.uniform(1, 3, 40), rng.uniform(-3, 0, 400)
    model, caught = _fit(LinearCalibrator(prior), tar, non)
    assert model.converged_  # the gradient test passed: that alone said nothing was wrong
    (note,) = model.fit_warnings_
    assert note.startswith("the training classes are separable") and caught == [note]
    llr = model.transform_arrays(np.r_[tar, non]) + np.log(prior / (1 - prior))
    assert (llr[:40] > 0).all() and (llr[40:] < 0).all()  # what the note says, checked apart


def test_one_trial_on_the_wrong_side_is_not_separation():
    rng = np.random.default_rng(2)
    tar, non = rng.uniform(1, 3, 40), rng.uniform(-3, 0, 400)
    non[0] = 2.0  # one non-target among the targets: the cross-entropy has its minimum
    model, caught = _fit(LinearCalibrator(0.5), tar, non)
    assert model.fit_warnings_ == [] and caught == []


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), prior=st.sampled_from([0.5, 0.1, 0.9]),
       gap=st.floats(-2.0, 2.0))  # fmt: skip
def test_a_separation_note_means_every_margin_is_positive(seed, prior, gap):
    # soundness of the bound the note rests on, against the margins computed here
    rng = np.random.default_rng(seed)
    tar, non = rng.normal(gap, 1.0, (12, 2)), rng.normal(-gap, 1.0, (30, 2))
    model, _ = _fit(LinearFuser(prior), tar, non)
    plo = np.log(prior / (1 - prior))
    margins = np.r_[model.transform_arrays(tar) + plo, -(model.transform_arrays(non) + plo)]
    separated = any(n.startswith("the training classes are separable")
                    for n in model.fit_warnings_)  # fmt: skip
    if separated:
        assert (margins > 0).all()
    if (tar[:, 0].min() > non[:, 0].max()) or (tar[:, 1].min() > non[:, 1].max()):
        assert separated  # separable along one system: the fit finds it


def test_a_constant_system_leaves_its_weight_and_the_offset_undetermined():
    tar, non = _overlapping(np.random.default_rng(3), k=1)
    const = np.full_like
    model, caught = _fit(LinearFuser(0.5), np.c_[tar, const(tar, 0.5)], np.c_[non, const(non, 0.5)])
    (note,) = model.fit_warnings_
    assert note.startswith("the training data do not determine the weight of system 2 and the "
                           "offset: a joint change of them")  # fmt: skip
    assert caught == [note]


def test_a_system_at_zero_leaves_its_weight_undetermined():
    tar, non = _overlapping(np.random.default_rng(4), k=1)
    model, _ = _fit(
        LinearFuser(0.5), np.c_[np.zeros_like(tar), tar], np.c_[np.zeros_like(non), non]
    )
    assert model.fit_warnings_[0].startswith(
        "the training data do not determine the weight of system 1: changing it"
    )


def test_a_copy_of_a_system_and_a_constant_calibration_are_reported():
    tar, non = _overlapping(np.random.default_rng(5), k=1)
    model, _ = _fit(LinearFuser(0.5), np.c_[tar, 2 * tar - 1], np.c_[non, 2 * non - 1])
    want = "the weight of system 1, the weight of system 2 and the offset:"
    assert model.fit_warnings_[0].startswith(f"the training data do not determine {want}")
    cal, _ = _fit(LinearCalibrator(0.5), np.full(30, 0.5), np.full(90, 0.5))
    assert cal.fit_warnings_[0].startswith(
        "the training data do not determine the scale and the offset"
    )


def test_a_penalty_makes_the_fit_well_posed():
    tar, non = _overlapping(np.random.default_rng(6), k=1)
    model, caught = _fit(LinearFuser(0.5, l2=0.1), np.c_[tar, tar], np.c_[non, non])
    assert model.fit_warnings_ == [] and caught == []
    sep, caught = _fit(LinearCalibrator(0.5, l2=0.1), np.arange(1.0, 5.0), -np.arange(1.0, 9.0))
    assert sep.fit_warnings_ == [] and caught == []


def test_the_warnings_travel_with_the_model(tmp_path):
    rng = np.random.default_rng(7)
    model, _ = _fit(LinearCalibrator(0.5), rng.uniform(1, 2, 20), rng.uniform(-2, 0, 50))
    model.save(tmp_path / "m.json")
    assert json.loads((tmp_path / "m.json").read_text())["warnings"] == model.fit_warnings_
    assert LinearCalibrator.load(tmp_path / "m.json").fit_warnings_ == model.fit_warnings_


def test_quality_fusion_keeps_its_first_stages_warnings():
    rng = np.random.default_rng(8)
    models, segments = [f"m{i}" for i in range(6)], [f"s{j}" for j in range(40)]
    labels = np.where(rng.random((6, 40)) < 0.2, 1, -1)
    labels[:, 0], labels[:, 1] = 1, -1
    s = rng.normal(size=(6, 40)) + labels
    key = make_key(models, segments, labels)
    systems = [make_scores(models, segments, s), make_scores(models, segments, 3 * s)]
    quality = make_quality(quality_table(models, rng.normal(size=(6, 1))),
                           quality_table(segments, rng.normal(size=(40, 1))))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        fused = QualityFuser(0.5).fit(systems, key, quality)
    assert fused.linear_.fit_warnings_
    assert fused.fit_warnings_[: len(fused.linear_.fit_warnings_)] == fused.linear_.fit_warnings_
    assert "the weight of system 1 and the weight of system 2:" in fused.fit_warnings_[0]


def test_the_cli_prints_each_warning_in_one_line_and_writes_it_to_the_model(tmp_path, capsys):
    rng = np.random.default_rng(9)
    trials = [(f"m{j % 4}", f"s{j}", j % 5 == 0) for j in range(200)]
    s1 = [f"{rng.normal(1.5 if target else -1.0):.6f}" for _, _, target in trials]
    write_trial_files(tmp_path, trials, {"s1.txt": s1, "s2.txt": ["0.25"] * len(trials)})
    rc = main(["fuse", "--key", str(tmp_path / "key.txt"), "--scores", str(tmp_path / "s1.txt"),
               "--scores", str(tmp_path / "s2.txt"), "--model-out", str(tmp_path / "f.json"),
               "--cluster", "threads"])  # fmt: skip
    assert rc == 0
    err = capsys.readouterr().err
    warned = [x for x in err.splitlines() if x.startswith("warning: ")]
    assert len(warned) == 1
    assert warned[0].startswith(
        "warning: the training data do not determine the weight of s2 and the offset"
    )  # fmt: skip  (the system by its file)
    saved = json.loads((tmp_path / "f.json").read_text())["warnings"]
    assert saved == [warned[0].removeprefix("warning: ")]


def test_the_cli_l2_penalty_is_the_models_and_silences_the_warnings(tmp_path, capsys):
    rng = np.random.default_rng(10)
    tar, non = rng.uniform(1, 3, 30), rng.uniform(-3, 0, 90)  # separable
    trials = [("m", f"t{i}", True) for i in range(30)] + [("m", f"n{i}", False) for i in range(90)]
    write_trial_files(tmp_path, trials, {"s.txt": [*tar, *non]})
    argv = ["calibrate", "--key", str(tmp_path / "key.txt"), "--scores", str(tmp_path / "s.txt"),
            "--model-out", str(tmp_path / "cal.json"), "--cluster", "threads"]  # fmt: skip
    assert main([*argv, "--l2", "0.01"]) == 0
    assert "warning:" not in capsys.readouterr().err
    saved = json.loads((tmp_path / "cal.json").read_text())
    want = LinearCalibrator(0.5, l2=0.01).fit_arrays(tar, non)
    assert saved["l2"] == 0.01 and saved["warnings"] == []
    assert saved["weights"] == pytest.approx(want.weights_.tolist(), rel=1e-9)
    assert saved["offset"] == pytest.approx(want.offset_, rel=1e-9)
    assert main(argv) == 0  # without it: the warning
    assert "warning: the training classes are separable" in capsys.readouterr().err
    assert main([*argv, "--method", "pav", "--l2", "0.01"]) == 1
    assert "--l2 is a penalty of the linear calibration" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse refuses a negative penalty
        main([*argv, "--l2", "-1"])
    assert "not a finite number >= 0" in capsys.readouterr().err


def test_a_constant_system_far_from_one_is_named_with_the_offset():
    tar, non = _overlapping(np.random.default_rng(11), k=1)
    big = np.full_like
    model, _ = _fit(LinearFuser(0.5), np.c_[tar, big(tar, 1000.0)], np.c_[non, big(non, 1000.0)])
    assert model.fit_warnings_[0].startswith(
        "the training data do not determine the weight of system 2 and the offset:"
    )


def test_a_fit_stopped_by_max_iter_says_so():
    tar, non = _overlapping(np.random.default_rng(11))
    model, caught = _fit(LinearFuser(0.5, max_iter=2), tar, non)
    assert not model.converged_ and model.iterations_ == 2
    (note,) = model.fit_warnings_
    assert note.startswith("the fit stopped before reaching its minimum (reached max_iter=2, "
                           "after 2 iterations)") and caught == [note]  # fmt: skip
    assert model.to_dict()["warnings"] == [note]
    assert _fit(LinearFuser(0.5), tar, non)[0].fit_warnings_ == []  # the full fit: nothing


def test_a_minimum_at_float_precision_is_not_a_stop_short():
    from bosaris_dask.fusion.fit_checks import unconverged_note
    from bosaris_dask.optimize import QuadraticObjective, minimize

    res = minimize(QuadraticObjective(np.eye(2), np.ones(2)), np.ones(2), max_iter=0)
    assert res.converged and unconverged_note(res) is None  # g0 = 0: at the minimum
    res = minimize(QuadraticObjective(np.eye(2), np.ones(2)), np.zeros(2), max_iter=0)
    assert unconverged_note(res) is not None
    res.at_precision = True  # float64 resolves no further decrease: a minimum to precision
    assert unconverged_note(res) is None


def test_the_cli_max_iter_bounds_the_fit_and_the_warning_says_so(tmp_path, capsys):
    rng = np.random.default_rng(12)
    trials = [(f"m{j % 4}", f"s{j}", j % 5 == 0) for j in range(200)]
    s1 = [rng.normal(1.5 if target else -1.0) for _, _, target in trials]
    write_trial_files(tmp_path, trials, {"s1.txt": s1})
    argv = ["calibrate", "--key", str(tmp_path / "key.txt"), "--scores", str(tmp_path / "s1.txt"),
            "--model-out", str(tmp_path / "cal.json"), "--cluster", "threads"]  # fmt: skip
    assert main([*argv, "--max-iter", "1"]) == 0
    err = capsys.readouterr().err
    assert "after 1 iterations" in err
    assert "warning: the fit stopped before reaching its minimum (reached max_iter=1" in err
    assert not json.loads((tmp_path / "cal.json").read_text())["converged"]
    assert main(argv) == 0
    assert "warning:" not in capsys.readouterr().err
    assert main([*argv, "--method", "pav", "--max-iter", "5"]) == 1
    assert "--max-iter bounds the iterations of the linear calibration" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*argv, "--max-iter", "0"])


def test_classes_that_meet_only_at_a_tie_are_reported():
    """Integer scores whose classes overlap at one value: no best fit (the scale grew with gtol,
    19 -> 24 -> 28), yet "converged" and no warning, because tied trials keep the objective
    away from 0 (the separation note's test)."""
    rng = np.random.default_rng(13)
    tar, non = rng.integers(0, 4, 300).astype(float), rng.integers(-3, 1, 3000).astype(float)
    scales = []
    for gtol in (1e-8, 1e-10):
        model, caught = _fit(LinearCalibrator(gtol=gtol), tar, non)
        (note,) = model.fit_warnings_
        assert note.startswith("the training classes meet only at ties: every target "
                               "score is at or above 0 and every non-target score at or "
                               "below 0")  # fmt: skip
        assert caught == [note]
        scales.append(model.scale_)
    assert scales[1] > scales[0] + 1  # what the note says: no minimum, the scale keeps growing
    tied = np.c_[rng.normal(1, 1, 300), tar], np.c_[rng.normal(-1, 1, 3000), non]
    model, caught = _fit(LinearFuser(), *tied)  # a fusion with such a system has no best fit
    assert "every target score of system 2 is at or above 0" in model.fit_warnings_[0]
    model, caught = _fit(LinearCalibrator(l2=0.01), tar, non)  # an L2 penalty: a minimum
    assert model.fit_warnings_ == [] and caught == []
    # the same scores running the wrong way (a distance, votes against): no warning at all,
    # a weight that moved with gtol (-18.4 -> -27.4) and LLRs of -37 at score 2
    model, caught = _fit(LinearCalibrator(), -tar, -non)
    assert model.scale_ < 0 and caught == model.fit_warnings_
    assert model.fit_warnings_[0].startswith(
        "the training classes meet only at ties: every target score is at or below 0 and "
        "every non-target score at or above 0 (higher scores for non-targets)")  # fmt: skip
    model, _ = _fit(LinearFuser(), np.c_[tied[0][:, 0], -tar], np.c_[tied[1][:, 0], -non])
    assert "every target score of system 2 is at or below 0" in model.fit_warnings_[0]
    non[0] = 1.0  # one non-target above a target: the classes overlap, the minimum exists
    model, caught = _fit(LinearCalibrator(), tar, non)
    assert model.fit_warnings_ == [] and caught == []
    model, caught = _fit(LinearCalibrator(), -tar, -non)
    assert model.fit_warnings_ == [] and caught == []


@pytest.mark.parametrize("offset, scale", [
    (1e3, 1.0), (1e5, 1.0), (1e7, 1.0), (-1e9, 1.0), (0.0, 1e-13), (0.0, 1e-5), (0.0, 1e5),
    (0.0, 1e13)])  # fmt: skip
def test_scores_far_from_zero_or_from_unit_spread_reach_the_optimum(offset, scale):
    """Scores offset by 1e7 fitted all LLRs 0 (objective 1.0 for 0.522), offsets of 1e5 said
    'undetermined', scores scaled by 1e13 stopped at 0.721 saying converged: the fit now runs
    on standardized scores where the first pass finds them so (one pass more)."""
    rng = np.random.default_rng(1)
    tar, non = rng.normal(2, 1, 300), rng.normal(0, 1, 3000)
    want = LinearCalibrator(gtol=1e-12).fit_arrays(tar, non)
    model, caught = _fit(LinearCalibrator(), (tar + offset) * scale, (non + offset) * scale)
    assert model.fit_warnings_ == [] and caught == [] and model.converged_
    assert model.objective_ == pytest.approx(want.objective_, rel=1e-9)
    assert model.scale_ * scale == pytest.approx(want.scale_, rel=1e-6)
    llr = model.transform_arrays(np.array([(1.0 + offset) * scale]))[0]
    assert llr == pytest.approx(want.transform_arrays(np.array([1.0]))[0], abs=1e-5)


def _logistic_reference(tar, non, prior=0.5):
    """The prior-weighted cross-entropy (bits, normalized) and its minimizer by scipy, with
    the far scores' terms written out of the float64 trouble (they are 0 for any scale > 0)."""
    from scipy.optimize import minimize
    from scipy.special import log_expit

    plo = np.log(prior / (1 - prior))

    def cost(theta):
        a, b = theta
        t = -log_expit(a * tar + b + plo).mean()
        n = -log_expit(-(a * non + b + plo)).mean()
        return (
            (prior * t + (1 - prior) * n)
            / np.log(2)
            / (-prior * np.log2(prior) - (1 - prior) * np.log2(1 - prior))
        )

    x = minimize(cost, [1.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 1e-15,
                                                                   "maxiter": 20000}).x  # fmt: skip
    x = minimize(cost, x, method="BFGS", options={"gtol": 1e-12}).x
    return x, cost(x)


@pytest.mark.parametrize("method", ["exact", "cg"])
@pytest.mark.parametrize("far", [1e9, 1e13, 1e299])
def test_a_few_far_outliers_do_not_stop_the_fit_short(far, method):
    """A target and a non-target at +-1e13 (log10 LLRs) among scores near 1 set the
    standardization's half-range: the standardized weight's gradient was tiny for its scale,
    so the fit stopped at scale 1.0 (0.4651 for 0.4595) saying converged; at 1e300 it also
    warned, falsely, that the scale was undetermined."""
    ln10 = np.log(10)
    tar = np.array([far, 1.0, 2.0]) * ln10
    non = np.array([-far, 0.0, 1.5, -1.0]) * ln10
    model, caught = _fit(LinearCalibrator(method=method), tar, non)
    assert model.fit_warnings_ == [] and caught == [] and model.converged_
    (a, b), want = _logistic_reference(np.clip(tar, -1e6, 1e6), np.clip(non, -1e6, 1e6))
    assert model.scale_ == pytest.approx(a, rel=1e-6)
    assert model.offset_ == pytest.approx(b, rel=1e-6)
    assert model.objective_ == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("method", ["exact", "cg"])
def test_a_separable_fit_far_from_zero_is_not_fitted_twice(method):
    # separable classes leave a Newton decrement however far the fit goes (no minimum), so
    # the standardized fit of scores near 1000 was always carried on in the scores themselves:
    # 41 passes for an arbitrary stop where 21 gave one (142 for 39 with CG)
    rng = np.random.default_rng(0)
    tar, non = 1005 + rng.random(50), 995 - rng.random(50)
    model, caught = _fit(LinearCalibrator(method=method), tar, non)
    (note,) = model.fit_warnings_
    assert note.startswith("the training classes are separable") and caught == [note]
    assert model.passes_ <= (25 if method == "exact" else 45)


def test_a_quality_fusion_of_scores_far_from_zero_reaches_the_same_fit():
    """Its quality stage stalled ("not converged", a false 'undetermined' warning) on scores
    offset by 1e6; both stages now run standardized there."""
    rng = np.random.default_rng(3)
    models, segments = [f"m{i}" for i in range(60)], [f"s{j}" for j in range(80)]
    classes = np.where(rng.random((60, 80)) < 0.1, 1, -1)
    quality = make_quality(quality_table(models, rng.normal(size=(60, 1))),
                           quality_table(segments, rng.normal(size=(80, 1))))  # fmt: skip
    noise = [rng.normal(0, 1, classes.shape) for _ in range(2)]
    key = make_key(models, segments, classes)
    fits = []
    for offset in (0.0, 1e6):
        systems = [make_scores(models, segments, classes * w + e + offset)
                   for w, e in zip((1.0, 0.5), noise, strict=True)]  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("error", FitWarning)
            fits.append((QualityFuser().fit(systems, key, quality), offset))
    (plain, _), (shifted, offset) = fits
    assert shifted.converged_ and shifted.objective_ == pytest.approx(plain.objective_, rel=1e-9)
    np.testing.assert_allclose(shifted.quality_matrix_, plain.quality_matrix_, atol=1e-6)
    assert shifted.offset_ + shifted.weights_.sum() * offset == pytest.approx(plain.offset_,
                                                                              abs=1e-5)  # fmt: skip


def test_the_cg_solver_checks_for_undetermined_weights_too():
    """method="cg" computes no Hessian, so a repeated system said nothing (the exact solver
    warns); one pass more computes it where the parameters are few."""
    rng = np.random.default_rng(0)
    tar, non = rng.normal(1, 1, (300, 1)), rng.normal(-1, 1, (3000, 1))
    model, caught = _fit(LinearFuser(method="cg"), np.c_[tar, tar], np.c_[non, non])
    (note,) = model.fit_warnings_
    assert note.startswith("the training data do not determine the weight of system 1 and the "
                           "weight of system 2") and caught == [note]  # fmt: skip
    other = rng.normal(0, 1, (300, 1)), rng.normal(0, 1, (3000, 1))
    model, caught = _fit(LinearFuser(method="cg"), np.c_[tar, other[0]], np.c_[non, other[1]])
    assert model.fit_warnings_ == [] and caught == []


def test_a_fit_of_more_parameters_than_the_exact_solver_takes_is_checked_too():
    """method="auto" runs CG past 50 parameters, and the check's Hessian pass was skipped
    there: 60 systems, the last a copy of the first, said nothing."""
    rng = np.random.default_rng(1)
    k = 60
    tar, non = rng.normal(0.3, 1, (400, k)), rng.normal(-0.3, 1, (4000, k))
    tar[:, -1], non[:, -1] = tar[:, 0], non[:, 0]
    model, caught = _fit(LinearFuser(max_iter=30), tar, non)
    note = "the training data do not determine the weight of system 1 and the weight of system 60"
    assert model.fit_warnings_[0].startswith(note) and caught[0] == model.fit_warnings_[0]


def test_a_standardized_fit_names_the_tie_in_the_scores_own_units():
    rng = np.random.default_rng(13)
    tar = rng.integers(0, 4, 300).astype(float) + 5000.0  # 100+ half-ranges from 0: standardized
    non = rng.integers(-3, 1, 3000).astype(float) + 5000.0
    model, caught = _fit(LinearCalibrator(), tar, non)
    assert model.fit_warnings_[0].startswith("the training classes meet only at ties: every "
                                             "target score is at or above 5000 ")  # fmt: skip


def test_a_standardized_fit_penalizes_the_original_weights():
    """l2/2 ||w||^2 is on the weights of the scores as given: standardized by h, the penalty
    is on v / h (the fit of scores offset by 1e6 equals the unshifted one, penalty included)."""
    rng = np.random.default_rng(1)
    tar, non = rng.normal(2, 1, 300), rng.normal(0, 1, 3000)
    want = LinearCalibrator(l2=0.05, gtol=1e-12).fit_arrays(tar, non)
    model, caught = _fit(LinearCalibrator(l2=0.05), tar + 1e6, non + 1e6)
    assert caught == [] and model.objective_ == pytest.approx(want.objective_, rel=1e-9)
    assert model.scale_ == pytest.approx(want.scale_, rel=1e-7)


def test_systems_whose_combination_meets_only_at_ties_are_reported():
    """Neither system alone separates the classes, their difference does with ties: the
    weights grew with gtol (-17.3/17.3 -> -27.3/27.3) with converged=True and no warning, or
    at gtol 1e-12 the "undetermined" note (the wrong reason)."""
    rng = np.random.default_rng(18)
    s1_tar, s1_non = 3 * rng.normal(size=400), 3 * rng.normal(size=2000)
    tar = np.c_[s1_tar, s1_tar + rng.integers(0, 3, 400)]  # s2 - s1 in 0..2 for targets
    non = np.c_[s1_non, s1_non + rng.integers(-3, 1, 2000)]  # and in -3..0 for non-targets
    for gtol in (1e-8, 1e-12):
        model, caught = _fit(LinearFuser(gtol=gtol), tar, non)
        (note,) = model.fit_warnings_
        assert note.startswith("the training classes meet only at ties of a combination of "
                               "the systems (-1 * system 1 + 1 * system 2)")  # fmt: skip
        assert caught == [note]
    model, caught = _fit(LinearFuser(l2=0.01), tar, non)  # a minimum: nothing to say
    assert model.fit_warnings_ == [] and caught == []
    # correlated systems (0.99999) are well posed: no note, and no pass spent checking
    t, n = rng.normal(2, 1, 2000), rng.normal(0, 1, 20000)
    twin = lambda x: 0.99999 * x + np.sqrt(1 - 0.99999**2) * rng.normal(size=x.shape)  # noqa: E731
    model, caught = _fit(LinearFuser(), np.c_[t, twin(t)], np.c_[n, twin(n)])
    assert model.fit_warnings_ == [] and model.passes_ == model.iterations_ + 1


def test_a_separable_calibration_running_backwards_says_so():
    # every target below every non-target: the scale came out -12 with only the separable note
    model, caught = _fit(LinearCalibrator(), np.array([-3.0, -2.0]), np.array([1.0, 2.0, 3.0]))
    assert model.scale_ < 0 and caught == model.fit_warnings_
    assert model.fit_warnings_[0].startswith("the training classes are separable")
    assert model.fit_warnings_[0].endswith(
        "The fitted scale is negative: in these data every target's raw score is below every "
        "non-target's (are the scores' sign or the labels reversed?)")  # fmt: skip
    model, _ = _fit(LinearCalibrator(), np.array([3.0, 2.0]), np.array([-1.0, -2.0, -3.0]))
    assert "negative" not in model.fit_warnings_[0]


@pytest.mark.parametrize("offset", [1e6, 1e9])
@pytest.mark.parametrize("system", ["copied", "constant"])
def test_an_undetermined_fusion_far_from_zero_converges_with_its_one_note(offset, system):
    # the carry-on after a standardized fit must not take a real flat direction for a short
    # stop: an early version ended these unconverged, with a second note
    rng = np.random.default_rng(4)
    tar, non = _overlapping(rng, k=1)
    extra = {"copied": (tar, non), "constant": (np.zeros_like(tar), np.zeros_like(non))}[system]
    model, caught = _fit(LinearFuser(), np.c_[tar, extra[0]] + offset,
                         np.c_[non, extra[1]] + offset)  # fmt: skip
    assert model.converged_ and len(model.fit_warnings_) == 1 and caught == model.fit_warnings_
    assert "do not determine" in model.fit_warnings_[0]
    assert "stopped before" not in model.fit_warnings_[0]


def test_a_fit_stopped_early_on_classes_with_a_gap_says_separable_not_ties():
    # (an audit: max_iter=3 on classes 1.0 apart said they "meet only at ties")
    rng = np.random.default_rng(3)
    tar, non = rng.normal(3, 0.3, (200, 1)), rng.normal(0, 0.3, (2000, 1))
    assert tar.min() > non.max()
    model, _ = _fit(LinearFuser(max_iter=3), tar, non)
    said = [w for w in model.fit_warnings_ if w.startswith("the training classes")]
    assert said and said[0].startswith("the training classes are separable: every target score")
