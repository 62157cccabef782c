"""Ids that look alike but differ (NFC in one file and NFD in the other, an int id against a
string one, a space around one): every trial of them went missing with ids printed alike
("(café, s1) has no score", "(0, s000) has no score")."""

from __future__ import annotations

import unicodedata
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import bosaris_dask as bd
from bosaris_dask.errors import TrialError
from bosaris_dask.trials import make_key, make_scores
from bosaris_dask.trials.id_twins import IdWarning, id_twins

NFC, NFD = "caf\u00e9", "cafe\u0301"


def test_the_cli_warns_with_both_spellings(tmp_path, capsys):
    from bosaris_dask.cli import main

    (tmp_path / "key.txt").write_text(f"{NFC} s1 target\n{NFC} s2 nontarget\n")
    (tmp_path / "scores.txt").write_text(f"{NFD} s1 1.0\n{NFD} s2 -1.0\n")
    argv = ["evaluate", "--key", str(tmp_path / "key.txt"), "-q"]
    with warnings.catch_warnings():  # (shown as the command shows it: one line)
        warnings.simplefilter("always", IdWarning)
        assert main([*argv, "--scores", str(tmp_path / "scores.txt")]) == 1
    err = capsys.readouterr().err
    assert ("warning: 1 model id(s) of the key match an id of the scores only after Unicode "
            "normalization, e.g. 'caf\\xe9' and 'cafe\\u0301', so their trials do not match: "
            "give both objects the same ids") in err  # fmt: skip
    assert "2 key trials have no score" in err


def test_sparse_lists_read_packed_warn_too(tmp_path, capsys):
    # a list too sparse for its grid is matched packed, without align: no hint at all
    from bosaris_dask.cli import main
    from bosaris_dask.io.text.packed import is_sparse

    n = 9000
    assert is_sparse(n, n, 2 * n)
    with open(tmp_path / "key.txt", "w") as key, open(tmp_path / "scores.txt", "w") as scores:
        for i in range(n):
            key.write(f"{NFC}{i} t{i} target\n{NFC}{i} t{(i + 1) % n} nontarget\n")
            scores.write(f"{NFD}{i} t{i} 1.0\n{NFD}{i} t{(i + 1) % n} -1.0\n")
    argv = ["evaluate", "--key", str(tmp_path / "key.txt"), "--scores",
            str(tmp_path / "scores.txt"), "-q", "--cluster", "threads"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("always", IdWarning)
        assert main(argv) == 1
    err = capsys.readouterr().err
    assert ("warning: 9,000 model id(s) of the key match an id of the scores only after "
            "Unicode normalization") in err  # fmt: skip
    assert "18,000 key trials have no score" in err


@pytest.mark.parametrize("extra", [0, 40])
def test_a_score_list_put_on_the_keys_grid_warns_too(tmp_path, capsys, extra):
    # a score file with trials beyond the key's ids goes on the key's grid by id (on_grid),
    # which align then finds aligned already: no hint there
    from bosaris_dask.cli import main

    with open(tmp_path / "key.txt", "w") as key, open(tmp_path / "s.txt", "w") as scores:
        for i in range(5):
            for j in range(5):
                key.write(f"{NFC}{i} t{j} {'target' if i == j else 'nontarget'}\n")
                scores.write(f"{NFD}{i} t{j} {1.0 if i == j else -1.0}\n")
        scores.writelines(f"x{i} y{i} 0.5\n" for i in range(extra))
    argv = ["evaluate", "--key", str(tmp_path / "key.txt"), "--scores", str(tmp_path / "s.txt"),
            "-q", "--cluster", "threads"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("always", IdWarning)
        assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("warning: 5 model id(s) of the key match an id of the scores only after "
                     "Unicode normalization") == 1  # fmt: skip
    assert "25 key trials have no score" in err


def test_an_apply_in_the_ndxs_line_order_warns_too(tmp_path, capsys):
    from bosaris_dask.calibration import LinearCalibrator
    from bosaris_dask.cli import main

    model = LinearCalibrator().fit_arrays(np.array([1.0, 2.0, 0.0]), np.array([-1.0, 0.5, -2.0]))
    model.save(tmp_path / "cal.json")
    (tmp_path / "ndx.txt").write_text(f"{NFC} t1\n{NFC} t2\n")
    (tmp_path / "s.txt").write_text(f"{NFD} t1 1.0\n{NFD} t2 -1.0\n")
    argv = ["apply", "--model", str(tmp_path / "cal.json"), "--ndx", str(tmp_path / "ndx.txt"),
            "--scores", str(tmp_path / "s.txt"), "--out", str(tmp_path / "out.txt")]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("always", IdWarning)
        main(argv)
    assert ("warning: 1 model id(s) of the ndx match an id of the scores only after Unicode "
            "normalization") in capsys.readouterr().err  # fmt: skip


def test_align_warns_once_per_side_and_not_for_plain_missing_ids():
    key = make_key([NFC, "m2"], ["s1", NFD], np.array([[1, -1], [-1, 1]]))
    scores = make_scores([NFD, "m3"], ["s1", NFC], np.ones((2, 2)))
    with pytest.warns(IdWarning) as record:
        bd.align(scores, key)
    assert [str(w.message).split(" id(s)")[0] for w in record] == ["1 model", "1 segment"]
    plain = make_scores(["m9"], ["s9"], np.ones((1, 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdWarning)
        bd.align(plain, key)  # missing ids without a twin: no warning


def test_int_ids_are_their_text_and_ids_with_spaces_are_said():
    # an integer id set in Python matched a '0' one way only, and int against int never (the
    # wanted ids were looked up as text, the given ones as they were): every trial lost
    codes = np.array([[1, -1], [-1, 1], [1, -1]])
    values = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, -1.0]])
    int_key = make_key(["a", "b", "c"], ["s1", "s2"], codes).assign_coords(model=[0, 1, 2])
    str_key = make_key(["0", "1", "2"], ["s1", "s2"], codes)
    int_scores = make_scores(["x", "y", "z"], ["s1", "s2"], values).assign_coords(model=[0, 1, 2])
    str_scores = make_scores(["0", "1", "2"], ["s1", "s2"], values)
    expected = bd.evaluate(str_scores, str_key)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdWarning)
        for key in (int_key, str_key):
            for scores in (int_scores, str_scores):
                result = bd.evaluate(scores, key)
                assert int(result.n_missing[0]) == 0
                assert float(result.cllr[0]) == float(expected.cllr[0])
    spaced = make_scores(["m"], ["s1"], np.ones((1, 1))).assign_coords(segment=["s1 "])
    with pytest.warns(IdWarning, match="only without the whitespace around them, e.g. 's1' "
                      "and 's1 '"):  # fmt: skip
        bd.align(spaced, make_key(["m"], ["s1"], np.array([[1]])))


def test_bytes_ids_as_h5py_reads_them_are_said_too():
    scores = make_scores(["m1"], ["s1"], np.ones((1, 1)))
    key = make_key(["m"], ["s1"], np.array([[1]])).assign_coords(model=np.array([b"m1"]))
    with pytest.warns(IdWarning, match=r"1 model id\(s\) of the key match an id of the scores "
                      r"only as text \(bytes and str ids\), e.g. b'm1' and 'm1'"):  # fmt: skip
        bd.align(scores, key)


def _canonical(i):
    return unicodedata.normalize("NFC", str(i)).strip()


@given(
    st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=8, unique=True),
    st.sampled_from(["NFD", "NFC"]),
    st.booleans(),
)
def test_twins_are_exactly_the_missing_ids_equal_as_canonical_text(ids, form, pad):
    given_ids = [unicodedata.normalize(form, i) + (" " if pad else "") for i in ids]
    if len({_canonical(g) for g in given_ids}) < len(given_ids):
        return  # two given ids of one canonical form: either may be named
    twins = id_twins(ids, given_ids)
    by_form = {_canonical(g): g for g in given_ids}
    expected = [(i, by_form[_canonical(i)]) for i in ids
                if i not in given_ids and _canonical(i) in by_form]  # fmt: skip
    assert sorted(twins) == sorted(expected)


def test_ids_that_are_no_strings_do_not_break_the_check():
    # a None or NaN id among strings made the check's join raise inside align; such an id is
    # a gap (a pandas column's), refused by name as the constructors refuse it
    scores = make_scores(["m1", "m2", "m3"], ["s1"], np.ones((3, 1)))
    for odd in (None, float("nan")):
        key = make_key(["m"], ["s1"], np.array([[1]])).assign_coords(model=[odd])
        with pytest.raises(TrialError, match="a model id is missing"):
            bd.align(scores.assign_coords(model=["m1", odd, "m3"]), key)
    assert id_twins(["a"], ["m1", None, "m3"]) == []
