"""The argument parser of ``bosaris-dask``: every subcommand, its options and their checks.

The rules every subcommand follows (issue 15; ``tests/test_cli_consistency.py`` checks them):

- an option that takes several values is a repeatable flag with one value each
  (``--scores A --scores B``, ``--prior 0.1 --prior 0.01``, ``fuse --apply A --apply B``);
- ``--prior`` is an evaluation operating point; the prior of a training objective is
  ``--train-prior``;
- ``--out`` is a file or store; a directory written into is ``--out-dir`` (or ``--plots-dir``,
  ``--scratch-dir`` by their role; ``spoof --set-dir`` reads one);
- every subcommand takes the options that choose where the work runs (``--cluster`` ...);
- every ``--help`` ends with examples that run on the demo's data
  (:mod:`bosaris_dask.cli.examples`).

Spellings of earlier releases (``--prior 0.1 0.01``, ``fuse --apply A B``, ``calibrate
--prior``, ``simulate --out DIR``, ``spoof --convert-dir DIR``) fail with a one-line error that
shows the new spelling.
Each subcommand's options are in :mod:`bosaris_dask.cli.subcommands`, the option groups they
share in :mod:`bosaris_dask.cli.options`, the value types in :mod:`bosaris_dask.cli.values`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from bosaris_dask import __version__
from bosaris_dask.cli.subcommands import add_subcommands
from bosaris_dask.cluster.mpi_ranks import wait_for_the_reporting_rank

#: Options renamed in issue 15: ``{(command, old): new}``.
RENAMED = {
    ("calibrate", "--prior"): "--train-prior",
    ("fuse", "--prior"): "--train-prior",
    ("simulate", "--out"): "--out-dir",
    ("demo", "--out"): "--out-dir",
    ("evaluate", "--plots"): "--plots-dir",
    ("spoof", "--convert-dir"): "--out-dir",
    ("simulate", "--models"): "--n-models",
    ("simulate", "--segments"): "--n-segments",
    ("demo", "--models"): "--n-models",
    ("demo", "--segments"): "--n-segments",
}


class _StoreOnce(argparse._StoreAction):
    """``store``, refusing an input option given twice: a second file silently replaced the
    first (``calibrate --scores a --scores b`` trained on ``b``, where ``fuse`` takes both).
    Other one-value options keep argparse's last-wins, which job scripts use to override a
    default (``... --worker-timeout 3600 $EXTRA_ARGS``)."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        given = namespace.__dict__.setdefault(_GIVEN, set())
        is_input = self.dest in _INPUTS and self.type is None  # a path, not a count
        if option_string is not None and is_input and self.dest in given:
            parser.error(f"{option_string} was given twice: it takes one input here")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


_GIVEN = "_options_given"

#: Options that name an input: given twice, one of the two would be silently dropped.
_INPUTS = frozenset({
    "key", "scores", "ndx", "model", "enrol", "test", "models", "cohort", "center", "quality",
    "apply_quality", "model_quality", "segment_quality", "eval_key", "enrol_classes",
    "test_classes", "set_dir", "apply",
})  # fmt: skip


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors show the new spelling of an option that changed, and
    that refuses a one-value option given twice."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._argv = list(sys.argv[1:] if args is None else args)
        parsed, rest = super().parse_known_args(self._argv, namespace)
        parsed.__dict__.pop(_GIVEN, None)
        return parsed, rest

    def error(self, message: str) -> NoReturn:
        argv = getattr(self, "_argv", [])
        command = self.prog.split()[-1]  # a subcommand's parser: "bosaris-dask evaluate"
        own = command in _COMMANDS
        if not own:
            command = next((a for a in argv if a in _COMMANDS), "")
        sub = self if own else _subparser(self, command)
        hint = _old_spelling(argv, command, message, sub)
        wait_for_the_reporting_rank(argv)
        # the subcommand's usage and name, also for what the top-level parser found (extras)
        argparse.ArgumentParser.error(sub or self, hint or message)


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser | None:
    """The parser of subcommand ``command`` under the top-level ``parser`` (``None``: none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(command)
    return None


def _old_spelling(
    argv: list[str], command: str, message: str, sub: argparse.ArgumentParser | None = None
) -> str | None:
    """The one-line error for an option spelled as in an earlier release (several values
    after a repeatable flag), or for several values after a one-value option of ``sub``, the
    subcommand's parser; else ``None``."""
    for token in argv:
        old = token.split("=", 1)[0]  # (--plots=DIR too)
        new = RENAMED.get((command, old))
        if new is not None:
            return f"{command} {old} is now {new} ({_WHY[new]})"
    prefix = "unrecognized arguments: "
    if not message.startswith(prefix):
        return None
    unknown = message[len(prefix) :].split()
    for i, option in enumerate(argv):
        if not option.startswith("--"):
            continue
        values = []
        for value in argv[i + 1 :]:
            if value.startswith("-"):
                break
            values.append(value)
        if len(values) > 1 and values[1] in unknown:
            action = sub._option_string_actions.get(option) if sub is not None else None
            if option in unknown or (sub is not None and action is None):
                return None  # not an option of the subcommand: argparse's message says so
            if isinstance(action, argparse._AppendAction):
                spelled = " ".join(f"{option} {v}" for v in values)
                return f"argument {option}: one value per flag; repeat the flag: {spelled}"
            return (f"argument {option}: takes one value, got {len(values)} "
                    f"({' '.join(values)})")  # fmt: skip
    return None


_WHY = {
    "--train-prior": "--prior means evaluation operating points",
    "--out-dir": "a directory written into; --out is always a file or store",
    "--plots-dir": "a directory",
    "--n-models": "a count; score's --models is a model map",
    "--n-segments": "a count, as --n-models",
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``bosaris-dask`` (all subcommands).

    Examples
    --------
    >>> args = build_parser().parse_args(["evaluate", "--key", "k", "--scores", "a",
    ...                                   "--scores", "b", "--prior", "0.1", "--prior", "0.01"])
    >>> args.scores, args.prior
    (['a', 'b'], [0.1, 0.01])
    """
    parser = _Parser(
        prog="bosaris-dask", allow_abbrev=False,
        description="Exact BOSARIS-style evaluation, calibration and fusion of classifier "
        "scores, out of core with dask.",
        epilog="Every command has --help, ending with examples; start with 'bosaris-dask demo'.",
    )  # fmt: skip
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_subcommands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    return parser


_COMMANDS = ("convert", "info", "simulate", "evaluate", "plot", "calibrate", "fuse", "apply",
             "score", "spoof", "demo")  # fmt: skip
