"""Unusual but legitimate inputs to the Python API that were taken silently or answered with a
misleading error (audit of the Python API): masked arrays, boolean key masks, missing ids,
labels of two types, priors a rounding apart, unknown dask chunk sizes."""

from __future__ import annotations

import dask.array as da
import numpy as np
import numpy.ma as ma
import pandas as pd
import pytest

import bosaris_dask as bd
from bosaris_dask.errors import OptionError, ScoreError, TrialError
from bosaris_dask.trials import key_from_masks


def test_a_masked_array_is_refused_not_read_unmasked():
    """np.asarray drops the mask: cllr counted the masked 99.0 (0.5994 for 0.6287)."""
    tar = ma.masked_array([1.0, 2.0, 3.0, 99.0], mask=[0, 0, 0, 1])
    non = np.array([-1.0, 0.0, 1.5, -2.0])
    for metric in (bd.metrics.cllr, bd.metrics.eer, bd.metrics.auc):
        with pytest.raises(ScoreError, match=r"target scores are a masked array.*compressed\(\)"):
            metric(tar, non)
    with pytest.raises(ScoreError, match="non-target scores are a masked array"):
        bd.metrics.evaluate_arrays(non, tar, priors=[0.5])
    nothing_masked = ma.masked_array([1.0, 2.0, 3.0], mask=False)
    assert bd.metrics.cllr(nothing_masked, non) == bd.metrics.cllr([1.0, 2.0, 3.0], non)
    # what the user meant: the unmasked values (brute force: Cllr by its definition)
    kept = tar.compressed()
    want = (np.mean(np.log2(1 + np.exp(-kept))) + np.mean(np.log2(1 + np.exp(non)))) / 2
    assert bd.metrics.cllr(kept, non) == pytest.approx(want, rel=1e-12)


def test_a_boolean_key_mask_points_to_key_from_masks():
    """True/False became +1/0: a targets mask lost every non-target, and evaluate said only
    '0 non-targets' later."""
    targets = np.array([[True, False], [False, True]])
    for mask in (targets, da.from_array(targets)):  # in memory, or lazy (as a store's)
        with pytest.raises(TrialError, match=r"got True/False.*key_from_masks"):
            bd.make_key(["a", "b"], ["x", "y"], mask)
    key = key_from_masks(["a", "b"], ["x", "y"], targets, ~targets)
    assert key.trial_mask.values.tolist() == [[1, -1], [-1, 1]]


@pytest.mark.parametrize("gap", [None, np.nan, pd.NA, float("nan"), np.float32("nan"), pd.NaT])
def test_a_missing_id_is_refused_not_named_none(gap):
    with pytest.raises(TrialError, match="a model id is missing"):
        bd.make_key([gap, "m"], ["x"], [[1], [-1]])
    with pytest.raises(TrialError, match="a segment id is missing"):
        bd.make_scores(["m"], ["x", gap], [[1.0, 2.0]])


def test_labels_of_two_types_that_share_only_text_are_refused():
    """'1' is not 1: str model labels against int segment labels made a key of no target."""
    with pytest.raises(TrialError, match=r"share no value, but both hold '1' \(as int and str\)"):
        bd.key_from_labels(["m1", "m2"], ["1", "2"], ["s1", "s2"], [1, 2])
    same = bd.key_from_labels(["m1", "m2"], ["1", "2"], ["s1", "s2"], ["2", None])
    assert same.trial_mask.values.tolist() == [[-1, 0], [1, 0]]
    apart = bd.key_from_labels(["m1"], [1], ["s1"], [3])  # no shared value, no shared text
    assert apart.trial_mask.values.tolist() == [[-1]]


def _small():
    rng = np.random.default_rng(0)
    ids = [f"m{i}" for i in range(6)]
    mask = np.where(np.eye(6, dtype=bool), 1, -1).astype(np.int8)
    scores = bd.make_scores(ids, ids, rng.normal(size=(6, 6)) + 2 * (mask > 0))
    return scores, bd.make_key(ids, ids, mask)


def test_priors_a_rounding_apart_are_one_prior():
    """They were refused as two operating points 'with other costs', both printed 0.1:1:1."""
    scores, key = _small()
    near = bd.evaluate(scores, key, priors=[0.1, np.nextafter(0.1, 1)])
    one = bd.evaluate(scores, key, priors=[0.1])
    assert near.bosaris.operating_points().sizes == one.bosaris.operating_points().sizes
    assert float(near.bosaris.operating_points().act_dcf[0, 0]) == float(
        one.bosaris.operating_points().act_dcf[0, 0]
    )
    with pytest.raises(OptionError, match=r"0\.1:1\.0:1\.0 and 0\.10000000000000002:1\.0:1\.0"):
        bd.evaluate(
            scores, key, operating_points=["0.1:1:1", f"{float(np.nextafter(0.1, 1))!r}:1:1"]
        )


def test_plural_names_are_not_pluralized_again():
    scores, key = _small()
    with pytest.raises(OptionError, match=r"^sweep prior log-odds must be a number or a 1-D"):
        bd.evaluate(scores, key, sweep=np.zeros((2, 2)))


def test_a_condition_table_hint_is_given_only_where_the_other_side_fits_better():
    """With ids shared by both sides (0..5), a model table lacking two models was told its
    header should say 'segment'."""
    ids = list(range(6))
    mask = np.where(np.eye(6, dtype=bool), 1, -1).astype(np.int8)
    scores, key = bd.make_scores(ids, ids, np.eye(6) * 3.0), bd.make_key(ids, ids, mask)
    table = pd.DataFrame({"model": ids[:4], "g": list("abab")})
    with pytest.raises(TrialError) as info:
        bd.evaluate(scores, key, conditions=[table], by=["model.g"])
    assert "2 model ids of the key are not in the table" in str(info.value)
    assert "should its header" not in str(info.value)


def test_unknown_dask_chunk_sizes_are_named():
    x = da.from_array(np.arange(12.0).reshape(4, 3), chunks=2)
    with pytest.raises(TrialError, match=r"unknown chunk sizes.*compute_chunk_sizes\(\)"):
        bd.make_scores(["a", "b", "c"], ["x", "y", "z"], x[x[:, 0] > 2])


def test_a_stacked_dataset_is_told_to_unstack_not_to_select_a_list():
    scores, key = _small()
    with pytest.raises(TrialError, match=r"its model ids lie along 'trial'.*unstack\('trial'\)"):
        bd.evaluate(scores.stack(trial=("model", "segment")), key)
    back = scores.stack(trial=("model", "segment")).unstack("trial")
    assert float(bd.evaluate(back, key).eer[0]) == float(bd.evaluate(scores, key).eer[0])
