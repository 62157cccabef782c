"""Reading an HDF5 dataset's values through a memory map of its file, where they lie as plain
native numbers: contiguous, or chunked without filters (h5py copies every block out of the page
cache; ``docs/formats.md``). Anything else returns None and is read by h5py.

Examples
--------
>>> import tempfile, h5py, numpy as np
>>> path = tempfile.mkdtemp() + "/m.h5"
>>> with h5py.File(path, "w") as f:
...     _ = f.create_dataset("x", data=np.arange(20.0).reshape(4, 5), chunks=(2, 5))
>>> with h5py.File(path) as f:
...     layout = chunk_offsets(f["x"], (4, 5), os.path.getsize(path))
>>> layout.chunks, layout.offsets.shape
((2, 5), (2, 1))
>>> read_mapped(path, np.dtype("<f8"), layout, (slice(1, 4), slice(0, 2))).tolist()
[[5.0, 6.0], [10.0, 11.0], [15.0, 16.0]]
"""

from __future__ import annotations

import math
import mmap
import os
from dataclasses import dataclass
from typing import Any

import h5py
import numpy as np

__all__ = ["ChunkOffsets", "H5_ERRORS", "chunk_offsets", "contiguous_offset", "read_mapped"]

#: What h5py raises when a file's metadata or data cannot be read (corrupt or truncated files).
H5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError)

#: Chunks beyond which a dataset's chunk table is not built (8 bytes a chunk; h5py reads them).
MAX_CHUNKS = 1 << 20


@dataclass(frozen=True)
class ChunkOffsets:
    """Where each chunk of an unfiltered chunked dataset starts in its file: ``offsets`` (int64, one
    per chunk of the grid) is -1 where a chunk cannot be mapped (not stored, filtered, not whole).
    """

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    offsets: np.ndarray


def _mappable_type(dset: h5py.Dataset, shape: tuple) -> bool:
    return dset.shape == shape and dset.dtype.isnative and dset.dtype.kind in "iuf"


def contiguous_offset(dset: h5py.Dataset, shape: tuple, file_size: int) -> int | None:
    """Where the values of a contiguous, unfiltered, native ``dset`` start, else None."""
    try:
        if dset.chunks is not None or dset.compression or dset.external:
            return None
        if not _mappable_type(dset, shape):
            return None
        offset = dset.id.get_offset()
    except H5_ERRORS:
        return None
    nbytes = math.prod(shape) * dset.dtype.itemsize
    if offset is None or offset + nbytes > file_size:  # truncated: h5py names the problem
        return None
    return int(offset)


def chunk_offsets(
    dset: h5py.Dataset, shape: tuple, file_size: int, max_chunks: int = MAX_CHUNKS
) -> ChunkOffsets | None:
    """The :class:`ChunkOffsets` of an unfiltered chunked ``dset`` of native numbers (at most
    ``max_chunks`` chunks, at least one mappable: stored, unfiltered, whole in the file), else None.
    """
    try:
        chunks = dset.chunks
        if chunks is None or not _mappable_type(dset, shape) or dset.size == 0:
            return None
        if dset.id.get_create_plist().get_nfilters():
            return None
        grid = tuple(-(-n // c) for n, c in zip(shape, chunks, strict=True))
        if math.prod(grid) > max_chunks:
            return None
        nbytes = math.prod(chunks) * dset.dtype.itemsize
        offsets = np.full(grid, -1, dtype=np.int64)

        def visit(info: Any) -> None:
            start = info.byte_offset
            if start is None or info.filter_mask or info.size != nbytes:
                return
            if start + nbytes > file_size:
                return
            index = tuple(o // c for o, c in zip(info.chunk_offset, chunks, strict=True))
            if all(i < g for i, g in zip(index, grid, strict=True)):
                offsets[index] = start

        if hasattr(dset.id, "chunk_iter"):  # one walk of the chunk index (HDF5 >= 1.14)
            dset.id.chunk_iter(visit)
        else:  # pragma: no cover - older HDF5
            for i in range(dset.id.get_num_chunks()):
                visit(dset.id.get_chunk_info(i))
    except H5_ERRORS:
        return None
    if not (offsets >= 0).any():
        return None
    return ChunkOffsets(tuple(shape), tuple(chunks), offsets)


def _bounds(key: Any, shape: tuple[int, ...]) -> list[tuple[int, int]] | None:
    """``(start, stop)`` per axis of unit-step slices; None for other keys, empty blocks."""
    if not isinstance(key, tuple) or len(key) != len(shape):
        return None
    out = []
    for k, n in zip(key, shape, strict=True):
        if not isinstance(k, slice):
            return None
        start, stop, step = k.indices(n)
        if step != 1 or stop <= start:
            return None
        out.append((start, stop))
    return out


def _view(buffer: mmap.mmap, dtype: np.dtype, offset: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.frombuffer(buffer, dtype, math.prod(shape), offset).reshape(shape)


def read_mapped(path: str, dtype: np.dtype, layout: ChunkOffsets, key: Any) -> np.ndarray | None:
    """Block ``key`` of a chunked dataset from a memory map of the file: a view where its chunks lie
    in one run of bytes, else assembled; None where h5py must read it. ValueError: the file is now
    shorter than its chunk table says.
    """
    bounds = _bounds(key, layout.shape)
    if bounds is None:
        return None
    chunks = layout.chunks
    lo = [s // c for (s, _), c in zip(bounds, chunks, strict=True)]
    hi = [-(-e // c) for (_, e), c in zip(bounds, chunks, strict=True)]
    where = layout.offsets[tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))]
    if (where < 0).any():
        return None
    nbytes = math.prod(chunks) * dtype.itemsize
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        end = int(where.max()) + nbytes
        if end > size:  # h5py would read zeros past the end of a file cut after it was opened
            raise ValueError(f"the file ends at byte {size}, before its chunk ending at {end}")
        buffer = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    local = tuple(
        slice(s - a * c, e - a * c) for (s, e), a, c in zip(bounds, lo, chunks, strict=True)
    )
    run = where.ravel()
    if all(n == 1 for n in where.shape[1:]) and (np.diff(run) == nbytes).all():
        # one chunk, or chunks one after another along the first axis: one view, no copy
        return _view(buffer, dtype, int(run[0]), (len(run) * chunks[0], *chunks[1:]))[local]
    out = np.empty([e - s for s, e in bounds], dtype=dtype)
    for index in np.ndindex(where.shape):
        chunk = _view(buffer, dtype, int(where[index]), chunks)
        src, dst = [], []
        for (s, e), a, i, c in zip(bounds, lo, index, chunks, strict=True):
            first = (a + i) * c  # the chunk's first element along this axis
            src.append(slice(max(s, first) - first, min(e, first + c) - first))
            dst.append(slice(max(s, first) - s, min(e, first + c) - s))
        out[tuple(dst)] = chunk[tuple(src)]
    return out
