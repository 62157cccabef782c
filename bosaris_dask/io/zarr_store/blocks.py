"""Reading a zarr array chunk by chunk, so that a chunk that cannot be decoded names itself.

zarr decodes a compressed chunk inside the task that reads it; a truncated or corrupt chunk then
fails with the codec's own message (``Zstd decompression error: invalid input data``), deep in
a worker and naming nothing. :func:`block_array` reads one stored chunk per task and turns that
failure into a :class:`~bosaris_dask.errors.StoreError` naming the store, the array, the chunk
and its file. A chunk that is absent reads as the fill value, as zarr defines it.

Examples
--------
>>> import tempfile, numpy as np, zarr
>>> path = tempfile.mkdtemp() + "/a"
>>> z = zarr.create_array(path, shape=(5, 3), chunks=(2, 3), dtype="i1", fill_value=0)
>>> z[:1] = 1  # only chunk (0, 0) is written
>>> block_array(z, "store", "a").compute().tolist()
[[1, 1, 1], [0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]]
"""

from __future__ import annotations

import math

import dask.array as da
import numpy as np
import zarr
from dask.base import tokenize

from bosaris_dask.errors import StoreError

__all__ = ["block_array"]

_DECODE_ERRORS = (
    RuntimeError,  # numcodecs' zstd, blosc
    ValueError,  # a buffer of the wrong size
    TypeError,
    OSError,
    zarr.errors.BaseZarrError,
)


def _read_block(
    arr: zarr.Array, index: tuple[int, ...], region: tuple[slice, ...], where: str, name: str
) -> np.ndarray:
    try:
        return np.asarray(arr[region])
    except _DECODE_ERRORS as exc:
        key = arr.metadata.encode_chunk_key(index)
        raise StoreError(
            f"{where}: array {name!r} chunk {index} (file {key}) cannot be read: it is corrupt "
            f"or truncated ({type(exc).__name__}: {exc})"
        ) from exc


def block_array(arr: zarr.Array, where: str, name: str) -> da.Array:
    """A dask array with one task per stored chunk of ``arr``, decoding errors named.

    Parameters
    ----------
    arr
        The opened zarr array; one task reads one chunk (one shard of a sharded array).
    where
        The store, for error messages.
    name
        The array's name in the store, for error messages.
    """
    outer = arr.shards or arr.chunks
    chunks = tuple(
        tuple(min(c, n - k) for k in range(0, n, c)) if n else (0,)
        for n, c in zip(arr.shape, outer, strict=True)
    )
    token = tokenize(where, name, arr.shape, arr.chunks, str(arr.dtype), arr.metadata.to_dict())
    key = f"zarr-blocks-{name}-{token}"
    if not math.prod(arr.shape):
        return da.empty(arr.shape, dtype=arr.dtype, chunks=chunks)
    # a blockwise layer (not a dict of tasks): dask fuses each read into the task that uses
    # the chunk, so a worker process decodes the chunk itself instead of receiving it
    return da.map_blocks(
        _read_indexed_block, arr=arr, outer=tuple(outer), where=where, array_name=name, name=key,
        chunks=chunks, dtype=arr.dtype, meta=np.empty((0,) * len(chunks), dtype=arr.dtype),
    )  # fmt: skip


def _read_indexed_block(
    *,
    arr: zarr.Array,
    outer: tuple[int, ...],
    where: str,
    array_name: str,
    block_id: tuple[int, ...],
    block_info: dict | None = None,
) -> np.ndarray:
    sizes = block_info[None]["chunk-shape"]
    region = tuple(slice(i * c, i * c + n) for i, c, n in zip(block_id, outer, sizes, strict=True))
    return _read_block(arr, tuple(block_id), region, where, array_name)
