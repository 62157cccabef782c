"""Parsing one block of lines: a fast path (pandas' C parser), a reference path (the authority)."""

from __future__ import annotations

import csv
import io
import re
import warnings
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter, methodcaller
from typing import Any

import numpy as np
import pandas as pd

from bosaris_dask.errors import ParseError
from bosaris_dask.io.text.blocks import _count_byte
from bosaris_dask.io.text.labels import ACCEPTED_LABELS, label_sign
from bosaris_dask.io.text.layout import _NOT_FLOAT, _Layout, _shown

_ID_ROLES = ("model", "segment", "id")
_FLOAT_ROLES = ("score", "value")
_WS = " \t\n\r\x0b\x0c"  # ASCII whitespace, as bytes.split() sees it
_BOOL_WORD = re.compile(rb"(?i)true|false")
# pandas >= 3.1 always converts floats exactly (correctly rounded); before, only "round_trip" did
_PANDAS = tuple(int(x) for x in re.findall(r"\d+", pd.__version__)[:2])
_EXACT_FLOATS: dict[str, Any] = {} if _PANDAS >= (3, 1) else {"float_precision": "round_trip"}


@dataclass
class _Chunk:
    """The parsed records of one block."""

    ids: dict[str, tuple[np.ndarray, np.ndarray]]  # role -> (codes, uniques as str)
    values: np.ndarray | None  # float64 scores, int8 labels (+1/-1) or (n, q) float64 values
    first_line: int
    lines: np.ndarray | None  # 1-based line of each record; None: first_line + arange(n)
    n: int


def _parse_block(block: bytes, first_line: int, n_lines: int, layout: _Layout, path: Any) -> _Chunk:
    """Parse a block of whole lines.

    The fast path handles blocks in canonical form (single separators, no blank lines) and
    returns None at the least doubt; the reference path then parses the block again and is the
    one that decides what is an error and where.
    """
    chunk = _parse_fast(block, first_line, n_lines, layout)
    return chunk if chunk is not None else _parse_reference(block, first_line, layout, path)


def _fast_separator(block: bytes, n_lines: int, layout: _Layout) -> bytes | None:
    """The single separator pandas can split this block on, or None (use the reference path).

    pandas' C parser (without ``usecols``) raises on a line with too many fields, so when the
    separator count fits, every line has exactly ``nfields - 1`` separators. Empty fields (blank
    lines, doubled or edge separators) still parse, as ``""``: the fast path rejects those after
    parsing. Headerless files may use spaces or tabs (not both in one block). A lone CR (CRLF
    was made LF) would end a line for pandas, and vertical tabs or form feeds would separate
    fields for ``bytes.split`` but not for pandas: the reference path takes those blocks.
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


def _parse_fast(block: bytes, first_line: int, n_lines: int, layout: _Layout) -> _Chunk | None:
    sep = _fast_separator(block, n_lines, layout)
    if sep is None:
        return None
    floats = {j for role, j in layout.roles if role in _FLOAT_ROLES}
    dtypes = {j: (np.float64 if j in floats else object) for j in range(layout.nfields)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
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
    except (ValueError, TypeError, OverflowError):  # the reference path says what is wrong
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


def _good_id(u: Any) -> bool:
    return isinstance(u, str) and u != "" and u == u.strip(_WS)


def _stack(values: list[np.ndarray], labels: np.ndarray | None, layout: _Layout):
    if labels is not None:
        return labels
    if not values:
        return None
    return values[0] if layout.kind != "quality" else np.stack(values, axis=1)


def _parse_reference(block: bytes, first_line: int, layout: _Layout, path: Any) -> _Chunk:
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
    errors: list[tuple[int, str]] = []  # (index in block, message): the first one is raised
    bad = np.flatnonzero(~blank & ~keep)
    if bad.size:
        i = int(bad[0])
        errors.append((i, _count_message(layout, int(counts[i]))))
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
            codes, uniques, err = _reference_ids(tokens, role)
            ids[role] = (codes, uniques)
        elif role in _FLOAT_ROLES:
            v, err = _reference_floats(tokens, role)
            values.append(v)
        else:
            labels, err = _reference_labels(tokens)
        if err is not None:
            errors.append((int(at[err[0]]), err[1]))
    if errors:
        i, message = min(errors)
        raise ParseError(message, path=path, line=first_line + i)
    return _Chunk(ids, _stack(values, labels, layout), first_line, first_line + at, len(rows))


def _count_message(layout: _Layout, found: int) -> str:
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


def _reference_ids(tokens: list[bytes], role: str):
    codes, uniques = pd.factorize(np.array(tokens, dtype=object))
    decoded = np.array(list(map(_decode_id, uniques)), dtype=object)
    bad = np.flatnonzero(~np.fromiter(map(_good_id, decoded), dtype=bool, count=len(decoded)))
    err = None
    if bad.size:
        first = int(np.flatnonzero(np.isin(codes, bad))[0])
        u = uniques[codes[first]]
        if decoded[codes[first]] is None:
            err = (first, f"{role} id {u[:60]!r} is not valid UTF-8")
        elif not u.strip():
            err = (first, f"empty {role} id")
        else:
            err = (first, f"{role} id {decoded[codes[first]]!r} has surrounding whitespace")
    return codes, decoded, err


def _decode_id(u: bytes) -> str | None:
    try:
        return u.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _reference_floats(tokens: list[bytes], role: str):
    what = "score" if role == "score" else "quality value"
    joined = b",".join(tokens)
    values = None
    if joined.isascii() and not _NOT_FLOAT.search(joined):
        try:
            values = np.fromiter(map(float, tokens), dtype=np.float64, count=len(tokens))
        except ValueError:
            values = None
    parsed = None
    if values is None:  # some token does not parse: +inf stands for it in the checks below
        parsed = [_float_or_none(t) for t in tokens]
        values = np.array([np.inf if v is None else v for v in parsed], dtype=np.float64)
    bad = np.isinf(values) if role == "value" else ~np.isfinite(values)
    if bad.any():  # the first bad token: unparsable or not finite
        first = int(np.flatnonzero(bad)[0])
        if parsed is not None and parsed[first] is None:
            return values, (first, f"cannot parse {what} {_shown(tokens[first])}")
        return values, (first, f"{what} {_shown(tokens[first])} is not finite")
    return values, None


def _float_or_none(token: bytes) -> float | None:
    if not token.isascii() or _NOT_FLOAT.search(token):
        return None
    try:
        return float(token)
    except ValueError:
        return None


def _reference_labels(tokens: list[bytes]):
    codes, uniques = pd.factorize(np.array(tokens, dtype=object))
    sign = np.array([label_sign(u) for u in uniques], dtype=np.int8)
    bad = np.flatnonzero(sign == 0)
    err = None
    if bad.size:
        first = int(np.flatnonzero(np.isin(codes, bad))[0])
        label = _shown(uniques[codes[first]])
        err = (first, f"label {label} is not one of {ACCEPTED_LABELS} (any case)")
    return sign[codes], err
