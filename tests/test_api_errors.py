"""Misuse of the Python API meets an error of the package (a ``BosarisError``) that names the
problem: before, arguments in the wrong order or of the wrong kind met xarray's ``KeyError``,
numpy's ``ValueError``, an ``AttributeError`` deep inside, or a message pointing the wrong way
("evaluation needs a key, got scores" for ``evaluate(key, scores)``)."""

from __future__ import annotations

import numpy as np
import pytest

import bosaris_dask as bd
from bosaris_dask import embeddings, metrics, report
from bosaris_dask.errors import BosarisError
from bosaris_dask.trials import make_key, make_scores

KEY = make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [-1, 1]])
SCORES = make_scores(["m1", "m2"], ["s1", "s2"], [[2.0, -1.0], [0.5, 1.5]])
TAR, NON = [1.0, 2.0, 3.0], [-1.0, 0.0, 1.5]
EMB = embeddings.from_arrays(["m1", "m2"], np.array([[1.0, 0.0], [0.6, 0.8]]))


def _fitted_fuser():
    return bd.LinearFuser(l2=1.0).fit([SCORES, SCORES.copy()], KEY)


CASES = {
    "evaluate(key, scores)": (lambda: bd.evaluate(KEY, SCORES), "the scores come first"),
    "summarize(key, scores)": (lambda: bd.summarize(KEY, SCORES), "the scores come first"),
    "key.bosaris.evaluate(scores)": (
        lambda: KEY.bosaris.evaluate(SCORES),
        "the scores come first",
    ),
    "evaluate(scores, ndx)": (
        lambda: bd.evaluate(SCORES, bd.trials.make_ndx(["m1"], ["s1"])),
        "needs a key, got ndx",
    ),
    "operating_points(scores)": (
        lambda: bd.operating_points(SCORES),
        "operating_points works on the result of",
    ),
    "sweep_points(scores)": (lambda: metrics.sweep_points(SCORES), "works on the result of"),
    "curve(scores)": (lambda: metrics.curve(SCORES), "curve works on the result of"),
    "curve(result, 'nosuch')": (
        lambda: metrics.curve(bd.evaluate(SCORES, KEY, priors=[0.5]), "nosuch"),
        "no system 'nosuch'; the systems are system-1",
    ),
    "format_table(scores)": (lambda: report.format_table(SCORES), "format_table works on"),
    "to_json_dict(scores)": (lambda: report.to_json_dict(SCORES), "to_json_dict works on"),
    "min_dcf(tar, non, [priors])": (
        lambda: metrics.min_dcf(TAR, NON, [0.5, 0.01]),
        "min_dcf takes one effective prior",
    ),
    "act_dcf(tar, non, [priors])": (
        lambda: metrics.act_dcf(TAR, NON, [0.5]),
        "act_dcf takes one effective prior",
    ),
    "eer(scores, key)": (lambda: metrics.eer(SCORES, KEY), "take target and non-target score"),
    "PAVCalibrator(bound='x')": (lambda: bd.PAVCalibrator(bound="x"), "bound must be a finite"),
    "PAVCalibrator(small_val='x')": (
        lambda: bd.PAVCalibrator(small_val="x"),
        "small_val must be a finite",
    ),
    "QualityFuser(qtrans='x')": (
        lambda: bd.QualityFuser(qtrans="nonsense"),
        "Qtrans must be a finite 2-D matrix, got 'nonsense'",
    ),
    "LinearFuser(split_every='x')": (
        lambda: bd.LinearFuser(split_every="x"),
        "split_every must be None, an integer >= 2",
    ),
    "write(path, obj)": (lambda: bd.write("x.zarr", SCORES), r"write takes \(obj, path\)"),
    "write(result)": (
        lambda: bd.write(bd.evaluate(SCORES, KEY, priors=[0.5]), "r.zarr"),
        "an evaluation's result, not a trial object",
    ),
    "LinearCalibrator.fit([scores])": (
        lambda: bd.LinearCalibrator().fit([SCORES], KEY),
        "a calibrator takes one Scores object",
    ),
    "PAVCalibrator.fit([scores])": (
        lambda: bd.PAVCalibrator().fit([SCORES], KEY),
        "a calibrator takes one Scores object",
    ),
    "fuser.transform(key)": (
        lambda: _fitted_fuser().transform(KEY),
        "system 1 is a key, not Scores",
    ),
    "scores_from_embeddings(key, test)": (
        lambda: embeddings.scores_from_embeddings(KEY, EMB),
        r"expected an embedding set .*, got a trial object \(key\)",
    ),
    "embeddings.write(scores)": (
        lambda: embeddings.write(SCORES, "y.npz"),
        r"got a trial object \(scores\)",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_misuse_meets_a_package_error_that_names_it(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing written (the writes are refused)
    call, said = CASES[case]
    with pytest.raises(BosarisError, match=said):
        call()
    assert not list(tmp_path.iterdir())


def test_a_misspelt_keyword_of_a_quality_fuser_names_the_quality_fuser():
    with pytest.raises(
        TypeError, match="QualityFuser.. got an unexpected keyword argument 'bogus'"
    ):
        bd.QualityFuser(bogus=1)


def test_what_still_works():
    assert bd.LinearFuser(split_every=4).split_every == 4
    assert bd.LinearFuser(split_every={0: 8}).split_every == {0: 8}
    assert bd.PAVCalibrator(bound="10").bound == 10.0  # a number as text, as float() reads it
    assert metrics.min_dcf(TAR, NON, np.float64(0.5)) == metrics.min_dcf(TAR, NON, 0.5)
    assert EMB.bosaris.kind == "embeddings" and SCORES.bosaris.kind == "scores"
    fitted = bd.PAVCalibrator().fit_transform(SCORES, KEY, names=["dev"])  # names, as fit's
    assert fitted.bosaris.kind == "scores"


def test_trial_constructors_refuse_what_they_would_silently_misread():
    # found by an audit: b"m1" became the id "b'm1'" (no trial matched 'm1'); a -1 or a NaN in a
    # mask became True (a non-target a target); one string was taken as its characters
    import bosaris_dask as bd
    from bosaris_dask.errors import TrialError

    assert bd.make_key([b"m1"], ["a"], [[1]]).model.values.tolist() == ["m1"]
    with pytest.raises(TrialError, match=r"targets is a mask: True/False or 1/0, found -1"):
        bd.key_from_masks(["m"], ["a", "b"], [[1, -1]], [[0, 0]])
    with pytest.raises(TrialError, match=r"score_mask is a mask: True/False or 1/0, found nan"):
        bd.make_scores(["m"], ["a", "b"], [[1.0, 2.0]], [[1.0, np.nan]])
    key = bd.key_from_masks(["m"], ["a", "b"], np.array([[1, 0]]), [[0.0, 1.0]])
    assert key.trial_mask.values.tolist() == [[1, -1]]
    with pytest.raises(TrialError, match=r"the model ids are a list, not one string \('m1'\)"):
        bd.make_key("m1", ["a"], [[1]])


def test_merge_warns_of_ids_that_differ_only_by_their_encoding():
    import warnings

    import bosaris_dask as bd
    from bosaris_dask.trials.id_twins import IdWarning

    nfc, nfd = bd.make_key(["caf\u00e9"], ["s"], [[1]]), bd.make_key(["cafe\u0301"], ["s"], [[-1]])
    with pytest.warns(IdWarning, match=r"1 model id\(s\) of the second key match an id of the "
                      r"first key only after Unicode normalization"):  # fmt: skip
        assert bd.merge(nfc, nfd).sizes["model"] == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bd.merge(nfc, bd.make_key(["other"], ["s"], [[-1]]))  # no look-alike, no warning


def test_write_options_are_checked(tmp_path):
    import bosaris_dask as bd
    from bosaris_dask.errors import OptionError

    scores = bd.make_scores(["m", "n"], ["a"], [[1.0], [2.0]])
    for options, said in (
        ({"chunk_mb": 0}, "chunk_mb is a chunk's size in MiB, a positive"),
        ({"omit_true_masks": "yes"}, "omit_true_masks is True or False"),
    ):
        with pytest.raises(OptionError, match=said):
            bd.write(scores, tmp_path / "s.zarr", **options)
    assert not list(tmp_path.iterdir())
