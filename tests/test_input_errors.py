"""Every kind of bad input, through the CLI and the API: one table, one row per way to get it wrong.

For each row the CLI (``bosaris_dask.cli.main``, in-process) exits with status 1 and prints
exactly one line, ``bosaris-dask: error: <message>``; with ``--debug`` it raises instead (the
traceback); and the API raises exactly the row's exception class with the same message. A few
real subprocesses prove the exit status and the absence (or, with ``--debug``, the presence) of
a traceback. Bad command-line options are argparse usage errors (status 2), tested apart.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import xarray as xr

from bosaris_dask import io, metrics
from bosaris_dask.calibration import load_model
from bosaris_dask.cli import main
from bosaris_dask.errors import (
    BosarisError,
    MissingTrialsError,
    OptionError,
    ParseError,
    ScoreError,
    StoreError,
    TrialError,
)
from bosaris_dask.fusion import LinearFuser
from bosaris_dask.trials import coverage, key_from_masks, make_key, make_scores

KEY = "m1 s1 target\nm1 s2 nontarget\nm2 s1 nontarget\nm2 s2 target\n"
SCORES = "m1 s1 1.0\nm1 s2 -1.0\nm2 s1 0.5\nm2 s2 2.0\n"
IDS = {"ID/row_ids": np.array([b"m1", b"m2"]), "ID/column_ids": np.array([b"s1", b"s2"])}
GOOD_SCORES = np.array([[1.0, -1.0], [0.5, 2.0]])


def _hdf5(datasets: dict[str, Any]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        with h5py.File(path, "w") as f:
            for name, value in datasets.items():
                f[name] = value

    return write


def _nan_zarr(path: Path) -> None:
    scores = GOOD_SCORES.copy()
    scores[0, 1] = np.nan
    io.write(make_scores(["m1", "m2"], ["s1", "s2"], scores), path)


def _evaluate(d: Path, scores: str = "scores.txt", key: str = "key.txt") -> Any:
    """The API call behind ``bosaris-dask evaluate``, with the CLI's system name."""
    name = scores.rsplit(".", 1)[0]
    return metrics.evaluate(io.read(d / scores, "scores"), io.read(d / key, "key"), names=[name])


def _evaluate_cli(key: str = "key.txt", scores: str = "scores.txt") -> tuple[str, ...]:
    return ("evaluate", "--key", "{d}/" + key, "--scores", "{d}/" + scores, "--cluster", "threads")


def _result(d: Path) -> xr.Dataset:
    """An evaluation's result, passed on where Scores belong."""
    key = io.read(d / "key.txt")
    return metrics.evaluate(make_scores(["m1", "m2"], ["s1", "s2"], GOOD_SCORES), key)


def _str_scores() -> xr.Dataset:
    scores = make_scores(["m1", "m2"], ["s1", "s2"], GOOD_SCORES)
    return scores.assign(score=scores.score.astype(str))


@dataclass(frozen=True)
class Case:
    """One bad input: the files it needs, the command (None: API only), the API call."""

    id: str
    error: type[BosarisError]
    message: str  # ``{d}`` is the directory of the files
    api: Callable[[Path], Any]
    argv: tuple[str, ...] | None = None
    files: dict[str, str | Callable[[Path], None]] = field(default_factory=dict)


CASES = [
    # -- wrong field counts ------------------------------------------------------------------
    Case("key-2-fields", ParseError,
         "{d}/key.txt:2: expected 3 fields (model segment target|nontarget), found 2",
         lambda d: io.read(d / "key.txt", "key"), _evaluate_cli(),
         {"key.txt": "m1 s1 target\nm1 s2\n"}),
    Case("scores-4-fields", ParseError,
         "{d}/scores.txt:3: expected 3 fields (model segment score), found 4",
         lambda d: io.read(d / "scores.txt", "scores"), _evaluate_cli(),
         {"scores.txt": "m1 s1 1.0\nm1 s2 -1.0\nm2 s1 0.5 x\nm2 s2 2.0\n"}),
    Case("nist-table-short-line", ParseError,
         "{d}/scores.tsv:3: expected 3 tab-separated fields (one per header column), found 2",
         lambda d: io.read(d / "scores.tsv", "scores"), _evaluate_cli(scores="scores.tsv"),
         {"scores.tsv": "modelid\tsegmentid\tLLR\nm1\ts1\t1.0\nm1\ts2\n"}),
    # -- unparsable or non-finite scores -------------------------------------------------------
    Case("score-unparsable", ParseError, "{d}/scores.txt:2: cannot parse score '1,5'",
         lambda d: io.read(d / "scores.txt", "scores"), _evaluate_cli(),
         {"scores.txt": "m1 s1 1.0\nm1 s2 1,5\n"}),
    Case("score-nan-text", ParseError, "{d}/scores.txt:4: score 'nan' is not finite",
         lambda d: io.read(d / "scores.txt", "scores"), _evaluate_cli(),
         {"scores.txt": SCORES.replace("2.0", "nan")}),
    Case("score-inf-text", ParseError, "{d}/scores.txt:1: score '-inf' is not finite",
         lambda d: io.read(d / "scores.txt", "scores"), _evaluate_cli(),
         {"scores.txt": SCORES.replace("1.0", "-inf", 1)}),
    Case("score-nan-zarr", ScoreError,
         "scores: 1 trial has a non-finite score, e.g. (m1, s2)",
         lambda d: _evaluate(d, "scores.zarr"), _evaluate_cli(scores="scores.zarr"),
         {"scores.zarr": _nan_zarr}),
    Case("score-nan-arrays", ScoreError,
         "system: scores that are not finite: targets 1 (the first at index 1: nan), "
         "non-targets 2 (the first at index 0: -inf)",
         lambda d: metrics.eer([1.0, np.nan], [-np.inf, 0.0, np.inf])),
    # -- labels other than target/nontarget ---------------------------------------------------
    Case("label-text", ParseError,
         "{d}/key.txt:2: label 'nontgt' is not one of target/nontarget, 1/0, true/false, "
         "tgt/imp, genuine/impostor, mated/nonmated, same/different, bonafide/spoof (any case)",
         lambda d: io.read(d / "key.txt", "key"), _evaluate_cli(),
         {"key.txt": "m1 s1 target\nm1 s2 nontgt\n"}),
    Case("label-mask-value", TrialError,
         "a key's trial_mask holds only -1 (non-target), 0 (no trial) and +1 (target); "
         "found 2 at (m2, s1) and 1 more bad values",
         lambda d: make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [2, 300]])),
    # -- duplicate trials or ids ---------------------------------------------------------------
    Case("duplicate-trial-key", ParseError,
         "{d}/key.txt:5: trial ('m1', 's2') is given twice, first on line 2",
         lambda d: io.read(d / "key.txt", "key"), _evaluate_cli(),
         {"key.txt": KEY + "m1 s2 target\n"}),
    Case("duplicate-trial-scores", ParseError,
         "{d}/scores.txt:5: trial ('m2', 's2') is given twice, first on line 4",
         lambda d: io.read(d / "scores.txt", "scores"), _evaluate_cli(),
         {"scores.txt": SCORES + "m2 s2 2.0\n"}),
    Case("duplicate-id-hdf5", StoreError, "{d}/scores.h5: duplicate id 'm1' in /ID/row_ids",
         lambda d: io.read(d / "scores.h5", "scores"), _evaluate_cli(scores="scores.h5"),
         {"scores.h5": _hdf5({"scores": GOOD_SCORES, "score_mask": np.ones((2, 2), np.uint8),
                              "ID/row_ids": np.array([b"m1", b"m1"]),
                              "ID/column_ids": IDS["ID/column_ids"]})}),
    Case("duplicate-id-api", TrialError, "duplicate segment id 's1'",
         lambda d: make_scores(["m1", "m2"], ["s1", "s1"], GOOD_SCORES)),
    # -- key trials without a score ------------------------------------------------------------
    Case("key-trial-without-score", MissingTrialsError,
         "scores: 2 key trials have no score, e.g. (m3, s1), (m3, s2) (allow_missing drops them)",
         _evaluate, _evaluate_cli(),
         {"key.txt": KEY + "m3 s1 target\nm3 s2 nontarget\n"}),
    # -- empty target or non-target sets --------------------------------------------------------
    Case("no-targets", ScoreError,
         "scores: need both targets and non-targets, found 0 targets and 4 non-targets among the "
         "key's scored trials",
         _evaluate, _evaluate_cli(), {"key.txt": KEY.replace(" target", " nontarget")}),
    Case("no-nontargets", ScoreError,
         "scores: need both targets and non-targets, found 2 targets and 0 non-targets among the "
         "key's scored trials",
         _evaluate, _evaluate_cli(), {"key.txt": "m1 s1 target\nm2 s2 target\n"}),
    Case("no-targets-arrays", ScoreError, "system: need targets and non-targets, got 0 and 2",
         lambda d: metrics.min_dcf([], [0.0, 1.0], 0.01)),
    # -- mismatched shapes ---------------------------------------------------------------------
    Case("shape-hdf5", StoreError,
         "{d}/scores.h5: /scores has shape (2, 3) but there are 2 row ids and 2 column ids",
         lambda d: io.read(d / "scores.h5", "scores"), _evaluate_cli(scores="scores.h5"),
         {"scores.h5": _hdf5({"scores": np.zeros((2, 3)),
                              "score_mask": np.ones((2, 2), np.uint8), **IDS})}),
    Case("shape-api", TrialError, "score has shape (2, 3) but there are 2 model ids and 2 "
         "segment ids", lambda d: make_scores(["m1", "m2"], ["s1", "s2"], np.zeros((2, 3)))),
    # -- wrong dtypes --------------------------------------------------------------------------
    Case("dtype-hdf5-complex", StoreError,
         "{d}/scores.h5: /scores holds complex128, expected numbers",
         lambda d: io.read(d / "scores.h5", "scores"), _evaluate_cli(scores="scores.h5"),
         {"scores.h5": _hdf5({"scores": GOOD_SCORES + 1j,
                              "score_mask": np.ones((2, 2), np.uint8), **IDS})}),
    Case("dtype-api-str", ScoreError,
         "scores must be real numbers (floats or integers), got dtype <U3",
         lambda d: make_scores(["m1", "m2"], ["s1", "s2"], [["1.0", "0.5"], ["2.0", "abc"]])),
    Case("dtype-api-complex", ScoreError,
         "scores must be real numbers (floats or integers), got dtype complex128",
         lambda d: make_scores(["m1", "m2"], ["s1", "s2"], GOOD_SCORES + 1j)),
    Case("dtype-api-bool", ScoreError,
         "scores must be real numbers (floats or integers), got dtype bool",
         lambda d: make_scores(["m1", "m2"], ["s1", "s2"], GOOD_SCORES > 0)),
    Case("dtype-api-dataset", ScoreError,
         "scores.score must be real numbers (floats or integers), got dtype <U32",
         lambda d: metrics.evaluate(_str_scores(), io.read(d / "key.txt"))),
    Case("dtype-api-fusion", ScoreError,
         "scores.score must be real numbers (floats or integers), got dtype <U32",
         lambda d: LinearFuser().fit([_str_scores()], io.read(d / "key.txt"))),
    Case("dtype-api-arrays", ScoreError,
         "system: target scores must be real numbers, got dtype complex128",
         lambda d: metrics.eer(np.array([1j]), [0.0])),
    Case("scores-given-as-key", TrialError, "system 1 is a key, not Scores",
         lambda d: metrics.evaluate(io.read(d / "key.txt"), io.read(d / "key.txt"))),
    Case("scores-given-as-array", TrialError,
         "expected a bosaris trial object (an xarray Dataset: Scores, Key, Ndx or Quality), got "
         "numpy.ndarray; the array metrics (bosaris_dask.metrics.eer, ...) take score arrays",
         lambda d: metrics.evaluate(GOOD_SCORES, io.read(d / "key.txt"))),
    Case("scores-given-as-result", TrialError,
         "got an evaluation's result where a trial object (Scores, Key, Ndx or Quality) was "
         "expected", lambda d: metrics.evaluate(_result(d), io.read(d / "key.txt"))),
    # -- a key whose target and non-target masks overlap ----------------------------------------
    Case("overlap-hdf5", StoreError,
         "{d}/key.h5: trial (m2, s1) is in both /target_mask and /nontarget_mask",
         lambda d: _evaluate(d, key="key.h5"), _evaluate_cli(key="key.h5"),
         {"key.h5": _hdf5({"target_mask": np.array([[1, 0], [1, 1]], np.uint8),
                           "nontarget_mask": np.array([[0, 1], [1, 0]], np.uint8), **IDS})}),
    Case("overlap-api", TrialError,
         "2 trials are marked both target and non-target, e.g. (m1, s2), (m2, s2)",
         lambda d: key_from_masks(["m1", "m2"], ["s1", "s2"], [[1, 1], [0, 1]],
                                  [[0, 1], [1, 1]])),
    # -- priors outside (0, 1) (the CLI's --prior: test_bad_priors_are_usage_errors) ------------
    Case("prior-evaluate", OptionError, "effective prior 1.5 is not strictly between 0 and 1",
         lambda d: metrics.evaluate(io.read(d / "scores.txt"), io.read(d / "key.txt"),
                                    priors=[0.01, 1.5])),
    Case("prior-nan", OptionError, "effective prior nan is not strictly between 0 and 1",
         lambda d: metrics.act_dcf([1.0], [0.0], float("nan"))),
    Case("prior-effective-prior", OptionError, "target prior 0.0 is not strictly between 0 and 1",
         lambda d: metrics.effective_prior(0.0, c_miss=10)),
    Case("prior-cost", OptionError, "c_fa must be a positive finite cost, got -1",
         lambda d: metrics.effective_prior(0.01, c_fa=-1)),
    Case("prior-fuser", OptionError, "the prior must lie strictly between 0 and 1, got 1",
         lambda d: LinearFuser(train_prior=1)),
    # -- a model file that is not one ------------------------------------------------------------
    Case("model-json", ParseError,
         "{d}/model.json:2: not a JSON model file: Expecting property name enclosed in double "
         "quotes", lambda d: load_model(d / "model.json"),
         ("apply", "--model", "{d}/model.json", "--scores", "{d}/scores.txt",
          "--out", "{d}/out.txt"), {"model.json": '{"kind": "pav",\n bad}\n'}),
    Case("model-field", ParseError, "{d}/model.json: the model has no 'weights' field",
         lambda d: load_model(d / "model.json"),
         ("apply", "--model", "{d}/model.json", "--scores", "{d}/scores.txt",
          "--out", "{d}/out.txt"), {"model.json": '{"kind": "linear_fusion", "prior": 0.5}'}),
]  # fmt: skip
CLI_CASES = [c for c in CASES if c.argv is not None]


def _setup(case: Case, d: Path) -> None:
    files: dict[str, Any] = {"key.txt": KEY, "scores.txt": SCORES, **case.files}
    for name, content in files.items():
        if callable(content):
            content(d / name)
        else:
            (d / name).write_text(content)


def _argv(case: Case, d: Path, *extra: str) -> list[str]:
    assert case.argv is not None
    return [a.format(d=d) for a in case.argv] + ["-q", *extra]


#: One id prefix per item of the issue's list ("the reverse" of missing scores: at the end).
ITEMS = ("key-2-fields", "scores-4-fields", "score-unparsable", "score-nan-", "score-inf-",
         "label-", "duplicate-trial", "duplicate-id", "key-trial-without", "no-targets",
         "no-nontargets", "shape-", "dtype-", "overlap-", "prior-")  # fmt: skip


def test_every_item_of_the_issue_has_rows():
    ids = [c.id for c in CASES]
    assert len(set(ids)) == len(ids)
    assert [p for p in ITEMS if not any(i.startswith(p) for i in ids)] == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_api_raises_the_specific_type(case, tmp_path):
    _setup(case, tmp_path)
    with pytest.raises(BosarisError) as info:
        case.api(tmp_path)
    assert type(info.value) is case.error
    assert str(info.value) == case.message.format(d=tmp_path)


@pytest.mark.parametrize("case", CLI_CASES, ids=lambda c: c.id)
def test_cli_prints_one_line_and_exits_1(case, tmp_path, capsys):
    _setup(case, tmp_path)
    assert main(_argv(case, tmp_path)) == 1
    out, err = capsys.readouterr()
    # the command line names its own option where the library names a keyword
    message = case.message.replace("(allow_missing drops", "(--allow-missing drops")
    assert err == f"bosaris-dask: error: {message.format(d=tmp_path)}\n"
    assert out == ""


@pytest.mark.parametrize("case", CLI_CASES, ids=lambda c: c.id)
def test_cli_debug_raises_the_api_error(case, tmp_path):
    _setup(case, tmp_path)
    with pytest.raises(BosarisError) as info:
        main(_argv(case, tmp_path, "--debug"))
    assert type(info.value) is case.error
    assert str(info.value) == case.message.format(d=tmp_path)


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bosaris_dask.cli", *args], capture_output=True, text=True
    )


@pytest.mark.parametrize("case_id", ["score-nan-text", "overlap-hdf5"])
def test_real_process_exit_status_and_no_traceback(case_id, tmp_path):
    """A parse error, and an error raised inside a dask task during the evaluation."""
    (case,) = [c for c in CASES if c.id == case_id]
    _setup(case, tmp_path)
    result = _run(*_argv(case, tmp_path))
    assert result.returncode == 1
    assert result.stderr == f"bosaris-dask: error: {case.message.format(d=tmp_path)}\n"
    assert result.stdout == ""


def test_real_process_debug_shows_the_traceback(tmp_path):
    (case,) = [c for c in CASES if c.id == "duplicate-trial-scores"]
    _setup(case, tmp_path)
    result = _run(*_argv(case, tmp_path, "--debug"))
    assert result.returncode == 1
    assert result.stderr.startswith("Traceback (most recent call last):\n")
    last = result.stderr.rstrip("\n").splitlines()[-1]
    assert last == f"bosaris_dask.errors.ParseError: {case.message.format(d=tmp_path)}"


@pytest.mark.parametrize(
    "argv, value",
    [
        (["evaluate", "--prior", "1.5"], "1.5"),
        (["evaluate", "--prior", "0.1", "--prior", "0"], "0"),
        (["evaluate", "--prior", "nan"], "nan"),
        (["calibrate", "--model-out", "m.json", "--train-prior", "1"], "1"),
    ],
)
def test_bad_priors_are_usage_errors(argv, value, capsys):
    """argparse rejects them before any file is opened: usage, then one error line, status 2."""
    with pytest.raises(SystemExit) as info:
        main([argv[0], "--key", "k.txt", "--scores", "s.txt", *argv[1:]])
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage: bosaris-dask " + argv[0])
    assert err.splitlines()[-1] == (
        f"bosaris-dask {argv[0]}: error: argument {argv[-2]}: "
        f"effective prior {value} is not strictly between 0 and 1"
    )


# --------------------------------------------------------------------------------------------
# the reverse of missing scores: scores of trials that are not in the key
# --------------------------------------------------------------------------------------------


EXTRA = SCORES + "m1 s9 5.0\nm9 s1 -5.0\nm9 s2 7.0\n"  # one pair and one model not in the key


def test_scores_not_in_the_key_are_ignored_by_evaluate(tmp_path):
    (tmp_path / "key.txt").write_text(KEY)
    (tmp_path / "extra.txt").write_text(EXTRA)
    key = io.read(tmp_path / "key.txt")
    both = metrics.evaluate(
        [io.read(tmp_path / "extra.txt"), make_scores(["m1", "m2"], ["s1", "s2"], GOOD_SCORES)],
        key,
        priors=[0.5, 0.01],
    )
    assert both.n_target.values.tolist() == [2, 2]
    assert both.n_nontarget.values.tolist() == [2, 2]
    for name in ("eer", "cllr", "min_cllr", "act_dcf", "min_dcf"):
        np.testing.assert_array_equal(both[name][0], both[name][1], err_msg=name)


def test_coverage_counts_both_directions(tmp_path):
    (tmp_path / "key.txt").write_text(KEY + "m3 s1 target\n")
    (tmp_path / "extra.txt").write_text(EXTRA)
    got = coverage(io.read(tmp_path / "extra.txt"), io.read(tmp_path / "key.txt"))
    assert got == {"trials": 5, "scored": 4, "missing": 1, "scores": 7, "unused": 3}
    with pytest.raises(TrialError, match="^expected Scores, got a key$"):
        coverage(io.read(tmp_path / "key.txt"), io.read(tmp_path / "key.txt"))


def test_info_key_says_what_evaluate_uses(tmp_path, capsys):
    (tmp_path / "key.txt").write_text(KEY + "m3 s1 target\n")
    (tmp_path / "extra.txt").write_text(EXTRA)
    key = str(tmp_path / "key.txt")
    assert main(["info", str(tmp_path / "extra.txt"), "--key", key]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2:] == [
        f"key trials:  5 in {key} (4 with a score, 1 without)",
        "not in key:  3 of 7 scores (evaluate ignores them)",
    ]
    assert main(["info", key, "--key", key]) == 1
    assert capsys.readouterr().err == (
        f"bosaris-dask: error: --key compares scores with a key, but {key} holds a key\n"
    )
    # a labelled score file (wespeaker's 'enrol test score label') as the key, as evaluate
    # takes it (it was read as scores: AttributeError 'trial_mask')
    own = tmp_path / "own.score"
    own.write_text("m1 s1 0.5 target\nm1 s2 -1 nontarget\nm2 s9 2 target\n")
    assert main(["info", str(tmp_path / "extra.txt"), "--key", str(own)]) == 0
    assert capsys.readouterr().out.splitlines()[-2] == (
        f"key trials:  3 in {own} (2 with a score, 1 without)"
    )


@pytest.mark.parametrize("fitter", ["LinearFuser", "QualityFuser"])
def test_fits_name_the_system_and_trials_as_evaluate_does(fitter):
    # the second system lacks a score at (b, v) and holds a NaN at (a, w): each error names
    # the system by its place, as evaluate names systems, and a trial
    from bosaris_dask.errors import MissingTrialsError
    from bosaris_dask.fusion import QualityFuser
    from bosaris_dask.trials import make_quality, quality_table

    classes = np.array([[1, -1, -1], [-1, 1, -1]])
    ids = (["a", "b"], ["u", "v", "w"])
    key = make_key(*ids, classes)
    good = make_scores(*ids, classes * 2.0 + 0.1)
    values = classes * 2.0 + 0.2
    mask = np.ones(classes.shape, bool)
    mask[1, 1] = False
    holed = make_scores(*ids, values, mask)
    values[0, 2] = np.nan
    broken = make_scores(*ids, values)
    quality = make_quality(quality_table(ids[0], [[1.0], [2.0]]),
                           quality_table(ids[1], [[1.0], [0.5], [2.0]]))  # fmt: skip

    def fit(second: xr.Dataset) -> None:
        if fitter == "LinearFuser":
            LinearFuser().fit([good, second], key)
        else:
            QualityFuser().fit([good, second], key, quality)

    with pytest.raises(MissingTrialsError) as missing:
        fit(holed)
    assert str(missing.value) == (
        "system-2: 1 key trial has no score, e.g. (b, v) (allow_missing drops them)"
    )
    with pytest.raises(ScoreError) as nonfinite:
        fit(broken)
    assert str(nonfinite.value) == "system-2: 1 trial has a non-finite score, e.g. (a, w)"


def test_a_score_file_given_as_the_key_is_asked_about(tmp_path):
    """Its first score, read as a label, was refused without a word on what happened (audit:
    --key and --scores swapped)."""
    from bosaris_dask.cli import main

    (tmp_path / "s.txt").write_text("a x -3.5\na y 1.25\n")
    (tmp_path / "k.txt").write_text("a x target\na y nontarget\n")
    with pytest.raises(ParseError, match=r"s.txt:1: label '-3.5' is not one of .* \(any "
                       r"case\): a score file given as the key\?"):  # fmt: skip
        main(["evaluate", "--key", str(tmp_path / "s.txt"), "--scores", str(tmp_path / "k.txt"),
              "--debug"])  # fmt: skip
