"""Collecting the records of a file: global id tables, spilled codes and values, line numbers."""

from __future__ import annotations

import os
import tempfile
from bisect import bisect_right
from collections.abc import Iterator
from itertools import repeat
from typing import Any

import numpy as np

from bosaris_dask.io.text.layout import _Layout
from bosaris_dask.io.text.records import _Chunk

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
