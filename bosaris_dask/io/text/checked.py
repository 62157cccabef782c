"""The slow, exact path of a canonical block that the fast parser did not take: its fields
checked column by column, so that a bad block names its first bad line.

The block is split by pandas' C parser into raw fields (every column as text, bytes kept as
they are through latin-1), after the lines with a wrong number of fields are counted out with
numpy. Each column is then checked on its distinct values only: ids (UTF-8, not empty, no
surrounding whitespace), numbers (decimal, converted exactly with Python's ``float``, finite),
labels (:mod:`bosaris_dask.io.text.labels`). The first line with a problem is raised as
``file:line: reason`` (when a line has several problems, the reason that sorts first); a block
without problems (say ids ``true``/``false`` that pandas' typed parse took for booleans) gives
its records.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.io.text.layout import _Layout
>>> layout = _Layout("scores", None, 3, (("model", 0), ("segment", 1), ("score", 2)), 0, 1)
>>> _parse_checked(b"true s 1\\nfalse s 0\\n", 4, np.array([4, 6]), layout, "f.txt").values
array([1., 0.])
>>> _parse_checked(b"a s 1\\nb s\\nc s x\\n", 4, np.array([4, 6, 7]), layout, "f.txt")
Traceback (most recent call last):
...
bosaris_dask.errors.ParseError: f.txt:6: expected 3 fields (model segment score), found 2
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import numpy as np
import pandas as pd

from bosaris_dask.errors import ParseError
from bosaris_dask.io.text.labels import ACCEPTED_LABELS, label_sign
from bosaris_dask.io.text.layout import _Layout, _shown
from bosaris_dask.io.text.records import (
    _FLOAT_ROLES,
    _ID_ROLES,
    _Chunk,
    _count_message,
    _good_id,
    _stack,
)

_NOT_FLOAT = re.compile(rb"[\s_]")


def _parse_checked(
    block: bytes, first_line: int, lines: np.ndarray, layout: _Layout, path: Any
) -> _Chunk:
    """The records of a canonical ``block`` whose lines are ``lines`` of the file (cut from a
    block that starts at ``first_line``), or the ParseError of its first bad line."""
    sep = layout.sep or b" "
    a = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(a == 10)
    found = np.diff(np.searchsorted(np.flatnonzero(a == sep[0]), ends), prepend=0) + 1
    good = found == layout.nfields
    errors: list[tuple[int, str]] = []  # (index in block, message): the first one is raised
    if not good.all():
        i = int(np.argmin(good))
        errors.append((i, _count_message(layout, int(found[i]))))
        starts = np.concatenate(([0], ends[:-1] + 1))
        block = a[np.repeat(good, ends - starts + 1)].tobytes()
    at = np.flatnonzero(good)  # block index of each record
    columns = _columns(block, sep, layout.nfields, len(at))
    ids: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    values: list[np.ndarray] = []
    labels = None
    for role, j in layout.roles:
        codes, uniques = pd.factorize(columns[j])
        raw = [u.encode("latin-1") for u in uniques]
        if layout.sep is not None and role not in _ID_ROLES:
            raw = [u.strip() for u in raw]  # spaces around a number or a label are ignored
        if role in _ID_ROLES:
            pairs = [_id_reason(u, role) for u in raw]
            reasons = [reason for _, reason in pairs]
            ids[role] = (codes, np.array([text for text, _ in pairs], dtype=object))
        elif role in _FLOAT_ROLES:
            v, reasons = _floats(raw, role)
            values.append(v[codes])
        else:
            sign = np.fromiter(map(label_sign, raw), dtype=np.int8, count=len(raw))
            reasons = [None if s else _label_reason(u) for s, u in zip(sign, raw, strict=True)]
            labels = sign[codes]
        bad = np.flatnonzero([r is not None for r in reasons])
        if bad.size:
            first = int(np.flatnonzero(np.isin(codes, bad))[0])
            errors.append((int(at[first]), reasons[codes[first]]))
    if errors:
        i, message = min(errors)
        raise ParseError(message, path=path, line=int(lines[i]))
    return _Chunk(ids, _stack(values, labels, layout), first_line, lines[at], len(at))


def _columns(block: bytes, sep: bytes, nfields: int, n: int) -> list[np.ndarray]:
    """The raw fields of ``n`` lines of exactly ``nfields`` fields, column by column."""
    if n == 0:
        return [np.empty(0, dtype=object)] * nfields
    df = pd.read_csv(
        io.BytesIO(block), sep=sep.decode(), header=None, names=list(range(nfields)),
        index_col=False, dtype=object, engine="c", quoting=csv.QUOTE_NONE, na_filter=False,
        skip_blank_lines=False, lineterminator="\n", encoding="latin-1",
    )  # fmt: skip
    return [df[j].to_numpy(dtype=object) for j in range(nfields)]


def _id_reason(u: bytes, role: str) -> tuple[str | None, str | None]:
    """(the id as text, or None; what is wrong with it, or None)."""
    try:
        text = u.decode("utf-8")
    except UnicodeDecodeError:
        return None, f"{role} id {u[:60]!r} is not valid UTF-8"
    if _good_id(text):
        return text, None
    if not u.strip():
        return text, f"empty {role} id"
    return text, f"{role} id {text!r} has surrounding whitespace"


def _floats(raw: list[bytes], role: str) -> tuple[np.ndarray, list[str | None]]:
    """The values of distinct number tokens, and what is wrong with each."""
    what = "score" if role == "score" else "quality value"
    values = np.empty(len(raw), dtype=np.float64)
    reasons: list[str | None] = []
    for k, token in enumerate(raw):
        v = None
        if token.isascii() and not _NOT_FLOAT.search(token):
            try:
                v = float(token)
            except ValueError:
                pass
        values[k] = np.inf if v is None else v
        if v is None:
            reasons.append(f"cannot parse {what} {_shown(token)}")
        elif np.isinf(v) or (role == "score" and np.isnan(v)):
            reasons.append(f"{what} {_shown(token)} is not finite")
        else:
            reasons.append(None)
    return values, reasons


def _label_reason(u: bytes) -> str:
    return f"label {_shown(u)} is not one of {ACCEPTED_LABELS} (any case)"
