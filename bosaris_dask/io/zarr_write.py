"""Writing trial objects as zarr v3 stores, atomically, streaming chunk by chunk (the layout
:mod:`bosaris_dask.io.zarr_store` reads back and checks; ``docs/formats.md``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask.io.atomic import atomic_path, remove_path
from bosaris_dask.io.compute import as_dask, plan_chunks
from bosaris_dask.io.zarr_store import (
    _MASKS,
    _VARIABLES,
    STORE_VERSION,
    _encode_labels,
)
from bosaris_dask.progress import compute
from bosaris_dask.trials import DIMS, is_label_key, kind_of, validate
from bosaris_dask.trials.construction import exact_in_float64

__all__ = ["write_zarr"]


def _write_chunks(arr: da.Array, itemsize: int, chunk_mb: float) -> tuple[int, int]:
    """Keep the dask chunks when regular and within a factor 2 of ``chunk_mb``, else plan."""
    regular = all(len(set(c[:-1])) <= 1 and (len(c) < 2 or c[-1] <= c[0]) for c in arr.chunks)
    if regular and 0 not in arr.shape:
        shape = (arr.chunks[0][0], arr.chunks[1][0])
        if chunk_mb * 2**19 <= shape[0] * shape[1] * itemsize <= chunk_mb * 2**21:
            return shape
    return plan_chunks(arr.shape, itemsize, chunk_mb)


def _known_all_true(arr: da.Array) -> bool:
    """Whether ``arr`` is known from its graph to be all true (``da.ones``, maybe rechunked)."""
    ok = ("ones-", "ones_like-", "rechunk-", "astype-")
    return arr.dtype == bool and all(name.startswith(ok) for name in arr.__dask_graph__().layers)


def _ids(obj: xr.Dataset, dim: str) -> np.ndarray:
    ids = [str(i) for i in obj[dim].values]
    # no ids: numpy's variable-width strings, what zarr reads the others back as (an empty
    # object array shows no type, and xarray would write it as float64)
    if ids:
        return np.asarray(ids, dtype=object)
    return np.array([], dtype=getattr(np.dtypes, "StringDType", lambda: "U1")())  # numpy < 2


def _stored_scores(arr: da.Array) -> da.Array:
    """Scores as a store holds them: float16 as float32, integers and ``longdouble`` as float64
    (exactly, or a ScoreError where float64 does not hold one), the dtypes a store's reader
    takes."""
    if arr.dtype == np.float16:
        return arr.astype(np.float32)
    if arr.dtype.kind in "iu" or arr.dtype.itemsize > 8:
        return exact_in_float64(arr, "scores").astype(np.float64)
    return arr


def _dataset(
    obj: xr.Dataset, kind: str, chunk_mb: float, omit_true_masks: bool = True
) -> tuple[xr.Dataset, dict]:
    """The dataset to write and its encoding (a mask known all true left out, unless
    ``omit_true_masks`` is False)."""
    attrs: dict[str, Any] = {"bosaris_kind": kind, "bosaris_store_version": STORE_VERSION}
    if kind == "quality":
        out = obj.drop_encoding().copy()
        # ids, and named measures, as variable-length strings: numpy's fixed-width ones have no
        # zarr v3 specification (zarr warns that such a store may not read back)
        named = [n for n in out.coords if n.endswith("_measure") and out[n].dtype.kind in "USO"]
        out = out.assign_coords({n: _ids(out, n) for n in [*DIMS, *named] if n in out.coords})
        out.attrs = attrs
        return out, {}
    coords: dict[str, Any] = {"model": _ids(obj, "model"), "segment": _ids(obj, "segment")}
    if is_label_key(obj):
        coords.update(_encode_labels(obj.model_label.values, obj.segment_label.values))
        return xr.Dataset(coords=coords, attrs=attrs), {}
    names = list(_VARIABLES[kind])
    # masks get the chunks of float32 scores, so an evaluation reads both alike (issue 16)
    itemsize = max(np.dtype(obj[names[0]].dtype).itemsize, 4)
    chunks = _write_chunks(as_dask(obj[names[0]].data), itemsize, chunk_mb)
    data_vars: dict[str, Any] = {}
    encoding: dict[str, dict[str, Any]] = {}
    attrs["bosaris_all_true"] = []
    for name in names:
        arr = as_dask(obj[name].data).rechunk(chunks)
        if name == "score":
            arr = _stored_scores(arr)
        if omit_true_masks and name == _MASKS.get(kind) and _known_all_true(arr):
            attrs["bosaris_all_true"].append(name)
            continue
        data_vars[name] = (DIMS, arr)
        encoding[name] = {"chunks": chunks}
        if name == "score":
            encoding[name].update(compressors=None, _FillValue=np.nan)
    return xr.Dataset(data_vars, coords=coords, attrs=attrs), encoding


def write_zarr(
    obj: xr.Dataset,
    path: str | os.PathLike[str],
    *,
    chunk_mb: float = 64,
    progress: bool = False,
    omit_true_masks: bool = True,
) -> Path:
    """Write a trial object (ndx, key, scores or quality) to a zarr v3 store, atomically, streaming
    chunk by chunk.

    Parameters
    ----------
    obj
        The trial object; a key derived from labels is stored as its labels.
    path
        The store directory (conventionally ``.zarr``); an existing store is replaced.
    chunk_mb
        Target MiB per chunk of the score matrix (masks get the chunks of float32 scores); regular
        dask chunks within a factor 2 of it are kept.
    progress
        Show a progress bar.
    omit_true_masks
        Do not store a ``score_mask`` or ``trial_mask`` that is all true (recorded in the attribute
        ``bosaris_all_true``).

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
    import zarr  # here, not with the module: it takes 0.15 s to import

    kind = kind_of(validate(obj))
    path = Path(path)
    ds, encoding = _dataset(obj, kind, chunk_mb, omit_true_masks)
    with atomic_path(path) as tmp:
        delayed = ds.to_zarr(
            tmp, mode="w-", encoding=encoding, consolidated=False, zarr_format=3,
            write_empty_chunks=True, compute=False,
        )  # fmt: skip
        compute(delayed, progress=progress)
        mask = _MASKS.get(kind)
        if omit_true_masks and mask is not None and mask in ds.data_vars:
            stored = da.from_zarr(zarr.open_array(tmp / mask, mode="r"))
            if bool(compute(stored.all(), progress=progress)):
                remove_path(tmp / mask)
                zarr.open_group(tmp, mode="r+").attrs["bosaris_all_true"] = [mask]
    return path
