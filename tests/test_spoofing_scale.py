"""ASVspoof 5 metrics through the engine (``bosaris_dask.spoofing.scale``) equal the in-memory
functions, bit for bit, under random chunkings and tiny engine blocks, in a plain evaluation's
passes.

The in-memory functions (``bosaris_dask.spoofing.metrics``) are checked against a brute force
that shares no code with the package in ``test_spoofing_metrics.py``; here the scale path must
reproduce them exactly: same values, same thresholds, same tie rules.
"""

from __future__ import annotations

import json
from pathlib import Path

import dask
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bosaris_dask import metrics
from bosaris_dask.costs import OperatingPoint
from bosaris_dask.errors import MissingTrialsError, OptionError, ScoreError, TrialError
from bosaris_dask.spoofing import (
    ASVSPOOF5,
    asv_rates,
    cm_eer,
    min_a_dcf,
    min_t_dcf,
    read_sasv_key,
    read_sasv_scores,
    t_eer,
)
from bosaris_dask.spoofing.matching import sasv_key_and_scores
from bosaris_dask.spoofing.scale import (
    TEerScaleWarning,
    cm_key,
    evaluate_cm,
    evaluate_sasv,
    sasv_key,
)
from bosaris_dask.trials import key_from_labels, make_key, make_scores

DATA = Path(__file__).parent / "data" / "asvspoof5"
REF = json.loads((DATA / "reference.json").read_text())
TINY = {"bosaris_dask.block": 7, "bosaris_dask.slice": 13, "bosaris_dask.dense-budget": 4,
        "bosaris_dask.raw-limit": 0}  # fmt: skip


def _random_set(seed: int, n_models: int, n_segments: int, levels: int, dtype=np.float64):
    """A dense SASV set with heavy ties: mask in {-1, 0, +1}, spoofed segments, 3 columns."""
    rng = np.random.default_rng(seed)
    mask = rng.choice([-1, 0, 1], size=(n_models, n_segments), p=[0.5, 0.2, 0.3])
    spoof = rng.random(n_segments) < 0.4
    # make sure every class has a trial
    mask[0, :3] = [1, -1, 1]
    spoof[:3] = [False, False, True]
    cols = {}
    for name in ("cm", "asv", "sasv"):
        s = rng.integers(-levels, levels + 1, size=mask.shape) / 4.0
        s = s + np.where(mask == 1, 0.5, 0) - np.where(spoof[None, :], 0.5, 0)
        cols[name] = s.astype(dtype)
    models = [f"m{i}" for i in range(n_models)]
    segments = [f"s{j}" for j in range(n_segments)]
    key = sasv_key(make_key(models, segments, mask), spoof)
    scores = {n: make_scores(models, segments, v) for n, v in cols.items()}
    return key, scores, mask, spoof, cols


def _classes(mask, spoof, values):
    trial = mask != 0
    sp = trial & spoof[None, :]
    return (values[(mask == 1) & ~sp].astype(np.float64),
            values[(mask == -1) & ~sp].astype(np.float64),
            values[sp].astype(np.float64))  # fmt: skip


def _in_memory(mask, spoof, cols, given_rates: bool):
    tar, non, spf = _classes(mask, spoof, cols["sasv"])
    a, a_t = min_a_dcf(tar, non, spf)
    ctar, cnon, cspf = _classes(mask, spoof, cols["cm"])
    atar, anon, aspf = _classes(mask, spoof, cols["asv"])
    from bosaris_dask.spoofing import FIXED_ASV_RATES

    rates = asv_rates(atar, anon, aspf) if given_rates else FIXED_ASV_RATES
    try:
        t, t_t = min_t_dcf(np.concatenate([ctar, cnon]), cspf, rates)
    except ScoreError:  # an undefined t-DCF: the other metrics stand
        t, t_t = None, None
    return {"min_a_dcf": a, "min_a_dcf_threshold": a_t, "min_t_dcf": t,
            "min_t_dcf_threshold": t_t, "rates": rates,
            "t_eer": t_eer(ctar, cnon, cspf, atar, anon, aspf)}  # fmt: skip


def _check(out, ref, given_rates):
    for name in ("min_a_dcf", "min_a_dcf_threshold", "min_t_dcf", "min_t_dcf_threshold"):
        assert out[name] == ref[name], name
    r = out["asv_rates"]
    assert (r["pmiss"], r["pfa"], r["pfa_spoof"]) == (ref["rates"].pmiss, ref["rates"].pfa,
                                                      ref["rates"].pfa_spoof)  # fmt: skip
    if given_rates:
        assert r["threshold"] == ref["rates"].threshold
    assert out["t_eer"] == pytest.approx(ref["t_eer"]["t_eer"], rel=0, abs=0) or (
        out["t_eer"] is None and np.isnan(ref["t_eer"]["t_eer"])
    )


def _chunked(ds, rows, cols):
    return ds.chunk({"model": rows, "segment": cols})


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    shape=st.tuples(st.integers(1, 6), st.integers(8, 40)),
    chunks=st.tuples(st.integers(1, 4), st.integers(1, 17)),
    levels=st.sampled_from([1, 3, 40]),
    given_rates=st.booleans(),
    tiny=st.booleans(),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_sasv_metrics_equal_the_in_memory_ones(seed, shape, chunks, levels, given_rates, tiny,
                                               dtype):  # fmt: skip
    key, scores, mask, spoof, cols = _random_set(seed, *shape, levels, dtype)
    scores = {n: _chunked(s, *chunks) for n, s in scores.items()}
    ref = _in_memory(mask, spoof, cols, given_rates)
    rates = "given" if given_rates else "fixed"
    with dask.config.set(TINY if tiny else {}):
        out = evaluate_sasv(key, **scores, asv_rates=rates)
    assert (out["min_t_dcf"] is None) == ("min_t_dcf_note" in out)
    _check(out, ref, given_rates)
    tar, non, spf = _classes(mask, spoof, cols["sasv"])
    assert (out["n_target"], out["n_nontarget"], out["n_spoof"]) == (tar.size, non.size, spf.size)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 300),
    chunk=st.integers(1, 64),
    levels=st.sampled_from([1, 2, 5, 1000]),
    tiny=st.booleans(),
)
def test_cm_metrics_equal_the_in_memory_ones(seed, n, chunk, levels, tiny):
    rng = np.random.default_rng(seed)
    bona = rng.random(n) < 0.4
    bona[:2] = [True, False]
    score = rng.integers(-levels, levels + 1, size=n) / 3.0 + 0.3 * bona
    ids = [f"f{i}" for i in range(n)]
    key = make_key(["cm"], ids, np.where(bona, 1, -1)[None, :])
    scores = make_scores(["cm"], ids, score[None, :]).chunk({"segment": chunk})
    with dask.config.set(TINY if tiny else {}):
        out = evaluate_cm(scores, key)
    c = ASVSPOOF5  # the challenge's point, as 'spoof cm' states it in memory
    point = OperatingPoint.from_nontarget_prior(c.p_spoof, c.c_miss, c.c_fa_spoof)
    ds = metrics.operating_points(metrics.evaluate_arrays(score[bona], score[~bona], priors=[],
                                                          operating_points=[point]))  # fmt: skip
    assert out["eer"] == cm_eer(score[bona], score[~bona])
    assert out["eer_rocch"] == metrics.eer(score[bona], score[~bona])
    assert out["min_dcf"] == ds.min_dcf.item() and out["act_dcf"] == ds.act_dcf.item()
    assert out["cllr"] == pytest.approx(ds.cllr.item(), rel=1e-15)


def test_the_bundled_case_through_the_engine_gives_the_packages_numbers():
    key, cols = sasv_key_and_scores(read_sasv_scores(DATA / "sasv_scores.tsv.gz"),
                                    read_sasv_key(DATA / "sasv_key.tsv.gz"))  # fmt: skip
    cols = {n: c.chunk({"segment": 5000}) for n, c in cols.items()}
    out = evaluate_sasv(key, **cols)
    ref = REF["sasv"]
    assert out["min_a_dcf"] == pytest.approx(ref["min_a_dcf"], rel=1e-12)
    assert out["min_t_dcf"] == pytest.approx(ref["min_t_dcf_fixed_asv"], rel=1e-12)
    assert out["t_eer"] == pytest.approx(ref["t_eer_exact"], rel=1e-12)


@pytest.mark.parametrize("given_rates", [False, True])
def test_pass_count_is_a_plain_evaluations(given_rates):
    """One summarize call over all members: no more passes than evaluating the CM scores (the
    members skip their own hulls, so SASV can take fewer; track 1 refines the plain hull)."""
    key, scores, *_ = _random_set(3, 40, 2000, 1000)
    scores = {n: _chunked(s, 10, 500) for n, s in scores.items()}
    out = evaluate_sasv(key, **scores, asv_rates="given" if given_rates else "fixed",
                        t_eer=False)  # fmt: skip
    plain = metrics.evaluate(scores["cm"], cm_key(key), priors=[0.5])
    assert 1 <= out["passes"] <= plain.attrs["passes"]
    cm = evaluate_cm(scores["cm"], cm_key(key))
    assert cm["passes"] == plain.attrs["passes"]


def test_a_label_derived_sasv_key_costs_no_mask_and_gives_the_same_numbers():
    rng = np.random.default_rng(5)
    spk_m = np.array(["a", "b", "c", "d"])
    spk_s = rng.choice(spk_m, size=60)
    spoof = rng.random(60) < 0.3
    spoof[:2] = [False, True]
    spk_s[0] = "a"
    key = sasv_key(key_from_labels(list("wxyz"), spk_m, [f"s{i}" for i in range(60)], spk_s),
                   spoof)  # fmt: skip
    mask = np.where(spk_m[:, None] == spk_s[None, :], 1, -1)
    values = rng.normal(size=mask.shape) + mask - 2 * spoof[None, :]
    scores = make_scores(list("wxyz"), key.segment.values, values).chunk({"segment": 7})
    out = evaluate_sasv(key, sasv=scores, cm=scores, t_eer=False)
    tar, non, spf = _classes(mask, spoof, values)
    assert (out["min_a_dcf"], out["min_a_dcf_threshold"]) == min_a_dcf(tar, non, spf)
    assert (out["min_t_dcf"], out["min_t_dcf_threshold"]) == min_t_dcf(
        np.concatenate([tar, non]), spf
    )
    assert "asv_rates" in out and out["t_eer"] is None


def test_missing_scores_are_named_unless_allowed():
    key, scores, mask, spoof, cols = _random_set(1, 3, 20, 5)
    holes = np.ones(mask.shape, dtype=bool)
    holes[1, 4] = False
    sasv = make_scores(key.model.values, key.segment.values, cols["sasv"], holes)
    assert mask[1, 4] != 0
    with pytest.raises(MissingTrialsError, match=r"sasv: 1 key trial has no score, e.g. .*m1"):
        evaluate_sasv(key, sasv=sasv)
    out = evaluate_sasv(key, sasv=sasv, allow_missing=True)
    m = mask.copy()
    m[1, 4] = 0
    tar, non, spf = _classes(m, spoof, cols["sasv"])
    assert out["min_a_dcf"] == min_a_dcf(tar, non, spf)[0]


def test_bad_requests_are_one_line_errors():
    key, scores, *_ = _random_set(1, 2, 10, 5)
    with pytest.raises(TrialError, match="not an SASV key"):
        evaluate_sasv(cm_key(key), sasv=scores["sasv"])
    with pytest.raises(OptionError, match="needs the ASV scores"):
        evaluate_sasv(key, cm=scores["cm"], asv_rates="given")
    with pytest.raises(OptionError, match="the t-EER needs both the CM and the ASV scores"):
        evaluate_sasv(key, cm=scores["cm"], t_eer=True)
    out = evaluate_sasv(key, cm=scores["cm"], asv=scores["asv"], t_eer=False)
    assert out["t_eer"] is None and out["t_eer_note"] == "not asked for"


def test_the_class_counts_come_from_the_key_without_an_sasv_column():
    """Without SASV scores the counts (from the a-DCF's members) were absent, though
    documented, and the CLI dropped its count line; they are the key's there."""
    key = sasv_key(make_key(["m"], list("abcde"), [[1, 1, -1, -1, -1]]),
                   [False, False, False, True, True])  # fmt: skip
    s = make_scores(["m"], list("abcde"), [[2.0, 0.5, 1.0, 1.5, -1.0]])
    counts = ("n_target", "n_nontarget", "n_spoof")
    for columns in (
        {"cm": s, "asv": s},
        {"cm": s},
        {"sasv": s, "cm": s, "asv": s},
        {"cm": s, "asv": s, "asv_rates": "given"},
    ):  # (the ASV members': no pass)
        out = evaluate_sasv(key, **columns)
        assert [out[n] for n in counts] == [2, 1, 2], columns


def test_a_missing_class_is_named():
    key = sasv_key(make_key(["m"], list("abc"), [[1, 1, -1]]), [False, False, True])
    s = make_scores(["m"], list("abc"), [[1.0, 0.0, -1.0]])
    with pytest.raises(ScoreError, match=r"sasv: nontarget/spoof: need both .* found 0 targets"
                                         r".*'targets' are the CLASS trials"):  # fmt: skip
        evaluate_sasv(key, sasv=s)


def test_a_float32_set_written_as_stores_reads_back_to_the_same_numbers(tmp_path):
    from bosaris_dask.spoofing import stores

    key, scores, mask, spoof, cols = _random_set(11, 5, 60, 3, np.float32)
    paths = stores.write_set(tmp_path, key, {n: _chunked(s, 2, 16) for n, s in scores.items()})
    assert {p.name for p in paths} == {"key.zarr", "cm.zarr", "asv.zarr", "sasv.zarr"}
    back_key, back = stores.read_key(tmp_path / "key.zarr"), stores.read_scores(tmp_path)
    assert back_key.segment_spoof.values.tolist() == spoof.tolist()
    assert back["cm"].score.dtype == np.float32
    with dask.config.set(TINY):
        out = evaluate_sasv(back_key, **back, asv_rates="given")
    _check(out, _in_memory(mask, spoof, cols, True), True)


def test_a_key_store_with_a_bad_spoof_array_is_refused(tmp_path):
    import zarr

    from bosaris_dask.errors import StoreError
    from bosaris_dask.spoofing import stores

    key, scores, *_ = _random_set(2, 2, 10, 3)
    stores.write_set(tmp_path, key, {"cm": scores["cm"]})
    group = zarr.open_group(tmp_path / "key.zarr", mode="r+")
    del group["segment_spoof"]
    bad = group.create_array("segment_spoof", shape=(3,), dtype=bool, dimension_names=["x"])
    bad[:] = [True, False, True]
    with pytest.raises(StoreError, match="segment_spoof has bool"):
        stores.read_key(tmp_path / "key.zarr")


# --------------------------------------------------------------------------------------------
# the t-EER at scale: engine summaries refined through the extra_candidates hook
# --------------------------------------------------------------------------------------------


def _t_eer_ref(mask, spoof, cols):
    r = t_eer(*_classes(mask, spoof, cols["cm"]), *_classes(mask, spoof, cols["asv"]))
    if np.isnan(r["t_eer"]):
        return (None, r["asv_threshold"], r["cm_threshold"], None, None)
    return _point(r)


def _t_eer_out(out):
    return (out["t_eer"], out["t_eer_asv_threshold"], out["t_eer_cm_threshold"],
            out["t_eer_pmiss"], out["t_eer_pfa"])  # fmt: skip


def _point(r):
    """:func:`t_eer`'s answer in :func:`_t_eer_out`'s order."""
    return r["t_eer"], r["asv_threshold"], r["cm_threshold"], r["pmiss_tdm"], r["pfa_tdm"]


def _same(got, ref):
    """Equal, NaN thresholds (no ASV threshold qualifies) included."""
    return got[0] == ref[0] and all(x == y or (x != x and y != y)
                                    for x, y in zip(got[1:], ref[1:], strict=True))  # fmt: skip


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 100_000),
    shape=st.tuples(st.integers(1, 6), st.integers(8, 60)),
    chunks=st.tuples(st.integers(1, 4), st.integers(1, 23)),
    levels=st.sampled_from([1, 2, 3, 40, 100_000]),
    given_rates=st.booleans(),
    tiny=st.booleans(),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_t_eer_at_scale_equals_the_in_memory_one(seed, shape, chunks, levels, given_rates, tiny,
                                                 dtype):  # fmt: skip
    """t_eer_max_trials=1 sends every key through the engine; heavy ties at small levels."""
    key, scores, mask, spoof, cols = _random_set(seed, *shape, levels, dtype)
    scores = {n: _chunked(s, *chunks) for n, s in scores.items()}
    config = {**(TINY if tiny else {}), "bosaris_dask.keep-limit": 1 << 24}
    with dask.config.set(config):
        out = evaluate_sasv(key, cm=scores["cm"], asv=scores["asv"], t_eer_max_trials=1,
                            asv_rates="given" if given_rates else "fixed")  # fmt: skip
    assert _same(_t_eer_out(out), _t_eer_ref(mask, spoof, cols))
    assert "t_eer_note" not in out


@pytest.mark.parametrize("seed", range(6))
def test_t_eer_at_scale_on_continuous_scores_with_tiny_budgets(seed):
    """Distinct float scores (bins of one value are rare before refinement): several rounds."""
    rng = np.random.default_rng(seed)
    key, _, mask, spoof, _ = _random_set(seed, 20, 150, 1)
    cols = {n: rng.normal(size=mask.shape) + 2 * (mask == 1) - (2 - 3 * (n == "asv")) * spoof
            for n in ("cm", "asv")}  # fmt: skip
    scores = {n: make_scores(key.model.values, key.segment.values, v).chunk({"segment": 40})
              for n, v in cols.items()}  # fmt: skip
    with dask.config.set(TINY):
        out = evaluate_sasv(key, **scores, t_eer_max_trials=1)
    ref = _t_eer_ref(mask, spoof, cols)
    assert ref[0] is not None and _same(_t_eer_out(out), ref)
    small = evaluate_sasv(key, **scores)  # in memory (3,000 cells)
    assert _same(_t_eer_out(small), ref)


def test_the_bundled_case_at_scale_gives_the_exact_t_eer():
    key, cols = sasv_key_and_scores(read_sasv_scores(DATA / "sasv_scores.tsv.gz"),
                                    read_sasv_key(DATA / "sasv_key.tsv.gz"))  # fmt: skip
    cols = {n: c.chunk({"segment": 5000}) for n, c in cols.items()}
    memory = evaluate_sasv(key, cm=cols["cm"], asv=cols["asv"])
    scale = evaluate_sasv(key, cm=cols["cm"], asv=cols["asv"], t_eer_max_trials=1)
    assert _t_eer_out(scale) == _t_eer_out(memory)
    assert scale["t_eer"] == pytest.approx(REF["sasv"]["t_eer_exact"], rel=1e-12)


def _reads(key, scores, **kwargs):
    """evaluate_sasv counting scheduler calls and reads of each CM score chunk."""
    reads: dict[tuple[int, ...], int] = {}

    def count(block, block_id=None):
        if isinstance(block_id, tuple):  # not dask's calls to infer the output's meta
            reads[block_id] = reads.get(block_id, 0) + 1
        return block

    cm = scores["cm"]
    counted = cm.copy(data={"score": cm.score.data.map_blocks(count, dtype=cm.score.dtype),
                            "score_mask": cm.score_mask.data})  # fmt: skip
    computes = []

    def counting_get(dsk, keys, **kw):
        computes.append(keys)
        return dask.get(dsk, keys, **kw)

    with dask.config.set(scheduler=counting_get):
        out = evaluate_sasv(key, cm=counted, asv=scores["asv"], asv_rates="given", **kwargs)
    return out, len(computes), set(reads.values())


def test_t_eer_at_scale_costs_no_pass_beyond_the_other_metrics():
    """In memory the t-EER reads the columns once more; at scale it refines in the rounds of
    the other metrics, and its candidates are kept with theirs: no extra pass."""
    key, scores, mask, spoof, cols = _random_set(3, 30, 800, 100_000)
    scores = {n: _chunked(s, 10, 200) for n, s in scores.items()}
    none, none_computes, none_reads = _reads(key, scores, t_eer=False)
    memory, memory_computes, memory_reads = _reads(key, scores)
    scale, scale_computes, scale_reads = _reads(key, scores, t_eer_max_trials=1)
    ref = _t_eer_ref(mask, spoof, cols)
    assert _t_eer_out(memory) == _t_eer_out(scale) == ref
    assert none["passes"] == memory["passes"] == scale["passes"] == 2
    assert none_computes == none_reads.pop() == 2 and not none_reads
    assert memory_computes == memory_reads.pop() == 3 and not memory_reads  # + the gather
    assert scale_computes == scale_reads.pop() == 2 and not scale_reads


def test_candidates_beyond_the_keep_limit_warn_and_stay_exact():
    key, scores, mask, spoof, cols = _random_set(4, 6, 120, 100_000)
    scores = {n: _chunked(s, 3, 40) for n, s in scores.items()}
    with (
        dask.config.set({**TINY, "bosaris_dask.keep-limit": 5}),
        pytest.warns(TEerScaleWarning, match=r"t-EER: the candidate score bins hold [\d,]+ "
                                             r"trials, more than bosaris_dask.keep-limit \(5\)"),
    ):  # fmt: skip
        out = evaluate_sasv(key, cm=scores["cm"], asv=scores["asv"], t_eer_max_trials=1)
    assert _t_eer_out(out) == _t_eer_ref(mask, spoof, cols)
    assert out["passes"] > 2  # each round reads the scores again


def test_t_eer_at_scale_names_missing_asv_scores_and_drops_them_when_allowed():
    key, scores, mask, spoof, cols = _random_set(6, 4, 40, 100_000)
    holes = np.ones(mask.shape, dtype=bool)
    holes[2, 7] = False
    assert mask[2, 7] != 0
    asv = make_scores(key.model.values, key.segment.values, cols["asv"], holes)
    with pytest.raises(MissingTrialsError, match=r"asv: 1 key trial has no score, e.g. .*m2"):
        evaluate_sasv(key, cm=scores["cm"], asv=asv, t_eer_max_trials=1)
    scale = evaluate_sasv(key, cm=scores["cm"], asv=asv, t_eer_max_trials=1, allow_missing=True)
    memory = evaluate_sasv(key, cm=scores["cm"], asv=asv, allow_missing=True)  # gathered
    m = mask.copy()
    m[2, 7] = 0
    ref = t_eer(*_classes(mask, spoof, cols["cm"]), *_classes(m, spoof, cols["asv"]))
    assert _t_eer_out(scale) == _t_eer_out(memory) == _point(ref)


def test_missing_asv_scores_read_only_for_the_t_eer_are_named_unless_allowed():
    """With the fixed ASV rates on a small key the ASV column is no member of the engine call,
    only gathered for the t-EER: its key trials without a score were dropped silently."""
    key, scores, mask, spoof, cols = _random_set(3, 3, 30, 5)
    holes = np.ones(mask.shape, dtype=bool)
    holes[1, 4] = holes[2, 8] = False
    assert mask[1, 4] != 0 and mask[2, 8] != 0
    asv = make_scores(key.model.values, key.segment.values, cols["asv"], holes)
    with pytest.raises(MissingTrialsError, match=r"asv: 2 key trials have no score, e.g. .*m1"):
        evaluate_sasv(key, cm=scores["cm"], asv=asv, sasv=scores["sasv"])
    out = evaluate_sasv(key, cm=scores["cm"], asv=asv, sasv=scores["sasv"], allow_missing=True)
    m = mask.copy()
    m[1, 4] = m[2, 8] = 0
    ref = t_eer(*_classes(mask, spoof, cols["cm"]), *_classes(m, spoof, cols["asv"]))
    assert _t_eer_out(out) == _point(ref)
    assert out["n_missing"] == 2
    assert out["n_missing_by_column"] == {"sasv": 0, "cm": 0, "asv": 2}
    full = evaluate_sasv(key, cm=scores["cm"], asv=scores["asv"], sasv=scores["sasv"])
    assert full["n_missing"] == 0 and "n_missing_by_column" not in full
