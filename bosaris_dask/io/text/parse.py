"""Parsing one block of lines: pandas' C parser on canonical blocks, an exact check of the rest.

A block in canonical form (single separators, no blank lines) goes straight to pandas' typed
parse. Any other block is first made canonical (:mod:`~bosaris_dask.io.text.canonical`, keeping
the line of each record) and parsed the same way; a block that the typed parse still does not
take is checked field by field (:mod:`~bosaris_dask.io.text.checked`), which names its first bad
line or, for the rare valid block pandas misreads, gives its records. The line-by-line parser
that these paths must agree with is the oracle of the tests (``tests/text_oracle.py``).

Examples
--------
>>> from bosaris_dask.io.text.layout import _Layout
>>> layout = _Layout("scores", None, 3, (("model", 0), ("segment", 1), ("score", 2)), 0, 1)
>>> chunk = _parse_block(b"m1  s1 1.5\\n\\nm2 s1\\t-2 \\n", 1, 3, layout, "f.txt")
>>> chunk.values.tolist(), chunk.lines.tolist()
([1.5, -2.0], [1, 3])
>>> _parse_block(b"m1 s1 1.5\\n\\nm2 s1 nan\\n", 1, 3, layout, "f.txt")
Traceback (most recent call last):
...
bosaris_dask.errors.ParseError: f.txt:3: score 'nan' is not finite
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from typing import Any

import numpy as np
import pandas as pd

from bosaris_dask.io.text.blocks import _count_byte
from bosaris_dask.io.text.canonical import _canonical
from bosaris_dask.io.text.checked import _parse_checked
from bosaris_dask.io.text.labels import label_sign
from bosaris_dask.io.text.layout import _Layout
from bosaris_dask.io.text.records import _FLOAT_ROLES, _ID_ROLES, _WS, _Chunk, _good_id, _stack

_TO_SPACE = bytes.maketrans(b"\r\x0b\x0c", b"   ")
_BOOL_WORD = re.compile(rb"(?i)true|false")
# pandas >= 3.1 always converts floats exactly (correctly rounded); before, only "round_trip" did
_PANDAS = tuple(int(x) for x in re.findall(r"\d+", pd.__version__)[:2])
_EXACT_FLOATS: dict[str, Any] = {} if _PANDAS >= (3, 1) else {"float_precision": "round_trip"}


def _parse_block(block: bytes, first_line: int, n_lines: int, layout: _Layout, path: Any) -> _Chunk:
    """Parse a block of whole lines (each ending with LF) whose first line is ``first_line``.

    The fast path returns None at the least doubt; the block is then made canonical and tried
    again, and what the fast path still refuses is checked field by field.

    Raises
    ------
    ParseError
        At the first bad line of the block (file and line), with the reason.
    """
    chunk = _parse_fast(block, first_line, n_lines, layout)
    if chunk is None and layout.sep is None:  # runs of whitespace: pandas splits them itself
        chunk = _parse_fast(block, first_line, n_lines, layout, True)
    if chunk is not None:
        return chunk
    canonical, kept = _canonical(block, layout)
    lines = first_line + kept
    if len(kept) and canonical != block:  # the same block would be refused again
        chunk = _parse_fast(canonical, first_line, len(kept), layout)
    if chunk is None:
        return _parse_checked(canonical, first_line, lines, layout, path)
    chunk.lines = None if len(kept) == n_lines else lines
    return chunk


def _fast_separator(block: bytes, n_lines: int, layout: _Layout) -> bytes | None:
    """The single separator pandas can split this block on, or None (not canonical).

    pandas' C parser (without ``usecols``) raises on a line with too many fields, so when the
    separator count fits, every line has exactly ``nfields - 1`` separators. Empty fields (blank
    lines, doubled or edge separators) still parse, as ``""``: the fast path rejects those after
    parsing. Headerless files may use spaces or tabs (not both in one block). A lone CR (CRLF
    was made LF) would end a line for pandas, and vertical tabs or form feeds would separate
    fields for ``bytes.split`` but not for pandas: such blocks are made canonical first.
    """
    if b"\r" in block:
        return None
    sep = layout.sep
    if sep is None:
        if b"\x0b" in block or b"\x0c" in block:
            return None
        tabs, spaces = b"\t" in block, b" " in block
        if tabs and spaces:
            return None
        sep = b"\t" if tabs else b" "
    return sep if _count_byte(block, sep[0]) == n_lines * (layout.nfields - 1) else None


def _parse_fast(
    block: bytes, first_line: int, n_lines: int, layout: _Layout, runs: bool = False
) -> _Chunk | None:
    """The records of ``block``, or None at the least doubt.

    ``runs``: fields of a headerless block separated by runs of spaces and tabs, split by pandas
    itself (``sep=r"\\s+"``) once CR, VT and FF (whitespace for ``bytes.split``, not for pandas)
    became spaces. A line with too many fields is then pandas' ParserWarning (raised here), one
    with too few an empty field, a blank line an empty row: all refused below.
    """
    if runs:
        if b"\r" in block or b"\x0b" in block or b"\x0c" in block:
            block = block.translate(_TO_SPACE)
        sep = b"\\s+"
    else:
        sep = _fast_separator(block, n_lines, layout)
    if sep is None:
        return None
    floats = {j for role, j in layout.roles if role in _FLOAT_ROLES}
    dtypes = {j: (np.float64 if j in floats else object) for j in range(layout.nfields)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            warnings.simplefilter("error", pd.errors.ParserWarning)  # data of a long line dropped
            df = pd.read_csv(
                io.BytesIO(block),
                sep=sep.decode(),
                header=None,
                names=list(range(layout.nfields)),
                index_col=False,
                dtype=dtypes,
                engine="c",
                quoting=csv.QUOTE_NONE,
                na_filter=False,
                skip_blank_lines=False,
                encoding="utf-8",
                encoding_errors="strict",
                **_EXACT_FLOATS,
            )
    except (ValueError, TypeError, OverflowError, pd.errors.ParserWarning):  # see the checked path
        return None
    if len(df) != n_lines:
        return None
    if layout.sep is None:  # an empty field in an ignored column: a blank line or extra spaces
        used = {j for _, j in layout.roles}
        for j in range(layout.nfields):
            if j not in used and (df[j].to_numpy(dtype=object) == "").any():
                return None
    ids: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    values: list[np.ndarray] = []
    labels = None
    for role, j in layout.roles:
        if role in _ID_ROLES:
            codes, uniques = pd.factorize(df[j].to_numpy(dtype=object))
            if not all(map(_good_id, uniques)):
                return None
            ids[role] = (codes, uniques)
        elif role in _FLOAT_ROLES:
            v = df[j].to_numpy(dtype=np.float64)
            ok = np.isfinite(v) if role == "score" else ~np.isinf(v)
            if not ok.all():
                return None
            # pandas reads a column of only true/false words as 1.0/0.0
            if np.all((v == 0.0) | (v == 1.0)) and _BOOL_WORD.search(block):
                return None
            values.append(v)
        else:
            codes, uniques = pd.factorize(df[j].to_numpy(dtype=object))
            if not all(isinstance(u, str) for u in uniques):
                return None
            sign = np.array([label_sign(u.strip(_WS).encode()) for u in uniques], dtype=np.int8)
            if not sign.all():
                return None
            labels = sign[codes]
    return _Chunk(ids, _stack(values, labels, layout), first_line, None, len(df))
