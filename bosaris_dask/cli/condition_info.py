"""``info`` of a condition table: its side, ids and columns, and with ``--key`` whether it
covers the key's ids (or trials) as ``--by`` needs them, before a long evaluation finds out.

A tab-separated text file is taken for a condition table when its header's first field names
a side and the line names no model and segment columns as a trial file's header does
(``model<TAB>speaker``), or is ``model<TAB>segment<TAB>phone`` whose other columns name no
score or label (a table of trials); a zarr or HDF5 store when it reads as one.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from bosaris_dask.conditions.table_files import read_condition_table, side_names
from bosaris_dask.conditions.tables import SIDES, TRIAL, ConditionTable
from bosaris_dask.errors import BosarisError

__all__ = ["is_condition_table", "cmd_condition_info"]

#: Distinct values shown with their counts; beyond, the first few only.
_SHOWN_VALUES = 8


def is_condition_table(path: str) -> bool:
    """Whether ``path`` is tab-separated text headed like a condition table (see the module).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "m.tsv").write_text("model\\tspeaker\\nm1\\tspk1\\n")
    >>> _ = (d / "k.txt").write_text("segment\\tmodel\\tlabel\\ns1\\tm1\\ttarget\\n")
    >>> _ = (d / "n.tsv").write_text("MODELID\\tspeaker\\nm1\\tspk1\\n")
    >>> [is_condition_table(str(d / name)) for name in ("m.tsv", "k.txt", "n.tsv")]
    [True, False, True]
    """
    from bosaris_dask.io.text.layout import _ROLE_OF_NAME, _first_nonblank_line

    if Path(path).is_dir() or Path(path).suffix in (".zarr", ".h5", ".hdf5"):
        try:  # a trial store is refused before its matrices are read
            read_condition_table(path)
        except (BosarisError, OSError, KeyError, TypeError, ValueError):
            return False
        return True
    if not Path(path).is_file():
        return False
    try:
        header = _first_nonblank_line(path)[0].decode("utf-8")
    except (BosarisError, UnicodeDecodeError):
        return False  # the trial readers say what is wrong
    names = side_names(header.split("\t"))  # (any case, NIST's names: as the reader takes them)
    roles = {_ROLE_OF_NAME.get(n.lower()) for n in names}
    if len(names) < 2 or names[0] not in SIDES:
        return False
    if {"model", "segment"} <= roles:  # a trial file's header, whatever its order, unless
        return names[:2] == list(SIDES) and not roles & {"score", "label"}  # a table of trials
    return True


def cmd_condition_info(args: argparse.Namespace) -> int:
    """Print a condition table's side, ids and columns; with ``--key``, its coverage."""
    table = read_condition_table(args.path)
    n = len(table.ids)
    print(f"path:        {args.path} (condition table)")
    if table.side == TRIAL:
        n_m, n_s = len(np.unique(table.ids)), len(np.unique(table.segments))
        print(f"side:        trial: {n:,} trials of {n_m:,} models x {n_s:,} segments "
              "(--by trial.COL)")  # fmt: skip
    else:
        shown = ", ".join(map(str, table.ids[:4])) + (", ..." if n > 4 else "")
        print(f"side:        {table.side}: {n:,} ids, {shown} (--by {table.side}.COL)")
    for k, (name, values) in enumerate(table.columns.items()):
        print(f"{'columns:' if k == 0 else '':<13}{name}: {_values(values)}")
    if args.key:
        from bosaris_dask.cli.common import _opened

        # where the work runs, as every command that reads data (a key of trials is counted)
        with _opened(args, lambda: _key(args.key), _cells) as key:
            print(f"key:         {_coverage(table, key)}")
    return 0


def _values(values: np.ndarray) -> str:
    """``N values: a (count), b (count)``, the most frequent first; past
    :data:`_SHOWN_VALUES` values, their range of counts and the first few."""
    vocab, counts = np.unique(values.astype(str), return_counts=True)
    if len(vocab) > _SHOWN_VALUES:
        few = ", ".join(map(str, vocab[:4]))
        low, high = int(counts.min()), int(counts.max())
        each = (f"{low:,} row{'s' * (low > 1)} each" if low == high
                else f"{low:,} to {high:,} rows each")  # fmt: skip
        return f"{len(vocab):,} values, {each} ({few}, ...)"
    order = np.argsort(-counts, kind="stable")
    return f"{len(vocab):,} values: " + ", ".join(f"{vocab[i]} ({counts[i]:,})" for i in order)


def _coverage(table: ConditionTable, key: Any) -> str:
    """Whether the ``key``'s ids (or trials) are all in the table, else the error ``--by``
    gives."""
    from bosaris_dask.conditions.cells import trial_conditions
    from bosaris_dask.conditions.codes import condition_codes
    from bosaris_dask.io.text.packed import TrialList
    from bosaris_dask.progress import compute

    spec = f"{table.side}.{next(iter(table.columns))}"
    try:
        if isinstance(key, TrialList):
            trial_conditions(key.listed(), [table], [spec])
            n_trials = len(key.values)
        else:
            condition_codes(key, [table], [spec])
            n_trials = int(compute((key.trial_mask.data != 0).sum())) if table.side == TRIAL else 0
    except BosarisError as err:
        return f"not covered: {err}"
    if table.side == TRIAL:
        return f"every one of its {n_trials:,} trials is in the table"
    n_ids = len(getattr(key, f"{table.side}s") if isinstance(key, TrialList) else key[table.side])
    return f"every one of its {n_ids:,} {table.side} ids is in the table"


def _cells(key: Any) -> int:
    """The size of a key (its trials, or its grid's cells), which picks a scheduler."""
    from bosaris_dask.cli.common import _size
    from bosaris_dask.io.text.packed import TrialList

    return len(key.values) if isinstance(key, TrialList) else _size(key)


def _key(path: str) -> Any:
    """The key: a sparse text list as its trials, else the trial object."""
    from bosaris_dask import io
    from bosaris_dask.cli.packed_inputs import _regular_text_file
    from bosaris_dask.io.text.packed import read_trials

    return read_trials(path, "key") if _regular_text_file(path) else io.read(path, "key")
