"""Writing a trial object to a zarr v3 store, streamed chunk by chunk from dask, atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
import zarr

from bosaris_dask.io.atomic import atomic_path, remove_path
from bosaris_dask.io.compute import plan_chunks
from bosaris_dask.io.zarr_store.layout import _MASKS, _VARIABLES, STORE_VERSION, _encode_labels
from bosaris_dask.progress import compute
from bosaris_dask.trials import DIMS, is_label_key, kind_of, validate


def _regular(chunks: tuple[tuple[int, ...], ...]) -> bool:
    return all(len(set(c[:-1])) <= 1 and (len(c) < 2 or c[-1] <= c[0]) for c in chunks)


def _write_chunks(arr: da.Array, itemsize: int, chunk_mb: float) -> tuple[int, int]:
    """Keep the dask chunks when regular and within a factor 2 of ``chunk_mb``, else plan."""
    limit = chunk_mb * 2**20
    if _regular(arr.chunks) and 0 not in arr.shape:
        shape = (arr.chunks[0][0], arr.chunks[1][0])
        if limit / 2 <= shape[0] * shape[1] * itemsize <= 2 * limit:
            return shape
    return plan_chunks(arr.shape, itemsize, chunk_mb)


def _as_dask(x: Any) -> da.Array:
    return x if isinstance(x, da.Array) else da.from_array(np.asarray(x), chunks="auto")


def _known_all_true(arr: da.Array) -> bool:
    """Whether ``arr`` is cheaply known to be all true: a ``da.ones`` graph, maybe rechunked."""
    ok = ("ones-", "ones_like-", "rechunk-", "astype-")
    layers = arr.__dask_graph__().layers
    return arr.dtype == bool and all(name.startswith(ok) for name in layers)


def _ids(obj: xr.Dataset, dim: str) -> np.ndarray:
    return np.asarray([str(i) for i in obj[dim].values], dtype=object)


def _trial_dataset(obj: xr.Dataset, kind: str, chunk_mb: float) -> tuple[xr.Dataset, dict]:
    """The dataset to write and its encoding."""
    coords: dict[str, Any] = {"model": _ids(obj, "model"), "segment": _ids(obj, "segment")}
    attrs: dict[str, Any] = {"bosaris_kind": kind, "bosaris_store_version": STORE_VERSION}
    if is_label_key(obj):
        coords.update(_encode_labels(obj.model_label.values, obj.segment_label.values))
        return xr.Dataset(coords=coords, attrs=attrs), {}
    names = list(_VARIABLES[kind])
    main = _as_dask(obj[names[0]].data)
    # a key's or an index's one-byte mask is chunked like float32 scores of the same shape, so
    # that an evaluation reads both in the same chunks: a 4x larger key chunk is held whole
    # (plus zarr's decoding copy) until the four score chunks it spans are done (issue 16)
    itemsize = max(np.dtype(obj[names[0]].dtype).itemsize, 4)
    chunks = _write_chunks(main, itemsize, chunk_mb)
    data_vars: dict[str, Any] = {}
    encoding: dict[str, dict[str, Any]] = {}
    omitted: list[str] = []
    for name in names:
        arr = _as_dask(obj[name].data).rechunk(chunks)
        if name == _MASKS.get(kind) and _known_all_true(arr):
            omitted.append(name)
            continue
        data_vars[name] = (DIMS, arr)
        encoding[name] = {"chunks": chunks}
        if name == "score":
            encoding[name].update(compressors=None, _FillValue=np.nan)
    attrs["bosaris_all_true"] = omitted
    return xr.Dataset(data_vars, coords=coords, attrs=attrs), encoding


def _quality_dataset(obj: xr.Dataset) -> xr.Dataset:
    out = obj.drop_encoding().copy()
    for side in DIMS:
        if side in out.coords:
            out = out.assign_coords({side: _ids(out, side)})
    out.attrs = {"bosaris_kind": "quality", "bosaris_store_version": STORE_VERSION}
    return out


def write_zarr(
    obj: xr.Dataset,
    path: str | os.PathLike[str],
    *,
    chunk_mb: float = 64,
    progress: bool = False,
    omit_true_masks: bool = True,
) -> Path:
    """Write a trial object (ndx, key, scores or quality) to a zarr v3 store, atomically.

    The data stream from dask chunk by chunk (memory stays bounded for lazy billion-trial
    matrices). The store appears under ``path`` only once it is complete; an existing store of
    that name is replaced.

    Parameters
    ----------
    obj
        The trial object. A key derived from labels is stored as its labels only.
    path
        The store directory (conventionally ending in ``.zarr``).
    chunk_mb
        Target chunk size in MiB of the score matrix; a key's or an index's mask (one byte per
        trial) gets the chunks float32 scores of the same shape would get, a quarter of it.
        Dask chunks that are regular and within a factor of two of it are kept; otherwise the
        data are rechunked, to full rows of segments when a row fits.
    progress
        Show a progress bar while the chunks are written.
    omit_true_masks
        Do not store a ``score_mask`` (scores) or ``trial_mask`` (ndx) that is all true: either
        known from its graph (``da.ones``) or checked after writing by reading back the written,
        compressed mask (1 byte per trial). The omission is recorded in the attribute
        ``bosaris_all_true``.

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> import tempfile
    >>> from bosaris_dask.io.zarr_store import read_zarr
    >>> from bosaris_dask.trials import key_from_labels
    >>> key = key_from_labels(["m1", "m2"], ["a", "b"], ["s1", "s2"], ["b", "c"])
    >>> path = write_zarr(key, tempfile.mkdtemp() + "/key.zarr")
    >>> sorted(p.name for p in path.iterdir())
    ['model', 'model_label', 'segment', 'segment_label', 'zarr.json']
    >>> read_zarr(path).trial_mask.values.tolist()
    [[-1, -1], [1, -1]]
    """
    kind = kind_of(validate(obj))
    path = Path(path)
    encoding: dict[str, dict[str, Any]] = {}
    if kind == "quality":
        ds = _quality_dataset(obj)
    else:
        ds, encoding = _trial_dataset(obj, kind, chunk_mb)
    with atomic_path(path) as tmp:
        delayed = ds.to_zarr(
            tmp,
            mode="w-",
            encoding=encoding,
            consolidated=False,
            zarr_format=3,
            write_empty_chunks=True,
            compute=False,
        )
        compute(delayed, progress=progress)
        mask = _MASKS.get(kind)
        if omit_true_masks and mask is not None and mask in ds.data_vars:
            stored = da.from_zarr(zarr.open_array(tmp / mask, mode="r"))
            if bool(compute(stored.all(), progress=progress)):
                remove_path(tmp / mask)
                zarr.open_group(tmp, mode="r+").attrs["bosaris_all_true"] = [mask]
    return path
