"""Tests of the synthetic score sets (bosaris_dask.simulate)."""

from __future__ import annotations

import dask
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import minimize
from scipy.stats import kurtosis, rankdata

from bosaris_dask.errors import TrialError
from bosaris_dask.simulate import (
    CHUNK_BYTES,
    SystemSpec,
    default_systems,
    simulate,
)
from bosaris_dask.simulate.graph import _chunks
from bosaris_dask.simulate.model import _target_pairs
from bosaris_dask.trials import is_label_key, kind_of


@pytest.fixture(scope="module")
def medium():
    """300 x 400 trials, 1% targets (1200), three default systems, as numpy arrays."""
    key, scores = simulate(300, 400, target_rate=0.01, seed=5)
    tar = key.trial_mask.values == 1
    return tar, [s.score.values.astype(np.float64) for s in scores]


def _auc(x: np.ndarray, tar: np.ndarray) -> float:
    """Probability that a target outscores a non-target (ties count half), from ranks."""
    r = rankdata(x.ravel())
    t = tar.ravel()
    n_tar, n_non = int(t.sum()), int((~t).sum())
    return float((r[t].sum() - n_tar * (n_tar + 1) / 2) / (n_tar * n_non))


def _cllr(x: np.ndarray, tar: np.ndarray) -> float:
    """Cllr (bits) of scores taken as LLRs."""
    return float(
        0.5 * (np.logaddexp(0, -x[tar]).mean() + np.logaddexp(0, x[~tar]).mean()) / np.log(2)
    )


# --------------------------------------------------------------------------------------------
# structure
# --------------------------------------------------------------------------------------------


def test_ids_labels_kinds_and_masks():
    key, scores = simulate(7, 9, systems=2, target_rate=0.25, seed=3)
    assert kind_of(key) == "key" and is_label_key(key)
    assert key.model.values.tolist() == [f"m{i:06d}" for i in range(1, 8)]
    assert key.segment.values.tolist() == [f"s{j:06d}" for j in range(1, 10)]
    labels = set(key.model_label.values) | set(key.segment_label.values)
    assert labels <= {f"spk{k:05d}" for k in range(1, 5)}
    # the mask is what the labels say (brute force)
    expected = np.where(key.model_label.values[:, None] == key.segment_label.values[None, :], 1, -1)
    np.testing.assert_array_equal(key.trial_mask.values, expected)
    assert len(scores) == 2
    for s in scores:
        assert kind_of(s) == "scores"
        assert s.score.dims == ("model", "segment") and s.score.shape == (7, 9)
        assert s.model.values.tolist() == key.model.values.tolist()
        assert s.segment.values.tolist() == key.segment.values.tolist()
        assert bool(s.score_mask.values.all())
        assert np.isfinite(s.score.values).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, "float32", "f8"])
def test_dtype(dtype):
    _, scores = simulate(5, 6, dtype=dtype)
    assert all(s.score.dtype == np.dtype(dtype) for s in scores)
    assert all(s.score.values.dtype == np.dtype(dtype) for s in scores)


def test_float64_scores_also_separate():
    key, scores = simulate(40, 60, target_rate=0.05, dtype=np.float64, seed=2)
    tar = key.trial_mask.values == 1
    for s in scores:
        x = s.score.values
        assert x[tar].mean() > x[~tar].mean() + 2 * x[~tar].std()


def test_default_chunks():
    key, scores = simulate(31623, 31623)  # builds a 1e9-trial graph, computes nothing
    assert scores[0].score.data.chunks[0][:2] == (530, 530)
    assert scores[0].score.data.chunks[1] == (31623,)
    assert key.trial_mask.data.chunks == scores[0].score.data.chunks
    _, scores64 = simulate(31623, 100, dtype=np.float64)
    assert scores64[0].score.data.chunks == ((31623,), (100,))
    # a row that does not fit in one chunk: square-ish chunks of at most CHUNK_BYTES
    rows, cols = _chunks((10_000, 10**8), np.dtype(np.float32), None)
    assert rows[0] * cols[0] * 4 <= CHUNK_BYTES and rows[0] * cols[0] * 4 > CHUNK_BYTES // 2
    assert sum(rows) == 10_000 and sum(cols) == 10**8


def test_given_chunks_are_shared_by_key_and_scores():
    key, scores = simulate(20, 30, chunks=(6, 7))
    assert key.trial_mask.data.chunks == ((6, 6, 6, 2), (7, 7, 7, 7, 2))
    assert all(s.score.data.chunks == key.trial_mask.data.chunks for s in scores)
    with pytest.raises(TrialError, match="chunks"):
        simulate(20, 30, chunks=((5, 5), (30,)))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"models": 0},
        {"segments": -3},
        {"models": 2.5},
        {"models": True},
        {"target_rate": 0.0},
        {"target_rate": 1.5},
        {"target_rate": float("nan")},
        {"seed": -1},
        {"seed": 1.5},
        {"systems": 0},
        {"systems": []},
        {"systems": ["not a spec"]},
        {"dtype": np.int32},
        {"dtype": np.float16},
    ],
)
def test_bad_arguments_raise_trial_error(kwargs):
    args = {"models": 4, "segments": 5} | kwargs
    with pytest.raises(TrialError):
        simulate(args.pop("models"), args.pop("segments"), **args)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"shared": 1.5},
        {"shared": -0.1},
        {"scale": 0.0},
        {"target_width": -1.0},
        {"separation": float("inf")},
        {"outlier_rate": 2.0},
        {"decimals": -1},
        {"decimals": 2.5},
    ],
)
def test_bad_system_spec_raises_trial_error(kwargs):
    with pytest.raises(TrialError):
        SystemSpec(**({"separation": 3.0} | kwargs))


# --------------------------------------------------------------------------------------------
# determinism and laziness
# --------------------------------------------------------------------------------------------


def test_same_seed_same_values_other_seed_other_values():
    key_a, a = simulate(23, 31, seed=11, chunks=(10, 13))
    key_b, b = simulate(23, 31, seed=11, chunks=(10, 13))
    key_c, c = simulate(23, 31, seed=12, chunks=(10, 13))
    np.testing.assert_array_equal(key_a.model_label.values, key_b.model_label.values)
    np.testing.assert_array_equal(key_a.segment_label.values, key_b.segment_label.values)
    assert (key_a.segment_label.values != key_c.segment_label.values).any()
    for x, y, z in zip(a, b, c, strict=True):
        np.testing.assert_array_equal(x.score.values, y.score.values)
        assert x.score.data.name == y.score.data.name  # deterministic graph keys
        assert x.score.data.name != z.score.data.name
        assert np.mean(x.score.values != z.score.values) > 0.99


def test_system_values_do_not_depend_on_the_number_of_systems():
    _, one = simulate(15, 17, systems=1, seed=4)
    _, three = simulate(15, 17, systems=3, seed=4)
    np.testing.assert_array_equal(one[0].score.values, three[0].score.values)


def test_values_do_not_depend_on_scheduler_or_block_order():
    key, scores = simulate(30, 41, chunks=(7, 11), seed=9)
    for s in scores:
        arr = s.score.data
        with dask.config.set(scheduler="threads"):
            threaded = arr.compute()
        with dask.config.set(scheduler="synchronous"):
            sync = arr.compute()
            # every block on its own, last block first
            rebuilt = np.empty(arr.shape, dtype=arr.dtype)
            starts = [np.cumsum((0,) + c[:-1]) for c in arr.chunks]
            for bi in reversed(range(arr.numblocks[0])):
                for bj in reversed(range(arr.numblocks[1])):
                    r0, c0 = starts[0][bi], starts[1][bj]
                    r, c = arr.chunks[0][bi], arr.chunks[1][bj]
                    rebuilt[r0 : r0 + r, c0 : c0 + c] = arr.blocks[bi, bj].compute()
            # a slice computes only the blocks it needs, with the same values
            part = arr[8:20, 30:41].compute()
        np.testing.assert_array_equal(threaded, sync)
        np.testing.assert_array_equal(rebuilt, sync)
        np.testing.assert_array_equal(part, sync[8:20, 30:41])


def test_building_the_graph_computes_nothing():
    def refuse(*args, **kwargs):
        raise AssertionError("simulate computed something while building its graph")

    with dask.config.set(scheduler=refuse):
        key, scores = simulate(200, 300, chunks=(50, 70), seed=1)
        _ = [s.score.data for s in scores], key.trial_mask.data
    with pytest.raises(AssertionError, match="computed"), dask.config.set(scheduler=refuse):
        scores[0].score.sum().compute()


# --------------------------------------------------------------------------------------------
# the key: targets
# --------------------------------------------------------------------------------------------


def test_target_fraction_exact_when_speakers_divide_both_sizes():
    key, _ = simulate(400, 500, target_rate=0.01, seed=0)
    assert int((key.trial_mask.values == 1).sum()) == 400 * 500 // 100
    # every model has targets: 5 segments of its speaker
    np.testing.assert_array_equal((key.trial_mask.values == 1).sum(axis=1), 5)


@pytest.mark.parametrize(("m", "s", "rate"), [(333, 517, 0.02), (250, 1001, 0.004)])
def test_target_fraction_close_to_rate(m, s, rate):
    key, _ = simulate(m, s, target_rate=rate, seed=7)
    frac = float((key.trial_mask.values == 1).mean())
    assert abs(frac - rate) < 0.03 * rate


def test_fewer_models_than_speakers_still_gives_targets():
    key, _ = simulate(10, 1000, target_rate=0.005, seed=1)  # 200 speakers, 5 segments each
    np.testing.assert_array_equal((key.trial_mask.values == 1).sum(axis=1), 5)


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(np.int64, st.integers(0, 12), elements=st.integers(0, 5)),
    hnp.arrays(np.int64, st.integers(0, 15), elements=st.integers(0, 5)),
)
def test_target_pairs_equal_brute_force(mcode, scode):
    rows, cols = _target_pairs(mcode, scode)
    expected = np.nonzero(mcode[:, None] == scode[None, :])  # row-major order
    np.testing.assert_array_equal(rows, expected[0])
    np.testing.assert_array_equal(cols, expected[1])


# --------------------------------------------------------------------------------------------
# realism
# --------------------------------------------------------------------------------------------


def test_targets_outscore_nontargets_and_quality_is_ordered(medium):
    tar, xs = medium
    assert tar.sum() == 1200
    aucs = [_auc(x, tar) for x in xs]
    for x, auc in zip(xs, aucs, strict=True):
        assert x[tar].mean() > x[~tar].mean() + 1.5 * x[~tar].std()
        assert 0.9 < auc < 0.999  # good but not perfect systems
    assert aucs[0] > aucs[1] > aucs[2]
    specs = default_systems(3)
    assert specs[0].separation > specs[1].separation > specs[2].separation


def test_systems_are_correlated_but_not_identical(medium):
    tar, xs = medium
    corr = np.corrcoef([x[~tar] for x in xs])
    off_diagonal = corr[np.triu_indices(3, 1)]
    assert (off_diagonal > 0.3).all() and (off_diagonal < 0.8).all()


def test_shared_weight_sets_the_correlation():
    common = {"outlier_rate": 0.0, "scale": 1.0}
    specs = [SystemSpec(3.0, shared=w, **common) for w in (1.0, 1.0, 0.0, 0.0)]
    key, scores = simulate(100, 120, systems=specs, target_rate=0.01, seed=2)
    non = key.trial_mask.values == -1
    x = [s.score.values[non] for s in scores]
    assert np.corrcoef(x[0], x[1])[0, 1] > 0.9  # only the private offsets differ
    assert abs(np.corrcoef(x[2], x[3])[0, 1]) < 0.25  # only the offsets are shared


def test_heavier_than_gaussian_tails(medium):
    tar, xs = medium
    for x in xs:
        assert kurtosis(x[~tar], fisher=False) > 3.5


def test_outliers_add_tail_mass():
    specs = [SystemSpec(3.0, outlier_rate=0.0), SystemSpec(3.0, outlier_rate=0.02)]
    key, scores = simulate(100, 150, systems=specs, seed=3)
    non = key.trial_mask.values == -1
    k0, k1 = (kurtosis(s.score.values[non], fisher=False) for s in scores)
    assert k1 > k0 + 1


def test_model_offsets_are_a_real_effect(medium):
    tar, xs = medium
    for x in xs:
        non = np.where(tar, np.nan, x)
        row_means = np.nanmean(non, axis=1)
        within = np.nanmean(np.nanvar(non, axis=1))
        assert row_means.var() > 5 * within / non.shape[1]  # vs. iid trials with no offsets


def test_scores_are_miscalibrated(medium):
    """An affine calibration ``a*s + b`` improves Cllr a lot: the scores are not LLRs."""
    tar, xs = medium
    for x in xs:

        def objective(ab, x=x):
            return _cllr(ab[0] * x + ab[1], tar)

        x0 = np.array([1.0 / x[~tar].std(), -x[~tar].mean() / x[~tar].std()])
        best = minimize(objective, x0, method="Nelder-Mead").fun
        assert _cllr(x, tar) > best + 0.1
        assert best < 0.35  # a good system once calibrated


def test_ties_in_the_rounded_system(medium):
    tar, xs = medium
    assert default_systems(3)[2].decimals == 3
    rounded = xs[2]
    q = rounded * 1000
    np.testing.assert_allclose(q, np.rint(q), atol=1e-3)
    assert np.unique(rounded).size < 0.1 * rounded.size  # many ties
    assert np.unique(xs[1]).size > 0.9 * xs[1].size  # the others are continuous
    key, scores = simulate(20, 30, systems=[SystemSpec(3.0, decimals=0)])
    np.testing.assert_array_equal(scores[0].score.values, np.rint(scores[0].score.values))


def test_nontargets_in_a_realistic_range(medium):
    tar, xs = medium
    lo, hi = (np.percentile(xs[1][~tar], q) for q in (0.1, 99.9))
    assert -1 < lo and hi < 1  # cosine-like
    for x in xs:
        assert np.percentile(x[~tar], 99.9) < np.percentile(x[tar], 90)


def test_a_rate_that_makes_every_trial_a_target_is_refused():
    # a rate above 2/3 gave round(1/rate) = 1 speaker: a key of targets only, silently
    with pytest.raises(TrialError, match=r"target_rate 0.7: every trial would be a target.*"
                       r"round\(1/0.7\) = 1 speaker"):  # fmt: skip
        simulate(50, 60, target_rate=0.7)
    with pytest.raises(TrialError, match="1 x 1 trials of one speaker"):
        simulate(1, 1, target_rate=0.005)
    key, _ = simulate(2, 3, target_rate=1.0)  # asked for
    assert (key.trial_mask.values == 1).all()


def test_the_cli_says_a_rate_it_cannot_make_and_keeps_no_stale_systems(tmp_path, capsys):
    from bosaris_dask.cli import main

    out = tmp_path / "st"
    argv = ["simulate", "--n-models", "50", "--n-segments", "60", "--out-dir", str(out), "-q"]
    assert main([*argv, "--target-rate", "0.4"]) == 0  # round(1/0.4) = 2 speakers: 0.5
    err = capsys.readouterr().err
    assert "warning: the target rate is 0.5, not the 0.4 asked (1,500 targets in 3,000" in err
    assert "to round(1/0.4) = 2 speakers: with equal shares, a rate of 1/2" in err
    assert main([*argv, "--n-models", "300", "--n-segments", "300"]) == 0  # the default 0.005
    err = capsys.readouterr().err  # 200 speakers: 100 of 2 x 2 ids, 100 of 1 x 1
    assert "the target rate is 0.005556, not the 0.005 asked (500 targets in 90,000 trials)" in err
    assert "unequal shares unless the models or the segments are multiples of 200" in err
    assert main([*argv, "--target-rate", "0.02"]) == 0
    assert "warning" not in capsys.readouterr().err  # 50 speakers, one model each: 0.02
    before = sorted(p.name for p in out.iterdir())
    # a second run of fewer systems left the first run's system-2/3 beside the new key, which
    # evaluated (at chance) as its systems
    assert main([*argv, "--systems", "1", "--seed", "5"]) == 1
    assert "st holds system-2.zarr, system-3.zarr of an earlier run" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == before  # nothing written
