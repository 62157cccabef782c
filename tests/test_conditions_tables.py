"""Condition tables, --by specs and per-trial condition codes (bosaris_dask.conditions)."""

from __future__ import annotations

import itertools

import h5py
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.conditions import condition_codes, condition_table, read_condition_table
from bosaris_dask.errors import OptionError, ParseError, StoreError, TrialError
from bosaris_dask.trials import make_key


def _key(n_m=3, n_s=4, seed=0):
    rng = np.random.default_rng(seed)
    mask = rng.choice([-1, 0, 1], size=(n_m, n_s))
    return make_key([f"m{i}" for i in range(n_m)], [f"s{j}" for j in range(n_s)], mask, chunks=2)


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_read_text_table(tmp_path):
    path = _write(tmp_path, "m.tsv", "model\tgender\tlang\nm1\tf\teng\n\nm2\tm\tcmn\n")
    table = read_condition_table(path)
    assert table.side == "model"
    assert table.ids.tolist() == ["m1", "m2"]
    assert table.columns["lang"].tolist() == ["eng", "cmn"]
    assert table.lines.tolist() == [2, 4]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("speaker\tgender\nm1\tf\n", ":1: the header's first field names the side"),
        ("model\tgender\tgender\nm1\tf\tf\n", ":1: bad or repeated column name 'gender'"),
        ("model\tgender\nm1\tf\nm2\n", ":3: expected 2 tab-separated fields"),
        ("model\tgender\nm1\t \n", ":2: empty value in column 'gender'"),
        ("model\tgender\nm1\tf\nm2\tm\nm1\tm\n", ":4: duplicate model id 'm1'"),
        ("model\n", ":1: the header names no attribute column"),
        ("\n", "empty condition table"),
    ],
)
def test_bad_text_tables(tmp_path, text, message):
    path = _write(tmp_path, "t.tsv", text)
    with pytest.raises((ParseError, TrialError)) as err:
        read_condition_table(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(StoreError, match="no such condition table"):
        read_condition_table(tmp_path / "absent.tsv")


@pytest.mark.filterwarnings("ignore:The data type .* does not have a Zarr V3 specification")
def test_zarr_and_hdf5_tables(tmp_path):
    z = zarr.open_group(str(tmp_path / "seg.zarr"), mode="w")
    z.create_array("segment", data=np.array([b"s1", b"s2"]))
    z.create_array("lang", data=np.array([b"eng", b"cmn"]))
    z.create_array("duration", data=np.array([10, 20]))
    table = read_condition_table(tmp_path / "seg.zarr")
    assert table.side == "segment"
    assert table.columns["duration"].tolist() == ["10", "20"]
    with h5py.File(tmp_path / "m.h5", "w") as f:
        f["ids"] = np.array([b"m1", b"m2"])
        f["gender"] = np.array([b"f", b"m"])
        f.attrs["side"] = "model"
    table = read_condition_table(tmp_path / "m.h5")
    assert (table.side, table.ids.tolist(), table.columns["gender"].tolist()) == (
        "model",
        ["m1", "m2"],
        ["f", "m"],
    )
    with h5py.File(tmp_path / "own.h5", "w") as f:  # the side on 'ids' itself (was refused)
        f["ids"] = np.array([b"m1", b"m2"])
        f["ids"].attrs["side"] = b"segment"
        f["gender"] = np.array([b"f", b"m"])
    table = read_condition_table(tmp_path / "own.h5")
    assert (table.side, table.ids.tolist()) == ("segment", ["m1", "m2"])
    with h5py.File(tmp_path / "empty.h5", "w") as f:
        f["model"] = np.array([b"m1", b"m2"])
        f["gender"] = np.array([b"f", b""])
    with pytest.raises(StoreError, match=r"empty.h5: empty value in column 'gender' \(id 'm2'\)"):
        read_condition_table(tmp_path / "empty.h5")
    with h5py.File(tmp_path / "bad.h5", "w") as f:
        f["ids"] = np.array([b"m1"])
    with pytest.raises(StoreError, match="one id array named 'model' or 'segment'"):
        read_condition_table(tmp_path / "bad.h5")


def _brute_groups(key, mcols, scols, specs):
    """The condition label of every cell, by direct lookups (no codes)."""
    out = np.empty(key.trial_mask.shape, dtype=object)
    for i, m in enumerate(key.model.values):
        for j, s in enumerate(key.segment.values):
            parts = []
            for spec in specs:
                kind, col = spec.split(".")
                if kind == "model":
                    parts.append(mcols[col][m])
                elif kind == "segment":
                    parts.append(scols[col][s])
                else:
                    parts.append("same" if mcols[col][m] == scols[col][s] else "different")
            out[i, j] = tuple(parts)
    return out


@pytest.mark.parametrize(
    "specs",
    [
        ["model.g"],
        ["segment.l"],
        ["same.l"],
        ["model.g", "same.l", "segment.d"],
        ["segment.d", "model.l"],
    ],
)
def test_codes_match_direct_lookup(specs):
    rng = np.random.default_rng(1)
    key = _key(5, 7)
    mids, sids = key.model.values, key.segment.values
    mcols = {"g": dict(zip(mids, rng.choice(["f", "m"], 5), strict=True)),
             "l": dict(zip(mids, rng.choice(["a", "b", "c"], 5), strict=True))}  # fmt: skip
    scols = {"l": dict(zip(sids, rng.choice(["a", "b"], 7), strict=True)),
             "d": dict(zip(sids, rng.choice(["5", "10", "20"], 7), strict=True))}  # fmt: skip
    # tables hold extra ids and another order: only the key's ids matter
    models = condition_table(
        "model",
        [*mids[::-1], "extra"],
        {c: [*(v[m] for m in mids[::-1]), "x"] for c, v in mcols.items()},
    )
    segments = condition_table("segment", sids, {c: [v[s] for s in sids] for c, v in scols.items()})
    cond = condition_codes(key, [segments, models], specs)
    labels = cond.labels
    assert len(labels) == cond.n_conditions == int(np.prod([len(v) for v in cond.values]))
    assert len({tuple(lab.values()) for lab in labels}) == len(labels)
    for chunks in (1, 3, (2, 5)):
        g = cond.group_index(chunks).compute()
        assert g.dtype == np.int16
        want = _brute_groups(key, mcols, scols, specs)
        for i, j in itertools.product(range(5), range(7)):
            assert tuple(labels[g[i, j]].values()) == want[i, j]


def test_code_errors():
    key = _key()
    models = condition_table("model", ["m0", "m1"], {"g": ["f", "m"]}, source="m.tsv")
    with pytest.raises(TrialError, match=r"^m.tsv: 1 model id of the key is not in the table, "
                       r"e.g. 'm2'$"):  # fmt: skip
        condition_codes(key, [models], ["model.g"])
    models = condition_table("model", ["m0", "m1", "m2"], {"g": ["f", "m", "f"]}, source="m.tsv")
    segs = condition_table("segment", ["s0", "s1", "s2", "s3"], {"l": list("abab")}, source="s.tsv")
    said = r"columns: g; in m.tsv; 'l' is a segment column: --by segment.l\)$"
    with pytest.raises(
        OptionError, match=r"^by \(--by\) model.l: no model column 'l' \(model " + said
    ):
        condition_codes(key, [models, segs], ["model.l"])
    with pytest.raises(
        OptionError,
        match=r"^by \(--by\) segment.g: no segment column 'g' \(segment "
        r"columns: none; in no table; 'g' is a model column: --by model.g\)$",
    ):
        condition_codes(key, [models], ["segment.g"])
    # a model table headed 'segment': its ids are the key's model ids
    heading = condition_table("segment", ["m0", "m1", "m2"], {"g": list("fmf")}, source="h.tsv")
    with pytest.raises(TrialError, match=r"^h.tsv: 4 segment ids of the key are not in the table, "
                       r"e.g. 's0' \(its ids are the key's model ids: should its header's first "
                       r"column be 'model'\?\)$"):  # fmt: skip
        condition_codes(key, [heading], ["segment.g"])
    with pytest.raises(OptionError, match=r"^by \(--by\) same.g: no segment column 'g'"):
        condition_codes(key, [models, segs], ["same.g"])
    with pytest.raises(OptionError, match="expected model.COL"):
        condition_codes(key, [models], ["speaker.g"])
    with pytest.raises(OptionError, match=r"^by \(--by\) model.g given twice$"):
        condition_codes(key, [models], ["model.g", "model.g"])
    with pytest.raises(OptionError, match=r"^no by \(--by\) spec"):
        condition_codes(key, [models], [])
    other = condition_table("model", ["m0", "m1", "m2"], {"g": list("xyz")}, source="m2.tsv")
    with pytest.raises(TrialError, match="m2.tsv: model column 'g' is also in m.tsv"):
        condition_codes(key, [models, other], ["model.g"])


def test_text_tables_in_gzip_with_a_byte_order_mark_or_bad_bytes(tmp_path):
    import gzip

    (tmp_path / "m.tsv.gz").write_bytes(gzip.compress(b"model\tg\nm1\tf\nm2\tm\n"))
    assert read_condition_table(tmp_path / "m.tsv.gz").columns["g"].tolist() == ["f", "m"]
    (tmp_path / "bom.tsv").write_bytes(b"\xef\xbb\xbfmodel\tg\nm1\tf\n")  # was: not '\ufeffmodel'
    assert read_condition_table(tmp_path / "bom.tsv").side == "model"
    (tmp_path / "latin.tsv").write_bytes(b"model\tg\nm1\t\xe9\n")  # was a UnicodeDecodeError
    with pytest.raises(ParseError, match=r"latin.tsv:2: not UTF-8 text"):
        read_condition_table(tmp_path / "latin.tsv")
    (tmp_path / "cut.tsv.gz").write_bytes(gzip.compress(b"model\tg\nm1\tf\n" * 50)[:30])
    with pytest.raises(ParseError, match=r"cut.tsv.gz: not a readable gzip file"):
        read_condition_table(tmp_path / "cut.tsv.gz")


@pytest.mark.filterwarnings("ignore:The data type .* does not have a Zarr V3 specification")
def test_a_nan_in_a_stored_column_is_a_missing_value(tmp_path):
    group = zarr.open_group(str(tmp_path / "m.zarr"), mode="w")
    group.create_array("model", data=np.array([b"m1", b"m2"]))
    group.create_array("age", data=np.array([30.0, np.nan]))  # was the condition 'age=nan'
    with pytest.raises(StoreError, match="empty value in column 'age' \\(id 'm2'\\)"):
        read_condition_table(tmp_path / "m.zarr")


@pytest.mark.parametrize("missing", [None, np.nan, "", "  "])
def test_a_missing_value_given_in_python_is_refused_as_a_files_empty_field_is(missing):
    # None, NaN and '' were the conditions 'g=None', 'g=nan' and 'g=', each a partition of
    # --equalize (the equalized EER of a 4-model key moved from 0.2957 to 0.2705)
    with pytest.raises(TrialError, match=r"^<memory>: missing value in column 'g' for model 'm2'$"):
        condition_table("model", ["m1", "m2", "m3"], {"g": ["f", missing, "m"]})
    with pytest.raises(TrialError, match=r"^t.tsv:3: missing value in column 'y' for trial "
                                         r"\('m1', 's2'\)$"):  # fmt: skip
        condition_table("trial", ["m1", "m1"], {"y": ["Y", missing]}, segments=["s1", "s2"],
                        source="t.tsv", lines=[2, 3])  # fmt: skip


def test_values_given_in_python_are_stripped_as_a_files_fields_are():
    # ' f' was a condition apart from 'f'
    table = condition_table("model", ["m0", "m1", "m2"], {"g": ["f", " f", "m\t"], "n": [1, 2, 3]})
    assert table.columns["g"].tolist() == ["f", "f", "m"]
    assert table.columns["n"].tolist() == ["1", "2", "3"]
    codes = condition_codes(_key(), [table], ["model.g"])
    assert codes.n_conditions == 2


def test_same_col_whose_sides_share_no_value_warns():
    """A model side written 1, 2 and a segment side 1.0, 2.0 (a float store column) made every
    trial 'different', silently."""
    from bosaris_dask.conditions import ConditionWarning

    key = _key(2, 3)
    models = condition_table("model", key.model.values, {"lang": ["1", "2"]})
    segments = condition_table("segment", key.segment.values, {"lang": ["1.0", "2.0", "1.0"]})
    with pytest.warns(ConditionWarning, match=r"same.lang: no model's value equals a segment's "
                      r"\(models '1', '2'; segments '1.0', '2.0'\)"):  # fmt: skip
        condition_codes(key, [models, segments], ["same.lang"])
    segments = condition_table("segment", key.segment.values, {"lang": ["1", "3", "4"]})
    condition_codes(key, [models, segments], ["same.lang"])  # one shared value: no warning


def test_python_takes_one_by_spec_or_table_as_a_string(tmp_path):
    """by="model.g" was read character by character ("--by 'm': expected ...")."""
    import bosaris_dask as bd
    from bosaris_dask.trials import make_scores

    key = _key()
    scores = make_scores(key.model.values, key.segment.values,
                         np.random.default_rng(0).normal(size=(3, 4)))  # fmt: skip
    path = _write(tmp_path, "m.tsv", "model\tg\n" + "".join(
        f"{m}\t{i % 2}\n" for i, m in enumerate(key.model.values)))  # fmt: skip
    one = bd.evaluate(scores, key, conditions=str(path), by="model.g")
    listed = bd.evaluate(scores, key, conditions=[path], by=["model.g"])
    assert one.identical(listed) and one.sizes["condition"] == 2


def test_text_tables_with_lone_cr_line_ends_and_a_corrupt_gzip(tmp_path):
    import gzip

    (tmp_path / "cr.tsv").write_bytes(b"model\tg\rm1\tf\rm2\tm\r")  # Excel for Mac's line ends
    assert read_condition_table(tmp_path / "cr.tsv").ids.tolist() == ["m1", "m2"]
    data = bytearray(gzip.compress(b"model\tg\n" + b"m1\tf\n" * 200))
    data[20:60] = bytes(b ^ 0xFF for b in data[20:60])  # was a zlib.error traceback
    (tmp_path / "bad.tsv.gz").write_bytes(bytes(data))
    with pytest.raises(ParseError, match="bad.tsv.gz: not a readable gzip file"):
        read_condition_table(tmp_path / "bad.tsv.gz")


def test_every_entry_point_takes_one_spec_or_table_as_a_string(tmp_path):
    import bosaris_dask as bd
    from bosaris_dask.bootstrap import evaluate_with_intervals
    from bosaris_dask.conditions import evaluate_conditions
    from bosaris_dask.trials import make_scores

    key = _key(4, 5)
    scores = make_scores(key.model.values, key.segment.values,
                         np.random.default_rng(1).normal(size=(4, 5)))  # fmt: skip
    path = _write(tmp_path, "m.tsv", "model\tg\n" + "".join(
        f"{m}\t{i % 2}\n" for i, m in enumerate(key.model.values)))  # fmt: skip
    want = bd.evaluate(scores, key, conditions=[path], by=["model.g"])
    assert evaluate_conditions(scores, key, conditions=str(path), by="model.g").identical(want)
    one = evaluate_with_intervals(scores, key, conditions=str(path), resample="model.g",
                                  bootstrap=3, seed=1, split_every=8)  # fmt: skip
    listed = evaluate_with_intervals(scores, key, conditions=[path], resample=["model.g"],
                                     bootstrap=3, seed=1, split_every=8)  # fmt: skip
    assert one.identical(listed)


@pytest.mark.filterwarnings("ignore:The data type .* does not have a Zarr V3 specification")
def test_info_describes_condition_tables_and_their_coverage_of_a_key(tmp_path, capsys):
    from bosaris_dask.cli import main
    from bosaris_dask.io import write

    (tmp_path / "m.tsv").write_text("model\tspeaker\tg\nm1\tspk1\tf\nm2\tspk2\tf\nm3\tspk1\tm\n")
    (tmp_path / "t.tsv").write_text("model\tsegment\tphone\nm1\ts1\tY\nm2\ts1\tN\nm2\ts2\tY\n")
    (tmp_path / "key.txt").write_text("m1 s1 target\nm2 s1 nontarget\nm2 s2 target\n")
    (tmp_path / "headed.txt").write_text("model\tsegment\tlabel\nm1\ts1\ttarget\n")
    write(make_key(["m1", "m2"], ["s1", "s2"], [[1, 0], [-1, 1]]), tmp_path / "key.zarr")
    assert main(["info", str(tmp_path / "m.tsv"), "--key", str(tmp_path / "key.txt")]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "side:        model: 3 ids, m1, m2, m3 (--by model.COL)",
        "columns:     speaker: 2 values: spk1 (2), spk2 (1)",
        "             g: 2 values: f (2), m (1)",
        "key:         every one of its 2 model ids is in the table",
    ]
    for key in ("key.txt", "key.zarr"):  # a text list, a store (the grid)
        assert main(["info", str(tmp_path / "t.tsv"), "--key", str(tmp_path / key)]) == 0
        assert capsys.readouterr().out.splitlines()[1:] == [
            "side:        trial: 3 trials of 2 models x 2 segments (--by trial.COL)",
            "columns:     phone: 2 values: Y (2), N (1)",
            "key:         every one of its 3 trials is in the table",
        ]
    (tmp_path / "t.tsv").write_text("model\tsegment\tphone\nm1\ts1\tY\nm2\ts2\tY\n")
    assert main(["info", str(tmp_path / "t.tsv"), "--key", str(tmp_path / "key.zarr")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"key:         not covered: {tmp_path / 't.tsv'}: 1 trial of the key is not in the "
        "table of trials, e.g. ('m2', 's1')"
    )
    z = zarr.open_group(str(tmp_path / "m.zarr"), mode="w")  # a store, told by its arrays
    z.create_array("model", data=np.array([b"m1", b"m2"]))
    z.create_array("g", data=np.array([b"f", b"m"]))
    assert main(["info", str(tmp_path / "m.zarr"), "--key", str(tmp_path / "key.zarr")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "key:         every one of its 2 model ids is in the table"
    )
    assert main(["info", str(tmp_path / "headed.txt")]) == 0  # a key with a header: no table
    assert "kind:        key" in capsys.readouterr().out
    for side in ("MODEL", "modelid", "Enroll_ID"):  # as --conditions reads them (were ndx)
        (tmp_path / "u.tsv").write_text(f"{side}\tg\nm1\tf\nm2\tm\n")
        assert main(["info", str(tmp_path / "u.tsv"), "--key", str(tmp_path / "key.zarr")]) == 0
        assert capsys.readouterr().out.splitlines()[1:2] == [
            "side:        model: 2 ids, m1, m2 (--by model.COL)"
        ]
    assert main(["info", "--kind", "conditions", str(tmp_path / "key.zarr")]) != 0
    assert "key.zarr: a key store, not a condition table" in capsys.readouterr().err
    (tmp_path / "spaced.tsv").write_text("model gender\nm0 f\n")  # reads as an ndx, noted
    assert main(["info", str(tmp_path / "spaced.tsv")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "note:        the trial ('model', 'gender') looks like the header of a condition table "
        "separated by spaces: condition tables are tab-separated"
    )


_FIELD = st.text(alphabet=st.sampled_from(list("ab1.-_") + [" ", "\t", "\xa0", "é", "\r"]),
                 max_size=4)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    header=st.sampled_from(["model\tg", "segment\tg\th", "model\tsegment\tg", "model\tsegment"]),
    rows=st.lists(st.lists(_FIELD, min_size=1, max_size=4), max_size=6),
    ends=st.sampled_from(["\n", "\r\n"]),
    bom=st.booleans(),
    last=st.booleans(),
)
def test_the_plain_parse_is_the_checked_one(header, rows, ends, bom, last):
    """pandas' parse of a plain file gives the line-by-line reader's table, and every file it
    declines is left to that reader (which raises its errors with their lines)."""
    from pathlib import Path

    from bosaris_dask.conditions.table_files import _parsed_checked, _parsed_plain

    text = ends.join([header, *("\t".join(r) for r in rows)]) + (ends if last else "")
    data = ("\ufeff" if bom else "").encode() + text.encode()
    path = Path("t.tsv")
    try:
        want = _parsed_checked(data, path)
    except (ParseError, TrialError) as err:  # declined, or the same error (a duplicate id)
        try:
            assert _parsed_plain(data, path) is None
        except TrialError as again:
            assert str(again) == str(err)
        return
    got = _parsed_plain(data, path)
    if got is None:  # declined: only files with whitespace to strip or lines to skip
        assert (
            any(c in text for c in " \xa0\r")
            or "\n\n" in text.replace("\r\n", "\n")
            or ("\t\t" in text or "\t\n" in text or text.endswith("\t"))
        )
        return
    assert (got.side, got.ids.tolist(), got.lines.tolist()) == (
        want.side, want.ids.tolist(), want.lines.tolist())  # fmt: skip
    assert got.segments is None if want.segments is None else (
        got.segments.tolist() == want.segments.tolist())  # fmt: skip
    assert {k: v.tolist() for k, v in got.columns.items()} == {
        k: v.tolist() for k, v in want.columns.items()}  # fmt: skip


def test_the_plain_parse_takes_a_clean_file(tmp_path):
    from bosaris_dask.conditions.table_files import _parsed_plain

    data = b"model\tsegment\tphone\r\nm1\ts1\tY\r\nm1\ts2\tN\r\n"
    table = _parsed_plain(data, tmp_path / "t.tsv")
    assert table is not None and table.lines.tolist() == [2, 3]
    assert _parsed_plain(b"model\tg\nm1\tf\n\nm2\tm\n", tmp_path / "b.tsv") is None  # blank line


def test_info_of_trial_files_with_headers_in_another_order_and_a_corrupt_gzip(tmp_path, capsys):
    # a review found them read as condition tables (a traceback for the gzip)
    import gzip

    from bosaris_dask.cli import main

    (tmp_path / "sm.txt").write_text("segment\tmodel\tscore\ns1\tm1\t0.5\n")
    (tmp_path / "ms.txt").write_text("model\tscore\tsegment\nm1\t0.5\ts1\n")
    for name in ("sm.txt", "ms.txt"):
        assert main(["info", str(tmp_path / name)]) == 0
        assert "kind:        scores" in capsys.readouterr().out
    (tmp_path / "bad.gz").write_bytes(gzip.compress(b"model\tg\nm1\tf\n" * 100)[:25])
    assert main(["info", str(tmp_path / "bad.gz")]) != 0
    assert "bad.gz: not a readable gzip file" in capsys.readouterr().err
    (tmp_path / "m.table").write_bytes(gzip.compress(b"model\tg\nm1\tf\n"))  # gzip, any name
    assert read_condition_table(tmp_path / "m.table").columns["g"].tolist() == ["f"]


def test_dataframes_are_condition_tables_in_evaluate_and_the_bootstrap(tmp_path):
    import pandas as pd

    import bosaris_dask as bd
    from bosaris_dask.conditions import table_from_frame
    from bosaris_dask.trials import make_scores

    rng = np.random.default_rng(4)
    mids, sids = [f"m{i}" for i in range(6)], [f"s{j}" for j in range(9)]
    mask = rng.choice([-1, 1], size=(6, 9), p=[0.7, 0.3])
    mask[0, 0], mask[-1, -1] = 1, -1
    key = make_key(mids, sids, mask)
    scores = make_scores(mids, sids, rng.normal(size=(6, 9)) + mask)
    models = pd.DataFrame({"model": mids, "spk": [f"k{i // 2}" for i in range(6)],
                           "age": [30, 41, 30, 52, 41, 30]})  # fmt: skip
    i, j = np.nonzero(mask)
    trials = pd.DataFrame({"model": np.array(mids)[i], "segment": np.array(sids)[j],
                           "y": np.where((i + j) % 2, "Y", "N")})  # fmt: skip
    (tmp_path / "m.tsv").write_text(models.to_csv(sep="\t", index=False))
    (tmp_path / "t.tsv").write_text(trials.to_csv(sep="\t", index=False))
    kw = {"by": ["model.age", "trial.y"], "bootstrap": 30, "resample": ["model.spk"], "seed": 3}
    from_frames = bd.evaluate(scores, key, conditions=[models.set_index("model"), trials], **kw)
    from_files = bd.evaluate(scores, key, conditions=[tmp_path / "m.tsv", tmp_path / "t.tsv"],
                             **kw)  # fmt: skip
    assert from_frames.identical(from_files)
    one = bd.evaluate(scores, key, conditions=models, by="model.age")  # one DataFrame
    assert one.sizes["condition"] == 3
    with pytest.raises(
        TrialError, match=r"<DataFrame>: missing value in column 'age' for model 'm1'$"
    ):
        table_from_frame(models.assign(age=[30, None, 30, 52, 41, 30]))
    with pytest.raises(TrialError, match=r"missing value in column 'spk' for model 'm2'$"):
        table_from_frame(models.assign(spk=["a", "b", " ", "c", "d", "e"]))
    with pytest.raises(TrialError, match=r"missing value in column 'model' \(row 'r3'\)$"):
        table_from_frame(models.assign(model=[*mids[:3], None, *mids[4:]]).set_axis(
            [f"r{k}" for k in range(6)]))  # fmt: skip
    with pytest.raises(TrialError, match=r"missing value in column 'y' for trial \('m0', 's0'\)"):
        table_from_frame(trials.assign(y=[""] + ["Y"] * (len(trials) - 1)))
    with pytest.raises(TrialError, match="two columns .or index levels. named 'model'"):
        table_from_frame(models.assign(Model=mids))
    # as a file's fields: values stripped of spaces (' k1 ' was a condition of its own), the
    # sides' names in any case (as a header's)
    spaced = models.assign(spk=[f" {v} " for v in models.spk]).rename(columns={"model": "MODEL"})
    assert bd.evaluate(scores, key, conditions=[spaced.set_index("MODEL"), trials], **kw).identical(
        from_files
    )
    with pytest.raises(TrialError, match="no column .or index. named 'model' or 'segment'"):
        table_from_frame(models.rename(columns={"model": "enrol"}))


def test_a_table_is_read_once_by_an_evaluation_with_conditions_and_a_bootstrap(
    tmp_path, monkeypatch
):
    import bosaris_dask as bd
    from bosaris_dask.conditions import table_files
    from bosaris_dask.trials import make_scores

    key = _key(6, 8, seed=2)
    scores = make_scores(key.model.values, key.segment.values, np.arange(48.0).reshape(6, 8))
    (tmp_path / "m.tsv").write_text("model\tg\n" + "".join(f"m{i}\t{i % 2}\n" for i in range(6)))
    read, calls = table_files.read_condition_table, []
    monkeypatch.setattr(table_files, "read_condition_table",
                        lambda p: calls.append(p) or read(p))  # fmt: skip
    with pytest.warns(UserWarning, match="too few"):
        bd.evaluate(scores, key, conditions=tmp_path / "m.tsv", by="model.g", bootstrap=5,
                    resample="model.g", seed=1)  # fmt: skip
    assert len(calls) == 1  # not once for the draws, once per condition pass
