"""Ids that differ only in their Unicode normalization (NFC in one file, NFD in the other):
every trial of them went missing with ids printed alike ("(café, s1) has no score")."""

from __future__ import annotations

import unicodedata
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import bosaris_dask as bd
from bosaris_dask.trials import make_key, make_scores
from bosaris_dask.trials.id_twins import IdWarning, normalization_twins

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
            "normalization, e.g. 'caf\\xe9' and 'cafe\\u0301'") in err  # fmt: skip
    assert "2 key trials have no score" in err


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


@given(st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=8, unique=True))
def test_twins_are_exactly_the_missing_ids_equal_under_nfc(ids):
    given_ids = [unicodedata.normalize("NFD", i) for i in ids]
    twins = normalization_twins(ids, given_ids)
    expected = [
        (i, next(g for g in given_ids if unicodedata.normalize("NFC", g)
                 == unicodedata.normalize("NFC", i)))
        for i in ids if i not in given_ids and not i.isascii()
    ]  # fmt: skip
    assert sorted(twins) == sorted(expected)
