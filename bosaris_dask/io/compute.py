"""Chunk plans shared by the zarr and HDF5 stores, and where a flagged cell of a block lies."""

from __future__ import annotations

import math
from typing import Any

import dask.array as da
import numpy as np

__all__ = ["plan_chunks", "as_dask", "first_cell"]


def plan_chunks(shape: tuple[int, int], itemsize: int, chunk_mb: float = 64) -> tuple[int, int]:
    """The chunk shape of a ``(models, segments)`` matrix of about ``chunk_mb`` MiB: full rows when
    a row fits, else square-ish.

    Examples
    --------
    >>> plan_chunks((30_000, 33_000), 8)
    (254, 33000)
    >>> plan_chunks((10, 10**9), 4, chunk_mb=1)
    (10, 26214)
    """
    rows, cols = (max(1, int(n)) for n in shape)
    limit = max(1, int(chunk_mb * 2**20) // max(1, itemsize))  # elements per chunk
    if cols <= limit:
        return min(rows, max(1, limit // cols)), cols
    r = min(rows, max(1, math.isqrt(limit)))
    return r, min(cols, max(1, limit // r))


def as_dask(x: Any) -> da.Array:
    """``x`` as a dask array (``"auto"`` chunks unless it is one)."""
    return x if isinstance(x, da.Array) else da.from_array(np.asarray(x), chunks="auto")


def first_cell(flags: np.ndarray, block_info: dict | None = None) -> tuple[int, int]:
    """``(row, column)`` of the first true cell of a 2-D block of ``flags``, in the whole matrix
    where ``block_info`` (dask's, in ``map_blocks``) places the block.

    Examples
    --------
    >>> first_cell(np.array([[False, False], [False, True]]))
    (1, 1)
    >>> first_cell(np.array([[False, True]]), {0: {"array-location": [(4, 5), (10, 12)]}})
    (4, 11)
    """
    i, j = (int(x) for x in np.unravel_index(int(np.argmax(flags)), flags.shape))
    if block_info is not None:
        (r0, _), (c0, _) = block_info[0]["array-location"]
        i, j = i + r0, j + c0
    return i, j
