"""A label-derived key from two ``id class`` tables: every enrolment id against every test id.

Each table has one ``id class`` pair per line (whitespace-separated; blank lines and lines
starting with ``#`` are skipped), e.g. VoxCeleb's ``utterance speaker`` lists. The key is
all-vs-all over the ids that are scored (the enrolment file's ids, or the model map's models,
and the test file's ids): a trial is a target iff both ids have the same class. Every scored id
must have a class; a table may name more ids than are scored (they are ignored). An id on both
sides (one embedding file given as enrolment and test) is no trial against itself: its score
is that of an item with itself (1 for cosine), a certain target that would flatter every metric.

Examples
--------
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "enrol.txt").write_text("e1 spk1\\ne2 spk2\\n")
>>> _ = (d / "test.txt").write_text("t1 spk2\\nt2 spk1\\nt3 spk3\\n")
>>> key = key_from_class_tables(["e1", "e2"], d / "enrol.txt", ["t1", "t2"], d / "test.txt")
>>> key.trial_mask.values.tolist()
[[-1, 1], [1, -1]]
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.errors import ParseError, TrialError

__all__ = ["read_class_table", "key_from_class_tables", "without_self_trials"]


def read_class_table(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read an ``id class`` text file into ``{id: class}``.

    Raises
    ------
    ParseError
        A line without exactly two fields, an id listed twice (naming the file, the line and
        the id's first line), or a table without any pair.
    """
    classes: dict[str, str] = {}
    first_line: dict[str, int] = {}
    try:
        text_lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ParseError(f"cannot read it ({exc.strerror or exc})", path=path) from None
    for n, line in enumerate(text_lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        fields = text.split()
        if len(fields) != 2:
            raise ParseError(f"expected 'id class', got {text!r}", path=path, line=n)
        ident, label = fields
        if ident in classes:
            raise ParseError(f"id {ident!r} listed twice (first on line {first_line[ident]})",
                             path=path, line=n)  # fmt: skip
        classes[ident] = label
        first_line[ident] = n
    if not classes:
        raise ParseError("no 'id class' lines", path=path)
    return classes


def _labels(ids: Iterable[Any], table: dict[str, str], side: str, path: Any) -> np.ndarray:
    ids = [str(i) for i in ids]
    missing = [i for i in ids if i not in table]
    if missing:
        more = f" (and {len(missing) - 1:,} more)" if len(missing) > 1 else ""
        raise TrialError(f"{side} id {missing[0]!r}{more} has no class in {os.fspath(path)}")
    return np.array([table[i] for i in ids], dtype=object)


def key_from_class_tables(
    enrol_ids: Iterable[Any],
    enrol_classes: str | os.PathLike[str],
    test_ids: Iterable[Any],
    test_classes: str | os.PathLike[str],
    *,
    chunks: Any = "auto",
) -> xr.Dataset:
    """The all-vs-all Key of ``enrol_ids`` x ``test_ids``: a target iff their classes (from the
    two ``id class`` tables) are equal (:func:`bosaris_dask.trials.key_from_labels`).

    Raises
    ------
    ParseError
        A malformed table or an id listed twice in one (see :func:`read_class_table`).
    TrialError
        An id without a class in its table (the first is named, with the table), or the same
        id twice among ``enrol_ids`` or ``test_ids``.
    """
    from bosaris_dask.trials import key_from_labels

    enrol_ids, test_ids = list(enrol_ids), list(test_ids)
    e = _labels(enrol_ids, read_class_table(enrol_classes), "enrolment", enrol_classes)
    t = _labels(test_ids, read_class_table(test_classes), "test", test_classes)
    return without_self_trials(key_from_labels(enrol_ids, e, test_ids, t, chunks=chunks))


def without_self_trials(key: xr.Dataset) -> xr.Dataset:
    """``key`` with every id that is both a model and a segment left out against itself (no
    trial there); ``key`` itself when no id is on both sides.

    Examples
    --------
    >>> from bosaris_dask.trials import key_from_labels
    >>> key = key_from_labels(["a", "b"], ["x", "y"], ["b", "a", "c"], ["y", "x", "x"])
    >>> without_self_trials(key).trial_mask.values.tolist()
    [[-1, 0, 1], [0, -1, -1]]
    """
    position = {str(t): j for j, t in enumerate(key.segment.values)}
    column = np.array([position.get(str(m), -1) for m in key.model.values], dtype=np.int64)
    if (column < 0).all():
        return key
    mask = key.trial_mask.data
    rows = da.from_array(column[:, None], chunks=(mask.chunks[0], 1))
    cleared = da.map_blocks(_clear_self, mask, rows, dtype=mask.dtype)
    return key.assign(trial_mask=key.trial_mask.copy(data=cleared))


def _clear_self(block: np.ndarray, column: np.ndarray, block_info: Any = None) -> np.ndarray:
    """A key block with each row's own column (``column``: global, -1 for none) set to 0."""
    lo, hi = block_info[0]["array-location"][1]
    rows = np.flatnonzero((column[:, 0] >= lo) & (column[:, 0] < hi))
    if rows.size == 0:
        return block
    out = block.copy()
    out[rows, column[rows, 0] - lo] = 0
    return out
