"""Condition tables: one row per model (or segment, or trial), one column per attribute.

A table is tab-separated text whose header's first field names the side (``model`` or
``segment``) and whose other fields name the attributes::

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

import csv
import io
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bosaris_dask.errors import ParseError, StoreError, TrialError

__all__ = [
    "ConditionTable", "condition_table", "read_condition_table", "table_from_frame",
    "as_condition_table", "ids_missing", "SIDES", "TRIAL",
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
    ``segments``.

    Raises
    ------
    TrialError
        An unknown side, a duplicate id or trial (naming it, and its line when known), a column
        of another length than the ids, a column named like a side.

    Examples
    --------
    >>> condition_table("segment", ["s1", "s1"], {"language": ["eng", "cmn"]})
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.TrialError: <memory>: duplicate segment id 's1'
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
        arr = _texts(values)
        if arr.shape != id_arr.shape:
            raise TrialError(
                f"{source}: column {name!r} has {arr.size} values for {id_arr.size} ids"
            )
        cols[name] = arr
    return ConditionTable(side, id_arr, cols, source, line_arr, seg_arr)


def table_from_frame(frame: pd.DataFrame, *, source: str = "<DataFrame>") -> ConditionTable:
    """A condition table from a pandas DataFrame: the ids in a column (or index level) named
    ``model`` or ``segment`` (both: a table of trials), every other column an attribute.
    Values are compared as text, as a file's; a missing value (NaN, None, an empty string) is
    refused, as an empty field is.

    Examples
    --------
    >>> frame = pd.DataFrame({"model": ["m1", "m2"], "gender": ["f", "m"], "age": [31, 45]})
    >>> table = table_from_frame(frame)
    >>> table.side, table.columns["age"].tolist()
    ('model', ['31', '45'])
    >>> table_from_frame(frame.set_index("model")).ids.tolist()  # the index, as a column
    ['m1', 'm2']
    """
    if any(name in SIDES for name in frame.index.names):
        frame = frame.reset_index()
    names = [n for n in SIDES if n in frame.columns]
    if not names:
        raise TrialError(f"{source}: no column (or index) named 'model' or 'segment' for the "
                         f"ids (columns: {', '.join(map(str, frame.columns))})")  # fmt: skip
    blank = (frame.astype(str).apply(lambda column: column.str.strip()) == "").to_numpy()
    missing = frame.isna().to_numpy() | blank
    if missing.any():  # as an empty field of a file is
        row, col = (int(k[0]) for k in np.nonzero(missing))
        raise TrialError(f"{source}: missing value in column {frame.columns[col]!r} "
                         f"(row {row})")  # fmt: skip
    columns = {str(c): frame[c].to_numpy() for c in frame.columns if c not in SIDES}
    side = TRIAL if len(names) == 2 else names[0]
    segments = frame["segment"].to_numpy() if side == TRIAL else None
    return condition_table(side, frame[names[0]].to_numpy(), columns, source=source,
                           segments=segments)  # fmt: skip


def as_condition_table(
    table: ConditionTable | pd.DataFrame | str | os.PathLike[str],
) -> ConditionTable:
    """``table`` as a :class:`ConditionTable`: as it is, from a DataFrame
    (:func:`table_from_frame`), or read from its path (:func:`read_condition_table`)."""
    if isinstance(table, ConditionTable):
        return table
    if isinstance(table, pd.DataFrame):
        return table_from_frame(table)
    return read_condition_table(table)


def ids_missing(
    table: ConditionTable, side: str, ids: np.ndarray, absent: np.ndarray
) -> TrialError:
    """The error for the key's ``side`` ids that ``table`` lacks (``absent``: their positions in
    ``ids``).

    >>> table = condition_table("model", ["m1"], {"g": ["f"]})
    >>> str(ids_missing(table, "model", np.array(["m1", "m2"]), np.array([1])))
    "<memory>: 1 model id of the key is not in the table, e.g. 'm2'"
    """
    n, first = len(absent), str(ids[absent[0]])
    many = n > 1
    return TrialError(f"{table.source}: {n:,} {side} id{'s' * many} of the key "
                      f"{'are' if many else 'is'} not in the table, e.g. {first!r}")  # fmt: skip


def _texts(values: Iterable[Any]) -> np.ndarray:
    """``values`` as an object array of ``str`` (a copy; no conversion where they are)."""
    if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1:
        if pd.api.types.infer_dtype(values, skipna=False) == "string":
            return values.copy()
    return np.asarray([str(v) for v in values], dtype=object)


def read_condition_table(path: str | os.PathLike[str]) -> ConditionTable:
    """Read a condition table from tab-separated text, a zarr store or an HDF5 file.

    Raises
    ------
    ParseError
        With the file and line: a header whose first field is not ``model`` or ``segment``,
        repeated column names, a row with another number of fields, an empty value.
    TrialError
        A duplicate id (with its line).
    StoreError
        A missing file, or a zarr/HDF5 table without an id array or with arrays that are not
        1-D of the ids' length.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "models.tsv"
    >>> _ = path.write_text("model\\tgender\\nm1\\tf\\nm2\\tm\\n")
    >>> read_condition_table(path).columns["gender"].tolist()
    ['f', 'm']
    """
    p = Path(path)
    if not p.exists():
        raise StoreError(f"{p}: no such condition table")
    if p.is_dir() or p.suffix == ".zarr":
        return _read_zarr(p)
    if p.suffix in (".h5", ".hdf5"):
        return _read_hdf5(p)
    return _read_text(p)


def _read_text(path: Path) -> ConditionTable:
    from bosaris_dask.io.text.layout import _open  # gzip by its magic bytes, as trial files

    with _open(path) as f:
        data = f.read()
    return _parsed_plain(data, path) or _parsed_checked(data, path)


#: Whitespace at either end of a field (an empty field, a blank line too), a lone ``\r``:
#: what the line-by-line reader strips, skips or splits on, and pandas' parse would keep.
_NOT_PLAIN = re.compile(r"(?:^|\t)\s|\s(?:\t|$)|\r", re.MULTILINE)
#: Whitespace other than the separators: without any, :data:`_NOT_PLAIN` is a few substrings.
_OTHER_SPACE = re.compile(r"[^\S\t\n]")


def _plain(text: str) -> bool:
    """Whether no field of ``text`` (lines joined by ``\\n``, no final one) is empty or has
    whitespace at either end, and no line is blank (a scan for any other whitespace first:
    without it, tabs and newlines side by side are all there is to look for)."""
    if _OTHER_SPACE.search(text):
        return not _NOT_PLAIN.search(text)
    ends = text.startswith(("\t", "\n")) or text.endswith("\t")
    return not ends and not any(pair in text for pair in ("\t\t", "\n\n", "\t\n", "\n\t"))


def _parsed_plain(data: bytes, path: Path) -> ConditionTable | None:
    """The table through pandas' C parser when the file is plain: UTF-8, no blank line (row
    ``k`` is on line ``k + 2``), no whitespace around a field, every row of the header's
    length, a valid header; else ``None``, and :func:`_parsed_checked` finds the first problem
    and its line. (A million trials: 1.3 s instead of 2.9 s, ``bench_condition_tables.py``.)"""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
    except UnicodeDecodeError:
        return None
    text = text.removesuffix("\n")
    if not text or not _plain(text):
        return None
    try:
        frame = pd.read_csv(
            io.StringIO(text), sep="\t", header=None, dtype=str, engine="c", na_filter=False,
            quoting=csv.QUOTE_NONE, skip_blank_lines=False,
        )  # fmt: skip
    except (pd.errors.ParserError, pd.errors.EmptyDataError):
        return None
    values = frame.to_numpy(dtype=object)
    if frame.isna().to_numpy().any() or (values == "").any():  # a short row, padded
        return None
    header = [str(h) for h in values[0]]
    try:
        _check_header(header, path, 1)
    except ParseError:
        return None
    return _table_of(header, values[1:], np.arange(2, len(values) + 1), path)


def _parsed_checked(data: bytes, path: Path) -> ConditionTable:
    """The table read line by line, every check with its line (the reference of
    :func:`_parsed_plain`)."""
    header: list[str] | None = None
    rows: list[list[str]] = []
    lines: list[int] = []
    for lineno, raw in enumerate(data.splitlines(), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ParseError(f"not UTF-8 text ({err.reason} at byte {err.start} of the line)",
                             path=path, line=lineno) from None  # fmt: skip
        if lineno == 1:
            text = text.removeprefix("\ufeff")  # a byte-order mark, as the trial readers
        if not text.strip():
            continue
        fields = text.split("\t")
        if header is None:
            header = fields
            _check_header(header, path, lineno)
            continue
        if len(fields) != len(header):
            raise ParseError(
                f"expected {len(header)} tab-separated fields ({', '.join(header)}), "
                f"found {len(fields)}", path=path, line=lineno,
            )  # fmt: skip
        empty = [header[k] for k, v in enumerate(fields) if not v.strip()]
        if empty:
            raise ParseError(f"empty value in column {empty[0]!r}", path=path, line=lineno)
        rows.append([v.strip() for v in fields])
        lines.append(lineno)
    if header is None:
        raise ParseError("empty condition table (no header)", path=path)
    values = np.asarray(rows, dtype=object).reshape(len(rows), len(header))
    return _table_of(header, values, lines, path)


def _table_of(header: list[str], values: np.ndarray, lines: Any, path: Path) -> ConditionTable:
    """The table of a header and its rows' fields (a ``(rows, fields)`` object array)."""
    n_id = 2 if _is_trial_header(header) else 1
    columns = {name: values[:, k] for k, name in enumerate(header[n_id:], start=n_id)}
    return condition_table(TRIAL if n_id == 2 else header[0], values[:, 0], columns,
                           source=str(path), lines=lines,
                           segments=values[:, 1] if n_id == 2 else None)  # fmt: skip


def _check_header(header: list[str], path: Path, lineno: int) -> None:
    names = [h.strip() for h in header]
    header[:] = names
    if names[0] not in SIDES:
        spaced = names[0].split()
        why = (" (the fields are separated by tabs, not spaces)"
               if len(spaced) > 1 and spaced[0] in SIDES else "")  # fmt: skip
        raise ParseError(
            f"the header's first field names the side ('model' or 'segment'), not "
            f"{names[0]!r}{why}", path=path, line=lineno,
        )  # fmt: skip
    if names[:2] == ["segment", "model"]:
        raise ParseError("a table of trials starts its header 'model<TAB>segment', not "
                         "'segment<TAB>model'", path=path, line=lineno)  # fmt: skip
    n_id = 2 if _is_trial_header(names) else 1
    if len(names) <= n_id:
        raise ParseError("the header names no attribute column", path=path, line=lineno)
    seen: set[str] = set()
    for name in names[n_id:]:
        if not name:
            raise ParseError("an empty column name in the header (a tab too many?)",
                             path=path, line=lineno)  # fmt: skip
        if name in SIDES or name in seen:
            raise ParseError(f"bad or repeated column name {name!r}", path=path, line=lineno)
        seen.add(name)


def _is_trial_header(names: list[str]) -> bool:
    """Whether a header names a trial table: ``model`` then ``segment``."""
    return list(names[:2]) == list(SIDES)


def _from_arrays(path: Path, arrays: Mapping[str, Any], attrs: Mapping[str, Any]) -> ConditionTable:
    """The table of a store's arrays (zarr or h5py arrays, read here once their shapes are
    checked: a trial store is refused before its matrices are read)."""
    if "bosaris_kind" in attrs:
        raise StoreError(f"{path}: a {attrs['bosaris_kind']} store, not a condition table")
    names = [n for n in SIDES if n in arrays]
    if len(names) == 2:
        side, id_names = TRIAL, names
    elif len(names) == 1:
        side, id_names = names[0], names
    elif "ids" in arrays and attrs.get("side") in SIDES:
        side, id_names = str(attrs["side"]), ["ids"]
    else:
        raise StoreError(
            f"{path}: a condition table holds one id array named 'model' or 'segment' "
            "(or 'ids' with the attribute side='model' or 'segment'), or both for a table of "
            "trials"
        )
    shape = tuple(arrays[id_names[0]].shape)
    for name, arr in arrays.items():
        if tuple(arr.shape) != shape or len(shape) != 1:
            what = "the models" if name in id_names else "the ids"
            raise StoreError(f"{path}: {name!r} has shape {tuple(arr.shape)}, {what} {shape}")
    ids = np.asarray(arrays[id_names[0]][...])
    columns = {}
    for name, arr in arrays.items():
        if name in id_names:
            continue
        values = np.asarray(arr[...])
        columns[name] = [_text(v) for v in values]
        missing = np.isnan(values) if values.dtype.kind in "fc" else np.zeros(len(values), bool)
        empty = [k for k, v in enumerate(columns[name]) if not v.strip() or missing[k]]
        if empty:  # a NaN of a float column is a missing value, as an empty text field
            first = _text(ids[empty[0]])
            raise StoreError(f"{path}: empty value in column {name!r} (id {first!r})")
    segments = [_text(v) for v in arrays["segment"][...]] if side == TRIAL else None
    return condition_table(side, [_text(v) for v in ids], columns, source=str(path),
                           segments=segments)  # fmt: skip


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _read_zarr(path: Path) -> ConditionTable:
    import zarr

    try:
        group = zarr.open_group(str(path), mode="r")
    except Exception as err:  # zarr raises several types for a non-store
        raise StoreError(f"{path}: not a zarr condition table ({err})") from None
    return _from_arrays(path, dict(group.arrays()), dict(group.attrs))


def _read_hdf5(path: Path) -> ConditionTable:
    import h5py

    try:
        f = h5py.File(path, "r")
    except OSError as err:
        raise StoreError(f"{path}: not an HDF5 condition table ({err})") from None
    with f:
        arrays = {n: f[n] for n in f if isinstance(f[n], h5py.Dataset)}
        return _from_arrays(path, arrays, {k: _text(v) for k, v in f.attrs.items()})
