"""``--by trial.COL``: conditions of the trials themselves (a table of trials, header
``model<TAB>segment``), on a grid and on packed lists: each condition equals its trials alone
(brute force), grid and packed agree bit for bit, bad tables are one-line errors."""

from __future__ import annotations

import json
import re

import dask
import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from scipy.special import logit

from bosaris_dask import metrics
from bosaris_dask.cli import main
from bosaris_dask.conditions import condition_table, read_condition_table
from bosaris_dask.conditions.evaluation import condition_result
from bosaris_dask.errors import OptionError, ParseError, TrialError
from bosaris_dask.io.text import packed
from bosaris_dask.trials import make_key, make_scores
from tests import reference as ref

PRIORS = [0.5, 0.1]


def _grid_case(seed, n_m, n_s):
    """A key with holes, tied scores, a side column and two trial columns (as dicts)."""
    rng = np.random.default_rng(seed)
    mids, sids = [f"m{i}" for i in range(n_m)], [f"s{j}" for j in range(n_s)]
    mask = rng.choice([-1, 0, 1], size=(n_m, n_s), p=[0.5, 0.2, 0.3])
    mask[0, 0], mask[-1, -1] = 1, -1
    scores = np.round(rng.normal(size=(n_m, n_s)) * 2 + (mask == 1), 0) / 2
    gender = {m: str(rng.choice(["f", "m"])) for m in mids}
    # every cell gets trial values (non-trials too: rows the key lacks are ignored), plus a row
    # of ids the key does not have
    y = {(m, s): str(rng.choice(["Y", "N"])) for m in mids for s in sids}
    z = {(m, s): str(rng.choice(["a", "b", "c"])) for m in mids for s in sids}
    pairs = [*y, ("m-other", "s0")]
    y[pairs[-1]], z[pairs[-1]] = "Q", "q"  # a value no key trial takes: not a condition
    columns = {"y": [y[p] for p in pairs], "z": [z[p] for p in pairs]}
    trials = condition_table("trial", [p[0] for p in pairs], columns,
                             segments=[p[1] for p in pairs])  # fmt: skip
    models = condition_table("model", mids, {"g": [gender[m] for m in mids]})
    return mids, sids, mask, scores, {"trial.y": y, "trial.z": z}, gender, [trials, models]


def _member(mids, sids, columns, gender, spec, value):
    out = np.zeros((len(mids), len(sids)), dtype=bool)
    for i, m in enumerate(mids):
        for j, s in enumerate(sids):
            out[i, j] = (gender[m] if spec == "model.g" else columns[spec][m, s]) == value
    return out


@settings(max_examples=6, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(
    seed=st.integers(0, 2**16),
    n_m=st.integers(2, 6),
    n_s=st.integers(3, 8),
    chunk=st.tuples(st.integers(1, 4), st.integers(1, 5)),
    picks=st.lists(st.sampled_from(["trial.y", "trial.z", "model.g"]), min_size=1, max_size=2,
                   unique=True).filter(lambda p: any(s.startswith("trial") for s in p)),
)  # fmt: skip
def test_each_trial_condition_equals_its_trials_alone(seed, n_m, n_s, chunk, picks):
    mids, sids, mask, scores, columns, gender, tables = _grid_case(seed, n_m, n_s)
    with dask.config.set(scheduler="sync"):
        ds = metrics.evaluate(
            make_scores(mids, sids, scores, chunks=chunk), make_key(mids, sids, mask, chunks=chunk),
            priors=PRIORS, conditions=tables, by=picks, split_every=2,
        )  # fmt: skip
    trial = mask != 0
    for spec in picks:  # the values are those the key's trials take
        taken = (
            {gender[m] for m in mids}
            if spec == "model.g"
            else {columns[spec][mids[i], sids[j]] for i, j in zip(*np.nonzero(trial), strict=True)}
        )
        assert sorted(set(ds[spec].values.tolist())) == sorted(taken)
    for g in range(ds.sizes["condition"]):
        member = np.ones(mask.shape, dtype=bool)
        for spec in picks:
            member &= _member(mids, sids, columns, gender, spec, str(ds[spec].values[g]))
        tar, non = scores[(mask == 1) & member], scores[(mask == -1) & member]
        one = metrics.operating_points(condition_result(ds, g).isel(system=0))
        assert (int(one.n_target), int(one.n_nontarget)) == (len(tar), len(non))
        if len(tar) == 0 or len(non) == 0:
            assert np.isnan(float(one.eer))
            continue
        assert float(one.eer) == pytest.approx(ref.eer(tar, non), abs=1e-12)
        assert float(one.cllr) == pytest.approx(ref.cllr(tar, non), rel=1e-12)
        for j, p in enumerate(PRIORS):
            assert float(one.min_dcf_raw[j]) == pytest.approx(
                float(ref.min_dcf(tar, non, logit(p))), abs=1e-12
            )


def _lists(tmp_path, n=300, seed=3):
    """A sparse key list and its scores, a table of its trials (two columns, rows in another
    order, plus rows of trials the key does not hold) and a model table; the truth."""
    rng = np.random.default_rng(seed)
    pairs = list(dict.fromkeys(zip(rng.integers(0, n // 2, n).tolist(),
                                   rng.integers(0, n, n).tolist(), strict=True)))  # fmt: skip
    labels = rng.random(len(pairs)) < 0.3
    scores = rng.normal(size=len(pairs)).round(2) + 2.0 * labels
    word = {True: "target", False: "nontarget"}
    (tmp_path / "trials").write_text("".join(
        f"e{a} t{b} {word[bool(t)]}\n"
        for (a, b), t in zip(pairs, labels, strict=True)))  # fmt: skip
    (tmp_path / "scores").write_text("".join(
        f"e{a} t{b} {float(s)!r}\n" for (a, b), s in zip(pairs, scores, strict=True)))  # fmt: skip
    phone = {p: "YN"[int(rng.integers(2))] for p in pairs}
    lang = {p: "xyz"[int(rng.integers(3))] for p in pairs}
    rows = [*pairs, (0, n + 5)]
    phone[rows[-1]], lang[rows[-1]] = "Y", "w"
    order = rng.permutation(len(rows))
    (tmp_path / "t.tsv").write_text("model\tsegment\tphone\tlang\n" + "".join(
        f"e{rows[k][0]}\tt{rows[k][1]}\t{phone.get(rows[k])}\t{lang.get(rows[k])}\n"
        for k in order))  # fmt: skip
    models = sorted({a for a, _ in pairs})
    (tmp_path / "m.tsv").write_text("model\tg\n" + "".join(f"e{a}\t{a % 2}\n" for a in models))
    truth = {(f"e{a}", f"t{b}"): (bool(t), float(s), phone[a, b], lang[a, b], str(a % 2))
             for (a, b), t, s in zip(pairs, labels, scores, strict=True)}  # fmt: skip
    return truth


def _evaluate(tmp_path, name, *extra, quiet=True):
    out = tmp_path / f"{name}.json"
    argv = ["evaluate", "--key", str(tmp_path / "trials"), "--scores", str(tmp_path / "scores"),
            "--prior", "0.5", "--prior", "0.01", "--json", str(out), *extra,
            *(["-q"] if quiet else [])]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    doc.pop("passes")
    return doc


def _grid_then_packed(tmp_path, monkeypatch, capsys, *extra):
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 1 << 62)
    grid = _evaluate(tmp_path, "grid", *extra)
    assert "packed" not in capsys.readouterr().err
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 0)
    monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
    got = _evaluate(tmp_path, "packed", *extra, quiet=False)
    assert "read as packed trial lists" in capsys.readouterr().err
    return grid, got


def test_trial_conditions_of_packed_lists_equal_the_grids(tmp_path, monkeypatch, capsys):
    truth = _lists(tmp_path)
    extra = ["--conditions", str(tmp_path / "t.tsv"), "--conditions", str(tmp_path / "m.tsv"),
             "--by", "trial.phone", "--by", "model.g", "--by", "trial.lang", "--equalize",
             "--cprimary-priors", "0.01", "--cprimary-priors", "0.05"]  # fmt: skip
    grid, got = _grid_then_packed(tmp_path, monkeypatch, capsys, *extra)
    assert got == grid  # pooled, per condition, equalized, Cprimary: bit for bit
    conditions = got["systems"][0]["conditions"]
    assert len(conditions) == 2 * 2 * 3  # the row of a trial the key lacks adds no value 'w'
    for entry in conditions:
        want = entry["by"]
        tar = [
            s
            for t, s, p, la, g in truth.values()
            if t and (p, g, la) == (want["trial.phone"], want["model.g"], want["trial.lang"])
        ]
        non = [
            s
            for t, s, p, la, g in truth.values()
            if not t and (p, g, la) == (want["trial.phone"], want["model.g"], want["trial.lang"])
        ]
        assert (entry["n_target"], entry["n_nontarget"]) == (len(tar), len(non))
        if tar and non:
            assert entry["eer"] == pytest.approx(ref.eer(np.array(tar), np.array(non)), rel=1e-12)


def test_trial_conditions_in_the_bootstrap_packed_and_grid(tmp_path, monkeypatch, capsys):
    _lists(tmp_path)
    extra = ["--conditions", str(tmp_path / "t.tsv"), "--conditions", str(tmp_path / "m.tsv"),
             "--by", "trial.phone", "--ci", "0.9", "--bootstrap", "40", "--resample", "model.g",
             "--seed", "5"]  # fmt: skip
    grid, got = _grid_then_packed(tmp_path, monkeypatch, capsys, *extra)
    assert got == grid
    intervals = [c["eer_ci"] for c in got["systems"][0]["conditions"]]
    assert len(intervals) == 2 and all(lo <= hi for lo, hi in intervals)


@pytest.mark.parametrize("pack", [False, True])
def test_a_trial_missing_from_the_table_is_named(tmp_path, monkeypatch, capsys, pack):
    _lists(tmp_path)
    lines = (tmp_path / "t.tsv").read_text().splitlines()
    first_key_trial = (tmp_path / "trials").read_text().split("\n")[0].split()[:2]
    kept = [ln for ln in lines if ln.split("\t")[:2] != first_key_trial]
    (tmp_path / "t.tsv").write_text("\n".join(kept) + "\n")
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 0 if pack else 1 << 62)
    monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
    argv = ["evaluate", "--key", str(tmp_path / "trials"), "--scores", str(tmp_path / "scores"),
            "--conditions", str(tmp_path / "t.tsv"), "--by", "trial.phone", "-q"]  # fmt: skip
    assert main(argv) != 0
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (f"bosaris-dask: error: {tmp_path / 't.tsv'}: 1 trial of the key is not in "
                   f"the table of trials, e.g. {tuple(first_key_trial)}")  # fmt: skip


def test_bad_trial_specs_and_tables():
    key = make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [-1, 1]])
    models = condition_table("model", ["m1", "m2"], {"g": ["f", "m"]})
    with pytest.raises(
        OptionError, match=r"by \(--by\) trial.g: no trial column 'g' \(no table of "
    ):
        metrics.evaluate(make_scores(["m1", "m2"], ["s1", "s2"], [[1, 0], [0, 1]]), key,
                         conditions=[models], by=["trial.g"])  # fmt: skip
    pairs = {"segments": ["s1", "s2", "s1", "s2"]}
    a = condition_table("trial", ["m1", "m1", "m2", "m2"], {"y": list("YNYN")}, **pairs)
    b = condition_table("trial", ["m1", "m1", "m2", "m2"], {"y": list("YYYN")}, source="b", **pairs)
    scores = make_scores(["m1", "m2"], ["s1", "s2"], [[1, 0], [0, 1]])
    with pytest.raises(TrialError, match="b: trial column 'y' is also in <memory>"):
        metrics.evaluate(scores, key, conditions=[a, b], by=["trial.y"])
    with dask.config.set({"bosaris_dask.trial-cells": 3}):  # a spec's typo first
        with pytest.raises(OptionError, match=r"by \(--by\) trial.nope: no trial column 'nope'"):
            metrics.evaluate(scores, key, conditions=[a], by=["trial.nope"])
    with dask.config.set({"bosaris_dask.trial-cells": 3}):
        with pytest.raises(
            OptionError,
            match=r"a grid of 2 x 2 cells has more than 3 .*DASK_BOSARIS_DASK__TRIAL_CELLS=4 ",
        ):
            metrics.evaluate(scores, key, conditions=[a], by=["trial.y"])
    with pytest.raises(TrialError, match=r"duplicate trial \('m1', 's1'\)"):
        condition_table("trial", ["m1", "m1"], {"y": ["Y", "N"]}, segments=["s1", "s1"])
    with pytest.raises(TrialError, match="only a trial table, has segments"):
        condition_table("model", ["m1"], {"y": ["Y"]}, segments=["s1"])


@pytest.mark.filterwarnings("ignore:The data type .* does not have a Zarr V3 specification")
def test_trial_tables_from_text_zarr_and_hdf5(tmp_path):
    (tmp_path / "t.tsv").write_text("model\tsegment\ty\nm1\ts1\tY\nm1\ts2\tN\n")
    table = read_condition_table(tmp_path / "t.tsv")
    assert (table.side, table.ids.tolist(), table.segments.tolist()) == (
        "trial", ["m1", "m1"], ["s1", "s2"])  # fmt: skip
    assert table.columns["y"].tolist() == ["Y", "N"] and table.lines.tolist() == [2, 3]
    (tmp_path / "dup.tsv").write_text("model\tsegment\ty\nm1\ts1\tY\nm1\ts1\tN\n")
    with pytest.raises(TrialError, match=r"dup.tsv:3: duplicate trial \('m1', 's1'\)"):
        read_condition_table(tmp_path / "dup.tsv")
    (tmp_path / "none.tsv").write_text("model\tsegment\nm1\ts1\n")
    with pytest.raises(ParseError, match="none.tsv:1: the header names no attribute column"):
        read_condition_table(tmp_path / "none.tsv")

    import h5py
    import zarr

    group = zarr.open_group(str(tmp_path / "t.zarr"), mode="w")
    for name, values in (("model", ["m1", "m1"]), ("segment", ["s1", "s2"]), ("y", [1, 0])):
        group.create_array(name, data=np.asarray(values, dtype=str if name != "y" else int))
    with h5py.File(tmp_path / "t.h5", "w") as f:
        f["model"], f["segment"], f["y"] = [b"m1", b"m1"], [b"s1", b"s2"], [1, 0]
    for path in (tmp_path / "t.zarr", tmp_path / "t.h5"):
        table = read_condition_table(path)
        assert (table.side, table.ids.tolist(), table.segments.tolist()) == (
            "trial", ["m1", "m1"], ["s1", "s2"])  # fmt: skip
        assert table.columns["y"].tolist() == ["1", "0"]


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("segment\tmodel\ty", "starts its header 'model<TAB>segment', not 'segment<TAB>model'"),
        ("model segment y", "not 'model segment y' (the fields are separated by tabs, not spaces)"),
        ("model\tsegment\ty\t", "an empty column name in the header (a tab too many?)"),
        ("model,segment,y", "not 'model,segment,y' (the fields are separated by tabs, not commas)"),
    ],
)
def test_a_trial_table_s_header_mistakes_are_named(tmp_path, header, message):
    (tmp_path / "t.tsv").write_text(f"{header}\nm1\ts1\tY\n")
    with pytest.raises(ParseError, match=re.escape(message)):
        read_condition_table(tmp_path / "t.tsv")


def test_a_header_names_its_sides_in_any_case(tmp_path):
    # 'Model' was refused: "the header's first field names the side"; trial lists take any case
    (tmp_path / "t.tsv").write_text("Model\tSEGMENT\ty\nm1\ts1\tY\n")
    table = read_condition_table(tmp_path / "t.tsv")
    assert (table.side, table.ids.tolist(), table.segments.tolist()) == ("trial", ["m1"], ["s1"])
    (tmp_path / "m.tsv").write_text("Model\tgender\nm1\tf\n")
    assert read_condition_table(tmp_path / "m.tsv").columns["gender"].tolist() == ["f"]


def test_a_side_spec_of_a_trial_column_points_to_trial_col():
    key = make_key(["m1"], ["s1", "s2"], [[1, -1]])
    trials = condition_table("trial", ["m1", "m1"], {"c1": ["Y", "N"]}, segments=["s1", "s2"])
    with pytest.raises(OptionError, match=r"'c1' is a column of the table of trials <memory> "
                       r"\(header 'model<TAB>segment'\): --by trial.c1"):  # fmt: skip
        metrics.evaluate(make_scores(["m1"], ["s1", "s2"], [[1.0, 0.0]]), key,
                         conditions=[trials], by=["model.c1"])  # fmt: skip


def test_a_header_may_name_its_sides_as_nist_files_do(tmp_path):
    # 'modelid' was refused ("the header's first field names the side"), where trial files
    # take NIST's names: an SRE user's metadata table starts 'segmentid' (audit)
    (tmp_path / "s.tsv").write_text("segmentid\tlanguage\ns1\teng\n")
    table = read_condition_table(tmp_path / "s.tsv")
    assert (table.side, table.columns["language"].tolist()) == ("segment", ["eng"])
    (tmp_path / "t.tsv").write_text("modelid\tsegmentid\ty\nm1\ts1\tY\n")
    table = read_condition_table(tmp_path / "t.tsv")
    assert (table.side, table.ids.tolist(), table.segments.tolist()) == ("trial", ["m1"], ["s1"])
    (tmp_path / "m.tsv").write_text("modelid\ttest\nm1\tA\n")  # 'test': an attribute here
    assert read_condition_table(tmp_path / "m.tsv").columns["test"].tolist() == ["A"]
