"""The ``bosaris-dask`` command.

Every subcommand has ``--help``. Errors caused by input (a bad line, a missing id, a corrupt
store) print one line, ``bosaris-dask: error: ...``, and exit with status 1; ``--debug`` shows
the traceback instead. Progress bars go to stderr when it is a terminal (``-q`` silences them).

The parser is in :mod:`bosaris_dask.cli.parser`; the subcommands that make or move data in
:mod:`bosaris_dask.cli.data`, those that evaluate or train on scores in
:mod:`bosaris_dask.cli.scoring`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from bosaris_dask.cli.parser import build_parser
from bosaris_dask.errors import BosarisError

__all__ = ["main", "build_parser"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``bosaris-dask``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if getattr(args, "scratch", None) is not None:
            import dask

            from bosaris_dask.io.staging import SCRATCH_CONFIG, scratch_directory

            with dask.config.set({SCRATCH_CONFIG: scratch_directory(args.scratch)}):
                return int(args.func(args) or 0)
        return int(args.func(args) or 0)
    except (BosarisError, FileNotFoundError, PermissionError) as error:
        if args.debug:
            raise
        print(f"bosaris-dask: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bosaris-dask: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
