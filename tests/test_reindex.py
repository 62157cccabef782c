"""Reindexing a small trial object onto a large grid of other ids stays in few chunks.

xarray's lazy reindex split 2 x 2 scores aligned to a 508 x 500 key into a chunk per run of
indices (250 times the key's chunks): a fit's first pass over 800 trials took 2 minutes.
"""

from __future__ import annotations

import numpy as np
import pytest

from bosaris_dask.progress import compute
from bosaris_dask.trials import align, make_key, make_scores, operations, reindex_ids


def _key(n_m: int, n_s: int, chunks=(100, 100)):
    rng = np.random.default_rng(0)
    mask = rng.choice([-1, 0, 1], size=(n_m, n_s))
    return make_key([f"m{i}" for i in range(n_m)], [f"s{j}" for j in range(n_s)], mask,
                    chunks=chunks)  # fmt: skip


def test_small_scores_on_a_large_key_keep_the_keys_chunks():
    key = _key(508, 500)
    scores = make_scores(["m3", "zz"], ["s7", "s499"], [[1.5, 2.5], [3.5, 4.5]])
    out = align(scores, key)
    assert out.score.data.chunks == key.trial_mask.data.chunks
    score, given = compute((out.score.data, out.score_mask.data))
    want = np.zeros((508, 500))
    want[3, 7], want[3, 499] = 1.5, 2.5
    np.testing.assert_array_equal(score, want)
    trials = key.trial_mask.values != 0
    np.testing.assert_array_equal(given, (want != 0) & trials)


@pytest.mark.parametrize("small", [True, False])
def test_the_gather_equals_xarrays_reindex(monkeypatch, small):
    # the same cells either way (the gather is taken for sources up to SMALL_SOURCE_CELLS)
    if not small:
        monkeypatch.setattr(operations, "SMALL_SOURCE_CELLS", 0)
    rng = np.random.default_rng(1)
    scores = make_scores([f"m{i}" for i in range(7)], [f"s{j}" for j in range(9)],
                         rng.normal(size=(7, 9)), rng.random((7, 9)) < 0.7)  # fmt: skip
    models = ["m6", "x", "m0", "m3", "y"]
    segments = ["s8", "s1", "z", "s0"]
    out = reindex_ids(scores, models, segments)
    ref = scores.to_dataframe().reset_index().set_index(["model", "segment"])
    for i, m in enumerate(models):
        for j, s in enumerate(segments):
            if (m, s) in ref.index:
                row = ref.loc[(m, s)]
                assert out.score.values[i, j] == row.score
                assert out.score_mask.values[i, j] == row.score_mask
            else:
                assert out.score.values[i, j] == 0.0 and not out.score_mask.values[i, j]
    assert out.score.dtype == scores.score.dtype and out.score_mask.dtype == bool
