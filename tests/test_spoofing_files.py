"""ASVspoof 5 readers: the package's formats, and one-line errors naming file and line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from bosaris_dask import metrics
from bosaris_dask.errors import ParseError, TrialError
from bosaris_dask.spoofing import (
    cm_arrays,
    cm_key_and_scores,
    read_cm_key,
    read_cm_scores,
    read_sasv_key,
    read_sasv_scores,
    sasv_arrays,
)

DATA = Path(__file__).parent / "data" / "asvspoof5"
REF = json.loads((DATA / "reference.json").read_text())


def _write(path: Path, text: str | bytes) -> str:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


def test_the_bundled_track1_files_read_as_the_package_counts_them():
    bona, spoof = cm_arrays(read_cm_key(DATA / "cm_key.tsv.gz"),
                            read_cm_scores(DATA / "cm_scores.tsv.gz"))  # fmt: skip
    assert (bona.size, spoof.size) == (REF["cm"]["n_bonafide"], REF["cm"]["n_spoof"])


def test_the_bundled_track2_files_read_as_the_package_counts_them():
    arrays = sasv_arrays(read_sasv_key(DATA / "sasv_key.tsv.gz"),
                         read_sasv_scores(DATA / "sasv_scores.tsv.gz"))  # fmt: skip
    for column in ("cm", "asv", "sasv"):
        sizes = {name: v.size for name, v in arrays[column].items()}
        assert sizes == {n: REF["sasv"][f"n_{n}"] for n in ("target", "nontarget", "spoof")}


def test_track1_through_the_engine_gives_the_package_dcf_eer_and_cllr():
    key, scores = cm_key_and_scores(read_cm_key(DATA / "cm_key.tsv.gz"),
                                    read_cm_scores(DATA / "cm_scores.tsv.gz"))  # fmt: skip
    ds = metrics.evaluate(scores, key, priors=[REF["cm"]["effective_prior"]])
    ds = metrics.operating_points(ds)
    cm = REF["cm"]
    assert ds.min_dcf.item() == pytest.approx(cm["min_dcf"], rel=1e-12)
    assert ds.act_dcf.item() == pytest.approx(cm["act_dcf"], rel=1e-12)
    # the reference's ROCCH-EER came from another hull code: equal to 2.4e-11 relative
    assert ds.eer.item() == pytest.approx(cm["eer_rocch"], rel=1e-10)
    assert ds.cllr.item() == pytest.approx(cm["cllr"], rel=1e-12)


def test_hand_written_files_with_header_spaces_case_and_gzip(tmp_path):
    with gzip.open(tmp_path / "k.gz", "wt") as f:
        f.write("spk filename cm-label asv-label\nS1 a bonafide target\nS1 b BONAFIDE nontarget\n"
                "S2 c spoof spoof\n")  # fmt: skip
    key = read_sasv_key(tmp_path / "k.gz")
    scores = read_sasv_scores(_write(tmp_path / "s", "S2 c 1 2 3\nS1 b 4 5 6\n\nS1 a 7 8 9\n"))
    arrays = sasv_arrays(key, scores)
    assert arrays["cm"]["target"].tolist() == [7.0]
    assert arrays["asv"]["nontarget"].tolist() == [5.0]
    assert arrays["sasv"]["spoof"].tolist() == [3.0]


@pytest.mark.parametrize(
    "reader, text, message",
    [
        (read_cm_key, "a bonafide\nb fake\n", r"k:2: bad cm-label 'fake': expected bonafide/spoof"),
        (read_cm_key, "a bonafide\na spoof\n", r"k:2: duplicate filename 'a' \(first on line 1\)"),
        (read_cm_key, "a bonafide x\n", r"k:1: expected 2 fields, found 3"),
        (read_cm_key, "filename cm-label\n", r"k: no trial in the key"),
        (read_cm_scores, "a 1\nb np.float64(2.0)\n", r"k:2: bad cm-score 'np.float64\(2.0\)'"),
        (read_cm_scores, "a nan\n", r"k:1: bad cm-score 'nan': not finite"),
        (read_sasv_key, "s a spoof target\n", r"k:1: cm-label 'spoof' contradicts asv-label"),
        (read_sasv_key, "s a bonafide imp\n", r"k:1: bad asv-label 'imp': expected target/"),
        (read_sasv_scores, "s a 1 2\n", r"k:1: expected 5 fields, found 4"),
        (read_sasv_scores, "s a 1 x 3\n", r"k:1: bad asv-score 'x'"),
        # the BOSARIS readers' text rules: what Python's float() or str.split() would take
        (read_cm_scores, "a 1\nb 1_000\n", r"k:2: bad cm-score '1_000': not a number"),
        (read_cm_scores, "a \uff10.\uff15\n", r"k:1: bad cm-score '\uff10.\uff15': not a num"),
        (read_cm_scores, "a\u00a01.5\n", r"k:1: expected 2 fields, found 1"),
        (read_cm_scores, "a 1\rb 2\n", r"k:1: carriage return inside a line"),
        (read_cm_scores, b"a 1\nb\xff 2\n", r"k:2: not UTF-8 text \(invalid start byte at byte 2"),
    ],
)
def test_bad_lines_are_one_line_errors_naming_file_and_line(tmp_path, reader, text, message):
    with pytest.raises(ParseError, match=message) as info:
        reader(_write(tmp_path / "k", text))
    assert "\n" not in str(info.value)


def test_a_key_filename_without_score_is_named(tmp_path):
    key = read_cm_key(_write(tmp_path / "key", "a bonafide\nb spoof\nc spoof\n"))
    scores = read_cm_scores(_write(tmp_path / "sc", "a 1\nb 2\nzzz 3\n"))
    with pytest.raises(TrialError, match=r"1 filename\(s\) of .*key have no score in .*sc: 'c'"):
        cm_arrays(key, scores)


def test_a_speaker_mismatch_and_a_missing_class_are_errors(tmp_path):
    key = read_sasv_key(_write(tmp_path / "key", "S1 a bonafide target\nS1 b spoof spoof\n"))
    scores = read_sasv_scores(_write(tmp_path / "sc", "S1 a 1 2 3\nS9 b 1 2 3\n"))
    with pytest.raises(TrialError, match=r"filename 'b': speaker 'S1' in .*key but 'S9'"):
        sasv_arrays(key, scores)
    scores = read_sasv_scores(_write(tmp_path / "sc2", "S1 a 1 2 3\nS1 b 1 2 3\n"))
    with pytest.raises(TrialError, match=r"no nontarget trial"):
        sasv_arrays(key, scores)


def test_scores_not_in_the_key_are_ignored_and_key_order_kept(tmp_path):
    key = read_cm_key(_write(tmp_path / "key", "b spoof\na bonafide\nc spoof\n"))
    scores = read_cm_scores(_write(tmp_path / "sc", "x 9\nc 3\na 1\nb 2\n"))
    bona, spoof = cm_arrays(key, scores)
    assert bona.tolist() == [1.0] and spoof.tolist() == [2.0, 3.0]
    kd, sd = cm_key_and_scores(key, scores)
    assert sd.score.values.tolist() == [[2.0, 1.0, 3.0]]
    assert np.array_equal(kd.trial_mask.values, [[-1, 1, -1]])


def test_a_byte_order_mark_crlf_and_blank_lines_before_the_header_are_read(tmp_path):
    key = read_cm_key(_write(tmp_path / "k", "\ufeff\r\n\nfilename cm-label\r\na bonafide\r\n"
                                            "b spoof\r\n"))  # fmt: skip
    scores = read_cm_scores(_write(tmp_path / "s", "\ufeffb -1.5\na 2\n"))
    assert [a.tolist() for a in cm_arrays(key, scores)] == [[2.0], [-1.5]]
