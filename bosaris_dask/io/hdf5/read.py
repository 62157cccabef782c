"""Reading the BOSARIS HDF5 layout: ids, kind detection and lazy matrices (Key, Ndx, Scores).

Each dask task reopens the file through a picklable
:class:`xarray.backends.CachingFileManager`, so a file is read in parallel under
``distributed``; every dataset is first checked by :mod:`bosaris_dask.io.hdf5.safety`.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import dask.array as da
import h5py
import numpy as np
import pandas as pd
import xarray as xr
from xarray.backends import CachingFileManager

from bosaris_dask.errors import StoreError, StoreNotFoundError, TrialError
from bosaris_dask.io.compute import plan_chunks
from bosaris_dask.io.hdf5.safety import (
    _H5_ERRORS,
    _dataset,
    _mask_values,
    _resolve,
    _standard_type,
)
from bosaris_dask.trials import make_key, make_ndx, make_scores

_ROWS, _COLUMNS = "ID/row_ids", "ID/column_ids"


class _H5Array:
    """A read-only, picklable, array-like view of one dataset of an HDF5 file.

    Every ``__getitem__`` acquires the file from a :class:`CachingFileManager` (opening it on a
    worker after unpickling) and reads just the requested slab.
    """

    def __init__(
        self,
        manager: CachingFileManager,
        path: str,
        name: str,
        shape: tuple[int, ...],
        dtype: np.dtype,
        token: tuple[int, int],
        offset: int | None = None,
    ):
        self._manager, self._path, self._name, self._token = manager, path, name, token
        self.shape, self.dtype = shape, dtype
        self.ndim = len(shape)
        self._offset = offset

    def __getitem__(self, key: Any) -> np.ndarray:
        if self._offset is not None:  # contiguous and uncompressed: map the file's bytes
            try:
                data = np.memmap(self._path, self.dtype, "r", self._offset, self.shape)
            except (OSError, ValueError) as exc:
                raise StoreError(f"{self._path}: cannot read {self._name} ({exc})") from exc
            return data[key]
        try:
            dset = self._manager.acquire()[self._name]
            if dset.shape == self.shape:
                return np.asarray(dset[key])
            return np.asarray(dset[()]).reshape(self.shape)[key]  # a 1x1 or 1xn matrix as (), (n,)
        except _H5_ERRORS as exc:
            raise StoreError(f"{self._path}: cannot read {self._name} ({exc})") from exc

    def __dask_tokenize__(self) -> tuple:
        return ("bosaris-hdf5", self._path, self._name, self._token, self.shape)


def _open(path: Path) -> tuple[CachingFileManager, h5py.File]:
    manager = CachingFileManager(h5py.File, os.fspath(path), mode="r")
    try:
        return manager, manager.acquire()
    except _H5_ERRORS as exc:
        manager.close()
        raise StoreError(f"{path}: not a readable HDF5 file ({exc})") from exc


def _read_ids(path: Path, f: h5py.File, name: str) -> np.ndarray:
    """Ids of a dataset of fixed or variable-length strings, as an object array of ``str``."""
    dset = _dataset(path, f, name)
    if h5py.check_string_dtype(dset.dtype) is None:
        raise StoreError(f"{path}: dataset /{name} holds {dset.dtype}, not strings")
    if dset.ndim > 2 or (dset.ndim == 2 and 1 not in dset.shape):
        raise StoreError(f"{path}: dataset /{name} has shape {dset.shape}, expected (n,) or (n, 1)")
    try:
        raw = dset.asstr(encoding="utf-8")[()]
    except (*_H5_ERRORS, UnicodeDecodeError) as exc:
        raise StoreError(f"{path}: cannot read the strings of /{name} ({exc})") from exc
    ids = np.array([s.rstrip("\x00") for s in np.ravel(raw)], dtype=object)
    index = pd.Index(ids)
    if not index.is_unique:
        raise StoreError(f"{path}: duplicate id {index[index.duplicated()][0]!r} in /{name}")
    return ids


def detect_hdf5_kind(f: h5py.File, path: str | os.PathLike[str] = "") -> str:
    """The kind of an open BOSARIS HDF5 file, from the datasets it holds.

    ``/scores`` means scores; ``/target_mask`` (old format) or ``/file_format`` means a key;
    ``/trial_mask`` means a key when signed (int8) and an index when unsigned or boolean;
    ``/values`` with ``/ids`` means a quality table.

    Raises
    ------
    StoreError
        When no kind fits, or ``/trial_mask`` is floating point without ``/file_format`` (then
        key and ndx cannot be told apart: pass ``kind``).
    """

    def has(name: str) -> bool:
        return _resolve(path, f, name) is not None

    if has("scores"):
        return "scores"
    if has("target_mask") or has("file_format"):
        return "key"
    if has("trial_mask"):
        dtype = _dataset(path, f, "trial_mask").dtype
        if dtype.kind == "i":
            return "key"
        if dtype.kind in "ub":
            return "ndx"
        raise StoreError(f"{path}: /trial_mask holds {dtype}; pass kind=")
    if has("values") and has("ids"):
        return "quality"
    raise StoreError(f"{path}: not a BOSARIS HDF5 file (no /trial_mask, /scores or /values)")


def _key_signs(x: np.ndarray) -> np.ndarray:
    """The codes of a ``/trial_mask`` block: integers as they are (already checked to be -1, 0
    or +1), floats by their sign past 0.5 (MATLAB's meaning), with no 8-byte temporaries."""
    if x.dtype.kind in "iu":
        return x.astype(np.int8, copy=False)
    out = np.greater(x, 0.5).view(np.int8)  # 1 or 0, one byte per trial
    out -= np.less(x, -0.5).view(np.int8)
    return out


def _masked_scores(score: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``score`` with 0 where ``mask`` is false (in place: h5py gave this task its own block)."""
    if not mask.all():
        if not score.flags.writeable:
            score = score.copy()
        np.copyto(score, score.dtype.type(0), where=~mask)
    return score


def _key_from_two(
    tar: np.ndarray, non: np.ndarray, path: str, block_info: dict | None = None
) -> np.ndarray:
    tar, non = tar != 0, non != 0
    both = tar & non
    if both.any():
        i, j = (int(x[0]) for x in np.nonzero(both))
        if block_info is not None:
            (r0, _), (c0, _) = block_info[0]["array-location"]
            i, j = i + r0, j + c0
        raise StoreError(
            f"{path}: trial {_trial_ids(path, i, j)} is in both /target_mask and /nontarget_mask"
        )
    return tar.astype(np.int8) - non.astype(np.int8)


def _trial_ids(path: str, i: int, j: int) -> str:
    """``(model, segment)`` of cell ``(i, j)`` of a file, for an error message."""
    try:
        with h5py.File(path, "r") as f:
            models, segments = _read_ids(Path(path), f, _ROWS), _read_ids(Path(path), f, _COLUMNS)
    except (OSError, StoreError):  # the ids were readable when the file was opened
        return f"(row {i + 1}, column {j + 1})"
    return f"({models[i]}, {segments[j]})"


def _contiguous_offset(dset: h5py.Dataset, shape: tuple, file_size: int) -> int | None:
    """Where the values of ``dset`` start in its file, when they can be read by a memory map:
    contiguous (as MATLAB writes matrices), unfiltered, allocated, stored in this file in
    native byte order and in the shape read; else None (h5py reads them).

    h5py copies every block out of the page cache (reading and summing 800 MB of full rows:
    0.16-0.21 s on this project's machine, against 0.09-0.12 s through a memory map); the
    kernels read the memory map straight from the page cache.
    """
    try:
        if dset.chunks is not None or dset.compression or dset.external or dset.shape != shape:
            return None
        if not dset.dtype.isnative or dset.dtype.kind not in "iuf":
            return None
        offset = dset.id.get_offset()
    except _H5_ERRORS:
        return None
    nbytes = int(np.prod(shape)) * dset.dtype.itemsize
    if offset is None or offset + nbytes > file_size:  # truncated: h5py names the problem
        return None
    return int(offset)


def _lazy(
    path: Path,
    manager: CachingFileManager,
    f: h5py.File,
    name: str,
    allowed: tuple[int, ...] | None = None,
    *,
    shape: tuple,
    chunks: Any,
) -> da.Array:
    """Dataset ``name`` as a dask array; ``allowed``: the values an integer mask may hold."""
    dset = _dataset(path, f, name)
    if dset.dtype.kind not in "biuf":
        raise StoreError(f"{path}: /{name} holds {dset.dtype}, expected numbers")
    if not _standard_type(path, dset):
        raise StoreError(
            f"{path}: /{name} holds a non-standard number type ({dset.dtype}); floats must be "
            "little-endian IEEE 754, as MATLAB, h5py and SIDEKIT write them (corrupt?)"
        )
    if dset.shape != shape and not (dset.ndim < 2 and dset.size == np.prod(shape)):
        raise StoreError(
            f"{path}: /{name} has shape {dset.shape} but there are {shape[0]} row ids and "
            f"{shape[1]} column ids"
        )
    stat = path.stat()
    arr = _H5Array(
        manager, os.fspath(path), dset.name, shape, dset.dtype, (stat.st_mtime_ns, stat.st_size),
        _contiguous_offset(dset, shape, stat.st_size),
    )  # fmt: skip
    out = da.from_array(
        arr, chunks=chunks, asarray=True, fancy=False, meta=np.empty((0, 0), dtype=dset.dtype)
    )
    if allowed is None or dset.dtype.kind not in "iu":
        return out
    return out.map_blocks(_mask_values, allowed, f"{path}: /{name}", dtype=out.dtype)


def read_hdf5(
    path: str | os.PathLike[str], kind: str | None = None, *, chunks: Any = None
) -> xr.Dataset:
    """Open a Key, Ndx or Scores stored in the BOSARIS HDF5 layout, lazily.

    Parameters
    ----------
    path
        The HDF5 file.
    kind : {"key", "ndx", "scores"}, optional
        What the file holds; by default detected from its datasets (:func:`detect_hdf5_kind`).
    chunks
        Dask chunks; by default about 64 MiB of full rows of double scores (the same chunks
        for a key or an index of the same shape, so that they pair up without rechunking).

    Returns
    -------
    xarray.Dataset
        The trial object. Scores are float64 (float32 if the file holds float32) and 0 where
        the mask is 0.

    Raises
    ------
    StoreError
        Naming the file and the dataset: not HDF5, truncated, missing datasets, ids that are not
        unique strings, shapes that do not match.

    Examples
    --------
    >>> import tempfile, h5py, numpy as np
    >>> path = tempfile.mkdtemp() + "/ndx.h5"
    >>> with h5py.File(path, "w") as f:
    ...     f["trial_mask"] = np.array([[1, 0, 1]], dtype=np.uint8)
    ...     f["ID/row_ids"] = np.array([[b"m1"]])
    ...     f["ID/column_ids"] = np.array([b"s1", b"s2", b"s3"])
    >>> ndx = read_hdf5(path)
    >>> ndx.attrs["bosaris_kind"], ndx.trial_mask.values.tolist()
    ('ndx', [[True, False, True]])
    """
    path = Path(path)
    if not path.exists():
        raise StoreNotFoundError(f"{path}: no such HDF5 file")
    manager, f = _open(path)
    try:
        found = kind or detect_hdf5_kind(f, path)
        if found == "quality":
            raise StoreError(f"{path}: holds a quality table; read it with read_quality")
        if found not in ("key", "ndx", "scores"):
            raise StoreError(f"{path}: cannot read kind {found!r} from HDF5")
        models, segments = _read_ids(path, f, _ROWS), _read_ids(path, f, _COLUMNS)
        shape = (len(models), len(segments))
        # keys and indexes in the chunks of double scores of the same shape: an evaluation
        # then reads key and scores in the same chunks, no key block held for several tasks
        plan = plan_chunks(shape, 8) if chunks is None else chunks
        lazy = functools.partial(_lazy, path, manager, f, shape=shape, chunks=plan)
        if found == "scores":
            mask = lazy("score_mask", (0, 1)) != 0
            raw = lazy("scores")
            score = raw if raw.dtype == np.float32 else raw.astype(np.float64)
            score = da.map_blocks(_masked_scores, score, mask, dtype=score.dtype)
            return make_scores(models, segments, score, mask)
        if found == "ndx":
            return make_ndx(models, segments, lazy("trial_mask", (0, 1)) != 0)
        if _resolve(path, f, "target_mask") is not None:
            tar, non = lazy("target_mask", (0, 1)), lazy("nontarget_mask", (0, 1))
            mask = da.map_blocks(_key_from_two, tar, non, os.fspath(path), dtype=np.int8)
        else:
            mask = lazy("trial_mask", (-1, 0, 1)).map_blocks(_key_signs, dtype=np.int8)
        return make_key(models, segments, mask)
    except TrialError as exc:
        manager.close()
        raise StoreError(f"{path}: {exc}") from exc
    except BaseException:
        manager.close()
        raise
