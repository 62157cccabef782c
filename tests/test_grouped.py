"""The grouped kernels (each trial keyed once for every condition) give, summary by summary and
bit for bit, what one masked copy of each system per condition gives, in the same passes.

Both paths are checked against brute-force references elsewhere (tests/test_conditions.py,
tests/test_equalized.py, tests/test_reference_conditions.py, which run the grouped path, the
default); here the two are compared whole: every bin, count and exact Cllr sum of every summary.
"""

from __future__ import annotations

from dataclasses import replace

import dask
import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from bosaris_dask import metrics
from bosaris_dask.conditions import condition_codes, condition_table
from bosaris_dask.conditions.evaluation import condition_result
from bosaris_dask.conditions.summaries import GROUPED_KEY, POOLED_KEY, condition_summaries
from bosaris_dask.engine import summarize
from bosaris_dask.passes import pass1_bins
from bosaris_dask.trials import make_key, make_scores


def _case(seed, n_m, n_s, n_sys, float32):
    rng = np.random.default_rng(seed)
    mids, sids = [f"m{i}" for i in range(n_m)], [f"s{j}" for j in range(n_s)]
    mask = rng.choice([-1, 0, 1], size=(n_m, n_s), p=[0.55, 0.15, 0.3])
    systems = []
    for k in range(n_sys):
        scores = rng.normal(size=(n_m, n_s)) * 2 + (mask == 1)
        if k % 2:
            scores = np.round(scores * 2) / 2  # ties
        scored = rng.random((n_m, n_s)) > 0.05
        systems.append((scores.astype(np.float32 if float32 else np.float64), scored))
    tables = [
        condition_table("model", mids, {"g": rng.choice(["f", "m"], n_m).tolist(),
                                        "l": rng.choice(["a", "b", "c"], n_m).tolist()}),
        condition_table("segment", sids, {"l": rng.choice(["a", "b"], n_s).tolist(),
                                          "d": rng.choice(["5", "10", "20"], n_s).tolist()}),
    ]  # fmt: skip
    return mids, sids, mask, systems, tables


def _same(a, b, passes=True):
    assert a.name == b.name and a.dtype == b.dtype
    for field in ("lo", "bits", "n_tar", "n_non"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
    assert (a.softplus_tar, a.softplus_non) == (b.softplus_tar, b.softplus_non)
    assert a.n_missing == b.n_missing
    assert a.passes == b.passes or not passes


def _both(scores, key, cond, **kwargs):
    out = []
    for grouped in (False, True):
        out.append(condition_summaries(scores, key, cond, grouped=grouped, allow_missing=True,
                                       **kwargs))  # fmt: skip
    return out


def _compare(old, new, pooled=True):
    # the masked copies take passes of their own (a counting pass, the pooled systems, the
    # copies): the summaries are compared, not the passes
    for a, b in zip(old.pooled, new.pooled, strict=True):
        if pooled:
            _same(a, b, passes=False)
    for row_a, row_b in zip(old.by_condition, new.by_condition, strict=True):
        for a, b in zip(row_a, row_b, strict=True):
            assert (a is None) == (b is None)
            if a is not None:
                _same(a, b, passes=False)
    for name in ("n_target", "n_nontarget", "n_missing"):
        np.testing.assert_array_equal(getattr(old, name), getattr(new, name))
    if old.equalized is not None:
        skip = 0 if pooled else len(old.pooled)
        for a, b in zip(old.equalized[0][skip:], new.equalized[0][skip:], strict=True):
            _same(a, b, passes=False)


@pytest.mark.filterwarnings("ignore:Increasing number of chunks")  # dask, one-cell chunks
@settings(max_examples=6, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(
    seed=st.integers(0, 2**16),
    shape=st.tuples(st.integers(3, 12), st.integers(3, 14)),
    chunk=st.tuples(st.integers(1, 5), st.integers(1, 6)),
    n_sys=st.integers(1, 2),
    float32=st.booleans(),
    by=st.sampled_from(
        [["model.g"], ["segment.d", "same.l"], ["model.g", "segment.d", "same.l"]]
    ),  # fmt: skip
    coarse=st.sampled_from([None, 1, 3, 6]),
    knobs=st.sampled_from(
        [
            {},
            {"bosaris_dask.dense-budget": 4, "bosaris_dask.raw-limit": 0},
            {"bosaris_dask.raw-limit": 6, "bosaris_dask.keep-limit": 0},
            {
                "bosaris_dask.block": 8,
                "bosaris_dask.slice": 16,
                "bosaris_dask.dense-budget": 8,
                "bosaris_dask.raw-limit": 3,
            },
        ]
    ),
    equalize=st.booleans(),
    apart=st.booleans(),
    adaptive=st.sampled_from([0, 2]),
)
def test_grouped_equals_masked_copies_bit_for_bit(seed, shape, chunk, n_sys, float32, by,
                                                  coarse, knobs, equalize, apart,
                                                  adaptive):  # fmt: skip
    mids, sids, mask, systems, tables = _case(seed, *shape, n_sys, float32)
    key = make_key(mids, sids, mask, chunks=chunk)
    scores = [make_scores(mids, sids, s, score_mask=m, chunks=chunk) for s, m in systems]
    cond = condition_codes(key, tables, by)
    if any(int(((mask == 1) & m).sum()) == 0 or int(((mask == -1) & m).sum()) == 0
           for _, m in systems):  # fmt: skip
        return  # a pooled system without a class is an error in both (tested elsewhere)
    bits = pass1_bins.default_coarse_bits if coarse is None else (lambda n: coarse)
    # adaptive-bins 2: pass 1's bins (pooled and per condition) fitted to a sample
    with dask.config.set({"scheduler": "sync", POOLED_KEY: apart,
                          "bosaris_dask.adaptive-bins": adaptive, **knobs}), \
            pytest.MonkeyPatch.context() as mp:  # fmt: skip
        mp.setattr(pass1_bins, "default_coarse_bits", bits)
        old, new = _both(scores, key, cond, thresholds=[-2.2, 0.0, 1.5], split_every=2,
                         fmr=[0.1], equalize=equalize)  # fmt: skip
    _compare(old, new)


def test_the_default_is_grouped_and_the_datasets_agree():
    mids, sids, mask, systems, tables = _case(3, 20, 25, 2, False)
    key = make_key(mids, sids, mask, chunks=(7, 9))
    scores = [make_scores(mids, sids, s, score_mask=m, chunks=(7, 9)) for s, m in systems]
    by = ["model.g", "segment.d", "same.l"]
    args = {"conditions": tables, "by": by, "priors": [0.5, 0.01], "allow_missing": True,
            "equalize": True, "cprimary_priors": [0.01, 0.05]}  # fmt: skip
    assert dask.config.get(GROUPED_KEY, True)
    new = metrics.evaluate(scores, key, **args)
    with dask.config.set({GROUPED_KEY: False}):
        old = metrics.evaluate(scores, key, **args)
    assert new.attrs | {"passes": 0} == old.attrs | {"passes": 0}  # (the masked take more)
    for name in old.data_vars:
        np.testing.assert_array_equal(new[name].values, old[name].values, err_msg=name)


@pytest.mark.filterwarnings("ignore:Increasing number of chunks")
@settings(max_examples=6, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(
    seed=st.integers(0, 2**16),
    chunk=st.tuples(st.integers(2, 5), st.integers(2, 6)),
    n_sys=st.integers(1, 2),
    float32=st.booleans(),
    coarse=st.sampled_from([None, 3]),
    keep=st.sampled_from(
        [{}, {"bosaris_dask.keep-limit": 0}, {"bosaris_dask.block": 8, "bosaris_dask.slice": 24}]
    ),
    equalize=st.booleans(),
)
def test_pooled_apart_is_the_plain_evaluation(seed, chunk, n_sys, float32, coarse, keep,
                                              equalize):  # fmt: skip
    """With bosaris_dask.pooled-as-plain, each pooled summary is, bin for bin, the plain
    engine's summary of the system, and the condition summaries are unchanged."""
    mids, sids, mask, systems, tables = _case(seed, 9, 11, n_sys, float32)
    key = make_key(mids, sids, mask, chunks=chunk)
    scores = [make_scores(mids, sids, s, score_mask=m, chunks=chunk) for s, m in systems]
    cond = condition_codes(key, tables, ["model.g", "segment.d", "same.l"])
    if any(int(((mask == 1) & m).sum()) == 0 or int(((mask == -1) & m).sum()) == 0
           for _, m in systems):  # fmt: skip
        return
    args = {"thresholds": [-2.2, 0.0, 1.5], "fmr": [0.1], "split_every": 2}
    with dask.config.set(scheduler="sync", **keep), pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            pass1_bins, "default_coarse_bits", (lambda n: 20 - 2 * n) if coarse else (lambda n: 3)
        )
        old = condition_summaries(scores, key, cond, grouped=False, allow_missing=True,
                                  equalize=equalize, **args)  # fmt: skip
        with dask.config.set({POOLED_KEY: True}):
            new = condition_summaries(scores, key, cond, allow_missing=True, equalize=equalize,
                                      **args)  # fmt: skip
        plain = summarize(scores, key, allow_missing=True, **args)
    _compare(old, new, pooled=False)
    for a, b in zip(plain, new.pooled, strict=True):
        _same(a, replace(b, passes=a.passes))


def test_groups_no_part_names_share_one_histogram_row():
    import dask.array as da

    from bosaris_dask.passes.grouped import Part, _used_groups

    groups = da.from_array(np.array([[0, 5, 9], [5, 7, 0]], dtype=np.int16), chunks=1)
    parts = [Part(0), Part(0, (5,), (5,)), Part(0, (9,), (5, 9))]
    remapped, n, new = _used_groups(groups, 1000, parts)
    assert n == 3  # conditions 5 and 9, and one row for the 998 others
    assert new == [Part(0), Part(0, (0,), (0,)), Part(0, (1,), (0, 1))]
    assert remapped.compute().tolist() == [[2, 0, 1], [0, 2, 2]]


def test_each_part_counts_its_own_missing_trials_and_one_dataset_is_accepted():
    import dask.array as da

    from bosaris_dask.passes.grouped import Part, summarize_parts

    rng = np.random.default_rng(7)
    n_m, n_s, n_g = 9, 12, 3
    mids, sids = [f"m{i}" for i in range(n_m)], [f"s{j}" for j in range(n_s)]
    mask = rng.choice([-1, 1], size=(n_m, n_s), p=[0.6, 0.4])
    mask[:, :2] = [1, -1]
    scored = rng.random((n_m, n_s)) > 0.25
    scored[:, :2] = True
    group = np.repeat(np.arange(n_g), n_s // n_g)[None, :].repeat(n_m, axis=0)
    key = make_key(mids, sids, mask, chunks=(4, 5))
    raw = np.where(scored, rng.normal(size=mask.shape), 0.0)
    scores = make_scores(mids, sids, raw, scored, chunks=(4, 5))
    groups = da.from_array(group.astype(np.int16), chunks=(4, 5))
    parts = [Part(0), Part(0, (0,), (0,)), Part(0, (1,), (2,)), Part(0, (0, 1, 2), (1,))]
    got = summarize_parts(scores, key, groups, n_g, parts, allow_missing=True)
    gone = ~scored
    expected = [
        np.count_nonzero(gone),
        np.count_nonzero(gone & (group == 0)),
        np.count_nonzero(gone & (((group == 1) & (mask == 1)) | ((group == 2) & (mask == -1)))),
        np.count_nonzero(gone & ((mask == 1) | ((group == 1) & (mask == -1)))),
    ]
    assert [s.n_missing for s in got] == expected
    assert [s.n_target for s in got] == [
        np.count_nonzero(scored & (mask == 1)),
        np.count_nonzero(scored & (mask == 1) & (group == 0)),
        np.count_nonzero(scored & (mask == 1) & (group == 1)),
        np.count_nonzero(scored & (mask == 1)),
    ]


@pytest.mark.parametrize("bad", [3, -1])
@pytest.mark.parametrize("remapped", [False, True])
def test_group_codes_outside_the_groups_are_refused(bad, remapped):
    import dask.array as da

    from bosaris_dask.errors import OptionError
    from bosaris_dask.passes.grouped import Part, summarize_parts

    mids, sids = ["m0", "m1"], ["s0", "s1", "s2"]
    key = make_key(mids, sids, np.array([[1, -1, -1], [-1, 1, -1]]))
    scores = make_scores(mids, sids, np.array([[2.0, 0.5, -1.0], [-1.0, 0.5, 0.0]]))
    codes = np.array([[0, 1, 2], [0, 1, bad]], dtype=np.int16)
    groups = da.from_array(codes, chunks=(1, 3))
    # parts naming every group keep the codes; naming some of them remaps the codes first
    named = [(0,), (1,)] if remapped else [(0, 1, 2), (0, 1, 2)]
    parts = [Part(0), Part(0, *named)]
    with pytest.raises(OptionError, match=rf"^group code {bad} outside \[0, 3\)"):
        summarize_parts(scores, key, groups, 3, parts)
    with pytest.raises(OptionError, match="groups must be integer codes"):
        summarize_parts(scores, key, groups.astype(float), 3, parts)


def test_by_default_the_pooled_results_are_the_plain_evaluation():
    """pooled-as-plain is the default: every pooled variable of an evaluation with conditions
    equals, bit for bit, that of the plain evaluation (steppy ROC and AUC bounds included), and
    both take the same passes."""
    mids, sids, mask, systems, tables = _case(8, 30, 40, 2, True)
    key = make_key(mids, sids, mask, chunks=(11, 13))
    scores = [make_scores(mids, sids, s, score_mask=m, chunks=(11, 13)) for s, m in systems]
    args = {"priors": [0.5, 0.01], "allow_missing": True, "fmr": [0.1]}
    with dask.config.set(scheduler="sync"):
        plain = metrics.evaluate(scores, key, **args)
        ds = metrics.evaluate(scores, key, conditions=tables, by=["model.g", "segment.d"], **args)
    assert ds.attrs["passes"] == plain.attrs["passes"]
    for name in plain.data_vars:
        np.testing.assert_array_equal(ds[name].values, plain[name].values, err_msg=name)


def test_pass1_counts_only_the_conditions_some_pair_falls_in():
    """Two model columns that go together leave most of their Cartesian product empty: pass 1
    counts the possible conditions only (found from the ids' codes), with the same results."""
    mids, sids, mask, systems, tables = _case(5, 12, 14, 2, False)
    gender = tables[0].columns["g"]
    language = np.where(gender == "f", "a", "b")  # one language per gender
    tables[0] = condition_table("model", mids, {"g": gender.tolist(), "l": language.tolist()})
    key = make_key(mids, sids, mask, chunks=(5, 6))
    scores = [make_scores(mids, sids, s, score_mask=m, chunks=(5, 6)) for s, m in systems]
    by = ["model.g", "model.l", "segment.d", "same.l"]
    cond = condition_codes(key, tables, by)
    every_cell = np.unique(cond.group_index((5, 6)).compute())
    assert cond.n_conditions == 2 * 2 * 3 * 2
    np.testing.assert_array_equal(cond.possible_groups(), every_cell)
    assert len(every_cell) < cond.n_conditions / 2
    from bosaris_dask.conditions import summaries as summaries_module

    seen = []
    real = summaries_module.grouped_pass1

    def spy(*args, **kwargs):
        seen.append(args[3])  # n_groups
        return real(*args, **kwargs)

    with dask.config.set(scheduler="sync"), pytest.MonkeyPatch.context() as mp:
        mp.setattr(summaries_module, "grouped_pass1", spy)
        old, new = _both(scores, key, cond, thresholds=[0.0], equalize=True)
        plain = summarize(scores, key, thresholds=[0.0], allow_missing=True)
    assert seen == [len(every_cell)]
    _compare(old, new)
    assert new.passes == plain[0].passes


# --------------------------------------------------------------------------------------------
# adaptive pass-1 bins (fitted to a sample of the scores) for the conditions too
# --------------------------------------------------------------------------------------------

#: Budgets scaled down with the trials (60,000 here), as in tests/test_adaptive_bins.py, with a
#: keep limit that holds a plain evaluation's first-round candidates but not also those of 24
#: conditions in fixed bins: the situation of 1e8 trials with the engine's budgets.
SCALED = {"bosaris_dask.keep-limit": 30000, "bosaris_dask.raw-limit": 500,
          "bosaris_dask.dense-budget": 2048}  # fmt: skip
BY = ["model.g", "segment.src", "same.l"]


def _dense(dtype, seed=16):
    """200 x 300 trials whose scores are packed into a narrow range (many trials per fixed
    pass-1 bin), and condition tables giving 2 x 6 x 2 = 24 conditions."""
    rng = np.random.default_rng(seed)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(200, 300), p=[0.9, 0.1])
    values = (rng.normal(size=mask.shape) * 0.01 + 1 + 0.015 * mask).astype(dtype)
    mids, sids = [f"m{i}" for i in range(200)], [f"s{j}" for j in range(300)]
    mcols = {"g": rng.choice(["f", "m"], 200), "l": rng.choice(["a", "b", "c"], 200)}
    scols = {"src": rng.choice([f"x{i}" for i in range(6)], 300),
             "l": rng.choice(["a", "b", "c"], 300)}  # fmt: skip
    tables = [
        condition_table("model", mids, {c: v.tolist() for c, v in mcols.items()}),
        condition_table("segment", sids, {c: v.tolist() for c, v in scols.items()}),
    ]
    key = make_key(mids, sids, mask, chunks=(50, 100))
    scores = make_scores(mids, sids, values, chunks=(50, 100))
    # each condition's cells, from the columns directly (no package code)
    members = {}
    for g in ("f", "m"):
        for src in scols["src"].tolist():
            for same in ("same", "different"):
                cells = (mcols["g"] == g)[:, None] & (scols["src"] == src)[None, :]
                eq = mcols["l"][:, None] == scols["l"][None, :]
                members[f"model.g={g}, segment.src={src}, same.l={same}"] = cells & (
                    eq if same == "same" else ~eq
                )
    return key, scores, tables, values, mask, members


def _reading(scores):
    """``scores`` whose chunks count their reads, and the counts."""
    import threading

    reads: dict[tuple[int, ...], int] = {}
    lock = threading.Lock()

    def count(block, block_id=None):
        if isinstance(block_id, tuple):
            with lock:
                reads[block_id] = reads.get(block_id, 0) + 1
        return block

    data = scores.score.data.map_blocks(count, dtype=scores.score.dtype)
    return scores.copy(data={"score": data, "score_mask": scores.score_mask.data}), reads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conditions_take_the_passes_of_the_plain_evaluation_with_adaptive_bins(dtype):
    """With fixed pass-1 bins, 24 conditions hold too many candidate trials after pass 1 to
    keep them (float32: one pass more than the plain evaluation, which keeps its own; float64:
    both take three); with the bins fitted to the scores (the default when the trials
    outnumber keep-limit) both take two passes, and every chunk is read twice (and once more
    for the sample of the bins)."""
    key, scores, tables, _, _, _ = _dense(dtype)
    args = {"priors": [0.01, 0.005]}
    passes = {}
    for mode in (0, 1):
        with dask.config.set({**SCALED, "bosaris_dask.adaptive-bins": mode}):
            plain = metrics.evaluate(scores, key, **args)
            counted, reads = _reading(scores)
            ds = metrics.evaluate(counted, key, conditions=tables, by=BY, **args)
        passes[mode] = (plain.attrs["passes"], ds.attrs["passes"], reads)
    fixed_plain, fixed_cond, _ = passes[0]
    assert fixed_cond > 2 and fixed_cond > fixed_plain - (dtype == np.float64)  # it matters
    plain_passes, cond_passes, reads = passes[1]
    assert plain_passes == cond_passes == 2
    assert sorted(reads.values()) == [2] * 11 + [3]  # one chunk holds the sample's rows


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adaptive_condition_bins_give_the_fixed_bins_metrics_and_the_references(dtype):
    """The conditions' metrics with bins fitted to the scores equal those with fixed bins, bit
    for bit, and the brute-force references of each condition's trials."""
    from scipy.special import logit

    from tests import reference as ref

    key, scores, tables, values, mask, members = _dense(dtype)
    priors = [0.5, 0.01]
    out = {}
    for mode in (0, 2):
        with dask.config.set({**SCALED, "bosaris_dask.adaptive-bins": mode}):
            out[mode] = metrics.evaluate(scores, key, conditions=tables, by=BY, priors=priors)
    exact = ("eer", "prbep", "cllr", "min_cllr", "act_dcf", "min_dcf", "act_pmiss", "act_pfa",
             "min_pmiss", "min_pfa", "n_target", "n_nontarget")  # fmt: skip
    for name in exact:
        for var in (name, "condition_" + name):
            np.testing.assert_array_equal(out[2][var].values, out[0][var].values, err_msg=var)
    ds = out[2]
    checked = 0
    for g, label in enumerate(ds.condition.values.tolist()):
        member = members[label]
        tar = values[(mask == 1) & member].astype(np.float64)
        non = values[(mask == -1) & member].astype(np.float64)
        assert int(ds.condition_n_target[0, g]) == len(tar), label
        assert int(ds.condition_n_nontarget[0, g]) == len(non), label
        if not len(tar) or not len(non) or g % 4:  # the references are slow: every 4th
            continue
        one = metrics.operating_points(condition_result(ds, g).isel(system=0))
        assert float(one.eer) == pytest.approx(ref.eer(tar, non), abs=1e-12)
        assert float(one.cllr) == pytest.approx(ref.cllr(tar, non), rel=1e-12)
        for j, p in enumerate(priors):
            want = float(ref.min_dcf(tar, non, logit(p)))
            assert float(one.min_dcf_raw[j]) == pytest.approx(want, abs=1e-12)
            assert float(one.act_dcf_raw[j]) == pytest.approx(
                ref.dcf_at(tar, non, logit(p))[0], abs=1e-12
            )
        checked += 1
    assert checked >= 4


def test_a_chunk_note_names_the_bins_any_group_holds():
    from bosaris_dask.passes.grouped_kernels import grouped_bins_note

    rng = np.random.default_rng(3)
    n_groups, nbins, pooled_nbins = 3, 64, 32
    counts = rng.integers(0, 2, size=(n_groups, nbins, 2)) * (rng.random((1, nbins, 1)) < 0.3)
    pooled = rng.integers(0, 3, size=2 * pooled_nbins) * (rng.random(2 * pooled_nbins) < 0.2)
    for dtype in (np.float64, np.uint32):  # the numpy path's row, the compiled one's
        row = np.concatenate([counts.reshape(-1), [5, 0, 1], pooled]).astype(dtype)
        note, pooled_note = grouped_bins_note(
            row, np.arange(4, 6), np.arange(7, 9), n_groups=n_groups, nbins=nbins, coarse=1,
            pooled_nbins=pooled_nbins, pooled_coarse=0,
        )  # fmt: skip
        held = [any(counts[g, b, c] for g in range(n_groups) for c in range(2))
                for b in range(nbins)]  # fmt: skip
        pairs = [held[2 * i] or held[2 * i + 1] for i in range(nbins // 2)]
        assert note[:2] == (4, 7) and note[2].tolist() == np.packbits(pairs).tolist()
        by_bin = [bool(pooled[b] or pooled[pooled_nbins + b]) for b in range(pooled_nbins)]
        assert pooled_note[2].tolist() == np.packbits(by_bin).tolist()
