"""Id maps, list files and quality-table merges (issue 17 item 9); hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest

from bosaris_dask.errors import ParseError, TrialError
from bosaris_dask.trials import (
    IdMap,
    key_from_labels,
    make_key,
    make_scores,
    map_model_names,
    map_segment_names,
    merge_quality_tables,
    quality_table,
    read_id_map,
    read_list,
    write_id_map,
    write_list,
)


def test_map_model_names_through_enrolment_segments(tmp_path):
    path = tmp_path / "enrol.map"
    path.write_text("spkA enr1\n\nspkB   enr2\nspkC enr3\n")
    idmap = read_id_map(path)
    assert idmap.left.tolist() == ["spkA", "spkB", "spkC"]
    key = make_key(["spkB", "spkA"], ["t1", "t2"], [[1, -1], [-1, 1]])
    renamed = map_model_names(key, idmap)
    assert renamed.model.values.tolist() == ["enr2", "enr1"]
    np.testing.assert_array_equal(renamed.trial_mask.values, key.trial_mask.values)
    back = map_model_names(renamed, idmap.inverse())
    assert back.model.values.tolist() == ["spkB", "spkA"]
    scores = make_scores(["spkA", "spkZ"], ["t1"], [[1.5], [2.5]])
    with pytest.raises(TrialError, match=r"1 model ids are not in the id map \('spkZ'\)"):
        map_model_names(scores, idmap)
    kept = map_model_names(scores, idmap, drop_unmapped=True)
    assert kept.model.values.tolist() == ["enr1"] and kept.score.values.tolist() == [[1.5]]


def test_map_segment_names_and_a_label_key():
    key = key_from_labels(["m1", "m2"], ["a", "b"], ["x", "y"], ["b", "a"])
    m = IdMap.from_pairs([("x", "seg-x"), ("y", "seg-y")])
    out = map_segment_names(key, m)
    assert out.segment.values.tolist() == ["seg-x", "seg-y"]
    assert out.trial_mask.values.tolist() == [[-1, 1], [1, -1]]


def test_renaming_to_duplicate_ids_is_an_error():
    key = make_key(["a", "b"], ["t"], [[1], [-1]])
    with pytest.raises(TrialError, match="two model ids map to 'same'"):
        map_model_names(key, IdMap.from_pairs([("a", "same"), ("b", "same")]))


def test_id_map_file_errors_name_the_line(tmp_path):
    bad = tmp_path / "bad.map"
    bad.write_text("a b\nc\n")
    with pytest.raises(ParseError, match=r"bad.map:2: expected 2 fields"):
        read_id_map(bad)
    bad.write_text("a b\nc d\na e\n")
    with pytest.raises(
        ParseError, match=r"bad.map:3: left id 'a' is mapped twice \(first on line 1\)"
    ):
        read_id_map(bad)


def test_id_map_and_list_roundtrip(tmp_path):
    m = IdMap.from_pairs([("m1", "s1"), ("m2", "s2")])
    write_id_map(m, tmp_path / "x.map")
    assert (tmp_path / "x.map").read_text() == "m1 s1\nm2 s2\n"
    assert read_id_map(tmp_path / "x.map").mapping() == {"m1": "s1", "m2": "s2"}
    write_list(["s3", "s1", "s3"], tmp_path / "x.lst")
    assert (tmp_path / "x.lst").read_text() == "s3\ns1\ns3\n"
    assert read_list(tmp_path / "x.lst") == ["s3", "s1", "s3"]
    (tmp_path / "y.lst").write_text("a\nb c\n")
    with pytest.raises(ParseError, match=r"y.lst:2: expected one id per line"):
        read_list(tmp_path / "y.lst")
    with pytest.raises(TrialError, match="whitespace"):
        write_list(["ok", "not ok"], tmp_path / "z.lst")
    assert not (tmp_path / "z.lst").exists()


def test_merge_segment_quality_tables():
    enrol = quality_table(["e1", "e2"], [[1.0, 10.0], [2.0, 20.0]], measures=["snr", "dur"])
    test = quality_table(["t1"], [[3.0, np.nan]], measures=["snr", "dur"])
    merged = merge_quality_tables(enrol, test)
    assert merged.id.values.tolist() == ["e1", "e2", "t1"]
    np.testing.assert_array_equal(merged.values, [[1.0, 10.0], [2.0, 20.0], [3.0, np.nan]])
    with pytest.raises(TrialError, match=r"1 ids are in more than one quality table \('e2'\)"):
        merge_quality_tables(enrol, quality_table(["e2"], [[0.0, 0.0]], measures=["snr", "dur"]))
    with pytest.raises(TrialError, match="measures"):
        merge_quality_tables(enrol, quality_table(["x"], [[0.0, 0.0]]))
