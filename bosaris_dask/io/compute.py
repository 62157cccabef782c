"""Chunk plans shared by the zarr and HDF5 stores."""

from __future__ import annotations

import math
from typing import Any

import dask.array as da
import numpy as np

__all__ = ["plan_chunks", "as_dask"]


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
