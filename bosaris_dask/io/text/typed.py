"""A canonical block's typed fields (one separator byte, every line complete): pyarrow's CSV
reader where it is installed (its ids dictionary-encoded, with no Python object per field:
a 1e7-line file reads 1.3x faster than with pandas), else pandas' C parser. Either refuses a
block at the least doubt (returns None) and :mod:`bosaris_dask.io.text.parse` then makes it
canonical or checks it field by field; the tests run both against the oracle.

Examples
--------
>>> from bosaris_dask.io.text.layout import _Layout
>>> layout = _Layout("scores", None, 3, (("model", 0), ("segment", 1), ("score", 2)), 0, 1)
>>> columns = typed_columns(b"m1 s1 1.5\\nm2 s1 -2\\n", b" ", layout, {2})
>>> columns.n, columns.factorized(0)[1].tolist(), columns.floats(2).tolist()
(2, ['m1', 'm2'], [1.5, -2.0])
>>> typed_columns(b"m1 s1 1.5\\nm2 s1\\n", b" ", layout, {2}) is None  # a missing field
True
"""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bosaris_dask.io.text.id_codes import Utf8Ids
from bosaris_dask.io.text.layout import _Layout

__all__ = ["NO_ARROW_ENV", "read_csv", "typed_columns"]

# pandas >= 3.1 always converts floats exactly (correctly rounded); before, only "round_trip" did
_PANDAS = tuple(int(x) for x in re.findall(r"\d+", pd.__version__)[:2])
_EXACT_FLOATS: dict[str, Any] = {} if _PANDAS >= (3, 1) else {"float_precision": "round_trip"}


def _load_arrow() -> Any:
    """``pyarrow`` and its CSV reader where installed and not turned off by :data:`NO_ARROW_ENV`."""
    if os.environ.get(NO_ARROW_ENV):
        return None
    try:
        import pyarrow
        import pyarrow.compute
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return None
    return pyarrow


#: Set this environment variable to parse blocks with pandas even where pyarrow is installed.
NO_ARROW_ENV = "BOSARIS_DASK_NO_PYARROW"
#: pyarrow, whose CSV reader parses a canonical block in half the time of pandas' (its ids
#: dictionary-encoded without a Python object per field); None: pandas' C parser.
_ARROW = _load_arrow()


@dataclass
class _PandasColumns:
    """A block's typed fields, parsed by pandas' C parser (objects for ids and labels)."""

    frame: pd.DataFrame

    @property
    def n(self) -> int:
        return len(self.frame)

    def factorized(self, j: int, bytes_from: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Codes and distinct values (Python strings: ``bytes_from`` is for pyarrow's)."""
        return pd.factorize(self.frame[j].to_numpy(dtype=object))

    def floats(self, j: int) -> np.ndarray:
        return self.frame[j].to_numpy(dtype=np.float64)

    def has_empty(self, j: int) -> bool:
        return bool((self.frame[j].to_numpy(dtype=object) == "").any())


@dataclass
class _ArrowColumns:
    """A block's typed fields, parsed by pyarrow (ids and labels dictionary-encoded)."""

    table: Any

    @property
    def n(self) -> int:
        return self.table.num_rows

    def factorized(self, j: int, bytes_from: int | None = None) -> tuple[np.ndarray, Any]:
        """Codes and distinct values in first-appearance order, as ``pandas.factorize``; the
        values as their bytes (:class:`.id_codes.Utf8Ids`, no Python strings) where there are
        at least ``bytes_from``."""
        encoded = self.table.column(j).combine_chunks().dictionary_encode()
        codes = encoded.indices.to_numpy().astype(np.intp)
        values = encoded.dictionary
        if bytes_from is None or len(values) < bytes_from:
            return codes, np.array(values.to_pylist(), dtype=object)
        _, offsets, data = values.buffers()
        offsets = np.frombuffer(offsets, dtype=np.int32)[values.offset :][: len(values) + 1]
        data = np.frombuffer(data if data is not None else b"", dtype=np.uint8)
        return codes, Utf8Ids(offsets, data)

    def floats(self, j: int) -> np.ndarray:  # writable, as pandas' (arrow's may be a view)
        return np.require(self.table.column(j).to_numpy(), requirements="W")

    def has_empty(self, j: int) -> bool:
        compute = _ARROW.compute
        return bool(compute.any(compute.equal(self.table.column(j), "")).as_py())


def _first_line_fields(block: bytes, sep: bytes, runs: bool) -> int:
    end = block.find(b"\n")
    first = block if end < 0 else block[:end]
    return len(first.split()) if runs else first.count(sep) + 1


def _pandas_columns(
    block: bytes, sep: bytes, layout: _Layout, floats: set[int], runs: bool = False
) -> Any:
    # a first line of one field too many would be read as an index and its last field dropped
    # (pandas' ParserWarning: not caught, as warnings' filters are not thread-safe and blocks
    # are parsed in threads); any later line of too many fields is an error
    if _first_line_fields(block, sep, runs) != layout.nfields:
        return None
    dtypes = {j: (np.float64 if j in floats else object) for j in range(layout.nfields)}
    try:
        frame = read_csv(
            block, sep, layout.nfields, dtypes, encoding="utf-8", encoding_errors="strict",
            **_EXACT_FLOATS,
        )  # fmt: skip
    except (ValueError, TypeError, OverflowError):  # see the checked path
        return None
    return _PandasColumns(frame)


def _arrow_columns(block: bytes, sep: bytes, layout: _Layout, floats: set[int]) -> Any:
    """pyarrow's parse of a block split on the one byte ``sep``: strings must be valid UTF-8,
    nothing is quoted or null, an empty line is a row of one field (refused); its floats are
    correctly rounded and take Python's syntax (the tests compare them with the oracle's)."""
    names = [str(j) for j in range(layout.nfields)]
    types = {name: (_ARROW.float64() if j in floats else _ARROW.string())
             for j, name in enumerate(names)}  # fmt: skip
    try:
        table = _ARROW.csv.read_csv(
            io.BytesIO(block),
            read_options=_ARROW.csv.ReadOptions(column_names=names, use_threads=False,
                                                block_size=len(block) + 1),
            parse_options=_ARROW.csv.ParseOptions(delimiter=sep.decode(), quote_char=False,
                                                  ignore_empty_lines=False),
            convert_options=_ARROW.csv.ConvertOptions(
                column_types=types, null_values=[], strings_can_be_null=False,
                quoted_strings_can_be_null=False, check_utf8=True),
        )  # fmt: skip
    except _ARROW.ArrowException:
        return None
    return _ArrowColumns(table)  # column j by position


def read_csv(block: bytes, sep: bytes, nfields: int, dtype: Any, **options: Any) -> pd.DataFrame:
    """pandas' C parser over ``block``: ``nfields`` numbered columns, no quoting, no NA values."""
    return pd.read_csv(
        io.BytesIO(block), sep=sep.decode(), header=None, names=list(range(nfields)),
        index_col=False, dtype=dtype, engine="c", quoting=csv.QUOTE_NONE, na_filter=False,
        skip_blank_lines=False, **options,
    )  # fmt: skip


def typed_columns(
    block: bytes, sep: bytes, layout: _Layout, floats: set[int], runs: bool = False
) -> _PandasColumns | _ArrowColumns | None:
    """The fields of ``block`` split on ``sep`` (``runs``: pandas' split on runs of whitespace),
    the columns in ``floats`` as float64, the others as strings; None where the parser refuses
    the block (a wrong field count, an empty, quoted or non-UTF-8 field, a bad number)."""
    if _ARROW is not None and not runs:
        return _arrow_columns(block, sep, layout, floats)
    return _pandas_columns(block, sep, layout, floats, runs)
