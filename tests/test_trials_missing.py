"""align restricts scores to a trial list and reports what is missing; missing trials can
be filled with a value (issue 17, items 2 and 3). Expected values are worked by hand."""

import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.errors import TrialError
from bosaris_dask.trials import (
    align,
    alignment_report,
    key_from_labels,
    make_key,
    make_ndx,
    make_scores,
    set_missing_to_value,
)

# key on m1,m2,m3 x s1,s2,s3:    scores on m2,m1,m4 x s3,s1 (s2 absent, m3 absent)
#   m1: +1 -1  0                  every entry scored except (m1, s3)
#   m2: -1 +1 -1
#   m3: +1  0 -1
KEY = make_key(["m1", "m2", "m3"], ["s1", "s2", "s3"], [[1, -1, 0], [-1, 1, -1], [1, 0, -1]])
SCORES = make_scores(
    ["m2", "m1", "m4"],
    ["s3", "s1"],
    [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
    [[True, True], [False, True], [True, True]],
)


def test_align_with_ands_the_score_mask_with_the_trials():
    out = align(SCORES, KEY)
    assert out.model.values.tolist() == ["m1", "m2", "m3"]
    assert out.segment.values.tolist() == ["s1", "s2", "s3"]
    # (m1, s3) is not a trial: the score there (3.0, masked off anyway) stays masked; (m2, s1)
    # and (m2, s3) are trials with scores; m3 has no scores.
    assert out.score_mask.values.tolist() == [
        [True, False, False],
        [True, False, True],
        [False, False, False],
    ]
    ndx = make_ndx(["m2"], ["s3", "s1"], [[False, True]])
    same_ids = make_scores(["m2"], ["s3", "s1"], [[7.0, 8.0]])
    assert align(same_ids, ndx).score_mask.values.tolist() == [[False, True]]


def test_align_with_a_label_key_and_with_scores():
    key = key_from_labels(["m1", "m2"], ["a", "b"], ["s1"], ["a"])
    scores = make_scores(["m1", "m2"], ["s1"], [[1.0], [2.0]])
    assert align(scores, key).score_mask.values.tolist() == [[True], [True]]
    # aligned to another Scores object: ids only, the mask is not touched
    other = make_scores(["m2"], ["s1"], [[0.0]], [[False]])
    assert align(scores, other).score_mask.values.tolist() == [[True]]


def test_alignment_report_counts_by_hand():
    r = alignment_report(SCORES, KEY)
    # models: m3 missing of 3; segments: s2 missing of 3
    # targets (m1,s1) (m2,s2) (m3,s1): (m2,s2) s2 absent, (m3,s1) m3 absent -> 2 of 3
    # non-targets (m1,s2) (m2,s1) (m2,s3) (m3,s3): (m1,s2), (m3,s3) missing -> 2 of 4
    assert (r.models, r.n_models, r.segments, r.n_segments) == (1, 3, 1, 3)
    assert (r.targets, r.n_targets, r.nontargets, r.n_nontargets) == (2, 3, 2, 4)
    assert (r.trials, r.n_trials) == (4, 7)
    assert str(r) == (
        "scores are missing 1 of 3 models, 1 of 3 segments, 2 of 3 targets, 2 of 4 non-targets"
    )
    ndx_report = alignment_report(SCORES, make_ndx(["m1", "m9"], ["s1", "s3"]))
    assert ndx_report.targets is None
    # trials (m1,s1) ok, (m1,s3) masked, (m9,*) absent -> 3 of 4
    assert (ndx_report.models, ndx_report.segments, ndx_report.trials) == (1, 0, 3)
    assert str(ndx_report) == "scores are missing 1 of 2 models, 0 of 2 segments, 3 of 4 trials"


def test_align_with_logs_the_report(caplog):
    with caplog.at_level(logging.INFO, logger="bosaris_dask"):
        align(SCORES, KEY, log_missing=True)
    assert "2 of 3 targets, 2 of 4 non-targets" in caplog.text


def test_alignment_report_rejects_wrong_kinds():
    with pytest.raises(TrialError, match="expected a Key or an Ndx"):
        alignment_report(SCORES, SCORES)
    with pytest.raises(TrialError, match="expected Scores"):
        alignment_report(KEY, KEY)


def test_set_missing_to_value_fills_exactly_the_missing_trials(caplog):
    with caplog.at_level(logging.INFO, logger="bosaris_dask"):
        out = set_missing_to_value(SCORES, KEY, -0.5)
    assert "2 of 3 targets" in caplog.text and "filled with -0.5" in caplog.text
    assert out.score_mask.values.tolist() == [
        [True, True, False],
        [True, True, True],
        [True, False, True],
    ]
    score = np.where(out.score_mask.values, out.score.values, np.nan)
    expected = np.array([[4.0, -0.5, np.nan], [2.0, -0.5, 1.0], [-0.5, np.nan, -0.5]])
    np.testing.assert_array_equal(score, expected)
    assert out.score.dtype == np.float64


def test_set_missing_to_value_keeps_float32_and_rejects_nan():
    s32 = make_scores(["m1"], ["s1", "s2"], np.array([[1.5, 0.0]], dtype=np.float32),
                      [[True, False]])  # fmt: skip
    out = set_missing_to_value(s32, make_ndx(["m1"], ["s1", "s2"]), 0.25, log_missing=False)
    assert out.score.dtype == np.float32
    assert out.score.values.tolist() == [[1.5, 0.25]]
    with pytest.raises(TrialError, match="finite"):
        set_missing_to_value(s32, make_ndx(["m1"], ["s1"]), float("nan"))


def test_alignment_report_is_one_pass():
    from dask.callbacks import Callback

    class Count(Callback):
        n = 0

        def _start(self, dsk):
            Count.n += 1

    with Count():
        alignment_report(SCORES, KEY)
    assert Count.n == 1


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.tuples(st.integers(1, 6), st.integers(1, 7)),
    chunks=st.tuples(st.integers(1, 4), st.integers(1, 4)),
)
def test_fill_and_report_invariants(seed, shape, chunks):
    """Filled scores keep every real score, give ``value`` to every other trial, and the
    report's missing count is the number of filled trials (a brute-force count)."""
    rng = np.random.default_rng(seed)
    cls = rng.choice([-1, 0, 1], size=shape)
    smask = rng.random(shape) < 0.6
    values = rng.normal(size=shape)
    models = [f"m{i}" for i in range(shape[0])]
    segments = [f"s{j}" for j in range(shape[1])]
    key = make_key(models, segments, cls, chunks=chunks)
    perm = rng.permutation(shape[0])  # the scores' rows in another order
    scores = make_scores([models[i] for i in perm], segments, values[perm], smask[perm],
                         chunks=chunks[::-1])  # fmt: skip
    out = set_missing_to_value(scores, key, 7.5, log_missing=False)
    np.testing.assert_array_equal(out.score_mask.values, cls != 0)
    np.testing.assert_array_equal(
        out.score.values[cls != 0], np.where(smask, values, 7.5)[cls != 0]
    )
    r = alignment_report(scores, key)
    assert r.targets == int(((cls == 1) & ~smask).sum())
    assert r.nontargets == int(((cls == -1) & ~smask).sum())
    aligned = align(scores, key)
    np.testing.assert_array_equal(aligned.score_mask.values, smask & (cls != 0))
