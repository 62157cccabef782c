"""Systems are told apart by name in every table and JSON: two score files of one name (or one
file given twice) get distinct names, and the API refuses names that repeat."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bosaris_dask.cli import main
from bosaris_dask.errors import OptionError
from bosaris_dask.metrics import evaluate
from bosaris_dask.trials import make_key, make_scores
from tests.trial_text import write_trial_files


def _files(tmp_path):
    rng = np.random.default_rng(0)
    trials = [(f"m{j % 3}", f"t{j}", j % 4 == 0) for j in range(60)]
    s1, s2 = [], []
    for _, _, target in trials:
        s1.append(float(rng.normal(1.0 if target else -1.0)))
        s2.append(float(rng.normal(0.5 if target else -0.5)))
    return write_trial_files(tmp_path, trials, {"exp1/sys.txt": s1, "exp2/sys.txt": s2})


def _names(tmp_path, *scores):
    key, out = _files(tmp_path)[0], tmp_path / "r.json"
    argv = ["evaluate", "--key", str(key), "--json", str(out), "-q", "--cluster", "threads"]
    assert main([*argv, *(a for s in scores for a in ("--scores", str(s)))]) == 0
    return [s["name"] for s in json.loads(out.read_text())["systems"]]


def test_two_files_of_one_name_are_named_by_their_folders(tmp_path):
    _, a, b = _files(tmp_path)
    assert _names(tmp_path, a, b) == ["exp1/sys", "exp2/sys"]  # a traceback before
    assert _names(tmp_path, a, a) == ["sys", "sys#2"]


def test_the_api_refuses_names_that_repeat():
    key = make_key(["m"], ["a", "b"], [[1, -1]])
    scores = make_scores(["m"], ["a", "b"], [[1.0, 0.0]])
    with pytest.raises(OptionError, match="system name 'x' is given twice"):
        evaluate([scores, scores], key, names=["x", "x"])


def test_a_seed_without_a_bootstrap_is_an_error_not_ignored(tmp_path, capsys):
    key, a, _ = _files(tmp_path)
    for flag in (["--seed", "3"], ["--bootstrap-method", "poisson"]):
        assert main(["evaluate", "--key", str(key), "--scores", str(a), "-q", *flag]) == 1
        assert f"{flag[0]} needs --bootstrap B" in capsys.readouterr().err
