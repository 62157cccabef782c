"""Collecting the records of a file (id tables, spilled codes and values, lines) into the dense
trial object, in memory or in scratch memmaps."""

from __future__ import annotations

import logging
import os
import tempfile
from bisect import bisect_right
from collections.abc import Iterator
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.errors import ParseError
from bosaris_dask.io.text.heartbeat import shown_path
from bosaris_dask.io.text.id_codes import IdCodes
from bosaris_dask.io.text.layout import _Layout
from bosaris_dask.io.text.parse import _Chunk
from bosaris_dask.io.text.scratch import _ScratchArray, _ScratchFile
from bosaris_dask.trials import make_key, make_ndx, make_scores

#: Parsed codes and values kept in memory up to this many bytes, then spilled to a scratch file.
_SPILL_BYTES = 64 * 2**20


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


class LineMap:
    """A record's line in its file, from each parsed block's first record, first line and line
    numbers (``None``: consecutive lines)."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._lines: list[tuple[int, np.ndarray | None]] = []

    def add(self, start: int, first_line: int, lines: np.ndarray | None) -> None:
        self._starts.append(start)
        self._lines.append((first_line, lines))

    def __call__(self, record: int) -> int:
        k = bisect_right(self._starts, record) - 1
        first, lines = self._lines[k]
        i = record - self._starts[k]
        return first + i if lines is None else int(lines[i])


class _Collector:
    """The trials of a file: id tables, (model code, segment code, value) records, lines."""

    def __init__(self, layout: _Layout, scratch_dir: str | os.PathLike[str] | None):
        self.kind = layout.kind
        self.models = IdCodes()
        self.segments = IdCodes()
        value = {"scores": [("v", "<f8")], "key": [("v", "i1")]}.get(self.kind, [])  # ndx: none
        if self.kind == "scores" and "label" in dict(layout.roles):  # the file is its own key
            value.append(("l", "i1"))
        self.spill = _Spill(np.dtype([("m", "<i4"), ("s", "<i4"), *value]), scratch_dir)
        self.n = 0
        self.last_line = layout.first_line - 1
        self.line_of = LineMap()

    def add(self, chunk: _Chunk, n_lines: int) -> None:
        self.last_line = chunk.first_line + n_lines - 1
        if chunk.n == 0:
            return
        records = np.empty(chunk.n, dtype=self.spill.dtype)
        records["m"] = self.models.add(*chunk.ids["model"])
        records["s"] = self.segments.add(*chunk.ids["segment"])
        if self.kind != "ndx":
            records["v"] = chunk.values
        if "l" in self.spill.dtype.names:
            records["l"] = chunk.labels
        self.spill.append(records)
        self.line_of.add(self.n, chunk.first_line, chunk.lines)
        self.n += chunk.n

    def linear(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """Per block: (first record, flat cell index, records)."""
        ns, start = len(self.segments), 0
        for records in self.spill:
            yield start, records["m"].astype(np.int64) * ns + records["s"], records
            start += len(records)

    def close(self) -> None:
        self.spill.close()


#: Dense outputs larger than this many bytes are backed by a scratch-file memmap.
MEMMAP_THRESHOLD = 256 * 2**20
_DENSE = {
    "scores": (("score", np.float64), ("score_mask", np.bool_)),
    "key": (("trial_mask", np.int8),),
    "ndx": (("trial_mask", np.bool_),),
}


def _note_sparse(path: Any, n: int, shape: tuple[int, int]) -> None:
    """Say (logger ``bosaris_dask.io``, which the CLI prints) that a sparse list is being laid
    out on its ids' grid: slow and mostly holes, where a packed evaluation or a text output
    would read it as a list (:mod:`bosaris_dask.io.text.packed`)."""
    from bosaris_dask.io.text.packed import is_sparse

    if is_sparse(*shape, n):
        logging.getLogger("bosaris_dask.io").info(
            "%s: %s trials over %s x %s ids read as the ids' grid (%s cells, mostly empty); "
            "the command line's evaluations and text outputs read such lists as lists",
            shown_path(path), f"{n:,}", f"{shape[0]:,}", f"{shape[1]:,}",
            f"{shape[0] * shape[1]:,}",
        )  # fmt: skip


def labels_field(collector: _Collector, kind: str) -> str:
    """The records' field that holds what ``kind`` reads: a scores file's labels are ``l``."""
    return "l" if kind == "key" and collector.kind == "scores" else "v"


def _assemble(
    collector: _Collector,
    path: Any,
    chunks: Any,
    scratch_dir: str | os.PathLike[str] | None,
    memmap_threshold: int,
    kind: str | None = None,
) -> xr.Dataset:
    """The dense trial object of ``kind`` (default: the file's) from the collected records: a
    key from a scores file read with its labels too."""
    kind = kind or collector.kind
    field = labels_field(collector, kind)
    if collector.n == 0:
        raise ParseError("no trials in the file", path=path, line=max(collector.last_line, 1))
    models, segments = collector.models.ids(), collector.segments.ids()
    shape = (len(models), len(segments))
    cells = shape[0] * shape[1]
    _note_sparse(path, collector.n, shape)
    spec = _DENSE[kind]
    in_memmap = cells * sum(np.dtype(dt).itemsize for _, dt in spec) > memmap_threshold
    owners: dict[str, _ScratchFile] = {}
    flat: dict[str, np.ndarray] = {}
    try:
        for name, dt in spec:
            if in_memmap:
                owners[name] = _ScratchFile(scratch_dir, staged=os.fspath(path))
                flat[name] = np.memmap(owners[name].path, dtype=dt, mode="w+", shape=(cells,))
            else:
                flat[name] = np.zeros(cells, dtype=dt)
        mask = flat[spec[-1][0]]
        for _, lin, records in collector.linear():
            if kind == "scores":
                flat["score"][lin] = records["v"]
            mask[lin] = records[field] if kind == "key" else True
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
            source = _ScratchArray(owners[name], owners[name].path, shape, dt)
            label = f"text-{name}-{os.path.basename(owners[name].path)}"
            data[name] = da.from_array(source, chunks=chunks, name=label)
    else:
        data = {name: arr.reshape(shape) for name, arr in flat.items()}
    make = {"scores": make_scores, "key": make_key, "ndx": make_ndx}[kind]
    return make(models, segments, *(data[name] for name, _ in spec), chunks=chunks)


def _raise_duplicate(
    collector: _Collector, seen: np.ndarray, path: Any, models: list[str], segments: list[str]
) -> None:
    """Raise the ParseError of the first trial given twice (``seen``: zeroed, of the dense size)."""
    for start, lin, _ in collector.linear():
        again = seen[lin] != 0  # given in an earlier block
        within = first_repeat(lin)
        if within is not None:
            again[within[1]] = True
        if again.any():
            second = start + int(np.argmax(again))
            cell = int(lin[second - start])
            break
        seen[lin] = 1
    else:  # cannot happen: the counts disagreed
        raise ParseError("duplicate trials", path=path)
    first = next(
        start + int(np.flatnonzero(lin == cell)[0])
        for start, lin, _ in collector.linear()
        if np.any(lin == cell)
    )
    m, s = divmod(cell, len(segments))
    raise trial_twice(
        path, models[m], segments[s], collector.line_of(first), collector.line_of(second)
    )


def stable_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` of non-negative integer keys; where each key and its
    position fit in 63 bits, by one sort of both packed into an int64 (about 10x faster at
    6e6 keys: numpy's sort of values is vectorised, its argsort is not).

    Examples
    --------
    >>> stable_order(np.array([5, 2, 5, 0])).tolist()
    [3, 1, 0, 2]
    """
    n = len(keys)
    shift = max(int(n - 1).bit_length(), 1)
    if n == 0 or int(keys.max()) >= 1 << (63 - shift):
        return np.argsort(keys, kind="stable")
    packed = (keys.astype(np.int64) << shift) | np.arange(n, dtype=np.int64)
    packed.sort()
    return packed & ((1 << shift) - 1)


def first_repeat(flat: np.ndarray) -> tuple[int, int] | None:
    """The first and second record of the earliest repeat of a value of ``flat``, or None."""
    order = stable_order(flat)
    again = np.flatnonzero(flat[order][1:] == flat[order][:-1])
    if not again.size:
        return None
    first, second = order[again], order[again + 1]  # stable: first < second
    k = int(np.argmin(second))  # the earliest repeat
    return int(first[k]), int(second[k])


def trial_twice(path: Any, model: str, segment: str, first: int, second: int) -> ParseError:
    """The error of a trial given twice: at its second line, naming the first."""
    message = f"trial ({model!r}, {segment!r}) is given twice, first on line {first}"
    return ParseError(message, path, second)
