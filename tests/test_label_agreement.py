"""A score file's own labels checked against the key's (:mod:`bosaris_dask.cli.label_agreement`):
contradictions are counted as a plain dict of trials counts them, named by ids (and lines of
lists), warned about on the grid and packed, and never change the numbers (the key's labels
are used)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask import io
from bosaris_dask.cli import main
from bosaris_dask.cli.label_agreement import LabelWarning, disagreement
from bosaris_dask.io.text import packed
from bosaris_dask.io.text.packed import TrialList, read_key_and_scores

WORDS = {1: "target", -1: "nontarget"}


def _write(path, trials: dict, labels: bool = True, order=None) -> None:
    lines = []
    for m, s in order or trials:
        label = trials[(m, s)]
        text = f"{m} {s} {0.5 * label + 0.1 * len(lines):.3f}"
        lines.append(text + (f" {WORDS[label]}" if labels else ""))
    path.write_text("\n".join(lines) + "\n")


TRIALS = st.dictionaries(
    st.tuples(st.sampled_from("abcde"), st.sampled_from("vwxyz")),
    st.sampled_from([1, -1]),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(ours=TRIALS, theirs=TRIALS, lists=st.booleans())
def test_contradictions_are_counted_as_a_dict_counts_them(tmp_path_factory, ours, theirs, lists):
    d = tmp_path_factory.mktemp("labels")
    _write(d / "key.score", ours)
    _write(d / "their.score", theirs)
    key, _ = read_key_and_scores(d / "key.score", as_lists=lists)
    their, _ = read_key_and_scores(d / "their.score", as_lists=lists)
    shared = [t for t in theirs if t in ours]
    bad = [t for t in shared if ours[t] != theirs[t]]
    n_bad, n_shared, where = disagreement(key, their)
    assert (n_bad, n_shared) == (len(bad), len(shared))
    if bad:  # the first (in their lines' order on a list, the key's grid's order else)
        first = (
            bad[0]
            if lists
            else min(
                bad,
                key=lambda t: (
                    list(key.model.values).index(t[0]),
                    list(key.segment.values).index(t[1]),
                ),
            )
        )
        assert where.startswith(f"({first[0]}, {first[1]})")
        if lists:
            assert f"at line {list(theirs).index(first) + 1}" in where
    else:
        assert where == ""


def test_a_list_against_a_grid_key():
    """A score list beyond a small key's grid (put on it by ``on_grid``) against that key."""
    from bosaris_dask.trials import make_key

    key = make_key(["a", "b"], ["x"], [[1], [-1]])
    ids = np.array(["b", "q", "a"], dtype=object)
    theirs = TrialList("t", ids, np.array(["x"], dtype=object), np.arange(3), np.zeros(3, int),
                       np.array([1, 1, 1], dtype=np.int8), lambda k: k + 10, "key")  # fmt: skip
    assert disagreement(key, theirs) == (1, 2, "(b, x) at line 10")


@pytest.fixture(params=["grid", "packed"])
def layout(request, monkeypatch):
    if request.param == "packed":
        monkeypatch.setattr(packed, "SPARSE_MIN_CELLS", 0)
        monkeypatch.setattr(packed, "SPARSE_CELLS_PER_TRIAL", 0)
    return request.param


@pytest.mark.filterwarnings("always::bosaris_dask.cli.label_agreement.LabelWarning")
def test_contradicting_labels_are_warned_about_and_the_keys_used(tmp_path, layout, capsys):
    truth = {("a", "x"): 1, ("b", "x"): -1, ("c", "y"): -1, ("c", "x"): 1, ("d", "z"): -1}
    flipped = {**truth, ("b", "x"): 1, ("c", "x"): -1}
    _write(tmp_path / "s1.score", truth)
    _write(tmp_path / "s2.score", flipped)
    _write(tmp_path / "s2-bare.score", flipped, labels=False)  # no labels: nothing to check
    _write(tmp_path / "key", truth)
    io.write(io.read(tmp_path / "key", "key"), tmp_path / "key.zarr")  # (read as a grid)
    reports = {}
    for name, argv in {
        "own key": ["--scores", "s1.score", "--scores", "s2.score"],
        "key": ["--key", "key", "--scores", "s1.score", "--scores", "s2.score"],
        "store key": ["--key", "key.zarr", "--scores", "s1.score", "--scores", "s2.score"],
        "bare": ["--key", "key", "--scores", "s1.score", "--scores", "s2-bare.score"],
    }.items():
        out = tmp_path / f"{name}.json"
        paths = [str(tmp_path / a) if not a.startswith("--") else a for a in argv]
        assert main(["evaluate", *paths, "--json", str(out), "-q"]) == 0
        err = capsys.readouterr().err
        said = [line for line in err.splitlines() if "contradict" in line]
        if name == "bare":
            assert said == []
        else:
            assert len(said) == 1, err
            source = {"own key": "s1.score", "key": "key", "store key": "key.zarr"}[name]
            assert f"s2.score: its labels contradict the key's ({tmp_path / source}) on 2 of " \
                   "the 5 trials both label, e.g. (b, x)" in said[0]  # fmt: skip
            assert ("at line 2" in said[0]) == (layout == "packed")  # (read as a list)
        reports[name] = json.loads(out.read_text())
    numbers = {
        name: [{k: v for k, v in system.items() if k != "name"} for system in report["systems"]]
        for name, report in reports.items()
    }
    assert numbers["own key"] == numbers["bare"] == numbers["key"] == numbers["store key"]


def test_agreeing_labels_say_nothing(tmp_path, layout):
    truth = {("a", "x"): 1, ("b", "x"): -1, ("c", "y"): -1}
    _write(tmp_path / "s1.score", truth)
    _write(tmp_path / "s2.score", truth, order=[("c", "y"), ("a", "x"), ("b", "x")])
    with warnings.catch_warnings():
        warnings.simplefilter("error", LabelWarning)
        assert main(["evaluate", "--scores", str(tmp_path / "s1.score"), "--scores",
                     str(tmp_path / "s2.score"), "-q"]) == 0  # fmt: skip
