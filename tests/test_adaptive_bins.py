"""Adaptive pass-1 bins (issue 16): key prefixes of lengths fitted to a sample of the scores.

The map changes only how pass 1 bins the trials, so the number of passes: every exact metric
is the same, bit for bit, with the map on and off, and equals the brute-force reference.
"""

from __future__ import annotations

import threading

import dask
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bosaris_dask import engine, metrics
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.keys import order_keys
from bosaris_dask.trials import make_key, make_scores

from .test_engine import BLOCKS, PLO, _assert_exact, _objects, _split, trial_sets

#: Outputs that are exact order statistics (the rest, e.g. the ROC points of the bin edges, the
#: AUC bounds and a threshold somewhere in the gap before the minDCF operating point, describe
#: the bins themselves, and so vary with them, as they vary with ``coarse_bits``).
EXACT = ("min_dcf", "min_dcf_raw", "min_pmiss", "min_pfa", "act_dcf", "act_dcf_raw",
         "act_pmiss", "act_pfa", "eer", "prbep", "cllr", "min_cllr")  # fmt: skip


@st.composite
def key_samples(draw):
    """Float keys with ties, extremes, zeros and subnormals, and a budget of bins."""
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float64])))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(1, 3000))
    x = rng.normal(size=n) * draw(st.sampled_from([1e-3, 1.0, 1e6]))
    ties = draw(st.sampled_from([None, 1, 16]))
    if ties:
        x = np.round(x * ties) / ties
    info = np.finfo(dtype)
    specials = np.array([0.0, -0.0, info.max, -info.max, info.tiny / 4, -info.tiny / 4])
    x = np.concatenate([x, specials[: draw(st.integers(0, len(specials)))]]).astype(dtype)
    is_target = rng.random(x.size) < draw(st.sampled_from([0.0, 0.01, 0.5]))
    return dtype, order_keys(x), is_target, draw(st.integers(6, 14))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=key_samples(), with_classes=st.booleans())
def test_bins_tile_the_keys_in_order(data, with_classes):
    dtype, sample, is_target, budget = data
    width = dtype.itemsize * 8
    m = BinMap.from_sample(sample, width, budget, is_target if with_classes else None)
    assert m.adaptive and m.nbins <= 2**budget
    # every bin, in order, starts where the one before ends: they tile [0, 2**width)
    lo, bits = m.bin_lo_bits(np.arange(m.nbins))
    ends = [int(a) + 2 ** int(b) for a, b in zip(lo.tolist(), bits.tolist(), strict=True)]
    assert int(lo[0]) == 0 and ends[-1] == 2**width
    assert [int(a) for a in lo[1:].tolist()] == ends[:-1]
    # each key falls in the bin whose range holds it, from the vectorized look-up too
    keys = np.sort(np.concatenate([sample, np.array([0, 2**width - 1], dtype=sample.dtype)]))
    got = m.bin_of(keys)
    for k, b in zip(keys.tolist(), got.tolist(), strict=True):
        assert int(lo[b]) <= k < ends[b]
    out, bucket, shifts = np.empty(len(keys), np.intp), np.empty(len(keys), np.intp), keys.copy()
    np.testing.assert_array_equal(m.bins_into(keys, out, bucket, shifts), got)


def test_dense_buckets_get_more_bins_and_ties_no_more_than_they_need():
    rng = np.random.default_rng(0)
    dense = order_keys(rng.normal(size=20_000).astype(np.float32))
    tied = order_keys(np.full(20_000, 3.0, dtype=np.float32))
    m = BinMap.from_sample(np.concatenate([dense, tied]), 32, 20)
    bucket = lambda x, top=16: int(order_keys(np.float32(x)) >> (32 - top))  # noqa: E731
    assert m.extra[bucket(1.0)] > m.extra[bucket(2.5)] > m.extra[bucket(30.0)] == 0
    # 20,000 ties and a few other keys: 16 bins per distinct key at most, not 2**16 bins
    keys = np.concatenate([dense, tied])
    distinct = len(np.unique(keys[keys >> 16 == bucket(3.0)]))
    assert 2 ** int(m.extra[bucket(3.0)]) <= 16 * 2 ** int(np.ceil(np.log2(distinct)))
    # with classes, the budget goes where both classes meet
    x = rng.normal(size=20_000).astype(np.float32)
    is_target = x > 0.5 + rng.normal(size=x.size)  # no targets far below 0.5
    only = BinMap.from_sample(order_keys(x), 32, 14)
    mixed = BinMap.from_sample(order_keys(x), 32, 14, is_target)
    assert mixed.extra[bucket(-1.5, 10)] < only.extra[bucket(-1.5, 10)]
    assert mixed.extra[bucket(0.7, 10)] > only.extra[bucket(0.7, 10)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=trial_sets(), coarse=st.sampled_from([6, 8, 12]), dense=st.booleans(),
    keep=st.booleans(), blocks=st.sampled_from(BLOCKS), split_every=st.integers(2, 5),
)  # fmt: skip
def test_summary_is_exact_with_adaptive_bins(data, coarse, dense, keep, blocks, split_every):
    values, mask, scored, chunks = data
    key, scores = _objects(values, mask, scored, chunks)
    tar, non = _split(values, mask, scored)
    with dask.config.set({
        "bosaris_dask.adaptive-bins": 2,
        "bosaris_dask.raw-limit": 0 if dense else 1 << 22,
        "bosaris_dask.dense-budget": 64,
        "bosaris_dask.keep-limit": 1 << 24 if keep else 0,
        "bosaris_dask.block": blocks[0],
        "bosaris_dask.slice": blocks[1],
    }):  # fmt: skip
        (summary,) = engine.summarize(
            [scores], key, thresholds=-PLO, split_every=split_every, coarse_bits=coarse,
            allow_missing=True,
        )  # fmt: skip
    _assert_exact(summary, tar, non)


def _dense_case(dtype, seed=16):
    """Scores packed into a narrow range: many trials per fixed pass-1 bin."""
    rng = np.random.default_rng(seed)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(200, 300), p=[0.9, 0.1])
    values = (rng.normal(size=mask.shape) * 0.01 + 1 + 0.015 * mask).astype(dtype)
    if seed % 2:  # heavy ties
        values = (np.round(values * 2000) / 2000).astype(dtype)
    key = make_key(range(200), range(300), mask, chunks=(50, 100))
    return key, make_scores(range(200), range(300), values, chunks=(50, 100)), values, mask


#: Budgets scaled down with the trials (60,000 here): the kept trials, the exact keys pulled,
#: the sub-bins of a dense refinement.
SCALED = {"bosaris_dask.keep-limit": 8000, "bosaris_dask.raw-limit": 500,
          "bosaris_dask.dense-budget": 2048}  # fmt: skip


def _reads(scores, key):
    """Evaluate, counting the scheduler calls and how often each score chunk is read."""
    reads: dict[tuple[int, ...], int] = {}
    lock = threading.Lock()
    computes = []

    def count(block, block_id=None):
        if isinstance(block_id, tuple):
            with lock:
                reads[block_id] = reads.get(block_id, 0) + 1
        return block

    def counting_get(dsk, keys, **kwargs):
        computes.append(keys)
        return dask.get(dsk, keys, **kwargs)

    data = scores.score.data.map_blocks(count, dtype=scores.score.dtype)
    counted = scores.copy(data={"score": data, "score_mask": scores.score_mask.data})
    with dask.config.set(scheduler=counting_get):
        ds = metrics.evaluate(counted, key)
    return ds, reads, len(computes)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_scores_take_two_passes_with_adaptive_bins(dtype):
    key, scores, _, _ = _dense_case(dtype)
    with dask.config.set({**SCALED, "bosaris_dask.adaptive-bins": 0}):
        fixed, fixed_reads, _ = _reads(scores, key)
    with dask.config.set(SCALED):  # the default: adaptive, as the trials exceed keep-limit
        adaptive, reads, computes = _reads(scores, key)
    assert fixed.attrs["passes"] >= 3 and set(fixed_reads.values()) == {fixed.attrs["passes"]}
    # two passes over every chunk, and a sample of every few rows of one chunk of the 12 (the
    # scheduler calls: the sample, pass 1, pass 2 keeping the candidates, and any later rounds
    # on the kept trials alone)
    assert adaptive.attrs["passes"] == 2 and computes >= 3
    assert sorted(reads.values()) == [2] * 11 + [3]
    for name in EXACT:
        np.testing.assert_array_equal(adaptive[name].values, fixed[name].values, err_msg=name)


@pytest.mark.parametrize("dtype, seed", [(np.float32, 16), (np.float32, 17), (np.float64, 17)])
def test_adaptive_and_fixed_bins_give_the_same_metrics(dtype, seed):
    key, scores, values, mask = _dense_case(dtype, seed)
    out = {}
    for mode in (0, 2):
        with dask.config.set({**SCALED, "bosaris_dask.adaptive-bins": mode}):
            out[mode] = metrics.evaluate(scores, key, priors=(0.5, 0.01), sweep=PLO)
    for name in EXACT:
        np.testing.assert_array_equal(out[2][name].values, out[0][name].values, err_msg=name)
    # and both are the exact values of the scores
    truth = metrics.evaluate_arrays(values[mask == 1], values[mask == -1], priors=(0.5, 0.01),
                                    sweep=PLO)  # fmt: skip
    for name in ("min_dcf", "act_dcf", "eer", "min_cllr"):
        np.testing.assert_array_equal(out[2][name].values, truth[name].values, err_msg=name)


def test_adaptive_bins_switch_off_and_refuse_bad_values():
    key, scores, _, _ = _dense_case(np.float32)
    with dask.config.set({**SCALED, "bosaris_dask.adaptive-bins": 0}):
        ds, reads, _ = _reads(scores, key)
    assert set(reads.values()) == {ds.attrs["passes"]}  # no sample read
    with (
        dask.config.set({"bosaris_dask.adaptive-bins": 3}),
        pytest.raises(ValueError, match=r"bosaris_dask.adaptive-bins must be an integer from 0"),
    ):
        engine.summarize([scores], key)


def test_a_map_travels_without_its_tables():
    import pickle

    keys = order_keys(np.random.default_rng(2).normal(size=5000))
    m = BinMap.from_sample(keys, 64, 20, keys > keys[10])
    bins = m.bin_of(keys)  # builds the look-up tables
    size = len(pickle.dumps(m))
    assert size < 2**16 + 1000  # the 65,536 extra bits, not the 512 kB tables
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m)).bin_of(keys), bins)


def test_a_sample_without_trials_falls_back_to_uniform_bins():
    key, scores, values, mask = _dense_case(np.float64)
    mask = mask.copy()
    mask[:50, :100] = 0  # the one chunk the sample reads holds no trial
    key = make_key(range(200), range(300), mask, chunks=(50, 100))
    with dask.config.set({**SCALED, "bosaris_dask.adaptive-bins": 2}):
        (s,) = engine.summarize([scores], key, thresholds=-PLO)
    _assert_exact(s, values[mask == 1], values[mask == -1])
