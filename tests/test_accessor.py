"""The ``.bosaris`` accessor: every method is the plain function of the same name with the
Dataset first (issue 15), on trial objects and on results; values are checked against
brute-force counts (tests/reference.py), not against the package."""

import inspect
import re

import matplotlib
import numpy as np
import pytest
from scipy.special import logit

import bosaris_dask as bd
from bosaris_dask import accessor, metrics, report, trials
from bosaris_dask.errors import OptionError, TrialError
from tests import reference as ref

matplotlib.use("Agg")

MODELS, SEGMENTS = ["m1", "m2", "m3"], ["s1", "s2", "s3", "s4"]
MASK = np.array([[1, -1, -1, 0], [-1, 1, -1, -1], [-1, -1, 0, 1]])
SCORE = np.array([[2.5, 0.5, -1.0, 9.0], [-0.5, 1.5, 0.25, -2.0], [1.0, -3.0, 7.0, 0.75]])


@pytest.fixture
def key():
    return bd.make_key(MODELS, SEGMENTS, MASK)


@pytest.fixture
def scores():
    return bd.make_scores(MODELS, SEGMENTS, SCORE, chunks=(2, 3))


def _tar_non():
    return SCORE[MASK == 1], SCORE[MASK == -1]


def test_kind_of_trial_objects_and_of_results(key, scores):
    assert (key.bosaris.kind, scores.bosaris.kind) == ("key", "scores")
    assert bd.make_ndx(MODELS, SEGMENTS).bosaris.kind == "ndx"
    assert scores.bosaris.evaluate(key, priors=[0.5]).bosaris.kind == "evaluation"


def test_targets_and_nontargets_are_the_key_masks(key):
    assert (key.bosaris.targets().values == (MASK == 1)).all()
    assert (key.bosaris.nontargets().values == (MASK == -1)).all()
    assert int(key.bosaris.classes().sel(model="m3", segment="s3")) == 0


def test_target_scores_match_brute_force(key, scores):
    tar, non = _tar_non()
    assert sorted(scores.bosaris.target_scores(key)) == sorted(tar)
    assert sorted(scores.bosaris.nontarget_scores(key)) == sorted(non)
    with pytest.raises(bd.errors.TrialError, match=r"target_scores takes \(scores, key\), "
                                                  r"not \(key, scores\)"):  # fmt: skip
        bd.trials.target_scores(key, scores)  # (an AttributeError before)


def test_align_is_bd_align_to_the_like_object(key, scores):
    shuffled = scores.isel(model=[2, 0, 1], segment=[3, 1, 0, 2])
    out = shuffled.bosaris.align(key)
    assert out.model.values.tolist() == MODELS and out.segment.values.tolist() == SEGMENTS
    # scores outside the key's trials are masked out, as bd.align does
    assert (out.score_mask.values == (MASK != 0)).all()
    assert out.identical(bd.align(shuffled, key))
    back = shuffled.bosaris.reindex_ids(MODELS, SEGMENTS)
    assert (back.score.values == SCORE).all()


def test_filter_merge_coverage_forward(key, scores):
    kept = scores.bosaris.filter(models=["m1"])
    assert kept.model.values.tolist() == ["m1"]
    left = scores.bosaris.filter(segments=["s1", "s2"])
    right = scores.bosaris.filter(segments=["s3", "s4"])
    merged = left.bosaris.merge(right)
    assert merged.identical(bd.merge(left, right))
    cov = scores.bosaris.coverage(key)
    assert cov["trials"] == int((MASK != 0).sum()) and cov["missing"] == 0
    with pytest.raises(TrialError, match="trials of a Key or an Ndx, not of scores"):
        scores.bosaris.coverage(scores)  # was AttributeError: no attribute 'trial_mask'


def test_evaluate_matches_brute_force(key, scores):
    tar, non = _tar_non()
    ds = scores.bosaris.evaluate(key, priors=[0.5, 0.1])
    assert ds.identical(bd.evaluate(scores, key, priors=[0.5, 0.1]))
    ops = ds.bosaris.operating_points()
    for p in (0.5, 0.1):
        raw = ref.min_dcf(tar, non, logit(p))
        assert ops.min_dcf_raw.sel(prior=p).item() == pytest.approx(raw, abs=1e-15)
        act, _, _ = ref.dcf_at(tar, non, logit(p))
        assert ops.act_dcf_raw.sel(prior=p).item() == pytest.approx(act, abs=1e-15)
    assert ds.eer.item() == pytest.approx(ref.eer(tar, non), abs=1e-15)


def test_summarize_is_a_list_of_one_as_bd_summarize(key, scores):
    (summary,) = scores.bosaris.summarize(key)
    (same,) = bd.summarize(scores, key)  # one Scores object, as bd.evaluate takes it
    tar, non = _tar_non()
    assert (summary.n_target, summary.n_nontarget) == (len(tar), len(non))
    assert (same.n_target, same.n_nontarget) == (len(tar), len(non))


def test_result_helpers_forward(key, scores):
    ds = scores.bosaris.evaluate(key, priors=[0.1], sweep=[-1.0, 0.0, 1.0])
    assert ds.bosaris.operating_points().identical(bd.operating_points(ds))
    assert ds.bosaris.sweep_points().plo.values.tolist() == [-1.0, 0.0, 1.0]
    pmiss, pfa = ds.bosaris.curve()  # one system: no name needed
    tar, non = _tar_non()
    hull_misses, hull_fas = ref.hull(tar, non)
    np.testing.assert_allclose(pmiss, np.array(hull_misses) / len(tar), rtol=0, atol=1e-15)
    np.testing.assert_allclose(pfa, np.array(hull_fas) / len(non), rtol=0, atol=1e-15)
    roc_pmiss, _ = ds.bosaris.curve("system-1", "roc")
    assert not np.isnan(roc_pmiss).any()
    assert ds.bosaris.to_json_dict() == report.to_json_dict(ds)
    assert ds.bosaris.format_table() == report.format_table(ds)
    assert ds.bosaris.det_plot().get_xlabel() and ds.bosaris.nbe_plot().get_ylabel()


def test_curve_with_several_systems_needs_a_name(key, scores):
    ds = bd.evaluate([scores, scores], key, priors=[0.5], names=["a", "b"])
    with pytest.raises(OptionError, match="name one of the systems .a, b."):
        ds.bosaris.curve()
    assert ds.bosaris.curve("b")[0].tolist() == metrics.curve(ds, "b")[0].tolist()


def test_result_helpers_on_a_trial_object_say_what_they_need(scores):
    with pytest.raises(TrialError, match=r"\.bosaris\.operating_points\(\) works on the result"):
        scores.bosaris.operating_points()


def test_write_and_its_old_name(scores, tmp_path):
    path = scores.bosaris.write(tmp_path / "s.zarr")
    assert (bd.read(path).score.values == SCORE).all()
    with pytest.warns(FutureWarning, match=r"\.bosaris\.to_store\(path\) is deprecated"):
        scores.bosaris.to_store(tmp_path / "t.zarr")


def _documented_target(method) -> object:
    """The function a method's docstring names first (``:func:`bosaris_dask...```)."""
    match = re.search(r":func:`~?(bosaris_dask[\w.]*)\.(\w+)`", method.__doc__)
    assert match, f"{method.__name__}: its docstring names no function"
    module = __import__(match.group(1), fromlist=["_"])
    return getattr(module, match.group(2))


FORWARDERS = [
    name for name, m in vars(accessor.BosarisAccessor).items()
    if inspect.isfunction(m) and not name.startswith("_")
    and name not in ("targets", "nontargets", "to_store")
]  # fmt: skip


@pytest.mark.parametrize("name", FORWARDERS)
def test_every_method_forwards_to_the_function_of_its_name(name):
    """Same names, same contracts: ``ds.bosaris.f`` names the function ``f`` it forwards to
    (``filter`` is ``filter_trials``, ``classes`` is ``trial_classes``: the method names what
    a Dataset method would be called), whose first parameter is the Dataset."""
    method = getattr(accessor.BosarisAccessor, name)
    target = _documented_target(method)
    assert target.__name__ == {"filter": "filter_trials", "classes": "trial_classes"}.get(
        name, name
    )
    first = next(iter(inspect.signature(target).parameters.values()))
    assert first.kind in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD)
    params = list(inspect.signature(method).parameters)[1:]
    target_params = list(inspect.signature(target).parameters)[1:]
    for p in params:  # every named argument of the method is one of the function's
        if p not in ("kwargs",):
            assert p in target_params, f"{name}: {p} is not a parameter of {target.__name__}"


def test_module_docstring_lists_every_method():
    for name in [*FORWARDERS, "targets", "nontargets"]:
        assert f"``{name}(" in accessor.__doc__, name


def test_trials_reexports_what_the_accessor_uses():
    assert (
        trials.align is bd.align
        and trials.reindex_ids.__module__ == "bosaris_dask.trials.operations"
    )


def test_trial_methods_on_other_objects_name_the_method():
    # a Quality object or a result raised KeyError 'model'; scores' classes() AttributeError
    from bosaris_dask.trials import make_quality, quality_table

    key = bd.make_key(["m1"], ["s1", "s2"], [[1, -1]])
    scores = bd.make_scores(["m1"], ["s1", "s2"], [[1.0, -1.0]])
    quality = make_quality(quality_table(["m1"], [[0.5]]), quality_table(["s1"], [[1.0]]))
    with pytest.raises(TrialError, match=r"^classes\(\) takes key or ndx, not scores$"):
        scores.bosaris.classes()
    with pytest.raises(TrialError, match=r"^align\(\) takes key, ndx or scores, not quality$"):
        quality.bosaris.align(key)
    with pytest.raises(TrialError, match=r"^filter\(\) takes key, ndx or scores, not quality$"):
        quality.bosaris.filter(models=["m1"])
