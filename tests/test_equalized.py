"""Partition-equalized metrics: equal to the brute-force weighted sweep of
tests/reference_conditions.py (exact Fraction weights, a monotone-chain hull, no package code) on
random data with ties, in random chunkings, with the refinement forced through many rounds;
one-class and empty partitions; the command line's JSON and errors."""

from __future__ import annotations

import json
from contextlib import nullcontext
from unittest import mock

import dask
import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from bosaris_dask import metrics
from bosaris_dask.cli import main
from bosaris_dask.conditions import condition_table
from bosaris_dask.conditions.float_hull import lower_hull
from bosaris_dask.errors import OptionError
from bosaris_dask.passes import pass1_bins
from bosaris_dask.report import format_table, to_json_dict
from bosaris_dask.trials import make_key, make_scores
from tests import reference_conditions as rc

PRIORS = [0.5, 0.1, 0.9]


def _case(seed, n_m, n_s, *, ties=True):
    rng = np.random.default_rng(seed)
    mids, sids = [f"m{i}" for i in range(n_m)], [f"s{j}" for j in range(n_s)]
    mask = rng.choice([-1, 0, 1], size=(n_m, n_s), p=[0.55, 0.15, 0.3])
    mask[0, 0], mask[-1, -1] = 1, -1
    noise = rng.normal(size=(n_m, n_s)) * 2 + 1.5 * (mask == 1)
    scores = np.round(noise, 0) / 2 if ties else noise
    mcol = {m: str(v) for m, v in zip(mids, rng.choice(["f", "m", "x"], n_m), strict=True)}
    scol = {s: str(v) for s, v in zip(sids, rng.choice(["a", "b"], n_s), strict=True)}
    tables = [condition_table("model", mids, {"g": [mcol[m] for m in mids]}),
              condition_table("segment", sids, {"l": [scol[s] for s in sids]})]  # fmt: skip
    return mids, sids, mask, scores, mcol, scol, tables


def _partitions(mids, sids, mcol, scol, by):
    """Each cell's partition label, by direct lookups (no package code)."""
    out = np.empty((len(mids), len(sids)), dtype=object)
    for i, m in enumerate(mids):
        for j, s in enumerate(sids):
            parts = []
            for spec in by:
                parts.append(
                    {
                        "model.g": mcol[m],
                        "segment.l": scol[s],
                        "same.g": "same" if mcol[m] == scol[s] else "diff",
                    }[spec]
                )
            out[i, j] = tuple(parts)
    return out


def _reference(mask, scores, parts, priors):
    trial = mask != 0
    return rc.equalized_metrics(scores[trial].tolist(), mask[trial].tolist(),
                                parts[trial].tolist(), priors)  # fmt: skip


def _check(ds, want, k=0):
    ops = metrics.operating_points(ds)
    assert float(ds.equalized_eer[k]) == pytest.approx(want["eer"], abs=1e-12)
    for j, op in enumerate(want["operating_points"]):
        assert float(ops.equalized_act_dcf[k, j]) == pytest.approx(op["act_dcf"], abs=1e-11)
        assert float(ops.equalized_min_dcf[k, j]) == pytest.approx(op["min_dcf"], abs=1e-11)


@settings(max_examples=12, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(
    seed=st.integers(0, 2**16),
    n_m=st.integers(3, 8),
    n_s=st.integers(3, 9),
    chunk=st.tuples(st.integers(1, 4), st.integers(1, 5)),
    by=st.sampled_from([["model.g"], ["segment.l"], ["model.g", "segment.l"]]),
    ties=st.booleans(),
    coarse=st.sampled_from([None, 2, 5]),
)
def test_equals_the_brute_force_weighted_sweep(seed, n_m, n_s, chunk, by, ties, coarse):
    mids, sids, mask, scores, mcol, scol, tables = _case(seed, n_m, n_s, ties=ties)
    bits = (
        mock.patch.object(pass1_bins, "default_coarse_bits", lambda n: coarse)
        if coarse
        else nullcontext()
    )
    with dask.config.set(scheduler="sync"), bits:
        ds = metrics.evaluate(
            make_scores(mids, sids, scores, chunks=chunk), make_key(mids, sids, mask, chunks=chunk),
            priors=PRIORS, conditions=tables, by=by, equalize=True, split_every=2, sweep=[],
        )  # fmt: skip
    # no NBE sweep above: its 201 thresholds would refine nearly every bin, hook or not
    _check(ds, _reference(mask, scores, _partitions(mids, sids, mcol, scol, by), PRIORS))
    assert ds.equalized_min_dcf.dims == ("system", "plo")
    assert ds.equalized_eer.attrs["units"] == "probability"


@pytest.mark.parametrize("coarse", [1, 3, 8])
@pytest.mark.parametrize("dense", [True, False])
def test_refinement_forced_through_many_rounds(coarse, dense):
    """A few coarse pass-1 bins, tiny blocks and budgets: the equalized hull must come from the
    joint refinement (its vertices are not vertices of any one partition's hull)."""
    mids, sids, mask, scores, mcol, scol, tables = _case(11, 9, 12, ties=False)
    by = ["model.g", "segment.l"]
    knobs = {"bosaris_dask.block": 8, "bosaris_dask.slice": 16, "bosaris_dask.dense-budget": 4,
             "bosaris_dask.raw-limit": 0 if dense else 6}  # fmt: skip
    coarse_bits = mock.patch.object(pass1_bins, "default_coarse_bits", lambda n: coarse)
    with coarse_bits, dask.config.set(knobs):
        ds = metrics.evaluate(
            make_scores(mids, sids, scores, chunks=(4, 5)), make_key(mids, sids, mask, chunks=3),
            priors=PRIORS, conditions=tables, by=by, equalize=True,
        )  # fmt: skip
        plain = metrics.evaluate(
            make_scores(mids, sids, scores, chunks=(4, 5)), make_key(mids, sids, mask, chunks=3),
            priors=PRIORS, conditions=tables, by=by,
        )  # fmt: skip
    _check(ds, _reference(mask, scores, _partitions(mids, sids, mcol, scol, by), PRIORS))
    # the per-condition results are unchanged by equalizing
    for name in ("condition_eer", "condition_min_dcf", "eer", "min_dcf", "act_dcf"):
        np.testing.assert_array_equal(ds[name].values, plain[name].values)


def test_same_result_in_any_chunking_bit_for_bit():
    mids, sids, mask, scores, *_, tables = _case(5, 8, 9, ties=True)
    results = []
    for chunk, split in (((8, 9), 8), ((1, 2), 2), ((3, 4), 3)):
        ds = metrics.evaluate(
            make_scores(mids, sids, scores, chunks=chunk), make_key(mids, sids, mask, chunks=chunk),
            priors=PRIORS, conditions=tables, by=["model.g", "segment.l"], equalize=True,
            split_every=split,
        )  # fmt: skip
        results.append(ds)
    for ds in results[1:]:
        for name in ("equalized_eer", "equalized_act_dcf", "equalized_min_dcf"):
            np.testing.assert_array_equal(ds[name].values, results[0][name].values)


def test_one_class_and_empty_partitions_follow_the_stated_rule():
    """Rule (as NIST's scorer): weights per class; a partition without targets contributes its
    non-targets only, one without non-targets its targets only, an empty one nothing."""
    mids, sids = ["m1", "m2", "m3", "m4"], ["s1", "s2", "s3"]
    # m1 (f): both classes; m2 (m): targets only; m3 (x): non-targets only; m4 (f)
    mask = np.array([[1, -1, -1], [1, 1, 0], [-1, -1, -1], [-1, 1, -1]])
    scores = np.array([[2.0, 0.5, -1.0], [0.3, -0.2, 0.0], [1.0, 0.1, -2.0], [0.0, 1.5, 0.2]])
    # a fourth value "y" with no trial at all (the model side has it on a trial-less model)
    mids5 = [*mids, "m5"]
    mask5 = np.vstack([mask, [0, 0, 0]])
    scores5 = np.vstack([scores, [9.0, 9.0, 9.0]])
    gender = {"m1": "f", "m2": "m", "m3": "x", "m4": "f", "m5": "y"}
    models = condition_table("model", mids5, {"g": [gender[m] for m in mids5]})
    ds = metrics.evaluate(make_scores(mids5, sids, scores5), make_key(mids5, sids, mask5),
                          priors=PRIORS, conditions=[models], by=["model.g"],
                          equalize=True)  # fmt: skip
    assert ds.condition_n_target.values.tolist() == [[2, 2, 0, 0]]
    assert ds.condition_n_nontarget.values.tolist() == [[4, 0, 3, 0]]
    parts = np.array([[gender[m]] * 3 for m in mids], dtype=object)
    trial = mask != 0
    want = rc.equalized_metrics(scores[trial].tolist(), mask[trial].tolist(),
                                parts[trial].tolist(), PRIORS)  # fmt: skip
    _check(ds, want)
    # the rule in rates, by hand at threshold 0.25 (the Bayes threshold of prior
    # sigmoid(-0.25)): Pmiss is the mean over f and m of their miss rates (f: 0 of 2, m: 1 of
    # 2), Pfa the mean over f and x of their false-alarm rates (f: 1 of 4, x: 1 of 3)
    p = float(1 / (1 + np.exp(0.25)))
    ds = metrics.evaluate(make_scores(mids5, sids, scores5), make_key(mids5, sids, mask5),
                          priors=[p], conditions=[models], by=["model.g"],
                          equalize=True)  # fmt: skip
    pmiss, pfa = (0 / 2 + 1 / 2) / 2, (1 / 4 + 1 / 3) / 2
    want_act = (p * pmiss + (1 - p) * pfa) / min(p, 1 - p)
    assert float(metrics.operating_points(ds).equalized_act_dcf[0, 0]) == pytest.approx(
        want_act, rel=1e-14
    )


def test_equal_partitions_give_the_pooled_metrics():
    """Partitions of equal sizes get unit weights: the equalized metrics are the pooled ones."""
    mids, sids = ["a", "b"], ["s1", "s2", "s3", "s4"]
    mask = np.array([[1, 1, -1, -1], [1, -1, 1, -1]])
    scores = np.array([[1.0, 0.2, 0.5, -1.0], [0.7, 0.9, 0.1, -0.3]])
    models = condition_table("model", mids, {"g": ["f", "m"]})
    ds = metrics.evaluate(make_scores(mids, sids, scores), make_key(mids, sids, mask),
                          priors=PRIORS, conditions=[models], by=["model.g"],
                          equalize=True)  # fmt: skip
    assert float(ds.equalized_eer[0]) == pytest.approx(float(ds.eer[0]), abs=1e-15)
    np.testing.assert_allclose(ds.equalized_min_dcf.values, ds.min_dcf.values, atol=1e-15)
    np.testing.assert_allclose(ds.equalized_act_dcf.values, ds.act_dcf.values, atol=1e-15)


def test_two_systems_and_cprimary():
    mids, sids, mask, scores, mcol, scol, tables = _case(21, 7, 8)
    systems = [make_scores(mids, sids, scores, chunks=3),
               make_scores(mids, sids, -0.5 * scores + np.sin(scores), chunks=2)]  # fmt: skip
    ds = metrics.evaluate(systems, make_key(mids, sids, mask), priors=PRIORS, conditions=tables,
                          by=["segment.l"], equalize=True, cprimary_priors=[0.5, 0.1],
                          names=["a", "b"])  # fmt: skip
    parts = _partitions(mids, sids, mcol, scol, ["segment.l"])
    for k, s in enumerate((scores, -0.5 * scores + np.sin(scores))):
        want = _reference(mask, s, parts, PRIORS)
        _check(ds, want, k)
        cp = _reference(mask, s, parts, [0.5, 0.1])["operating_points"]
        assert float(ds.equalized_cprimary_act[k]) == pytest.approx(
            np.mean([op["act_dcf"] for op in cp]), abs=1e-11
        )
        assert float(ds.equalized_cprimary_min[k]) == pytest.approx(
            np.mean([op["min_dcf"] for op in cp]), abs=1e-11
        )
    for name in ("equalized_eer", "equalized_act_dcf", "equalized_min_dcf",
                 "equalized_cprimary_act", "equalized_cprimary_min"):  # fmt: skip
        assert ds[name].attrs["units"] and ds[name].attrs["long_name"], name
    doc = to_json_dict(ds)["systems"]
    assert set(doc[1]["equalized"]) == {"by", "eer", "operating_points", "cprimary"}
    assert doc[1]["equalized"]["by"] == ["segment.l"]
    assert "partition-equalized over segment.l" in format_table(ds)


def test_needs_by():
    key = make_key(["m1"], ["s1", "s2"], [[1, -1]])
    scores = make_scores(["m1"], ["s1", "s2"], [[2.0, 0.5]])
    with pytest.raises(OptionError, match=r"equalize \(--equalize\) needs conditions"):
        metrics.evaluate(scores, key, equalize=True)


def test_lower_hull_of_many_points_matches_a_plain_chain():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(2, 600))
        y = np.concatenate([[0.0], np.sort(rng.random(n)), [1.0]])
        x = np.concatenate([[0.0], np.sort(rng.random(n)), [1.0]])
        x[rng.random(len(x)) < 0.2] = 0.5  # runs of equal x (sorted again below)
        order = np.lexsort((y, x))
        x, y = x[order], y[order]
        got = lower_hull(x, y)
        hull = rc.lower_hull(list(zip(x.tolist(), y.tolist(), strict=True)))
        assert [(x[i], y[i]) for i in got] == [(float(a), float(b)) for a, b in hull]


@settings(max_examples=60, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(
    seed=st.integers(0, 2**32 - 1),
    n_lines=st.integers(1, 4),
    per_line=st.integers(260, 500),
    ulps=st.integers(0, 4),
    above=st.integers(0, 300),
)
def test_lower_hull_keeps_near_collinear_vertices(seed, n_lines, per_line, ulps, above):
    """Above 256 points lower_hull filters the points guided by Qhull, which merges
    near-collinear vertices away: adversarial points on a few convex lines, each moved a few
    float steps up or down, and points above, give what the chain over every point gives."""
    rng = np.random.default_rng(seed)
    knots_x = np.sort(rng.random(n_lines - 1)) if n_lines > 1 else np.empty(0)
    knots_x = np.concatenate([[0.0], knots_x, [1.0]])
    slopes = np.sort(rng.uniform(-3.0, 0.0, n_lines))  # rising slopes: a convex polyline
    knots_y = np.concatenate([[1.0], 1.0 + np.cumsum(slopes * np.diff(knots_x))])
    x = np.sort(np.concatenate([knots_x, rng.random(per_line * n_lines)]))
    y = np.interp(x, knots_x, knots_y)
    for _ in range(ulps):  # near-collinear: a few float steps off the lines, either way
        step = rng.integers(-1, 2, len(y))
        y = np.where(
            step > 0, np.nextafter(y, np.inf), np.where(step < 0, np.nextafter(y, -np.inf), y)
        )
    xa = rng.random(above)
    ya = np.interp(xa, knots_x, knots_y) + rng.random(above) * 0.1
    x, y = np.concatenate([x, xa]), np.concatenate([y, ya])
    order = np.lexsort((y, x))
    x, y = x[order], y[order]
    assert len(x) > 256
    got = lower_hull(x, y)
    hull = rc.lower_hull(list(zip(x.tolist(), y.tolist(), strict=True)))
    assert [(x[i], y[i]) for i in got] == [(float(a), float(b)) for a, b in hull]


# --------------------------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path):
    mids, sids, mask, scores, mcol, scol, _ = _case(7, 6, 8)
    key_lines = [f"{m} {s} {'target' if mask[i, j] == 1 else 'nontarget'}"
                 for i, m in enumerate(mids) for j, s in enumerate(sids) if mask[i, j]]  # fmt: skip
    score_lines = [f"{m} {s} {float(scores[i, j])!r}" for i, m in enumerate(mids)
                   for j, s in enumerate(sids)]  # fmt: skip
    (tmp_path / "key.txt").write_text("\n".join(key_lines) + "\n")
    (tmp_path / "sys.txt").write_text("\n".join(score_lines) + "\n")
    (tmp_path / "models.tsv").write_text("model\tg\n" + "".join(f"{m}\t{mcol[m]}\n" for m in mids))
    (tmp_path / "segments.tsv").write_text(
        "segment\tl\n" + "".join(f"{s}\t{scol[s]}\n" for s in sids)
    )
    return tmp_path, mids, sids, mask, scores, mcol, scol


def _cli(path, *extra):
    return main(["evaluate", "--key", str(path / "key.txt"), "--scores", str(path / "sys.txt"),
                 "-q", "--cluster", "threads", *extra])  # fmt: skip


def test_cli_equalize_json(files, capsys):
    path, mids, sids, mask, scores, mcol, scol = files
    rc_ = _cli(path, "--conditions", str(path / "models.tsv"), "--conditions",
               str(path / "segments.tsv"), "--by", "model.g", "--by", "segment.l", "--equalize",
               "--prior", "0.5", "--prior", "0.1", "--json", str(path / "r.json"))  # fmt: skip
    assert rc_ == 0
    out = capsys.readouterr().out
    assert "partition-equalized over model.g x segment.l" in out
    doc = json.loads((path / "r.json").read_text())
    (system,) = doc["systems"]
    want = _reference(mask, scores, _partitions(mids, sids, mcol, scol,
                                                ["model.g", "segment.l"]), [0.5, 0.1])  # fmt: skip
    eq = system["equalized"]
    assert set(eq) == {"by", "eer", "operating_points"}
    assert eq["eer"] == pytest.approx(want["eer"], abs=1e-12)
    assert [op["prior"] for op in eq["operating_points"]] == [0.5, 0.1]
    for got, exp in zip(eq["operating_points"], want["operating_points"], strict=True):
        # the point as the main "operating_points" name it (a stated point's costs were lost)
        assert set(got) == {"prior", "p_target", "c_miss", "c_fa", "act_dcf", "min_dcf"}
        assert (got["p_target"], got["c_miss"], got["c_fa"]) == (got["prior"], 1.0, 1.0)
        assert got["act_dcf"] == pytest.approx(exp["act_dcf"], abs=1e-11)
        assert got["min_dcf"] == pytest.approx(exp["min_dcf"], abs=1e-11)
    assert "conditions" in system  # the per-condition entries stay


def test_cli_equalize_without_by_is_a_one_line_error(files, capsys):
    assert _cli(files[0], "--equalize") != 0
    err = capsys.readouterr().err.strip()
    assert "equalize (--equalize) needs conditions" in err and len(err.splitlines()) == 1, err


def _interleaved(seed):
    """Condition f: targets in [0.3, 0.9], non-targets far below; condition m: non-targets in
    [0.3, 0.9], targets far above. Each condition alone is perfectly separated (its bins there
    are pure, nothing to refine), but the equalized curve has its vertices inside [0.3, 0.9]."""
    rng = np.random.default_rng(seed)
    n_m, n_s = 6, 40
    mids, sids = [f"m{i}" for i in range(n_m)], [f"s{j}" for j in range(n_s)]
    gender = ["f"] * 3 + ["m"] * 3
    mask = rng.choice([-1, 1], size=(n_m, n_s))
    mid = rng.uniform(0.3, 0.9, size=(n_m, n_s))
    far = np.where(np.array(gender)[:, None] == "f", -3.0, 3.0) + rng.random((n_m, n_s))
    inside = (mask == 1) == (np.array(gender)[:, None] == "f")
    scores = np.where(inside, mid, far)
    return mids, sids, mask, scores, gender


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_joint_refinement_finds_vertices_no_condition_has(seed, dense):
    mids, sids, mask, scores, gender = _interleaved(seed)
    models = condition_table("model", mids, {"g": gender})
    knobs = {"bosaris_dask.block": 8, "bosaris_dask.slice": 16, "bosaris_dask.dense-budget": 4,
             "bosaris_dask.raw-limit": 0 if dense else 5}  # fmt: skip
    with mock.patch.object(pass1_bins, "default_coarse_bits", lambda n: 4), dask.config.set(knobs):
        ds = metrics.evaluate(
            make_scores(mids, sids, scores, chunks=(2, 7)), make_key(mids, sids, mask, chunks=5),
            priors=PRIORS, sweep=[], conditions=[models], by=["model.g"], equalize=True,
        )  # fmt: skip
        plain = metrics.evaluate(
            make_scores(mids, sids, scores, chunks=(2, 7)), make_key(mids, sids, mask, chunks=5),
            priors=PRIORS, sweep=[], conditions=[models], by=["model.g"],
        )  # fmt: skip
    assert ds.attrs["passes"] == plain.attrs["passes"]  # no pass over the data added
    parts = np.array([[g] * len(sids) for g in gender], dtype=object)
    want = _reference(mask, scores, parts, PRIORS)
    assert 0 < want["eer"] < 0.5 and float(ds.condition_eer.max()) == 0  # each alone: perfect
    _check(ds, want)


def test_missing_scores_make_partitions_one_class_for_one_system_only():
    """allow_missing: each system's weights come from its own scored trials; a partition left
    with one class in system a (its non-targets unscored) still counts its targets there."""
    mids, sids, mask, scores, mcol, scol, tables = _case(9, 8, 10)
    parts = _partitions(mids, sids, mcol, scol, ["model.g"])
    scored = np.ones(mask.shape, dtype=bool)
    is_x = np.array([[p == ("x",) for p in row] for row in parts])
    scored[is_x & (mask == -1)] = False  # system a: model.g=x keeps targets only
    scored[0, 1:3] = False
    systems = [make_scores(mids, sids, scores, scored, chunks=3),
               make_scores(mids, sids, -scores, chunks=(2, 4))]  # fmt: skip
    ds = metrics.evaluate(systems, make_key(mids, sids, mask, chunks=4), priors=PRIORS,
                          conditions=tables, by=["model.g"], equalize=True, allow_missing=True,
                          names=["a", "b"])  # fmt: skip
    assert int(ds.condition_n_nontarget.sel(system="a", condition="model.g=x")) == 0
    assert int(ds.condition_n_target.sel(system="a", condition="model.g=x")) > 0
    _check(ds, _reference(np.where(scored, mask, 0), scores, parts, PRIORS), 0)
    _check(ds, _reference(mask, -scores, parts, PRIORS), 1)


def test_a_stated_point_keeps_its_costs_in_the_equalized_table_and_json(files, capsys):
    """The equalized block labelled 0.01:10:1 as P=0.0917431 and its JSON held only the prior."""
    path = files[0]
    assert _cli(path, "--conditions", str(path / "segments.tsv"), "--by", "segment.l",
                "--equalize", "--operating-point", "0.01:10:1",
                "--json", str(path / "s.json")) == 0  # fmt: skip
    out = capsys.readouterr().out
    block = out[out.index("partition-equalized") :].splitlines()
    assert block[1].split()[-1] == "0.01:10:1"
    (system,) = json.loads((path / "s.json").read_text())["systems"]
    (op,) = system["equalized"]["operating_points"]
    assert (op["p_target"], op["c_miss"], op["c_fa"]) == (0.01, 10.0, 1.0)
    assert op["prior"] == pytest.approx(0.1 / 1.09, rel=1e-15)  # 0.01 x 10 against 0.99 x 1


def test_the_report_functions_moved_keep_their_old_names_for_a_release():
    from bosaris_dask.conditions import equalized, equalized_report

    for name in ("json_entry", "format_block"):
        with pytest.warns(
            FutureWarning, match=f"use bosaris_dask.conditions.equalized_report.{name}"
        ):
            assert getattr(equalized, name) is getattr(equalized_report, name)
