"""Cutting a text file into blocks of whole lines and parsing each: a fast typed parse
(:mod:`bosaris_dask.io.text.typed`: pyarrow's or pandas' C parser), else the block made
canonical (:func:`_canonical`) and parsed again, else checked field by field
(:func:`_parse_checked`) for the first bad line. ``tests/text_oracle.py`` is the line-by-line
parser these paths must agree with.

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

import os
import re
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import dask.system
import numpy as np
import pandas as pd

from bosaris_dask import config
from bosaris_dask.errors import ParseError
from bosaris_dask.io.text import id_codes
from bosaris_dask.io.text.id_codes import Utf8Ids, bytes_coder
from bosaris_dask.io.text.labels import ACCEPTED_LABELS, label_sign, label_words
from bosaris_dask.io.text.layout import (
    COMMENT_LINE,
    MAX_LINE_BYTES,
    _Layout,
    _nul_byte,
    _open,
    _shown,
    _too_long,
    number_of_token,
)
from bosaris_dask.io.text.typed import read_csv, typed_columns

_ID_ROLES = ("model", "segment", "id")
_FLOAT_ROLES = ("score", "value")
_WS = " \t\n\r\x0b\x0c"  # ASCII whitespace, as bytes.split() sees it


@dataclass
class _Chunk:
    """The parsed records of one block."""

    ids: dict[str, tuple[np.ndarray, Any]]  # role -> (codes, uniques: str or Utf8Ids)
    values: np.ndarray | None  # float64 scores, int8 labels (+1/-1) or (n, q) float64 values
    first_line: int
    lines: np.ndarray | None  # 1-based line of each record; None: first_line + arange(n)
    n: int
    #: A label column's pairs of words: {pair index: (word, its first record)}
    words: dict[int, tuple[str, int]] | None = None
    #: int8 labels (+1/-1) of a scores layout that also reads a label column (else None)
    labels: np.ndarray | None = None

    def line(self, record: int) -> int:
        """The 1-based line of a record."""
        return self.first_line + record if self.lines is None else int(self.lines[record])


def _good_id(u: Any) -> bool:
    return (isinstance(u, str) and u != "" and u == u.strip(_WS) and not u.startswith("#")
            and "\ufeff" not in u)  # fmt: skip


def _chunk(
    ids: dict[str, tuple[np.ndarray, np.ndarray]],
    values: list[np.ndarray],
    labels: np.ndarray | None,
    layout: _Layout,
    first_line: int,
    lines: np.ndarray | None,
    n: int,
    words: dict[int, tuple[str, int]] | None,
) -> _Chunk:
    """A block's records: a key's values are its labels; a scores layout that reads a label
    column too keeps them apart."""
    if layout.kind == "key":
        stacked = labels
    elif not values:
        stacked = None
    else:
        stacked = values[0] if layout.kind != "quality" else np.stack(values, axis=1)
    apart = labels if layout.kind == "scores" else None
    return _Chunk(ids, stacked, first_line, lines, n, words, apart)


def _count_message(layout: _Layout, found: int) -> str:
    how = {None: "", b",": "comma-separated "}.get(layout.sep, "tab-separated ")
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
    quoted = " (quoted fields are not read: no commas inside ids)" if layout.sep == b"," else ""
    return f"expected {layout.nfields} {how}fields ({what}), found {found}{quoted}"


#: Bytes of text parsed per block.
BLOCK_BYTES = 16 * 2**20


def _iter_blocks(
    path: str | os.PathLike[str], layout: _Layout, block_bytes: int
) -> Iterator[tuple[bytes, int, int]]:
    """Yield ``(block, first_line, n_lines)`` of whole lines ending with LF (CRLF made LF), refusing
    NUL bytes and over-long lines.
    """
    with _open(path) as f:
        f.seek(layout.start)
        carry, lineno = b"", layout.first_line
        while True:
            chunk = f.read(block_bytes)
            if not chunk:
                if not carry:
                    return
                block, carry = (carry if carry.endswith(b"\n") else carry + b"\n"), b""
            else:
                cut = chunk.rfind(b"\n") + 1
                if cut == 0:
                    block, carry = b"", carry + chunk
                else:  # one copy at most
                    block = b"".join((carry, memoryview(chunk)[:cut])) if carry else chunk[:cut]
                    carry = chunk[cut:]
            if len(carry) > MAX_LINE_BYTES:
                raise _too_long(path, lineno + block.count(b"\n"))
            if not block:
                continue
            _check_block(block, path, lineno)
            if b"\r" in block:
                block = block.replace(b"\r\n", b"\n")
            n = _count_byte(block, 10)
            yield block, lineno, n
            lineno += n
            if not chunk:
                return


def parse_threads() -> int:
    """Blocks parsed at once, each in a thread of its own (pyarrow's and pandas' parsers release
    the GIL): knob ``bosaris_dask.parse-threads``, or as many as the CPUs this process may use
    and at most 4."""
    return config.get("parse-threads") or max(1, min(4, dask.system.CPU_COUNT))


def parsed_blocks(
    path: str | os.PathLike[str], layout: _Layout, block_bytes: int = BLOCK_BYTES
) -> Iterator[tuple[bytes, int, int, Future[_Chunk]]]:
    """:func:`_iter_blocks` with each block's :func:`_parse_block` running ahead in
    :func:`parse_threads` threads: ``(block, first_line, n_lines, future)`` in file order, at
    most ``threads + 1`` blocks in memory. An error met while reading (a NUL byte, an
    over-long line) is raised after the blocks above it, whose errors come first. A caller that
    stops early (a ParseError from a future) leaves at most that many parses to finish, their
    results dropped."""
    threads = parse_threads()
    if threads == 1:
        for block, first_line, n_lines in _iter_blocks(path, layout, block_bytes):
            done: Future[_Chunk] = Future()
            try:
                done.set_result(_parse_block(block, first_line, n_lines, layout, path))
            except Exception as exc:  # raised where the caller asks for the result
                done.set_exception(exc)
            yield block, first_line, n_lines, done
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="bosaris-parse") as pool:
        ahead: deque[tuple[bytes, int, int, Future[_Chunk]]] = deque()
        try:
            try:
                for block, first_line, n_lines in _iter_blocks(path, layout, block_bytes):
                    job = pool.submit(_parse_block, block, first_line, n_lines, layout, path)
                    ahead.append((block, first_line, n_lines, job))
                    if len(ahead) > threads:
                        yield ahead.popleft()
            except Exception:  # a later line's (a NUL byte, an over-long line, a read error):
                while ahead:  # the blocks above it first, whose errors come before it
                    yield ahead.popleft()
                raise
            while ahead:
                yield ahead.popleft()
        finally:
            for *_, job in ahead:
                job.cancel()


def _check_block(block: bytes, path: Any, lineno: int) -> None:
    nul = block.find(b"\0")
    if nul >= 0:
        raise _nul_byte(path, lineno + block.count(b"\n", 0, nul))
    # every window of MAX_LINE_BYTES + 1 bytes after a line start must hold a newline
    start = 0
    while len(block) - start > MAX_LINE_BYTES + 1:
        end = block.rfind(b"\n", start, start + MAX_LINE_BYTES + 1)
        if end < 0:
            raise _too_long(path, lineno + block.count(b"\n", 0, start))
        start = end + 1


def _count_byte(block: bytes, byte: int) -> int:
    """How many times ``byte`` occurs in ``block`` (numpy's SIMD compare beats bytes.count)."""
    return int(np.count_nonzero(np.frombuffer(block, dtype=np.uint8) == byte))


_TO_SPACE = bytes.maketrans(b"\t\r\x0b\x0c", b"    ")
_IS_WS = np.zeros(256, dtype=bool)
_IS_WS[list(b" \t\n\r\x0b\x0c")] = True


def _canonical(block: bytes, layout: _Layout) -> tuple[bytes, np.ndarray]:
    """``block`` with single separators and no blank lines, and the index of each line kept."""
    if layout.sep is None:
        block = block.translate(_TO_SPACE)
        a = np.frombuffer(block, dtype=np.uint8)
        space = a == 32
        keep = np.ones(len(a), dtype=bool)
        np.logical_not(np.logical_and(space[1:], space[:-1]), out=keep[1:])
        if not keep.all():  # runs of spaces, however long, in one pass (a regex is 4x slower)
            a = a[keep]
            block = a.tobytes()
        del space, keep
        ends = np.flatnonzero(a == 10)
        edges = np.concatenate(([0], ends[:-1] + 1, ends[ends > 0] - 1))  # runs are single now
        edges = np.unique(edges[a[edges] == 32])
        if len(edges):  # a space at the start or the end of a line
            a = np.delete(a, edges)
            block = a.tobytes()
            ends = np.flatnonzero(a == 10)
        starts = np.concatenate(([0], ends[:-1] + 1))
        solid = ends != starts  # whitespace-only lines are empty now
    else:
        a = np.frombuffer(block, dtype=np.uint8)
        ends = np.flatnonzero(a == 10)
        starts = np.concatenate(([0], ends[:-1] + 1))
        solid = np.logical_or.reduceat(~_IS_WS[a], starts) if len(ends) else ends > 0
    if solid.all():
        return block, np.arange(len(ends))
    return a[np.repeat(solid, ends - starts + 1)].tobytes(), np.flatnonzero(solid)


def _parse_checked(
    block: bytes, first_line: int, lines: np.ndarray, layout: _Layout, path: Any
) -> _Chunk:
    """The records of a canonical ``block`` (its lines are ``lines`` of the file), or the ParseError
    of its first bad line.
    """
    sep = layout.sep or b" "
    a = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(a == 10)
    found = np.diff(np.searchsorted(np.flatnonzero(a == sep[0]), ends), prepend=0) + 1
    good = found == layout.nfields
    starts = np.concatenate(([0], ends[:-1] + 1))
    # (index in block, rank, message): the first bad line's error is raised, a comment first
    errors: list[tuple[int, int, str]] = []
    hashed = np.flatnonzero(a[starts[: len(ends)]] == ord("#")) if len(ends) else []
    if len(hashed):
        errors.append((int(hashed[0]), 0, COMMENT_LINE))
    if not good.all():
        i = int(np.argmin(good))
        errors.append((i, 1, _count_message(layout, int(found[i]))))
        block = a[np.repeat(good, ends - starts + 1)].tobytes()
    at = np.flatnonzero(good)  # block index of each record
    columns = _columns(block, sep, layout.nfields, len(at))
    ids: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    values: list[np.ndarray] = []
    labels = words = None
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
            if sign.all():
                words = label_words(raw, codes)
        bad = np.flatnonzero([r is not None for r in reasons])
        if bad.size:
            first = int(np.flatnonzero(np.isin(codes, bad))[0])
            errors.append((int(at[first]), 1, reasons[codes[first]]))
    if errors:
        i, _, message = min(errors)
        raise ParseError(message, path=path, line=int(lines[i]))
    return _chunk(ids, values, labels, layout, first_line, lines[at], len(at), words)


def _columns(block: bytes, sep: bytes, nfields: int, n: int) -> list[np.ndarray]:
    """The raw fields of ``n`` lines of exactly ``nfields`` fields, column by column."""
    if n == 0:
        return [np.empty(0, dtype=object)] * nfields
    df = read_csv(block, sep, nfields, object, lineterminator="\n", encoding="latin-1")
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
    if "\ufeff" in text:  # cat of files saved with one
        return text, (f"{role} id {text!r} holds a byte-order mark (files joined with cat? "
                      "remove it)")  # fmt: skip
    if text.startswith("#"):  # never data: it would read as the ids '#...'
        return text, f"{role} id {text!r} starts with '#': trial lists have no comment lines"
    return text, f"{role} id {text!r} has surrounding whitespace"


def _floats(raw: list[bytes], role: str) -> tuple[np.ndarray, list[str | None]]:
    """The values of distinct number tokens, and what is wrong with each."""
    what = "score" if role == "score" else "quality value"
    values = np.empty(len(raw), dtype=np.float64)
    reasons: list[str | None] = []
    for k, token in enumerate(raw):
        v = number_of_token(token)
        values[k] = np.inf if v is None else v
        if v is None:
            reasons.append(f"cannot parse {what} {_shown(token)}")
        elif np.isinf(v) and b"inf" not in token.lower():  # e.g. 1e400
            reasons.append(f"{what} {_shown(token)} is not finite (beyond float64's range)")
        elif np.isinf(v) or (role == "score" and np.isnan(v)):
            reasons.append(f"{what} {_shown(token)} is not finite")
        else:
            reasons.append(None)
    return values, reasons


def _label_reason(u: bytes) -> str:
    said = f"label {_shown(u)} is not one of {ACCEPTED_LABELS} (any case)"
    value = number_of_token(u)
    if value is not None and value not in (0.0, 1.0) and not u.strip().lstrip(b"+-").isdigit():
        said += ": a score file given as the key?"  # (a score where a label belongs)
    return said


_VT_TO_SPACE = bytes.maketrans(b"\r\x0b\x0c", b"   ")
_BOOL_WORD = re.compile(rb"(?i)true|false")


def _parse_block(block: bytes, first_line: int, n_lines: int, layout: _Layout, path: Any) -> _Chunk:
    """Parse a block of whole lines starting at ``first_line``: the fast path, else the block made
    canonical and tried again, else checked field by field; a ParseError names the first bad line.
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
    """The single separator pandas can split this block on (its count fits every line), or None."""
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
    """The records of ``block``, or None at the least doubt; ``runs``: a headerless block split on
    runs of whitespace by pandas.
    """
    if block.startswith(b"\xef\xbb\xbf"):  # pandas drops a byte-order mark that starts its
        return None  # input: inside the file it is part of a field (the checked path says so)
    if runs:
        if b"\r" in block or b"\x0b" in block or b"\x0c" in block:
            block = block.translate(_VT_TO_SPACE)
        sep = b"\\s+"
    else:
        sep = _fast_separator(block, n_lines, layout)
    if sep is None:
        return None
    floats = {j for role, j in layout.roles if role in _FLOAT_ROLES}
    columns = typed_columns(block, sep, layout, floats, runs)
    if columns is None or columns.n != n_lines:
        return None
    if layout.sep is None:  # an empty field in an ignored column: a blank line or extra spaces
        used = {j for _, j in layout.roles}
        if any(columns.has_empty(j) for j in range(layout.nfields) if j not in used):
            return None
    ids: dict[str, tuple[np.ndarray, Any]] = {}
    values: list[np.ndarray] = []
    labels = words = None
    for role, j in layout.roles:
        if role in _ID_ROLES:
            # many distinct model or segment ids go to the collector's IdCodes as bytes
            many = id_codes.BYTES_MIN_IDS if role != "id" else None
            codes, uniques = columns.factorized(j, bytes_from=many)
            if isinstance(uniques, Utf8Ids) and bytes_coder() is None:  # no numba
                uniques = np.array(uniques.texts(), dtype=object)
            if isinstance(uniques, Utf8Ids):
                if not uniques.well_formed():
                    return None
            elif not all(map(_good_id, uniques)):
                return None
            ids[role] = (codes, uniques)
        elif role in _FLOAT_ROLES:
            v = columns.floats(j)
            ok = np.isfinite(v) if role == "score" else ~np.isinf(v)
            if not ok.all():
                return None
            # pandas reads a column of only true/false words as 1.0/0.0
            if np.all((v == 0.0) | (v == 1.0)) and _BOOL_WORD.search(block):
                return None
            values.append(v)
        else:
            codes, uniques = columns.factorized(j)
            if not all(isinstance(u, str) for u in uniques):
                return None
            raw = [u.strip(_WS).encode() for u in uniques]
            sign = np.array([label_sign(u) for u in raw], dtype=np.int8)
            if not sign.all():
                return None
            labels = sign[codes]
            words = label_words(raw, codes)
    return _chunk(ids, values, labels, layout, first_line, None, columns.n, words)
