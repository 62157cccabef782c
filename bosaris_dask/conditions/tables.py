"""Condition tables: one row per model (or segment, or trial), one column per attribute; made
from arrays (:func:`condition_table`), from a pandas DataFrame (:func:`table_from_frame`) or
read from a file (:mod:`bosaris_dask.conditions.table_files`).

In a file, a table is tab-separated text whose header's first field names the side (``model``
or ``segment``) and whose other fields name the attributes::

    model	gender	language
    m1	f	eng
    m2	m	cmn

A header starting ``model	segment`` makes a *trial* table: one row per (model, segment) trial,
for attributes of the trial itself that neither side has (NIST SRE08's per-trial Y/N condition
columns, a same-phone-number flag)::

    model	segment	short2-short3
    m1	s1	Y
    m1	s2	N

A gzip-compressed file (told by its first bytes) is decompressed as it is read. It can also
be a zarr store or HDF5 file holding a 1-D array of ids named after the side
(``model`` or ``segment``; or ``ids`` with the attribute ``side``; both ``model`` and ``segment``
for a trial table) and one 1-D array per attribute. Values are strings (numbers are read as
their text).

Examples
--------
>>> table = condition_table("model", ["m1", "m2"], {"gender": ["f", "m"]})
>>> table.side, table.ids.tolist(), table.columns["gender"].tolist()
('model', ['m1', 'm2'], ['f', 'm'])
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bosaris_dask.errors import TrialError

__all__ = [
    "ConditionTable", "condition_table", "table_from_frame", "as_condition_table", "ids_missing",
    "SIDES", "TRIAL",
]  # fmt: skip

#: The two sides of a trial, as named in a table's header.
SIDES = ("model", "segment")
#: The side of a table of trials (a header starting ``model	segment``).
TRIAL = "trial"


@dataclass(frozen=True)
class ConditionTable:
    """Attributes of the ids of one side, or of trials.

    Attributes
    ----------
    side
        ``"model"``, ``"segment"`` or ``"trial"``.
    ids
        The ids (1-D object array of ``str``, unique); of a trial table, each trial's model.
    columns
        Attribute name -> 1-D object array of ``str`` values, aligned with ``ids``.
    source
        Where the table came from (a path, or ``"<memory>"``), for error messages.
    lines
        The line of each id in a text file (``None`` otherwise), for error messages.
    segments
        Of a trial table, each trial's segment (the pairs ``(ids, segments)`` are unique);
        ``None`` for a table of one side.
    """

    side: str
    ids: np.ndarray
    columns: Mapping[str, np.ndarray]
    source: str = "<memory>"
    lines: np.ndarray | None = field(default=None, repr=False)
    segments: np.ndarray | None = field(default=None, repr=False)


def condition_table(
    side: str,
    ids: Iterable[Any],
    columns: Mapping[str, Iterable[Any]],
    *,
    source: str = "<memory>",
    lines: Iterable[int] | None = None,
    segments: Iterable[Any] | None = None,
) -> ConditionTable:
    """Build a :class:`ConditionTable`, checking the side, duplicate ids and column lengths.

    A trial table (``side="trial"``) takes each trial's model as ``ids`` and its segment as
    ``segments``. Values are compared as text stripped of surrounding spaces, as a file's
    fields are; a missing value (``None``, NaN, an empty or blank string) is refused, as an
    empty field of a file is (it would be a condition of its own, and a partition of
    ``equalize``).

    Raises
    ------
    TrialError
        An unknown side, a duplicate id or trial (naming it, and its line when known), a column
        of another length than the ids, a column named like a side, a missing value.

    Examples
    --------
    >>> condition_table("segment", ["s1", "s1"], {"language": ["eng", "cmn"]})
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.TrialError: <memory>: duplicate segment id 's1'
    >>> condition_table("model", ["m1", "m2"], {"gender": [" f", None]})
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.TrialError: <memory>: missing value in column 'gender' for model 'm2'
    >>> trials = condition_table("trial", ["m1", "m1"], {"y": ["Y", "N"]}, segments=["s1", "s2"])
    >>> trials.side, trials.segments.tolist()
    ('trial', ['s1', 's2'])
    """
    if side not in (*SIDES, TRIAL):
        raise TrialError(f"{source}: the side of a condition table is 'model', 'segment' or "
                         f"'trial', not {side!r}")  # fmt: skip
    if (side == TRIAL) != (segments is not None):
        raise TrialError(f"{source}: a trial table, and only a trial table, has segments")
    id_arr = _texts(ids)
    seg_arr = None if segments is None else _texts(segments)
    line_arr = None if lines is None else np.asarray(list(lines), dtype=np.int64)
    if seg_arr is not None and seg_arr.shape != id_arr.shape:
        raise TrialError(f"{source}: {seg_arr.size} segments for {id_arr.size} models")
    keys = pd.DataFrame({"id": id_arr} if seg_arr is None else {"id": id_arr, "seg": seg_arr})
    repeated = keys.duplicated().to_numpy()  # hashed, not sorted (a MultiIndex sorts its levels)
    if repeated.any():
        first = int(np.flatnonzero(repeated)[0])
        where = f"{source}:{line_arr[first]}" if line_arr is not None else source
        what = (f"{side} id {id_arr[first]!r}" if seg_arr is None
                else f"trial ({id_arr[first]!r}, {seg_arr[first]!r})")  # fmt: skip
        raise TrialError(f"{where}: duplicate {what}")
    cols: dict[str, np.ndarray] = {}
    for name, values in columns.items():
        name = str(name)
        if name in SIDES or not name:
            raise TrialError(f"{source}: {name!r} cannot name an attribute column")
        raw = values if isinstance(values, np.ndarray) else list(values)
        arr = _texts(raw)
        if arr.shape != id_arr.shape:
            raise TrialError(
                f"{source}: column {name!r} has {arr.size} values for {id_arr.size} ids"
            )
        arr = pd.Series(arr, dtype=object).str.strip().to_numpy(dtype=object)
        missing = np.flatnonzero(pd.isna(np.asarray(raw, dtype=object)) | (arr == ""))
        if len(missing):
            k = int(missing[0])
            where = f"{source}:{line_arr[k]}" if line_arr is not None else source
            what = (f"{side} {id_arr[k]!r}" if seg_arr is None
                    else f"trial ({id_arr[k]!r}, {seg_arr[k]!r})")  # fmt: skip
            raise TrialError(f"{where}: missing value in column {name!r} for {what}")
        cols[name] = arr
    return ConditionTable(side, id_arr, cols, source, line_arr, seg_arr)


def table_from_frame(frame: pd.DataFrame, *, source: str = "<DataFrame>") -> ConditionTable:
    """A condition table from a pandas DataFrame: the ids in a column (or index level) named
    ``model`` or ``segment``, in any case (both: a table of trials), every other column an
    attribute. Values are compared as text stripped of surrounding spaces, as a file's; a
    missing value (NaN, None, an empty string) is refused, as an empty field is.

    Examples
    --------
    >>> frame = pd.DataFrame({"Model": ["m1", "m2"], "gender": ["f ", "m"], "age": [31, 45]})
    >>> table = table_from_frame(frame)
    >>> table.side, table.columns["gender"].tolist(), table.columns["age"].tolist()
    ('model', ['f', 'm'], ['31', '45'])
    >>> table_from_frame(frame.set_index("Model")).ids.tolist()  # the index, as a column
    ['m1', 'm2']
    >>> table_from_frame(frame.assign(age=[31, None]))
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.TrialError: <DataFrame>: missing value in column 'age' for model 'm2'
    """
    frame = frame.rename(columns=_side_spelled).rename_axis(index=_side_spelled)
    labels = frame.index  # the rows' names, where the ids are not the index
    if any(name in SIDES for name in frame.index.names):
        frame = frame.reset_index()
        labels = frame.index
    if frame.columns.duplicated().any():
        twice = frame.columns[frame.columns.duplicated()][0]
        raise TrialError(f"{source}: two columns (or index levels) named {twice!r}")
    names = [n for n in SIDES if n in frame.columns]
    if not names:
        raise TrialError(f"{source}: no column (or index) named 'model' or 'segment' for the "
                         f"ids (columns: {', '.join(map(str, frame.columns))})")  # fmt: skip
    text = frame.astype(str).apply(lambda column: column.str.strip())
    missing = frame.isna().to_numpy() | (text == "").to_numpy()
    if missing.any():  # as an empty field of a file is
        row, col = (int(k[0]) for k in np.nonzero(missing))
        if missing[row, [frame.columns.get_loc(n) for n in names]].any():
            where = f"(row {labels[row]!r})"
        else:
            ids = [text[n].iat[row] for n in names]
            where = f"for {names[0]} {ids[0]!r}" if len(ids) == 1 else f"for trial {tuple(ids)}"
        raise TrialError(f"{source}: missing value in column {frame.columns[col]!r} {where}")
    columns = {str(c): text[c].to_numpy() for c in frame.columns if c not in SIDES}
    side = TRIAL if len(names) == 2 else names[0]
    segments = text["segment"].to_numpy() if side == TRIAL else None
    return condition_table(side, text[names[0]].to_numpy(), columns, source=source,
                           segments=segments)  # fmt: skip


def _side_spelled(name: Any) -> Any:
    """A DataFrame column's name, ``model``/``segment`` where it names a side in any case."""
    return name.strip().lower() if isinstance(name, str) and name.strip().lower() in SIDES else name


def as_condition_table(
    table: ConditionTable | pd.DataFrame | str | os.PathLike[str],
) -> ConditionTable:
    """``table`` as a :class:`ConditionTable`: as it is, from a DataFrame
    (:func:`table_from_frame`), or read from its path (:func:`read_condition_table`)."""
    if isinstance(table, ConditionTable):
        return table
    if isinstance(table, pd.DataFrame):
        return table_from_frame(table)
    from bosaris_dask.conditions.table_files import read_condition_table

    return read_condition_table(table)


def ids_missing(
    table: ConditionTable, side: str, ids: np.ndarray, absent: np.ndarray,
    other_ids: np.ndarray | None = None,
) -> TrialError:  # fmt: skip
    """The error for the key's ``side`` ids that ``table`` lacks (``absent``: their positions in
    ``ids``); where most of the table's ids are the key's ``other_ids`` (the other side's), a
    hint that its header names the wrong side.

    >>> table = condition_table("segment", ["m1", "m2"], {"g": ["f", "m"]})
    >>> str(ids_missing(table, "segment", np.array(["s1"]), np.array([0])))
    "<memory>: 1 segment id of the key is not in the table, e.g. 's1'"
    >>> models = np.array(["m1", "m2"])
    >>> print(ids_missing(table, "segment", np.array(["s1"]), np.array([0]), models))
    ... # doctest: +NORMALIZE_WHITESPACE
    <memory>: 1 segment id of the key is not in the table, e.g. 's1' (its ids are the key's
    model ids: should its header's first column be 'model'?)
    """
    n, first = len(absent), str(ids[absent[0]])
    many = n > 1
    hint = ""
    if other_ids is not None and len(table.ids):
        other = "segment" if side == "model" else "model"
        index = pd.Index(table.ids)  # (where the sides share ids, more of the other's)
        if index.isin(other_ids).mean() > max(0.5, index.isin(ids).mean()):
            hint = (f" (its ids are the key's {other} ids: should its header's first column "
                    f"be {other!r}?)")  # fmt: skip
    return TrialError(f"{table.source}: {n:,} {side} id{'s' * many} of the key "
                      f"{'are' if many else 'is'} not in the table, e.g. {first!r}"
                      f"{hint}")  # fmt: skip


def _texts(values: Iterable[Any]) -> np.ndarray:
    """``values`` as an object array of ``str`` (a copy; no conversion where they are)."""
    if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1:
        if pd.api.types.infer_dtype(values, skipna=False) == "string":
            return values.copy()
    return np.asarray([str(v) for v in values], dtype=object)
