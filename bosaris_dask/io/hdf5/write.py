"""Writing the BOSARIS HDF5 layout from dask, atomically; h5py writes from one process."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import dask.local
import dask.threaded
import h5py
import numpy as np
import xarray as xr

from bosaris_dask.errors import StoreError, quality_object_refused
from bosaris_dask.io.atomic import atomic_path
from bosaris_dask.io.compute import as_dask, plan_chunks
from bosaris_dask.progress import compute, current_client
from bosaris_dask.trials import kind_of, trial_classes, validate

#: How many bytes of blocks the writer pulls from distributed workers at a time.
_BATCH_BYTES = 128 * 2**20
#: The HDF5 1.8 file format (any HDF5 library since 2008): its metadata carry checksums, so a
#: corrupted byte there is an error on reading, not a dataset silently read from elsewhere.
_LIBVER = ("v108", "v108")
#: The ``layout`` attribute of a quality table's ``/values``: which side is which, where the
#: shape cannot say it (as many measures as ids).
QUALITY_LAYOUT = "measures x ids"


def _check_ids(path: Any, name: str, values: Any) -> None:
    r"""A StoreError naming the file and the first id with a NUL (HDF5's fixed-length strings
    end at one), before anything is written.

    >>> _check_ids("s.h5", "row_ids", ["a", "b\x00c"])
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.StoreError: s.h5: a NUL in id 'b\x00c' (HDF5 /row_ids cannot hold it)
    """
    # (numpy's str arrays drop trailing NULs: each id looked at as a Python str)
    bad = next((v for v in map(str, np.ravel(np.asarray(values, dtype=object))) if "\x00" in v),
               None)  # fmt: skip
    if bad is not None:
        raise StoreError(f"{path}: a NUL in id {bad!r} (HDF5 /{name} cannot hold it)")


def _write_strings(parent: h5py.Group, name: str, values: Any, *, scalar: bool = False) -> None:
    """Fixed-length NUL-terminated strings padded to the longest (as MATLAB writes them); ids
    are checked for NULs by :func:`_check_ids` before anything is written."""
    encoded = [str(v).encode("utf-8") for v in np.ravel(np.asarray(values, dtype=object))]
    size = max((len(e) for e in encoded), default=0) + 1
    tid = h5py.h5t.C_S1.copy()
    tid.set_size(size)
    tid.set_strpad(h5py.h5t.STR_NULLTERM)
    ascii_only = all(e.isascii() for e in encoded)
    tid.set_cset(h5py.h5t.CSET_ASCII if ascii_only else h5py.h5t.CSET_UTF8)
    arr = np.array(encoded, dtype=f"S{size}")
    if scalar:
        space = h5py.h5s.create(h5py.h5s.SCALAR)
        arr = arr.reshape(())
    else:
        space = h5py.h5s.create_simple((len(encoded),))
    untimed = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    untimed.set_obj_track_times(False)  # no timestamp: the same bytes each time
    dset = h5py.h5d.create(parent.id, name.encode(), tid, space, dcpl=untimed)
    if arr.size:
        dset.write(h5py.h5s.ALL, h5py.h5s.ALL, arr, mtype=tid)


def bosaris_matrices(obj: xr.Dataset, kind: str, chunks: Any = None) -> dict[str, da.Array]:
    """The matrices of the BOSARIS layout (HDF5, MAT), lazily, in ``chunks`` if given."""

    def lazy(name: str) -> da.Array:
        x = as_dask(obj[name].data)
        return x if chunks is None else x.rechunk(chunks)

    if kind == "key":
        return {"trial_mask": trial_classes(obj, chunks=chunks).astype(np.int8)}
    if kind == "ndx":
        return {"trial_mask": lazy("trial_mask").astype(np.uint8)}
    mask, score = lazy("score_mask").astype(bool), lazy("score")
    return {
        "scores": da.where(mask, score, score.dtype.type(0)),
        "score_mask": mask.astype(np.uint8),
    }


def _stream(
    matrices: dict[str, da.Array], f: h5py.Group, label: str, progress: bool
) -> list[h5py.Dataset]:
    """Write dask arrays into new datasets of ``f`` from this process: by ``da.store`` under a lock
    with a local scheduler, else pulled from distributed workers a batch at a time.
    """
    arrays = list(matrices.values())
    early = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    early.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)  # places fixed in order, whatever writes first
    datasets = [f.create_dataset(n, shape=a.shape, dtype=a.dtype, track_times=False, dcpl=early)
                for n, a in matrices.items()]  # fmt: skip
    if 0 in arrays[0].shape:
        return datasets
    if current_client() is None:
        stored = da.store(arrays, datasets, lock=threading.Lock(), compute=False)
        local = dask.base.get_scheduler() in (None, dask.threaded.get, dask.local.get_sync)
        with contextlib.nullcontext() if local else dask.config.set(scheduler="threads"):
            compute(stored, progress=progress)
        return datasets
    blocks = [a.to_delayed(optimize_graph=True).ravel() for a in arrays]
    slices = list(da.core.slices_from_chunks(arrays[0].chunks))
    block_bytes = (
        arrays[0].chunks[0][0] * arrays[0].chunks[1][0] * sum(a.dtype.itemsize for a in arrays)
    )
    per_batch = max(1, _BATCH_BYTES // max(1, block_bytes))
    for start in range(0, len(slices), per_batch):
        batch = range(start, min(len(slices), start + per_batch))
        values = list(compute([b[i] for b in blocks for i in batch]))
        for k, dset in enumerate(datasets):
            for j, i in enumerate(batch):
                dset[slices[i]] = values[k * len(batch) + j]
        del values  # free this batch before the next is computed
        if progress:
            end = "\n" if batch.stop == len(slices) else ""
            print(f"\r{label}: {batch.stop}/{len(slices)} blocks", end=end, file=sys.stderr)
    return datasets


def write_hdf5(
    obj: xr.Dataset, path: str | os.PathLike[str], *, progress: bool = False, chunk_mb: float = 64
) -> Path:
    """Write a Key, Ndx or Scores in the BOSARIS HDF5 layout, atomically, as MATLAB does: contiguous
    matrices (a key as its signed ``/trial_mask``, scores as double, 0 off the mask), fixed-length
    ids.

    Parameters
    ----------
    obj
        The trial object.
    path
        The file (conventionally ``.h5``); an existing file is replaced.
    progress
        Report the blocks written on standard error.
    chunk_mb
        MiB of blocks computed and written at a time.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from bosaris_dask.io.hdf5 import read_hdf5
    >>> from bosaris_dask.trials import make_scores
    >>> scores = make_scores(["m"], ["a", "b"], np.array([[2.5, 7.0]]), [[True, False]])
    >>> path = write_hdf5(scores, tempfile.mkdtemp() + "/s.h5")
    >>> read_hdf5(path).score.values.tolist()
    [[2.5, 0.0]]
    """
    kind = kind_of(validate(obj))
    if kind == "quality":
        raise StoreError(f"{path}: {quality_object_refused('HDF5')}")
    path = Path(path)
    _check_ids(path, "row_ids", obj.model.values)
    _check_ids(path, "column_ids", obj.segment.values)
    plan = plan_chunks(
        (obj.sizes["model"], obj.sizes["segment"]), 8 if kind == "scores" else 1, chunk_mb
    )
    matrices = bosaris_matrices(obj, kind, plan)
    if kind == "scores":
        matrices["scores"] = matrices["scores"].astype(np.float64)
    with atomic_path(path) as tmp, h5py.File(tmp, "w", libver=_LIBVER) as f:
        _stream(matrices, f, f"writing {path}", progress)
        if kind == "key":
            _write_strings(f, "file_format", "2.0", scalar=True)
        group = f.create_group("ID", track_order=None)
        _write_strings(group, "row_ids", obj.model.values)
        _write_strings(group, "column_ids", obj.segment.values)
    return path


def write_quality_hdf5(table: xr.DataArray, path: str | os.PathLike[str]) -> Path:
    """Write a quality table (ids x measures) as ``/values`` (measures x ids, which its
    attribute ``layout`` says) and ``/ids``.

    Examples
    --------
    >>> import tempfile
    >>> from bosaris_dask.trials import quality_table
    >>> t = quality_table(["s1", "s2"], [[0.1, 5.0], [0.2, 6.0]])
    >>> path = write_quality_hdf5(t, tempfile.mkdtemp() + "/q.h5")
    >>> from bosaris_dask.io.hdf5 import read_quality_hdf5
    >>> read_quality_hdf5(path).equals(t)
    True
    """
    if not isinstance(table, xr.DataArray) or table.ndim != 2:
        raise StoreError(f"{path}: a quality table must be a 2-D DataArray (ids x measures)")
    ids = table[table.dims[0]].values
    values = np.asarray(table.values, dtype=np.float64).T
    path = Path(path)
    _check_ids(path, "ids", ids)
    with atomic_path(path) as tmp, h5py.File(tmp, "w", libver=_LIBVER) as f:
        f.create_dataset("values", data=values).attrs["layout"] = QUALITY_LAYOUT
        _write_strings(f, "ids", ids)
    return path
