"""The ``bosaris-dask`` command.

Every subcommand has ``--help``, which ends with examples that run on the data ``bosaris-dask
demo`` writes (:mod:`bosaris_dask.cli.examples`). One set of rules holds for every subcommand
(see :mod:`bosaris_dask.cli.parser`): an option with several values is a repeated flag
(``--scores A --scores B``), ``--prior`` is an evaluation operating point (``--train-prior``
the prior of a training objective), ``--out`` a file or store (``--out-dir`` a directory), and
the cluster options (``--cluster``, ``--scheduler`` ...) are everywhere. Errors caused by input
(a bad line, a missing id, a corrupt store) print one line, ``bosaris-dask: error: ...``, and
exit with status 1; ``--debug`` shows the traceback instead. Progress bars go to stderr when
it is a terminal (``-q`` silences them).

The parser is in :mod:`bosaris_dask.cli.parser` (each subcommand's options in
:mod:`bosaris_dask.cli.subcommands`); the subcommands that make or move data in
:mod:`bosaris_dask.cli.data`, those that evaluate scores in :mod:`bosaris_dask.cli.scoring`,
those that train on scores or apply a model in :mod:`bosaris_dask.cli.training`.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from bosaris_dask.cli.common import same_file
from bosaris_dask.cli.parser import build_parser
from bosaris_dask.cli.termination import Terminated, sigterm_unwinds
from bosaris_dask.cluster.mpi_ranks import wait_for_the_reporting_rank
from bosaris_dask.errors import BosarisError, OptionError

__all__ = ["main", "build_parser"]


@contextlib.contextmanager
def _notes(args: argparse.Namespace) -> Iterator[None]:
    """Print the package's notes (e.g. scores realigned once, a plot's curve clipped) on stderr
    unless ``-q``; where stderr is no terminal (a batch job's log, which gets no progress bar),
    also a line per pass over the data with its time."""
    if getattr(args, "quiet", False):
        yield
        return
    names = ["bosaris_dask.io", "bosaris_dask.plots"]
    names += [] if sys.stderr.isatty() else ["bosaris_dask.passes"]
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)


@contextlib.contextmanager
def _one_line_warnings() -> Iterator[None]:
    """The package's own warnings (a quality fusion backing off, ...) as one ``warning:`` line
    each, as the commands print theirs, not Python's two lines naming a source file."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
        if category.__module__.startswith("bosaris_dask"):
            print(f"warning: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    # the logged warnings of the cluster's set-up (no dashboard, a timeout not set) too, -q or not
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("warning: %(message)s"))
    handler.setLevel(logging.WARNING)
    cluster = logging.getLogger("bosaris_dask.cluster")
    cluster.addHandler(handler)
    try:
        yield
    finally:
        cluster.removeHandler(handler)
        warnings.showwarning = shown


#: The options (``args`` names) that name an output file or store.
_OUTPUTS = ("json", "out", "model_out", "quality_out", "output")
#: ... those always a file.
_FILE_OUTPUTS = ("json", "model_out")


def _check_output_folders(args: argparse.Namespace) -> None:
    """Refuse an output whose folder does not exist before any work (the JSON of an hour's
    evaluation was refused only once the evaluation was done)."""
    from bosaris_dask.io.atomic import check_folder, zarr_store_around

    for name in _OUTPUTS:
        path = getattr(args, name, None)
        if not isinstance(path, str) or "://" in path or (args.command, name) == ("plot", "out"):
            continue  # (plot checks its image's path itself: check_plot_path)
        file = name in _FILE_OUTPUTS
        if name in ("out", "output") and args.command in _TRIAL_WRITERS:
            from bosaris_dask.io import _write_format

            # a suffix that names no format: refused before training
            file = _write_format(path, None) != "zarr"
        check_folder(path, file=file)  # as the write would, before the work
    for name in _FOLDERS:
        path = getattr(args, name, None)
        if not isinstance(path, str) or "://" in path:
            continue
        flag = f"--{name.replace('_', '-')}"
        if os.path.exists(path) and not os.path.isdir(path):
            raise OptionError(f"{flag} {path} is a file, not a directory")
        store = zarr_store_around(path)
        if store is not None:  # its files would be read as the store's (none opened it again)
            raise OptionError(f"{flag} {path} is {'' if store == Path(path) else 'inside '}the "
                              f"zarr store {store}: what is written there would break the "
                              "store; give a folder of its own")  # fmt: skip
    _refuse_outputs_that_are_inputs(args)


#: Options naming folders written into, never an input.
_FOLDERS = ("out_dir", "plots_dir", "scratch_dir")


def _refuse_outputs_that_are_inputs(args: argparse.Namespace) -> None:
    """Refuse a report, a model or an image written onto one of the inputs (``--json
    scores.txt`` replaced the scores with the JSON once the evaluation was done): the same
    file, by name or through a link. Trials written onto an input (``fuse --apply B --out
    B``) replace it as asked, once read."""
    from bosaris_dask.io.atomic import written_in_place

    others = {name: getattr(args, name, None) for name in _OUTPUTS}
    reports = (*_FILE_OUTPUTS, "out") if args.command == "plot" else _FILE_OUTPUTS
    outputs = {name: path for name, path in others.items()
               if isinstance(path, str) and name in reports}  # fmt: skip
    for name, output in outputs.items():
        if not os.path.exists(output) or written_in_place(Path(output)):
            continue  # not there yet, or a device or a pipe (/dev/stdout): no input
        for option, given in vars(args).items():
            if option in others or option in _FOLDERS:
                continue
            paths = [given] if isinstance(given, str) else given if isinstance(given, list) else []
            for path in paths:
                if isinstance(path, str) and same_file(path, output):
                    raise OptionError(f"{_named(name, output)} is also an input "
                                      f"({_named(option, path)}): writing it would replace it; "
                                      "write elsewhere")  # fmt: skip


def _named(dest: str, path: str) -> str:
    """A path as the command line gave it: ``--model-out m.json``, ``the output x.txt``."""
    if dest in ("input", "output"):  # convert's positionals
        return f"the {dest} {path}"
    return f"--{dest.replace('_', '-')} {path}"


#: The commands whose ``--out`` (``output``) is a trial object (a store or file of scores).
_TRIAL_WRITERS = ("convert", "calibrate", "fuse", "apply", "score")

#: The options (``args`` names) whose inputs each text-layout option describes.
_LAID_OUT = {"format": ("key", "ndx", "scores", "input", "path", "eval_key", "eval_scores",
                        "apply"),
             "key_format": ("key", "ndx", "eval_key")}  # fmt: skip


def _check_text_layouts(args: argparse.Namespace) -> None:
    """Refuse ``--format``/``--key-format`` where none of the inputs it describes is a text
    file (it was ignored: ``convert key.zarr out.tsv --format nist`` wrote BOSARIS lines)."""
    from bosaris_dask import io

    for name, inputs in _LAID_OUT.items():
        layout = getattr(args, name, None)
        if layout is None:
            continue
        if name == "format" and getattr(args, "key_format", None) is not None:
            inputs = tuple(i for i in inputs if i not in _LAID_OUT["key_format"])  # its own
        paths = []
        for option in inputs:
            given = getattr(args, option, None)
            paths += [given] if isinstance(given, str) else list(given or [])
        if not paths and name == "key_format":  # (the key then comes from the scores)
            raise OptionError(f"--key-format {layout} is the layout of a text --key (--ndx, "
                              "--eval-key), and none is given: --format lays out the "
                              "scores")  # fmt: skip
        try:
            formats = [io.detect_format(p) for p in paths]
        except (BosarisError, OSError):
            continue  # (a missing input: its own error, when it is read)
        if paths and "text" not in formats:
            flag = "--" + name.replace("_", "-")
            raise OptionError(f"{flag} {layout} is the layout of text inputs, and "
                              f"{', '.join(paths)} {'is' if len(paths) == 1 else 'are'} not "
                              "text")  # fmt: skip


def _run(args: argparse.Namespace) -> int:
    """Run the subcommand, with the scratch directory of ``--scratch-dir`` in dask's config."""
    _check_output_folders(args)
    _check_text_layouts(args)
    if getattr(args, "scratch_dir", None) is not None:
        import dask

        from bosaris_dask.io.staging import SCRATCH_CONFIG, scratch_directory

        with dask.config.set({SCRATCH_CONFIG: scratch_directory(args.scratch_dir)}):
            return int(args.func(args) or 0)
    return int(args.func(args) or 0)


#: What the library's messages say of a keyword, and what the command line says instead.
_REMEDIES = {"(allow_missing drops them)": ("allow_missing", "(--allow-missing drops them)")}


def _in_cli_words(message: str, args: argparse.Namespace) -> str:
    """``message`` with the remedies that name a Python keyword naming the command's option
    instead (or left out where the command has none)."""
    for said, (name, option) in _REMEDIES.items():
        if said in message:
            message = message.replace(said, option if hasattr(args, name) else "").rstrip()
    return message


#: The options every command has, also taken before the command (``bosaris-dask -q evaluate``).
_GLOBAL_FLAGS = ("-q", "--quiet", "--debug")


def _flags_after_the_command(argv: Sequence[str]) -> list[str]:
    """``argv`` with ``-q``/``--debug`` given before the command moved to its end, where the
    command's parser takes them (argparse's subcommands overwrite a top-level flag's value).

    >>> _flags_after_the_command(["-q", "evaluate", "--scores", "s.txt"])
    ['evaluate', '--scores', 's.txt', '-q']
    """
    lead = 0
    while lead < len(argv) and argv[lead] in _GLOBAL_FLAGS:
        lead += 1
    if not lead or lead == len(argv):
        return list(argv)
    return [*argv[lead:], *argv[:lead]]


def _unawaited_quietly() -> None:
    """A signal that lands inside zarr's synchronous wrapper leaves a coroutine it made and
    never awaited; freed as the exception is, it printed Python's 'coroutine ... was never
    awaited' RuntimeWarning after the one line that says the run was stopped."""
    warnings.filterwarnings("ignore", message="coroutine .* was never awaited",
                            category=RuntimeWarning)  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``bosaris-dask``; returns the exit status (143 after a SIGTERM, 130 a Ctrl-C)."""
    parser = build_parser()
    args = parser.parse_args(_flags_after_the_command(sys.argv[1:] if argv is None else argv))
    try:
        with sigterm_unwinds(), _notes(args), _one_line_warnings():
            return _run(args)
    except (BosarisError, FileNotFoundError, PermissionError) as error:
        if args.debug:
            raise
        wait_for_the_reporting_rank(sys.argv[1:] if argv is None else argv)
        print(f"bosaris-dask: error: {_in_cli_words(str(error), args)}", file=sys.stderr)
        return 1
    except Terminated:
        _unawaited_quietly()
        print("bosaris-dask: terminated (SIGTERM)", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        _unawaited_quietly()
        print("bosaris-dask: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as error:  # a full disk, a file size limit, an I/O error: what and where
        if args.debug:
            raise
        wait_for_the_reporting_rank(sys.argv[1:] if argv is None else argv)
        where = f"{error.filename}: " if error.filename else ""
        print(f"bosaris-dask: error: {where}{error.strerror or error} (--debug for the "
              "traceback)", file=sys.stderr)  # fmt: skip
        return 1
