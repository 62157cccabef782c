"""The rules every ``bosaris-dask`` subcommand follows (issue 15), checked on the real parser.

- an option that takes several values is a repeatable flag with one value (``action="append"``),
  never ``nargs="+"``/``"*"``/``N``;
- ``--prior`` is an evaluation operating point; a training prior is ``--train-prior``;
- ``--out`` is a file or store; a directory is ``--out-dir`` where it holds what the command
  writes, else one of the few named for their role (:data:`DIRECTORY_OPTIONS`);
- every subcommand takes the options that choose where the work runs;
- every ``--help`` ends with at least two examples, and each of them runs (exit status 0) on
  the demo's data.
"""

from __future__ import annotations

import argparse
import shlex

import pytest

from bosaris_dask.cli import build_parser, main

CLUSTER_OPTIONS = {"--cluster", "--scheduler", "--scheduler-file", "--workers", "--memory-limit"}


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


SUBPARSERS = _subparsers()
COMMANDS = list(SUBPARSERS)


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings}


def _examples(command: str) -> list[str]:
    epilog = SUBPARSERS[command].epilog or ""
    return [line.strip() for line in epilog.splitlines() if line.strip().startswith("bosaris-dask")]


def test_the_parser_has_every_command():
    assert set(COMMANDS) == {"convert", "info", "simulate", "evaluate", "plot", "calibrate",
                             "fuse", "apply", "score", "spoof", "demo"}  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_list_options_are_repeatable_flags_with_one_value(command):
    for action in SUBPARSERS[command]._actions:
        assert action.nargs in (None, "?", 0), (command, action.option_strings, action.nargs)
    options = _options(SUBPARSERS[command])
    for name in ("--prior", "--apply", "--scores"):  # (calibrate's and spoof's take one)
        if name in options and not (command in ("calibrate", "spoof") and name != "--prior"):
            assert isinstance(options[name], argparse._AppendAction), (command, name)
    one = {"calibrate": ("--scores", "--apply"), "spoof": ("--scores",)}.get(command, ())
    for name in one:
        assert not isinstance(options[name], argparse._AppendAction), (command, name)


@pytest.mark.parametrize("command", COMMANDS)
def test_prior_is_an_operating_point_and_training_prior_is_train_prior(command):
    for action in SUBPARSERS[command]._actions:
        text = (action.help or "").lower()
        if "prior" in text and "train" in text:
            assert action.option_strings == ["--train-prior"], (command, action.option_strings)
    options = _options(SUBPARSERS[command])
    if "--prior" in options:
        assert "operating point" in options["--prior"].help
    if command in ("calibrate", "fuse"):
        assert "--train-prior" in options and "--prior" not in options


#: The directory options and what each holds: a command's output is ``--out-dir``.
DIRECTORY_OPTIONS = {
    "--out-dir": "what the command writes (simulate, demo, spoof's set of stores)",
    "--plots-dir": "evaluate's images, beside the report of --json",
    "--scratch-dir": "temporary files",
    "--set-dir": "an input: spoof's set of stores",
}


@pytest.mark.parametrize("command", COMMANDS)
def test_out_is_a_file_and_directories_are_dir_options(command):
    for action in SUBPARSERS[command]._actions:
        text = f"{action.metavar or ''} {action.help or ''}".lower()
        names = action.option_strings
        if "--out" in names:
            assert "dir" not in text, (command, action.help)
        if action.metavar == "DIR" or "director" in text:
            assert names and names[0] in DIRECTORY_OPTIONS, (command, names)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_the_cluster_options(command):
    assert CLUSTER_OPTIONS <= set(_options(SUBPARSERS[command])), command


@pytest.mark.parametrize("command", COMMANDS)
def test_every_help_ends_with_examples_of_that_command(command):
    parser = SUBPARSERS[command]
    assert parser.formatter_class is argparse.RawDescriptionHelpFormatter
    examples = _examples(command)
    assert 2 <= len(examples) <= 3, command  # "two or three examples"
    for line in examples:
        assert shlex.split(line)[1] == command, line
        parser.parse_args(shlex.split(line)[2:])  # parses as written
    assert parser.format_help().rstrip().endswith(examples[-1])


# Examples that use what others wrote: demo's data (all), the saved models (apply), the
# scores from embeddings (fuse).
NEEDS = {"apply": ["calibrate", "fuse"], "fuse": ["score"]}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A directory where the demo ran, and a record of which commands' examples ran there."""
    return tmp_path_factory.mktemp("examples"), set()


def _run_examples(command: str, workdir, monkeypatch) -> None:
    path, done = workdir
    if command in done:
        return
    for before in ["demo", *NEEDS.get(command, [])]:
        if before != command:
            _run_examples(before, workdir, monkeypatch)
    monkeypatch.chdir(path)
    for line in _examples(command):
        assert main(shlex.split(line)[1:]) == 0, line
    done.add(command)


@pytest.mark.parametrize("command", ["demo", *(c for c in COMMANDS if c != "demo")])
def test_every_example_runs_on_the_demo_data(command, workdir, monkeypatch, capsys):
    _run_examples(command, workdir, monkeypatch)
    path = workdir[0]
    wrote = {
        "demo": [
            "bosaris-demo/results.json",
            "demo-small/key.zarr",
            "bosaris-demo/models.tsv",
            "bosaris-demo/asvspoof5/sasv_scores.tsv",
        ],
        "convert": ["sys1.scores", "trials.h5", "sys1.zarr"],
        "simulate": ["sim/system-3.zarr", "sim64/system-2.zarr"],
        "evaluate": ["results.json", "ci.json"],
        "plot": ["det.png", "nbe.pdf", "tippett.png"],
        "calibrate": ["cal.json", "pav.json", "pav3.zarr", "emb-cal.json"],
        "fuse": ["fusion.json", "fusion12.json", "fused12.zarr", "emb-fusion.json"],
        "apply": ["cal2.zarr", "fused.zarr", "emb-cal.zarr"],
        "score": ["emb.zarr", "emb-as.zarr", "emb-quality.zarr"],
        "spoof": ["sasv.json", "sasv-set"],
    }
    for name in wrote.get(command, []):
        assert (path / name).exists(), name
    if command == "info":
        assert "key trials:" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["info", "bosaris-demo/key.zarr"],
    ["info", "bosaris-demo/models.tsv", "--key", "bosaris-demo/key.zarr"],
    ["info", "bosaris-demo/enrol.npz"],
])  # fmt: skip
def test_info_goes_where_the_cluster_options_say(argv, workdir, monkeypatch, capsys):
    """``info`` honours the cluster options on every path that reads data (a condition table
    with ``--key`` ignored them): an unreachable scheduler is an error, not a local run."""
    _run_examples("demo", workdir, monkeypatch)
    monkeypatch.chdir(workdir[0])
    nobody = ["--scheduler", "tcp://127.0.0.1:9", "--scheduler-timeout", "1"]
    assert main([*argv, *nobody]) == 1
    assert "cannot reach the dask scheduler at tcp://127.0.0.1:9" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# options that would be silently replaced or ignored are refused (the CLI audit)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, says",
    [
        (["calibrate", "--key", "k", "--scores", "a", "--scores", "b", "--model-out", "m.json"],
         "--scores was given twice: it takes one input here"),  # trained on b alone
        (["evaluate", "--key", "k1", "--key", "k2", "--scores", "a"], "--key was given twice"),
        (["evaluate", "--key", "k", "--scores", "a", "--bootstrap", "9", "--seed=-1"],
         "argument --seed: must be an integer >= 0: -1"),  # was numpy's traceback
        (["evaluate", "--key", "k", "--scores", "a", "--prior", "1e-320"],
         "effective prior 1e-320 is below float64's smallest normal number"),  # was nan / nan
        (["evaluate", "--key", "k", "--scores", "a", "--operating-point", "0.5:1e-320:1"],
         "has a prior below 2.23e-308"),
    ],
)  # fmt: skip
def test_the_parser_refuses_what_it_would_silently_lose(argv, says, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    assert says in capsys.readouterr().err


def test_one_value_options_given_once_and_list_options_repeated_still_parse():
    argv = "evaluate --key k --scores a --scores b --prior 0.1 --prior 0.2 --json r.json"
    args = build_parser().parse_args(argv.split())
    assert args.scores == ["a", "b"] and args.prior == [0.1, 0.2] and args.json == "r.json"
    # a setting given twice: the last wins, as job scripts override defaults ($EXTRA_ARGS)
    again = build_parser().parse_args([*argv.split(), "--worker-timeout", "3600",
                                       "--worker-timeout", "120", "--json", "s.json"])  # fmt: skip
    assert again.worker_timeout == 120 and again.json == "s.json"
    assert not hasattr(args, "_options_given")


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--ndx", "ndx.txt"], "--ndx only applies with --apply"),
        (["--out", "o.txt", "--fill-missing", "0"], "--out, --fill-missing only apply with"),
        (["--method", "pav", "--train-prior", "0.1"], "--train-prior is the prior of the "
         "objective of the linear calibration, not of PAV"),
        (["--center", "c.npy", "--norm", "z"], "--center, --norm only apply to scores from "
         "embeddings: give --enrol and --test"),
    ],
)  # fmt: skip
def test_calibrate_refuses_options_it_would_ignore(workdir, monkeypatch, capsys, extra, says):
    _run_examples("demo", workdir, monkeypatch)
    monkeypatch.chdir(workdir[0])
    base = ["calibrate", "--key", "demo-small/key.zarr", "--scores", "demo-small/system-1.zarr",
            "--model-out", "idle.json", "-q", "--cluster", "threads"]  # fmt: skip
    assert main([*base, *extra]) == 1
    assert says in capsys.readouterr().err
    assert not (workdir[0] / "idle.json").exists()  # refused before any work


def test_fuse_apply_quality_needs_a_quality_fusion(workdir, monkeypatch, capsys):
    _run_examples("demo", workdir, monkeypatch)
    monkeypatch.chdir(workdir[0])
    s = ["--scores", "demo-small/system-1.zarr", "--scores", "demo-small/system-2.zarr"]
    argv = ["fuse", "--key", "demo-small/key.zarr", *s, "--model-out", "f.json", "--apply",
            "demo-small/system-1.zarr", "--apply", "demo-small/system-2.zarr", "--out", "f.zarr",
            "--apply-quality", "q.zarr", "-q", "--cluster", "threads"]  # fmt: skip
    assert main(argv) == 1
    assert "--apply-quality is the eval set's quality for a quality fusion" in (
        capsys.readouterr().err
    )


def test_repeated_fixed_rate_targets_are_reported_once(workdir, monkeypatch, capsys):
    _run_examples("demo", workdir, monkeypatch)
    monkeypatch.chdir(workdir[0])
    argv = ["evaluate", "--key", "demo-small/key.zarr", "--scores", "demo-small/system-1.zarr",
            "--fmr", "0.01", "--fmr", "1e-2", "--fnmr", "0.05", "--fnmr", "0.05",
            "--cluster", "threads"]  # fmt: skip
    assert main(argv) == 0  # was a TypeError traceback
    rows = [x for x in capsys.readouterr().out.splitlines() if x.startswith("system-1 ")]
    assert [r.split()[1] for r in rows[-2:]] == ["0.01", "0.05"]


@pytest.mark.parametrize(
    "kind, extra, says",
    [
        ("ape", ["--prior", "0.1"], "--prior is for det and nbe plots: 'plot ape'"),
        ("cllr", ["--operating-point", "0.1:1:1"], "--operating-point is for det and nbe"),
        ("det", ["--contributions"], "--contributions is for nbe plots"),
        ("nbe", ["--window", "wide"], "--window is for det plots"),
        ("ece", ["--dr30", "miss"], "--dr30 is for det and nbe plots"),
        ("det", ["--ece-plo", "0"], "--ece-plo is for ece plots"),
    ],
)  # fmt: skip
def test_a_plot_refuses_the_options_of_other_plots(kind, extra, says, capsys):
    # each of these drew the same image as without the option
    argv = ["plot", kind, "--key", "k", "--scores", "s", *extra, "--out", "p.png"]
    assert main(argv) == 1  # refused before any input is read
    assert says in capsys.readouterr().err


def test_apply_says_how_many_systems_the_model_takes(workdir, monkeypatch, capsys):
    _run_examples("demo", workdir, monkeypatch)
    monkeypatch.chdir(workdir[0])
    s1, s2 = "demo-small/system-1.zarr", "demo-small/system-2.zarr"
    assert main(["calibrate", "--key", "demo-small/key.zarr", "--scores", s1, "--model-out",
                 "one.json", "-q", "--cluster", "threads"]) == 0  # fmt: skip
    argv = ["apply", "--model", "one.json", "--scores", s1, "--scores", s2, "--out", "o.zarr"]
    assert main([*argv, "-q"]) == 1  # was "expected 1 Scores, got 2", naming nothing
    assert ("one.json is a linear calibration of 1 system: give 1 --scores (in the order it "
            "was trained), not 2") in capsys.readouterr().err  # fmt: skip
    fuse = ["fuse", "--key", "demo-small/key.zarr", "--scores", s1, "--scores", s2,
            "--model-out", "q.json", "--quality", s1, "-q", "--cluster", "threads"]  # fmt: skip
    assert main(fuse) == 1
    assert "system-1.zarr: a scores store, not quality" in capsys.readouterr().err


def test_a_comma_separated_list_says_to_repeat_the_flag(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--scores", "s.txt", "--prior", "0.01,0.05"])
    assert ("not a number: '0.01,0.05' (one value per flag: repeat the flag for several)"
            in capsys.readouterr().err)  # fmt: skip
