"""Tests of staging: realigning scores in another id order once (issue 11, item 4) and the
scratch directory of text inputs on clusters (issue 11, item 5)."""

from __future__ import annotations

import logging

import dask
import numpy as np
import pytest
import xarray as xr
from dask.callbacks import Callback

import bosaris_dask as bd
from bosaris_dask.trials import align_with, make_key, make_scores

M, S, ROWS = 400, 30, 10  # 40 chunks of 10 full rows


def _ids(prefix: str, n: int) -> np.ndarray:
    return np.array([f"{prefix}{i:04d}" for i in range(n)], dtype=object)


@pytest.fixture(scope="module")
def trials():
    rng = np.random.default_rng(11)
    models, segments = _ids("m", M), _ids("s", S)
    codes = rng.integers(-1, 2, size=(M, S)).astype(np.int8)
    codes[0, :2] = (1, -1)
    score = np.round(rng.normal(size=(M, S)) + 1.5 * codes, 2)  # ties
    mask = rng.random((M, S)) < 0.97
    mask[codes != 0] = True
    key = make_key(models, segments, codes, chunks=(ROWS, S))
    return models, segments, key, score, mask


class _Count(Callback):
    def __init__(self):
        super().__init__()
        self.tasks = 0

    def _pretask(self, key, dsk, state):
        self.tasks += 1


def _evaluate(scores, key) -> tuple[xr.Dataset, int]:
    with dask.config.set(scheduler="threads"), _Count() as count:
        result = bd.evaluate(scores, key)
    return result, count.tasks


@pytest.mark.parametrize("axes", ["model", "segment", "both"])
def test_scores_in_another_id_order_are_realigned_once(trials, axes, caplog):
    models, segments, key, score, mask = trials
    rng = np.random.default_rng(12)
    pm = rng.permutation(M) if axes in ("model", "both") else np.arange(M)
    ps = rng.permutation(S) if axes in ("segment", "both") else np.arange(S)
    aligned = make_scores(models, segments, score, mask, chunks=(ROWS, S))
    shuffled = make_scores(
        models[pm], segments[ps], score[np.ix_(pm, ps)], mask[np.ix_(pm, ps)], chunks=(ROWS, S)
    )
    expected, base = _evaluate(aligned, key)
    with caplog.at_level(logging.INFO, logger="bosaris_dask.io"):
        got, tasks = _evaluate(shuffled, key)
    xr.testing.assert_identical(got, expected)
    # every pass reads one task per chunk: the graph stays proportional to the chunks
    assert tasks <= 2 * base, (tasks, base)
    realigned = [r for r in caplog.records if "realigned once" in r.getMessage()]
    assert len(realigned) == (axes != "segment")  # one chunk across: reordered in place


def test_realigned_scores_with_missing_and_extra_ids(trials):
    models, segments, key, score, mask = trials
    keep = np.r_[M - 1 : 150 : -1, 3:100]  # reversed, with 51 models of the key missing
    extra = np.array(["x1", "x2"], dtype=object)
    ids = np.concatenate([models[keep], extra])
    values = np.vstack([score[keep], np.ones((2, S))])
    shuffled = make_scores(ids, segments, values, np.vstack([mask[keep], np.ones((2, S), bool)]))
    shuffled = shuffled.chunk({"model": 25})
    lazy = align_with(shuffled, key)  # by default nothing is computed: a lazy reindex
    assert not any(name.startswith("realigned-") for name in lazy.score.data.dask.layers)
    aligned = align_with(shuffled, key, once=True)
    assert aligned.model.values.tolist() == models.tolist()
    assert aligned.score.data.npartitions == M // ROWS
    present = np.isin(np.arange(M), keep)
    want_mask = np.where(present[:, None], mask, False)
    assert aligned.score_mask.values.tolist() == want_mask.tolist()
    assert aligned.score.values.tolist() == np.where(present[:, None], score, 0).tolist()
    xr.testing.assert_identical(aligned.compute(), lazy.compute())
    with pytest.raises(bd.errors.MissingTrialsError):
        bd.evaluate(shuffled, key)
