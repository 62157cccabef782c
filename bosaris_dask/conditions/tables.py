"""Condition tables: one row per model (or segment) id, one column per attribute.

A table is tab-separated text whose header's first field names the side (``model`` or
``segment``) and whose other fields name the attributes::

    model	gender	language
    m1	f	eng
    m2	m	cmn

It can also be a zarr store or HDF5 file holding a 1-D array of ids named after the side
(``model`` or ``segment``; or ``ids`` with the attribute ``side``) and one 1-D array per
attribute. Values are strings (numbers are read as their text).

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
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bosaris_dask.errors import ParseError, StoreError, TrialError

__all__ = ["ConditionTable", "condition_table", "read_condition_table", "SIDES"]

#: The two sides of a trial, as named in a table's header.
SIDES = ("model", "segment")


@dataclass(frozen=True)
class ConditionTable:
    """Attributes of the ids of one side.

    Attributes
    ----------
    side
        ``"model"`` or ``"segment"``.
    ids
        The ids (1-D object array of ``str``, unique).
    columns
        Attribute name -> 1-D object array of ``str`` values, aligned with ``ids``.
    source
        Where the table came from (a path, or ``"<memory>"``), for error messages.
    lines
        The line of each id in a text file (``None`` otherwise), for error messages.
    """

    side: str
    ids: np.ndarray
    columns: Mapping[str, np.ndarray]
    source: str = "<memory>"
    lines: np.ndarray | None = field(default=None, repr=False)


def condition_table(
    side: str,
    ids: Iterable[Any],
    columns: Mapping[str, Iterable[Any]],
    *,
    source: str = "<memory>",
    lines: Iterable[int] | None = None,
) -> ConditionTable:
    """Build a :class:`ConditionTable`, checking the side, duplicate ids and column lengths.

    Raises
    ------
    TrialError
        An unknown side, a duplicate id (naming it, and its line when known), a column of
        another length than the ids, a column named like the side.

    Examples
    --------
    >>> condition_table("segment", ["s1", "s1"], {"language": ["eng", "cmn"]})
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.TrialError: <memory>: duplicate segment id 's1'
    """
    if side not in SIDES:
        raise TrialError(f"{source}: the side of a condition table is 'model' or 'segment', "
                         f"not {side!r}")  # fmt: skip
    id_arr = np.asarray([str(i) for i in ids], dtype=object)
    line_arr = None if lines is None else np.asarray(list(lines), dtype=np.int64)
    index = pd.Index(id_arr)
    if not index.is_unique:
        first = int(np.flatnonzero(index.duplicated())[0])
        where = f"{source}:{line_arr[first]}" if line_arr is not None else source
        raise TrialError(f"{where}: duplicate {side} id {id_arr[first]!r}")
    cols: dict[str, np.ndarray] = {}
    for name, values in columns.items():
        name = str(name)
        if name in SIDES or not name:
            raise TrialError(f"{source}: {name!r} cannot name an attribute column")
        arr = np.asarray([str(v) for v in values], dtype=object)
        if arr.shape != id_arr.shape:
            raise TrialError(
                f"{source}: column {name!r} has {arr.size} values for {id_arr.size} ids"
            )
        cols[name] = arr
    return ConditionTable(side, id_arr, cols, source, line_arr)


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
    header: list[str] | None = None
    ids: list[str] = []
    rows: list[list[str]] = []
    lines: list[int] = []
    with _open_bytes(path) as f:
        for lineno, raw in _numbered_lines(f, path):
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
            ids.append(fields[0].strip())
            rows.append([v.strip() for v in fields[1:]])
            lines.append(lineno)
    if header is None:
        raise ParseError("empty condition table (no header)", path=path)
    values = np.asarray(rows, dtype=object).reshape(len(rows), len(header) - 1)
    columns = {name: values[:, k] for k, name in enumerate(header[1:])}
    return condition_table(header[0], ids, columns, source=str(path), lines=lines)


def _open_bytes(path: Path) -> Any:
    """``path`` opened for reading lines as bytes; a ``.gz`` file through gzip."""
    if path.suffix == ".gz":
        import gzip

        return gzip.open(path, "rb")
    return open(path, "rb")


def _numbered_lines(f: Any, path: Path) -> Iterable[tuple[int, bytes]]:
    """``(line number, line)`` of ``f``, lines ended by ``\\n``, ``\\r\\n`` or a lone ``\\r`` (a
    table is one row per id: read whole); a broken gzip stream is a ParseError naming the file."""
    import gzip
    import zlib

    try:
        data = f.read()
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise ParseError(f"not a complete gzip file ({err or 'truncated'})", path=path) from None
    return enumerate(data.splitlines(), start=1)


def _check_header(header: list[str], path: Path, lineno: int) -> None:
    names = [h.strip() for h in header]
    header[:] = names
    if names[0] not in SIDES:
        raise ParseError(
            f"the header's first field names the side ('model' or 'segment'), not {names[0]!r}",
            path=path, line=lineno,
        )  # fmt: skip
    if len(names) < 2:
        raise ParseError("the header names no attribute column", path=path, line=lineno)
    seen: set[str] = set()
    for name in names[1:]:
        if not name or name in SIDES or name in seen:
            raise ParseError(f"bad or repeated column name {name!r}", path=path, line=lineno)
        seen.add(name)


def _from_arrays(path: Path, arrays: Mapping[str, Any], attrs: Mapping[str, Any]) -> ConditionTable:
    names = [n for n in SIDES if n in arrays]
    if len(names) == 1:
        side, id_name = names[0], names[0]
    elif "ids" in arrays and attrs.get("side") in SIDES:
        side, id_name = str(attrs["side"]), "ids"
    else:
        raise StoreError(
            f"{path}: a condition table holds one id array named 'model' or 'segment' "
            "(or 'ids' with the attribute side='model' or 'segment')"
        )
    ids = np.asarray(arrays[id_name])
    columns = {}
    for name, arr in arrays.items():
        if name == id_name:
            continue
        values = np.asarray(arr)
        if values.shape != ids.shape or values.ndim != 1:
            raise StoreError(f"{path}: {name!r} has shape {values.shape}, the ids {ids.shape}")
        columns[name] = [_text(v) for v in values]
        missing = np.isnan(values) if values.dtype.kind in "fc" else np.zeros(len(values), bool)
        empty = [k for k, v in enumerate(columns[name]) if not v.strip() or missing[k]]
        if empty:  # a NaN of a float column is a missing value, as an empty text field
            first = _text(ids[empty[0]])
            raise StoreError(f"{path}: empty value in column {name!r} (id {first!r})")
    return condition_table(side, [_text(v) for v in ids], columns, source=str(path))


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _read_zarr(path: Path) -> ConditionTable:
    import zarr

    try:
        group = zarr.open_group(str(path), mode="r")
    except Exception as err:  # zarr raises several types for a non-store
        raise StoreError(f"{path}: not a zarr condition table ({err})") from None
    arrays = {name: arr[...] for name, arr in group.arrays()}
    return _from_arrays(path, arrays, dict(group.attrs))


def _read_hdf5(path: Path) -> ConditionTable:
    import h5py

    try:
        with h5py.File(path, "r") as f:
            arrays = {n: f[n][...] for n in f if isinstance(f[n], h5py.Dataset)}
            attrs = {k: _text(v) for k, v in f.attrs.items()}
    except OSError as err:
        raise StoreError(f"{path}: not an HDF5 condition table ({err})") from None
    return _from_arrays(path, arrays, attrs)
