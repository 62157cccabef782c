"""The ``bosaris-dask`` command as users run it: real subprocesses and in-process ``main``."""

from __future__ import annotations

import contextlib
import io as io_module
import json
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from bosaris_dask import io, metrics
from bosaris_dask.cli import main
from bosaris_dask.simulate import simulate
from bosaris_dask.trials import make_key, make_scores


@pytest.fixture(scope="module")
def small_set(tmp_path_factory):
    """A 60 x 80 simulated key and two systems as zarr stores."""
    out = tmp_path_factory.mktemp("sim")
    assert (
        main(
            [
                "simulate",
                "--n-models",
                "60",
                "--n-segments",
                "80",
                "--systems",
                "2",
                "--target-rate",
                "0.05",
                "--out-dir",
                str(out),
                "-q",
                "--cluster",
                "threads",
            ]
        )
        == 0
    )
    return out  # fmt: skip


def _process(*args: str) -> subprocess.CompletedProcess:
    """The command in a real process: its exit status and what it prints, as a shell sees them."""
    return subprocess.run(
        [sys.executable, "-m", "bosaris_dask.cli", *args], capture_output=True, text=True
    )


def _run(*args: str) -> subprocess.CompletedProcess:
    """The command run by ``main`` in this process (a fresh interpreter's import costs seconds
    on a slow machine): its status (argparse's exits too) and what it prints."""
    out, err = io_module.StringIO(), io_module.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(args))
        except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
            status = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(args, status, out.getvalue(), err.getvalue())


def test_simulate_writes_what_it_says(small_set):
    key = io.read(small_set / "key.zarr")
    assert key.attrs["bosaris_kind"] == "key" and "model_label" in key.coords
    expected_key, expected = simulate(60, 80, systems=2, target_rate=0.05, seed=0)
    for k in (1, 2):
        stored = io.read(small_set / f"system-{k}.zarr")
        assert stored.score.dtype == np.float32
        np.testing.assert_array_equal(stored.score.values, expected[k - 1].score.values)
    np.testing.assert_array_equal(key.trial_mask.values, expected_key.trial_mask.values)


def test_evaluate_json_equals_the_api(small_set, tmp_path):
    out = tmp_path / "r.json"
    rc = main(["evaluate", "--key", str(small_set / "key.zarr"),
               "--scores", str(small_set / "system-1.zarr"),
               "--scores", str(small_set / "system-2.zarr"),
               "--prior", "0.5", "--prior", "0.1", "--prior", "0.01", "--json", str(out), "-q",
               "--cluster", "threads"])  # fmt: skip
    assert rc == 0
    doc = json.loads(out.read_text())
    key = io.read(small_set / "key.zarr")
    api = metrics.evaluate(
        [io.read(small_set / f"system-{k}.zarr") for k in (1, 2)], key, priors=[0.5, 0.1, 0.01]
    )
    ops = metrics.operating_points(api)
    assert [s["name"] for s in doc["systems"]] == ["system-1", "system-2"]
    for k, system in enumerate(doc["systems"]):
        assert system["n_target"] == int(api.n_target[k])
        assert system["eer"] == float(api.eer[k]) and system["min_cllr"] == float(api.min_cllr[k])
        assert [op["prior"] for op in system["operating_points"]] == [0.5, 0.1, 0.01]
        for j, op in enumerate(system["operating_points"]):
            assert op["act_dcf"] == float(ops.act_dcf[k, j])
            assert op["min_pfa"] == float(ops.min_pfa[k, j])
            assert set(op) == {"prior", "act_dcf", "min_dcf", "act_dcf_raw", "min_dcf_raw",
                               "act_pmiss", "act_pfa", "min_pmiss", "min_pfa", "p_target",
                               "c_miss", "c_fa", "act_threshold", "min_threshold", "act_cdet",
                               "min_cdet"}  # fmt: skip


def test_evaluate_prints_a_table(small_set):
    result = _run("evaluate", "--key", str(small_set / "key.zarr"),
                  "--scores", str(small_set / "system-1.zarr"), "--cluster", "threads")  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["system", "targets", "non-targets"]
    assert lines[1].split()[0] == "system-1"
    assert "P=0.001" in result.stdout and "passes over the data" in result.stderr


def test_missing_input_is_one_line_and_status_1(tmp_path):
    result = _process("evaluate", "--key", str(tmp_path / "nope.zarr"), "--scores", "x.zarr")
    assert result.returncode == 1
    assert result.stderr.strip().endswith("nope.zarr: no such file or store")
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_missing_scores_error_and_allow_missing(tmp_path):
    key = make_key(["a", "b"], ["x", "y"], [[1, -1], [-1, 1]])
    scores = make_scores(["a", "b"], ["x", "y"], [[2.0, 0.0], [0.0, 1.0]],
                         [[True, True], [True, False]])  # fmt: skip
    io.write(key, tmp_path / "key.zarr")
    io.write(scores, tmp_path / "s.zarr")
    args = ["evaluate", "--key", str(tmp_path / "key.zarr"), "--scores", str(tmp_path / "s.zarr"),
            "--cluster", "threads"]  # fmt: skip
    result = _run(*args)
    assert result.returncode == 1
    assert "1 key trial has no score, e.g. (b, y)" in result.stderr
    result = _run(*args, "--allow-missing", "--json", str(tmp_path / "r.json"))
    assert result.returncode == 0, result.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["systems"][0]["n_missing"] == 1 and doc["systems"][0]["n_target"] == 1


def test_bad_prior_is_rejected():
    result = _process("evaluate", "--key", "k", "--scores", "s", "--prior", "1.5")
    assert result.returncode == 2 and "strictly between 0 and 1" in result.stderr


def test_demo_says_where_outputs_are(tmp_path):
    result = _run(
        "demo", "--out-dir", str(tmp_path / "demo"), "--n-models", "40", "--n-segments", "50"
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads((tmp_path / "demo" / "results.json").read_text())
    assert len(doc["systems"]) == 3
    assert f"Outputs in {tmp_path / 'demo'}/" in result.stdout
    for name in ("key.zarr", "system-1.zarr", "system-2.zarr", "system-3.zarr"):
        assert (tmp_path / "demo" / name).is_dir()


def _table(path) -> tuple[list[str], list[list[str]]]:
    """A tab-separated table's header and rows, read by hand."""
    header, *rows = (line.split("\t") for line in path.read_text().splitlines())
    return header, rows


def test_demo_condition_tables_give_each_speaker_one_gender_and_segments_a_source(tmp_path):
    # the demo's tables had only each id's speaker: nothing to split on with --by
    out = tmp_path / "demo"
    args = ("demo", "--out-dir", str(out), "--n-models", "40", "--n-segments", "60")
    assert _run(*args).returncode == 0
    (m_head, m_rows), (s_head, s_rows) = _table(out / "models.tsv"), _table(out / "segments.tsv")
    assert m_head == ["model", "speaker", "gender"]
    assert s_head == ["segment", "speaker", "gender", "source"]
    key = io.read(out / "key.zarr")
    for rows, side in ((m_rows, "model"), (s_rows, "segment")):
        ids, speakers = key[side].values.tolist(), key[f"{side}_label"].values.tolist()
        assert [r[0] for r in rows] == ids and [r[1] for r in rows] == speakers
    gender = {}
    for row in m_rows + s_rows:
        assert gender.setdefault(row[1], row[2]) == row[2], row  # one gender per speaker
    assert set(gender.values()) == {"f", "m"}
    assert {r[3] for r in s_rows} == {"tel", "mic"}
    before = [(out / n).read_bytes() for n in ("models.tsv", "segments.tsv")]
    assert _run(*args).returncode == 0  # the same seed, the same tables
    assert [(out / n).read_bytes() for n in ("models.tsv", "segments.tsv")] == before
    # targets are trials of one speaker, so every one is in the same-gender condition
    report = tmp_path / "by.json"
    result = _run("evaluate", "--key", str(out / "key.zarr"), "--scores",
                  str(out / "system-1.zarr"), "--conditions", str(out / "models.tsv"),
                  "--conditions", str(out / "segments.tsv"), "--by", "same.gender",
                  "--json", str(report))  # fmt: skip
    assert result.returncode == 0, result.stderr
    conditions = json.loads(report.read_text())["systems"][0]["conditions"]
    counts = {c["by"]["same.gender"]: (c["n_target"], c["n_nontarget"]) for c in conditions}
    n_target = int((key.trial_mask.values == 1).sum())
    cross = sum(gender[m[1]] != gender[s[1]] for m in m_rows for s in s_rows)
    assert counts == {"same": (n_target, 40 * 60 - n_target - cross), "different": (0, cross)}


def test_info_reports_counts(small_set):
    result = _run("info", str(small_set / "key.zarr"))
    assert result.returncode == 0, result.stderr
    key = io.read(small_set / "key.zarr")
    n_tar = int((key.trial_mask.values == 1).sum())
    assert f"({n_tar:,} targets, {60 * 80 - n_tar:,} non-targets)" in result.stdout
    assert "derived from class labels" in result.stdout


@pytest.mark.parametrize("option", ["--json", "--model-out"])
def test_an_output_that_would_replace_a_directory_is_refused_before_the_work(
    small_set, tmp_path, capsys, option
):
    # a folder (or a zarr store) given where a JSON file goes was refused only once the
    # evaluation had run and printed its table
    from bosaris_dask.cli import main

    key, scores = str(small_set / "key.zarr"), str(small_set / "system-1.zarr")
    command = ["evaluate"] if option == "--json" else ["calibrate"]
    for target, says in [
        (tmp_path / "results", "it is a directory that is not a zarr store"),
        (small_set / "system-2.zarr", "it is a zarr store (a directory)"),
    ]:
        target.mkdir(exist_ok=True)
        argv = [*command, "--key", key, "--scores", scores, option, str(target), "-q"]
        assert main([*argv, "--cluster", "threads"]) == 1
        captured = capsys.readouterr()
        assert captured.out == "" and f"cannot write {target}: {says}" in captured.err
    assert (small_set / "system-2.zarr" / "zarr.json").exists()  # left whole


def test_info_of_an_id_class_table_says_what_it_may_be(tmp_path, capsys):
    # an 'id class' table reads as an ndx of one trial per id: info said only "kind: ndx"
    from bosaris_dask.cli import main

    table = tmp_path / "enrol_classes.txt"
    table.write_text("".join(f"e{i} spk{i % 3}\n" for i in range(9)))
    assert main(["info", str(table)]) == 0
    out = capsys.readouterr().out
    assert "kind:        ndx" in out and "trials:      9\n" in out
    assert "if this is an 'id class' table, it is read by --enrol-classes/--test-classes" in out
    trials = tmp_path / "trials.txt"  # a list with a model of two trials: no such note
    trials.write_text("m1 s1\nm1 s2\nm2 s1\n")
    assert main(["info", str(trials)]) == 0
    assert "note:" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "command",
    ["convert", "info", "simulate", "evaluate", "plot", "calibrate", "fuse", "apply", "demo"],
)
def test_every_subcommand_has_help(command):
    result = _run(command, "--help")
    assert result.returncode == 0 and "usage: bosaris-dask " + command in result.stdout


def test_help_lists_commands():
    out = _process("--help").stdout
    for command in ("convert", "info", "simulate", "evaluate", "demo"):
        assert command in out


def test_calibrate_linear_writes_model_and_applies_it(small_set, tmp_path):
    from bosaris_dask.calibration import LinearCalibrator

    key, s2 = str(small_set / "key.zarr"), str(small_set / "system-2.zarr")
    model, out = tmp_path / "cal.json", tmp_path / "cal.zarr"
    result = _run("calibrate", "--key", key, "--scores", s2, "--train-prior", "0.1",
                  "--model-out", str(model), "--apply", s2, "--out", str(out),
                  "--cluster", "threads")  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(model.read_text())
    assert {"kind", "train_prior", "weights", "offset", "objective", "iterations", "passes"} <= set(
        doc
    )
    assert doc["kind"] == "linear_calibration" and doc["train_prior"] == 0.1
    api = LinearCalibrator(0.1).fit(io.read(s2), io.read(key))
    np.testing.assert_allclose(doc["weights"], api.weights_, rtol=1e-10)
    calibrated = io.read(out)
    expected = doc["offset"] + doc["weights"][0] * io.read(s2).score.values.astype(np.float64)
    np.testing.assert_allclose(calibrated.score.values, expected, rtol=1e-12)


def test_calibrate_pav_gives_act_equal_min_on_itself(small_set, tmp_path):
    key, s1 = str(small_set / "key.zarr"), str(small_set / "system-1.zarr")
    result = _run("calibrate", "--method", "pav", "--key", key, "--scores", s1, "--model-out",
                  str(tmp_path / "pav.json"), "--apply", s1, "--out", str(tmp_path / "p.zarr"),
                  "--cluster", "threads")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "pav.json").read_text())["kind"] == "pav"
    ds = metrics.evaluate(io.read(tmp_path / "p.zarr"), io.read(key), priors=[0.5, 0.1])
    ds = metrics.operating_points(ds)
    # pseudo-counts shift the map slightly: equal up to a small tolerance, never below minDCF
    assert np.all(ds.act_dcf.values >= ds.min_dcf.values - 1e-12)
    np.testing.assert_allclose(ds.act_dcf.values, ds.min_dcf.values, atol=0.02)


def test_fuse_then_apply_command_gives_the_same_scores(small_set, tmp_path):
    key = str(small_set / "key.zarr")
    systems = [str(small_set / f"system-{k}.zarr") for k in (1, 2)]
    model, fused = tmp_path / "fusion.json", tmp_path / "fused.zarr"
    result = _run("fuse", "--key", key, "--scores", systems[0], "--scores", systems[1],
                  "--model-out", str(model), "--apply", systems[0], "--apply", systems[1],
                  "--out", str(fused),
                  "--cluster", "threads")  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(model.read_text())
    assert doc["kind"] == "linear_fusion" and len(doc["weights"]) == 2
    again = tmp_path / "again.zarr"
    result = _run("apply", "--model", str(model), "--scores", systems[0], "--scores",
                  systems[1], "--out", str(again), "--cluster", "threads")  # fmt: skip
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(io.read(again).score.values, io.read(fused).score.values)
    s = [io.read(p).score.values.astype(np.float64) for p in systems]
    expected = doc["offset"] + doc["weights"][0] * s[0] + doc["weights"][1] * s[1]
    np.testing.assert_allclose(io.read(fused).score.values, expected, rtol=1e-12)


def test_fuse_apply_needs_every_system(small_set, tmp_path):
    key, s1 = str(small_set / "key.zarr"), str(small_set / "system-1.zarr")
    result = _run(
        "fuse",
        "--key",
        key,
        "--scores",
        s1,
        "--scores",
        s1,
        "--model-out",
        str(tmp_path / "m.json"),
        "--apply",
        s1,
        "--out",
        str(tmp_path / "o.zarr"),
    )
    assert result.returncode == 1
    assert "--apply takes the eval scores of the same 2 systems" in result.stderr


def test_plot_command_draws_the_evaluated_curves(small_set, tmp_path):
    import matplotlib.image as mpimg

    out = tmp_path / "det.png"
    result = _run("plot", "det", "--key", str(small_set / "key.zarr"), "--scores",
                  str(small_set / "system-1.zarr"), "--window", "low_fa", "--out", str(out),
                  "--cluster", "threads")  # fmt: skip
    assert result.returncode == 0, result.stderr
    image = mpimg.imread(out)
    assert image.ndim == 3 and image.shape[0] > 300 and image.std() > 0.05  # a drawn figure


def test_evaluate_plots_writes_the_standard_set(small_set, tmp_path):
    rc = main(["evaluate", "--key", str(small_set / "key.zarr"), "--scores",
               str(small_set / "system-1.zarr"), "--plots-dir", str(tmp_path / "plots"), "-q",
               "--cluster", "threads"])  # fmt: skip
    assert rc == 0
    names = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert names == ["ape.png", "det.png", "det_low_fa.png", "nbe.png"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["evaluate", "--key", "k", "--scores", "s", "--prior", "0.1", "0.01"],
            "argument --prior: one value per flag; repeat the flag: --prior 0.1 --prior 0.01",
        ),
        (
            [
                "fuse",
                "--key",
                "k",
                "--scores",
                "a",
                "--scores",
                "b",
                "--model-out",
                "m.json",
                "--apply",
                "a",
                "b",
                "--out",
                "o.zarr",
            ],
            "argument --apply: one value per flag; repeat the flag: --apply a --apply b",
        ),
        (
            ["calibrate", "--key", "k", "--scores", "s", "--model-out", "m.json", "--prior", "0.1"],
            "calibrate --prior is now --train-prior (--prior means evaluation operating points)",
        ),
        (
            ["simulate", "--n-models", "2", "--n-segments", "2", "--out", "d"],
            "simulate --out is now --out-dir (a directory written into; --out is always a file "
            "or store)",
        ),
        (
            ["spoof", "sasv", "--key", "k", "--scores", "s", "--convert-dir", "d"],
            "spoof --convert-dir is now --out-dir (a directory written into; --out is always a "
            "file or store)",
        ),
        (
            ["evaluate", "--key", "k", "--scores", "s", "--plots", "d"],
            "evaluate --plots is now --plots-dir (a directory)",
        ),
        (  # spelled with "=" (it was told only that the argument was unrecognized)
            ["evaluate", "--key", "k", "--scores", "s", "--plots=d"],
            "evaluate --plots is now --plots-dir (a directory)",
        ),
        (
            ["spoof", "cm", "--key", "k", "--scores", "s", "--convert-dir=d"],
            "spoof --convert-dir is now --out-dir (a directory written into; --out is always a "
            "file or store)",
        ),
        (  # a count, where score's --models is a model map
            ["simulate", "--models", "2", "--segments", "2", "--out-dir", "d"],
            "simulate --models is now --n-models (a count; score's --models is a model map)",
        ),
        (
            ["demo", "--n-models", "2", "--segments", "2"],
            "demo --segments is now --n-segments (a count, as --n-models)",
        ),
        (  # one-value options are not told to repeat (the last would win, or be refused)
            ["evaluate", "--key", "k", "--scores", "s", "--json", "a.json", "b.json"],
            "argument --json: takes one value, got 2 (a.json b.json)",
        ),
        (
            ["calibrate", "--key", "k", "--scores", "a", "b", "--model-out", "m.json"],
            "argument --scores: takes one value, got 2 (a b)",
        ),
        (  # an option evaluate does not have is not said to take one value
            ["evaluate", "--key", "k", "--scores", "s", "--names", "a", "b"],
            "unrecognized arguments: --names a b",
        ),
    ],
)
def test_old_spellings_fail_with_the_new_one(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith(f"usage: bosaris-dask {argv[0]} ")  # the subcommand's usage
    assert err[-1] == f"bosaris-dask {argv[0]}: error: {message}"


def test_calibrate_apply_takes_one_system(small_set, tmp_path):
    # refused by the parser, as a second --scores is (it was refused after parsing, status 1)
    key, s1 = str(small_set / "key.zarr"), str(small_set / "system-1.zarr")
    result = _run("calibrate", "--key", key, "--scores", s1, "--model-out",
                  str(tmp_path / "m.json"), "--apply", s1, "--apply", s1, "--out",
                  str(tmp_path / "o.zarr"), "--cluster", "threads")  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "bosaris-dask calibrate: error: --apply was given twice: it takes one input here"
    )
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("command", ["calibrate", "fuse", "calibrate --method pav"])
def test_training_with_missing_scores_needs_allow_missing(tmp_path, command):
    """The policy of evaluate: an error naming the count, unless --allow-missing drops them."""
    rng = np.random.default_rng(0)
    classes = np.where(rng.random((5, 6)) < 0.4, 1, -1)
    classes[0, :2] = [1, -1]
    mask = np.ones((5, 6), dtype=bool)
    mask[0, :2] = False  # a target and a non-target without a score
    io.write(make_key(list("abcde"), list("uvwxyz"), classes), tmp_path / "key.zarr")
    io.write(make_scores(list("abcde"), list("uvwxyz"), classes + rng.normal(size=(5, 6)), mask),
             tmp_path / "s.zarr")  # fmt: skip
    args = [*command.split(), "--key", str(tmp_path / "key.zarr"), "--scores",
            str(tmp_path / "s.zarr"), "--model-out", str(tmp_path / "m.json"), "--cluster",
            "threads"]  # fmt: skip
    result = _run(*args)
    assert result.returncode == 1 and not (tmp_path / "m.json").exists()
    assert result.stderr.splitlines()[-1] == ("bosaris-dask: error: s: 2 key trials have no "
                                              "score, e.g. (a, u), (a, v) (--allow-missing "
                                              "drops them)")  # as evaluate words it  # fmt: skip
    result = _run(*args, "--allow-missing")
    assert result.returncode == 0, result.stderr
    assert "dropped 2 key trials without a score" in result.stderr
    assert json.loads((tmp_path / "m.json").read_text())["n_missing"] == 2


@pytest.mark.parametrize(
    "command", ["calibrate", "fuse", "calibrate --method pav", "apply", "calibrate --apply"]
)
def test_training_and_applying_name_the_system_and_trial_of_a_non_finite_score(tmp_path, command):
    """As evaluate does: the file and a trial, whatever the stage that finds it."""
    classes = np.array([[1, -1, -1], [-1, 1, -1]])
    values = classes * 2.0 + np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    io.write(make_key(["a", "b"], ["u", "v", "w"], classes), tmp_path / "key.zarr")
    io.write(make_scores(["a", "b"], ["u", "v", "w"], values), tmp_path / "ok.zarr")
    values[1, 2] = np.nan
    io.write(make_scores(["a", "b"], ["u", "v", "w"], values), tmp_path / "nan.zarr")
    if command == "apply":
        fit = _run("calibrate", "--key", str(tmp_path / "key.zarr"), "--scores",
                   str(tmp_path / "ok.zarr"), "--model-out", str(tmp_path / "m.json"),
                   "--cluster", "threads")  # fmt: skip
        assert fit.returncode == 0, fit.stderr
        args = ["apply", "--model", str(tmp_path / "m.json"), "--scores",
                str(tmp_path / "nan.zarr"), "--out", str(tmp_path / "o.zarr")]  # fmt: skip
    elif command == "calibrate --apply":  # the scores applied to, after a sound fit
        args = ["calibrate", "--key", str(tmp_path / "key.zarr"), "--scores",
                str(tmp_path / "ok.zarr"), "--model-out", str(tmp_path / "m2.json"), "--apply",
                str(tmp_path / "nan.zarr"), "--out", str(tmp_path / "o.zarr")]  # fmt: skip
    else:
        systems = ["--scores", str(tmp_path / "ok.zarr")] * (command == "fuse")
        args = [*command.split(), "--key", str(tmp_path / "key.zarr"), *systems, "--scores",
                str(tmp_path / "nan.zarr"), "--model-out", str(tmp_path / "m2.json")]  # fmt: skip
    result = _run(*args, "--cluster", "threads")
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        "bosaris-dask: error: nan: 1 trial has a non-finite score, e.g. (b, w)"
    )
    assert not (tmp_path / "o.zarr").exists()
    assert command == "calibrate --apply" or not (tmp_path / "m2.json").exists()


@pytest.mark.parametrize("command", ["calibrate", "fuse", "calibrate --method pav"])
def test_training_on_a_key_without_targets_names_the_key_or_system(tmp_path, command):
    io.write(make_key(["a"], ["u", "v"], np.array([[-1, -1]])), tmp_path / "key.zarr")
    io.write(make_scores(["a"], ["u", "v"], np.array([[0.5, -1.0]])), tmp_path / "sys.zarr")
    result = _run(*command.split(), "--key", str(tmp_path / "key.zarr"), "--scores",
                  str(tmp_path / "sys.zarr"), "--model-out", str(tmp_path / "m.json"),
                  "--cluster", "threads")  # fmt: skip
    assert result.returncode == 1
    named = "sys: need both" if "pav" in command else f"{tmp_path / 'key.zarr'}: fitting needs"
    assert f"error: {named}" in result.stderr.splitlines()[-1]

    # a key with both classes whose scores lack one: the key's counts, not the key, named
    io.write(make_key(["a"], ["u", "v"], np.array([[1, -1]])), tmp_path / "key2.zarr")
    io.write(make_scores(["a"], ["u", "v"], np.array([[0.0, -1.0]]), np.array([[False, True]])),
             tmp_path / "sys2.zarr")  # fmt: skip
    result = _run(*command.split(), "--key", str(tmp_path / "key2.zarr"), "--scores",
                  str(tmp_path / "sys2.zarr"), "--model-out", str(tmp_path / "m.json"),
                  "--allow-missing", "--cluster", "threads")  # fmt: skip
    assert result.returncode == 1
    said = ("sys2: need both targets and non-targets, found 0 targets and 1 non-targets among "
            "the key's scored trials (1 key trial without a score)" if "pav" in command else
            "fitting needs target and non-target trials with scores; found 0 targets and 1 "
            "non-targets, of the key's 1 targets and 1 non-targets: the others have no score in "
            "sys2 (--allow-missing dropped them)")  # fmt: skip
    assert result.stderr.splitlines()[-1] == f"bosaris-dask: error: {said}"


def test_apply_says_which_model_takes_quality_and_what_an_evaluation_json_is(tmp_path):
    io.write(make_scores(["a"], ["u", "v"], np.array([[0.5, -1.0]])), tmp_path / "s.zarr")
    (tmp_path / "q.json").write_text(json.dumps({
        "kind": "quality_fusion", "prior": 0.5, "weights": [1.0], "offset": 0.0,
        "quality_matrix": [[0.0]]}))  # fmt: skip
    (tmp_path / "r.json").write_text(json.dumps({"systems": [{"name": "x"}], "passes": 2}))
    (tmp_path / "l.json").write_text(
        json.dumps({"kind": "linear_calibration", "prior": 0.5, "weights": [1.0], "offset": 0.0})
    )
    common = ["--scores", str(tmp_path / "s.zarr"), "--out", str(tmp_path / "o.zarr")]
    cases = {
        "q.json": ([], "q.json is a quality fusion: give the scores' quality measures"),
        "r.json": ([], "r.json: this is an evaluation's results (evaluate --json), not a model"),
        "l.json": (["--quality", "q.zarr"], "l.json is a linear calibration, which takes "
                   "no quality measures: leave out --quality"),
    }  # fmt: skip
    for model, (extra, said) in cases.items():
        result = _run("apply", "--model", str(tmp_path / model), *common, *extra)
        assert result.returncode == 1 and said in result.stderr, result.stderr
    assert not (tmp_path / "o.zarr").exists()


def test_one_value_column_is_not_both_the_labels_and_the_scores(tmp_path, capsys):
    # 'm s 1' lines given as key and as scores: the labels scored themselves (EER 0)
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("".join(f"m{i} s{j} {int(i == j)}\n" for i in range(4) for j in range(5)))
    assert main(["evaluate", "--key", str(pairs), "--scores", str(pairs), "-q"]) == 1
    assert "--key and --scores are the same file" in capsys.readouterr().err
    both = tmp_path / "vox.score"  # a score and a label column: its own key, as before
    both.write_text("".join(f"m{i} s{j} {0.1 * (i + j)!r} {'target' if i == j else 'nontarget'}\n"
                            for i in range(4) for j in range(5)))  # fmt: skip
    assert main(["evaluate", "--key", str(both), "--scores", str(both), "-q"]) == 0


def test_an_output_in_a_missing_folder_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    from bosaris_dask.cli import scoring

    def no_evaluation(*args, **kwargs):
        raise AssertionError("evaluated before the output was checked")

    monkeypatch.setattr(scoring, "_evaluate", no_evaluation)
    scores = tmp_path / "s.score"
    scores.write_text("m1 s1 0.5 target\nm1 s2 -0.5 nontarget\n")
    json_out = tmp_path / "missing" / "r.json"
    assert main(["evaluate", "--scores", str(scores), "--json", str(json_out), "-q"]) == 1
    assert f"cannot write {json_out}: directory {json_out.parent} does not exist" in (
        capsys.readouterr().err)  # fmt: skip


def test_an_output_suffix_that_names_no_format_is_refused_before_training(
    tmp_path, capsys, monkeypatch
):
    from bosaris_dask.cli import training

    def no_fit(*args, **kwargs):
        raise AssertionError("trained before the output was checked")

    monkeypatch.setattr(training, "_key_and_systems", no_fit)  # calibrate's reader
    argv = ["calibrate", "--scores", "s.score", "--model-out", str(tmp_path / "m.json"),
            "--apply", "s.score", "--out", str(tmp_path / "o.csv"), "-q"]  # fmt: skip
    assert main(argv) == 1
    assert "o.csv: cannot tell the format to write from the suffix '.csv'" in (
        capsys.readouterr().err)  # fmt: skip


def test_a_batch_log_gets_a_line_per_pass(tmp_path, capsys):
    # no terminal (a batch job's log): no progress bar, so each pass says when it is done
    scores = tmp_path / "s.score"
    scores.write_text("".join(f"m{i} s{i} {0.1 * i!r} {'target' if i % 3 else 'nontarget'}\n"
                              for i in range(30)))  # fmt: skip
    assert main(["evaluate", "--scores", str(scores), "--cluster", "threads"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"^pass 1: 1 chunk, done in \d+\.\d s$", err, re.MULTILINE), err
    assert main(["evaluate", "--scores", str(scores), "--cluster", "threads", "-q"]) == 0
    assert "pass 1" not in capsys.readouterr().err


def test_a_long_pass_says_it_is_still_running(tmp_path, capsys, monkeypatch):
    # a batch log was silent for as long as a pass took (minutes at scale)
    from bosaris_dask.passes import runner

    monkeypatch.setattr(runner, "RUNNING_S", 0.05)
    real = runner.finalize  # (made slow: it runs inside the pass's timing)

    def finalize_later(*args, **kwargs):
        time.sleep(0.3)
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "finalize", finalize_later)
    scores = tmp_path / "s.score"
    scores.write_text("".join(f"m{i} s{i} {0.1 * i!r} {'target' if i % 3 else 'nontarget'}\n"
                              for i in range(30)))  # fmt: skip
    assert main(["evaluate", "--scores", str(scores), "--cluster", "threads"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"^pass 1: 1 chunk, running for 0 s$", err, re.MULTILINE), err
    assert main(["evaluate", "--scores", str(scores), "--cluster", "threads", "-q"]) == 0
    assert "running" not in capsys.readouterr().err


def test_a_pipe_cannot_be_its_own_key(tmp_path, capsys):
    import os

    fifo = tmp_path / "scores.fifo"
    os.mkfifo(fifo)
    assert main(["evaluate", "--scores", str(fifo), "-q"]) == 1
    assert f"--key is needed: {fifo} is a pipe" in capsys.readouterr().err


def test_info_describes_quality_objects_and_one_sides_tables(tmp_path, capsys):
    from bosaris_dask.trials import make_quality, quality_table

    models = quality_table(["a", "b", "c"], [[1.0, 2.0], [3.0, 4.5], [0.5, 1.0]],
                           measures=["dur", "snr"])  # fmt: skip
    segments = quality_table(["u", "v"], [[1.0], [2.0]])
    io.write(make_quality(models, segments), tmp_path / "q.zarr")
    io.write_quality(models, tmp_path / "m.h5")
    io.write_quality(segments, tmp_path / "s.txt")
    assert main(["info", str(tmp_path / "q.zarr")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == [
        "kind:        quality",
        "model ids:   a, b, c (3 ids)",
        "  dur          min 0.5, mean 1.5, max 3",
        "  snr          min 1, mean 2.5, max 4.5",
        "segment ids: u, v (2 ids)",
        "  measure 0    min 1, mean 1.5, max 2",
    ]
    for name, ids in (("m.h5", "a, b, c (3 ids)"), ("s.txt", "u, v (2 ids)")):
        assert main(["info", str(tmp_path / name)]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[1:3] == [
            "kind:        quality table of one side (--model-quality or --segment-quality)",
            f"ids:         {ids}",
        ]
    # a row of NaN marks an id without quality: counted, and left out of the ranges (all nan)
    (tmp_path / "nan.txt").write_text("2\nm1 0.5 1\nm2 nan nan\nm3 1.5 3\n")
    assert main(["info", str(tmp_path / "nan.txt")]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == [
        "ids:         m1, m2, m3 (3 ids, 1 without quality: NaN rows)",
        "  measure 0    min 0.5, mean 1, max 1.5",
        "  measure 1    min 1, mean 2, max 3",
    ]
    (tmp_path / "bad.txt").write_text("a b c d e\n")  # no trial file, no quality table
    assert main(["info", str(tmp_path / "bad.txt")]) == 1
    assert "cannot tell the kind of file" in capsys.readouterr().err
    (tmp_path / "short.txt").write_text("2\nu 1\n")  # q = 2 but one value: no quality table
    assert main(["info", str(tmp_path / "short.txt")]) == 1
    assert "holds a quality table" not in capsys.readouterr().err
    io.write_quality(models, tmp_path / "m.mat")
    for name in ("m.h5", "m.mat", "s.txt"):  # a quality table where trials are wanted
        path = str(tmp_path / name)
        assert main(["evaluate", "--key", path, "--scores", path]) == 1
        assert capsys.readouterr().err.strip() == (
            f"bosaris-dask: error: {path}: holds a quality table, one side's, not trials (read it "
            "with bd.read_quality and write it with bd.write_quality; fuse and apply take it as "
            "--model-quality or --segment-quality)"
        )
    # convert takes trials: its error said to use --model-quality, an option it does not have
    assert main(["convert", str(tmp_path / "s.txt"), str(tmp_path / "s.h5")]) == 1
    assert "write it with bd.write_quality" in capsys.readouterr().err


def test_convert_of_quality_stores_says_which_sides_it_wrote(tmp_path, capsys):
    # a one-sided quality store: KeyError 'segment' after the output was written (rc 1), and
    # "quality of 3 x 2" for two sides, a shape quality tables do not have
    from bosaris_dask.trials import make_quality, quality_table

    models = quality_table(["a", "b", "c"], [[1.0], [2.0], [3.0]])
    segments = quality_table(["u", "v"], [[1.0], [2.0]])
    io.write(make_quality(model_quality=models), tmp_path / "one.zarr")
    io.write(make_quality(models, segments), tmp_path / "two.zarr")
    assert main(["convert", str(tmp_path / "one.zarr"), str(tmp_path / "one-again.zarr")]) == 0
    assert main(["convert", str(tmp_path / "two.zarr"), str(tmp_path / "two-again.zarr")]) == 0
    err = capsys.readouterr().err
    assert f"wrote quality of 3 model ids to {tmp_path / 'one-again.zarr'}" in err
    assert f"wrote quality of 3 model ids and 2 segment ids to {tmp_path / 'two-again.zarr'}" in err
    back = io.read(tmp_path / "one-again.zarr")
    assert back.model_quality.values.ravel().tolist() == [1.0, 2.0, 3.0]


def test_a_text_layout_for_inputs_none_of_which_is_text_is_refused(tmp_path, capsys):
    # --format was ignored: convert key.zarr out.tsv --format nist wrote BOSARIS lines
    key = io.write(make_key(["m"], ["a", "b"], [[1, -1]]), tmp_path / "key.zarr")
    scores = io.write(make_scores(["m"], ["a", "b"], [[1.0, -1.0]]), tmp_path / "s.zarr")
    text = io.write(make_scores(["m"], ["a", "b"], [[1.0, -1.0]]), tmp_path / "s.txt")
    assert main(["convert", str(key), str(tmp_path / "k.tsv"), "--format", "nist"]) == 1
    err = capsys.readouterr().err
    assert "--format nist is the layout of text inputs" in err and "key.zarr is not" in err
    base = ["evaluate", "--key", str(key), "-q"]
    assert main([*base, "--scores", str(scores), "--format", "bosaris"]) == 1
    assert main([*base, "--scores", str(scores), "--key-format", "nist"]) == 1
    assert "--key-format nist" in capsys.readouterr().err
    assert main([*base, "--scores", str(text), "--format", "bosaris"]) == 0  # a text input


def test_a_write_option_of_another_format_is_one_clear_error(tmp_path):
    from bosaris_dask.errors import OptionError

    key = make_key(["m"], ["a"], [[1]])
    with pytest.raises(OptionError, match=r"chunk_mb is an option of zarr and HDF5 writes, not "
                                          r"of a MAT file"):  # fmt: skip
        io.write(key, tmp_path / "k.mat", chunk_mb=4)
    with pytest.raises(OptionError, match=r"no write option 'header_line' \(a text write takes "
                                          r"header\)"):  # fmt: skip
        io.write(key, tmp_path / "k.txt", header_line=True)
    assert not list(tmp_path.iterdir())


def test_a_text_layout_that_lays_out_nothing_is_refused(tmp_path, capsys):
    key = io.write(make_key(["m"], ["a", "b"], [[1, -1]]), tmp_path / "key.txt")
    stored = io.write(make_scores(["m"], ["a", "b"], [[1.0, -1.0]]), tmp_path / "s.zarr")
    base = ["evaluate", "--key", str(key), "--scores", str(stored), "-q"]
    # --format for the scores alone once --key-format lays out the key: the scores are zarr
    assert main([*base, "--key-format", "bosaris", "--format", "bosaris"]) == 1
    assert "--format bosaris is the layout of text inputs" in capsys.readouterr().err
    assert main([*base, "--key-format", "bosaris"]) == 0
    wespeaker = tmp_path / "w.score"
    wespeaker.write_text("m a 1.0 target\nm b -1.0 nontarget\n")
    argv = ["evaluate", "--scores", str(wespeaker), "--key-format", "nist", "-q"]
    assert main(argv) == 1  # no key: the scores are their own key, laid out by --format
    assert "none is given" in capsys.readouterr().err


def test_evaluate_with_nothing_to_read_says_what_to_give(capsys):
    # it said "--key is needed: it selects the trials to score from embeddings", with none given
    assert main(["evaluate", "-q"]) == 1
    assert capsys.readouterr().err == (
        "bosaris-dask: error: nothing to read: give --scores (a file with a label column is its "
        "own key; else --key too), or --enrol and --test with --key\n"
    )


def test_a_folder_option_naming_a_file_is_refused_before_the_work(tmp_path, capsys):
    # simulate wrote nothing and said "afile: File exists" after simulating; --plots-dir said
    # "cannot create the plot directory" once the evaluation was done
    afile = tmp_path / "afile"
    afile.write_text("mine")
    argv = ["simulate", "--n-models", "4", "--n-segments", "5", "--out-dir", str(afile), "-q"]
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        f"bosaris-dask: error: --out-dir {afile} is a file, not a directory\n"
    )
    assert afile.read_text() == "mine"


def test_a_folder_in_a_zarr_store_is_refused_before_the_work(tmp_path, capsys):
    # --plots-dir A.zarr wrote its images into the input store, which then read as no store
    main(["simulate", "--n-models", "4", "--n-segments", "5", "--systems", "1", "--out-dir",
          str(tmp_path), "-q"])  # fmt: skip
    capsys.readouterr()  # (simulate's warning of its target rate)
    store = tmp_path / "system-1.zarr"
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    argv = ["evaluate", "--key", str(tmp_path / "key.zarr"), "--scores", str(store), "-q"]
    for folder, where in ((store, "is the"), (store / "plots", "is inside the")):
        assert main([*argv, "--plots-dir", str(folder)]) == 1
        assert capsys.readouterr().err == (
            f"bosaris-dask: error: --plots-dir {folder} {where} zarr store {store}: what is "
            "written there would break the store; give a folder of its own\n"
        )
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before
    assert main([*argv, "--plots-dir", str(tmp_path / "plots")]) == 0


def test_bootstrap_counts_out_of_range_are_usage_errors_alike(capsys):
    # 0 was "must be a positive integer" (exit 2), 1 "from 2 to 1048576" (exit 1, after reading)
    for count in ("0", "1", "1048577"):
        with pytest.raises(SystemExit) as info:
            main(["evaluate", "--scores", "s.txt", "--bootstrap", count])
        assert info.value.code == 2
        assert (f"argument --bootstrap: must be an integer from 2 to 1048576: {count}"
                in capsys.readouterr().err)  # fmt: skip


def test_every_option_of_simulate_and_demo_says_what_it_is(capsys):
    for command in ("simulate", "demo"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        for option in ("--n-models N  ", "--n-segments N  ", "--seed SEED  "):
            assert re.search(re.escape(option) + r"\s*\w", text), (command, option)


def test_quiet_and_debug_before_the_command_are_the_commands(tmp_path, capsys):
    # "bosaris-dask -q evaluate ..." said "unrecognized arguments: -q" under evaluate's usage
    (tmp_path / "s.txt").write_text("a x 0.5 target\nb x -1.5 nontarget\n")
    assert main(["-q", "evaluate", "--scores", str(tmp_path / "s.txt")]) == 0
    assert main(["evaluate", "--scores", str(tmp_path / "s.txt"), "-q"]) == 0
    out = capsys.readouterr().out
    assert out and out[: len(out) // 2] == out[len(out) // 2 :]  # the same table twice


def test_a_demo_too_small_to_evaluate_says_so_in_its_own_options(tmp_path, capsys):
    # it said "target_rate 0.005: every trial would be a target", an option demo does not take
    argv = ["demo", "--n-models", "1", "--n-segments", "1", "--out-dir", str(tmp_path / "d"), "-q"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "bosaris-dask: error: --n-models 1 --n-segments 1: too few ids for a demo"
    )
    assert err.rstrip().endswith("the default is 200 x 500")


def test_convert_of_an_hdf5_key_onto_itself_succeeds(tmp_path):
    """It wrote the file, then counted the replaced input's targets for its note and failed
    (rc 1, "the file was replaced or changed ...": audit); the note still comes, from the
    input as read."""
    path = str(tmp_path / "k.h5")
    key = make_key(["m1", "m2"], ["a", "b", "c"], [[1, -1, 0], [0, 1, -1]])
    io.write(key, path)
    result = _run("convert", path, path)
    assert result.returncode == 0, result.stderr
    assert f"wrote key of 2 x 3 to {path}" in result.stderr
    assert io.read(path).trial_mask.values.tolist() == key.trial_mask.values.tolist()
    only = str(tmp_path / "only.h5")  # targets only: the note, said from the input
    io.write(make_key(["m1"], ["a", "b"], [[1, 1]]), only)
    result = _run("convert", only, only)
    assert result.returncode == 0 and "only.h5 has no non-targets" in result.stderr


@pytest.mark.parametrize("stop", ["interrupt", "terminate"])
def test_a_stop_that_leaves_a_coroutine_unawaited_says_only_that_it_stopped(monkeypatch, stop):
    """A SIGTERM landing inside zarr's synchronous wrapper left a coroutine it had made and not
    awaited: Python's 'coroutine ... was never awaited' RuntimeWarning followed the line that
    says the run was stopped (a CI run caught it)."""
    import gc
    import warnings

    import bosaris_dask.cli as cli
    from bosaris_dask.cli.termination import Terminated

    async def pending():
        return None

    def run(args):
        made = pending()  # noqa: F841  (made, never awaited: as zarr's wrapper leaves one)
        raise KeyboardInterrupt if stop == "interrupt" else Terminated

    monkeypatch.setattr(cli, "_run", run)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cli.main(["info", "x"]) == (130 if stop == "interrupt" else 143)
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]
