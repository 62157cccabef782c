"""Text trial, score and quality files: BOSARIS/Kaldi lines and NIST tab-separated tables.

Reading is streamed: the file is cut into blocks of whole lines, each block is parsed in one
vectorised call, and only integer codes and values are kept (spilled to a scratch file when they
grow), so that a 1e8-line file converts with bounded memory. The dense output is backed by a
scratch memmap (wrapped lazily with dask, deleted when no longer referenced) when it would exceed
``memmap_threshold`` bytes.

Formats
-------
BOSARIS / Kaldi (no header), one trial per line:

==========  =====================================================================================
kind        line
==========  =====================================================================================
scores      ``model segment score``
key         ``model segment target`` or ``model segment nontarget`` (any letter case)
ndx         ``model segment`` (a key or scores file can also be read as an ndx: the third field
            is then ignored)
==========  =====================================================================================

NIST (SRE) tables: a header line names the columns, e.g. ``modelid  segmentid  side`` (a trial
list), plus ``targettype`` (a key, values ``target``/``nontarget``) or ``LLR`` (scores). Column
names are matched case-insensitively, with these synonyms; other columns (``side``, ...) are
ignored:

==========  =====================================================================================
column      accepted names
==========  =====================================================================================
model       modelid, model, model_id, enrollment, enroll, enroll_id, enrollment_id
segment     segmentid, segment, segment_id, test, test_id, testid
label       targettype, target_type, label
score       llr, score
==========  =====================================================================================

Rules
-----
* Lines end with LF (CRLF is accepted). Lines that are empty or hold only whitespace are skipped.
  A UTF-8 byte-order mark at the start of the file is skipped.
* Without a header, fields are separated by runs of spaces or tabs. With a header, fields are
  separated by single tabs if the header line contains a tab (empty fields are then allowed in
  ignored columns only, and spaces around a score or a label are ignored), otherwise by runs of
  whitespace. Every line has the header's number of fields.
* The first non-blank line is a header when it names both a model and a segment column and
  none of its fields is a number or a label (``header=None``); pass ``header=False`` for a
  headerless trial list whose first trial happens to be, say, ``model segment``.
* The kind (when not given) is ``scores`` if there is a score column (a third field that parses
  as a number), ``key`` if there is a label column (``target``/``nontarget``), else ``ndx``. A
  NIST file with both a score and a label column reads as scores by default and as a key with
  ``kind="key"``.
* Ids are UTF-8, non-empty, without leading or trailing whitespace, and keep the order in which
  they first appear in the file (so that a file written by :func:`write_text` reads back in the
  same order). Labels are exactly ``target`` or ``nontarget`` (any case); ``tgt``/``nontgt`` are
  not accepted.
* Scores are decimal numbers (``1``, ``-0.5``, ``1.5e-3``; no ``_`` separators, no hex),
  converted exactly (correctly rounded) to float64; NaN and infinities are errors.
* Every problem raises :class:`~bosaris_dask.errors.ParseError` naming the file and the 1-based
  line: a wrong number of fields, an unparsable or non-finite score, a bad label, an empty or
  badly encoded id, a trial given twice (both lines are named), a NUL byte, a line longer than
  1 MiB, a file without trials.

Writing (:func:`write_text`) produces the BOSARIS form (``header=False``, single spaces) or a NIST
table (``header=True``: a ``modelid``/``segmentid``/``LLR`` or ``targettype`` header and single
tabs), in row-major order (model order, then segment order), only the trials of the mask.
float64 scores are written as the shortest string that reads back to the same double (Python's
``repr``), float32 scores with 9 significant digits (which read back, through float64, to the
same float32). The file appears atomically under its name when complete.

Quality tables (:func:`read_quality_text`, :func:`write_quality_text`) are BOSARIS quality files:
a first line with the number ``q`` of quality measures, then ``id v1 ... vq`` per id (NaN allowed,
meaning "no quality"; infinities are errors).

Examples
--------
>>> import pathlib, tempfile
>>> from bosaris_dask.trials import make_scores
>>> path = pathlib.Path(tempfile.mkdtemp()) / "scores.txt"
>>> scores = make_scores(["m1", "m2"], ["s1", "s2"], [[0.1, -2.5], [1e-300, 3.0]])
>>> write_text(scores, path)
>>> print(path.read_text(), end="")
m1 s1 0.1
m1 s2 -2.5
m2 s1 1e-300
m2 s2 3.0
>>> sniff_text_kind(path)
'scores'
>>> back = read_text(path)
>>> back.score.values.tolist() == scores.score.values.tolist()
True
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import shutil
import socket
import stat
import tempfile
import warnings
import weakref
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import itemgetter, methodcaller
from typing import Any

import dask
import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr

from bosaris_dask.errors import ParseError, ScoreError, StoreError, TrialError
from bosaris_dask.io.atomic import atomic_path
from bosaris_dask.trials import (
    is_label_key,
    kind_of,
    make_key,
    make_ndx,
    make_scores,
    quality_table,
    trial_classes,
    validate,
)

__all__ = [
    "sniff_text_kind",
    "read_text",
    "write_text",
    "read_quality_text",
    "write_quality_text",
    "MEMMAP_THRESHOLD",
]

#: Dense outputs larger than this many bytes are backed by a scratch-file memmap.
MEMMAP_THRESHOLD = 256 * 2**20
#: Lines longer than this many bytes (without the newline) are an error.
MAX_LINE_BYTES = 2**20
#: Bytes of text parsed per block.
BLOCK_BYTES = 16 * 2**20
#: Parsed codes and values kept in memory up to this many bytes, then spilled to a scratch file.
_SPILL_BYTES = 64 * 2**20
#: Cells of the dense matrices computed at once by the writer (per band of rows).
_WRITE_BAND_BYTES = 32 * 2**20
#: Lines formatted at once by the writer.
_WRITE_LINES = 2**18

_SYNONYMS = {
    "model": ("modelid", "model", "model_id", "enrollment", "enroll", "enroll_id", "enrollment_id"),
    "segment": ("segmentid", "segment", "segment_id", "test", "test_id", "testid"),
    "label": ("targettype", "target_type", "label"),
    "score": ("llr", "score"),
}
_ROLE_OF_NAME = {name: role for role, names in _SYNONYMS.items() for name in names}
_ID_ROLES = ("model", "segment", "id")
_FLOAT_ROLES = ("score", "value")
_KINDS = ("scores", "key", "ndx")
_BOM = b"\xef\xbb\xbf"
_WS = " \t\n\r\x0b\x0c"  # ASCII whitespace, as bytes.split() sees it
_NOT_FLOAT = re.compile(rb"[\s_]")
_BOOL_WORD = re.compile(rb"(?i)true|false")
_HEADER_NAMES = {"scores": "LLR", "key": "targettype"}
# pandas >= 3.1 always converts floats exactly (correctly rounded); before, only "round_trip" did
_PANDAS = tuple(int(x) for x in re.findall(r"\d+", pd.__version__)[:2])
_EXACT_FLOATS: dict[str, Any] = {} if _PANDAS >= (3, 1) else {"float_precision": "round_trip"}


# --------------------------------------------------------------------------------------------
# layout: what the file is and where its data lines start
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    """How to parse the data lines of a file."""

    kind: str  # "scores" | "key" | "ndx" | "quality"
    sep: bytes | None  # None: runs of whitespace; b"\t": single tabs
    nfields: int
    roles: tuple[tuple[str, int], ...]  # (role, field index); role "value" may repeat
    start: int  # byte offset of the first data line
    first_line: int  # its 1-based line number
    header: bool = False  # whether the columns were named by a header line


def _open(path: str | os.PathLike[str]):
    try:
        return open(path, "rb")  # noqa: SIM115 (closed by the callers' with blocks)
    except OSError as e:
        raise StoreError(f"cannot read {os.fspath(path)}: {e.strerror or e}") from e


def _first_nonblank_line(path: str | os.PathLike[str]) -> tuple[bytes, int, int, int]:
    """The first non-blank line: (its bytes, its 1-based number, the offset of line 1 (after a
    byte-order mark), the offset after the line).

    Reads at most ``MAX_LINE_BYTES`` past the start of any line, so a file without newlines is an
    error, not a hang.
    """
    with _open(path) as f:
        origin = len(_BOM) if f.read(3) == _BOM else 0
        offset = origin
        f.seek(origin)
        lineno, buf = 1, b""
        while True:
            chunk = f.read(2**16)
            buf += chunk
            while True:
                cut = buf.find(b"\n")
                if cut < 0:
                    break
                line, buf = buf[:cut], buf[cut + 1 :]
                _check_line(line, path, lineno)
                if line.strip():
                    return line.rstrip(b"\r"), lineno, origin, offset + cut + 1
                offset += cut + 1
                lineno += 1
            _check_line(buf, path, lineno)
            if not chunk:
                if buf.strip():
                    return buf.rstrip(b"\r"), lineno, origin, offset + len(buf)
                what = "empty file" if offset + len(buf) == 0 else "no data (only blank lines)"
                raise ParseError(what, path=path, line=lineno if buf else max(1, lineno - 1))


def _check_line(line: bytes, path: Any, lineno: int) -> None:
    if len(line) > MAX_LINE_BYTES:
        raise ParseError(f"line longer than {MAX_LINE_BYTES} bytes", path=path, line=lineno)
    if b"\0" in line:
        raise ParseError("NUL byte in a text file (is it binary?)", path=path, line=lineno)


def _is_number(token: bytes) -> bool:
    try:
        value = float(token)
    except ValueError:
        return False
    return token.isascii() and not _NOT_FLOAT.search(token) and math.isfinite(value)


def _header_roles(names: list[str], path: Any, lineno: int) -> dict[str, int] | None:
    """Role -> column of a header line, or None if the line does not look like a header."""
    data_like = [_is_number(n.encode()) or n.lower() in ("target", "nontarget") for n in names]
    if any(data_like):  # e.g. the trial "model segment 1.5" of a headerless file
        return None
    roles: dict[str, int] = {}
    twice: tuple[str, int, int] | None = None  # (role, first column, second column)
    for j, name in enumerate(names):
        role = _ROLE_OF_NAME.get(name.strip().lower())
        if role is not None and role in roles:
            twice = twice or (role, roles[role], j)
        elif role is not None:
            roles[role] = j
    if "model" not in roles or "segment" not in roles:
        return None  # e.g. the trial "modelid modelid" of a headerless file
    if twice is not None:
        role, a, b = twice
        raise ParseError(
            f"two {role} columns in the header: {names[a]!r} and {names[b]!r}",
            path=path,
            line=lineno,
        )
    return roles


def _detect_layout(
    path: str | os.PathLike[str], kind: str | None = None, header: bool | None = None
) -> _Layout:
    if kind is not None and kind not in _KINDS:
        raise TrialError(f"kind must be one of {_KINDS} or None, not {kind!r}")
    line, lineno, origin, after = _first_nonblank_line(path)
    if header is not False:
        sep = b"\t" if b"\t" in line else None
        tokens = line.split(sep) if sep else line.split()
        names = [t.decode("utf-8", "replace") for t in tokens]
        roles = _header_roles(names, path, lineno)
        if roles is None and header:
            raise ParseError(
                "header=True but this line names no model and segment columns "
                f"(model: {', '.join(_SYNONYMS['model'])}; "
                f"segment: {', '.join(_SYNONYMS['segment'])})",
                path=path,
                line=lineno,
            )
        if roles is not None:
            if kind is None:
                kind = "scores" if "score" in roles else "key" if "label" in roles else "ndx"
            want = {"scores": "score", "key": "label"}.get(kind)
            if want is not None and want not in roles:
                raise ParseError(
                    f"a {kind} table needs a {want} column ({', '.join(_SYNONYMS[want])}); "
                    f"the header has {names}",
                    path=path,
                    line=lineno,
                )
            use = ("model", "segment") + ((want,) if want else ())
            columns = tuple((r, roles[r]) for r in use)
            return _Layout(kind, sep, len(tokens), columns, after, lineno + 1, header=True)
    tokens = line.split()
    if kind is None:
        kind = _kind_of_tokens(tokens, path, lineno)
    expected = {"scores": (3,), "key": (3,), "ndx": (2, 3)}[kind]
    if len(tokens) not in expected:
        raise ParseError(
            f"expected {expected[0]} fields for {kind}, found {len(tokens)}", path=path, line=lineno
        )
    roles = (("model", 0), ("segment", 1))
    if kind != "ndx":
        roles += (("score" if kind == "scores" else "label", 2),)
    # the data start at line 1: blank lines before the first trial are skipped by the parser
    return _Layout(kind, None, len(tokens), roles, origin, 1)


def _kind_of_tokens(tokens: list[bytes], path: Any, lineno: int) -> str:
    if len(tokens) == 2:
        return "ndx"
    if len(tokens) == 3:
        if tokens[2].lower() in (b"target", b"nontarget"):
            return "key"
        if _is_number(tokens[2]):
            return "scores"
        raise ParseError(
            f"cannot tell the kind of file: third field {_shown(tokens[2], 40)} is neither a "
            "finite score nor target/nontarget",
            path=path,
            line=lineno,
        )
    raise ParseError(
        f"cannot tell the kind of file: expected 2 fields (ndx), 3 (key or scores) or a NIST "
        f"header, found {len(tokens)} fields",
        path=path,
        line=lineno,
    )


# --------------------------------------------------------------------------------------------
# blocks of whole lines
# --------------------------------------------------------------------------------------------


def _iter_blocks(
    path: str | os.PathLike[str], layout: _Layout, block_bytes: int
) -> Iterator[tuple[bytes, int, int]]:
    """Yield ``(block, first_line, n_lines)``: whole lines, each ending with LF (CRLF -> LF).

    Checks for NUL bytes and over-long lines on the way (an over-long line is found after
    reading at most ``block_bytes + MAX_LINE_BYTES`` of it).
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
                raise ParseError(
                    f"line longer than {MAX_LINE_BYTES} bytes",
                    path=path,
                    line=lineno + block.count(b"\n"),
                )
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


def _check_block(block: bytes, path: Any, lineno: int) -> None:
    nul = block.find(b"\0")
    if nul >= 0:
        raise ParseError(
            "NUL byte in a text file (is it binary?)",
            path=path,
            line=lineno + block.count(b"\n", 0, nul),
        )
    # every window of MAX_LINE_BYTES + 1 bytes after a line start must hold a newline
    start = 0
    while len(block) - start > MAX_LINE_BYTES + 1:
        end = block.rfind(b"\n", start, start + MAX_LINE_BYTES + 1)
        if end < 0:
            raise ParseError(
                f"line longer than {MAX_LINE_BYTES} bytes",
                path=path,
                line=lineno + block.count(b"\n", 0, start),
            )
        start = end + 1


# --------------------------------------------------------------------------------------------
# parsing one block: a fast path (pandas' C parser) and a reference path (the authority)
# --------------------------------------------------------------------------------------------


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


def _count_byte(block: bytes, byte: int) -> int:
    """How many times ``byte`` occurs in ``block`` (numpy's SIMD compare beats bytes.count)."""
    return int(np.count_nonzero(np.frombuffer(block, dtype=np.uint8) == byte))


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
            lowered = [u.strip(_WS).lower() for u in uniques]
            if not all(u in ("target", "nontarget") for u in lowered):
                return None
            sign = np.array([1 if u == "target" else -1 for u in lowered], dtype=np.int8)
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
    if layout.kind == "quality":
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


def _shown(token: bytes, limit: int = 60) -> str:
    """A field as an error message quotes it: the text (not a bytes repr), cut at ``limit``."""
    return repr(token[:limit].decode("utf-8", "backslashreplace"))


def _float_or_none(token: bytes) -> float | None:
    if not token.isascii() or _NOT_FLOAT.search(token):
        return None
    try:
        return float(token)
    except ValueError:
        return None


def _reference_labels(tokens: list[bytes]):
    codes, uniques = pd.factorize(np.array(tokens, dtype=object))
    lowered = [u.lower() for u in uniques]
    sign = np.array([1 if u == b"target" else -1 for u in lowered], dtype=np.int8)
    bad = [k for k, u in enumerate(lowered) if u not in (b"target", b"nontarget")]
    err = None
    if bad:
        first = int(np.flatnonzero(np.isin(codes, bad))[0])
        label = _shown(uniques[codes[first]])
        err = (first, f"label {label} is neither 'target' nor 'nontarget'")
    return sign[codes], err


# --------------------------------------------------------------------------------------------
# collecting records: global id tables, spilled codes, line numbers
# --------------------------------------------------------------------------------------------


class _Spill:
    """Blocks of records kept in memory, moved to a scratch file once they pass a size."""

    def __init__(self, dtype: np.dtype, scratch_dir: str | os.PathLike[str] | None):
        self.dtype = dtype
        self._scratch_dir = scratch_dir
        self._blocks: list[np.ndarray] = []
        self._sizes: list[int] = []
        self._nbytes = 0
        self._file: Any = None

    def append(self, records: np.ndarray) -> None:
        if self._file is None and self._nbytes + records.nbytes > _SPILL_BYTES:
            # Unnamed (on POSIX unlinked at once): a killed reader leaves nothing behind.
            self._file = tempfile.TemporaryFile(
                prefix="bosaris-spill-", suffix=".bin", dir=self._scratch_dir
            )
            for block in self._blocks:
                block.tofile(self._file)
            self._blocks = []
        if self._file is None:
            self._blocks.append(records)
        else:
            records.tofile(self._file)
        self._sizes.append(len(records))
        self._nbytes += records.nbytes

    def __iter__(self) -> Iterator[np.ndarray]:
        if self._file is None:
            yield from self._blocks
            return
        self._file.flush()
        self._file.seek(0)
        for n in self._sizes:
            yield np.fromfile(self._file, dtype=self.dtype, count=n)

    def close(self) -> None:
        self._blocks = []
        if self._file is not None:
            self._file.close()
            self._file = None


def _remove_quietly(path: str | None) -> None:
    if path is not None:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def _global_codes(table: dict[str, int], codes: np.ndarray, uniques: np.ndarray) -> np.ndarray:
    """Map a block's codes to codes in ``table``, adding new ids in order of appearance."""
    g = np.fromiter(map(table.get, uniques, repeat(-1)), dtype=np.int64, count=len(uniques))
    new = np.flatnonzero(g < 0)
    if new.size:
        start = len(table)
        g[new] = np.arange(start, start + new.size)
        table.update(zip(uniques[new].tolist(), range(start, start + new.size), strict=True))
    return g[codes]


class _Collector:
    """The trials of a file: id tables, (model code, segment code, value) records, lines."""

    def __init__(self, layout: _Layout, scratch_dir: str | os.PathLike[str] | None):
        self.kind = layout.kind
        self.models: dict[str, int] = {}
        self.segments: dict[str, int] = {}
        fields = [("m", "<i4"), ("s", "<i4")]
        if self.kind == "scores":
            fields.append(("v", "<f8"))
        elif self.kind == "key":
            fields.append(("v", "i1"))
        self.spill = _Spill(np.dtype(fields), scratch_dir)
        self.n = 0
        self.last_line = layout.first_line - 1
        self._starts: list[int] = []
        self._lines: list[tuple[int, np.ndarray | None]] = []

    def add(self, chunk: _Chunk, n_lines: int) -> None:
        self.last_line = chunk.first_line + n_lines - 1
        if chunk.n == 0:
            return
        records = np.empty(chunk.n, dtype=self.spill.dtype)
        records["m"] = _global_codes(self.models, *chunk.ids["model"])
        records["s"] = _global_codes(self.segments, *chunk.ids["segment"])
        if self.kind != "ndx":
            records["v"] = chunk.values
        self.spill.append(records)
        self._starts.append(self.n)
        self._lines.append((chunk.first_line, chunk.lines))
        self.n += chunk.n

    def line_of(self, record: int) -> int:
        k = bisect_right(self._starts, record) - 1
        first, lines = self._lines[k]
        i = record - self._starts[k]
        return first + i if lines is None else int(lines[i])

    def linear(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """Per block: (first record, flat cell index, records)."""
        ns, start = len(self.segments), 0
        for records in self.spill:
            yield start, records["m"].astype(np.int64) * ns + records["s"], records
            start += len(records)

    def close(self) -> None:
        self.spill.close()


# --------------------------------------------------------------------------------------------
# dense output, in memory or in a scratch memmap
# --------------------------------------------------------------------------------------------


_SCRATCH_PREFIX = "bosaris-text-"


def _is_stream(path: str | os.PathLike[str]) -> bool:
    """Is ``path`` a pipe, socket or character device (which can be read only once)?"""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # reported where the file is opened
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def _scratch_owner() -> str:
    """``host-pid`` of this process, as scratch file names carry it."""
    return f"{socket.gethostname().replace('-', '_')}-{os.getpid()}"


def _sweep_dead_scratch(directory: str) -> None:
    """Delete scratch files whose creating process, on this host, is gone (killed runs).

    A name is ``bosaris-text-HOST-PID-*.dat``; files of other hosts (a shared scratch directory)
    and of live processes are left alone.
    """
    host = _scratch_owner().rsplit("-", 1)[0]
    for name in os.listdir(directory):
        parts = name[len(_SCRATCH_PREFIX) :].split("-")
        if not name.startswith(_SCRATCH_PREFIX) or len(parts) < 3 or parts[0] != host:
            continue
        try:
            os.kill(int(parts[1]), 0)
        except ProcessLookupError:
            _remove_quietly(os.path.join(directory, name))
        except (ValueError, PermissionError):  # not a pid, or another user's live process
            continue


class _ScratchFile:
    """A temporary file, deleted when this object is garbage collected (or at exit).

    A SIGKILLed run cannot delete its files: the next one sweeps them (:func:`_sweep_dead_scratch`).
    """

    def __init__(self, scratch_dir: str | os.PathLike[str] | None):
        directory = os.fspath(scratch_dir) if scratch_dir is not None else tempfile.gettempdir()
        _sweep_dead_scratch(directory)
        prefix = f"{_SCRATCH_PREFIX}{_scratch_owner()}-"
        fd, self.path = tempfile.mkstemp(prefix=prefix, suffix=".dat", dir=directory)
        os.close(fd)
        self.remove = weakref.finalize(self, _remove_quietly, self.path)


class _ScratchArray:
    """A read-only array in a scratch file, opened lazily as a memmap; picklable by path.

    The process that created it owns the file (through ``_ScratchFile``): the file is deleted
    when this object (held by the dask graph) is no longer referenced there. Unpickled copies
    (e.g. on a distributed worker of the same machine) only read it.
    """

    def __init__(self, owner: _ScratchFile | None, path: str, shape: tuple[int, ...], dtype):
        self._owner = owner
        self.path = path
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.ndim = len(self.shape)
        self._mm: np.memmap | None = None

    def __getitem__(self, key: Any) -> np.ndarray:
        if self._mm is None:
            self._mm = np.memmap(self.path, dtype=self.dtype, mode="r", shape=self.shape)
        return np.asarray(self._mm[key])

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "shape": self.shape, "dtype": self.dtype.str}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(None, state["path"], state["shape"], state["dtype"])

    def __copy__(self) -> _ScratchArray:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _ScratchArray:
        return self


_DENSE = {
    "scores": (("score", np.float64), ("score_mask", np.bool_)),
    "key": (("trial_mask", np.int8),),
    "ndx": (("trial_mask", np.bool_),),
}


def _assemble(
    collector: _Collector,
    path: Any,
    chunks: Any,
    scratch_dir: str | os.PathLike[str] | None,
    memmap_threshold: int,
) -> xr.Dataset:
    kind = collector.kind
    if collector.n == 0:
        raise ParseError("no trials in the file", path=path, line=max(collector.last_line, 1))
    models, segments = list(collector.models), list(collector.segments)
    shape = (len(models), len(segments))
    cells = shape[0] * shape[1]
    spec = _DENSE[kind]
    in_memmap = cells * sum(np.dtype(dt).itemsize for _, dt in spec) > memmap_threshold
    owners: dict[str, _ScratchFile] = {}
    flat: dict[str, np.ndarray] = {}
    try:
        for name, dt in spec:
            if in_memmap:
                owners[name] = _ScratchFile(scratch_dir)
                flat[name] = np.memmap(owners[name].path, dtype=dt, mode="w+", shape=(cells,))
            else:
                flat[name] = np.zeros(cells, dtype=dt)
        mask = flat[spec[-1][0]]
        for _, lin, records in collector.linear():
            if kind == "scores":
                flat["score"][lin] = records["v"]
                mask[lin] = True
            elif kind == "key":
                mask[lin] = records["v"]
            else:
                mask[lin] = True
        if np.count_nonzero(mask) != collector.n:
            mask[:] = 0
            _raise_duplicate(collector, mask, path, models, segments)
        for arr in flat.values():
            if isinstance(arr, np.memmap):
                arr.flush()
    except BaseException:
        flat.clear()
        for owner in owners.values():
            owner.remove()
        raise
    data: dict[str, Any] = {}
    if in_memmap:
        flat.clear()  # unmap the writable views
        chunks = da.core.normalize_chunks(
            "auto" if chunks is None else chunks, shape, dtype=spec[0][1]
        )
        for name, dt in spec:
            arr = _ScratchArray(owners[name], owners[name].path, shape, dt)
            label = f"text-{name}-{os.path.basename(owners[name].path)}"
            data[name] = da.from_array(arr, chunks=chunks, name=label)
    else:
        data = {name: arr.reshape(shape) for name, arr in flat.items()}
    if kind == "scores":
        return make_scores(models, segments, data["score"], data["score_mask"], chunks=chunks)
    if kind == "key":
        return make_key(models, segments, data["trial_mask"], chunks=chunks)
    return make_ndx(models, segments, data["trial_mask"], chunks=chunks)


def _raise_duplicate(
    collector: _Collector, seen: np.ndarray, path: Any, models: list[str], segments: list[str]
) -> None:
    """Find the first trial given twice (``seen`` is a zeroed scratch of the dense size)."""
    second = cell = None
    for start, lin, _ in collector.linear():
        found = []
        again = np.flatnonzero(seen[lin])
        if again.size:
            found.append(int(again[0]))
        order = np.argsort(lin, kind="stable")
        same = np.flatnonzero(lin[order][1:] == lin[order][:-1])
        if same.size:
            found.append(int(order[same + 1].min()))
        if found:
            second, cell = start + min(found), int(lin[min(found)])
            break
        seen[lin] = 1
    if second is None or cell is None:  # cannot happen: the counts disagreed
        raise ParseError("duplicate trials", path=path)
    first = next(
        start + int(np.flatnonzero(lin == cell)[0])
        for start, lin, _ in collector.linear()
        if np.any(lin == cell)
    )
    m, s = divmod(cell, len(segments))
    raise ParseError(
        f"trial ({models[m]!r}, {segments[s]!r}) is given twice, first on line "
        f"{collector.line_of(first)}",
        path=path,
        line=collector.line_of(second),
    )


# --------------------------------------------------------------------------------------------
# public readers
# --------------------------------------------------------------------------------------------


def sniff_text_kind(path: str | os.PathLike[str], *, header: bool | None = None) -> str:
    """The kind of trial file, from its first non-blank line (and header, if any).

    Parameters
    ----------
    path
        A BOSARIS/Kaldi or NIST text file (see the module docstring for the formats).
    header
        ``None``: detect a NIST header; ``False``: there is none.

    Returns
    -------
    {"scores", "key", "ndx"}
        ``scores`` if the header names a score column or the third field is a number, ``key`` if
        it names a label column or the third field is ``target``/``nontarget``, ``ndx`` for two
        fields (or a header with neither).

    Raises
    ------
    ParseError
        With the file and line, when the kind cannot be told (or the file is empty).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "trials.tsv"
    >>> _ = path.write_text("modelid\\tsegmentid\\tside\\ttargettype\\nm1\\ts1\\ta\\ttarget\\n")
    >>> sniff_text_kind(path)
    'key'
    """
    return _detect_layout(path, None, header).kind


def read_text(
    path: str | os.PathLike[str],
    kind: str | None = None,
    *,
    chunks: Any = None,
    scratch_dir: str | os.PathLike[str] | None = None,
    header: bool | None = None,
    memmap_threshold: int = MEMMAP_THRESHOLD,
    block_bytes: int = BLOCK_BYTES,
) -> xr.Dataset:
    """Read a text trial list, key or score file into a trial object.

    The file is parsed block by block (``block_bytes`` of text at a time); ids keep the order in
    which they first appear. Scores become float64 with ``score_mask``, a key an int8 mask
    (+1 target, -1 non-target, 0 no trial), an ndx a bool mask. When the dense output would take
    more than ``memmap_threshold`` bytes it is written to scratch files (in ``scratch_dir``, or
    the system temporary directory) that are deleted when the returned object (and every dask
    graph built on it) is gone; the data are then read lazily from there.

    Parameters
    ----------
    path
        The text file (formats and rules in the module docstring).
    kind
        ``"scores"``, ``"key"`` or ``"ndx"``; ``None`` tells it from the content
        (:func:`sniff_text_kind`).
    chunks
        Dask chunks of the output (default: dask's ``"auto"``).
    scratch_dir
        Where to put scratch files (spilled codes, memmapped outputs).
    header
        ``None``: detect a NIST header line; ``True``: there must be one; ``False``: none.
    memmap_threshold
        Output size in bytes above which the dense arrays live in scratch memmaps.
    block_bytes
        Bytes of text parsed at once.

    Returns
    -------
    xarray.Dataset
        A trial object (see :mod:`bosaris_dask.trials`).

    Raises
    ------
    ParseError
        For any problem in the file, with the file and the 1-based line number.
    StoreError
        If the file cannot be opened.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "key.txt"
    >>> _ = path.write_text("m1 s2 target\\nm1 s1 nontarget\\nm2 s1 target\\n")
    >>> key = read_text(path)
    >>> key.model.values.tolist(), key.segment.values.tolist()
    (['m1', 'm2'], ['s2', 's1'])
    >>> key.trial_mask.values.tolist()
    [[1, -1], [0, 1]]
    >>> _ = path.write_text("m1 s1 target\\nm1 s1 nontarget\\n")
    >>> read_text(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.ParseError: ...key.txt:2: trial ('m1', 's1') is given twice, first on line 1
    """
    if _is_stream(path):  # a pipe (``<(cmd)``, /dev/stdin): read twice below, so copy it first
        copy = _ScratchFile(scratch_dir)
        try:
            with open(path, "rb") as source, open(copy.path, "wb") as target:
                shutil.copyfileobj(source, target, 16 * 2**20)
            return read_text(
                copy.path, kind, header=header, chunks=chunks, scratch_dir=scratch_dir,
                memmap_threshold=memmap_threshold, block_bytes=block_bytes,
            )  # fmt: skip
        except ParseError as error:
            raise ParseError(error.message, path, error.line) from None
        finally:
            copy.remove()
    layout = _detect_layout(path, kind, header)
    collector = _Collector(layout, scratch_dir)
    try:
        for block, first_line, n_lines in _iter_blocks(path, layout, block_bytes):
            collector.add(_parse_block(block, first_line, n_lines, layout, path), n_lines)
        return _assemble(collector, path, chunks, scratch_dir, memmap_threshold)
    finally:
        collector.close()


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------

_ID_BAD = {
    False: re.compile(r"[ \t\n\r\x0b\x0c\x00]|^\ufeff"),  # whitespace-separated fields
    True: re.compile(r"[\t\n\r\x00]|^[ \x0b\x0c]|[ \x0b\x0c]$"),  # tab-separated fields
}


def _writable_ids(ids: Any, role: str, tabs: bool) -> np.ndarray:
    """Ids as an object array of str; an id that would not read back is an error."""
    out = np.array([str(i) for i in np.asarray(ids, dtype=object).ravel()], dtype=object)
    bad = _ID_BAD[tabs]
    for i in (k for k, u in enumerate(out) if u == "" or bad.search(u)):
        why = "tabs, newlines, NUL" if tabs else "whitespace, NUL or a leading byte-order mark"
        raise TrialError(
            f"{role} id {out[i]!r} cannot be written to a text file "
            f"(empty, or contains {why}); use a zarr or HDF5 store"
        )
    return out


def _row_bands(row_chunks: tuple[int, ...], max_rows: int) -> Iterator[tuple[int, int]]:
    """Bands of rows of at most ``max_rows``, cut at chunk boundaries where possible."""
    start, edges = 0, []
    for size in row_chunks:
        edges.append((start, start + size))
        start += size
    band_start = None
    for a, b in edges:
        if band_start is not None and b - band_start > max_rows:
            yield band_start, a
            band_start = None
        if band_start is None:
            band_start = a
        while b - band_start > max_rows:  # one chunk taller than a band: split it
            yield band_start, band_start + max_rows
            band_start += max_rows
    if band_start is not None and band_start < start:
        yield band_start, start


def _rows(arrays: list[Any], a: int, b: int) -> list[np.ndarray]:
    parts = [x[a:b] for x in arrays]
    if any(isinstance(p, da.Array) for p in parts):
        parts = list(dask.compute(*parts))
    return [np.asarray(p) for p in parts]


def write_text(obj: xr.Dataset, path: str | os.PathLike[str], *, header: bool = False) -> None:
    """Write a trial object as a text file (trials only, row-major order).

    Lines are ``model segment score`` (Scores, the masked-in entries), ``model segment
    target|nontarget`` (Key) or ``model segment`` (Ndx), in model order then segment order.
    float64 scores are written with the shortest repr that reads back exactly, float32 scores
    with 9 significant digits. The matrices are read and formatted band of rows by band of rows,
    so memory stays bounded. The file appears under ``path`` only once complete.

    Parameters
    ----------
    obj
        Scores, Key (explicit or label-derived) or Ndx.
    path
        The output file (its directory must exist).
    header
        ``False``: BOSARIS/Kaldi lines with single spaces. ``True``: a NIST table: a header line
        (``modelid``, ``segmentid``, then ``LLR`` or ``targettype``) and tab-separated fields.

    Raises
    ------
    TrialError
        If an id cannot be written (empty, or holding whitespace, for space-separated output).
    ScoreError
        If a masked-in score is NaN or infinite.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from bosaris_dask.trials import make_key
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "key.tsv"
    >>> write_text(make_key(["m1", "m2"], ["s1", "s2"], [[1, 0], [-1, 1]]), path, header=True)
    >>> for line in path.read_text().splitlines():
    ...     print(line.split("\\t"))
    ['modelid', 'segmentid', 'targettype']
    ['m1', 's1', 'target']
    ['m2', 's1', 'nontarget']
    ['m2', 's2', 'target']
    """
    kind = kind_of(obj)
    if kind == "quality":
        raise TrialError("write quality tables with write_quality_text")
    validate(obj)
    sep = "\t" if header else " "
    models = _writable_ids(obj.model.values, "model", header)
    segments = _writable_ids(obj.segment.values, "segment", header)
    ns = len(segments)
    if kind == "scores":
        score = obj.score.data
        arrays, cell_bytes = [score, obj.score_mask.data], score.dtype.itemsize + 1
    else:
        arrays, cell_bytes = [trial_classes(obj) if kind == "key" else obj.trial_mask.data], 1
    max_rows = max(1, _WRITE_BAND_BYTES // max(1, ns * cell_bytes))
    if is_label_key(obj):  # generate the mask directly in bands of rows
        arrays = [trial_classes(obj, chunks=(max_rows, max(ns, 1)))]
    row_chunks = arrays[0].chunks[0] if isinstance(arrays[0], da.Array) else (len(models),)
    # each line is the concatenation of these pieces (separators included)
    model_piece = np.array([m + sep for m in models], dtype=object)
    segment_piece = np.array([s + ("\n" if kind == "ndx" else sep) for s in segments], object)
    label_piece = np.array(["nontarget\n", "", "target\n"], dtype=object)
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        if header:
            names = ["modelid", "segmentid", *([_HEADER_NAMES[kind]] if kind != "ndx" else [])]
            f.write(("\t".join(names) + "\n").encode())
        for a, b in _row_bands(tuple(row_chunks), max_rows):
            band = _rows(arrays, a, b)
            cells = np.flatnonzero(band[-1])  # row-major
            for k in range(0, cells.size, _WRITE_LINES):
                rr, cc = np.divmod(cells[k : k + _WRITE_LINES], max(ns, 1))
                pieces: list[Any] = [model_piece[rr + a], segment_piece[cc]]
                if kind == "scores":
                    values = band[0][rr, cc]
                    pieces += [_format_scores(values, models[rr + a], segments[cc]), repeat("\n")]
                elif kind == "key":
                    pieces.append(label_piece[band[0][rr, cc].astype(np.intp) + 1])
                f.write(_join_lines(pieces))


def _join_lines(pieces: list[Any]) -> bytes:
    """Concatenate the pieces of each line, line after line (``repeat`` pieces are endless)."""
    return "".join(chain.from_iterable(zip(*pieces, strict=False))).encode("utf-8")


def _format_scores(values: np.ndarray, models: np.ndarray, segments: np.ndarray) -> Iterator[str]:
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ScoreError(
            f"the score of trial ({models[i]!r}, {segments[i]!r}) is {values[i]}: "
            "non-finite scores cannot be written"
        )
    if values.dtype == np.float32:
        return map("{:.9g}".format, values.tolist())
    return map(float.__repr__, values.astype(np.float64, copy=False).tolist())


# --------------------------------------------------------------------------------------------
# quality tables
# --------------------------------------------------------------------------------------------


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
