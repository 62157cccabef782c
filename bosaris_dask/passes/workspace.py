"""The buffers and block loops of the per-chunk kernels.

Every kernel works in cache-sized blocks of ``block`` elements with buffers reused through
``out=`` arguments: each thread keeps one :class:`Workspace` for all the chunks it processes
(:func:`workspace`); a histogram update is one ``bincount`` over a slice of ``slice_size``
prefix indices (:func:`blocked_bincount`). The block sizes are arguments of the kernels, which
the engine reads from the dask config (:mod:`bosaris_dask.config`) when it builds a graph.

Examples
--------
>>> import numpy as np
>>> ws = workspace(np.dtype(np.float32), 4, 8)
>>> [(b.start, b.stop) for b in slices(10, ws.block)]
[(0, 4), (4, 8), (8, 10)]
>>> key = keys_into(np.array([-1.0, 0.0, 2.0], dtype=np.float32), ws)  # a view of ws.key
>>> bool(np.all(key[:-1] < key[1:]))  # the keys order as the scores
True
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from bosaris_dask.passes.keys import key_dtype

__all__ = [
    "Workspace",
    "workspace",
    "slices",
    "classes_of",
    "blocked_bincount",
    "keys_into",
]


def slices(n: int, size: int, start: int = 0):
    """Consecutive slices of ``size`` elements covering ``range(start, n)``."""
    for lo in range(start, n, size):
        yield slice(lo, min(lo + size, n))


def classes_of(classes: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return np.where(mask, classes, 0).astype(np.int8)


def blocked_bincount(
    n: int, length: int, ws: Workspace, fill: Callable[[slice, np.ndarray], None]
) -> np.ndarray:
    """Counts of the bin indices ``fill`` writes, block by block, for elements ``0..n-1``.

    ``fill(block, idx)`` writes the bin (``0 <= bin < length``) of each element of ``block``
    into ``idx``; the indices of a slice (``ws.slice_size``) are counted with one ``bincount``.
    """
    hist = np.zeros(length, dtype=np.int64)
    for sl in slices(n, ws.slice_size):
        idx_slice = ws.idx[: sl.stop - sl.start]
        for b in slices(sl.stop, ws.block, sl.start):
            fill(b, idx_slice[b.start - sl.start : b.stop - sl.start])
        hist += np.bincount(idx_slice, minlength=length)
    return hist


class Workspace:
    """Buffers reused across the blocks of a kernel call, and across the calls of one thread.

    The element-wise temporaries are ``block`` long (cache-resident); only the prefix
    indices of one histogram update are ``slice_size`` long. Fresh temporaries for every numpy
    operation cost page faults that serialize threads; reusing these through ``out=``
    arguments, one set per thread (:func:`workspace`), makes the kernels scale with cores.
    """

    def __init__(self, dtype: np.dtype, block: int, slice_size: int):
        kdt = key_dtype(dtype)
        self.block = block
        self.slice_size = slice_size
        self.key = np.empty(block, dtype=kdt)
        self.signs = np.empty(block, dtype=kdt)
        self.flag = np.empty(block, dtype=bool)
        self.flag2 = np.empty(block, dtype=bool)
        self.u8 = np.empty(block, dtype=np.uint8)
        self.z = np.empty(block, dtype=np.float64)
        self.e = np.empty(block, dtype=np.float64)
        self.pos = np.empty(block, dtype=np.intp)
        self.w = np.empty(block, dtype=np.float64)
        self.w2 = np.empty(block, dtype=np.float64)
        self.idx = np.empty(max(slice_size, block), dtype=np.intp)  # touched only as far as used

    @staticmethod
    def nbytes(elements: int, dtype: np.dtype, block: int, slice_size: int) -> int:
        """Bytes a workspace touches for a chunk of ``elements`` (for memory estimates)."""
        per_block = 2 * key_dtype(dtype).itemsize + 3 + 5 * 8
        itemsize = np.dtype(np.intp).itemsize
        return min(elements, block) * per_block + min(elements, max(slice_size, block)) * itemsize


_thread_local = threading.local()


def workspace(dtype: np.dtype, block: int, slice_size: int) -> Workspace:
    """This thread's :class:`Workspace` for ``dtype`` scores (kept between calls, ~40 MB)."""
    cache = _thread_local.__dict__.setdefault("workspaces", {})
    which = (key_dtype(dtype), block, slice_size)
    if which not in cache:
        cache[which] = Workspace(dtype, block, slice_size)
    return cache[which]


def keys_into(s: np.ndarray, ws: Workspace) -> np.ndarray:
    """:func:`~bosaris_dask.passes.keys.order_keys` of ``s`` into the workspace (no allocation)."""
    n = s.size
    key, signs = ws.key[:n], ws.signs[:n]
    bits = s.dtype.itemsize * 8
    np.add(s, s.dtype.type(0), out=key.view(s.dtype))  # -0.0 becomes +0.0
    np.right_shift(key.view(signs.dtype.str.replace("u", "i")), bits - 1,
                   out=signs.view(signs.dtype.str.replace("u", "i")))  # fmt: skip
    np.bitwise_or(signs, signs.dtype.type(1 << (bits - 1)), out=signs)
    np.bitwise_xor(key, signs, out=key)
    return key
