"""The two-way bootstrap: resamples against a direct numpy resampling of the trials, intervals
independent of chunking and scheduler, and one-line errors for bad options.

The references (:mod:`tests.reference`, :mod:`tests.reference_conditions`) share no code with the
package: each resample's trial list is built by repeating trials (``np.repeat``) and evaluated
by brute force.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask import metrics
from bosaris_dask.bootstrap import Binning
from bosaris_dask.bootstrap.evaluation import add_intervals
from bosaris_dask.conditions import condition_table
from bosaris_dask.errors import OptionError, TrialError
from bosaris_dask.report import format_table, to_json_dict
from bosaris_dask.trials import make_key, make_scores
from tests import reference as ref
from tests import reference_conditions as refc

PRIORS = [0.5, 0.2]


def _data(seed=0, n_m=9, n_s=11, g_m=4, g_s=5, chunks=(4, 5), dtype=np.float64, shuffle=False):
    """Random key and two systems with tied scores; speaker groups in first-appearance order
    (or, with ``shuffle``, ids of a group spread out)."""
    rng = np.random.default_rng(seed)
    mids, sids = [f"m{i:02d}" for i in range(n_m)], [f"s{j:02d}" for j in range(n_s)]
    mg = np.sort(rng.integers(0, g_m, n_m))
    sg = np.sort(rng.integers(0, g_s, n_s))
    mg[:g_m], sg[:g_s] = np.arange(g_m), np.arange(g_s)
    mg, sg = np.sort(mg), np.sort(sg)
    if shuffle:
        mg, sg = rng.permutation(mg), rng.permutation(sg)
    mask = np.where(rng.random((n_m, n_s)) < 0.35, 1, -1)
    mask[rng.random((n_m, n_s)) < 0.15] = 0
    mask[0, 0], mask[0, 1] = 1, -1
    raw = [np.round(rng.normal(size=mask.shape) * 1.5 + 2.0 * (mask == 1), 0) / 2 for _ in (0, 1)]
    raw[1] = raw[1] * 0.8 - 0.25
    key = make_key(mids, sids, mask, chunks=chunks)
    systems = [make_scores(mids, sids, r.astype(dtype), chunks=chunks) for r in raw]
    tables = [
        condition_table(
            "model", mids, {"spk": [f"a{g}" for g in mg], "gender": rng.choice(["f", "m"], n_m)}
        ),  # fmt: skip
        condition_table("segment", sids, {"spk": [f"b{g}" for g in sg]}),
    ]
    return key, systems, tables, raw, mask, mg, sg


def _exact_binnings(raw, dtype=np.float64, priors=PRIORS):
    """Bins fine enough that every distinct score has its own, plus the Bayes thresholds (the
    evaluation's: ln((1 - p) / p) rounded up, which numpy's log may round the other way)."""
    from bosaris_dask.costs import OperatingPoint

    thresholds = [OperatingPoint.from_prior(p).act_threshold for p in priors]
    return [Binning.from_edges(np.concatenate([np.unique(r), thresholds]), dtype) for r in raw]


def _no_trial_mask_read(key):
    """Hold ``key``'s trial mask in memory: the bootstrap then finds its ids with trials with no
    read of a stored mask (a compute), and a test can refuse every compute."""
    key["trial_mask"] = key.trial_mask.compute()


def _evaluate(key, systems, **kw):
    return metrics.evaluate(systems, key, priors=PRIORS, names=["a", "b"], split_every=2, **kw)


@pytest.fixture(params=["per-model-group", "batched"])
def products(request, monkeypatch):
    """The bootstrap pass's products a model group at a time (every class's pairs), or in
    batches of pairs (none): both give the same exact sums."""
    from bosaris_dask.bootstrap import histograms

    monkeypatch.setattr(histograms, "_MIN_RUN", 1 if request.param == "per-model-group" else 10**9)
    return request.param


@pytest.mark.parametrize("method", ["multinomial", "poisson"])
def test_every_resample_equals_brute_force_on_the_repeated_trials(method, products):
    poisson = method == "poisson"
    key, systems, tables, raw, mask, mg, sg = _data()
    ds = _evaluate(key, systems)
    out = add_intervals(
        ds, systems, key, conditions=tables, resample=["model.spk", "segment.spk"],
        bootstrap=12, seed=5, split_every=2, binnings=_exact_binnings(raw), keep_replicates=True,
        bootstrap_method=method,
    )  # fmt: skip
    assert out.attrs["bootstrap_method"] == method
    rng = np.random.default_rng(5)
    plo = out.plo.values[out.operating_point.values >= 0]  # the operating points, sorted
    prior = 1 / (1 + np.exp(-plo))
    norm = np.minimum(prior, 1 - prior)
    for b in range(13):
        if b == 0:
            mult = np.ones(mask.shape, dtype=np.int64)
        else:  # the reference draws model groups, then segment groups, per resample
            mult = refc.two_way_multiplicity(
                list(mg), list(sg), refc.draw_groups(list(mg), rng, poisson=poisson),
                refc.draw_groups(list(sg), rng, poisson=poisson),
            )  # fmt: skip
        for k, scores in enumerate(raw):
            tar, non = refc.resample(scores, mask, mult)
            if not len(tar) or not len(non):
                assert np.isnan(out.replicate_eer.values[k, b])
                continue
            got = {n: out["replicate_" + n].values[k, b] for n in
                   ("eer", "cllr", "min_cllr", "cllr_cal", "act_dcf", "min_dcf")}  # fmt: skip
            assert got["eer"] == pytest.approx(ref.eer(tar, non), abs=1e-12)
            assert got["cllr"] == pytest.approx(ref.cllr(tar, non), rel=1e-12)
            assert got["min_cllr"] == pytest.approx(ref.min_cllr(tar, non), rel=1e-9, abs=1e-12)
            loss = ref.cllr(tar, non) - ref.min_cllr(tar, non)  # the calibration loss
            assert got["cllr_cal"] == pytest.approx(loss, rel=1e-9, abs=1e-12)
            act = np.array([ref.dcf_at(tar, non, p)[0] for p in plo]) / norm
            np.testing.assert_allclose(got["act_dcf"], act, rtol=1e-12, atol=1e-14)
            mn = ref.min_dcf(tar, non, plo) / norm
            np.testing.assert_allclose(got["min_dcf"], mn, rtol=1e-12, atol=1e-14)
    # the intervals are the reference's percentile intervals of those resamples
    eer = refc.bootstrap(ref.eer, raw[0], mask, list(mg), list(sg), resamples=12, seed=5,
                         poisson=poisson)  # fmt: skip
    np.testing.assert_allclose(out.eer_ci.values[0], refc.percentile_interval(eer, 0.95))


def test_per_condition_intervals_equal_brute_force_on_the_conditions_trials(products):
    key, systems, tables, raw, mask, mg, sg = _data(seed=21, n_m=16, n_s=18)
    gender = tables[0].columns["gender"]
    ds = _evaluate(key, systems, conditions=tables, by=["model.gender"])
    out = add_intervals(
        ds, systems, key, conditions=tables, resample=["model.spk", "segment.spk"],
        bootstrap=30, seed=7, split_every=2, binnings=_exact_binnings(raw), by=["model.gender"],
    )  # fmt: skip
    plo = out.plo.values[out.operating_point.values >= 0]
    prior = 1 / (1 + np.exp(-plo))
    for g, value in enumerate(ds["model.gender"].values):
        inside = np.where((gender == value)[:, None], mask, 0)
        for k, scores in enumerate(raw):
            metric = {
                "eer": ref.eer, "cllr": ref.cllr, "min_cllr": ref.min_cllr,
                "cllr_cal": lambda t, n: ref.cllr(t, n) - ref.min_cllr(t, n),
                "min_dcf": lambda t, n: ref.min_dcf(t, n, plo[0]) / min(prior[0], 1 - prior[0]),
            }  # fmt: skip
            for name, f in metric.items():
                values = refc.bootstrap(f, scores, inside, list(mg), list(sg), resamples=30, seed=7)
                got = out[f"condition_{name}_ci"].values[k, g]
                if name == "min_dcf":
                    got = got[out.operating_point.values >= 0][0]
                np.testing.assert_allclose(got, refc.percentile_interval(values, 0.95),
                                           rtol=1e-9, atol=1e-12)  # fmt: skip


def test_equalized_intervals_equal_brute_force_on_the_resampled_trials():
    # "every metric gets <metric>_ci": the equalized ones had none
    key, systems, tables, raw, mask, mg, sg = _data(seed=21, n_m=16, n_s=18)
    gender = np.broadcast_to(np.asarray(tables[0].columns["gender"])[:, None], mask.shape)
    ds = _evaluate(key, systems, conditions=tables, by=["model.gender"], equalize=True)
    out = add_intervals(
        ds, systems, key, conditions=tables, resample=["model.spk", "segment.spk"],
        bootstrap=30, seed=7, split_every=2, binnings=_exact_binnings(raw), by=["model.gender"],
    )  # fmt: skip
    is_op = out.operating_point.values >= 0
    priors = 1 / (1 + np.exp(-out.plo.values[is_op]))
    rng = np.random.default_rng(7)
    trials = mask != 0
    values = np.full((2, 30, 1 + 2 * len(priors)), np.nan)  # eer, act_dcf..., min_dcf...
    for b in range(30):
        mult = refc.two_way_multiplicity(
            list(mg), list(sg), refc.draw_groups(list(mg), rng), refc.draw_groups(list(sg), rng)
        )[trials]
        classes, parts = np.repeat(mask[trials], mult), np.repeat(gender[trials], mult)
        if not ((classes == 1).any() and (classes == -1).any()):
            continue
        for k, scores in enumerate(raw):
            got = refc.equalized_metrics(np.repeat(scores[trials], mult), classes, parts, priors)
            points = got["operating_points"]
            values[k, b] = [got["eer"], *(p["act_dcf"] for p in points),
                            *(p["min_dcf"] for p in points)]  # fmt: skip
    n = len(priors)
    for k in range(2):
        expected = [refc.percentile_interval(values[k, :, j], 0.95) for j in range(1 + 2 * n)]
        np.testing.assert_allclose(out.equalized_eer_ci.values[k], expected[0], atol=1e-7)
        np.testing.assert_allclose(out.equalized_act_dcf_ci.values[k, is_op], expected[1 : 1 + n],
                                   atol=1e-7)  # fmt: skip
        np.testing.assert_allclose(out.equalized_min_dcf_ci.values[k, is_op], expected[1 + n :],
                                   atol=1e-7)  # fmt: skip
        assert np.isnan(out.equalized_act_dcf_ci.values[k, ~is_op]).all()
        assert np.isfinite(expected).all() and (np.diff(expected, axis=1) > 0).all()


def test_cprimary_intervals_equal_brute_force_pooled_per_condition_and_equalized():
    # Cprimary had no interval; its priors' thresholds are now bin edges too
    cp = [0.05, 0.3]
    key, systems, tables, raw, mask, mg, sg = _data(seed=21, n_m=16, n_s=18)
    gender = np.broadcast_to(np.asarray(tables[0].columns["gender"])[:, None], mask.shape)
    ds = _evaluate(key, systems, conditions=tables, by=["model.gender"], equalize=True,
                   cprimary_priors=cp)  # fmt: skip
    out = add_intervals(
        ds, systems, key, conditions=tables, resample=["model.spk", "segment.spk"],
        bootstrap=30, seed=7, split_every=2, binnings=_exact_binnings(raw, priors=PRIORS + cp),
        by=["model.gender"],
    )  # fmt: skip
    plo = np.log(cp) - np.log1p(-np.array(cp))
    norm = np.minimum(cp, 1 - np.array(cp))

    def cprimary(tar, non):
        act = [ref.dcf_at(tar, non, x)[0] for x in plo] / norm
        return np.mean(act), np.mean(ref.min_dcf(tar, non, plo) / norm)

    rng = np.random.default_rng(7)
    trials = mask != 0
    n_cond = ds.sizes["condition"]
    values = np.full((3 + n_cond, 2, 30, 2), np.nan)  # pooled, equalized, conditions
    for b in range(30):
        mult = refc.two_way_multiplicity(
            list(mg), list(sg), refc.draw_groups(list(mg), rng), refc.draw_groups(list(sg), rng)
        )
        for k, scores in enumerate(raw):
            tar, non = refc.resample(scores, mask, mult)
            if len(tar) and len(non):
                values[0, k, b] = cprimary(tar, non)
                m = mult[trials]
                classes, parts = np.repeat(mask[trials], m), np.repeat(gender[trials], m)
                got = refc.equalized_metrics(np.repeat(scores[trials], m), classes, parts, cp)
                points = got["operating_points"]
                values[1, k, b] = (np.mean([p["act_dcf"] for p in points]),
                                   np.mean([p["min_dcf"] for p in points]))  # fmt: skip
            for g, value in enumerate(ds["model.gender"].values):
                inside = np.where(gender == value, mask, 0)
                tar, non = refc.resample(scores, inside, mult)
                if len(tar) and len(non):
                    values[3 + g, k, b] = cprimary(tar, non)

    def interval(v):
        return [refc.percentile_interval(v[:, j], 0.95) for j in (0, 1)]

    for k in range(2):
        for kind, j in (("act", 0), ("min", 1)):
            np.testing.assert_allclose(out[f"cprimary_{kind}_ci"].values[k],
                                       interval(values[0, k])[j], rtol=1e-12)  # fmt: skip
            np.testing.assert_allclose(out[f"equalized_cprimary_{kind}_ci"].values[k],
                                       interval(values[1, k])[j], atol=1e-7)  # fmt: skip
            for g in range(n_cond):
                np.testing.assert_allclose(out[f"condition_cprimary_{kind}_ci"].values[k, g],
                                           interval(values[3 + g, k])[j], rtol=1e-12)  # fmt: skip
    assert np.isfinite(out.cprimary_act_ci.values).all()
    assert (np.diff(out.condition_cprimary_min_ci.values, axis=-1) > 0).all()


def test_the_exact_intervals_lie_within_the_binned_ones_resolution_below_them():
    """Coarse bins: each binned EER, minCllr and minDCF interval end is at most its
    ``_ci_resolution`` above the exact bootstrap's (brute force on the repeated trials), pooled
    and per condition; it was "not a bound", audits finding ends 7-11% of the width off. The
    calibration loss's is at most that below; each comparison's ends are within their
    ``compare_*_resolution`` of the exact paired differences'."""
    import dask

    key, systems, tables, raw, mask, mg, sg = _data(seed=21, n_m=16, n_s=18)
    gender = tables[0].columns["gender"]
    with dask.config.set({"bosaris_dask.bootstrap-bins": 6}):
        out = _evaluate(key, systems, conditions=tables, by=["model.gender"], bootstrap=40,
                        resample=["model.spk", "segment.spk"], seed=7, compare=True)  # fmt: skip
    at = np.flatnonzero(out.operating_point.values >= 0)[0]
    plo = out.plo.values[at]
    prior = 1 / (1 + np.exp(-plo))
    metric = {"eer": ref.eer, "min_cllr": ref.min_cllr,
              "cllr_cal": lambda t, n: ref.cllr(t, n) - ref.min_cllr(t, n),
              "min_dcf": lambda t, n: ref.min_dcf(t, n, plo) / min(prior, 1 - prior)}  # fmt: skip
    wide = 0
    for g, value in [(None, None), *enumerate(out["model.gender"].values)]:
        inside = mask if g is None else np.where((gender == value)[:, None], mask, 0)
        prefix = "" if g is None else "condition_"
        for name, f in metric.items():
            values = [
                np.asarray(
                    refc.bootstrap(f, scores, inside, list(mg), list(sg), resamples=40, seed=7)
                )
                for scores in raw
            ]  # fmt: skip  (the same draws for both systems)
            for k in range(len(raw)):
                exact = np.asarray(refc.percentile_interval(values[k], 0.95))
                where = (k,) if g is None else (k, g)
                where += (at,) if name == "min_dcf" else ()
                got = out[f"{prefix}{name}_ci"].values[where]
                off = out[f"{prefix}{name}_ci_resolution"].values[where]
                if name == "cllr_cal":  # Cllr minus the bins' minCllr: at most the exact
                    got, exact = -got, -exact
                assert np.all(exact <= got + 1e-12), (name, g, k, exact, got)
                assert np.all(got - off <= exact + 1e-12), (name, g, k, exact, got, off)
                wide += bool(np.any(got - exact > 1e-9))
            exact = np.asarray(refc.percentile_interval(values[0] - values[1], 0.95))
            where = (0,) if g is None else (0, g)
            where += (at,) if name == "min_dcf" else ()
            got = out[f"{prefix}compare_{name}_ci"].values[where]
            off = out[f"{prefix}compare_{name}_resolution"].values[where]
            assert np.all(np.abs(got - exact) <= off + 1e-12), (name, g, exact, got, off)
    assert wide  # the bins are coarse enough to be off somewhere


def test_cprimary_comparison_and_resolution_against_brute_force():
    """--compare gave no Cprimary difference, and Cprimary's binned minimum interval had no
    resolution: coarse bins, brute force on the repeated trials (the same draws for both)."""
    import dask

    cp = [0.05, 0.3]
    plo = np.log(cp) - np.log1p(-np.array(cp))
    norm = np.minimum(cp, 1 - np.array(cp))
    key, systems, tables, raw, mask, mg, sg = _data(seed=21, n_m=16, n_s=18)
    with dask.config.set({"bosaris_dask.bootstrap-bins": 6}):
        out = _evaluate(key, systems, conditions=tables, bootstrap=40, cprimary_priors=cp,
                        resample=["model.spk", "segment.spk"], seed=7, compare=True)  # fmt: skip
    funcs = {
        "act": lambda t, n: np.mean([ref.dcf_at(t, n, x)[0] for x in plo] / norm),
        "min": lambda t, n: np.mean(ref.min_dcf(t, n, plo) / norm),
    }
    wide = 0
    for kind, f in funcs.items():
        values = [np.asarray(refc.bootstrap(f, scores, mask, list(mg), list(sg), resamples=40,
                                            seed=7)) for scores in raw]  # fmt: skip
        name = f"cprimary_{kind}"
        for k in range(2):
            exact = np.asarray(refc.percentile_interval(values[k], 0.95))
            got = out[f"{name}_ci"].values[k]
            if kind == "act":  # the priors' thresholds are bin edges: exact
                np.testing.assert_allclose(got, exact, rtol=1e-12)
            else:
                off = float(out[f"{name}_ci_resolution"].values[k])
                assert np.all(exact <= got + 1e-12) and np.all(got - off <= exact + 1e-12)
                wide += bool(np.any(got - exact > 1e-9))
        diff = values[0] - values[1]
        exact = np.asarray(refc.percentile_interval(diff, 0.95))
        got = out[f"compare_{name}_ci"].values[0]
        assert float(out[f"compare_{name}"].values[0]) == pytest.approx(
            float(out[name].values[0] - out[name].values[1]), abs=1e-15
        )
        if kind == "act":
            np.testing.assert_allclose(got, exact, rtol=1e-12)
            assert float(out.compare_cprimary_act_p_better.values[0]) == pytest.approx(
                np.mean(diff[~np.isnan(diff)] < 0)
            )
        else:
            off = float(out.compare_cprimary_min_resolution.values[0])
            assert np.all(np.abs(got - exact) <= off + 1e-12), (exact, got, off)
            p = float(out.compare_cprimary_min_p_better.values[0])  # of the binned differences
            assert 0 <= p <= 1 and abs(p - np.mean(diff[~np.isnan(diff)] < 0)) <= 0.2
    assert wide  # the bins are coarse enough to be off
    doc = to_json_dict(out)
    assert set(doc["comparisons"][0]["cprimary"]) == {"act", "min"}
    assert doc["comparisons"][0]["cprimary"]["min"]["diff_resolution"] > 0
    assert doc["systems"][0]["cprimary"]["min_ci_resolution"] > 0
    text = format_table(out)
    assert "  Cprimary act " in text and "  Cprimary min " in text and "(bins -" in text


def test_poisson_multiplicities_are_the_references_draws():
    from bosaris_dask.bootstrap import multiplicities, resample_groups

    key, systems, tables, raw, mask, mg, sg = _data(seed=3)
    groups = resample_groups(key, tables, ["segment.spk", "model.spk"])
    m, s = multiplicities(groups, 20, seed=11, method="poisson")
    rng = np.random.default_rng(11)
    for b in range(1, 21):
        cm = refc.group_multiplicities(list(mg), refc.draw_groups(list(mg), rng, poisson=True))
        cs = refc.group_multiplicities(list(sg), refc.draw_groups(list(sg), rng, poisson=True))
        assert m[b].tolist() == list(cm.values()) and s[b].tolist() == list(cs.values())
    assert (m[0] == 1).all() and (s[0] == 1).all()
    with pytest.raises(OptionError, match=r"\(--bootstrap-method\) must be one of multinomial, p"):
        multiplicities(groups, 2, seed=1, method="jackknife")


def test_multiplicities_are_the_references_draws():
    from bosaris_dask.bootstrap import multiplicities, resample_groups

    key, systems, tables, raw, mask, mg, sg = _data(seed=3)
    groups = resample_groups(key, tables, ["segment.spk", "model.spk"])
    m, s = multiplicities(groups, 20, seed=11)
    rng = np.random.default_rng(11)
    for b in range(1, 21):
        cm = refc.group_multiplicities(list(mg), refc.draw_groups(list(mg), rng))
        cs = refc.group_multiplicities(list(sg), refc.draw_groups(list(sg), rng))
        assert m[b].tolist() == list(cm.values()) and s[b].tolist() == list(cs.values())
    assert (m.sum(axis=1) == groups.n_model).all() and (m[0] == 1).all()


def test_one_side_only_and_point_estimates_unchanged():
    key, systems, tables, raw, mask, mg, sg = _data(seed=4)
    plain = _evaluate(key, systems)
    ds = _evaluate(key, systems, conditions=tables, bootstrap=30, resample=["model.spk"], seed=2)
    for name in plain.data_vars:
        xr.testing.assert_identical(ds[name], plain[name])
    low, high = ds.eer_ci.values.T
    assert (low <= high).all() and ds.attrs["resample"] == ["model.spk"]
    # the bins come from the evaluation's own summaries: one bootstrap pass
    assert ds.attrs["passes"] == plain.attrs["passes"] + 1
    assert ds.attrs["bootstrap_pair_factor"] >= 1
    # with conditions too: the pooled summaries give the same bins, the intervals are the same
    by = _evaluate(key, systems, conditions=tables, by=["model.gender"], bootstrap=30,
                   resample=["model.spk"], seed=2)  # fmt: skip
    assert by.attrs["passes"] == plain.attrs["passes"] + 1
    for name in ("eer_ci", "cllr_ci", "min_cllr_ci", "act_dcf_ci", "min_dcf_ci"):
        xr.testing.assert_identical(by[name], ds[name])


@pytest.mark.parametrize("method", ["multinomial", "poisson"])
def test_ids_without_a_trial_are_not_drawn(method):
    # a model or segment row left empty (a filtered key) is in no trial: its group was drawn
    # all the same (10 model groups where 4 hold trials), which changed every interval and no
    # point estimate; ids without a trial in a group with trials change nothing either
    key, systems, tables, raw, mask, mg, sg = _data(seed=3)
    names = ("eer_ci", "cllr_ci", "min_cllr_ci", "act_dcf_ci", "min_dcf_ci", "compare_eer_ci")
    kw = {
        "bootstrap": 40,
        "resample": ["model.spk", "segment.spk"],
        "seed": 5,
        "compare": True,
        "bootstrap_method": method,
    }
    want = _evaluate(key, systems, conditions=tables, **kw)
    n_m, n_s = mask.shape
    # three empty models (two of new speakers, one of speaker a0), two empty segments of new ones
    mids = [*key.model.values.tolist(), "x0", "x1", "x2"]
    sids = [*key.segment.values.tolist(), "y0", "y1"]
    grown = np.zeros((n_m + 3, n_s + 2), dtype=int)
    grown[:n_m, :n_s] = mask
    big_key = make_key(mids, sids, grown, chunks=(4, 5))
    big_systems = []
    for r in raw:
        scores = np.zeros(grown.shape)
        scores[:n_m, :n_s] = r
        big_systems.append(make_scores(mids, sids, scores, chunks=(4, 5)))
    big_tables = [
        condition_table("model", mids, {"spk": [*(f"a{g}" for g in mg), "new0", "new1", "a0"]}),
        condition_table("segment", sids, {"spk": [*(f"b{g}" for g in sg), "new2", "new3"]}),
    ]
    got = _evaluate(big_key, big_systems, conditions=big_tables, **kw)
    assert (
        got.attrs["bootstrap_groups"]
        == want.attrs["bootstrap_groups"]
        == [len(np.unique(mg)), len(np.unique(sg))]
    )
    for name in names:
        np.testing.assert_array_equal(got[name].values, want[name].values, err_msg=name)


@pytest.mark.parametrize("chunks", [(2, 3), (9, 11), (5, 4)])
def test_intervals_do_not_depend_on_chunking(chunks):
    key, systems, tables, *_ = _data(seed=6, chunks=(4, 5))
    kw = {"conditions": tables, "bootstrap": 40, "resample": ["model.spk", "segment.spk"],
          "seed": 9, "compare": True}  # fmt: skip
    expected = _evaluate(key, systems, **kw)
    key2, systems2, *_ = _data(seed=6, chunks=chunks)
    got = _evaluate(key2, systems2, **kw)
    for name in expected.data_vars:
        if name.endswith(("_ci", "_binned", "_p_better")):
            xr.testing.assert_identical(got[name], expected[name])


def test_blocks_of_whole_groups_in_any_id_order(monkeypatch):
    from bosaris_dask.bootstrap import blocks as chunk_blocks
    from bosaris_dask.bootstrap import histograms

    key, systems, tables, *_ = _data(seed=12, n_m=30, n_s=26, g_m=7, g_s=6, chunks=(11, 13),
                                     shuffle=True)  # fmt: skip
    kw = {"conditions": tables, "bootstrap": 25, "resample": ["model.spk", "segment.spk"],
          "seed": 3}  # fmt: skip
    expected = _evaluate(key, systems, **kw)
    # pair histograms of ~3 pairs and blocks of ~40 cells: many blocks per chunk
    monkeypatch.setattr(chunk_blocks, "BLOCK_BYTES", 3 * (expected.attrs["bootstrap_bins"][0] +
                                                        histograms.LIMBS) * 8)  # fmt: skip
    monkeypatch.setattr(chunk_blocks, "_TRIALS", 40)
    got = _evaluate(key, systems, **kw)
    for name in ("eer_ci", "cllr_ci", "min_cllr_ci", "act_dcf_ci", "min_dcf_ci", "eer_binned"):
        xr.testing.assert_identical(got[name], expected[name])


def test_row_chunks_merged_when_groups_are_split():
    import dask

    key, systems, tables, *_ = _data(seed=13, n_m=30, n_s=26, g_m=7, g_s=6, chunks=(5, 26),
                                     shuffle=True)  # fmt: skip
    kw = {"conditions": tables, "bootstrap": 20, "resample": ["model.spk", "segment.spk"],
          "seed": 4}  # fmt: skip
    merged = _evaluate(key, systems, **kw)  # six row chunks of a few hundred bytes: fewer
    with dask.config.set({"bosaris_dask.bootstrap-chunk": 1 << 10}):
        kept = _evaluate(key, systems, **kw)
    assert merged.attrs["bootstrap_pair_factor"] < 0.8 * kept.attrs["bootstrap_pair_factor"]
    for name in ("eer_ci", "cllr_ci", "min_cllr_ci", "act_dcf_ci", "min_dcf_ci"):
        xr.testing.assert_identical(merged[name], kept[name])


def test_compare_is_paired_and_consistent():
    key, systems, tables, *_ = _data(seed=8, n_m=14, n_s=16)
    ds = _evaluate(key, systems, conditions=tables, bootstrap=60, compare=True, seed=1,
                   resample=["model.spk", "segment.spk"])  # fmt: skip
    assert ds.pair.values.tolist() == ["a - b"]
    for name in ds.data_vars:  # described like every variable of an evaluation
        assert {"units", "long_name"} <= set(ds[name].attrs), name
    assert ds.first.values.tolist() == ["a"] and ds.second.values.tolist() == ["b"]
    assert float(ds.compare_eer[0]) == float(ds.eer[0] - ds.eer[1])
    assert 0 <= float(ds.compare_eer_p_better[0]) <= 1
    ops = ds.operating_point.values >= 0
    assert np.isfinite(ds.compare_act_dcf_ci.values[0][ops]).all()
    assert np.isnan(ds.compare_act_dcf_ci.values[0][~ops]).all()
    # a system compared with itself: the difference is 0 in every resample
    same = _evaluate(key, [systems[0], systems[0]], conditions=tables, bootstrap=20,
                     compare=True, seed=1, resample=["model.spk"])  # fmt: skip
    assert (same.compare_eer_ci.values == 0).all() and (same.compare_cllr_p_better == 0).all()


def test_compare_per_condition():
    key, systems, tables, *_ = _data(seed=8, n_m=14, n_s=16)
    kw = {"bootstrap": 60, "compare": True, "seed": 1, "resample": ["model.spk", "segment.spk"]}
    # one condition holding every trial: its comparison is the pooled one, resample for resample
    mids = key.model.values.tolist()
    everything = condition_table("model", mids, {"all": ["x"] * len(mids)})
    ds = _evaluate(key, systems, conditions=[*tables, everything], by=["model.all"], **kw)
    for name in ("eer", "cllr", "min_cllr", "act_dcf", "min_dcf"):
        for var in ("", "_ci", "_p_better"):
            got = ds[f"condition_compare_{name}{var}"].isel(condition=0).values
            np.testing.assert_array_equal(got, ds[f"compare_{name}{var}"].values, name + var)
    # per gender: the exact differences, paired intervals, described variables
    ds = _evaluate(key, systems, conditions=tables, by=["model.gender"], **kw)
    assert ds.condition_compare_eer.dims == ("pair", "condition")
    eer = ds.condition_eer.values
    np.testing.assert_array_equal(ds.condition_compare_eer.values[0], eer[0] - eer[1])
    low, high = np.moveaxis(ds.condition_compare_cllr_ci.values, -1, 0)
    p_better = ds.condition_compare_cllr_p_better.values
    assert (low <= high).all() and ((p_better >= 0) & (p_better <= 1)).all()
    ops = ds.operating_point.values >= 0
    assert np.isfinite(ds.condition_compare_act_dcf_ci.values[0][:, ops]).all()
    assert np.isnan(ds.condition_compare_act_dcf_ci.values[0][:, ~ops]).all()
    for name in ds.data_vars:
        assert {"units", "long_name"} <= set(ds[name].attrs), name
    same = _evaluate(key, [systems[0], systems[0]], conditions=tables, by=["model.gender"], **kw)
    assert (same.condition_compare_eer_ci.values == 0).all()
    assert (same.condition_compare_min_dcf_p_better.values[:, :, ops] == 0).all()


def test_cprimary_and_equalized_metrics_compared():
    """Cprimary's paired differences per condition and equalized, and the equalized metrics',
    as the pooled ones: a
    condition holding every trial (equalized over it alone) compares as the pooled trials."""
    key, systems, tables, *_ = _data(seed=8, n_m=14, n_s=16)
    kw = {"bootstrap": 60, "compare": True, "seed": 1, "resample": ["model.spk", "segment.spk"],
          "cprimary_priors": [0.05, 0.3]}  # fmt: skip
    mids = key.model.values.tolist()
    everything = condition_table("model", mids, {"all": ["x"] * len(mids)})
    ds = _evaluate(key, systems, conditions=[*tables, everything], by=["model.all"],
                   equalize=True, **kw)  # fmt: skip
    for kind in ("act", "min"):
        for var in ("", "_ci", "_p_better"):
            pooled = ds[f"compare_cprimary_{kind}{var}"].values
            got = ds[f"condition_compare_cprimary_{kind}{var}"].isel(condition=0).values
            np.testing.assert_array_equal(got, pooled, kind + var)
            # the equalized shares are rounded to 2**-30: the same up to that
            equalized = ds[f"compare_equalized_cprimary_{kind}{var}"].values
            np.testing.assert_allclose(equalized, pooled, rtol=0, atol=1e-6)
    for name in ("eer", "act_dcf", "min_dcf"):  # the equalized metrics' differences too
        for var in ("", "_ci", "_p_better"):
            got, pooled = ds[f"compare_equalized_{name}{var}"], ds[f"compare_{name}{var}"]
            np.testing.assert_allclose(got.values, pooled.values, rtol=0, atol=1e-6)
    assert float(ds.compare_equalized_cprimary_act[0]) == float(
        ds.equalized_cprimary_act[0] - ds.equalized_cprimary_act[1])  # fmt: skip
    for name in ds.data_vars:
        assert {"units", "long_name"} <= set(ds[name].attrs), name
    assert ds.condition_compare_cprimary_act.attrs["long_name"].startswith("condition_cprimary")
    doc = to_json_dict(ds)["comparisons"][0]
    assert doc["conditions"][0]["cprimary"] == doc["cprimary"]
    assert set(doc["equalized"]) == {"eer", "operating_points", "cprimary"}
    assert doc["equalized"]["operating_points"][0]["min_dcf"].keys() == {
        "diff", "diff_ci", "p_first_better", "diff_resolution"}  # fmt: skip
    table = format_table(ds)
    assert "equalized Cprimary min" in table and "equalized EER (%)" in table
    # per gender, a system against itself: differences of 0 in every resample
    same = _evaluate(key, [systems[0], systems[0]], conditions=tables, by=["model.gender"], **kw)
    assert same.condition_compare_cprimary_min_ci.dims == ("pair", "condition", "bound")
    assert (same.condition_compare_cprimary_act_ci.values == 0).all()
    assert (same.condition_compare_cprimary_min_p_better.values == 0).all()


@pytest.mark.slow
def test_local_cluster_gives_identical_intervals():
    from bosaris_dask.cluster import connect

    key, systems, tables, *_ = _data(seed=10, n_m=20, n_s=24, chunks=(7, 9))
    kw = {"conditions": tables, "bootstrap": 50, "resample": ["model.spk", "segment.spk"],
          "seed": 4, "compare": True}  # fmt: skip
    expected = _evaluate(key, systems, **kw)
    with connect(cluster="local", workers=2, threads_per_worker=1, dashboard=False,
                 announce=None) as client:  # fmt: skip
        assert len(client.scheduler_info()["workers"]) == 2
        got = _evaluate(key, systems, **kw)
    # the cluster keeps the row chunks the threads merge (test_row_chunks_merge_on_threads_only)
    assert got.attrs.pop("bootstrap_pair_factor") >= expected.attrs.pop("bootstrap_pair_factor")
    xr.testing.assert_identical(got, expected)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"ci": 0.9}, "ci (--ci) needs bootstrap (--bootstrap)"),
        ({"bootstrap": 10}, "bootstrap (--bootstrap) needs resample (--resample)"),
        ({"bootstrap": 10, "resample": ["same.spk"]}, "expected model.COL or segment.COL"),
        (
            {"bootstrap": 10, "resample": ["model.spk,segment.spk"]},
            "resample (--resample) 'model.spk,segment.spk': one spec per value: resample=["
            "'model.spk', 'segment.spk'] (--resample model.spk --resample segment.spk)",
        ),
        (
            {"bootstrap": 10, "resample": ["segment.gender"]},
            "no segment column 'gender' in the condition tables (segment columns: spk; 'gender' is "
            "a model column)",
        ),
        ({"bootstrap": 10, "resample": ["model.nope"]}, "no model column 'nope'"),
        ({"bootstrap": 10, "resample": ["model.spk", "model.gender"]}, "one spec per side"),
        ({"bootstrap": 10, "resample": ["model.spk"], "ci": 1.5}, "strictly between 0 and 1"),
        ({"bootstrap": 1, "resample": ["model.spk"]}, "(--bootstrap) must be an integer from 2"),
        ({"bootstrap": 0}, "(--bootstrap) must be an integer from 2"),  # not "no bootstrap"
    ],
)
def test_bad_options_are_one_line_errors(kw, message):
    key, systems, tables, *_ = _data()
    with pytest.raises(OptionError) as err:
        _evaluate(key, systems, conditions=tables, **kw)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bad_options_without_tables_or_with_one_system():
    key, systems, tables, *_ = _data()
    with pytest.raises(OptionError, match=r"give conditions \(--conditions\)"):
        _evaluate(key, systems, bootstrap=5, resample=["model.spk"])
    with pytest.raises(OptionError, match=r"compare \(--compare\) needs at least two systems"):
        metrics.evaluate(systems[0], key, conditions=tables, bootstrap=5, compare=True,
                         resample=["model.spk"])  # fmt: skip
    short = condition_table("model", ["m00"], {"spk": ["x"]})
    with pytest.raises(TrialError, match="ids of the key are not in the table"):
        _evaluate(key, systems, conditions=[short], bootstrap=5, resample=["model.spk"])
    # a column in two tables of its side: which one the groups come from would be a guess
    model_tables = [t for t in tables if t.side == "model"]
    spk = next(t for t in model_tables if "spk" in t.columns)
    again = condition_table("model", list(spk.ids), {"spk": ["x"] * len(spk.ids)},
                            source="again.tsv")  # fmt: skip
    with pytest.raises(TrialError) as err:
        _evaluate(key, systems, conditions=[*tables, again], bootstrap=5, resample=["model.spk"])
    assert str(err.value) == f"again.tsv: model column 'spk' is also in {spk.source}"


def test_budget_error_names_the_limit():
    import dask

    key, systems, tables, *_ = _data()
    with dask.config.set({"bosaris_dask.bootstrap-budget": 1 << 20}), \
            pytest.raises(OptionError, match="bosaris_dask.bootstrap-budget"):  # fmt: skip
        _evaluate(key, systems, conditions=tables, bootstrap=2000, resample=["model.spk"])


def test_a_bootstrap_over_budget_per_condition_is_refused_before_the_evaluation():
    """With ``--by``, the bootstrap's task memory grows with the conditions: checked on the
    client before any pass, not after a whole evaluation."""
    import dask

    def no_pass(*args, **kwargs):
        raise AssertionError("a pass ran before the bootstrap's memory was checked")

    key, systems, tables, *_ = _data()
    _no_trial_mask_read(key)
    kw = {"conditions": tables, "bootstrap": 2000, "resample": ["model.spk"], "seed": 1}
    # room for the pooled histograms (at 16 bins: 135 MB) but not for one per model speaker
    # (162 MB)
    with dask.config.set({"bosaris_dask.bootstrap-budget": 150 << 20}):
        _evaluate(key, systems, **kw)
        with (
            dask.config.set(scheduler=no_pass),
            pytest.raises(
                OptionError,
                match=r"--bootstrap 2000 with \d+ groups, 2 systems x 4 conditions needs",
            ),
        ):
            _evaluate(key, systems, by=["model.spk"], **kw)


# --------------------------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli_set(tmp_path_factory):
    from bosaris_dask import io
    from bosaris_dask.simulate import simulate

    out = tmp_path_factory.mktemp("boot")
    key, systems = simulate(40, 60, systems=2, target_rate=0.05, seed=2)
    io.write(key, out / "key.zarr")
    for k, s in enumerate(systems, start=1):
        io.write(s, out / f"s{k}.zarr")
    for side in ("model", "segment"):
        ids, labels = key[side].values, key[f"{side}_label"].values
        (out / f"{side}s.tsv").write_text(
            f"{side}\tspeaker\tside_{side}\n"
            + "".join(f"{i}\t{s}\tx\n" for i, s in zip(ids, labels, strict=True))
        )
    return out


def _cli(cli_set, *extra):
    from bosaris_dask.cli import main

    d = cli_set
    return main(["evaluate", "--key", str(d / "key.zarr"), "--scores", str(d / "s1.zarr"),
                 "--scores", str(d / "s2.zarr"), "--prior", "0.1", "--cluster", "threads",
                 *extra])  # fmt: skip


def test_cli_intervals_and_comparison_in_json(cli_set, tmp_path, capsys):
    import json

    d = cli_set
    out = tmp_path / "ci.json"
    assert _cli(cli_set, "--conditions", str(d / "models.tsv"), "--conditions",
                str(d / "segments.tsv"), "--bootstrap", "30", "--resample", "model.speaker",
                "--resample", "segment.speaker", "--seed", "3", "--compare", "--ci", "0.9",
                "--json", str(out)) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert "90% bootstrap intervals (30 two-way resamples" in text and "s1 - s2:" in text
    doc = json.loads(out.read_text())
    first = doc["systems"][0]
    assert len(first["eer_ci"]) == 2 and first["eer_ci"][0] <= first["eer_ci"][1]
    assert set(first["operating_points"][0]) >= {"act_dcf_ci", "min_dcf_ci"}
    assert doc["bootstrap"]["resamples"] == 30 and doc["bootstrap"]["seed"] == 3
    assert doc["bootstrap"]["resample"] == ["model.speaker", "segment.speaker"]
    (cmp,) = doc["comparisons"]
    assert (cmp["first"], cmp["second"]) == ("s1", "s2")
    assert set(cmp["eer"]) == {"diff", "diff_ci", "p_first_better", "diff_resolution"}
    assert set(cmp["cllr"]) == {"diff", "diff_ci", "p_first_better"}  # exact per resample
    assert cmp["operating_points"][0]["prior"] == 0.1
    from bosaris_dask import io

    key = io.read(d / "key.zarr")
    systems = [io.read(d / f"s{k}.zarr") for k in (1, 2)]
    ds = metrics.evaluate(systems, key, priors=[0.1], conditions=[str(d / "models.tsv"),
                          str(d / "segments.tsv")], bootstrap=30, seed=3, ci=0.9, compare=True,
                          resample=["model.speaker", "segment.speaker"])  # fmt: skip
    assert first["eer_ci"] == ds.eer_ci.values[0].tolist()


def test_cli_comparison_per_condition_in_json(cli_set, tmp_path):
    import json

    d = cli_set
    out = tmp_path / "ci.json"
    # --by a column with one value: one condition holding every trial
    assert _cli(cli_set, "--conditions", str(d / "models.tsv"), "--conditions",
                str(d / "segments.tsv"), "--by", "model.side_model", "--bootstrap", "30",
                "--resample", "model.speaker", "--seed", "3", "--compare", "--json",
                str(out), "-q") == 0  # fmt: skip
    (cmp,) = json.loads(out.read_text())["comparisons"]
    (cond,) = cmp["conditions"]
    assert cond["by"] == {"model.side_model": "x"}
    assert {k: cond[k] for k in ("eer", "cllr", "min_cllr", "operating_points")} == {
        k: cmp[k] for k in ("eer", "cllr", "min_cllr", "operating_points")
    }


def test_cli_intervals_name_a_stated_point_as_the_main_table(cli_set, tmp_path, capsys):
    """A point stated with costs is ``0.01:10:1`` in the intervals and comparisons, as in the
    main table (was ``P=0.0917431``), and the comparisons' JSON names its costs, as each
    system's entry does."""
    import json

    d = cli_set
    out = tmp_path / "ci.json"
    assert _cli(cli_set, "--operating-point", "0.01:10:1", "--conditions", str(d / "models.tsv"),
                "--bootstrap", "20", "--resample", "model.speaker", "--seed", "3", "--compare",
                "--json", str(out)) == 0  # fmt: skip
    text = capsys.readouterr().out
    intervals = text[text.index("bootstrap intervals") :]
    assert "act 0.01:10:1" in intervals and "act P=0.1" in intervals
    assert "actDCF 0.01:10:1 " in intervals and "minDCF P=0.1 " in intervals
    assert "0.0917" not in text
    doc = json.loads(out.read_text())
    (cmp,) = doc["comparisons"]
    named = [{k: p[k] for k in ("prior", "p_target", "c_miss", "c_fa")}
             for p in doc["systems"][0]["operating_points"]]  # fmt: skip
    assert [{k: p[k] for k in named[0]} for p in cmp["operating_points"]] == named
    assert named[1] == {"prior": pytest.approx(1 / (1 + 99 / 10), rel=1e-15), "p_target": 0.01,
                        "c_miss": 10.0, "c_fa": 1.0}  # fmt: skip


def test_cli_poisson_bootstrap(cli_set, tmp_path):
    import json

    d = cli_set
    out = tmp_path / "ci.json"
    assert _cli(cli_set, "--conditions", str(d / "models.tsv"), "--conditions",
                str(d / "segments.tsv"), "--bootstrap", "20", "--resample", "model.speaker",
                "--seed", "3", "--bootstrap-method", "poisson", "--json", str(out),
                "-q") == 0  # fmt: skip
    doc = json.loads(out.read_text())
    # one side resampled: not called two-way (the JSON said so where the table did not)
    assert doc["bootstrap"]["method"].startswith("bootstrap of one side (Poisson(1) group")
    from bosaris_dask import io

    key = io.read(d / "key.zarr")
    systems = [io.read(d / f"s{k}.zarr") for k in (1, 2)]
    ds = metrics.evaluate(systems, key, priors=[0.1], conditions=[str(d / "models.tsv"),
                          str(d / "segments.tsv")], bootstrap=20, seed=3,
                          resample=["model.speaker"], bootstrap_method="poisson")  # fmt: skip
    assert doc["systems"][0]["eer_ci"] == ds.eer_ci.values[0].tolist()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--ci", "0.9"], "ci (--ci) needs bootstrap (--bootstrap)"),
        (
            ["--bootstrap", "5", "--resample", "segment.side_model"],
            "--resample segment.side_model: no segment column 'side_model' in the condition tables "
            "(segment columns: side_segment, speaker; 'side_model' is a model column)",
        ),
        (
            ["--bootstrap", "5", "--resample", "model.age"],
            "--resample model.age: no model column 'age'",
        ),
        (["--bootstrap", "5"], "bootstrap (--bootstrap) needs resample (--resample)"),
        (["--compare"], "compare (--compare) needs bootstrap (--bootstrap)"),
    ],
)
def test_cli_bad_options_are_one_line_errors(cli_set, capsys, extra, message):
    d = cli_set
    tables = ["--conditions", str(d / "models.tsv"), "--conditions", str(d / "segments.tsv")]
    assert _cli(cli_set, *tables, *extra) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"bosaris-dask: error: {message}")


def test_the_pass_is_checked_against_the_workers_memory():
    import dask.array as da

    from bosaris_dask.bootstrap.histograms import task_memory
    from bosaris_dask.errors import MemoryLimitError
    from bosaris_dask.passes.memory import check_worker_memory

    inputs = [da.zeros((4000, 4000), chunks=(1000, 4000), dtype=t) for t in ("i1", "f4", "?")]
    need = task_memory(inputs, n_rows=1001, nb=256, n_systems=1, split_every=8)
    assert need.inputs == 1000 * 4000 * 6 and need.results == 2 * 1001 * (256 + 32) * 8

    class Small:  # a worker with 200 MB
        def scheduler_info(self, n_workers):
            return {"workers": {"tcp://w": {"memory_limit": 200 << 20, "nthreads": 1,
                                            "metrics": {"memory": 0}}}}  # fmt: skip

    with pytest.raises(MemoryLimitError, match="tcp://w would need about"):
        check_worker_memory(need, Small())
    # a task running its blocks in two threads holds two blocks and two copies of the result
    two = task_memory(inputs, n_rows=1001, nb=256, n_systems=1, split_every=8, threads=2)
    assert two.buffers == 2 * need.buffers + need.results


def _chunks(n: int, cuts: list[int]) -> tuple[int, ...]:
    edges = sorted({0, n, *(c % n for c in cuts)})
    return tuple(b - a for a, b in zip(edges[:-1], edges[1:], strict=True))


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 1000), rows=st.lists(st.integers(1, 40), max_size=4),
       cols=st.lists(st.integers(1, 40), max_size=4), shuffle=st.booleans())  # fmt: skip
def test_every_resample_is_the_same_under_random_chunkings(seed, rows, cols, shuffle):
    key, systems, tables, raw, *_ = _data(seed=seed, n_m=13, n_s=15, shuffle=shuffle)
    kw = {"conditions": tables, "resample": ["model.spk", "segment.spk"], "bootstrap": 15,
          "seed": seed, "split_every": 2, "binnings": _exact_binnings(raw),
          "keep_replicates": True}  # fmt: skip
    ds = _evaluate(key, systems)
    expected = add_intervals(ds, systems, key, **kw)
    chunks = (_chunks(13, rows), _chunks(15, cols))
    key2, systems2, *_ = _data(seed=seed, n_m=13, n_s=15, chunks=chunks, shuffle=shuffle)
    got = add_intervals(_evaluate(key2, systems2), systems2, key2, **kw)
    for name in got.data_vars:
        if name.startswith("replicate_") or name.endswith("_ci"):
            xr.testing.assert_identical(got[name], expected[name])


def test_scores_beyond_the_exact_cllr_range_are_refused():
    from bosaris_dask.errors import ScoreError

    key, systems, tables, raw, *_ = _data(seed=5)
    big = make_scores(systems[0].model.values, systems[0].segment.values, raw[0] * 1e6)
    with pytest.raises(ScoreError, match=r"need each trial.s Cllr term below 131072 nats"):
        metrics.evaluate(big, key, conditions=tables, bootstrap=5, resample=["model.spk"])


def test_multiplicities_beyond_exact_float32_products_are_refused_before_any_pass(monkeypatch):
    """The check runs on the client: no pass (neither the bins' nor the bootstrap's) starts."""
    import dask

    from bosaris_dask.bootstrap import evaluation, histograms

    def no_pass(*args, **kwargs):
        raise AssertionError("a pass ran before the multiplicities were checked")

    def big(groups, resamples, seed, method="multinomial"):
        m = np.ones((resamples + 1, groups.n_model), np.uint32)
        s = np.ones((resamples + 1, groups.n_segment), np.uint32)
        m[1, 0], s[1, 0] = 1 << 12, 1 << 12
        return m, s

    monkeypatch.setattr(evaluation, "multiplicities", big)
    monkeypatch.setattr(evaluation, "prefix_histograms", no_pass)
    monkeypatch.setattr(histograms, "run_pass", no_pass)
    key, systems, tables, *_ = _data(seed=6)
    _no_trial_mask_read(key)
    kw = {"conditions": tables, "bootstrap": 3, "resample": ["model.spk", "segment.spk"]}
    with (
        dask.config.set(scheduler=no_pass),
        pytest.raises(
            OptionError,
            match=r"^bootstrap multiplicities too large .*4096 x segment 4096 >= 2\*\*24",
        ),
    ):
        _evaluate(key, systems, **kw)
    m, s = big(type("G", (), {"n_model": 2, "n_segment": 3})(), 2, 0)
    with pytest.raises(OptionError, match="too large for exact float32"):
        histograms.resample_histograms([key.trial_mask.data], m, s, np.zeros(9, int),
                                       np.zeros(11, int), [], [], split_every=2,
                                       progress=False)  # fmt: skip


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), rows=st.integers(1, 30), cols=st.integers(1, 30),
       g=st.integers(1, 6), n_cond=st.integers(0, 3), f32=st.booleans(),
       small=st.booleans())  # fmt: skip
def test_compiled_pass_equals_the_numpy_path_bit_for_bit(seed, rows, cols, g, n_cond, f32, small):
    """The bootstrap pass's compiled per-trial loops (numba) against its numpy path: random
    classes, masks, group codes in any order, conditions, ties, -0.0 and scores on bin edges,
    in one block or (``small``) many."""
    import os

    from bosaris_dask.bootstrap import blocks as chunk_blocks
    from bosaris_dask.bootstrap import fast_block, histograms
    from bosaris_dask.passes import jit

    if jit.compiled(fast_block._collect) is None:
        pytest.skip("numba missing or disabled")
    rng = np.random.default_rng(seed)
    dtype = np.float32 if f32 else np.float64
    classes = rng.choice(np.array([-1, 0, 1], np.int8), (rows, cols), p=[0.6, 0.1, 0.3])
    score = (np.round(rng.normal(size=(rows, cols)) * 3, 1) * rng.choice([1, 1e-3, 20])).astype(
        dtype
    )
    score[rng.random((rows, cols)) < 0.1] = -0.0
    mask = rng.random((rows, cols)) < 0.9
    mcode, scode = rng.integers(0, g, rows), rng.integers(0, g + 1, cols)
    m = rng.integers(0, 4, (8, int(mcode.max()) + 1))
    s = rng.integers(0, 4, (8, int(scode.max()) + 1))
    edges = np.unique(np.r_[rng.choice(score.ravel(), 5), rng.normal(size=4)])
    binning = Binning.from_edges(edges, dtype)
    blocks = [score, mask] + ([rng.integers(0, n_cond, (rows, cols)).astype(np.int8)]
                              if n_cond else [])  # fmt: skip
    kw = {"system": 0, "binning": binning, "n_conditions": n_cond, "pin_blas": False}
    trials = chunk_blocks._TRIALS
    chunk_blocks._TRIALS = 40 if small else trials
    try:
        compiled = histograms.chunk_histograms(m, s, mcode, scode, classes, *blocks, **kw)
        os.environ[jit.DISABLE_ENV] = "1"
        numpy_path = histograms.chunk_histograms(m, s, mcode, scode, classes, *blocks, **kw)
    finally:
        os.environ.pop(jit.DISABLE_ENV, None)
        chunk_blocks._TRIALS = trials
    np.testing.assert_array_equal(compiled.view(np.int64), numpy_path.view(np.int64))


def _random_chunk(rng, rows, cols, g, n_cond, resamples=7):
    """A chunk's multiplicities, group codes, classes, blocks (scores, mask and, with
    ``n_cond``, each cell's condition: a pair's trials in several) and bins, at random."""
    classes = rng.choice(np.array([-1, 0, 1], np.int8), (rows, cols), p=[0.6, 0.1, 0.3])
    score = np.round(rng.normal(size=(rows, cols)) * 3, 1)
    mask = rng.random((rows, cols)) < 0.9
    mcode, scode = rng.integers(0, g, rows), rng.integers(0, g + 1, cols)
    m = rng.integers(0, 4, (resamples, int(mcode.max()) + 1))
    s = rng.integers(0, 4, (resamples, int(scode.max()) + 1))
    cond = [rng.integers(0, n_cond, (rows, cols)).astype(np.int8)] if n_cond else []
    binning = Binning.from_edges(np.unique(rng.normal(size=5)), np.float64)
    return m, s, mcode, scode, classes, [score, mask, *cond], binning


def _both_layouts(m, s, mcode, scode, classes, blocks, **kw):
    """The chunk's histograms as a grid and as a packed list of the same trials (the bounds,
    each way's own, left out)."""
    from bosaris_dask.bootstrap import cell_blocks, histograms

    grid = histograms.chunk_histograms(m, s, mcode, scode, classes, *blocks, **kw)
    cells = [np.broadcast_to(mcode[:, None], classes.shape),
             np.broadcast_to(scode[None, :], classes.shape)]  # fmt: skip
    packed = cell_blocks.cell_chunk_histograms(m, s, classes, *blocks, *cells, **kw)
    return grid[:-1], packed[:-1]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), rows=st.integers(1, 30), cols=st.integers(1, 30),
       g=st.integers(1, 6), n_cond=st.integers(2, 6), cap=st.integers(1, 5),
       numpy_path=st.booleans())  # fmt: skip
def test_blocks_crowded_by_conditions_are_cut_with_the_same_sums(
    seed, rows, cols, g, n_cond, cap, numpy_path
):
    """Conditions can split a block's group pairs into more cells than its histograms may hold:
    the block is then cut where it runs (into fewer model or segment groups on a grid, fewer
    pairs in a packed list), and the sums are those of one block, bit for bit, on the compiled
    and the numpy paths."""
    import os

    from bosaris_dask.bootstrap import blocks as chunk_blocks
    from bosaris_dask.bootstrap import histograms
    from bosaris_dask.passes import jit

    m, s, mcode, scode, classes, blocks, binning = _random_chunk(
        np.random.default_rng(seed), rows, cols, g, n_cond
    )
    kw = {"system": 0, "binning": binning, "n_conditions": n_cond, "pin_blas": True}
    if numpy_path:
        os.environ[jit.DISABLE_ENV] = "1"
    saved = chunk_blocks.BLOCK_BYTES
    try:
        whole = _both_layouts(m, s, mcode, scode, classes, blocks, **kw)
        # room for the counts of `cap` cells a class: most blocks here are crowded
        chunk_blocks.BLOCK_BYTES = cap * (binning.n_bins + histograms.LIMBS) * 8
        cut = _both_layouts(m, s, mcode, scode, classes, blocks, **kw)
    finally:
        chunk_blocks.BLOCK_BYTES = saved
        os.environ.pop(jit.DISABLE_ENV, None)
    for a in (*whole, *cut):
        np.testing.assert_array_equal(a, whole[0])


def test_a_crowded_block_is_cut_into_blocks_within_the_limit(monkeypatch):
    """One model group against four segment groups, every pair's trials in three conditions:
    twelve cells a class in one planned block; with room for two a class, the block is cut
    down to single pairs (three cells a class: no smaller cut), the same sums."""
    from bosaris_dask.bootstrap import blocks as chunk_blocks
    from bosaris_dask.bootstrap import histograms

    rng = np.random.default_rng(5)
    m, s, _, _, _, blocks, binning = _random_chunk(rng, 3, 8, 1, 3)
    mcode, scode = np.zeros(3, int), np.repeat(np.arange(4), 2)
    m, s = m[:, :1], rng.integers(1, 4, (7, 4))
    classes = np.where(np.arange(24).reshape(3, 8) % 2, 1, -1).astype(np.int8)
    blocks[1][:] = True
    blocks[2][:] = np.arange(3)[:, None]  # each row a condition: a pair's trials in three
    kw = {"system": 0, "binning": binning, "n_conditions": 3, "pin_blas": True}
    whole = _both_layouts(m, s, mcode, scode, classes, blocks, **kw)
    runs = []
    real_block = histograms._block

    def block(m_, s_, mc, sc, ri, cj, *args):
        runs.append(len(np.unique(sc[cj])))
        return real_block(m_, s_, mc, sc, ri, cj, *args)

    monkeypatch.setattr(histograms, "_block", block)
    monkeypatch.setattr(chunk_blocks, "BLOCK_BYTES", 2 * (binning.n_bins + histograms.LIMBS) * 8)
    cut = _both_layouts(m, s, mcode, scode, classes, blocks, **kw)
    # planned: 2 segment groups a block (2 pairs: the limit without conditions); crowded
    # (6 cells a class): cut into single pairs
    assert runs == [2, 1, 1, 2, 1, 1]
    for a in (*whole, *cut):
        np.testing.assert_array_equal(a, whole[0])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), rows=st.integers(1, 40), cols=st.integers(1, 40),
       g=st.integers(1, 6), n_cond=st.integers(0, 3), f64=st.booleans(),
       small=st.booleans(), pairs=st.sampled_from([1, 2, 3, 4096]))  # fmt: skip
def test_products_per_model_group_equal_the_batched_ones(
    seed, rows, cols, g, n_cond, f64, small, pairs
):
    """The products a model group at a time (only the resamples that draw the group) against
    the batched ones (every resample's pair weights): random classes, masks, group codes in any
    order, conditions, zero multiplicities, one block or (``small``) many, float32 products or
    (``f64``: float32's exact range made tiny) float64 ones, segment groups in slices (and
    batches) of ``pairs``, blocks in threads or in turn; the same sums, bit for bit."""
    from bosaris_dask.bootstrap import blocks as chunk_blocks
    from bosaris_dask.bootstrap import histograms

    m, s, mcode, scode, classes, blocks, binning = _random_chunk(
        np.random.default_rng(seed), rows, cols, g, n_cond, resamples=9
    )
    m[:, 0] *= seed % 3 > 0  # sometimes a model group no resample draws
    kw = {"system": 0, "binning": binning, "n_conditions": n_cond, "pin_blas": False}
    saved = chunk_blocks._TRIALS, histograms._MIN_RUN, histograms._F32, histograms._PAIRS
    chunk_blocks._TRIALS = 40 if small else saved[0]
    histograms._PAIRS = pairs
    histograms._F32 = 16.0 if f64 else saved[2]  # above every m * s here (at most 9)
    try:
        histograms._MIN_RUN = 1
        per_group = histograms.chunk_histograms(m, s, mcode, scode, classes, *blocks, **kw)
        # the blocks one after another (tasks in parallel) as in threads of one task: the same
        in_turn = histograms.chunk_histograms(m, s, mcode, scode, classes, *blocks,
                                              **(kw | {"pin_blas": True}))  # fmt: skip
        histograms._MIN_RUN = 10**9
        batched = histograms.chunk_histograms(m, s, mcode, scode, classes, *blocks, **kw)
    finally:
        chunk_blocks._TRIALS, histograms._MIN_RUN, histograms._F32, histograms._PAIRS = saved
    np.testing.assert_array_equal(in_turn.view(np.int64), per_group.view(np.int64))
    # the sums (not the last entry: each way's bound on them)
    np.testing.assert_array_equal(per_group[:-1], batched[:-1])
    assert per_group[-1] < 2.0**53 and batched[-1] < 2.0**53


def test_row_chunks_merge_on_threads_only(monkeypatch):
    """Merged row chunks hold the bootstrap's work of split groups once, but a merged task can
    take several times a chunk's memory (3.3 GB against 0.9 GB at 1e8 trials): on a cluster
    the chunks stay as the memory check sized them, spread over its worker threads."""
    from types import SimpleNamespace

    import dask.array as da

    from bosaris_dask.bootstrap import evaluation

    rng = np.random.default_rng(0)
    x = da.zeros((60, 8), chunks=(6, 8))  # 10 row chunks, each holding most model groups
    groups = SimpleNamespace(model_codes=rng.integers(0, 12, 60), segment_codes=np.arange(8) % 4,
                             n_model=12, n_segment=4)  # fmt: skip
    merged, pin = evaluation._merged_rows([x], groups)
    assert merged[0].numblocks[0] < 10  # on threads: merged (fewer group pairs split)

    class Cluster:  # three single-thread workers
        def scheduler_info(self, n_workers):
            w = {"memory_limit": 2**30, "nthreads": 1, "metrics": {"memory": 0}}
            return {"workers": {f"tcp://w{i}": dict(w) for i in range(3)}}

    monkeypatch.setattr(evaluation, "current_client", lambda: Cluster())
    kept, pin = evaluation._merged_rows([x], groups)
    assert kept[0] is x and pin  # 10 chunks for 3 worker threads: one BLAS thread each


def test_resamples_left_out_of_each_condition_are_counted_and_said():
    # 6 speakers (2 models, 3 segments each), gender on the model side; the documented draws
    # (rng.integers per side and resample) replayed here tell which resamples hold no target
    # or no non-target of a condition
    spk_m, spk_s = np.repeat(np.arange(6), 2), np.repeat(np.arange(6), 3)
    mids, sids = [f"m{i}" for i in range(12)], [f"s{j}" for j in range(18)]
    key = make_key(mids, sids, np.where(spk_m[:, None] == spk_s[None, :], 1, -1))
    rng = np.random.default_rng(0)
    scores = make_scores(mids, sids, rng.normal(size=(12, 18)) + 2 * (spk_m[:, None] == spk_s))
    gender = np.where(spk_m < 3, "f", "m")
    tables = [condition_table("model", mids, {"spk": [f"k{s}" for s in spk_m], "g": gender}),
              condition_table("segment", sids, {"spk": [f"k{s}" for s in spk_s]})]  # fmt: skip
    b, seed = 200, 5
    spec = {"ci": 0.9, "bootstrap": b, "resample": ["model.spk", "segment.spk"], "seed": seed}
    ds = metrics.evaluate(scores, key, priors=[0.5], conditions=tables, by=["model.g"], **spec)
    draws = np.random.default_rng(seed)
    want = {"f": 0, "m": 0}
    for _ in range(b):
        mm = np.bincount(draws.integers(0, 6, 6), minlength=6)
        sm = np.bincount(draws.integers(0, 6, 6), minlength=6)
        for g, speakers in (("f", range(3)), ("m", range(3, 6))):
            tar = any(mm[s] and sm[s] for s in speakers)
            non = any(mm[s] and sm[t] for s in speakers for t in range(6) if t != s)
            want[g] += not (tar and non)
    got = dict(zip([str(c).split("=")[1] for c in ds.condition.values],
                   ds.condition_bootstrap_degenerate.values[0].tolist(), strict=True))  # fmt: skip
    assert got == want and 0 < want["f"] < b, (got, want)
    lines = format_table(ds)
    assert f"per condition, left out of its intervals: model.g=f {want['f']}" in lines
    assert f"{want['m']} of the {b} resamples drew no target or no non-target" in lines


def test_a_side_of_one_group_is_refused_not_reported_as_a_zero_width_interval():
    # every resample of one group is the data again: the '95% interval' was the binned value
    # of the data, [24.224, 24.224] for an EER of 23.988
    key, systems, tables, *_ = _data()
    one = condition_table("model", list(key.model.values), {"all": ["x"] * key.sizes["model"]})
    refused = (
        r"--resample model.all: every model of the key with a trial has the same all "
        r"\('x'\): a side"
    )
    with pytest.raises(OptionError, match=refused):
        _evaluate(key, systems, conditions=[one, tables[1]], bootstrap=50,
                  resample=["model.all", "segment.spk"])  # fmt: skip


def test_a_condition_of_one_resampled_group_gets_no_interval_not_one_of_zero_width():
    # --by model.spk --resample model.spk: each condition's trials are one speaker's, which a
    # resample draws whole or not at all, so every resample's metrics were the data's and the
    # intervals had zero width ([7.399, 7.399] for an EER of 7.011: the bins' value)
    from bosaris_dask.bootstrap.evaluation import BootstrapWarning

    key, systems, tables, raw, mask, mg, sg = _data()
    with pytest.warns(BootstrapWarning, match=r"conditions have no bootstrap intervals") as got:
        ds = _evaluate(key, systems, conditions=tables, by=["model.spk", "model.gender"],
                       bootstrap=60, resample=["model.spk"], seed=3, compare=True)  # fmt: skip
    has_both = (ds.condition_n_target.values > 0) & (ds.condition_n_nontarget.values > 0)
    assert has_both[0].sum() >= 4 and f"{has_both[0].sum()} conditions have" in str(got[0].message)
    np.testing.assert_array_equal(ds.condition_bootstrap_whole.values, has_both)
    assert np.isnan(ds.condition_eer_ci.values).all() and np.isnan(ds.condition_cllr_ci).all()
    # the exact paired differences stay; their intervals and fractions are not made up
    diff = ds.condition_eer.values[0] - ds.condition_eer.values[1]
    np.testing.assert_array_equal(ds.condition_compare_eer.values[0], diff)
    assert np.isnan(ds.condition_compare_eer_ci.values).all()
    assert np.isnan(ds.condition_compare_eer_p_better.values).all()
    # two-way: each condition's segment side still varies, so every condition has intervals
    ds2 = _evaluate(key, systems, conditions=tables, by=["model.spk"], bootstrap=60,
                    resample=["model.spk", "segment.spk"], seed=3)  # fmt: skip
    assert not ds2.condition_bootstrap_whole.values.any()
    lo, hi = ds2.condition_cllr_ci.values[..., 0], ds2.condition_cllr_ci.values[..., 1]
    assert (hi > lo).all()
    lines = format_table(ds)
    assert "per condition, no intervals where every resample holds the condition's trials" in lines
    g = int(np.flatnonzero(has_both[0])[0])
    assert f"EER (%) {100 * diff[g]:+.3f} (no interval)" in lines
    doc = to_json_dict(ds)
    assert doc["systems"][0]["conditions"][g]["bootstrap_note"].startswith("no intervals: every")
    assert doc["systems"][0]["conditions"][g]["eer_ci"] == [None, None]


def test_too_few_resamples_for_the_level_warn_once():
    import warnings

    from bosaris_dask.bootstrap.evaluation import BootstrapWarning

    key, systems, tables, *_ = _data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _evaluate(key, systems, conditions=tables, bootstrap=39, resample=["model.spk"], seed=1)
        _evaluate(key, systems, conditions=tables, bootstrap=40, resample=["model.spk"], seed=1)
    few = [w for w in caught if issubclass(w.category, BootstrapWarning)]
    assert [str(w.message)[:44] for w in few] == ["39 resamples are too few for 95% intervals: "]


def test_the_too_few_warning_comes_after_the_option_errors_and_says_one_least_count():
    """A bad option (one system to compare, an unknown column) came after a warning about the
    resample count; at --ci 0.999 the warning asked for 2000 "(1000 or more for stable ends)"."""
    import warnings

    from bosaris_dask.bootstrap.evaluation import BootstrapWarning

    key, systems, tables, *_ = _data()
    for kw in ({"compare": True}, {"resample": ["model.nope"]}):
        args = {"resample": ["model.spk"]} | kw
        with warnings.catch_warnings(record=True) as caught, pytest.raises(OptionError):
            warnings.simplefilter("always")
            metrics.evaluate(systems[0], key, conditions=tables, bootstrap=5, **args)
        assert not [w for w in caught if issubclass(w.category, BootstrapWarning)], kw
    ds = _evaluate(key, systems)
    with warnings.catch_warnings(record=True) as caught, pytest.raises(OptionError):
        warnings.simplefilter("always")  # (add_intervals warned first too: a review)
        add_intervals(ds, systems, key, conditions=tables, resample=["model.nope"], bootstrap=5,
                      split_every=2)  # fmt: skip
    assert not [w for w in caught if issubclass(w.category, BootstrapWarning)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _evaluate(key, systems, conditions=tables, bootstrap=100, ci=0.999, resample=["model.spk"])
    (said,) = [str(w.message) for w in caught if issubclass(w.category, BootstrapWarning)]
    assert said.endswith("take at least 2000"), said


def test_the_attributes_name_the_bootstrap_and_every_interval():
    """A bootstrap of one side was described as "two-way" in the variables' attributes, and the
    intervals of Cprimary and of the equalized metrics had no attributes at all."""
    key, systems, tables, *_ = _data()
    kw = {"conditions": tables, "by": ["model.gender"], "equalize": True, "seed": 1,
          "cprimary_priors": [0.1, 0.3], "bootstrap": 20}  # fmt: skip
    one = _evaluate(key, systems, resample=["segment.spk"], **kw)
    two = _evaluate(key, systems, resample=["model.spk", "segment.spk"], **kw)
    assert one.eer_ci.attrs["long_name"] == "95% bootstrap percentile interval of ROCCH-EER"
    assert two.eer_ci.attrs["long_name"].startswith("95% two-way bootstrap percentile interval")
    assert one.cprimary_min_ci.attrs == {
        "units": "normalized DCF",
        "long_name": "95% bootstrap percentile interval of cprimary_min (binned: the exact "
        "bootstrap's ends at most cprimary_min_ci_resolution below)",
    }
    assert one.equalized_min_dcf_ci.attrs["long_name"].endswith("no bound computed)")
    assert one.equalized_act_dcf_ci.attrs["long_name"].endswith("shares rounded to 2**-30)")
    assert one.cprimary_min_ci_resolution.attrs["long_name"].startswith("bound on how far below")
    three = _evaluate(key, systems, resample=["model.spk", "segment.spk"], compare=True, **kw)
    assert three.compare_cprimary_min_resolution.attrs["long_name"].startswith("bound on how far")
    assert three.compare_cprimary_act_p_better.attrs["units"] == "fraction"
    undescribed = [v for v in three.data_vars if str(v).startswith(("compare_", "cprimary_",
                   "equalized_")) and not three[v].attrs.get("long_name")]  # fmt: skip
    assert not undescribed
    undescribed = [v for v in two.data_vars if str(v).endswith("_ci") and not
                   two[v].attrs.get("long_name")]  # fmt: skip
    assert not undescribed and len([v for v in two.data_vars if str(v).endswith("_ci")]) >= 15


def test_the_interval_block_says_which_metrics_have_no_interval():
    key, systems, tables, *_ = _data()
    ds = _evaluate(
        key,
        systems,
        conditions=tables,
        by=["model.gender"],
        equalize=True,
        cprimary_priors=[0.2, 0.5],
        bootstrap=40,
        resample=["model.spk"],
        seed=1,
        fmr=[0.1],
    )
    text = format_table(ds)
    assert ("95% bootstrap intervals (40 resamples of model.spk, seed 1; percentile)\n"
            "  of the pooled metrics (and per condition): PRBEP, the fixed-FMR points and the "
            "AUC have none\n") in text  # fmt: skip
    doc = to_json_dict(ds)
    assert doc["bootstrap"]["no_intervals"] == ["PRBEP", "the fixed-FMR points", "the AUC"]
    for k, entry in enumerate(doc["systems"]):  # the calibration loss has its interval
        assert entry["cllr_cal_ci"] == ds.cllr_cal_ci.values[k].tolist()
        assert 0 <= entry["cllr_cal_ci"][0] < entry["cllr_cal_ci"][1]
        assert entry["cllr_cal_ci_resolution"] == float(ds.cllr_cal_ci_resolution[k]) >= 0
    for k, entry in enumerate(doc["systems"]):  # Cprimary has its intervals
        assert entry["cprimary"]["act_ci"] == ds.cprimary_act_ci.values[k].tolist()
        assert entry["equalized"]["cprimary"]["min_ci"] == (
            ds.equalized_cprimary_min_ci.values[k].tolist()
        )
        for g, cond in enumerate(entry["conditions"]):
            assert cond["cprimary"]["min_ci"] == _nulls(ds.condition_cprimary_min_ci.values[k, g])
    # pooled, equalized and condition m's; condition f's resamples are all its data's trials
    assert text.count("95% intervals [") == 6 and text.count("95% intervals n/a / n/a") == 2
    # the equalized metrics have theirs: in the JSON, and a line under each system's row
    for k, entry in enumerate(doc["systems"]):
        equalized = entry["equalized"]
        assert equalized["eer_ci"] == ds.equalized_eer_ci.values[k].tolist()
        for point in equalized["operating_points"]:
            low, high = point["act_dcf_ci"]
            assert low <= high and len(point["min_dcf_ci"]) == 2
    assert text.count("  95% intervals: EER (%) [") == 2


def _nulls(values):
    return [None if np.isnan(v) else float(v) for v in values]


def test_a_comparison_says_how_far_the_bins_resolve_the_rank_metrics():
    # Two systems that rank every trial alike differ by 0 exactly, but each has bins of its
    # own: the resamples' EER, minDCF and minCllr differ by the bins' error, which the
    # comparison bounds as its resolution (the larger of the two systems' distances from
    # binned value to its other bound, in any resample: it was their binned errors on the
    # data, which every audit's copy of a system exceeded, by up to 4x, in the resamples'
    # differences)
    import dask

    key, systems, tables, *_ = _data(n_m=14, n_s=16)
    twin = systems[0].copy(data={"score": systems[0].score * 2.5 + 0.3,
                                 "score_mask": systems[0].score_mask})  # fmt: skip
    with dask.config.set({"bosaris_dask.bootstrap-bins": 4}):  # coarse: binned values are off
        ds = _evaluate(key, [systems[0], twin], conditions=tables, bootstrap=40,
                       resample=["model.spk", "segment.spk"], seed=2, compare=True)  # fmt: skip
    for name in ("eer", "min_cllr", "min_dcf"):
        assert np.all(np.nan_to_num(ds[f"compare_{name}"][0].values) == 0.0)
        off = np.abs(ds[f"{name}_binned"].values - ds[name].values).max(axis=0)
        bound = ds[f"compare_{name}_resolution"][0].values
        ends = np.abs(ds[f"compare_{name}_ci"][0].values).max(axis=-1)  # exact: 0
        assert np.all(np.nan_to_num(ends) <= np.nan_to_num(bound)), name
        assert np.all(np.nan_to_num(off) <= np.nan_to_num(bound)) and np.nanmax(bound) > 0
    assert "compare_cllr_resolution" not in ds  # Cllr and actDCF are exact per resample
    text = format_table(ds)
    res = float(ds.compare_eer_resolution[0]) * 100
    assert "  EER (%) +0.000 [" in text and f"; bins ±{res:.3f})" in text
    from bosaris_dask.report import to_json_dict

    (cmp,) = to_json_dict(ds)["comparisons"]
    assert cmp["eer"]["diff_resolution"] == float(ds.compare_eer_resolution[0])
    assert "diff_resolution" not in cmp["cllr"]


def test_a_system_compared_with_its_copy_differs_by_exactly_zero_without_a_bins_note():
    """The same bins of the same scores: every resample's difference is 0, so nothing is left
    unresolved (no ``bins ±R``), pooled and per condition; a scaled copy keeps its note."""
    import dask

    key, systems, tables, *_ = _data(n_m=14, n_s=16)
    copy = systems[0].copy(deep=True)
    kw = {"conditions": tables, "bootstrap": 40, "resample": ["model.spk", "segment.spk"],
          "seed": 2, "compare": True, "by": ["model.gender"]}  # fmt: skip
    ds = _evaluate(key, [systems[0], copy], **kw)
    for name in ("eer", "min_cllr", "cllr_cal", "min_dcf"):
        for prefix in ("", "condition_"):
            values = ds[f"{prefix}compare_{name}_resolution"].values
            assert np.all(values[~np.isnan(values)] == 0) and not np.all(np.isnan(values))
            ci = ds[f"{prefix}compare_{name}_ci"].values
            assert np.all(ci[~np.isnan(ci)] == 0)
    text = format_table(ds)
    assert "  EER (%) +0.000 [+0.000, +0.000] (0.00)" in text and "bins ±" not in text
    # a scaled copy ranks alike, but its bins (the Bayes thresholds among their edges) differ
    twin = systems[0].copy(data={"score": systems[0].score * 2.5 + 0.3,
                                 "score_mask": systems[0].score_mask})  # fmt: skip
    with dask.config.set({"bosaris_dask.bootstrap-bins": 4}):
        scaled = _evaluate(key, [systems[0], twin], **kw)
    assert float(scaled.compare_eer_resolution[0]) > 0 and "; bins ±" in format_table(scaled)


def test_a_comparison_with_missing_scores_says_it_is_not_paired_over_trials():
    import warnings

    from bosaris_dask.bootstrap.evaluation import BootstrapWarning

    key, systems, tables, *_ = _data()
    mask = systems[1].score_mask.values.copy()
    mask[0, 0] = mask[0, 1] = False  # two key trials without a score in the second system
    holed = systems[1].copy()
    holed["score_mask"] = (systems[1].score_mask.dims, mask)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = _evaluate(key, [systems[0], holed], conditions=tables, bootstrap=40, seed=1,
                       resample=["model.spk"], compare=True, allow_missing=True)  # fmt: skip
    said = [str(w.message) for w in caught if issubclass(w.category, BootstrapWarning)]
    assert said == ["the comparison pairs the resamples, not the trials: with missing scores "
                    "the systems are compared on different trials (key trials missing per "
                    "system: a 0, b 2)"]  # fmt: skip
    from bosaris_dask.report import to_json_dict

    # a JSON reader was not told (the warning only went to stderr)
    (cmp,) = to_json_dict(ds)["comparisons"]
    assert cmp["note"] == ("each system on its own scored trials (a misses 0 key trials, b 2): "
                           "the resamples are paired, not the trials")  # fmt: skip
    full = _evaluate(key, systems, conditions=tables, bootstrap=10, seed=1,
                     resample=["model.spk"], compare=True)  # fmt: skip
    assert "note" not in to_json_dict(full)["comparisons"][0]


def test_the_table_header_says_one_side_and_poisson_draws():
    from bosaris_dask.report import format_table

    key, systems, tables, *_ = _data()
    ds = _evaluate(key, systems, conditions=tables, bootstrap=6, resample=["model.spk"], seed=2,
                   bootstrap_method="poisson")  # fmt: skip
    assert ("95% bootstrap intervals (6 resamples of model.spk, seed 2; Poisson draws; "
            "percentile)") in format_table(ds)  # fmt: skip
    both = _evaluate(key, systems, conditions=tables, bootstrap=6, seed=2,
                     resample=["model.spk", "segment.spk"])  # fmt: skip
    assert ("95% bootstrap intervals (6 two-way resamples of model.spk x segment.spk, seed 2; "
            "percentile)") in format_table(both)  # fmt: skip


def test_a_condition_without_targets_says_so_instead_of_nan_intervals():
    from bosaris_dask.report import format_table

    rng = np.random.default_rng(0)
    mids, sids = [f"m{i}" for i in range(12)], [f"s{j}" for j in range(15)]
    mask = np.where(rng.random((12, 15)) < 0.3, 1, -1)
    mask[6:, :] = -1  # the models of group b have no target
    key = make_key(mids, sids, mask)
    systems = [make_scores(mids, sids, mask * 1.5 + rng.normal(size=mask.shape)) for _ in "ab"]
    table = condition_table("model", mids, {"g": ["a"] * 6 + ["b"] * 6,
                                            "spk": [f"p{i // 2}" for i in range(12)]})  # fmt: skip
    ds = _evaluate(key, systems, conditions=[table], by=["model.g"], bootstrap=40,
                   resample=["model.spk"], seed=1, compare=True)  # fmt: skip
    text = format_table(ds)
    block = text[text.index("== condition model.g=b") :]
    assert "  no intervals: no target or no non-target here\n" in block
    assert "\na - b: none (a system without targets or non-targets here)\n" in block
    assert "nan" not in block.split("bootstrap intervals")[1].split("(no targets")[0]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 30),
       top=st.sampled_from([16, 2**20, 2**40, 2**53]))  # fmt: skip
def test_cllr_sums_from_limbs_are_the_exact_totals_rounded_once(seed, rows, top):
    """Every resample's Cllr sum from its 4-bit limb columns (each a sum below 2**53) against
    Python's exact integers, rounded once to float64."""
    from bosaris_dask.bootstrap import histograms

    rng = np.random.default_rng(seed)
    limbs = rng.integers(0, top, (rows, histograms.LIMBS)).astype(np.float64)
    limbs[:, rng.random(histograms.LIMBS) < 0.3] = 0
    half = histograms.LIMBS // 2
    for got, row in zip(histograms._limb_sums(limbs), limbs.astype(np.int64).tolist(),
                        strict=True):  # fmt: skip
        hi = sum(v << (4 * k) for k, v in enumerate(row[:half]))
        lo = sum(v << (4 * k) for k, v in enumerate(row[half:]))
        assert got == ((hi << 37) + lo) / (1 << 57)
