"""Per-condition evaluation: every condition's metrics equal a plain evaluation of its trials
alone and a brute-force reference; bad input is a one-line error; empty conditions are counted.
"""

from __future__ import annotations

import json

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from scipy.special import logit

from bosaris_dask import metrics, result_layout
from bosaris_dask.cli import main
from bosaris_dask.conditions import condition_table
from bosaris_dask.conditions.evaluation import condition_result, condition_text
from bosaris_dask.errors import MissingTrialsError, OptionError, ScoreError, TrialError
from bosaris_dask.report import format_table, to_json_dict
from bosaris_dask.trials import make_key, make_scores
from tests import reference as ref

PRIORS = [0.5, 0.1]


def _membership(mids, sids, mcols, scols, spec, value):
    """Cells of a condition, by direct lookups in the tables' dicts (no package code)."""
    kind, col = spec.split(".")
    out = np.zeros((len(mids), len(sids)), dtype=bool)
    for i, m in enumerate(mids):
        for j, s in enumerate(sids):
            if kind == "model":
                out[i, j] = mcols[col][m] == value
            elif kind == "segment":
                out[i, j] = scols[col][s] == value
            else:
                out[i, j] = (mcols[col][m] == scols[col][s]) == (value == "same")
    return out


def _case(seed, n_m, n_s):
    rng = np.random.default_rng(seed)
    mids, sids = [f"m{i}" for i in range(n_m)], [f"s{j}" for j in range(n_s)]
    mask = rng.choice([-1, 0, 1], size=(n_m, n_s), p=[0.55, 0.15, 0.3])
    scores = np.round(rng.normal(size=(n_m, n_s)) * 2 + (mask == 1), 0) / 2  # many ties
    mcols = {"g": dict(zip(mids, rng.choice(["f", "m"], n_m), strict=True)),
             "l": dict(zip(mids, rng.choice(["a", "b", "c"], n_m), strict=True))}  # fmt: skip
    scols = {"l": dict(zip(sids, rng.choice(["a", "b"], n_s), strict=True)),
             "d": dict(zip(sids, rng.choice(["5", "10"], n_s), strict=True))}  # fmt: skip
    tables = [condition_table("model", mids, {c: [v[m] for m in mids] for c, v in mcols.items()}),
              condition_table("segment", sids, {c: [v[s] for s in sids]
                                                for c, v in scols.items()})]  # fmt: skip
    return mids, sids, mask, scores, mcols, scols, tables


def _check_against_references(ds, mids, sids, mask, scores, mcols, scols, chunks, by):
    key_all = make_key(mids, sids, mask, chunks=chunks)
    for g, label in enumerate(ds.condition.values):
        member = np.ones(mask.shape, dtype=bool)
        for spec in by:
            member &= _membership(mids, sids, mcols, scols, spec, str(ds[spec].values[g]))
        tar = scores[(mask == 1) & member]
        non = scores[(mask == -1) & member]
        full = condition_result(ds, g).isel(system=0)
        one = metrics.operating_points(full)
        assert int(one.n_target) == len(tar) and int(one.n_nontarget) == len(non), label
        if len(tar) == 0 or len(non) == 0:
            assert np.isnan(float(one.eer)) and np.isnan(one.min_dcf.values).all()
            continue
        assert float(one.eer) == pytest.approx(ref.eer(tar, non), abs=1e-12)
        assert float(one.cllr) == pytest.approx(ref.cllr(tar, non), rel=1e-12)
        assert float(one.min_cllr) == pytest.approx(ref.min_cllr(tar, non), abs=1e-12)
        for j, p in enumerate(PRIORS):
            raw, pmiss, pfa = ref.dcf_at(tar, non, logit(p))
            assert float(one.act_dcf_raw[j]) == pytest.approx(raw, abs=1e-12)
            assert float(one.min_dcf_raw[j]) == pytest.approx(
                float(ref.min_dcf(tar, non, logit(p))), abs=1e-12
            )
        # a plain evaluation of the condition's trials alone (the key filtered)
        plain_full = metrics.evaluate(
            make_scores(mids, sids, scores, chunks=chunks),
            make_key(mids, sids, np.where(member, mask, 0), chunks=chunks), priors=PRIORS,
        ).isel(system=0)  # fmt: skip
        plain = metrics.operating_points(plain_full)
        for name in ("eer", "prbep", "cllr", "min_cllr", "pmiss30", "pfa30", "auc_low"):
            assert float(one[name]) == float(plain[name]), (label, name)  # exact sums: bitwise
        for name in ("act_dcf", "min_dcf", "act_pfa", "min_pmiss", "min_threshold"):
            np.testing.assert_array_equal(one[name].values, plain[name].values)
        for name in result_layout.PER_PLO:  # along the whole plo axis, sweep included
            np.testing.assert_array_equal(full[name].values, plain_full[name].values)
        for kind in ("rocch", "roc"):  # NaN-padded across conditions, cut at their lengths
            for got, want in zip(metrics.curve(full, None, kind),
                                 metrics.curve(plain_full, None, kind), strict=True):  # fmt: skip
                np.testing.assert_array_equal(got, want)
            assert not np.isnan(got).any()
    assert key_all.sizes["model"] == len(mids)


SPECS = ["model.g", "segment.l", "same.l", "segment.d", "model.l"]


@settings(max_examples=6, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(
    seed=st.integers(0, 2**16),
    n_m=st.integers(3, 7),
    n_s=st.integers(3, 9),
    chunk=st.tuples(st.integers(1, 4), st.integers(1, 5)),
    picks=st.lists(st.sampled_from(SPECS), min_size=1, max_size=2, unique=True),
)
def test_each_condition_equals_its_trials_alone(seed, n_m, n_s, chunk, picks):
    mids, sids, mask, scores, mcols, scols, tables = _case(seed, n_m, n_s)
    mask[0, 0], mask[-1, -1] = 1, -1  # the pooled evaluation needs both classes
    with dask.config.set(scheduler="sync"):
        ds = metrics.evaluate(
            make_scores(mids, sids, scores, chunks=chunk), make_key(mids, sids, mask, chunks=chunk),
            priors=PRIORS, conditions=tables, by=picks, split_every=2,
        )  # fmt: skip
        _check_against_references(ds, mids, sids, mask, scores, mcols, scols, chunk, picks)
    pooled = metrics.evaluate(make_scores(mids, sids, scores), make_key(mids, sids, mask),
                              priors=PRIORS)  # fmt: skip
    for name in ("eer", "n_target", "cllr", "act_dcf", "rocch_pfa", "min_threshold",
                 "n_vertices"):  # fmt: skip
        np.testing.assert_array_equal(ds[name].values, pooled[name].values)
    assert int(ds.condition_n_target.sum()) == int(ds.n_target.sum())


def test_two_systems_missing_scores_and_counts():
    mids, sids, mask, scores, mcols, scols, tables = _case(3, 8, 10)
    rng = np.random.default_rng(0)
    scored = rng.random(mask.shape) > 0.2
    systems = [make_scores(mids, sids, scores, scored, chunks=(3, 4)),
               make_scores(mids, sids, -scores, chunks=(5, 2))]  # fmt: skip
    key = make_key(mids, sids, mask, chunks=(4, 4))
    with pytest.raises(MissingTrialsError, match=r"^a: \d+ key trials have no score, e.g. \("):
        metrics.evaluate(systems, key, conditions=tables, by=["model.g"], names=["a", "b"])
    ds = metrics.evaluate(systems, key, conditions=tables, by=["model.g", "same.l"],
                          names=["a", "b"], allow_missing=True, priors=PRIORS)  # fmt: skip
    assert ds.condition_n_target.dims == ("system", "condition")
    assert ds.condition.values.tolist() == [
        "model.g=f, same.l=same", "model.g=f, same.l=different",
        "model.g=m, same.l=same", "model.g=m, same.l=different",
    ]  # fmt: skip
    for g in range(4):
        member = _membership(mids, sids, mcols, scols, "model.g", str(ds["model.g"].values[g]))
        member &= _membership(mids, sids, mcols, scols, "same.l", str(ds["same.l"].values[g]))
        trials = (mask != 0) & member
        assert int(ds.condition_n_missing[0, g]) == int((trials & ~scored).sum())
        assert int(ds.condition_n_missing[1, g]) == 0
        assert int(ds.condition_n_target[0, g]) == int(((mask == 1) & member & scored).sum())
        tar, non = -scores[(mask == 1) & member], -scores[(mask == -1) & member]
        if len(tar) and len(non):
            assert float(ds.condition_eer[1, g]) == pytest.approx(ref.eer(tar, non), abs=1e-12)
    assert int(ds.condition_n_missing[0].sum()) == int(ds.n_missing[0]) > 0


def test_empty_conditions_are_counted_not_errors():
    key = make_key(["m1", "m2"], ["s1", "s2", "s3"], [[1, -1, -1], [-1, -1, 0]])
    scores = make_scores(["m1", "m2"], ["s1", "s2", "s3"], [[2.0, 0.5, -1.0], [0.0, 1.0, 9.0]])
    models = condition_table("model", ["m1", "m2"], {"gender": ["f", "m"]})
    segs = condition_table("segment", ["s1", "s2", "s3", "s4"], {"src": ["tel", "mic", "x", "y"]})
    ds = metrics.evaluate(scores, key, conditions=[models, segs],
                          by=["model.gender", "segment.src"], priors=[0.5])  # fmt: skip
    # every combination of the values the key's ids have: 2 genders x 3 sources
    assert ds.sizes["condition"] == 6
    assert ds.condition_n_target.values.tolist() == [[0, 1, 0, 0, 0, 0]]
    assert ds.condition_n_nontarget.values.tolist() == [[1, 0, 1, 1, 1, 0]]
    assert np.isnan(ds.condition_eer.values).all()
    doc = to_json_dict(ds)["systems"][0]
    assert set(doc["conditions"][0]) == (set(doc) - {"name", "conditions"}) | {"by"}
    assert doc["conditions"][5] == {
        "by": {"model.gender": "m", "segment.src": "x"}, "n_target": 0, "n_nontarget": 0,
        "n_missing": 0, "eer": None, "prbep": None, "cllr": None, "min_cllr": None,
        **dict.fromkeys(["cllr_cal", "auc", "auc_low", "auc_high", "auc_rocch"]),
        "operating_points": [{"prior": 0.5, "p_target": 0.5, "c_miss": 1.0, "c_fa": 1.0,
                              "act_threshold": 0.0, **dict.fromkeys(
                                  ["act_dcf", "min_dcf", "act_dcf_raw", "min_dcf_raw",
                                   "act_pmiss", "act_pfa", "min_pmiss", "min_pfa",
                                   "min_threshold", "act_cdet", "min_cdet"])}],
    }  # fmt: skip
    table = format_table(ds)
    assert table.count("== condition model.gender=") == 6
    assert "== condition model.gender=m, segment.src=x ==" in table
    assert table.count("their metrics are undefined") == 6
    # undefined as n/a in every cell, the EER's as the DCFs' (the EER's said 'nan')
    block = table.split("== condition model.gender=m, segment.src=x ==")[1].split("\n")
    assert block[2].split()[3:] == ["n/a"] * 4 and block[6].split()[1:] == ["n/a"]
    assert "nan" not in table


def test_labels_of_values_holding_commas_stay_apart():
    """Joined as they were, both conditions read 'model.a=p, segment.b=q, segment.b=r'."""
    key = make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [-1, 1]])
    scores = make_scores(["m1", "m2"], ["s1", "s2"], [[2.0, 0.5], [0.0, 1.0]])
    models = condition_table("model", ["m1", "m2"], {"a": ["p, segment.b=q", "p"]})
    segs = condition_table("segment", ["s1", "s2"], {"b": ["r", "q, segment.b=r"]})
    ds = metrics.evaluate(scores, key, conditions=[models, segs], by=["model.a", "segment.b"])
    assert sorted(ds.condition.values.tolist()) == [
        "model.a='p, segment.b=q', segment.b='q, segment.b=r'",
        "model.a='p, segment.b=q', segment.b=r",
        "model.a=p, segment.b='q, segment.b=r'",
        "model.a=p, segment.b=r",
    ]  # fmt: skip
    one = ds.sel(condition="model.a=p, segment.b='q, segment.b=r'")
    assert int(one.condition_n_target[0]) == 1 and int(one.condition_n_nontarget[0]) == 0
    # quotes in a value cannot pass for a quoted one
    first = condition_text({"a": "'x", "b": "y', b='z"})
    second = condition_text({"a": 'x, b="y', "b": "'z\""})
    assert first != second and first == 'a="\'x", b="y\', b=\'z"'


def test_pooled_errors_stay_errors():
    key = make_key(["m1"], ["s1", "s2"], [[-1, -1]])
    scores = make_scores(["m1"], ["s1", "s2"], [[2.0, 0.5]])
    models = condition_table("model", ["m1"], {"g": ["f"]})
    with pytest.raises(ScoreError, match="need both targets and non-targets"):
        metrics.evaluate(scores, key, conditions=[models], by=["model.g"])
    with pytest.raises(OptionError, match="go together"):
        metrics.evaluate(scores, key, conditions=[models])
    with pytest.raises(OptionError, match="go together"):
        metrics.evaluate(scores, key, by=["model.g"])
    # a key code that an int8 conversion would wrap to +1 is reported, not counted as a target
    wide = make_key(["m1"], ["s1", "s2"], da.from_array(np.array([[257, -1]], dtype=np.int16)))
    with pytest.raises(TrialError, match="found 257 at"):
        metrics.evaluate(scores, wide, conditions=[models], by=["model.g"])


# --------------------------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path):
    mids, sids, mask, scores, mcols, scols, _ = _case(7, 6, 8)
    mask[0, 0], mask[-1, -1] = 1, -1
    key_lines = [f"{m} {s} {'target' if mask[i, j] == 1 else 'nontarget'}"
                 for i, m in enumerate(mids) for j, s in enumerate(sids) if mask[i, j]]  # fmt: skip
    score_lines = [f"{m} {s} {scores[i, j]}" for i, m in enumerate(mids)
                   for j, s in enumerate(sids)]  # fmt: skip
    (tmp_path / "key.txt").write_text("\n".join(key_lines) + "\n")
    (tmp_path / "sys.txt").write_text("\n".join(score_lines) + "\n")
    (tmp_path / "models.tsv").write_text(
        "model\tg\tl\n" + "".join(f"{m}\t{mcols['g'][m]}\t{mcols['l'][m]}\n" for m in mids)
    )
    (tmp_path / "segments.tsv").write_text(
        "segment\tl\n" + "".join(f"{s}\t{scols['l'][s]}\n" for s in sids)
    )
    return tmp_path, mids, sids, mask, scores, mcols, scols


def _cli(path, *extra):
    return main(["evaluate", "--key", str(path / "key.txt"), "--scores", str(path / "sys.txt"),
                 "--conditions", str(path / "models.tsv"), "--conditions",
                 str(path / "segments.tsv"), "-q", "--cluster", "threads", *extra])  # fmt: skip


def test_cli_conditions_json(files, capsys):
    path, mids, sids, mask, scores, mcols, scols = files
    rc = _cli(path, "--by", "model.g", "--by", "same.l", "--prior", "0.5", "--prior", "0.1",
              "--cprimary-priors", "0.5", "--cprimary-priors", "0.1",
              "--json", str(path / "r.json"))  # fmt: skip
    assert rc == 0
    out = capsys.readouterr().out
    assert out.count("== condition model.g=") == 4
    doc = json.loads((path / "r.json").read_text())
    (system,) = doc["systems"]
    assert [c["by"] for c in system["conditions"]] == [
        {"model.g": g, "same.l": s} for g in ("f", "m") for s in ("same", "different")
    ]
    for c in system["conditions"]:
        assert set(c) == (set(system) - {"name", "conditions"}) | {"by"}
        member = _membership(mids, sids, mcols, scols, "model.g", c["by"]["model.g"])
        member &= _membership(mids, sids, mcols, scols, "same.l", c["by"]["same.l"])
        tar, non = scores[(mask == 1) & member], scores[(mask == -1) & member]
        assert (c["n_target"], c["n_nontarget"]) == (len(tar), len(non))
        if len(tar) and len(non):
            assert c["eer"] == pytest.approx(ref.eer(tar, non), abs=1e-12)
            acts = [ref.dcf_at(tar, non, logit(p))[0] / min(p, 1 - p) for p in (0.5, 0.1)]
            assert [op["act_dcf"] for op in c["operating_points"]] == pytest.approx(acts)
            assert c["cprimary"]["act"] == pytest.approx(np.mean(acts), abs=1e-12)
        else:
            assert c["eer"] is None and c["cprimary"]["min"] is None


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--by", "model.x"], "by (--by) model.x: no model column 'x' (model columns: g, l; in "),
        (["--by", "same.g"], "by (--by) same.g: no segment column 'g'"),
        (["--by", "gender"], "expected model.COL, segment.COL, same.COL or trial.COL"),
        # several specs in one flag read as a column 'g,same.l'
        (
            ["--by", "model.g,same.l"],
            "by (--by) 'model.g,same.l': one spec per value: by=['model.g', 'same.l'] (--by "
            "model.g --by same.l)",
        ),
        (["--by", "model.g", "--conditions", "DUP"], ":4: duplicate model id 'm1'"),
        (
            ["--by", "model.g", "--conditions", "SHORT"],
            "1 model id of the key is not in the table, e.g. 'm5'",
        ),
    ],
)
def test_cli_bad_condition_input(files, capsys, extra, message):
    path = files[0]
    (path / "dup.tsv").write_text("model\th\nm0\tx\nm1\ty\nm1\tz\n")
    (path / "short.tsv").write_text("model\th\n" + "".join(f"m{i}\tx\n" for i in range(5)))
    extra = [str(path / "dup.tsv") if e == "DUP" else str(path / "short.tsv") if e == "SHORT"
             else e for e in extra]  # fmt: skip
    assert _cli(path, *extra) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


def test_cli_conditions_need_by(files, capsys):
    assert _cli(files[0]) != 0
    assert "go together" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# Cprimary
# --------------------------------------------------------------------------------------------


def test_cprimary_hand_worked():
    # targets 1, 2, 3; non-targets -2, -1, 0, 1.5. SRE21 priors 0.01 and 0.05:
    # Bayes thresholds 4.60 and 2.94 -> actDCF 1 (every target missed) and 2/3 (only 3 accepted)
    # minDCF: accept {2, 3} at both priors -> Pmiss 1/3, Pfa 0 -> 1/3 each
    key = make_key(["a", "b"], ["s1", "s2", "s3", "s4"], [[1, 1, -1, -1], [1, -1, -1, 0]])
    scores = make_scores(["a", "b"], ["s1", "s2", "s3", "s4"],
                         [[1.0, 2.0, -2.0, -1.0], [3.0, 0.0, 1.5, 7.0]])  # fmt: skip
    ds = metrics.evaluate(scores, key, priors=[0.5], cprimary_priors=[0.01, 0.05])
    assert float(ds.cprimary_act[0]) == pytest.approx(5 / 6, abs=1e-15)
    assert float(ds.cprimary_min[0]) == pytest.approx(1 / 3, abs=1e-15)
    assert ds.attrs["cprimary_priors"] == [0.01, 0.05]
    assert "min_dcf" in ds and metrics.operating_points(ds).prior.values.tolist() == [0.5]
    doc = to_json_dict(ds)["systems"][0]
    assert doc["cprimary"] == {"act": pytest.approx(5 / 6), "min": pytest.approx(1 / 3),
                               "priors": [0.01, 0.05]}  # fmt: skip
    assert "Cprimary (mean normalized DCF over priors 0.01, 0.05)" in format_table(ds)
    models = condition_table("model", ["a", "b"], {"g": ["f", "m"]})
    ds = metrics.evaluate(scores, key, priors=[0.5], cprimary_priors=[0.01, 0.05],
                          conditions=[models], by=["model.g"])  # fmt: skip
    # condition g=f: targets 1, 2, non-targets -2, -1: act 1 at both priors; min 0
    # condition g=m: target 3, non-targets 0, 1.5: act 1 at 0.01, 0 at 0.05; min 0
    assert ds.condition_cprimary_act.values.tolist() == [[1.0, 0.5]]
    assert ds.condition_cprimary_min.values.tolist() == [[0.0, 0.0]]
    assert float(ds.cprimary_act[0]) == pytest.approx(5 / 6, abs=1e-15)


def test_cprimary_is_exact_at_priors_that_are_not_operating_points():
    rng = np.random.default_rng(5)
    n_m, n_s = 40, 50
    mask = rng.choice([-1, 1], size=(n_m, n_s), p=[0.8, 0.2])
    scores = (rng.normal(size=mask.shape) + 2.5 * (mask == 1)).astype(np.float32)
    mids, sids = [f"m{i}" for i in range(n_m)], [f"s{j}" for j in range(n_s)]
    priors = [0.01, 0.05, 0.3]
    ds = metrics.evaluate(make_scores(mids, sids, scores, chunks=16),
                          make_key(mids, sids, mask, chunks=16), priors=[0.5],
                          cprimary_priors=priors)  # fmt: skip
    tar, non = scores[mask == 1].astype(np.float64), scores[mask == -1].astype(np.float64)
    acts = [ref.dcf_at(tar, non, logit(p))[0] / min(p, 1 - p) for p in priors]
    mins = [float(ref.min_dcf(tar, non, logit(p))) / min(p, 1 - p) for p in priors]
    assert float(ds.cprimary_act[0]) == pytest.approx(np.mean(acts), abs=1e-12)
    assert float(ds.cprimary_min[0]) == pytest.approx(np.mean(mins), abs=1e-12)


def test_cprimary_bad_prior():
    key = make_key(["a"], ["s1", "s2"], [[1, -1]])
    scores = make_scores(["a"], ["s1", "s2"], [[1.0, 0.0]])
    with pytest.raises(OptionError, match="Cprimary prior 1.0 is not strictly between 0 and 1"):
        metrics.evaluate(scores, key, cprimary_priors=[0.01, 1.0])


def test_many_conditions_and_scores_in_another_id_order():
    # 3 x 2 x 2 = 12 conditions: more condition systems than the engine's defaults plan for,
    # so pass 1 runs on coarser bins; the scores' ids are in another order, with extra ids
    mids, sids, mask, scores, mcols, scols, tables = _case(11, 9, 12)
    mask[0, 0], mask[-1, -1] = 1, -1
    by = ["model.l", "same.l", "segment.d"]
    order_m, order_s = np.arange(len(mids))[::-1], np.roll(np.arange(len(sids)), 5)
    shuffled = np.pad(scores[np.ix_(order_m, order_s)], ((0, 1), (0, 0)), constant_values=9.0)
    system = make_scores([mids[i] for i in order_m] + ["extra"], [sids[j] for j in order_s],
                         shuffled, chunks=(4, 5))  # fmt: skip
    ds = metrics.evaluate(system, make_key(mids, sids, mask, chunks=(3, 7)), priors=PRIORS,
                          conditions=tables, by=by)  # fmt: skip
    assert ds.sizes["condition"] == 12
    assert int(((ds.condition_n_target > 0) & (ds.condition_n_nontarget > 0)).sum()) > 8
    _check_against_references(ds, mids, sids, mask, scores, mcols, scols, (3, 7), by)


def test_every_pass_is_counted_and_building_computes_nothing():
    mids, sids, mask, scores, mcols, scols, tables = _case(4, 20, 30)
    key = make_key(mids, sids, mask, chunks=(10, 15))
    system = make_scores(mids, sids, scores.astype(np.float32), chunks=(10, 15))
    computes = []

    def counting_get(dsk, keys, **kwargs):
        computes.append(keys)
        return dask.get(dsk, keys, **kwargs)

    with dask.config.set(scheduler=counting_get):
        from bosaris_dask.conditions import condition_codes

        cond = condition_codes(key, tables, ["model.g", "segment.l"])
        cond.group_index((10, 15))
        assert computes == []  # codes and the group index are built without computing
        ds = metrics.evaluate(system, key, conditions=tables, by=["model.g", "segment.l"])
        plain = metrics.evaluate(system, key)
    # the engine's passes for pooled and per-condition systems at once: the counts per
    # condition come from pass 1, so no pass is added
    assert len(computes) == ds.attrs["passes"] + plain.attrs["passes"]
    assert ds.attrs["passes"] == plain.attrs["passes"]


def test_plot_a_curve_per_condition(files):
    from bosaris_dask.conditions.evaluation import conditions_as_systems

    path, mids, sids, mask, scores, mcols, scols = files
    out = path / "det.png"
    assert (
        main(
            [
                "plot",
                "det",
                "--key",
                str(path / "key.txt"),
                "--scores",
                str(path / "sys.txt"),
                "--conditions",
                str(path / "models.tsv"),
                "--by",
                "model.g",
                "--out",
                str(out),
                "-q",
                "--cluster",
                "threads",
            ]
        )
        == 0
    )
    assert out.stat().st_size > 1000  # fmt: skip
    models = condition_table("model", mids, {"g": [mcols["g"][m] for m in mids]})
    ds = metrics.evaluate(make_scores(mids, sids, scores), make_key(mids, sids, mask),
                          conditions=[models], by=["model.g"], names=["sys"])  # fmt: skip
    pairs = conditions_as_systems(ds)
    assert pairs.system.values.tolist() == ["sys [model.g=f]", "sys [model.g=m]"]
    for g in range(2):
        np.testing.assert_array_equal(pairs.eer.values[g], ds.condition_eer.values[0, g])
        np.testing.assert_array_equal(pairs.roc_pfa.values[g], ds.condition_roc_pfa.values[0, g])


def test_llr_base_converts_condition_thresholds_too():
    from bosaris_dask.llr_base import threshold_in_base, thresholds_from_natural

    mids, sids, mask, scores, mcols, scols, tables = _case(2, 6, 8)
    mask[0, 0], mask[-1, -1] = 1, -1
    ds = metrics.evaluate(make_scores(mids, sids, scores), make_key(mids, sids, mask),
                          conditions=tables, by=["model.g"], priors=PRIORS)  # fmt: skip
    ten = thresholds_from_natural(ds, "10")
    f = np.log(10)
    for name in ("condition_min_threshold", "min_threshold", "condition_roc_threshold"):
        converted = threshold_in_base(ds[name].values, f)
        np.testing.assert_array_equal(ten[name].values, converted)
        np.testing.assert_allclose(converted, ds[name].values / f, rtol=1e-15)  # an ulp or so


@pytest.mark.slow
def test_conditions_on_a_local_cluster_equal_threads(tmp_path):
    from bosaris_dask import io
    from bosaris_dask.cluster import connect
    from bosaris_dask.simulate import simulate

    key, systems = simulate(120, 150, systems=2, target_rate=0.05, seed=2, chunks=(40, 50))
    io.write(key, tmp_path / "key.zarr")
    for k, s in enumerate(systems):
        io.write(s, tmp_path / f"s{k}.zarr", chunk_mb=0.02)
    rng = np.random.default_rng(0)
    models = condition_table("model", key.model.values, {"g": rng.choice(["f", "m"], 120)})
    segs = condition_table(
        "segment",
        key.segment.values,
        {"g": rng.choice(["f", "m"], 150), "src": rng.choice(["a", "b"], 150)},
    )

    def run():
        return metrics.evaluate(
            [io.read(tmp_path / f"s{k}.zarr") for k in range(2)], io.read(tmp_path / "key.zarr"),
            conditions=[models, segs], by=["same.g", "segment.src"], split_every=2,
            cprimary_priors=[0.01, 0.05],
        )  # fmt: skip

    with dask.config.set(scheduler="threads"):
        threads = run()
    with connect(cluster="local", workers=2, threads_per_worker=1, dashboard=False,
                 announce=None):  # fmt: skip
        local = run()
    for name in threads.data_vars:  # exact sums: bit-identical whatever the scheduler
        np.testing.assert_array_equal(local[name].values, threads[name].values, err_msg=name)


def test_cli_profile_cprimary_per_condition(files, capsys):
    path, mids, sids, mask, scores, mcols, scols = files
    assert _cli(path, "--by", "model.g", "--profile", "sre21", "--json", str(path / "p.json")) == 0
    out = capsys.readouterr().out
    assert out.count("Cprimary (") == 1 + 2  # pooled once, then once per condition
    (system,) = json.loads((path / "p.json").read_text())["systems"]
    assert system["cprimary"]["priors"] == [0.01, 0.05]  # the profile's, in the one schema
    for c in system["conditions"]:
        member = _membership(mids, sids, mcols, scols, "model.g", c["by"]["model.g"])
        tar, non = scores[(mask == 1) & member], scores[(mask == -1) & member]
        mins = [float(ref.min_dcf(tar, non, logit(p))) / p for p in (0.01, 0.05)]
        assert c["cprimary"]["priors"] == [0.01, 0.05]
        assert c["cprimary"]["min"] == pytest.approx(np.mean(mins), abs=1e-12)


def test_conditions_as_systems_of_a_comparison_warns_nothing():
    # xarray warned that its concat default changes (FutureWarning) for the paired comparison's
    # variables, which have no system dimension
    import warnings

    from bosaris_dask.conditions.evaluation import conditions_as_systems

    mids, sids, mask, scores, _, _, tables = _case(3, 6, 8)
    mask[0, 0], mask[-1, -1] = 1, -1
    systems = [make_scores(mids, sids, scores + k) for k in (0.0, 0.5)]
    ds = metrics.evaluate(systems, make_key(mids, sids, mask), conditions=tables,
                          by=["model.g"], ci=0.9, bootstrap=20, resample=["model.g"],
                          seed=1, compare=True)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        out = conditions_as_systems(ds)
    assert out.sizes["system"] == 4
