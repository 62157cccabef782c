"""Chunk plans and dask computes shared by the zarr and HDF5 stores.

:func:`plan_chunks` picks the chunk shape of a stored ``(models, segments)`` matrix;
:func:`compute_with_progress` runs the write graphs (on a distributed client when one is active,
else on a thread pool drained before returning), with an optional progress bar.
"""

from __future__ import annotations

import math
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import dask

__all__ = ["plan_chunks", "compute_with_progress"]


def plan_chunks(shape: tuple[int, int], itemsize: int, chunk_mb: float = 64) -> tuple[int, int]:
    """The chunk shape for a ``(models, segments)`` matrix of about ``chunk_mb`` MiB per chunk.

    Full rows of segments when a row fits (contiguous reads, one chunk per band of models);
    otherwise square-ish chunks.

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


def _distributed_client() -> Any | None:
    """The distributed client that dask uses now, if any."""
    scheduler = dask.base.get_scheduler()
    owner = getattr(scheduler, "__self__", None)
    return owner if type(owner).__name__ == "Client" else None


def _compute_threads(objs: tuple[Any, ...]) -> tuple[Any, ...]:
    """``dask.compute`` on a thread pool of our own, drained before returning or raising.

    When one write task fails, dask raises at once while the others keep running; a straggler
    could then write a chunk into a temporary store that the caller has already removed (zarr
    re-creates parent directories). Waiting for the pool makes cleanup final.
    """
    if dask.config.get("scheduler", None) not in (None, "threads", "threading"):
        return dask.compute(*objs)
    pool = ThreadPoolExecutor(os.cpu_count() or 1)
    try:
        return dask.compute(*objs, scheduler="threads", pool=pool)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def compute_with_progress(*objs: Any, progress: bool = False) -> tuple[Any, ...]:
    """``dask.compute(*objs)``, showing a progress bar when ``progress`` is true.

    The bar is :func:`distributed.progress` when a distributed client is active, else
    :class:`dask.diagnostics.ProgressBar` (on standard error). Without a distributed client
    every task has finished when this returns or raises (see :func:`_compute_threads`).
    """
    client = _distributed_client()
    if client is not None:
        futures = client.compute(list(objs))
        if progress:
            from distributed import progress as show_progress

            show_progress(futures)
        return tuple(client.gather(futures))
    if not progress:
        return _compute_threads(objs)
    from dask.diagnostics import ProgressBar

    with ProgressBar(out=sys.stderr):
        return _compute_threads(objs)
