"""Trial and score files as the field writes them: VoxCeleb trial lists, wespeaker and 3D-Speaker
score files with a label column, and every accepted label vocabulary.

The files are written here the way the original tools write them: the VoxCeleb lists as
``LABEL enrol test`` with 1/0; wespeaker's ``score.py`` as ``'{} {} {:.5f} {}'`` (enrol, test,
score, the trial list's label); 3D-Speaker's ``compute_score_metrics.py`` as the trial line
followed by ``' %.5f'`` of the score (so ``enrol test label score``, label 1/0 or
target/nontarget).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from bosaris_dask import io
from bosaris_dask.cli import main
from bosaris_dask.errors import OptionError, ParseError
from bosaris_dask.io import text
from bosaris_dask.io.text import read_text, sniff_text_kind, text_has_labels
from bosaris_dask.io.text.labels import LABEL_PAIRS
from bosaris_dask.trials import make_ndx, make_scores


@pytest.fixture(params=["fast", "reference"])
def parser(request, monkeypatch):
    if request.param == "reference":
        monkeypatch.setattr(text.parse, "_parse_fast", lambda *args: None)
    return request.param


def _trials(n: int = 40, seed: int = 0):
    """VoxCeleb-like trials: (enrol wav, test wav, is target, score)."""
    rng = np.random.default_rng(seed)
    spk = [f"id1027{i}" for i in range(4)]
    rows, seen = [], set()
    while len(rows) < n:
        a, b = rng.integers(0, 4, 2)
        e = f"{spk[a]}/x6uYqmx31kE/{rng.integers(1, 4):05d}.wav"
        t = f"{spk[b]}/8jEAjG6SegY/{rng.integers(1, 9):05d}.wav"
        if (e, t) in seen:
            continue
        seen.add((e, t))
        rows.append((e, t, bool(a == b), float(rng.normal(0.6 if a == b else 0.1, 0.2))))
    return rows


def _expected(rows, path, kind):
    """The dense trial_mask / score a reader must produce (ids in order of appearance)."""
    models = list(dict.fromkeys(r[0] for r in rows))
    segments = list(dict.fromkeys(r[1] for r in rows))
    mask = np.zeros((len(models), len(segments)), dtype=np.int8)
    score = np.zeros(mask.shape)
    for e, t, tar, s in rows:
        i, j = models.index(e), segments.index(t)
        mask[i, j] = 1 if tar else -1
        score[i, j] = float(f"{s:.5f}")
    return models, segments, mask, score


def _voxceleb(tmp_path, rows, name="veri_test2.txt"):
    path = tmp_path / name
    path.write_text("".join(f"{int(tar)} {e} {t}\n" for e, t, tar, _ in rows))
    return path


def _wespeaker(tmp_path, rows, name="vox1_O_cleaned.kaldi.score"):
    path = tmp_path / name
    lab = {True: "target", False: "nontarget"}
    path.write_text("".join(f"{e} {t} {s:.5f} {lab[tar]}\n" for e, t, tar, s in rows))
    return path


def _3dspeaker(tmp_path, rows, numeric=True, name="vox1_O.score"):
    path = tmp_path / name
    lab = {True: "1", False: "0"} if numeric else {True: "target", False: "nontarget"}
    path.write_text("".join(" ".join([e, t, lab[tar]]) + f" {s:.5f}\n" for e, t, tar, s in rows))
    return path


@pytest.mark.parametrize("block_bytes", [text.BLOCK_BYTES, 64])
def test_voxceleb_trial_list_is_a_key(tmp_path, parser, block_bytes):
    rows = _trials()
    path = _voxceleb(tmp_path, rows)
    assert sniff_text_kind(path) == "key"
    assert not text_has_labels(path)
    key = read_text(path, block_bytes=block_bytes)
    models, segments, mask, _ = _expected(rows, path, "key")
    assert key.model.values.tolist() == models
    assert key.segment.values.tolist() == segments
    np.testing.assert_array_equal(key.trial_mask.values, mask)
    ndx = read_text(path, "ndx", block_bytes=block_bytes)
    np.testing.assert_array_equal(ndx.trial_mask.values, mask != 0)
    forced = read_text(path, format="voxceleb", block_bytes=block_bytes)
    np.testing.assert_array_equal(forced.trial_mask.values, mask)


@pytest.mark.parametrize("block_bytes", [text.BLOCK_BYTES, 64])
@pytest.mark.parametrize("tool", ["wespeaker", "3dspeaker", "3dspeaker-words"])
def test_score_files_with_labels_are_key_and_scores(tmp_path, parser, tool, block_bytes):
    rows = _trials(seed=3)
    if tool == "wespeaker":
        path = _wespeaker(tmp_path, rows)
    else:
        path = _3dspeaker(tmp_path, rows, numeric=tool == "3dspeaker")
    assert sniff_text_kind(path) == "scores"
    assert text_has_labels(path)
    models, segments, mask, score = _expected(rows, path, "scores")
    scores = read_text(path, block_bytes=block_bytes)
    key = read_text(path, "key", block_bytes=block_bytes)
    for obj in (scores, key):
        assert obj.model.values.tolist() == models
        assert obj.segment.values.tolist() == segments
    np.testing.assert_array_equal(scores.score_mask.values, mask != 0)
    np.testing.assert_array_equal(np.where(mask != 0, scores.score.values, 0.0), score)
    np.testing.assert_array_equal(key.trial_mask.values, mask)


def test_forced_format_wins_and_mismatches_are_errors(tmp_path):
    rows = _trials(n=5)
    both_numeric = tmp_path / "ambiguous.score"  # labels 1/0 and scores that happen to be 1/0
    both_numeric.write_text("a b 1 0\nc d 0 1\n")
    with pytest.raises(
        ParseError, match="fields 3 and 4 are both numbers that are label words"
    ) as info:
        read_text(both_numeric)
    assert info.value.line == 1
    for first, why in (("a x foo bar", "neither field 3 nor field 4 is a number"),
                       ("a b 0.5 0.7", "both numbers, and neither is a label word")):  # fmt: skip
        unclear = tmp_path / "unclear.score"
        unclear.write_text(first + "\n")
        with pytest.raises(ParseError, match=why):
            read_text(unclear)
    key3d = read_text(both_numeric, "key", format="3dspeaker")
    assert key3d.trial_mask.values.tolist() == [[1, 0], [0, -1]]
    keywe = read_text(both_numeric, "key", format="wespeaker")
    assert keywe.trial_mask.values.tolist() == [[-1, 0], [0, 1]]
    vox = _voxceleb(tmp_path, rows)
    with pytest.raises(ParseError, match="has no score column, so it cannot be read as scores"):
        read_text(vox, "scores")
    with pytest.raises(ParseError, match=r"expected 4 fields for a wespeaker file \(enrol test"):
        read_text(vox, format="wespeaker")
    # a BOSARIS scores file read as its own key: no label column apart from the score
    bosaris = tmp_path / "s.txt"
    bosaris.write_text("m s 1.5\n")
    assert not text_has_labels(bosaris)
    assert read_text(bosaris, format="bosaris").score.values.tolist() == [[1.5]]


@pytest.mark.parametrize(("pos", "neg"), LABEL_PAIRS)
def test_every_vocabulary_any_case(tmp_path, parser, pos, neg):
    up = pos.upper() if pos != "1" else pos
    content = f"{pos} a x\n{neg} a y\n{up} b y\n{neg.title()} b x\n"
    path = tmp_path / "trials.txt"
    path.write_text(content)
    assert read_text(path, format="voxceleb").trial_mask.values.tolist() == [[1, -1], [-1, 1]]
    nist = tmp_path / "key.tsv"
    nist.write_text("modelid\tsegmentid\tlabel\na\tx\t" + f"{pos}\na\ty\t{neg.upper()}\n")
    assert read_text(nist).trial_mask.values.tolist() == [[1, -1]]
    we = tmp_path / "we.score"
    we.write_text(f"a x 0.5 {pos}\na y -1.25 {neg}\n")
    key = read_text(we, "key", format="wespeaker")
    assert key.trial_mask.values.tolist() == [[1, -1]]


BAD_LABELS = [
    ("voxceleb", "1 a x\n0 a y\n2 b y\n", 3, "label '2' is not one of"),
    ("voxceleb", "1 a x\nyes a y\n", 2, "label 'yes' is not one of"),
    ("wespeaker", "a x 0.5 target\na y 0.1 nontarget\nb x 0.2 nontargt\n", 3, "'nontargt'"),
    ("3dspeaker", "a x 1 0.5\na y 0 0.1\nb x 1.0 0.2\n", 3, "label '1.0' is not one of"),
    ("bosaris", "a x target\na y NonTarget\nb y spoofed\n", 3, "label 'spoofed' is not one of"),
]


@pytest.mark.parametrize("block_bytes", [text.BLOCK_BYTES, 4])
@pytest.mark.parametrize(("fmt", "content", "line", "message"), BAD_LABELS)
def test_bad_labels_name_file_line_and_words(tmp_path, parser, fmt, content, line, message,
                                             block_bytes):  # fmt: skip
    path = tmp_path / "bad.txt"
    path.write_text(content)
    with pytest.raises(ParseError) as info:
        read_text(path, "key", format=fmt, block_bytes=block_bytes)
    assert info.value.line == line
    assert info.value.path == os.fspath(path)
    assert message in info.value.message
    assert "target/nontarget, 1/0, true/false, tgt/imp, genuine/impostor, mated/nonmated, " \
        "same/different, bonafide/spoof (any case)" in info.value.message  # fmt: skip
    if fmt != "bosaris":  # detection finds the same layout (and the same error)
        with pytest.raises(ParseError, match=message.replace("(", r"\(")):
            read_text(path, "key", block_bytes=block_bytes)


SCORES_WITH_BAD_LABELS = [
    # a 3D-Speaker file given as wespeaker: its 1/0 labels would be the scores
    ("wespeaker", "a x 1 4.643236287002317\na y 0 -5.6\n", 1, "label '4.643236287002317'"),
    ("3dspeaker", "a x 0.5 1\na y -0.5 0\n", 1, "label '0.5' is not one of"),  # wespeaker
    (None, "a x 0.5 target\na y 0.7 whatever\n", 2, "label 'whatever' is not one of"),
    (
        None,
        "modelid\ttargettype\tsegmentid\tLLR\nm\ttarget\tx\t1.5\nm\tgarbage\ty\t-2\n",
        3,
        "label 'garbage' is not one of",
    ),
    (None, "a x 0.5 target\na y 0.7 imp\n", 2, "label 'imp' is of the pair tgt/imp, but line 1"),
]


@pytest.mark.parametrize("block_bytes", [text.BLOCK_BYTES, 4])
@pytest.mark.parametrize(("fmt", "content", "line", "message"), SCORES_WITH_BAD_LABELS)
def test_a_score_file_s_label_column_is_checked_when_read_as_scores(
    tmp_path, capsys, parser, fmt, content, line, message, block_bytes
):
    path = tmp_path / "scores.txt"
    path.write_text(content)
    with pytest.raises(ParseError) as info:
        read_text(path, "scores", format=fmt, block_bytes=block_bytes)
    assert (info.value.line, info.value.path) == (line, os.fspath(path))
    assert info.value.message.startswith(message)
    out = tmp_path / "o.txt"  # convert alike, writing nothing
    assert main(["convert", *(["--format", fmt] if fmt else []), str(path), str(out)]) == 1
    assert f"scores.txt:{line}: {message}" in capsys.readouterr().err
    assert not out.exists()


def test_a_score_file_s_good_labels_are_dropped_from_its_scores(tmp_path, parser):
    path = tmp_path / "scores.txt"
    path.write_text("a x 1 4.5\na y 0 -5.5\n")
    scores = read_text(path, format="3dspeaker")
    assert scores.score.values.tolist() == [[4.5, -5.5]]
    assert set(scores.data_vars) == {"score", "score_mask"}


MIXED_PAIRS = [
    # ASVspoof's three-class ASV trial lists: the spoofs were read as non-targets
    (
        "a x target\na y nontarget\nb y spoof\nb x target\n",
        3,
        "label 'spoof' is of the pair bonafide/spoof, but line 1 has 'target', of target/nontarget",
        "'bosaris-dask spoof sasv'",
    ),
    (
        "a x 1\na y target\n",
        2,
        "label 'target' is of the pair target/nontarget, but line 1 has '1', of 1/0",
        "one pair of words",
    ),
    (
        "a x Genuine\na y impostor\nb x TRUE\n",
        3,
        "label 'TRUE' is of the pair true/false, but line 1 has 'Genuine', of genuine/impostor",
        "one pair of words",
    ),
]


@pytest.mark.parametrize("block_bytes", [text.BLOCK_BYTES, 4])
@pytest.mark.parametrize(("content", "line", "message", "ending"), MIXED_PAIRS)
def test_label_words_of_two_pairs_are_refused_at_the_first_line_of_the_second(
    tmp_path, parser, content, line, message, ending, block_bytes
):
    path = tmp_path / "trials.txt"
    path.write_text(content)
    with pytest.raises(ParseError) as info:
        read_text(path, "key", block_bytes=block_bytes)
    assert (info.value.line, info.value.path) == (line, os.fspath(path))
    assert info.value.message.startswith(message)
    assert info.value.message.endswith(ending)


def test_evaluate_takes_a_score_file_as_its_own_key(tmp_path, capsys):
    rows = _trials(n=60, seed=5)
    we = _wespeaker(tmp_path, rows)
    vox = _voxceleb(tmp_path, rows)
    plain = tmp_path / "plain.txt"
    plain.write_text("".join(f"{e} {t} {s:.5f}\n" for e, t, _, s in rows))
    out_own, out_key = tmp_path / "own.json", tmp_path / "key.json"
    assert main(["evaluate", "--scores", str(we), "--json", str(out_own), "-q"]) == 0
    assert main(["evaluate", "--key", str(vox), "--scores", str(plain), "--json", str(out_key),
                 "-q"]) == 0  # fmt: skip
    own, ref = json.loads(out_own.read_text()), json.loads(out_key.read_text())
    assert own["systems"][0]["eer"] == ref["systems"][0]["eer"]
    assert own["systems"][0]["operating_points"] == ref["systems"][0]["operating_points"]
    with pytest.raises(OptionError, match="--key is needed: .*plain.txt carries no labels"):
        main(["evaluate", "--scores", str(plain), "-q", "--debug"])
    assert main(["evaluate", "--scores", str(plain), "-q"]) != 0
    assert "carries no labels" in capsys.readouterr().err
    mask = _expected(rows, we, "key")[2]
    np.testing.assert_array_equal(io.read(we, "key", text_format="wespeaker").trial_mask, mask)


def test_nist_table_with_labels_is_its_own_key_and_convert_takes_a_format(tmp_path):
    nist = tmp_path / "sys.tsv"
    nist.write_text("modelid\tsegmentid\tLLR\ttargettype\nm1\ts1\t1.5\tGenuine\nm1\ts2\t-2\timpostor\n"
                    "m2\ts1\t0.25\tImpostor\nm2\ts2\t3\tgenuine\n")  # fmt: skip
    assert text_has_labels(nist)
    out = tmp_path / "r.json"
    assert (
        main(["evaluate", "--scores", str(nist), "--prior", "0.5", "--json", str(out), "-q"]) == 0
    )
    system = json.loads(out.read_text())["systems"][0]
    assert (system["n_target"], system["n_nontarget"], system["eer"]) == (2, 2, 0.0)
    rows = _trials(n=12, seed=9)
    vox = _voxceleb(tmp_path, rows)
    store = tmp_path / "key.zarr"
    assert main(["convert", str(vox), str(store), "--format", "voxceleb", "-q"]) == 0
    np.testing.assert_array_equal(io.read(store).trial_mask.values, _expected(rows, vox, "key")[2])
    with pytest.raises(ParseError, match=r"expected 4 fields for a wespeaker file"):
        main(["convert", str(vox), str(tmp_path / "x.zarr"), "--format", "wespeaker", "--debug"])


def test_a_voxceleb_list_with_numeric_test_ids_is_read_as_a_key_or_asks(tmp_path):
    trials = tmp_path / "vox.txt"
    trials.write_text("1 spkA 1001\n0 spkA 2002\n1 spkB 2002\n")
    key = read_text(trials, "key")  # a BOSARIS key's third field is a label: VoxCeleb's layout
    assert key.model.values.tolist() == ["spkA", "spkB"]
    assert key.segment.values.tolist() == ["1001", "2002"]
    assert key.trial_mask.values.tolist() == [[1, -1], [0, 1]]
    with pytest.raises(ParseError, match="only digits: a VoxCeleb trial list with numeric") as info:
        read_text(trials)  # scores of models "0" and "1", or that key: not guessed
    assert info.value.line == 1
    scores = read_text(trials, "scores")  # asked for scores: BOSARIS's is the only reading
    assert scores.model.values.tolist() == ["1", "0"]
    assert read_text(trials, format="voxceleb").trial_mask.values.tolist() == [[1, -1], [0, 1]]


def test_a_header_may_spell_the_model_column_enrol(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("enrol test score label\na x 0.5 target\n")  # as --format's help spells it
    scores = read_text(path)
    assert scores.model.values.tolist() == ["a"] and scores.score.values.tolist() == [[0.5]]


def test_scores_of_models_named_0_and_1_are_still_bosaris_scores(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("0 a 1.5\n1 a -0.25\n0 b 3e-2\n")  # scores are not all plain digits
    scores = read_text(path)
    assert scores.model.values.tolist() == ["0", "1"]
    assert scores.score.values[0].tolist() == [1.5, 0.03]


@pytest.mark.parametrize("block_bytes", [text.BLOCK_BYTES, 64])
def test_a_gzip_file_reads_as_its_plain_twin_and_a_cut_one_is_named(tmp_path, parser,
                                                                    block_bytes):  # fmt: skip
    import gzip

    rows = _trials(n=60, seed=7)
    body = "modelid\tsegmentid\tLLR\n" + "".join(f"{e}\t{t}\t{s!r}\n" for e, t, _, s in rows)
    plain, packed = tmp_path / "s.tsv", tmp_path / "s.tsv.gz"
    plain.write_text("\ufeff" + body)  # a byte-order mark inside the compressed stream too
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    a, b = read_text(plain, block_bytes=block_bytes), read_text(packed, block_bytes=block_bytes)
    assert a.segment.values.tolist() == b.segment.values.tolist()
    np.testing.assert_array_equal(a.score.values, b.score.values)
    cut = tmp_path / "cut.gz"
    cut.write_bytes(packed.read_bytes()[:-40])
    with pytest.raises(ParseError, match=r"cut.gz: not a readable gzip file"):
        read_text(cut, block_bytes=block_bytes)


def test_a_score_beyond_float64_is_said_to_be(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("a x 0.5\nb x 1e400\n")
    with pytest.raises(ParseError, match=r"s.txt:2: score '1e400' is not finite \(beyond float64"):
        read_text(path)


@pytest.mark.parametrize("block_bytes", [text.BLOCK_BYTES, 64])
def test_a_csv_table_with_a_header_reads_as_its_tab_separated_twin(tmp_path, parser,
                                                                   block_bytes):  # fmt: skip
    # hyperion's TrialScores.save_table writes 'modelid,segmentid,LLR' for a non-.tsv name
    rows = _trials(n=50, seed=3)
    csv, tsv = tmp_path / "scores.csv", tmp_path / "scores.tsv"
    csv.write_text("modelid,segmentid,LLR\n" + "".join(f"{e},{t},{s!r}\n" for e, t, _, s in rows))
    tsv.write_text("modelid\tsegmentid\tLLR\n" + "".join(f"{e}\t{t}\t{s!r}\n"
                                                         for e, t, _, s in rows))  # fmt: skip
    a = read_text(csv, block_bytes=block_bytes)
    b = read_text(tsv, block_bytes=block_bytes)
    assert a.model.values.tolist() == b.model.values.tolist()
    np.testing.assert_array_equal(a.score.values, b.score.values)
    assert int(a.score_mask.sum()) == 50


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("m1,s1,0.5\nm1,s2,0.25\n", r"one field, 'm1,s1,0.5': comma-separated values\? without "),
        ("a.wav*b.wav 0.25 1\nc.wav*b.wav -0.5 0\n", r"an ESPnet trial score file \(enrol\*test "
                                                     r"score label\)\? 'a.wav\*b.wav' would be"),
        ("utt1  [ 0.5 -1.25 3 ]\nutt2  [ 1 2 3 ]\n", r"'id \[ v1 v2 ... \]': a Kaldi text "
                                                     r"archive of vectors"),
        # ASVspoof 5 CM files: read as trial lists, their labels and scores became segments
        ("filename cm-label\nE1 bonafide\nE2 spoof\n", r"two fields, the second a label word "
                                                       r"\('bonafide'\): an id-label list"),
        ("filename\tcm-score\nE1\t1.375\nE2\t-2e-3\n", r"two fields, the second a score "
                                                       r"\('1.375'\): an id-score file"),
        # Kaldi's compute-eer input, VoxSRC's column order, a VoxCeleb list with scores pasted
        # on (it was read as 3D-Speaker's layout: "label 'id10300/b.wav' is not one of ...")
        ("-0.35 target\n0.2 nontarget\n", r"two fields, a score and a label \('-0.35' "
                                          r"'target'\): Kaldi's compute-eer input\?"),
        ("0.73 e/a.wav t/b.wav\n-0.2 e/a.wav t/c.wav\n", r"VoxSRC's 'score enrol test' order\? "
                                                        r"reorder the columns"),
        ("1 e/a.wav t/b.wav 0.73\n0 e/a.wav t/c.wav -0.2\n", r"field 1 is a label and field 4 "
                                                            r"a score: a VoxCeleb trial list"),
        ("a b 0.5 foo\n", r"4 fields, and field 4 'foo' is not a label word"),
        # a model JSON given as scores (info model.json said "trials: 1": '{"a":' '1}' an ndx)
        ('{"kind": "linear", "scale": 1.5}\n', r"a JSON document \(a model that calibrate or "),
        ('{\n  "kind": "linear"\n}\n', r"a JSON document"),
    ],
)  # fmt: skip
def test_other_tools_headerless_layouts_are_named_not_misread(tmp_path, content, message):
    path = tmp_path / "scores"
    path.write_text(content)
    with pytest.raises(ParseError, match=message) as info:
        read_text(path)
    assert info.value.line == 1


@pytest.mark.parametrize("end", ["", "\n"])
def test_a_short_file_s_last_line_counts_without_its_newline(tmp_path, end):
    # the layout's sniffing dropped a last line without "\n": the first line alone looked like
    # an id-score file (found by tests/test_fuzz_readers.py)
    path = tmp_path / "trials"
    path.write_text("1 0.0\nm1 m" + end)
    ndx = read_text(path)
    assert ndx.model.values.tolist() == ["1", "m1"] and int(ndx.trial_mask.sum()) == 2
    path.write_text("filename cm-score\nE1 1.375\nE2 -2e-3" + end)
    with pytest.raises(ParseError, match="an id-score file"):
        read_text(path)


@pytest.mark.parametrize("segments", [["0.5", "1.5"], ["same", "different"]])
def test_an_ndx_the_writer_made_of_score_or_label_like_segments_reads_back_as_an_ndx(
    tmp_path, segments
):
    # convert wrote such a headerless ndx, and no reader took it back, --kind ndx or not
    path = tmp_path / "trials.txt"
    io.write(make_ndx(["m1", "m2"], segments, [[True, False], [False, True]]), path)
    with pytest.raises(ParseError, match=r"\(an ndx of such segment ids: give the kind"):
        read_text(path)
    ndx = read_text(path, "ndx")
    assert ndx.segment.values.tolist() == segments
    assert ndx.trial_mask.values.tolist() == [[1, 0], [0, 1]]


def test_a_trial_list_of_numeric_segment_ids_is_still_a_trial_list(tmp_path):
    path = tmp_path / "trials"
    path.write_text("m1 1234\nm1 77\nm2 1234\n")  # (IJB-style numeric template ids)
    ndx = read_text(path)
    assert ndx.segment.values.tolist() == ["1234", "77"] and int(ndx.trial_mask.sum()) == 3


def test_key_format_reads_a_key_of_another_layout_than_the_scores(tmp_path):
    rows = _trials(n=30, seed=4)
    vox = _voxceleb(tmp_path, rows)
    three_d = tmp_path / "scores.3d"  # 3D-Speaker's 'enrol test label score'
    three_d.write_text("".join(f"{e} {t} {int(tar)} {s:.5f}\n" for e, t, tar, s in rows))
    plain = tmp_path / "plain.txt"
    plain.write_text("".join(f"{e} {t} {s:.5f}\n" for e, t, _, s in rows))
    base = ["evaluate", "--key", str(vox), "--prior", "0.1", "-q", "--debug", "--json"]
    with pytest.raises(ParseError, match=r"veri_test2.txt:1: expected 4 fields for a 3dspeaker"):
        main([*base, str(tmp_path / "x.json"), "--scores", str(three_d), "--format", "3dspeaker"])
    given, reference = tmp_path / "given.json", tmp_path / "reference.json"
    assert main([*base, str(given), "--scores", str(three_d), "--format", "3dspeaker",
                 "--key-format", "voxceleb"]) == 0  # fmt: skip
    assert main([*base, str(reference), "--scores", str(plain)]) == 0
    got, want = json.loads(given.read_text()), json.loads(reference.read_text())
    for field in ("n_target", "n_nontarget", "eer", "cllr", "operating_points"):
        assert got["systems"][0][field] == want["systems"][0][field]
    assert got["systems"][0]["n_target"] == sum(tar for _, _, tar, _ in rows)


def test_a_kaldi_sre08_trial_key_with_condition_columns_says_what_it_is(tmp_path):
    path = tmp_path / "short2-short3-female.trials"  # model segment label, then det1..det8
    path.write_text(
        "10027 thagc_B nontarget N N Y N N N N N\n10027 tbbad_A target Y Y Y N N N N N\n"
    )
    with pytest.raises(ParseError, match=r"trials:1: expected 3 fields for key, found 11 \(a NIST "
                       r"SRE08 trial key with Y/N condition columns.*cut -d' ' -f1-3"):  # fmt: skip
        read_text(path, "key")


def test_calibrate_fuse_and_apply_take_format_and_key_format(tmp_path):
    # only evaluate and plot took --format: a fit or an application of files whose layout had
    # to be named could not be run
    rows = _trials(n=30, seed=5)
    vox = _voxceleb(tmp_path, rows)
    three_d = tmp_path / "scores.3d"
    three_d.write_text("".join(f"{e} {t} {int(tar)} {s:.5f}\n" for e, t, tar, s in rows))
    plain = tmp_path / "plain.txt"
    plain.write_text("".join(f"{e} {t} {s:.5f}\n" for e, t, _, s in rows))
    forced = ["--format", "3dspeaker", "--key-format", "voxceleb"]
    with pytest.raises(ParseError, match=r"veri_test2.txt:1: expected 4 fields for a 3dspeaker"):
        main(["calibrate", "--key", str(vox), "--scores", str(three_d), "--format", "3dspeaker",
              "--model-out", str(tmp_path / "x.json"), "-q", "--debug"])  # fmt: skip
    for command, scores in (("calibrate", ["--scores"]), ("fuse", ["--scores"])):
        models = []
        for name, files, extra in (("given", three_d, forced), ("detected", plain, [])):
            out = tmp_path / f"{command}-{name}.json"
            assert main([command, "--key", str(vox), *scores, str(files), *extra, "--model-out",
                         str(out), "-q"]) == 0  # fmt: skip
            models.append(json.loads(out.read_text()))
        assert models[0]["weights"] == models[1]["weights"]
        assert models[0]["offset"] == models[1]["offset"]
    outs = []
    for name, files, extra in (("given", three_d, forced), ("detected", plain, [])):
        out = tmp_path / f"applied-{name}.txt"
        model = tmp_path / "calibrate-detected.json"
        assert main(["apply", "--model", str(model), "--scores", str(files), "--ndx", str(vox),
                     *extra, "--out", str(out), "-q"]) == 0  # fmt: skip
        outs.append(out.read_text())
    assert outs[0] == outs[1] and len(outs[0].splitlines()) == len(rows)


def test_info_takes_the_format_its_error_asks_for(tmp_path, capsys):
    path = tmp_path / "ambiguous.score"  # labels 1/0 and scores 1/0: the layout must be given
    path.write_text("a b 1 0\na c 0 1\n")
    assert main(["info", str(path)]) == 1
    assert "give the format (wespeaker" in capsys.readouterr().err
    assert main(["info", "--format", "wespeaker", str(path)]) == 0
    assert "trials:      2\n" in capsys.readouterr().out
    args = ["info", "--format", "wespeaker", str(path), "--key", str(path)]
    assert main([*args, "--key-format", "3dspeaker"]) == 0  # the key: labels in field 3
    assert "key trials:  2 in" in capsys.readouterr().out
    assert main(["info", "--kind", "key", "--format", "3dspeaker", str(path)]) == 0
    assert "(1 targets, 1 non-targets)" in capsys.readouterr().out


@pytest.mark.parametrize("model", ["{", "["])
def test_a_trial_of_a_model_named_like_a_bracket_is_no_json_document(tmp_path, model):
    # the first line '{ 0 1.5' was refused as "a JSON document" (found by hypothesis)
    path = tmp_path / "rt.txt"
    io.write(make_scores([model], ["0"], [[1.5]]), path)
    assert read_text(path).model.values.tolist() == [model]
    path.write_text('{\n  "kind": "linear"\n}\n')  # a pretty-printed model: still said
    with pytest.raises(ParseError, match="a JSON document"):
        read_text(path)
