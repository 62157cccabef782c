"""BOSARIS quality-measure text files: ``q``, then ``id v1 ... vq`` per id."""

from __future__ import annotations

import os
from itertools import repeat
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from bosaris_dask.errors import ParseError, TrialError
from bosaris_dask.io.atomic import atomic_path
from bosaris_dask.io.text.blocks import BLOCK_BYTES, _iter_blocks
from bosaris_dask.io.text.layout import _first_nonblank_line, _Layout, _shown
from bosaris_dask.io.text.parse import _parse_block
from bosaris_dask.io.text.write import _WRITE_LINES, _join_lines, _writable_ids
from bosaris_dask.trials import quality_table


def read_quality_text(
    path: str | os.PathLike[str], *, block_bytes: int = BLOCK_BYTES
) -> xr.DataArray:
    """Read a BOSARIS quality-measure text file.

    The first non-blank line gives ``q``, the number of quality measures; every following line
    is ``id v1 ... vq`` (whitespace-separated). ``nan`` values are allowed (no quality for that
    id); infinities are not. Ids must be unique.

    Returns
    -------
    xarray.DataArray
        A quality table (:func:`bosaris_dask.trials.quality_table`), ids in file order.

    Raises
    ------
    ParseError
        With the file and line: a bad first line, a wrong number of fields, an unparsable or
        infinite value, an id given twice, ...

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "seg.qual"
    >>> _ = path.write_text("2\\ns1 0.5 12\\ns2 nan nan\\n")
    >>> table = read_quality_text(path)
    >>> table.id.values.tolist(), table.values.tolist()
    (['s1', 's2'], [[0.5, 12.0], [nan, nan]])
    """
    line, lineno, _, after = _first_nonblank_line(path)
    tokens = line.split()
    q = int(tokens[0]) if len(tokens) == 1 and tokens[0].isdigit() else 0
    if q < 1:
        raise ParseError(
            f"the first line of a quality file gives the number of measures (a positive "
            f"integer), not {_shown(line)}",
            path=path,
            line=lineno,
        )
    roles = (("id", 0),) + tuple(("value", j) for j in range(1, q + 1))
    layout = _Layout("quality", None, q + 1, roles, after, lineno + 1)
    table: dict[str, int] = {}  # id -> its line
    values: list[np.ndarray] = []
    last = lineno
    for block, first_line, n_lines in _iter_blocks(path, layout, block_bytes):
        chunk = _parse_block(block, first_line, n_lines, layout, path)
        last = first_line + n_lines - 1
        codes, uniques = chunk.ids["id"]
        lines = chunk.first_line + np.arange(chunk.n) if chunk.lines is None else chunk.lines
        seen = np.fromiter(map(table.__contains__, uniques), dtype=bool, count=len(uniques))
        twice = pd.Series(codes).duplicated().to_numpy() | seen[codes]
        if twice.any():
            i = int(np.flatnonzero(twice)[0])
            u = uniques[codes[i]]
            earlier = table.get(u, int(lines[int(np.flatnonzero(codes == codes[i])[0])]))
            raise ParseError(
                f"id {u!r} is given twice, first on line {earlier}", path=path, line=int(lines[i])
            )
        table.update(zip(uniques[codes].tolist(), lines.tolist(), strict=True))  # no repeats
        assert chunk.values is not None  # a quality layout has value columns
        values.append(chunk.values)
    if not table:
        raise ParseError("no ids in the quality file", path=path, line=last)
    return quality_table(list(table), np.concatenate(values))


def write_quality_text(table: xr.DataArray, path: str | os.PathLike[str]) -> None:
    """Write a quality table as a BOSARIS quality text file (``q``, then ``id v1 ... vq``).

    Values are written with the shortest repr that reads back exactly (``nan`` for NaN).

    Raises
    ------
    TrialError
        If the table is not ``("id", "measure")``, holds infinities, or an id cannot be written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from bosaris_dask.trials import quality_table
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "seg.qual"
    >>> write_quality_text(quality_table(["s1", "s2"], [[0.5, 12.0], [0.25, -1.0]]), path)
    >>> print(path.read_text(), end="")
    2
    s1 0.5 12.0
    s2 0.25 -1.0
    """
    if not isinstance(table, xr.DataArray) or table.dims != ("id", "measure"):
        raise TrialError("a quality table is a DataArray with dims ('id', 'measure')")
    ids = _writable_ids(table.id.values, "quality", False)
    values = np.asarray(table.values, dtype=np.float64)
    if np.isinf(values).any():
        raise TrialError("quality values must be finite or NaN (no quality)")
    q = values.shape[1]
    if q < 1:
        raise TrialError("a quality table needs at least one measure")
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(f"{q}\n".encode())
        for k in range(0, len(ids), _WRITE_LINES):
            block = values[k : k + _WRITE_LINES]
            pieces: list[Any] = [ids[k : k + _WRITE_LINES]]
            for j in range(q):
                pieces += [repeat(" "), map(float.__repr__, block[:, j].tolist())]
            pieces.append(repeat("\n"))
            f.write(_join_lines(pieces))
