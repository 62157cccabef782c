"""ASVspoof 5 readers: the package's formats, and one-line errors naming file and line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from bosaris_dask import metrics
from bosaris_dask.errors import MissingTrialsError, ParseError, TrialError
from bosaris_dask.spoofing import (
    cm_arrays,
    cm_key_and_scores,
    read_cm_key,
    read_cm_scores,
    read_sasv_key,
    read_sasv_scores,
    sasv_arrays,
    sasv_key_and_scores,
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
    bona, spoof = cm_arrays(read_cm_scores(DATA / "cm_scores.tsv.gz"),
                            read_cm_key(DATA / "cm_key.tsv.gz"))  # fmt: skip
    assert (bona.size, spoof.size) == (REF["cm"]["n_bonafide"], REF["cm"]["n_spoof"])


def test_the_bundled_track2_files_read_as_the_package_counts_them():
    arrays = sasv_arrays(read_sasv_scores(DATA / "sasv_scores.tsv.gz"),
                         read_sasv_key(DATA / "sasv_key.tsv.gz"))  # fmt: skip
    for column in ("cm", "asv", "sasv"):
        sizes = {name: v.size for name, v in arrays[column].items()}
        assert sizes == {n: REF["sasv"][f"n_{n}"] for n in ("target", "nontarget", "spoof")}


def test_track1_through_the_engine_gives_the_package_dcf_eer_and_cllr():
    key, scores = cm_key_and_scores(read_cm_scores(DATA / "cm_scores.tsv.gz"),
                                    read_cm_key(DATA / "cm_key.tsv.gz"))  # fmt: skip
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
    arrays = sasv_arrays(scores, key)
    assert arrays["cm"]["target"].tolist() == [7.0]
    assert arrays["asv"]["nontarget"].tolist() == [5.0]
    assert arrays["sasv"]["spoof"].tolist() == [3.0]


def test_asvspoof_2019_cm_protocol_and_score_files(tmp_path):
    # the 2019 LA protocol (speaker filename - attack|- key) and the 2019 evaluation package's
    # CM score file (filename attack key score): the same key and scores as the 2-column files
    protocol = _write(tmp_path / "ASVspoof2019.LA.cm.eval.trl.txt",
                      "LA_0039 LA_E_2834763 - A11 spoof\nLA_0014 LA_E_8877452 - - bonafide\n"
                      "LA_0040 LA_E_6828287 - A14 spoof\n")  # fmt: skip
    scores = _write(tmp_path / "cm_score.txt",
                    "LA_E_8877452 - bonafide 4.25\nLA_E_2834763 A11 spoof -3.5\n"
                    "LA_E_6828287 A14 spoof 0.5\n")  # fmt: skip
    key = read_cm_key(protocol)
    assert key.filename.tolist() == ["LA_E_2834763", "LA_E_8877452", "LA_E_6828287"]
    assert key.bonafide.tolist() == [False, True, False]
    bona, spoof = cm_arrays(read_cm_scores(scores), key)
    assert bona.tolist() == [4.25] and spoof.tolist() == [-3.5, 0.5]
    # its key column is checked (it was not read: a score file of another protocol, whose
    # labels all contradicted the key, gave the same numbers without a word)
    other = _write(tmp_path / "other.txt", "LA_E_8877452 - bonafide 4.25\n"
                   "LA_E_2834763 - bonafide -3.5\nLA_E_6828287 A14 spoof 0.5\n")  # fmt: skip
    with pytest.raises(ParseError, match=r"other.txt:2: the key column says bonafide for "
                       r"LA_E_2834763, where .*trl.txt says spoof \(1 such row\): is this the "
                       "score file of that key"):  # fmt: skip
        cm_arrays(read_cm_scores(other), key)
    with pytest.raises(ParseError, match=r"bad.txt:1: key 'spoof' contradicts attack '-'"):
        read_cm_scores(_write(tmp_path / "bad.txt", "LA_E_8877452 - spoof 4.25\n"))


@pytest.mark.parametrize(
    "reader, text, message",
    [
        (read_cm_key, "a bonafide\nb fake\n", r"k:2: bad cm-label 'fake': expected bonafide/spoof"),
        (read_cm_key, "a bonafide\na spoof\n", r"k:2: duplicate filename 'a' \(first on line 1\)"),
        (read_cm_key, "a bonafide x\n", r"k:1: expected 2, 5 or 10 fields, found 3$"),
        (
            read_cm_key,
            "s a bonafide target\n",
            r"k:1: expected 2, 5 or 10 fields, found 4 \(a track-2 \(SASV\) file\? use 'spoof "
            r"sasv'\)",
        ),
        (
            read_cm_key,
            "s a F bonafide target\n",
            r"k:1: key 'target' is an ASV label: a track-2 \(SASV\) file\? use 'spoof sasv'",
        ),
        (
            read_cm_key,
            "LA_0079 LA_T_1 - A01 bonafide\n",
            r"k:1: key 'bonafide' contradicts attack 'A01' \(ASVspoof 2019: '-' for bona fide",
        ),
        (read_cm_scores, "s a 1 2 3\n", r"k:1: expected 2 or 4 fields, found 5 \(a track-2"),
        (
            read_sasv_key,
            "filename cm-label\na bonafide\n",
            r"k:1: expected 4 or 5 fields, found 2 \(a track-1 \(CM\) file\? use 'spoof cm'\)",
        ),
        (read_sasv_scores, "a 0.5\n", r"k:1: expected 5 fields, found 2 \(a track-1 \(CM\)"),
        (read_sasv_scores, "a A01 spoof 0.5\n", r"k:1: expected 5 fields, found 4 \(a track-1"),
        (read_cm_key, "a bonafide\nb spoof x\n", r"k:2: expected 2 fields, found 3"),
        (
            read_sasv_key,
            "s a F bonafide spoof\n",
            r"k:1: attack label 'bonafide' contradicts "
            r"asv-label 'spoof'",
        ),
        (read_sasv_key, "s a F A11 target\n", r"k:1: attack label 'A11' contradicts asv-label"),
        (
            read_sasv_key,
            "s a bonafide target\ns a bonafide target\n",
            r"k:2: duplicate trial \(speaker 's', filename 'a'\) \(first on line 1\)",
        ),
        (
            read_sasv_scores,
            "s a - 1 2\ns b 3 4 5\n",
            r"k:2: cm-score '3' where line 1 gave '-' \(not given\): a score column is all ",
        ),
        (
            read_sasv_scores,
            "s a 0 1 2\ns b 3 - 5\n",
            r"k:2: asv-score '-' where line 1 gave numbers",
        ),
        (read_sasv_scores, "s a - - -\n", r"k: every score column is '-': no score given"),
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
        (read_cm_scores, "a\u00a01.5\n", r"k:1: expected 2 or 4 fields, found 1$"),
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
        cm_arrays(scores, key)


def test_a_speaker_mismatch_and_a_missing_class_are_errors(tmp_path):
    key = read_sasv_key(_write(tmp_path / "key", "S1 a bonafide target\nS1 b spoof spoof\n"))
    scores = read_sasv_scores(_write(tmp_path / "sc", "S1 a 1 2 3\nS9 b 1 2 3\n"))
    with pytest.raises(TrialError, match=r"1 trial\(s\) \(speaker filename\) of .*key have no "
                                         r"score in .*sc: 'S1 b'"):  # fmt: skip
        sasv_arrays(scores, key)
    scores = read_sasv_scores(_write(tmp_path / "sc2", "S1 a 1 2 3\nS1 b 1 2 3\n"))
    with pytest.raises(TrialError, match=r"no nontarget trial"):
        sasv_arrays(scores, key)


def test_scores_not_in_the_key_are_ignored_and_key_order_kept(tmp_path):
    key = read_cm_key(_write(tmp_path / "key", "b spoof\na bonafide\nc spoof\n"))
    scores = read_cm_scores(_write(tmp_path / "sc", "x 9\nc 3\na 1\nb 2\n"))
    bona, spoof = cm_arrays(scores, key)
    assert bona.tolist() == [1.0] and spoof.tolist() == [2.0, 3.0]
    kd, sd = cm_key_and_scores(scores, key)
    assert sd.score.values.tolist() == [[2.0, 1.0, 3.0]]
    assert np.array_equal(kd.trial_mask.values, [[-1, 1, -1]])


def test_the_earlier_order_key_then_scores_is_swapped_with_a_warning(tmp_path):
    """``(scores, key)`` as in ``evaluate``; ``(key, scores)`` of earlier releases still works
    with a FutureWarning; anything else is a TrialError naming what the function takes."""
    key = read_cm_key(_write(tmp_path / "key", "b spoof\na bonafide\n"))
    scores = read_cm_scores(_write(tmp_path / "sc", "a 1\nb 2\n"))
    skey = read_sasv_key(_write(tmp_path / "skey", "S1 a bonafide target\nS1 b bonafide "
                                "nontarget\nS1 c spoof spoof\n"))  # fmt: skip
    sscores = read_sasv_scores(_write(tmp_path / "ssc", "S1 a 1 2 3\nS1 b 0 0 0\nS1 c 4 5 6\n"))
    for func, s, k in (
        (cm_arrays, scores, key),
        (cm_key_and_scores, scores, key),
        (sasv_arrays, sscores, skey),
        (sasv_key_and_scores, sscores, skey),
    ):
        want = func(s, k)
        with pytest.warns(FutureWarning, match=rf"{func.__name__}\(key, scores\) is deprecated") \
                as record:  # fmt: skip
            swapped = func(k, s)
        assert record[0].filename == __file__  # points at the caller
        assert repr(swapped) == repr(want)
        with pytest.raises(TrialError, match=rf"{func.__name__} takes \(\w+Scores, \w+Key\), "
                                             r"not \(ndarray, \w+Key\)"):  # fmt: skip
            func(np.zeros(2), k)
    with pytest.warns(FutureWarning):  # keywords pass through the swap
        assert [a.tolist() for a in cm_arrays(key, scores, allow_missing=True)] == [[1.0], [2.0]]


def test_a_byte_order_mark_crlf_and_blank_lines_before_the_header_are_read(tmp_path):
    key = read_cm_key(_write(tmp_path / "k", "\ufeff\r\n\nfilename cm-label\r\na bonafide\r\n"
                                            "b spoof\r\n"))  # fmt: skip
    scores = read_cm_scores(_write(tmp_path / "s", "\ufeffb -1.5\na 2\n"))
    assert [a.tolist() for a in cm_arrays(scores, key)] == [[2.0], [-1.5]]


def test_a_file_trialled_against_several_speakers_is_one_trial_per_speaker(tmp_path):
    # The database's track-2 trials reuse a test file for several claimed speakers (834,536
    # trials of 680,774 files in the evaluation set): a trial is the (speaker, filename) pair.
    key = read_sasv_key(_write(tmp_path / "k", "spk filename cm-label asv-label\n"
                                               "S1 a bonafide target\nS2 a bonafide nontarget\n"
                                               "S1 b spoof spoof\nS2 b spoof spoof\n"))  # fmt: skip
    scores = read_sasv_scores(_write(tmp_path / "s", "S2 b 1 2 3\nS1 a 4 5 6\nS2 a 7 8 9\n"
                                                     "S1 b 10 11 12\n"))  # fmt: skip
    arrays = sasv_arrays(scores, key)
    assert {n: v.tolist() for n, v in arrays["sasv"].items()} == {
        "target": [6.0], "nontarget": [9.0], "spoof": [12.0, 3.0]}  # fmt: skip
    kd, cols = sasv_key_and_scores(scores, key)
    assert kd.segment.values.tolist() == ["S1 a", "S2 a", "S1 b", "S2 b"]
    assert cols["cm"].score.values.tolist() == [[4.0, 7.0, 10.0, 1.0]]


def test_score_columns_given_as_dashes_are_left_out(tmp_path):
    # A single SASV system (the evaluation package's t2_single mode) writes '-' for the CM and
    # ASV scores.
    key = read_sasv_key(_write(tmp_path / "k", "S1 a bonafide target\nS2 a bonafide nontarget\n"
                                               "S1 b spoof spoof\n"))  # fmt: skip
    scores = read_sasv_scores(
        _write(
            tmp_path / "s",
            "spk\tfilename\tcm-score\tasv-score\t"
            "sasv-score\nS1\ta\t-\t-\t2.5\n"
            "S2\ta\t-\t-\t-1\nS1\tb\t-\t-\t0\n",
        )
    )
    assert scores.cm is None and scores.asv is None
    arrays = sasv_arrays(scores, key)
    assert list(arrays) == ["sasv"]
    assert {n: v.tolist() for n, v in arrays["sasv"].items()} == {
        "target": [2.5], "nontarget": [-1.0], "spoof": [0.0]}  # fmt: skip
    _, cols = sasv_key_and_scores(scores, key)
    assert sorted(cols) == ["sasv"]


def _as_protocols(tmp_path) -> tuple[str, str]:
    """The bundled keys rewritten in the database's protocol layouts (space-separated, no
    header): track 1's ten columns and track 2's five."""
    cm_rows = [line.split("\t") for line in gzip.open(DATA / "cm_key.tsv.gz", "rt")][1:]
    cm = [f"E_0001 {name} F - - - {'-' if label.strip() == 'bonafide' else 'AC1'} "
          f"{'bonafide' if label.strip() == 'bonafide' else 'A17'} {label.strip()} -"
          for name, label in cm_rows]  # fmt: skip
    sasv_rows = [line.split() for line in gzip.open(DATA / "sasv_key.tsv.gz", "rt")][1:]
    sasv = [f"{spk} {name} M {'bonafide' if cm_label == 'bonafide' else 'A11'} {asv}"
            for spk, name, cm_label, asv in sasv_rows]  # fmt: skip
    return (
        _write(tmp_path / "ASVspoof5.eval.track_1.tsv", "\n".join(cm) + "\n"),
        _write(tmp_path / "ASVspoof5.eval.track_2.trial.tsv", "\n".join(sasv) + "\n"),
    )


def test_the_databases_protocol_files_read_as_the_packages_keys(tmp_path):
    track_1, track_2 = _as_protocols(tmp_path)
    package, protocol = read_cm_key(DATA / "cm_key.tsv.gz"), read_cm_key(track_1)
    assert protocol.filename.tolist() == package.filename.tolist()
    assert protocol.bonafide.tolist() == package.bonafide.tolist()
    package, protocol = read_sasv_key(DATA / "sasv_key.tsv.gz"), read_sasv_key(track_2)
    for field in ("speaker", "filename", "asv_class"):
        assert getattr(protocol, field).tolist() == getattr(package, field).tolist(), field


def test_allow_missing_leaves_key_trials_without_a_score_out(tmp_path):
    key = read_cm_key(_write(tmp_path / "key", "a bonafide\nb spoof\nc spoof\nd bonafide\n"))
    scores = read_cm_scores(_write(tmp_path / "sc", "d 4\na 1\nb 2\nzzz 3\n"))
    missing = r"1 filename\(s\) of .*key have no score in .*sc: 'c' \(allow_missing drops them\)$"
    with pytest.raises(MissingTrialsError, match=missing):
        cm_key_and_scores(scores, key)
    bona, spoof = cm_arrays(scores, key, allow_missing=True)
    assert bona.tolist() == [1.0, 4.0] and spoof.tolist() == [2.0]
    kd, sd = cm_key_and_scores(scores, key, allow_missing=True)
    assert kd.segment.values.tolist() == ["a", "b", "d"]
    assert sd.score.values.tolist() == [[1.0, 2.0, 4.0]]
    assert np.array_equal(kd.trial_mask.values, [[1, -1, 1]])
    scores = read_cm_scores(_write(tmp_path / "sc2", "a 1\nd 4\n"))
    with pytest.raises(TrialError, match=r"need bona fide and spoof trials, found 2 bona fide "
                                         r"and 0 spoof with a score in .*sc2 \(2 key trials "
                                         r"without one dropped\)"):  # fmt: skip
        cm_arrays(scores, key, allow_missing=True)

    text = "S1 a bonafide target\nS2 a bonafide nontarget\nS1 b spoof spoof\nS1 c bonafide target\n"
    key = read_sasv_key(_write(tmp_path / "k2", text))
    scores = read_sasv_scores(_write(tmp_path / "s2", "S1 a 1 2 3\nS2 a 4 5 6\nS1 b 7 8 9\n"))
    with pytest.raises(MissingTrialsError, match=r"'S1 c' \(allow_missing drops them\)$"):
        sasv_arrays(scores, key)
    arrays = sasv_arrays(scores, key, allow_missing=True)
    assert {n: v.tolist() for n, v in arrays["sasv"].items()} == {
        "target": [3.0], "nontarget": [6.0], "spoof": [9.0]}  # fmt: skip
    kd, columns = sasv_key_and_scores(scores, key, allow_missing=True)
    assert kd.segment.values.tolist() == ["S1 a", "S2 a", "S1 b"]
    assert kd.segment_spoof.values.tolist() == [False, False, True]
    assert columns["cm"].score.values.tolist() == [[1.0, 4.0, 7.0]]
    scores = read_sasv_scores(_write(tmp_path / "s3", "S1 a 1 2 3\nS1 b 7 8 9\n"))
    with pytest.raises(TrialError, match=r"k2: no nontarget trial with a score in .*s3 \(2 key "
                                         r"trials without one dropped\)$"):  # fmt: skip
        sasv_key_and_scores(scores, key, allow_missing=True)


def test_the_demo_sample_reads_as_written_and_is_fixed_by_its_seed(tmp_path):
    """What `bosaris-dask demo` writes for the `spoof` examples: the package's four file
    formats, every score read back bit for bit, the counts as drawn, one sample per seed."""
    from bosaris_dask.spoofing.simulate import simulate_asvspoof5, write_asvspoof5_sample

    paths = write_asvspoof5_sample(tmp_path / "a", seed=3)
    cm_key, cm_scores, sasv_key, sasv_scores = (str(p) for p in paths)
    bona, spoof = cm_arrays(read_cm_scores(cm_scores), read_cm_key(cm_key))
    assert (bona.size, spoof.size) == (1000, 2000)
    assert np.median(bona) > np.median(spoof)  # a countermeasure better than chance
    drawn = {row[0]: float(row[1]) for row in simulate_asvspoof5(seed=3)["cm_scores"][1:]}
    read = read_cm_scores(cm_scores)
    assert all(drawn[f] == s for f, s in zip(read.filename, read.score, strict=True))
    key, scores = read_sasv_key(sasv_key), read_sasv_scores(sasv_scores)
    classes, counts = np.unique(key.asv_class, return_counts=True)
    assert sorted(counts.tolist()) == [500, 500, 1000] and len(classes) == 3
    np.testing.assert_array_equal(scores.sasv, (scores.cm + scores.asv) / 2)
    again = write_asvspoof5_sample(tmp_path / "b", seed=3)
    other = write_asvspoof5_sample(tmp_path / "c", seed=4)
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in paths]
    assert other[1].read_bytes() != paths[1].read_bytes()
