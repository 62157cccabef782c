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
