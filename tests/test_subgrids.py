"""Strided reads of computed score arrays (``bosaris_dask.passes.subgrids``): a strided part of a
block of scores from embeddings (raw, Z/T/S/AS-normalized) equals the same slice of the whole block,
bit for bit, is computed from those rows and columns alone, and the adaptive pass 1's sample
(and so the evaluation) is the same as slicing whole blocks gives."""

from __future__ import annotations

import dask
import numpy as np
import pytest
import xarray as xr

from bosaris_dask import metrics
from bosaris_dask.embeddings import from_arrays, scores_from_embeddings
from bosaris_dask.embeddings.scoring import outer_blocks
from bosaris_dask.inputs import pass_inputs
from bosaris_dask.passes import pass1_bins, subgrids
from bosaris_dask.trials import key_from_labels
from bosaris_dask.trials.labels import label_mask


def _data(n_e: int, n_t: int, d: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    lab_e, lab_t = np.arange(n_e) % 5, rng.integers(0, 5, size=n_t)
    centres = rng.normal(size=(5, d))
    e = centres[lab_e] + rng.normal(size=(n_e, d))
    t = centres[lab_t] + rng.normal(size=(n_t, d))
    e_ids, t_ids = [f"e{i}" for i in range(n_e)], [f"t{i}" for i in range(n_t)]
    key = key_from_labels(e_ids, lab_e, t_ids, lab_t)
    return from_arrays(e_ids, e.astype(np.float32)), from_arrays(t_ids, t.astype(np.float32)), key


@pytest.mark.parametrize("norm", ["none", "z", "t", "s", "as"])
def test_a_strided_block_equals_the_slice_of_the_whole_block(norm):
    e, t, key = _data(70, 90, 12)
    cohort = _data(40, 1, 12, seed=4)[0]
    cohort = cohort.assign_coords(id=[f"c{i}" for i in range(40)])  # ids of its own
    extra = {} if norm == "none" else {"norm": norm, "cohort": cohort}
    if norm == "as":
        extra["top_n"] = 7
    scores = scores_from_embeddings(e, t, trials=key, chunks=(30, 40), **extra)["score"].data
    assert subgrids.reader_of(scores) is not None  # the embeddings' strided reader
    rng = np.random.default_rng(0)
    for _ in range(12):
        i, j = int(rng.integers(scores.numblocks[0])), int(rng.integers(scores.numblocks[1]))
        rs, cs = int(rng.integers(1, 12)), int(rng.integers(1, 15))
        got = subgrids.reader_of(scores)(i, j, rs, cs)  # the reader itself, no fallback
        want = scores.blocks[i, j].compute()[::rs, ::cs]
        assert got.shape == want.shape and got.dtype == want.dtype == np.float32
        assert np.array_equal(got.compute(), want)  # bit for bit (no NaN in scores)


def test_a_strided_block_of_a_label_key_equals_the_slice():
    rng = np.random.default_rng(1)
    labels_m = rng.choice(np.array(["a", "b", "c", None], dtype=object), 50)
    labels_s = rng.choice(np.array(["a", "b", "d", None], dtype=object), 70)
    mask = label_mask(labels_m, labels_s, (16, 20))
    assert subgrids.reader_of(mask) is not None
    for i, j, rs, cs in [(0, 0, 1, 1), (1, 2, 3, 7), (3, 3, 2, 5)]:
        got = subgrids.reader_of(mask)(i, j, rs, cs).compute()
        want = mask.blocks[i, j].compute()[::rs, ::cs]
        assert got.dtype == want.dtype == np.int8 and np.array_equal(got, want)
    assert {-1, 0, 1} <= set(np.unique(mask.compute()).tolist())


def test_a_strided_block_computes_only_its_pairs():
    pairs = []

    def counted(a, b):
        pairs.append(a.shape[0] * b.shape[0])
        return (a @ b.T).astype(np.float32)

    rows = dask.array.from_array(np.arange(40.0).reshape(20, 2), chunks=(10, 2))
    cols = dask.array.from_array(np.ones((30, 2)), chunks=(15, 2))
    m = outer_blocks(counted, rows, cols)
    got = subgrids.strided(m, 1, 0, 3, 4).compute()
    assert pairs == [4 * 4]  # rows 10, 13, 16, 19 of block 1; columns 0, 4, 8, 12
    np.testing.assert_array_equal(got, m.compute()[10:20:3, 0:15:4])
    pairs.clear()
    transformed = m + 0  # another array: sliced, so the whole block is computed
    subgrids.strided(transformed, 1, 0, 3, 4).compute()
    assert pairs == [10 * 15]


def test_the_adaptive_sample_and_evaluation_are_those_of_whole_blocks(monkeypatch):
    e, t, key = _data(300, 260, 16)
    scores = scores_from_embeddings(e, t, trials=key, chunks=(64, 64))
    inputs, _ = pass_inputs([scores], key)
    assert all(subgrids.reader_of(a) is not None for a in inputs[:2])
    monkeypatch.setattr(pass1_bins, "SAMPLE_TRIALS", 1000)  # every 5th row of a block
    knobs = {"bosaris_dask.adaptive-bins": 2}

    def run():
        with dask.config.set(knobs):
            ((keys, tar),) = pass1_bins._sample_keys(inputs, 1, pass1_bins.SAMPLE_TRIALS)
            return keys, tar, metrics.evaluate(scores, key, sweep=np.linspace(-2, 2, 11))

    keys, tar, ds = run()
    with monkeypatch.context() as mp:  # every sample read by slicing whole blocks
        mp.setattr(subgrids, "strided", lambda a, i, j, r, c: a.blocks[i, j][::r, ::c])
        keys0, tar0, ds0 = run()
    assert 500 < len(keys) < 64 * 64
    np.testing.assert_array_equal(keys, keys0)
    np.testing.assert_array_equal(tar, tar0)
    xr.testing.assert_identical(ds, ds0)
