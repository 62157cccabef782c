"""The engine's summaries equal brute-force references under every chunking and merge tree."""

from __future__ import annotations

import threading

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import expit, logit

from bosaris_dask import engine, measures, metrics, roc
from bosaris_dask.errors import MissingTrialsError, OptionError, ScoreError, TrialError
from bosaris_dask.inputs import pass_inputs
from bosaris_dask.passes import kernels, refine_kernels, refinement
from bosaris_dask.passes.keys import key_bits, order_keys
from bosaris_dask.trials import key_from_labels, make_key, make_scores

from . import reference as ref

PLO = np.array([-6.9, -4.6, -2.2, 0.0, 1.3, 3.0])


def _chunks(draw, n: int) -> tuple[int, ...]:
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=min(4, n - 1)))) if n > 1 else []
    edges = [0, *cuts, n]
    return tuple(b - a for a, b in zip(edges[:-1], edges[1:], strict=True))


@st.composite
def trial_sets(draw):
    """Random key, scores (with ties), score mask and chunking."""
    n_m, n_s = draw(st.integers(1, 9)), draw(st.integers(2, 16))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    ties = draw(st.sampled_from([1, 4, 64, None]))  # few distinct values .. all distinct
    raw = rng.normal(size=(n_m, n_s)) * draw(st.sampled_from([0.01, 1.0, 1e4]))
    values = np.round(raw * ties) / ties if ties else raw
    mask = rng.choice(np.array([-1, 0, 1], dtype=np.int8), size=(n_m, n_s), p=[0.6, 0.15, 0.25])
    values = (values + (mask == 1) * draw(st.sampled_from([0.0, 1.0]))).astype(dtype)
    scored = rng.random((n_m, n_s)) > 0.1
    mask[0, 0], mask[-1, -1] = 1, -1  # at least one of each
    scored[0, 0] = scored[-1, -1] = True
    if n_m * n_s > 4 and draw(st.booleans()):
        values[~scored] = np.inf  # what a BOSARIS text read leaves where there is no score
    chunks = (_chunks(draw, n_m), _chunks(draw, n_s))
    return values, mask, scored, chunks


def _objects(values, mask, scored, chunks):
    models = [f"m{i}" for i in range(values.shape[0])]
    segments = [f"s{j}" for j in range(values.shape[1])]
    key = make_key(models, segments, mask, chunks=chunks)
    scores = make_scores(models, segments, values, scored, chunks=chunks)
    return key, scores


def _split(values, mask, scored):
    keep = scored & (mask != 0)
    return values[keep & (mask == 1)], values[keep & (mask == -1)]


def _assert_exact(summary, tar, non, plo=PLO):
    misses, fas = ref.roc_points(tar, non)
    ref.check_hull(misses, fas, summary.hull.misses, summary.hull.false_alarms)
    exact = metrics.summary_from_arrays(tar, non)
    np.testing.assert_array_equal(summary.hull.misses, exact.hull.misses)
    np.testing.assert_array_equal(summary.hull.false_alarms, exact.hull.false_alarms)
    got_m, got_f = summary.error_counts(-plo)
    for p, m, f in zip(plo, got_m, got_f, strict=True):
        assert m == (tar < -p).sum() and f == (non >= -p).sum()
    for p in plo:
        dcf, _, _ = roc.min_bayes_error(summary.hull, np.array([p]))
        np.testing.assert_allclose(dcf[0], ref.min_dcf(tar, non, p), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(
        measures.summary_cllr(summary),
        ref.cllr(tar.astype(np.float64), non),
        rtol=1e-10,
        atol=1e-15,
    )  # each softplus term is rounded to a multiple of 2**-57 before the exact sum
    assert roc.hull_eer(summary.hull) == roc.hull_eer(exact.hull)
    assert roc.hull_min_cllr(summary.hull) == roc.hull_min_cllr(exact.hull)
    for ours, truth in zip(
        (roc.hull_eer, roc.hull_prbep, roc.hull_min_cllr),
        (ref.eer, ref.prbep, ref.min_cllr),
        strict=True,
    ):
        np.testing.assert_allclose(ours(summary.hull), truth(tar, non), rtol=1e-12, atol=0)


#: Block sizes for the property tests: tiny ones make the kernels' block and slice loops run
#: several times per chunk (chunks hold up to 144 trials), the defaults one block per chunk.
BLOCKS = [(8, 8), (8, 24), (32, 32), (32, 96), (1 << 16, 1 << 22)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=trial_sets(), coarse=st.sampled_from([2, 6, 12, 20]), dense=st.booleans(),
    keep=st.booleans(), blocks=st.sampled_from(BLOCKS), split_every=st.integers(2, 5),
)  # fmt: skip
def test_summary_is_exact_under_any_chunking(data, coarse, dense, keep, blocks, split_every):
    values, mask, scored, chunks = data
    key, scores = _objects(values, mask, scored, chunks)
    tar, non = _split(values, mask, scored)
    # dense: sub-histograms only, with a tiny budget so float64 needs several passes
    with dask.config.set({
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
    assert summary.n_missing == int(((mask != 0) & ~scored).sum())
    _assert_exact(summary, tar, non)


def test_several_systems_in_one_pass_each_exact():
    rng = np.random.default_rng(3)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(30, 40), p=[0.8, 0.2])
    systems = [np.round(rng.normal(size=(30, 40)) + mask * k, 2) for k in (0.5, 1.0, 2.0)]
    key = make_key(range(30), range(40), mask, chunks=(7, 9))
    scores = [make_scores(range(30), range(40), v, chunks=(7, 9)) for v in systems]
    summaries = engine.summarize(scores, key, thresholds=-PLO, split_every=2, coarse_bits=10)
    for s, v in zip(summaries, systems, strict=True):
        _assert_exact(s, v[mask == 1], v[mask == -1])


def _reads_per_chunk(scores, key, **kwargs):
    """Evaluate, counting how often each score chunk is read: the passes over the data."""
    reads: dict[tuple[int, ...], int] = {}
    lock = threading.Lock()

    def count(block, block_id=None):
        if isinstance(block_id, tuple):  # not dask's calls to infer the output's meta
            with lock:
                reads[block_id] = reads.get(block_id, 0) + 1
        return block

    data = scores.score.data.map_blocks(count, dtype=scores.score.dtype)
    counted = scores.copy(data={"score": data, "score_mask": scores.score_mask.data})
    ds = metrics.evaluate(counted, key, **kwargs)
    return reads, ds


def test_float32_takes_two_passes_and_counts_them():
    rng = np.random.default_rng(0)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(40, 50))
    values = (rng.normal(size=(40, 50)) + mask).astype(np.float32)
    key = make_key(range(40), range(50), mask, chunks=(10, 25))
    scores = make_scores(range(40), range(50), values, chunks=(10, 25))
    computes = []

    def counting_get(dsk, keys, **kwargs):
        computes.append(keys)
        return dask.get(dsk, keys, **kwargs)

    with dask.config.set(scheduler=counting_get, **{"bosaris_dask.skip-chunks": 0}):
        reads, ds = _reads_per_chunk(scores, key)
    # a scheduler call per pass; every chunk read once per pass over the data (refinement
    # passes skipping the chunks without candidates: tests/test_chunk_skipping.py)
    assert len(computes) == 2 == ds.attrs["passes"]
    assert len(reads) == 8 and set(reads.values()) == {2}


def test_kept_candidates_spare_passes_over_the_data():
    rng = np.random.default_rng(1)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(60, 70), p=[0.7, 0.3])
    values = rng.normal(size=(60, 70)) + mask  # float64: several refinement rounds
    key = make_key(range(60), range(70), mask, chunks=(20, 35))
    scores = make_scores(range(60), range(70), values, chunks=(20, 35))
    knobs = {"bosaris_dask.dense-budget": 64, "bosaris_dask.raw-limit": 8,
             "bosaris_dask.skip-chunks": 0}  # fmt: skip
    with dask.config.set(knobs):
        kept_reads, kept = _reads_per_chunk(scores, key)
        with dask.config.set({"bosaris_dask.keep-limit": 0}):
            full_reads, full = _reads_per_chunk(scores, key)
    # without keeping, every refinement round reads every chunk again
    assert set(full_reads.values()) == {full.attrs["passes"]} and full.attrs["passes"] >= 4
    assert set(kept_reads.values()) == {kept.attrs["passes"]} == {2}
    for name in ("min_dcf", "act_dcf", "eer", "prbep", "cllr", "min_cllr"):
        np.testing.assert_array_equal(kept[name].values, full[name].values)


def test_building_the_inputs_computes_nothing():
    def refuse(*args, **kwargs):
        raise AssertionError("computed while building a graph")

    key = key_from_labels(range(100), np.arange(100) % 7, range(80), np.arange(80) % 7, chunks=30)
    scores = make_scores(range(100), range(80), da.random.random((100, 80), chunks=30))
    with dask.config.set(scheduler=refuse):
        inputs, dtype = pass_inputs([scores], key)
    assert dtype == np.float64 and inputs[0].chunks == scores.score.data.chunks


def test_non_finite_score_names_the_trial():
    values = np.array([[1.0, np.nan], [0.0, 2.0]])
    key = make_key(["a", "b"], ["x", "y"], [[1, -1], [-1, 1]])
    with pytest.raises(ScoreError, match=r"1 trial has a non-finite score, e.g. \(a, y\)"):
        engine.summarize([make_scores(["a", "b"], ["x", "y"], values)], key)


def test_missing_scores_are_an_error_unless_allowed():
    key = make_key(["a", "b"], ["x", "y"], [[1, -1], [-1, 1]])
    scores = make_scores(["a", "b"], ["x", "y"], np.ones((2, 2)), [[True, True], [False, True]])
    with pytest.raises(MissingTrialsError, match=r"1 key trial has no score, e.g. \(b, x\)"):
        engine.summarize([scores], key)
    (s,) = engine.summarize([scores], key, allow_missing=True)
    assert (s.n_missing, s.n_target, s.n_nontarget) == (1, 2, 1)


def test_scores_with_other_ids_are_aligned_to_the_key():
    key = make_key(["a", "b"], ["x", "y"], [[1, -1], [-1, 1]])
    scores = make_scores(["b", "c", "a"], ["y", "x"], [[4.0, 3.0], [9.0, 9.0], [2.0, 1.0]])
    (s,) = engine.summarize([scores], key)
    # targets (a,x)=1.0 and (b,y)=4.0; non-targets (a,y)=2.0 and (b,x)=3.0
    _assert_exact(s, np.array([1.0, 4.0]), np.array([2.0, 3.0]))


def test_no_targets_is_a_clear_error():
    key = make_key(["a"], ["x", "y"], [[-1, -1]])
    with pytest.raises(ScoreError, match="0 targets and 2 non-targets"):
        engine.summarize([make_scores(["a"], ["x", "y"], [[0.0, 1.0]])], key)


def test_label_key_matches_explicit_key():
    rng = np.random.default_rng(5)
    ml, sl = rng.integers(0, 5, 25), rng.integers(0, 5, 35)
    mask = np.where(ml[:, None] == sl[None, :], 1, -1).astype(np.int8)
    values = rng.normal(size=(25, 35)) + mask
    lk = key_from_labels(range(25), ml, range(35), sl, chunks=(10, 10))
    sc = make_scores(range(25), range(35), values, chunks=(8, 12))
    (s,) = engine.summarize([sc], lk, thresholds=-PLO)
    _assert_exact(s, values[mask == 1], values[mask == -1])


def test_pav_bounds_make_block_edges_exact():
    rng = np.random.default_rng(9)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(50, 60))
    values = rng.normal(size=(50, 60)) + mask
    key = make_key(range(50), range(60), mask, chunks=20)
    lo, hi, n_tar, n_non = engine.score_bins(make_scores(range(50), range(60), values), key)
    starts, _, _ = roc.pav_blocks(n_tar, n_non)
    tar, non = values[mask == 1], values[mask == -1]
    exact = metrics.summary_from_arrays(tar, non)
    e_starts, e_tar, e_non = roc.pav_blocks(exact.n_tar, exact.n_non)
    np.testing.assert_array_equal(lo[starts[:-1]], exact.values()[e_starts[:-1]])
    np.testing.assert_array_equal(hi[starts[1:] - 1], exact.values()[e_starts[1:] - 1])
    assert lo[0] == values.min() and hi[-1] == values.max()


def test_priors_are_checked():
    with pytest.raises(OptionError, match=r"^effective prior 1.0 is not strictly between 0 and 1$"):
        metrics.evaluate_arrays([1.0], [0.0], priors=[0.5, 1.0])


def test_plo_and_priors_agree():
    assert np.allclose(logit(np.array(metrics.DEFAULT_PRIORS)), [0, -2.1972, -4.5951, -6.9068],
                       atol=1e-4)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), dtype=st.sampled_from([np.float32, np.float64]),
       sub=st.integers(1, 6), n=st.integers(1, 3 * 64), block=st.sampled_from([8, 32, 1 << 16]),
       slice_size=st.sampled_from([8, 40, 1 << 22]))  # fmt: skip
def test_sub_histogram_sweep_equals_select_then_count(seed, dtype, sub, n, block, slice_size):
    """The one-sweep dense refinement gives what selecting, then counting, gives."""
    rng = np.random.default_rng(seed)
    scores = np.round(rng.normal(size=n) * 4, 1).astype(dtype)
    classes = rng.choice(np.array([-1, 0, 1], dtype=np.int8), size=n)
    scored = rng.random(n) > 0.1
    shift = key_bits(dtype) - 10
    prefixes = np.unique(order_keys(scores) >> shift)
    cands = rng.choice(prefixes, size=max(1, len(prefixes) // 2), replace=False)
    cand_lo = np.sort(cands).astype(np.uint64) << np.uint64(shift)
    spec = refine_kernels.RefineSpec(
        shift, 10, cand_lo, np.full(len(cand_lo), shift), np.full(len(cand_lo), sub), raw=False
    )
    assert spec.whole_bins_split_evenly
    ws = kernels.workspace(np.dtype(dtype), block, slice_size)
    swept = refine_kernels.sub_histogram(classes, scores, scored, spec, ws)
    selected = refine_kernels.count_selected(
        *refine_kernels.select_trials(classes, scores, scored, spec, ws), spec
    )
    np.testing.assert_array_equal(swept, selected)


# --------------------------------------------------------------------------------------------
# key codes outside -1/0/+1 (from a store or any dask array) are found inside pass 1
# --------------------------------------------------------------------------------------------


def _key_with_code(code, dtype=np.int8, at=(3, 5)):
    """A key whose dask mask holds ``code`` at ``at``, unchecked by the reader (as a store
    written by another tool could hand it over), so that pass 1 itself must find it."""
    rng = np.random.default_rng(4)
    mask = rng.choice(np.array([-1, 1], dtype=dtype), size=(6, 9))
    mask[at] = code
    models, segments = [f"m{i}" for i in range(6)], [f"s{j}" for j in range(9)]
    key = make_key(models, segments, np.ones((6, 9), dtype=np.int8))
    key = key.copy(data={"trial_mask": da.from_array(mask, chunks=(4, 4))})
    scores = make_scores(models, segments, rng.normal(size=(6, 9)), chunks=(2, 5))
    return key, scores, mask


def _counting():
    computes = []

    def counting_get(dsk, keys, **kwargs):
        computes.append(keys)
        return dask.get(dsk, keys, **kwargs)

    return computes, counting_get


@pytest.mark.parametrize(("code", "dtype"), [(7, np.int8), (-2, np.int8), (257, np.int16)])
def test_a_bad_code_in_a_dask_key_names_the_trial(code, dtype):
    key, scores, _ = _key_with_code(code, dtype)
    computes, counting_get = _counting()
    with (
        dask.config.set(scheduler=counting_get),
        pytest.raises(TrialError, match=rf"^a key's trial_mask .* found {code} at \(m3, s5\)$"),
    ):
        engine.summarize([scores], key)
    # found by pass 1 itself; the second compute reads the one bad code for the message
    assert len(computes) == 2


@pytest.mark.parametrize(("code", "dtype"), [(7, np.int8), (257, np.int16)])
def test_a_bad_code_in_a_key_built_from_dask_is_found_by_the_read_in_pass_1(code, dtype):
    _, scores, mask = _key_with_code(code, dtype)
    key = make_key(scores.model.values, scores.segment.values, da.from_array(mask, chunks=4))
    computes, counting_get = _counting()
    with (
        dask.config.set(scheduler=counting_get),
        pytest.raises(TrialError, match=rf"found {code} at \(m3, s5\)$"),
    ):
        engine.summarize([scores], key)
    assert len(computes) == 1  # the check is fused into pass 1's reads: no extra pass


def test_bad_codes_count_and_first_is_in_row_major_order():
    key, scores, mask = _key_with_code(7, at=(4, 1))
    mask[1, 8] = mask[5, 0] = 9
    key = key.copy(data={"trial_mask": da.from_array(mask, chunks=(3, 2))})
    with pytest.raises(TrialError, match=r"found 9 at \(m1, s8\) and 2 more bad values$"):
        engine.summarize([scores], key, split_every=2)


def test_a_bad_code_in_a_zarr_key_names_the_trial(tmp_path):
    import zarr

    from bosaris_dask import io

    key, scores, _ = _key_with_code(1)
    path = io.write_zarr(key, tmp_path / "key.zarr")
    arr = zarr.open_array(path / "trial_mask", mode="r+")
    arr[2, 7] = 7
    with pytest.raises(TrialError, match=r"found 7 at \(m2, s7\)"):
        engine.summarize([scores], io.read_zarr(path))


# --------------------------------------------------------------------------------------------
# knobs: dask config keys and arguments, checked
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            {"bosaris_dask.block": 0},
            r"bosaris_dask.block must be an integer from 1 to 65536, got 0$",
        ),  # noqa: E501
        ({"bosaris_dask.block": 1 << 17}, r"bosaris_dask.block must be .* to 65536"),
        ({"bosaris_dask.slice": "big"}, r"bosaris_dask.slice must be an integer .*, got 'big'"),
        ({"bosaris_dask.dense-budget": 0.5}, r"bosaris_dask.dense-budget must be an integer"),
        ({"bosaris_dask.raw-limit": -1}, r"bosaris_dask.raw-limit must be an integer from 0 "),
        ({"bosaris_dask.keep-limit": True}, r"bosaris_dask.keep-limit must be an integer"),
    ],
)
def test_bad_config_knobs_are_one_line_errors(setting, message):
    key = make_key(["a", "b"], ["x", "y"], [[1, -1], [-1, 1]])
    scores = make_scores(["a", "b"], ["x", "y"], np.eye(2))
    with dask.config.set(setting), pytest.raises(OptionError, match=f"^{message}"):
        engine.summarize([scores], key)
    assert issubclass(OptionError, ValueError)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"coarse_bits": 0}, r"coarse_bits must be an integer from 1 to 24, got 0"),
        ({"coarse_bits": 25}, r"coarse_bits must be an integer from 1 to 24, got 25"),
        ({"coarse_bits": 12.0}, r"coarse_bits must be an integer from 1 to 24, got 12.0"),
        ({"split_every": 1}, r"split_every must be an integer from 2 to 65536, got 1"),
        ({"split_every": None}, r"split_every must be an integer from 2 to 65536, got None"),
    ],
)
def test_bad_engine_arguments_are_one_line_errors(kwargs, message):
    key = make_key(["a", "b"], ["x", "y"], [[1, -1], [-1, 1]])
    scores = make_scores(["a", "b"], ["x", "y"], np.eye(2))
    with pytest.raises(OptionError, match=f"^{message}$"):
        engine.summarize([scores], key, **kwargs)


def test_knobs_reach_the_kernels_as_arguments():
    """The block sizes in the config when a graph is built are the ones its kernels use."""
    seen = []
    original = kernels.workspace

    def spy(dtype, block, slice_size):
        seen.append((block, slice_size))
        return original(dtype, block, slice_size)

    key = make_key(["a", "b"], ["x", "y"], [[1, -1], [-1, 1]])
    scores = make_scores(["a", "b"], ["x", "y"], np.eye(2))
    with dask.config.set({"bosaris_dask.block": 8, "bosaris_dask.slice": 24}):
        inputs, _ = pass_inputs([scores], key)
        knobs = engine.engine_knobs()
    assert (knobs["block"], knobs["slice"]) == (8, 24)
    kernels.workspace = spy
    try:
        with dask.config.set(scheduler="sync"):
            engine.summarize([scores], key)
            with dask.config.set({"bosaris_dask.block": 8, "bosaris_dask.slice": 24}):
                engine.summarize([scores], key)
    finally:
        kernels.workspace = original
    assert (1 << 16, 1 << 22) in seen and (8, 24) in seen


# --------------------------------------------------------------------------------------------
# float sums independent of chunking and merge tree, bit for bit
# --------------------------------------------------------------------------------------------

_BITWISE = {}


def _bitwise_data():
    if not _BITWISE:
        rng = np.random.default_rng(11)
        mask = rng.choice(np.array([-1, 0, 1], dtype=np.int8), size=(60, 70), p=[0.7, 0.1, 0.2])
        values = rng.normal(size=(60, 70)) * 3 + mask * 2
        values[0, :5] = [2e5, -3e5, 1e300, -40.0, 40.0]  # the exact path for huge terms
        mask[0, :5] = [-1, 1, -1, 1, -1]
        _BITWISE.update(values=values, mask=mask)
    return _BITWISE["values"], _BITWISE["mask"]


@settings(max_examples=25, deadline=None)
@given(data=st.data(), split_every=st.integers(2, 9))
def test_cllr_is_bit_identical_under_any_chunking_and_merge_tree(data, split_every):
    values, mask = _bitwise_data()
    chunks = (_chunks(data.draw, 60), _chunks(data.draw, 70))
    key = make_key(range(60), range(70), mask, chunks=chunks)
    scores = make_scores(range(60), range(70), values, chunks=chunks)
    (s,) = engine.summarize([scores], key, split_every=split_every)
    (one,) = engine.summarize([make_scores(range(60), range(70), values)],
                              make_key(range(60), range(70), mask))  # fmt: skip
    assert (s.softplus_tar, s.softplus_non) == (one.softplus_tar, one.softplus_non)
    assert measures.summary_cllr(s) == measures.summary_cllr(one)
    assert roc.hull_min_cllr(s.hull) == roc.hull_min_cllr(one.hull)
    tar, non = values[mask == 1], values[mask == -1]
    np.testing.assert_allclose(s.softplus_tar, np.logaddexp(0, -tar).sum(), rtol=1e-14)
    np.testing.assert_allclose(s.softplus_non, np.logaddexp(0, non).sum(), rtol=1e-14)


def test_cllr_is_finite_where_its_softplus_sums_exceed_float64():
    # 300 target scores of -1e306: the targets' softplus sum, 3e308, is beyond float64, their
    # mean (1e306) is not; Cllr was inf. Reference: the mean of each class, exactly, by
    # Fractions (softplus(-s) = -s + log1p(exp(s)) = 1e306 to float64 for s = -1e306).
    from fractions import Fraction

    values = np.full((20, 20), -1e306)
    values[:, 15:] = -1.0
    mask = np.where(np.arange(20)[None, :] < 15, 1, -1).astype(np.int8).repeat(20, axis=0)
    scores, key = make_scores(range(20), range(20), values), make_key(range(20), range(20), mask)
    mean_tar = Fraction(1e306)
    mean_non = Fraction(float(np.logaddexp(0.0, -1.0)))
    expected = float((mean_tar + mean_non) / 2 / Fraction(float(np.log(2))))
    (summary,) = engine.summarize([scores.chunk({"model": 7, "segment": 6})], key)
    assert summary.softplus_tar == np.inf  # the float sum overflows ...
    assert measures.summary_cllr(summary) == pytest.approx(expected, rel=1e-15)  # ... the mean not
    result = metrics.evaluate(scores, key, priors=[0.5])
    assert float(result.cllr.item()) == pytest.approx(expected, rel=1e-15)
    assert metrics.cllr(values[mask == 1], values[mask == -1]) == pytest.approx(expected, rel=1e-15)


def test_cllr_is_finite_where_the_two_class_means_add_beyond_float64():
    # targets at -1e308 and non-targets at +1e308: each class's mean cost is 1e308 nats, and
    # Cllr = (1e308 + 1e308) / (2 ln 2) = 1e308 / ln 2 is a float64; their sum is not (was inf)
    values = np.array([[-1e308, -1e308, 1e308]])
    scores = make_scores(["m"], ["a", "b", "c"], values)
    key = make_key(["m"], ["a", "b", "c"], [[1, 1, -1]])
    expected = 1e308 / np.log(2)
    assert float(metrics.evaluate(scores, key, priors=[0.5]).cllr.item()) == expected
    assert metrics.cllr(values[0, :2], values[0, 2:]) == expected


# --------------------------------------------------------------------------------------------
# a realistic size: millions of trials, several chunks, many ties, against numpy brute force
# --------------------------------------------------------------------------------------------


def _brute_force_roc(tar: np.ndarray, non: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(misses, false alarms) at every distinct score and +inf, by sorting and counting."""
    thresholds = np.concatenate([np.unique(np.concatenate([tar, non])), [np.inf]])
    misses = np.searchsorted(np.sort(tar), thresholds, side="left")
    fas = len(non) - np.searchsorted(np.sort(non), thresholds, side="left")
    return misses, fas


def test_millions_of_tied_trials_in_several_chunks_match_brute_force():
    rng = np.random.default_rng(2026)
    n_m, n_s = 1500, 2000  # 3e6 trials in 12 chunks
    mask = rng.choice(np.array([-1, 0, 1], dtype=np.int8), size=(n_m, n_s), p=[0.85, 0.05, 0.1])
    values = (np.round((rng.normal(size=(n_m, n_s)) * 2 + mask * 1.5) * 16) / 16).astype(np.float32)
    key = make_key(range(n_m), range(n_s), mask, chunks=(500, 700))
    scores = make_scores(range(n_m), range(n_s), values, chunks=(500, 700))
    with dask.config.set({"bosaris_dask.slice": 1 << 17}):  # several histogram slices a chunk
        (s,) = engine.summarize([scores], key, thresholds=-PLO, split_every=3)
    tar, non = values[mask == 1], values[mask == -1]
    assert len(np.unique(values)) < 400  # every score value is shared by thousands of trials
    misses, fas = _brute_force_roc(tar, non)
    ref.check_hull(misses, fas, s.hull.misses, s.hull.false_alarms)
    got_m, got_f = s.error_counts(-PLO)
    for p, m, f in zip(PLO, got_m, got_f, strict=True):
        assert (m, f) == ((tar < -p).sum(), (non >= -p).sum())
        cost = expit(p) * misses / len(tar) + expit(-p) * fas / len(non)
        dcf, _, _ = roc.min_bayes_error(s.hull, np.array([p]))
        np.testing.assert_allclose(dcf[0], cost.min(), rtol=1e-12)
    np.testing.assert_allclose(measures.summary_cllr(s), ref.cllr(tar, non), rtol=1e-12)


def test_refinement_returns_a_new_summary():
    rng = np.random.default_rng(8)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(20, 30))
    values = rng.normal(size=(20, 30)) + mask
    key, scores = make_key(range(20), range(30), mask), make_scores(range(20), range(30), values)
    with dask.config.set(scheduler="sync"):
        (coarse,) = engine.summarize([scores], key, coarse_bits=4)
    assert coarse.passes >= 2
    before = (coarse.lo.copy(), coarse.n_tar.copy(), coarse.n_non.copy())
    # refine the exact summary's pass-1 bins again, by hand: a raw refinement of every bin
    shift = key_bits(np.float64) - 4
    lo = np.unique(coarse.lo >> np.uint64(shift)) << np.uint64(shift)
    keys = order_keys(np.concatenate([values[mask == 1], values[mask == -1]]))
    is_tar = np.arange(len(keys)) < (mask == 1).sum()
    # pass 1's counts per bin (a refinement must find the same trials in them)
    n_tar, n_non = (np.bincount(np.searchsorted(lo, k, side="right") - 1, minlength=len(lo))
                    for k in (keys[is_tar], keys[~is_tar]))  # fmt: skip
    wide = engine.ScoreSummary(np.dtype(np.float64), lo=lo, bits=np.full(len(lo), shift, np.int8),
                               n_tar=n_tar.copy(), n_non=n_non.copy(),
                               softplus_units=(1, 1))  # fmt: skip
    cands = np.arange(len(lo))
    spec = refinement.plan(wide, cands, shift, dense_budget=64, raw_limit=1 << 22)
    fine = refinement.apply_refinement(
        wide, cands, spec, refine_kernels.count_selected(keys, is_tar, spec)
    )
    assert fine is not wide and len(wide.lo) == len(lo)  # the old summary is unchanged
    np.testing.assert_array_equal(wide.n_tar, n_tar)
    np.testing.assert_array_equal(coarse.lo, before[0])
    np.testing.assert_array_equal(fine.n_tar.sum(), (mask == 1).sum())
    assert roc.hull_min_cllr(fine.hull) == roc.hull_min_cllr(coarse.hull)
