"""Sparse text trial lists evaluated packed (:mod:`bosaris_dask.io.text.packed`): the same
numbers as the dense models x segments objects, the same errors, a fraction of the memory."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask import io
from bosaris_dask.cli import main
from bosaris_dask.errors import MissingTrialsError, OptionError, ParseError
from bosaris_dask.io.text import packed
from bosaris_dask.io.text.collect import stable_order
from bosaris_dask.io.text.packed import TrialList, is_sparse, on_grid, pack

from . import reference as ref


@pytest.fixture
def always_pack(monkeypatch):
    """Pack every list, however small its grid."""
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 0)
    monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)


@pytest.fixture
def never_pack(monkeypatch):
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 1 << 62)


def _lists(tmp_path, n=300, seed=0, shuffle=True):
    """A VoxCeleb-like list (ids of their own, some shared), its scores in another order,
    plus scores of trials the key does not hold; and the per-trial truth."""
    rng = np.random.default_rng(seed)
    enrol = rng.integers(0, n // 2, n)
    test = rng.integers(0, n, n)
    pairs = list(dict.fromkeys(zip(enrol.tolist(), test.tolist(), strict=True)))
    labels = rng.random(len(pairs)) < 0.3
    scores = rng.normal(size=len(pairs)).round(3) + 2.0 * labels  # ties too
    word = {True: "target", False: "nontarget"}
    key_lines = [f"e{a} t{b} {word[bool(t)]}\n" for (a, b), t in zip(pairs, labels, strict=True)]
    score_lines = [f"e{a} t{b} {float(s)!r}\n" for (a, b), s in zip(pairs, scores, strict=True)]
    score_lines += ["x1 t1 5.0\n", "e0 y9 -7.0\n"]  # not key trials: ignored
    order = rng.permutation(len(score_lines)) if shuffle else np.arange(len(score_lines))
    (tmp_path / "trials").write_text("".join(key_lines))
    (tmp_path / "scores").write_text("".join(score_lines[i] for i in order))
    return scores[labels], scores[~labels]


def _evaluate_json(tmp_path, name, *extra, quiet=True):
    out = tmp_path / f"{name}.json"
    argv = ["evaluate", "--key", str(tmp_path / "trials"), "--scores", str(tmp_path / "scores"),
            "--prior", "0.5", "--prior", "0.01", "--fmr", "0.1", "--exact-auc", "--json", str(out),
            *(["-q"] if quiet else []), *extra]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    doc.pop("passes")
    return doc


def _grid_and_packed(tmp_path, monkeypatch, capsys, *argv):
    """``_evaluate_json`` through the ids' grid, then packed (checked to be)."""
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 1 << 62)
    dense = _evaluate_json(tmp_path, "dense", *argv)
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 0)
    monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
    got = _evaluate_json(tmp_path, "packed", *argv, quiet=False)
    assert "read as packed trial lists" in capsys.readouterr().err
    return dense, got


def test_packed_lists_give_the_dense_numbers(tmp_path, monkeypatch):
    tar, non = _lists(tmp_path)
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 1 << 62)
    dense = _evaluate_json(tmp_path, "dense")
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 0)
    monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
    got = _evaluate_json(tmp_path, "packed")
    assert got == dense  # every metric, bit for bit
    (system,) = got["systems"]
    assert (system["n_target"], system["n_nontarget"]) == (tar.size, non.size)
    assert system["eer"] == pytest.approx(ref.eer(tar, non), rel=1e-12)
    assert system["cllr"] == pytest.approx(ref.cllr(tar, non), rel=1e-12)


def test_a_key_trial_without_a_score_is_named_or_left_out(tmp_path, always_pack, capsys):
    _lists(tmp_path, shuffle=False)
    lines = (tmp_path / "scores").read_text().splitlines(keepends=True)
    (tmp_path / "scores").write_text("".join(lines[2:]))  # the first two key trials
    first = (tmp_path / "trials").read_text().split("\n")[0].split()[:2]
    assert main(["evaluate", "--key", str(tmp_path / "trials"), "--scores",
                 str(tmp_path / "scores"), "-q"]) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert f"scores: 2 key trials have no score, e.g. ({first[0]}, {first[1]})" in err
    assert "(--allow-missing drops them)" in err
    doc = _evaluate_json(tmp_path, "r", "--allow-missing")
    assert doc["systems"][0]["n_missing"] == 2


def test_trials_given_twice_are_refused_at_their_line(tmp_path):
    (tmp_path / "k").write_text("a x target\nb y nontarget\nc z nontarget\nb y target\n")
    with pytest.raises(ParseError, match=r"k:4: trial \('b', 'y'\) is given twice, first on "
                       r"line 2"):  # fmt: skip
        TrialList.read(tmp_path / "k", "key").refuse_duplicates()
    (tmp_path / "k").write_text("a x target\nb y nontarget\n")
    (tmp_path / "s").write_text("a x 1.0\n\nb y 2.0\na x 3.0\n")  # a blank line: lines, not records
    with pytest.raises(ParseError, match=r"s:4: trial \('a', 'x'\) is given twice, first on "
                       r"line 1"):  # fmt: skip
        pack(TrialList.read(tmp_path / "k", "key"), [TrialList.read(tmp_path / "s", "scores")])


def test_pack_lays_out_the_key_order_and_leaves_padding_out():
    # 5 trials, 2 per row: rows 0-1, 2-3, 4 (+ one padding cell, no trial)
    def ids(*names):
        return np.array(names, dtype=object)

    key = TrialList("k", ids("a", "b"), ids("x", "y", "z"), np.array([0, 0, 1, 1, 0]),
                    np.array([0, 1, 1, 2, 2]), np.array([1, -1, -1, 1, -1], dtype=np.int8),
                    lambda r: r + 1)  # fmt: skip
    sys_ = TrialList("s", ids("b", "a"), ids("z", "y", "x"), np.array([0, 1, 1, 0, 1]),
                     np.array([0, 1, 2, 1, 0]), np.array([0.4, 0.1, 0.0, 0.3, 0.2]),
                     lambda r: r + 1)  # fmt: skip
    k, (s,) = pack(key, [sys_], width=2)
    assert k.trial_mask.values.tolist() == [[1, -1], [-1, 1], [-1, 0]]
    # (a,x)=0.0 (a,y)=0.1 (b,y)=0.3 (b,z)=0.4 (a,z)=0.2
    assert s.score.values.tolist() == [[0.0, 0.1], [0.3, 0.4], [0.2, 0.0]]
    assert s.score_mask.values.tolist() == [[True, True], [True, True], [True, False]]
    with pytest.raises(MissingTrialsError, match=r"s: 1 key trial has no score, e.g. \(a, z\)"):
        pack(key, [TrialList("s", sys_.models, sys_.segments, sys_.model_codes[:4],
                             sys_.segment_codes[:4], sys_.values[:4], sys_.line_of)])  # fmt: skip


def _trial_list(pairs, values):
    """A TrialList of ``(model, segment)`` pairs, its ids in first-appearance order."""
    models = list(dict.fromkeys(m for m, _ in pairs))
    segments = list(dict.fromkeys(s for _, s in pairs))
    return TrialList(
        "t", np.array(models, dtype=object), np.array(segments, dtype=object),
        np.array([models.index(m) for m, _ in pairs], dtype=np.int64),
        np.array([segments.index(s) for _, s in pairs], dtype=np.int64),
        np.asarray(values, dtype=np.float64), lambda r: r + 1,
    )  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_joined_matches_each_trial_by_its_ids_in_any_order(data):
    ids = st.sampled_from(["a", "b", "c", "d"])
    cells = data.draw(st.lists(st.tuples(ids, ids), min_size=1, max_size=12, unique=True))
    theirs = data.draw(st.lists(st.tuples(ids, ids), max_size=12, unique=True))
    if data.draw(st.booleans()):  # the other file lists the same trials, in the same order
        theirs = list(cells)  # (so its ids too come in the same order)
    values = [float(i) + 0.5 for i in range(len(theirs))]
    system = _trial_list(theirs, values)
    score, given_ = packed.joined(_trial_list(cells, np.ones(len(cells))), system)
    by_pair = dict(zip(theirs, values, strict=True))
    assert given_.tolist() == [c in by_pair for c in cells]
    assert score.tolist() == [by_pair.get(c, 0.0) for c in cells]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(0, 2**62),  # and keys about the largest that can be packed
                  st.sampled_from([2**b - d for b in range(54, 63) for d in (0, 1, 2)])),
        max_size=40,
    ),
    st.integers(0, 5),
)  # fmt: skip
def test_stable_order_is_the_stable_argsort(keys, few):
    for k in (np.array(keys, dtype=np.int64), np.array(keys, dtype=np.int64) % (few + 1)):
        assert stable_order(k).tolist() == np.argsort(k, kind="stable").tolist()


def test_sparse_means_a_large_mostly_empty_grid():
    assert is_sparse(145_160, 145_160, 579_818)  # VoxCeleb1-E
    assert not is_sparse(4_708, 4_708, 37_611)  # VoxCeleb1-O: 2.2e7 cells, a small grid
    assert not is_sparse(31_623, 31_623, 10**9)  # dense


def test_own_key_score_files_plots_and_several_systems_pack(tmp_path, always_pack, capsys):
    rng = np.random.default_rng(4)
    lines_a, lines_b = [], []
    for i in range(200):
        label = "target" if i % 4 == 0 else "nontarget"
        lines_a.append(f"u{i} v{i} {rng.normal(2.0 if i % 4 == 0 else 0.0)!r} {label}\n")
        lines_b.append(f"u{i} v{i} {rng.normal(1.0 if i % 4 == 0 else 0.0)!r}\n")
    (tmp_path / "a.score").write_text("".join(lines_a))
    (tmp_path / "b.score").write_text("".join(reversed(lines_b)))
    argv = ["evaluate", "--scores", str(tmp_path / "a.score"), "--scores",
            str(tmp_path / "b.score"), "--json", str(tmp_path / "r.json")]  # fmt: skip
    assert main(argv) == 0
    assert "200 trials over 200 x 200 ids: read as packed" in capsys.readouterr().err
    systems = json.loads((tmp_path / "r.json").read_text())["systems"]
    assert [s["name"] for s in systems] == ["a", "b"]
    for s, lines in zip(systems, (lines_a, lines_b), strict=True):
        values = {tuple(x.split()[:2]): float(x.split()[2]) for x in lines}
        tar = np.array([values[(f"u{i}", f"v{i}")] for i in range(0, 200, 4)])
        non = np.array([values[(f"u{i}", f"v{i}")] for i in range(200) if i % 4])
        assert s["eer"] == pytest.approx(ref.eer(tar, non), rel=1e-12)
    out = tmp_path / "det.png"
    assert main(["plot", "det", "--scores", str(tmp_path / "a.score"), "--out", str(out),
                 "-q"]) == 0  # fmt: skip
    assert out.read_bytes()[:4] == b"\x89PNG"
    a = str(tmp_path / "a.score")  # dev and eval sets: both packed
    assert main(["plot", "nbe", "--scores", a, "--eval-key", a, "--eval-scores", a, "--out",
                 str(tmp_path / "nbe.png")]) == 0  # fmt: skip
    assert capsys.readouterr().err.count("read as packed trial lists") == 2


def _condition_tables(tmp_path):
    """Model and segment tables over the ids of ``_lists``' files (a few more ids than the key
    has), with a column on each side and one both share."""
    lines = (tmp_path / "trials").read_text().splitlines()
    models = sorted({line.split()[0] for line in lines} | {"e-extra"})
    segments = sorted({line.split()[1] for line in lines})
    (tmp_path / "m.tsv").write_text("model\tg\tlang\n" + "".join(
        f"{m}\t{len(m) % 2}\t{'ab'[sum(map(ord, m)) % 2]}\n" for m in models))  # fmt: skip
    (tmp_path / "s.tsv").write_text("segment\tlang\tsrc\n" + "".join(
        f"{t}\t{'abc'[int(t[1:]) % 3]}\t{'xy'[int(t[1:]) % 2]}\n" for t in segments))  # fmt: skip
    return {m: (str(len(m) % 2), "ab"[sum(map(ord, m)) % 2]) for m in models}, {
        t: ("abc"[int(t[1:]) % 3], "xy"[int(t[1:]) % 2]) for t in segments
    }


def test_conditions_of_packed_lists_are_the_grids(tmp_path, monkeypatch, capsys):
    # each trial's condition comes from its own ids, not from its packed row and column
    _lists(tmp_path, n=400)
    model_of, segment_of = _condition_tables(tmp_path)
    by = ["--conditions", str(tmp_path / "m.tsv"), "--conditions", str(tmp_path / "s.tsv"),
          "--by", "model.g", "--by", "same.lang", "--by", "segment.src", "--equalize",
          "--cprimary-priors", "0.01", "--cprimary-priors", "0.05"]  # fmt: skip
    dense, got = _grid_and_packed(tmp_path, monkeypatch, capsys, *by)
    assert got == dense  # pooled, per condition, equalized, Cprimary: bit for bit
    # each condition against a brute force over its own trials
    labels = [line.split() for line in (tmp_path / "trials").read_text().splitlines()]
    scores = {tuple(line.split()[:2]): float(line.split()[2])
              for line in (tmp_path / "scores").read_text().splitlines()}  # fmt: skip
    conditions = got["systems"][0]["conditions"]
    assert len(conditions) == 8
    for entry in conditions:
        want = entry["by"]
        tar, non = [], []
        for m, t, word in labels:
            g, mlang = model_of[m]
            slang, src = segment_of[t]
            same = "same" if mlang == slang else "different"
            if (g, same, src) == (want["model.g"], want["same.lang"], want["segment.src"]):
                (tar if word == "target" else non).append(scores[m, t])
        assert (entry["n_target"], entry["n_nontarget"]) == (len(tar), len(non))
        if tar and non:
            assert entry["eer"] == pytest.approx(ref.eer(np.array(tar), np.array(non)), rel=1e-12)


def test_the_bootstrap_packs_too(tmp_path, always_pack, capsys):
    # each trial's groups come from its own ids (tests/test_bootstrap_packed.py: the grid's
    # intervals, bit for bit)
    _lists(tmp_path, n=60)
    _condition_tables(tmp_path)
    assert main(["evaluate", "--key", str(tmp_path / "trials"), "--scores",
                 str(tmp_path / "scores"), "--bootstrap", "20", "--resample", "model.g",
                 "--conditions", str(tmp_path / "m.tsv")]) == 0  # fmt: skip
    assert "read as packed" in capsys.readouterr().err


def test_apply_of_a_sparse_list_says_it_is_read_packed(tmp_path, monkeypatch, capsys):
    # evaluate, plot, calibrate and fuse said so; apply (in the list's line order) did not
    _lists(tmp_path)
    scores = str(tmp_path / "scores")
    assert main(["calibrate", "--key", str(tmp_path / "trials"), "--scores", scores,
                 "--model-out", str(tmp_path / "cal.json"), "-q"]) == 0  # fmt: skip
    argv = ["apply", "--model", str(tmp_path / "cal.json"), "--scores", scores, "--out"]
    for cells, said in ((1 << 62, False), (0, True)):  # a dense list, then a sparse one
        monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", cells)
        monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
        assert main([*argv, str(tmp_path / "out.txt")]) == 0
        assert ("scores: 302 trials over" in capsys.readouterr().err) == said


@pytest.mark.parametrize("command", ["calibrate", "fuse"])
def test_a_fit_on_packed_lists_is_the_fit_on_the_grid(tmp_path, monkeypatch, command, capsys):
    _lists(tmp_path)
    argv = [command, "--key", str(tmp_path / "trials"), "--scores", str(tmp_path / "scores")]
    models = {}
    for name, cells in (("dense", 1 << 62), ("packed", 0)):
        monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", cells)
        monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
        out = tmp_path / f"{name}.json"
        assert main([*argv, "--model-out", str(out)]) == 0
        models[name] = json.loads(out.read_text())
    assert "read as packed" in capsys.readouterr().err
    # the same trials: the same counts, and the optimum to float rounding (the sums of the
    # objective run over other chunks, in another order)
    dense, got = models["dense"], models["packed"]
    for name in ("weights", "offset", "objective"):
        np.testing.assert_allclose(got[name], dense[name], rtol=1e-12)
        dense.pop(name), got.pop(name)
    assert got == dense


def test_errors_come_as_when_the_lists_are_read_whole(tmp_path, always_pack, capsys):
    _lists(tmp_path, n=80)
    key = tmp_path / "trials"
    first = key.read_text().splitlines()[0]
    key.write_text(key.read_text() + first + "\n")  # a duplicate key trial, at the end
    bad = tmp_path / "bad"
    bad.write_text("a b c d e f\n")
    n = len(key.read_text().splitlines())
    # the key's duplicate before another file's parse error
    assert main(["evaluate", "--key", str(key), "--scores", str(bad), "-q"]) == 1
    assert f"trials:{n}: trial " in capsys.readouterr().err
    key.write_text("".join(key.read_text().splitlines(keepends=True)[:-1]))
    # no scores, or a score file that does not exist: the messages of the grid's readers
    for argv, said in (
        (["--key", str(key)], "no scores: give --scores, or --enrol and --test"),
        (["--key", str(key), "--scores", str(tmp_path / "none")], "none: no such file or store"),
    ):
        assert main(["evaluate", *argv, "-q"]) == 1
        assert said in capsys.readouterr().err, argv


def test_a_score_file_beyond_its_keys_ids_goes_on_the_keys_grid(tmp_path, monkeypatch, capsys):
    # a small key, and a score file that also holds 3,000 trials of other ids: the scores
    # are put on the key's grid (not on a grid of all their ids), with the same numbers
    rng = np.random.default_rng(9)
    key_lines, score_lines, tar, non = [], [], [], []
    for i in range(40):
        for j in range(30):
            target = i % 10 == j % 10
            value = round(float(rng.normal(2.0 if target else 0.0)), 2)
            key_lines.append(f"m{i} s{j} {'target' if target else 'nontarget'}\n")
            score_lines.append(f"m{i} s{j} {value!r}\n")
            (tar if target else non).append(value)
    score_lines += [f"x{k} y{k} 1.0\n" for k in range(3_000)]
    (tmp_path / "trials").write_text("".join(key_lines))
    (tmp_path / "scores").write_text("".join(reversed(score_lines)))
    put = []
    monkeypatch.setattr(packed, "on_grid", lambda *a: put.append(1) or on_grid(*a))
    doc = _evaluate_json(tmp_path, "r")
    assert put == [1]
    (system,) = doc["systems"]
    assert (system["n_target"], system["n_nontarget"]) == (len(tar), len(non))
    assert system["eer"] == pytest.approx(ref.eer(np.array(tar), np.array(non)), rel=1e-12)
    monkeypatch.setattr(packed, "ON_GRID_MAX_CELLS", 0)  # the scores' own grid: the same
    assert _evaluate_json(tmp_path, "dense") == doc


def _embeddings(tmp_path, n=60, d=8, seed=2):
    """An embedding file of ``n`` ids (``u0`` ...) from ``n // 4`` speakers, and a key list of
    pairs of them (VoxCeleb-like: labels first), returned with the ids' speakers."""
    rng = np.random.default_rng(seed)
    speaker = rng.integers(0, n // 4, n)
    emb = rng.normal(size=(n // 4, d))[speaker] + rng.normal(size=(n, d))
    ids = np.array([f"u{i}" for i in range(n)])
    np.savez(tmp_path / "emb.npz", ids=ids, embeddings=emb.astype(np.float32))
    pairs = {(int(a), int(b)) for a, b in rng.integers(0, n, (4 * n, 2)) if a != b}
    lines = [f"{int(speaker[a] == speaker[b])} u{a} u{b}\n" for a, b in sorted(pairs)]
    (tmp_path / "trials").write_text("".join(lines))
    return ids, emb.astype(np.float32)


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--backend", "dot"],
        ["--center", "EMB"],
        ["--norm", "as", "--cohort", "COHORT", "--top-n", "5"],
    ],
)
def test_scores_from_embeddings_of_a_sparse_key_pair_by_pair(tmp_path, monkeypatch, options,
                                                            capsys):  # fmt: skip
    ids, emb = _embeddings(tmp_path)
    cohort = np.random.default_rng(9).normal(size=(40, 8)).astype(np.float32)
    np.savez(tmp_path / "cohort.npz", ids=np.array([f"c{i}" for i in range(40)]), embeddings=cohort)
    named = {"EMB": str(tmp_path / "emb.npz"), "COHORT": str(tmp_path / "cohort.npz")}
    options = [named.get(o, o) for o in options]
    argv = ["--enrol", str(tmp_path / "emb.npz"), "--test", str(tmp_path / "emb.npz"),
            "--exact-auc", *options]  # fmt: skip
    (tmp_path / "scores").write_text(  # a second system: a score file of the same trials
        "".join(
            f"{line.split()[1]} {line.split()[2]} {i % 7 * 0.5}\n"
            for i, line in enumerate((tmp_path / "trials").read_text().splitlines())
        )
    )
    dense, got = _grid_and_packed(tmp_path, monkeypatch, capsys, *argv)
    assert got == dense  # both systems, every metric (the exact AUC too), bit for bit
    if "--norm" in options:
        return  # (its brute force: test_embeddings_cohort; the layouts agree above)
    # the embeddings' system against a float64 brute force of its EER
    v = emb.astype(np.float64)
    if "--center" in options:
        v = v - v.mean(axis=0)
    if "dot" not in options:
        v = v / np.linalg.norm(v, axis=1, keepdims=True)
    tar, non = [], []
    for line in (tmp_path / "trials").read_text().splitlines():
        label, a, b = line.split()
        (tar if label == "1" else non).append(float(np.float32(v[int(a[1:])] @ v[int(b[1:])])))
    system = got["systems"][1]
    assert (system["n_target"], system["n_nontarget"]) == (len(tar), len(non))
    assert system["eer"] == pytest.approx(ref.eer(np.array(tar), np.array(non)), rel=1e-12)


def test_trial_scores_are_the_matrix_scores_bit_for_bit():
    from bosaris_dask.embeddings import from_arrays, scores_from_embeddings, trial_scores

    rng = np.random.default_rng(5)
    e = from_arrays([f"m{i}" for i in range(40)], rng.normal(size=(40, 16)) * 3)
    t = from_arrays([f"t{i}" for i in range(50)], rng.normal(size=(50, 16)))
    c = from_arrays([f"c{i}" for i in range(30)], rng.normal(size=(30, 16)))
    rows, cols = rng.integers(0, 40, 500), rng.integers(0, 50, 500)
    cases = [{"backend": b} for b in ("cosine", "dot")]
    cases += [{"norm": n, "cohort": c} for n in ("z", "t", "s")]
    cases += [{"norm": "as", "cohort": c, "top_n": 7}, {"backend": "dot", "norm": "s", "cohort": c}]
    for options in cases:
        matrix = scores_from_embeddings(e, t, chunks=(7, 9), **options).score.values
        got = trial_scores(e, t, e.id.values, t.id.values, rows, cols, **options)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got.view(np.uint32), matrix[rows, cols].view(np.uint32))


def test_a_key_id_without_an_embedding_is_named_as_on_the_grid(tmp_path, monkeypatch, capsys):
    _embeddings(tmp_path)
    with open(tmp_path / "trials", "a") as f:
        f.write("0 u1 nobody\n")
    argv = ["evaluate", "--key", str(tmp_path / "trials"), "--enrol", str(tmp_path / "emb.npz"),
            "--test", str(tmp_path / "emb.npz"), "-q"]  # fmt: skip
    errors = []
    for cells in (1 << 62, 0):
        monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", cells)
        monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
        assert main(argv) != 0
        errors.append(capsys.readouterr().err)
    assert errors[0] == errors[1] and "nobody" in errors[0]


def test_score_writes_a_text_list_in_its_order_with_the_matrix_values(tmp_path, capsys):
    _embeddings(tmp_path)
    lines = (tmp_path / "trials").read_text().splitlines()
    rng = np.random.default_rng(0)
    rng.shuffle(lines)  # a list in no id order
    (tmp_path / "trials").write_text("".join(f"{line}\n" for line in lines))
    argv = ["score", "--key", str(tmp_path / "trials"), "--enrol", str(tmp_path / "emb.npz"),
            "--test", str(tmp_path / "emb.npz")]  # fmt: skip
    assert main([*argv, "--out", str(tmp_path / "s.txt")]) == 0
    assert "in its order" in capsys.readouterr().err
    out = (tmp_path / "s.txt").read_text().splitlines()
    assert [line.split()[:2] for line in out] == [line.split()[1:] for line in lines]
    assert main([*argv, "--out", str(tmp_path / "s.zarr"), "-q"]) == 0  # the matrix's blocks
    assert main(["convert", str(tmp_path / "s.zarr"), str(tmp_path / "grid.txt"), "-q"]) == 0
    grid = (tmp_path / "grid.txt").read_text().splitlines()
    assert out != grid and sorted(out) == sorted(grid)


def test_apply_to_scores_from_embeddings_of_a_text_list_keeps_its_order(tmp_path, capsys):
    _embeddings(tmp_path)
    emb = ["--enrol", str(tmp_path / "emb.npz"), "--test", str(tmp_path / "emb.npz")]
    assert main(["calibrate", "--key", str(tmp_path / "trials"), *emb, "--model-out",
                 str(tmp_path / "cal.json"), "-q"]) == 0  # fmt: skip
    lines = (tmp_path / "trials").read_text().splitlines()[::-1]  # another order than the ids'
    (tmp_path / "trials.ndx").write_text("".join(f"{x.split()[1]} {x.split()[2]}\n"
                                                 for x in lines))  # fmt: skip
    argv = ["apply", "--model", str(tmp_path / "cal.json"), *emb, "--ndx",
            str(tmp_path / "trials.ndx")]  # fmt: skip
    assert main([*argv, "--out", str(tmp_path / "cal.txt"), "-q"]) == 0
    out = (tmp_path / "cal.txt").read_text().splitlines()
    assert [x.split()[:2] for x in out] == [x.split()[1:] for x in lines]
    assert main([*argv, "--out", str(tmp_path / "cal.zarr"), "-q"]) == 0  # through the grid
    assert main(["convert", str(tmp_path / "cal.zarr"), str(tmp_path / "grid.txt"), "-q"]) == 0
    grid = (tmp_path / "grid.txt").read_text().splitlines()
    assert out != grid and sorted(out) == sorted(grid)


def test_a_sparse_list_read_as_the_grid_says_so(tmp_path, always_pack, caplog):
    import logging

    from bosaris_dask import io

    _lists(tmp_path, n=40)
    with caplog.at_level(logging.INFO, logger="bosaris_dask.io"):
        io.read(tmp_path / "trials", "key")
    (note,) = [r.getMessage() for r in caplog.records]
    assert "read as the ids' grid" in note and note.startswith(f"{tmp_path / 'trials'}: ")


@pytest.mark.parametrize("cells", [0, 1 << 62])  # packed, then the grid
def test_an_eval_set_given_by_files_does_not_take_the_dev_embeddings(tmp_path, monkeypatch,
                                                                     cells):  # fmt: skip
    from bosaris_dask import plots

    _embeddings(tmp_path)
    (tmp_path / "other").write_text("".join(  # the eval system: a score file of the trials
        f"{x.split()[1]} {x.split()[2]} 0.5\n"
        for x in (tmp_path / "trials").read_text().splitlines()))  # fmt: skip
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", cells)
    monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
    drawn = {}
    monkeypatch.setattr(plots, "save_plot", lambda results, *a, **k: drawn.update(results))
    assert main(["plot", "det", "--key", str(tmp_path / "trials"), "--enrol",
                 str(tmp_path / "emb.npz"), "--test", str(tmp_path / "emb.npz"), "--eval-key",
                 str(tmp_path / "trials"), "--eval-scores", str(tmp_path / "other"), "--out",
                 str(tmp_path / "det.png"), "-q"]) == 0  # fmt: skip
    assert [list(drawn[s].system.values) for s in ("dev", "eval")] == [["emb"], ["other"]]


def test_score_of_a_list_checks_and_names_as_the_matrix_does(tmp_path, capsys):
    _embeddings(tmp_path)
    (tmp_path / "trials.ndx").write_text("u1 u2\nnobody u3\n")
    argv = ["score", "--ndx", str(tmp_path / "trials.ndx"), "--enrol", str(tmp_path / "emb.npz"),
            "--test", str(tmp_path / "emb.npz")]  # fmt: skip
    errors = []
    for out in ("s.txt", "s.zarr"):  # pair by pair, then the matrix
        for extra in ([], ["--device", "bogus"]):
            assert main([*argv, *extra, "--out", str(tmp_path / out)]) != 0
            errors.append(capsys.readouterr().err.strip().splitlines()[-1])
    assert errors[:2] == errors[2:]
    assert "trial list model id 'nobody' has no embedding" in errors[0]
    assert "bogus" in errors[1]


@pytest.mark.parametrize("norm", ["s", "as"])
def test_one_embedding_set_on_both_sides_gets_each_ids_statistics_once(norm, monkeypatch):
    from bosaris_dask.embeddings import cohort as cohort_module
    from bosaris_dask.embeddings import from_arrays, scores_from_embeddings, trial_scores

    rng = np.random.default_rng(8)
    e = from_arrays([f"u{i}" for i in range(60)], rng.normal(size=(60, 12)))
    c = from_arrays([f"c{i}" for i in range(25)], rng.normal(size=(25, 12)))
    options = {"norm": norm, "cohort": c, "top_n": 6 if norm == "as" else None}
    models, segments = e.id.values[:45], e.id.values[20:]  # the sides share 25 ids
    matrix = scores_from_embeddings(e, e, chunks=(8, 11), **options).score.values
    rows, cols = rng.integers(0, 45, 400), rng.integers(0, 40, 400)
    seen = []
    real = cohort_module.side_statistics
    monkeypatch.setattr(cohort_module, "side_statistics",
                        lambda sides, *a, **k: seen.append(sum(len(s.ids) for s in sides))
                        or real(sides, *a, **k))  # fmt: skip
    from bosaris_dask.embeddings import normalization

    monkeypatch.setattr(normalization, "side_statistics", cohort_module.side_statistics)
    got = trial_scores(e, e, models, segments, rows, cols, **options)
    assert seen == [60]  # the 60 ids once, not 45 + 40
    want = matrix[rows + 0, cols + 20]
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def _pack_without_a_grid(monkeypatch) -> None:
    """Pack every list, and fail a test that reads one as its grid after all."""
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 0)
    monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)

    def no_grid(*args, **kwargs):
        raise AssertionError("the grid was built")

    monkeypatch.setattr("bosaris_dask.io.text.collect._assemble", no_grid)
    monkeypatch.setattr("bosaris_dask.io.text.read._assemble", no_grid)  # its own binding
    monkeypatch.setattr("bosaris_dask.io.read", no_grid)


@pytest.mark.parametrize("name", ["trials", "scores"])
def test_info_of_a_sparse_list_counts_its_trials_without_the_grid(tmp_path, monkeypatch, capsys,
                                                                   name):  # fmt: skip
    # info built the grid (VoxCeleb1-E: 2.1e10 cells of scratch memmaps) to count 5.8e5 trials
    tar, non = _lists(tmp_path)
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 1 << 62)
    assert main(["info", str(tmp_path / name), "-q"]) == 0
    grid = dict(line.split(":", 1) for line in capsys.readouterr().out.splitlines())
    _pack_without_a_grid(monkeypatch)
    assert main(["info", str(tmp_path / name), "-q"]) == 0
    listed = dict(line.split(":", 1) for line in capsys.readouterr().out.splitlines())
    for field in ("path", "kind", "model ids", "segment ids", "trials"):
        assert listed[field] == grid[field]
    assert listed["shape"].startswith(grid["shape"][:-1]) and "sparse list" in listed["shape"]
    n = len(tar) + len(non) + (2 if name == "scores" else 0)  # (the scores of non-key trials)
    want = (
        f"{n:,} ({len(tar):,} targets, {len(non):,} non-targets)" if name == "trials" else f"{n:,}"
    )
    assert listed["trials"].strip() == want


@pytest.mark.parametrize("name", ["trials", "scores"])
def test_convert_of_a_sparse_list_to_text_keeps_its_lines_without_the_grid(tmp_path, monkeypatch,
                                                                           name):  # fmt: skip
    _lists(tmp_path)
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 1 << 62)
    assert main(["convert", str(tmp_path / name), str(tmp_path / "grid.txt"), "-q"]) == 0
    _pack_without_a_grid(monkeypatch)
    assert main(["convert", str(tmp_path / name), str(tmp_path / "list.txt"), "-q"]) == 0
    listed = (tmp_path / "list.txt").read_text().splitlines()
    assert sorted(listed) == sorted((tmp_path / "grid.txt").read_text().splitlines())
    given = [line.split() for line in (tmp_path / name).read_text().splitlines()]
    assert [line.split()[:2] for line in listed] == [g[:2] for g in given]  # the file's order
    if name == "scores":
        assert [float(line.split()[2]) for line in listed] == [float(g[2]) for g in given]
    else:
        assert [line.split()[2] for line in listed] == [g[2] for g in given]


@pytest.mark.parametrize("name", ["trials", "scores"])
def test_convert_header_writes_a_nist_table_from_a_list_or_its_grid(tmp_path, monkeypatch, name):
    """``convert --header``: a NIST table (tabs, a header line) that reads back as the same
    object, from a sparse list (in its line order) and from its grid; refused for a store."""
    _lists(tmp_path)
    source = tmp_path / name
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 1 << 62)
    assert main(["convert", str(source), str(tmp_path / "grid.tsv"), "--header", "-q"]) == 0
    assert main(["convert", str(source), str(tmp_path / "grid.zarr"), "-q"]) == 0
    with pytest.raises(OptionError, match="--header is for a text output, not .*x.h5"):
        main(["convert", str(source), str(tmp_path / "x.h5"), "--header", "--debug"])
    _pack_without_a_grid(monkeypatch)
    assert main(["convert", str(source), str(tmp_path / "list.tsv"), "--header", "-q"]) == 0
    header = "modelid\tsegmentid\t" + ("LLR" if name == "scores" else "targettype")
    given = [line.split() for line in source.read_text().splitlines()]
    for out in ("grid.tsv", "list.tsv"):
        lines = (tmp_path / out).read_text().splitlines()
        assert lines[0] == header and all(line.count("\t") == 2 for line in lines)
        rows = {tuple(line.split("\t")[:2]): line.split("\t")[2] for line in lines[1:]}
        assert rows == {(g[0], g[1]): (repr(float(g[2])) if name == "scores" else g[2])
                        for g in given}  # fmt: skip
    listed = (tmp_path / "list.tsv").read_text().splitlines()[1:]
    assert [line.split("\t")[:2] for line in listed] == [g[:2] for g in given]  # its order
    monkeypatch.undo()
    back, grid = io.read(tmp_path / "grid.tsv"), io.read(tmp_path / "grid.zarr")
    back = back.sel(model=grid.model.values, segment=grid.segment.values)  # (ids in line order)
    for var in grid.data_vars:
        np.testing.assert_array_equal(back[var].values, grid[var].values)


def test_info_of_a_sparse_score_list_with_its_key_counts_the_coverage_without_the_grid(
    tmp_path, monkeypatch, capsys
):
    _lists(tmp_path)
    scores = tmp_path / "scores"
    lines = scores.read_text().splitlines()
    (tmp_path / "fewer").write_text("\n".join(lines[5:]) + "\n")  # some key trials unscored
    argv = ["info", str(tmp_path / "fewer"), "--key", str(tmp_path / "trials"), "-q"]
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 1 << 62)
    assert main(argv) == 0
    grid = capsys.readouterr().out.splitlines()[-2:]
    _pack_without_a_grid(monkeypatch)
    assert main(argv) == 0
    listed = capsys.readouterr().out.splitlines()[-2:]
    assert listed == grid
    key = {tuple(line.split()[:2]) for line in (tmp_path / "trials").read_text().splitlines()}
    given = {tuple(line.split()[:2]) for line in lines[5:]}
    scored = len(key & given)
    assert listed[0].endswith(f"({scored:,} with a score, {len(key) - scored:,} without)")
    assert listed[1].startswith(f"not in key:  {len(given) - scored:,} of {len(given):,}")


def test_info_of_a_sparse_score_list_against_a_key_store_never_builds_the_list_s_grid(
    tmp_path, monkeypatch, capsys
):
    from bosaris_dask import io

    _lists(tmp_path)
    lines = (tmp_path / "scores").read_text().splitlines()
    (tmp_path / "fewer").write_text("\n".join(lines[5:]) + "\n")
    io.write(io.read(tmp_path / "trials", "key"), tmp_path / "key.zarr")
    argv = ["info", str(tmp_path / "fewer"), "--key", str(tmp_path / "key.zarr"), "-q"]
    monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 1 << 62)
    assert main(argv) == 0
    grid = capsys.readouterr().out.splitlines()[-2:]
    read = io.read
    _pack_without_a_grid(monkeypatch)
    monkeypatch.setattr("bosaris_dask.io.read", read)  # the key store's own read
    assert main(argv) == 0
    listed = capsys.readouterr().out.splitlines()[-2:]
    assert listed == grid and "with a score" in listed[0]


def test_info_and_convert_of_a_list_with_a_trial_given_twice_refuse_it(
    tmp_path, always_pack, capsys
):
    """info counted a trial given twice twice (9,001 trials, the repeat's label an extra
    target; a score given twice 'not in key') and convert wrote both lines, where evaluate,
    and info/convert of a dense list, refuse it at its line."""
    _lists(tmp_path)
    key_lines = (tmp_path / "trials").read_text().splitlines(keepends=True)
    first = key_lines[1].rsplit(" ", 1)[0]
    (tmp_path / "twice").write_text("".join(key_lines) + f"{first} target\n")
    (tmp_path / "scores2").write_text((tmp_path / "scores").read_text() + f"{first} 9.0\n")
    n_key = len(key_lines) + 1
    said = rf"twice:{n_key}: trial \('{first.split()[0]}', '{first.split()[1]}'\) is given twice, first on line 2"  # noqa: E501
    for argv in (["info", str(tmp_path / "twice")],
                 ["convert", str(tmp_path / "twice"), str(tmp_path / "out.txt")],
                 ["info", str(tmp_path / "scores2"), "--key", str(tmp_path / "trials")],
                 ["info", str(tmp_path / "scores"), "--key", str(tmp_path / "twice")]):  # fmt: skip
        assert main([*argv, "-q"]) == 1
        err = capsys.readouterr().err
        assert "is given twice" in err and ("scores2:" in err or re.search(said, err)), argv
    assert not (tmp_path / "out.txt").exists()


def _own_key_file(tmp_path, lines):
    path = tmp_path / "own.score"
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("pack_it", [False, True])
@pytest.mark.parametrize("form", ["wespeaker", "3dspeaker", "nist"])
def test_a_file_that_is_its_own_key_is_parsed_once_as_both(tmp_path, monkeypatch, pack_it, form):
    if pack_it:
        monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 0)
        monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
    rng = np.random.default_rng(7)
    trials = [(f"e{i % 9}", f"t{i // 9}", i % 5 == 0, rng.normal()) for i in range(90)]
    rows = {
        "wespeaker": [f"{e} {t} {s!r} {'target' if y else 'nontarget'}\n" for e, t, y, s in trials],
        "3dspeaker": [f"{e} {t} {int(y)} {s!r}\n" for e, t, y, s in trials],
        "nist": ["modelid\tsegmentid\tLLR\ttargettype\n"]
        + [f"{e}\t{t}\t{s!r}\t{'genuine' if y else 'impostor'}\n" for e, t, y, s in trials],
    }[form]
    path = _own_key_file(tmp_path, rows)
    fmt = None if form == "nist" else form
    key, scores = packed.read_key_and_scores(path, format=fmt)
    alone = (
        packed.read_trials(path, "key", format=fmt),
        packed.read_trials(path, "scores", format=fmt),
    )
    for both, apart in zip((key, scores), alone, strict=True):
        if pack_it:
            assert isinstance(both, TrialList) and both.kind == apart.kind
            for name in ("models", "segments", "model_codes", "segment_codes", "values"):
                np.testing.assert_array_equal(getattr(both, name), getattr(apart, name))
            assert both.values.dtype == apart.values.dtype
        else:
            assert both.identical(apart)
    labels = key.values if pack_it else key.trial_mask.values[key.trial_mask.values != 0]
    assert sorted(labels.tolist()) == sorted(1 if y else -1 for *_, y, _ in trials)


@pytest.mark.parametrize(
    ("bad", "line", "message"),
    [
        ({3: "e0 t3 x1 target\n", 6: "e1 t6 0.5 maybe\n"}, 4, "cannot parse score 'x1'"),
        ({3: "e0 t3 0.5 maybe\n", 6: "e1 t6 x1 target\n"}, 4, "label 'maybe' is not one of"),
        ({2: "e0 t2 0.5 0\n"}, 3, "a file.s labels come from one pair of words"),
    ],
)
def test_its_own_key_read_once_reports_the_first_bad_line_of_either_column(
    tmp_path, bad, line, message
):
    rows = [f"e{i % 3} t{i} {i / 4} {'target' if i % 2 else 'nontarget'}\n" for i in range(9)]
    for i, text in bad.items():
        rows[i] = text
    path = _own_key_file(tmp_path, rows)
    with pytest.raises(ParseError, match=message) as info:
        packed.read_key_and_scores(path, format="wespeaker")
    assert info.value.line == line


def test_evaluate_parses_a_file_that_is_its_own_key_once(tmp_path, monkeypatch):
    from bosaris_dask.io.text import read as text_read

    rows = [f"e{i % 7} t{i // 7} {float(np.sin(i))!r} {'target' if i % 6 == 0 else 'nontarget'}\n"
            for i in range(140)]  # fmt: skip
    path = _own_key_file(tmp_path, rows)
    copy = tmp_path / "key.score"
    copy.write_text("".join(rows))
    collect, reads = text_read.collect_text, []
    monkeypatch.setattr(
        text_read, "collect_text", lambda p, *a, **k: reads.append(p) or collect(p, *a, **k)
    )
    out_own, out_key = tmp_path / "own.json", tmp_path / "key.json"
    assert main(["evaluate", "--scores", str(path), "--json", str(out_own), "-q"]) == 0
    assert reads == [str(path)]
    assert main(["evaluate", "--key", str(copy), "--scores", str(path), "--json", str(out_key),
                 "-q"]) == 0  # fmt: skip
    assert reads == [str(path), str(copy), str(path)]
    own, apart = json.loads(out_own.read_text()), json.loads(out_key.read_text())
    assert own["systems"] == apart["systems"]


def test_every_trial_writer_takes_the_header_and_mat_version_options(tmp_path, capsys):
    """score, calibrate, fuse and apply write a NIST table (--header), in a list's line order
    and from the grid, and a version 7.3 MAT file (--mat-version), as convert does; each
    option is refused (before any work) for an output it does not apply to."""
    from bosaris_dask import io
    from bosaris_dask.io import mat

    _embeddings(tmp_path)
    emb = ["--enrol", str(tmp_path / "emb.npz"), "--test", str(tmp_path / "emb.npz")]
    lines = (tmp_path / "trials").read_text().splitlines()[::-1]
    (tmp_path / "t.ndx").write_text("".join(f"{x.split()[1]} {x.split()[2]}\n" for x in lines))
    pairs = [x.split()[1:] for x in lines]
    path = str(tmp_path / "list.txt")
    assert main(["score", "--key", str(tmp_path / "trials"), *emb, "--out", path, "--header",
                 "-q"]) == 0  # fmt: skip
    out = (tmp_path / "list.txt").read_text().splitlines()
    assert out[0] == "modelid\tsegmentid\tLLR"
    assert [x.split("\t")[:2] for x in out[1:]] == pairs[::-1]  # the key's own order
    fit = ["calibrate", "--key", str(tmp_path / "trials"), *emb, "--model-out",
           str(tmp_path / "cal.json"), "-q"]  # fmt: skip
    dot = str(tmp_path / "dot.txt")
    assert main(["score", "--key", str(tmp_path / "trials"), *emb, "--backend", "dot",
                 "--out", dot, "-q"]) == 0  # fmt: skip
    systems = ["--scores", path, "--scores", dot]
    fuse = ["fuse", "--key", str(tmp_path / "trials"), *systems, "--model-out",
            str(tmp_path / "fuse.json"), "-q"]  # fmt: skip
    ndx = ["--ndx", str(tmp_path / "t.ndx")]
    runs = {
        "calibrate": [*fit, "--apply", path, *ndx],
        "fuse": [*fuse, "--apply", path, "--apply", dot, *ndx],
        "apply": ["apply", "--model", str(tmp_path / "cal.json"), *emb, *ndx, "-q"],
    }
    assert main(fit) == 0
    for name, argv in runs.items():
        assert main([*argv, "--out", str(tmp_path / f"{name}.tsv"), "--header"]) == 0
        table = (tmp_path / f"{name}.tsv").read_text().splitlines()
        assert table[0] == "modelid\tsegmentid\tLLR" and len(table) == len(lines) + 1
        assert [x.split("\t")[:2] for x in table[1:]] == pairs  # the ndx's order
        assert main([*argv, "--out", str(tmp_path / f"{name}.mat"), "--mat-version", "7.3"]) == 0
        assert mat.is_v73(tmp_path / f"{name}.mat")
        grid = io.read(tmp_path / f"{name}.mat")
        listed = io.read(tmp_path / f"{name}.tsv")
        both = grid.score.values[listed.score_mask.values]
        np.testing.assert_array_equal(both, listed.score.values[listed.score_mask.values])
    score_mat = tmp_path / "all.mat"
    assert main(["score", *emb, "--out", str(score_mat), "--mat-version", "7.3", "-q"]) == 0
    assert mat.is_v73(score_mat) and io.read(score_mat).sizes["model"] == 60
    # every pair from the grid, as a NIST table, reads back as the MAT file's scores
    assert main(["score", *emb, "--out", str(tmp_path / "all.tsv"), "--header", "-q"]) == 0
    table = (tmp_path / "all.tsv").read_text().splitlines()
    assert table[0] == "modelid\tsegmentid\tLLR" and len(table) == 60 * 60 + 1
    np.testing.assert_array_equal(io.read(tmp_path / "all.tsv").score.values,
                                  io.read(score_mat).score.values)  # fmt: skip
    fitted = (tmp_path / "cal.json").stat().st_mtime_ns
    capsys.readouterr()
    refused = {
        ("score", "--header"): ["score", *emb, "--out", str(tmp_path / "x.zarr"), "--header"],
        ("apply", "--mat-version"): [
            *runs["apply"],
            "--out",
            str(tmp_path / "x.txt"),
            "--mat-version",
            "5",
        ],  # fmt: skip
        ("calibrate", "--header"): [*fit, "--header"],
    }
    for (_, option), argv in refused.items():
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert option in err and ("is for a" in err or "only applies with --apply" in err), err
    assert not (tmp_path / "x.zarr").exists() and not (tmp_path / "x.txt").exists()
    assert (tmp_path / "cal.json").stat().st_mtime_ns == fitted  # refused before the fit
