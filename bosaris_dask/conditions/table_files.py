"""Reading condition tables from files: tab-separated text (a plain file through pandas' C
parser, anything else line by line with every check at its line), zarr stores and HDF5 files
(:mod:`bosaris_dask.conditions.tables` says what a table holds).

Examples
--------
>>> import pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "trials.tsv"
>>> _ = path.write_text("model\\tsegment\\tphone\\nm1\\ts1\\tY\\nm1\\ts2\\tN\\n")
>>> table = read_condition_table(path)
>>> table.side, table.segments.tolist(), table.lines.tolist()
('trial', ['s1', 's2'], [2, 3])
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bosaris_dask.conditions.tables import SIDES, TRIAL, ConditionTable, condition_table
from bosaris_dask.errors import ParseError, StoreError

__all__ = ["read_condition_table"]


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


#: Names of a side's id column that trial files' NIST headers use (``modelid``, ...): read as
#: ``model``/``segment`` in a table's first column (its second, a trial table's segment, only
#: where the name cannot be an attribute's).
_SIDE_SYNONYMS = {
    0: {"modelid": "model", "model_id": "model", "enrollment_id": "model", "enroll_id": "model",
        "segmentid": "segment", "segment_id": "segment", "testid": "segment",
        "test_id": "segment"},
    1: {"segmentid": "segment", "segment_id": "segment", "testid": "segment",
        "test_id": "segment"},
}  # fmt: skip


def side_names(header: list[str]) -> list[str]:
    """A header's names, its side columns spelled ``model``/``segment`` (``Model``,
    ``SEGMENT``, NIST's ``modelid``, ...).

    >>> side_names(["MODELID", " Segment ", "lang"])
    ['model', 'segment', 'lang']
    """
    names = [h.strip() for h in header]
    for k in range(min(2, len(names))):  # Model, SEGMENT: the sides in any case
        if names[k].lower() in SIDES:
            names[k] = names[k].lower()
        elif names[k].lower() in _SIDE_SYNONYMS[k] and (k == 0 or names[0] == "model"):
            names[k] = _SIDE_SYNONYMS[k][names[k].lower()]
    return names


def _check_header(header: list[str], path: Path, lineno: int) -> None:
    names = side_names(header)
    header[:] = names
    if names[0] not in SIDES:
        why = ""
        for sep, what in ((None, "spaces"), (",", "commas"), (";", "semicolons")):
            split = names[0].split(sep)
            if len(split) > 1 and split[0].strip().lower() in SIDES:
                why = f" (the fields are separated by tabs, not {what})"
        raise ParseError(
            f"the header's first field names the side ('model' or 'segment', or NIST's "
            f"'modelid' or 'segmentid'), not {names[0]!r}{why}", path=path, line=lineno,
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
    elif "ids" in arrays and _text(_side_of(arrays["ids"], attrs)) in SIDES:
        side, id_names = _text(_side_of(arrays["ids"], attrs)), ["ids"]
    else:
        raise StoreError(
            f"{path}: a condition table holds one id array named 'model' or 'segment' "
            "(or 'ids' with the attribute side='model' or 'segment', on the file or group, or "
            "on 'ids' itself), or both for a table of trials"
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


def _side_of(ids: Any, attrs: Mapping[str, Any]) -> Any:
    """The ``side`` attribute of a table's ``ids`` array, else of its group (file)."""
    own = getattr(ids, "attrs", {})
    return own["side"] if "side" in own else attrs.get("side", "")


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
