"""The rules every ``bosaris-dask`` subcommand follows (issue 15), checked on the real parser.

- an option that takes several values is a repeatable flag with one value (``action="append"``),
  never ``nargs="+"``/``"*"``/``N``;
- ``--prior`` is an evaluation operating point; a training prior is ``--train-prior``;
- ``--out`` is a file or store; a directory option ends in ``-dir``;
- every subcommand takes the options that choose where the work runs;
- every ``--help`` ends with at least two examples, and each of them runs (exit status 0) on
  the demo's data.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
from pathlib import Path

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
    for name in ("--prior", "--apply", "--scores"):
        if name in options and not (command in ("calibrate", "spoof") and name == "--scores"):
            assert isinstance(options[name], argparse._AppendAction), (command, name)


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


@pytest.mark.parametrize("command", COMMANDS)
def test_out_is_a_file_and_directories_are_dir_options(command):
    for action in SUBPARSERS[command]._actions:
        text = f"{action.metavar or ''} {action.help or ''}".lower()
        names = action.option_strings
        if "--out" in names:
            assert "dir" not in text, (command, action.help)
        if action.metavar == "DIR" or "director" in text:
            assert names and names[0].endswith("-dir"), (command, names)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_the_cluster_options(command):
    assert CLUSTER_OPTIONS <= set(_options(SUBPARSERS[command])), command


@pytest.mark.parametrize("command", COMMANDS)
def test_every_help_ends_with_examples_of_that_command(command):
    parser = SUBPARSERS[command]
    assert parser.formatter_class is argparse.RawDescriptionHelpFormatter
    examples = _examples(command)
    assert len(examples) >= 2, command
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
    if command == "spoof":  # its examples read ASVspoof 5 files, not the demo's
        shutil.copytree(Path(__file__).parent / "data" / "asvspoof5", path / "asvspoof5")
    monkeypatch.chdir(path)
    for line in _examples(command):
        assert main(shlex.split(line)[1:]) == 0, line
    done.add(command)


@pytest.mark.parametrize("command", ["demo", *(c for c in COMMANDS if c != "demo")])
def test_every_example_runs_on_the_demo_data(command, workdir, monkeypatch, capsys):
    _run_examples(command, workdir, monkeypatch)
    path = workdir[0]
    wrote = {
        "demo": ["bosaris-demo/results.json", "demo-small/key.zarr", "bosaris-demo/models.tsv"],
        "convert": ["sys1.scores", "trials.h5", "sys1.zarr"],
        "simulate": ["sim/system-3.zarr", "sim64/system-2.zarr"],
        "evaluate": [
            "results.json",
            "plots/det.png",
            "ece.json",
            "fmr.json",
            "emb-results.json",
            "ci.json",
        ],
        "plot": ["det.png", "nbe.pdf", "ece.png", "det-fmr.png", "emb-det.png"],
        "calibrate": ["cal.json", "pav.json", "pav3.zarr", "emb-cal.json"],
        "fuse": ["fusion.json", "fusion12.json", "fused12.zarr", "emb-fusion.json"],
        "apply": ["cal2.zarr", "fused.zarr", "emb-cal.zarr"],
        "score": ["emb.zarr", "emb-as.zarr", "emb-quality.zarr"],
        "spoof": ["sasv.json"],
    }
    for name in wrote.get(command, []):
        assert (path / name).exists(), name
    if command == "info":
        assert "key trials:" in capsys.readouterr().out
