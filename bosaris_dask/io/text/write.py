"""Writing trial objects as BOSARIS lines or NIST tables, band of rows by band of rows."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from itertools import chain, repeat
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.errors import ScoreError, TrialError, quality_object_refused
from bosaris_dask.io.atomic import atomic_path
from bosaris_dask.io.text.heartbeat import Heartbeat
from bosaris_dask.io.text.layout import MAX_LINE_BYTES
from bosaris_dask.io.text.packed import TrialList
from bosaris_dask.progress import compute
from bosaris_dask.trials import is_label_key, kind_of, trial_classes, validate

#: Cells of the dense matrices computed at once by the writer (per band of rows).
_WRITE_BAND_BYTES = 32 * 2**20
#: Lines formatted at once by the writer.
_WRITE_LINES = 2**18
_HEADER_NAMES = {"scores": "LLR", "key": "targettype"}
_ID_BAD = {
    False: re.compile(r"[ \t\n\r\x0b\x0c\x00\ufeff]|^#"),  # whitespace-separated fields
    True: re.compile(r"[\t\n\r\x00\ufeff]|^[ \x0b\x0c#]|[ \x0b\x0c]$"),  # tab-separated fields
}


#: The longest id a text file takes: two ids and a number must fit a line the reader reads.
MAX_ID_BYTES = (MAX_LINE_BYTES - 64) // 2


def _writable_ids(ids: Any, role: str, tabs: bool, path: Any) -> np.ndarray:
    """Ids as an object array of str; an id that would not read back is an error naming the
    output ``path``."""
    out = np.array([str(i) for i in np.asarray(ids, dtype=object).ravel()], dtype=object)
    bad = _ID_BAD[tabs]
    # a quality table goes to HDF5 or MAT (not zarr) and has no NIST form
    instead = "an HDF5 or MAT file" if role == "quality" else "a zarr or HDF5 store"
    for i in (k for k, u in enumerate(out) if len(u.encode()) > MAX_ID_BYTES):
        raise TrialError(f"{path}: {role} id {out[i][:40]!r}... of {len(out[i].encode()):,} "
                         f"bytes cannot be written to a text file (a line holds at most "
                         f"{MAX_LINE_BYTES:,} bytes); use {instead}")  # fmt: skip
    for i in (k for k, u in enumerate(out) if u == "" or bad.search(u)):
        why = "tabs, newlines, NUL" if tabs else "whitespace, NUL"
        spaced = (not tabs and out[i] and not _ID_BAD[True].search(out[i])
                  and role != "quality")  # a NIST table takes it  # fmt: skip
        raise TrialError(
            f"{path}: {role} id {out[i]!r} cannot be written to a text file (empty, starts "
            f"with '#', or contains {why} or a byte-order mark); use {instead}"
            + (", or a tab-separated NIST table (header=True; --header)" if spaced else "")
        )
    return out


def _check_first_line(path: Any, kind: str, header: bool, model: str, segment: str) -> None:
    """Refuse a headerless ndx whose first line the reader would take for a header (say
    ``enroll test``): it would read back without that trial."""
    from bosaris_dask.errors import ParseError
    from bosaris_dask.io.text.layout import _header_roles

    if header or kind != "ndx":
        return
    try:
        looks = _header_roles([model, segment], path, 1) is not None
    except ParseError:  # e.g. "modelid model": a header naming one column twice
        looks = True
    if looks:
        raise TrialError(
            f"{path}: the first trial ({model!r}, {segment!r}) would read back as a header line, "
            "dropping it: write a NIST table (header=True; --header) or a zarr or "
            "HDF5 store"
        )


def _row_bands(row_chunks: tuple[int, ...], max_rows: int) -> Iterator[tuple[int, int]]:
    """Bands of at most ``max_rows`` rows, cut at chunk boundaries where possible."""
    bounds, a = np.cumsum((0, *row_chunks)), 0
    while a < bounds[-1]:
        b = int(bounds[np.searchsorted(bounds, a + max_rows, side="right") - 1])
        b = b if b > a else min(a + max_rows, int(bounds[-1]))  # a chunk taller than a band
        yield a, b
        a = b


def _rows(arrays: list[Any], a: int, b: int) -> list[np.ndarray]:
    parts = [x[a:b] for x in arrays]
    if any(isinstance(p, da.Array) for p in parts):
        parts = list(compute(parts))
    return [np.asarray(p) for p in parts]


def write_text(obj: xr.Dataset, path: str | os.PathLike[str], *, header: bool = False) -> None:
    """Write a trial object as text, band of rows by band of rows (bounded memory), atomically.

    Lines are ``model segment score`` (scores: the masked-in entries as the shortest repr of
    their float64 value, which reads back exactly, float32 too), ``model segment target|nontarget``
    (key) or ``model segment`` (ndx), in model then segment order.

    Parameters
    ----------
    obj
        Scores, Key (explicit or label-derived) or Ndx.
    path
        The output file.
    header
        ``False``: space-separated BOSARIS lines; ``True``: a tab-separated NIST table with a
        header (``modelid``, ``segmentid``, ``LLR`` or ``targettype``).

    Raises
    ------
    TrialError
        If an id cannot be written (empty, or with whitespace for space-separated output), or
        there is no trial to write.
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
        raise TrialError(quality_object_refused("a text file"))
    validate(obj)
    sep = "\t" if header else " "
    models = _writable_ids(obj.model.values, "model", header, path)
    segments = _writable_ids(obj.segment.values, "segment", header, path)
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
    beat = Heartbeat(path, "written", len(models))
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        if header:
            f.write(_header_line(kind))
        written = 0
        for a, b in _row_bands(tuple(row_chunks), max_rows):
            beat.advance(a, f"{written:,} lines")
            band = _rows(arrays, a, b)
            cells = np.flatnonzero(band[-1])  # row-major
            if cells.size and not written:
                r0, c0 = divmod(int(cells[0]), max(ns, 1))
                _check_first_line(path, kind, header, models[r0 + a], segments[c0])
            written += cells.size
            for k in range(0, cells.size, _WRITE_LINES):
                rr, cc = np.divmod(cells[k : k + _WRITE_LINES], max(ns, 1))
                pieces: list[Any] = [model_piece[rr + a], segment_piece[cc]]
                if kind == "scores":
                    values = band[0][rr, cc]
                    pieces += [
                        _format_scores(values, models[rr + a], segments[cc], path),
                        repeat("\n"),
                    ]
                elif kind == "key":
                    pieces.append(label_piece[band[0][rr, cc].astype(np.intp) + 1])
                f.write(_join_lines(pieces))
        if not written:  # a file of no trial lines, which no reader takes back
            raise TrialError(f"{path}: no trial to write (every cell of the {kind} is masked "
                             "out; a fusion's trials are those every system scores); nothing "
                             "was written")  # fmt: skip
    beat.finish(f"{written:,} lines")


def write_score_lines(
    trials: TrialList, values: np.ndarray, keep: np.ndarray, path: str | os.PathLike[str], *,
    header: bool = False,
) -> int:  # fmt: skip
    """Write ``model segment score`` lines for the records of ``trials`` that ``keep``, in the
    records' order (a file's line order), atomically; scores as in :func:`write_text`, and
    with ``header`` a NIST table as it writes one. Returns the number of lines.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> ids = np.array(["b", "a"], dtype=object)
    >>> trials = TrialList("t", ids, ids, np.array([1, 0]), np.array([0, 1]), np.ones(2), int)
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
    >>> write_score_lines(trials, np.array([0.5, -2.0]), np.array([True, True]), path)
    2
    >>> print(path.read_text(), end="")
    a b 0.5
    b a -2.0
    """
    why = " (no trial of the list has a score, in every system of a fusion)"
    return _write_records(trials, np.flatnonzero(keep), path, values, why, header=header)


def write_trial_lines(
    trials: TrialList, path: str | os.PathLike[str], *, header: bool = False
) -> int:
    """Write a text trial list's records as BOSARIS lines in their own order (a file's line
    order), atomically: ``model segment score`` (scores, as :func:`write_text` writes them),
    ``model segment target|nontarget`` (key) or ``model segment`` (ndx); with ``header``, a
    NIST table as :func:`write_text` writes it. Returns the number of lines. A sparse list
    never becomes its models x segments grid this way.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> ids = np.array(["b", "a"], dtype=object)
    >>> key = TrialList("t", ids, ids, np.array([1, 0]), np.array([0, 1]), np.array([-1, 1]),
    ...                 int, kind="key")
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "key.txt"
    >>> write_trial_lines(key, path)
    2
    >>> print(path.read_text(), end="")
    a b nontarget
    b a target
    """
    scores = trials.values if trials.kind == "scores" else None
    return _write_records(trials, None, path, scores, header=header)


def _write_records(
    trials: TrialList,
    rows: np.ndarray | None,
    path: Any,
    scores: np.ndarray | None,
    why: str = "",
    *,
    header: bool = False,
) -> int:
    """Write the records ``rows`` of ``trials`` (``None``: all, in slices) as lines, with
    ``scores`` (one per record) if given, else as the list's kind says; ``why``: what an empty
    output means; ``header``: a NIST table (tabs, a header line)."""
    sep = "\t" if header else " "
    models = _writable_ids(trials.models, "model", header, path)
    segments = _writable_ids(trials.segments, "segment", header, path)
    n = len(trials.values) if rows is None else rows.size
    if not n:
        raise TrialError(f"{path}: no trial to write{why}; nothing was written")
    kind = "scores" if scores is not None else trials.kind
    end = "\n" if kind == "ndx" else sep
    model_piece = np.array([m + sep for m in models], dtype=object)
    segment_piece = np.array([g + end for g in segments], dtype=object)
    label_piece = np.array(["nontarget\n", "target\n"], dtype=object)
    beat = Heartbeat(path, "written", n)
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        if header:
            f.write(_header_line(kind))
        first = 0 if rows is None else int(rows[0])
        _check_first_line(path, kind, header, models[trials.model_codes[first]],
                          segments[trials.segment_codes[first]])  # fmt: skip
        for k in range(0, n, _WRITE_LINES):
            beat.advance(k, f"{k:,} lines")
            r = slice(k, k + _WRITE_LINES) if rows is None else rows[k : k + _WRITE_LINES]
            m, g = trials.model_codes[r], trials.segment_codes[r]
            pieces: list[Any] = [model_piece[m], segment_piece[g]]
            if scores is not None:
                pieces += [_format_scores(scores[r], models[m], segments[g], path), repeat("\n")]
            elif trials.kind == "key":
                pieces.append(label_piece[(np.asarray(trials.values[r]) > 0).astype(np.intp)])
            f.write(_join_lines(pieces))
    beat.finish(f"{n:,} lines")
    return int(n)


def _header_line(kind: str) -> bytes:
    """A NIST table's header line for a ``kind`` of trial object."""
    names = ["modelid", "segmentid", *([_HEADER_NAMES[kind]] if kind != "ndx" else [])]
    return ("\t".join(names) + "\n").encode()


def _join_lines(pieces: list[Any]) -> bytes:
    """Concatenate the pieces of each line (``repeat`` pieces are endless)."""
    return "".join(chain.from_iterable(zip(*pieces, strict=False))).encode("utf-8")


def _format_scores(
    values: np.ndarray, models: np.ndarray, segments: np.ndarray, path: Any
) -> Iterator[str]:
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ScoreError(
            f"{path}: the score of trial ({models[i]!r}, {segments[i]!r}) is {values[i]}: "
            "non-finite scores cannot be written (nothing was written)"
        )
    # float32 too as the shortest repr of its exact float64 value: text reads into float64, so
    # 9 digits (float32's round trip) read back as a float64 up to 1e-9 off the stored value
    return map(float.__repr__, values.astype(np.float64, copy=False).tolist())


def write_quality_text(table: xr.DataArray, path: str | os.PathLike[str]) -> None:
    """Write a quality table as a BOSARIS quality file (``q``, then ``id v1 ... vq``), values as the
    shortest repr that reads back exactly; a TrialError for a bad table, infinities or ids.

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
    ids = _writable_ids(table.id.values, "quality", False, path)
    values = np.asarray(table.values, dtype=np.float64)
    if np.isinf(values).any():
        i, j = np.argwhere(np.isinf(values))[0]
        raise TrialError(f"{path}: quality measure {j + 1} of id {ids[i]!r} is {values[i, j]}: "
                         "a quality file holds finite values, or NaN for no quality")  # fmt: skip
    q = values.shape[1]
    if q < 1:
        raise TrialError("a quality table needs at least one measure")
    if not len(ids):  # as the reader refuses a quality file without ids (most likely the wrong one)
        raise TrialError("a quality table without ids cannot be written as text: its file would "
                         "hold no line to read back")  # fmt: skip
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(f"{q}\n".encode())
        for k in range(0, len(ids), _WRITE_LINES):
            block = values[k : k + _WRITE_LINES]
            pieces: list[Any] = [ids[k : k + _WRITE_LINES]]
            for j in range(q):
                pieces += [repeat(" "), map(float.__repr__, block[:, j].tolist())]
            pieces.append(repeat("\n"))
            f.write(_join_lines(pieces))
