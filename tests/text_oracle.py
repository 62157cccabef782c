"""The oracle of the text reader: a plain line-by-line parser of one block of whole lines.

This was the reader's reference parser (``bosaris_dask/io/text/parse.py``) until the reader
kept only its vectorised paths; it lives here as the authority the property tests compare the
reader with (``tests/test_text_oracle.py``). It splits every line with ``bytes.split`` (runs
of ASCII whitespace) or on single tabs (a tab-separated NIST table), skips blank lines, and
checks every field of every line: the first bad line of the block (the first message in
sorting order when a line has several problems) is raised as ``ParseError(path, line)``.

It shares no parsing code with the package: only the layout record, the error class and the
label vocabulary (which is the contract, not an algorithm).

Examples
--------
>>> from bosaris_dask.io.text.layout import _Layout
>>> layout = _Layout("scores", None, 3, (("model", 0), ("segment", 1), ("score", 2)), 0, 1)
>>> out = parse_reference(b"m1  s1 1.5\\n\\n m2\\ts1 -2\\n", 10, layout, "f.txt")
>>> out.ids["model"][1][out.ids["model"][0]].tolist(), out.values.tolist(), out.lines.tolist()
(['m1', 'm2'], [1.5, -2.0], [10, 12])
>>> parse_reference(b"m1 s1 1.5\\nm2 s1 x\\n", 10, layout, "f.txt")
Traceback (most recent call last):
...
bosaris_dask.errors.ParseError: f.txt:11: cannot parse score 'x'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter, methodcaller
from typing import Any

import numpy as np
import pandas as pd

from bosaris_dask.errors import ParseError
from bosaris_dask.io.text.labels import ACCEPTED_LABELS, label_sign

_ID_ROLES = ("model", "segment", "id")
_FLOAT_ROLES = ("score", "value")
_WS = " \t\n\r\x0b\x0c"  # ASCII whitespace, as bytes.split() sees it
_NOT_FLOAT = re.compile(rb"[\s_]")


@dataclass
class Records:
    """The parsed records of one block: ids (codes, uniques), values, 1-based lines."""

    ids: dict[str, tuple[np.ndarray, np.ndarray]]
    values: np.ndarray | None
    lines: np.ndarray
    n: int


def parse_reference(block: bytes, first_line: int, layout: Any, path: Any) -> Records:
    """Parse ``block`` (whole lines, each ending with LF) whose first line is ``first_line``."""
    lines = block.split(b"\n")
    lines.pop()  # the block ends with a newline
    if layout.sep is None:
        fields = list(map(bytes.split, lines))
    else:
        fields = list(map(methodcaller("split", layout.sep), lines))
    n = len(lines)
    blank = np.fromiter(map(len, map(bytes.strip, lines)), dtype=np.int64, count=n) == 0
    counts = np.fromiter(map(len, fields), dtype=np.int64, count=n)
    keep = ~blank & (counts == layout.nfields)
    # (index in block, rank, message): the first bad line's error is raised, a comment's first
    errors: list[tuple[int, int, str]] = []
    hashed = [i for i, f in enumerate(fields) if not blank[i] and f and f[0][:1] == b"#"]
    if hashed:
        errors.append(
            (
                hashed[0],
                0,
                "a line starting with '#' (a comment?): trial lists have "
                "no comment lines; remove them, e.g. grep -v '^#' FILE",
            )
        )
    bad = np.flatnonzero(~blank & ~keep)
    if bad.size:
        i = int(bad[0])
        errors.append((i, 1, count_message(layout, int(counts[i]))))
    rows = list(compress(fields, keep))
    at = np.flatnonzero(keep)  # block index of each row
    ids: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    values: list[np.ndarray] = []
    labels = None
    for role, j in layout.roles:
        tokens = list(map(itemgetter(j), rows))
        if layout.sep is not None and role not in _ID_ROLES:
            tokens = list(map(bytes.strip, tokens))  # as pandas does with numbers
        if role in _ID_ROLES:
            codes, uniques, err = _ids(tokens, role)
            ids[role] = (codes, uniques)
        elif role in _FLOAT_ROLES:
            v, err = _floats(tokens, role)
            values.append(v)
        else:
            labels, err = _labels(tokens)
        if err is not None:
            errors.append((int(at[err[0]]), 1, err[1]))
    if errors:
        i, _, message = min(errors)
        raise ParseError(message, path=path, line=first_line + i)
    if labels is not None:
        out = labels
    elif not values:
        out = None
    else:
        out = values[0] if layout.kind != "quality" else np.stack(values, axis=1)
    return Records(ids, out, first_line + at, len(rows))


def count_message(layout: Any, found: int) -> str:
    how = "tab-separated " if layout.sep else ""
    what = {"scores": "model segment score", "key": "model segment target|nontarget"}.get(
        layout.kind, "model segment"
    )
    if layout.form:
        what = layout.form
    elif layout.kind == "quality":
        what = f"an id and {layout.nfields - 1} quality values"
    elif layout.header:
        what = "one per header column"
    elif layout.kind == "ndx" and layout.nfields == 3:
        what = "model segment, and an ignored third field as on the first line"
    return f"expected {layout.nfields} {how}fields ({what}), found {found}"


def _shown(token: bytes, limit: int = 60) -> str:
    return repr(token[:limit].decode("utf-8", "backslashreplace"))


def _good_id(u: Any) -> bool:
    return (isinstance(u, str) and u != "" and u == u.strip(_WS) and u[:1] != "#"
            and "\ufeff" not in u)  # fmt: skip


def _ids(tokens: list[bytes], role: str):
    codes, uniques = pd.factorize(np.array(tokens, dtype=object))
    decoded = np.array(list(map(_decode, uniques)), dtype=object)
    bad = np.flatnonzero(~np.fromiter(map(_good_id, decoded), dtype=bool, count=len(decoded)))
    err = None
    if bad.size:
        first = int(np.flatnonzero(np.isin(codes, bad))[0])
        u = uniques[codes[first]]
        if decoded[codes[first]] is None:
            err = (first, f"{role} id {u[:60]!r} is not valid UTF-8")
        elif not u.strip():
            err = (first, f"empty {role} id")
        elif "\ufeff" in decoded[codes[first]]:
            err = (first, f"{role} id {decoded[codes[first]]!r} holds a byte-order mark (files "
                          "joined with cat? remove it)")  # fmt: skip
        elif decoded[codes[first]].startswith("#"):
            err = (first, f"{role} id {decoded[codes[first]]!r} starts with '#': trial lists "
                          "have no comment lines")  # fmt: skip
        else:
            err = (first, f"{role} id {decoded[codes[first]]!r} has surrounding whitespace")
    return codes, decoded, err


def _decode(u: bytes) -> str | None:
    try:
        return u.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _floats(tokens: list[bytes], role: str):
    what = "score" if role == "score" else "quality value"
    parsed = [_float_or_none(t) for t in tokens]
    values = np.array([np.inf if v is None else v for v in parsed], dtype=np.float64)
    bad = np.isinf(values) if role == "value" else ~np.isfinite(values)
    if bad.any():  # the first bad token: unparsable or not finite
        first = int(np.flatnonzero(bad)[0])
        if parsed[first] is None:
            return values, (first, f"cannot parse {what} {_shown(tokens[first])}")
        overflow = np.isinf(values[first]) and b"inf" not in tokens[first].lower()
        why = " (beyond float64's range)" if overflow else ""
        return values, (first, f"{what} {_shown(tokens[first])} is not finite{why}")
    return values, None


def _float_or_none(token: bytes) -> float | None:
    if not token.isascii() or _NOT_FLOAT.search(token):
        return None
    try:
        return float(token)
    except ValueError:
        return None


def _labels(tokens: list[bytes]):
    codes, uniques = pd.factorize(np.array(tokens, dtype=object))
    sign = np.array([label_sign(u) for u in uniques], dtype=np.int8)
    bad = np.flatnonzero(sign == 0)
    err = None
    if bad.size:
        first = int(np.flatnonzero(np.isin(codes, bad))[0])
        token = uniques[codes[first]]
        label = _shown(token)
        err = (first, f"label {label} is not one of {ACCEPTED_LABELS} (any case)")
        value = _float_or_none(token)
        if value is not None and value not in (0.0, 1.0) and not token.lstrip(b"+-").isdigit():
            err = (first, err[1] + ": a score file given as the key?")
    return sign[codes], err
