"""HDF5 files in the layout of the BOSARIS Toolkit (Key, Ndx, Scores, segment quality).

See ``reference/HDF5_LAYOUT.md``. Rows are models (``/ID/row_ids``), columns segments
(``/ID/column_ids``); no transpose is needed in a C-order reader.

=======  ==========================================================================
kind     datasets
=======  ==========================================================================
key      ``/trial_mask`` int8 (+1 target, -1 non-target, 0 no trial), ``/file_format``
         ``'2.0'``; the old format has ``/target_mask`` and ``/nontarget_mask`` instead
ndx      ``/trial_mask`` uint8 0/1
scores   ``/scores`` double, ``/score_mask`` uint8 0/1 (scores are 0 where the mask is 0)
quality  ``/values`` double (q measures x n ids), ``/ids``
=======  ==========================================================================

Reading is liberal about ids (fixed or variable-length strings, NUL-padded or not, 1-D or
(n, 1)/(1, n)) and strict about everything else: ids must be unique strings and their numbers
must match the matrix; matrices hold little-endian IEEE 754 floats or integers, and integer
masks only 0 and 1 (-1, 0, 1 for a key). A file is read from itself only: external links,
external raw storage and virtual datasets are refused, never followed (soft links are resolved
inside the file). Files are written in the HDF5 1.8 format, whose metadata carry checksums; raw
data have none (in any BOSARIS file), so a corrupted score reads as another number.

Matrices are read lazily: each dask task reopens the file through a picklable
:class:`xarray.backends.CachingFileManager` (pickling drops the open file, a worker reopens it),
so a file is read in parallel under ``distributed``. Writing streams the blocks of
the dask arrays to the client, which alone writes the file (h5py writes are not thread-safe),
into a temporary file renamed into place at the end.

Examples
--------
>>> import tempfile
>>> from bosaris_dask.trials import make_key
>>> path = tempfile.mkdtemp() + "/key.h5"
>>> _ = write_hdf5(make_key(["m1", "m2"], ["s1"], [[1], [-1]]), path)
>>> import h5py
>>> with h5py.File(path) as f:
...     sorted(f), f["trial_mask"].dtype, f["ID/row_ids"].asstr()[()].tolist()
(['ID', 'file_format', 'trial_mask'], dtype('int8'), ['m1', 'm2'])
>>> read_hdf5(path).trial_mask.values.tolist()
[[1], [-1]]
"""

from __future__ import annotations

import contextlib
import functools
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
import pandas as pd
import xarray as xr
from xarray.backends import CachingFileManager

from bosaris_dask.errors import StoreError, StoreNotFoundError, TrialError
from bosaris_dask.io.atomic import atomic_path
from bosaris_dask.io.compute import _distributed_client, compute_with_progress, plan_chunks
from bosaris_dask.trials import (
    kind_of,
    make_key,
    make_ndx,
    make_scores,
    quality_table,
    trial_classes,
    validate,
)

__all__ = [
    "read_hdf5",
    "write_hdf5",
    "read_quality_hdf5",
    "write_quality_hdf5",
    "detect_hdf5_kind",
]

#: How many bytes of blocks the writer pulls from distributed workers at a time.
_BATCH_BYTES = 128 * 2**20
_ROWS, _COLUMNS = "ID/row_ids", "ID/column_ids"
#: What h5py raises when a file's metadata or data cannot be read (corrupt or truncated files).
_H5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError)
#: The HDF5 file format written: that of HDF5 1.8 (readable by any HDF5 library since 1.8, 2008),
#: whose metadata (superblock, object headers, links) carry checksums, so that a corrupted byte
#: there is an error on reading rather than, say, a dataset silently read from another address.
_LIBVER = ("v108", "v108")
#: The number types matrices may hold (see _standard_type).
_STANDARD_TYPES = (h5py.h5t.IEEE_F32LE, h5py.h5t.IEEE_F64LE) + tuple(
    getattr(h5py.h5t, f"STD_{sign}{bits}{order}")
    for sign in "IU"
    for bits in (8, 16, 32, 64)
    for order in ("LE", "BE")
)
#: Soft links followed in a row before a path is refused (a cycle).
_MAX_SOFT_LINKS = 16


# --------------------------------------------------------------------------------------------
# lazy reading through a picklable file handle
# --------------------------------------------------------------------------------------------


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
    ):
        self._manager, self._path, self._name, self._token = manager, path, name, token
        self.shape, self.dtype = shape, dtype
        self.ndim = len(shape)

    def __getitem__(self, key: Any) -> np.ndarray:
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


def _resolve(path: Any, f: h5py.File, name: str, hops: int = 0) -> str | None:
    """The in-file path that ``name`` leads to through hard and soft links; None if absent.

    Each link is inspected without being followed (HDF5 would open the file an external link
    names just to test that it exists), soft links are resolved here, component by component,
    so the returned path holds only hard links: opening it reads nothing outside ``f``.

    Raises
    ------
    StoreError
        For an external link (a path to another file, never followed), a user-defined link, a
        soft-link cycle, or link metadata that cannot be read (a corrupt file).
    """
    where = ""
    for part in (p for p in name.split("/") if p not in ("", ".")):
        here = f"{where}/{part}"
        try:
            if where and not isinstance(f.get(where), h5py.Group):
                return None  # a component is a dataset: nothing below it
            if not f.id.links.exists(here.encode()):
                return None
            info = f.id.links.get_info(here.encode())
            target = f.id.links.get_val(here.encode()) if info.type != h5py.h5l.TYPE_HARD else None
        except _H5_ERRORS as exc:
            raise StoreError(f"{path}: cannot read the link {here} ({exc})") from exc
        if info.type == h5py.h5l.TYPE_EXTERNAL:
            file, inner = (t.decode("utf-8", "replace") for t in target)
            raise StoreError(
                f"{path}: {here} is an external link to {file!r}:{inner}; links to other files "
                "are not followed"
            )
        if info.type == h5py.h5l.TYPE_SOFT:
            if hops >= _MAX_SOFT_LINKS:
                raise StoreError(f"{path}: more than {_MAX_SOFT_LINKS} soft links at {here}")
            link = target.decode("utf-8", "replace")
            resolved = _resolve(
                path, f, link if link.startswith("/") else f"{where}/{link}", hops + 1
            )
            if resolved is None:
                return None
            here = resolved
        elif info.type != h5py.h5l.TYPE_HARD:
            raise StoreError(f"{path}: {here} is a user-defined link (type {info.type}), not read")
        where = here
    return where or "/"


def _node(path: Any, f: h5py.File, name: str) -> tuple[str, Any] | None:
    """``(in-file path, object)`` of ``name`` (see :func:`_resolve`), or None if absent."""
    where = _resolve(path, f, name)
    if where is None:
        return None
    try:
        return where, f[where]
    except _H5_ERRORS as exc:
        raise StoreError(f"{path}: cannot open /{name.strip('/')} ({exc})") from exc


def _dataset(path: Any, f: h5py.File, name: str) -> h5py.Dataset:
    """Dataset ``name`` of ``f``, whose data are stored in ``f`` itself.

    Refused: links to other files, datasets whose raw data live in external files, and
    virtual datasets (mapped from other datasets, possibly of other files).
    """
    found = _node(path, f, name)
    if found is None or not isinstance(found[1], h5py.Dataset):
        raise StoreError(f"{path}: dataset /{name} is missing")
    dset = found[1]
    try:
        dset.dtype, dset.shape  # noqa: B018 (h5py raises here for types numpy cannot hold)
        virtual, external = dset.is_virtual, dset.external
    except _H5_ERRORS as exc:
        raise StoreError(f"{path}: cannot read the layout of /{name} ({exc})") from exc
    if virtual:
        raise StoreError(
            f"{path}: /{name} is a virtual dataset (mapped from other datasets or files); "
            "it is not read"
        )
    if external:
        raise StoreError(
            f"{path}: /{name} keeps its data in the external file {external[0][0]!r}; "
            "it is not read"
        )
    return dset


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
    return np.where(x > 0.5, 1, np.where(x < -0.5, -1, 0)).astype(np.int8)


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


def _standard_type(path: Path, dset: h5py.Dataset) -> bool:
    """Whether ``dset`` holds little-endian IEEE 754 floats or standard integers (or an enum of
    them, as h5py stores booleans).

    The BOSARIS layout has no checksums: a flipped bit in a datatype message (byte order,
    exponent bias, ...) would otherwise silently change every value read.
    """
    try:
        tid = dset.id.get_type()
        if tid.get_class() == h5py.h5t.ENUM:
            tid = tid.get_super()
        return any(tid.equal(t) for t in _STANDARD_TYPES)
    except _H5_ERRORS as exc:
        raise StoreError(f"{path}: cannot read the type of {dset.name} ({exc})") from exc


def _mask_values(x: np.ndarray, allowed: tuple[int, ...], where: str) -> np.ndarray:
    """``x``, checked: an integer mask holding values other than ``allowed`` is corrupt (float
    masks keep their MATLAB meaning: ``logical()``, or the sign past 0.5 for a key)."""
    if x.dtype.kind in "iu":
        bad = ~np.isin(x, allowed)
        if bad.any():
            raise StoreError(
                f"{where} holds {x[bad][0]}, expected {', '.join(map(str, allowed))} (corrupt?)"
            )
    return x


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
        manager, os.fspath(path), dset.name, shape, dset.dtype, (stat.st_mtime_ns, stat.st_size)
    )
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
        Dask chunks; by default about 64 MiB of full rows.

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
        plan = plan_chunks(shape, 8 if found == "scores" else 1) if chunks is None else chunks
        lazy = functools.partial(_lazy, path, manager, f, shape=shape, chunks=plan)
        if found == "scores":
            mask = lazy("score_mask", (0, 1)) != 0
            raw = lazy("scores")
            score = raw if raw.dtype == np.float32 else raw.astype(np.float64)
            score = da.where(mask, score, score.dtype.type(0))
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


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------


def _write_strings(parent: h5py.Group, name: str, values: Any, *, scalar: bool = False) -> None:
    """Fixed-length, NUL-terminated strings padded to the longest (as MATLAB writes them)."""
    encoded = [str(v).encode("utf-8") for v in np.ravel(np.asarray(values, dtype=object))]
    if any(b"\x00" in e for e in encoded):
        raise StoreError(f"ids with NUL characters cannot be stored in HDF5 /{name}")
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
    dset = h5py.h5d.create(parent.id, name.encode(), tid, space)
    if arr.size:
        dset.write(h5py.h5s.ALL, h5py.h5s.ALL, arr, mtype=tid)


def _matrices(obj: xr.Dataset, kind: str, chunk_mb: float) -> dict[str, da.Array]:
    """The dask arrays to write, by dataset name, in a common chunking."""
    shape = (obj.sizes["model"], obj.sizes["segment"])
    plan = plan_chunks(shape, 8 if kind == "scores" else 1, chunk_mb)

    def lazy(name: str) -> da.Array:
        x = obj[name].data
        return (x if isinstance(x, da.Array) else da.from_array(np.asarray(x))).rechunk(plan)

    if kind == "key":
        return {"trial_mask": trial_classes(obj, chunks=plan).astype(np.int8)}
    if kind == "ndx":
        return {"trial_mask": lazy("trial_mask").astype(np.uint8)}
    mask = lazy("score_mask").astype(bool)
    score = da.where(mask, lazy("score").astype(np.float64), 0.0)
    return {"scores": score, "score_mask": mask.astype(np.uint8)}


def _stream(matrices: dict[str, da.Array], f: h5py.File, label: str, progress: bool) -> None:
    """Write the blocks of the dask arrays into new datasets of ``f``, from one process.

    With a local scheduler, :func:`dask.array.store` writes each block as soon as it is
    computed, under a lock (h5py writes are not thread-safe). With a distributed client, the
    blocks are pulled to this process a small batch at a time and written here.
    """
    arrays = list(matrices.values())
    datasets = [f.create_dataset(n, shape=a.shape, dtype=a.dtype) for n, a in matrices.items()]
    if 0 in arrays[0].shape:
        return
    if _distributed_client() is None:
        stored = da.store(arrays, datasets, lock=threading.Lock(), compute=False)
        local = dask.base.get_scheduler() in (None, dask.threaded.get, dask.local.get_sync)
        with contextlib.nullcontext() if local else dask.config.set(scheduler="threads"):
            compute_with_progress(stored, progress=progress)
        return
    blocks = [a.to_delayed(optimize_graph=True).ravel() for a in arrays]
    slices = list(da.core.slices_from_chunks(arrays[0].chunks))
    block_bytes = (
        arrays[0].chunks[0][0] * arrays[0].chunks[1][0] * sum(a.dtype.itemsize for a in arrays)
    )
    per_batch = max(1, _BATCH_BYTES // max(1, block_bytes))
    for start in range(0, len(slices), per_batch):
        batch = range(start, min(len(slices), start + per_batch))
        values = list(dask.compute(*[b[i] for b in blocks for i in batch]))
        for k, dset in enumerate(datasets):
            for j, i in enumerate(batch):
                dset[slices[i]] = values[k * len(batch) + j]
        del values  # free this batch before the next is computed
        if progress:
            end = "\n" if batch.stop == len(slices) else ""
            print(f"\r{label}: {batch.stop}/{len(slices)} blocks", end=end, file=sys.stderr)


def write_hdf5(
    obj: xr.Dataset, path: str | os.PathLike[str], *, progress: bool = False, chunk_mb: float = 64
) -> Path:
    """Write a Key, Ndx or Scores in the BOSARIS HDF5 layout, atomically.

    A key is written as the full signed ``/trial_mask`` (the layout has no label form, so a
    label-derived key is expanded block by block). Scores are written as double, 0 where the
    mask is 0. Matrices are contiguous and uncompressed, ids fixed-length NUL-terminated UTF-8
    strings, as the MATLAB toolkit writes them.

    Parameters
    ----------
    obj
        The trial object.
    path
        The file to write (conventionally ``.h5``); an existing file is replaced.
    progress
        Report the blocks written on standard error.
    chunk_mb
        Size in MiB of the blocks computed and written at a time.

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from bosaris_dask.trials import make_scores
    >>> scores = make_scores(["m"], ["a", "b"], np.array([[2.5, 7.0]]), [[True, False]])
    >>> path = write_hdf5(scores, tempfile.mkdtemp() + "/s.h5")
    >>> read_hdf5(path).score.values.tolist()
    [[2.5, 0.0]]
    """
    kind = kind_of(validate(obj))
    if kind == "quality":
        raise StoreError(f"{path}: write quality tables with write_quality_hdf5")
    path = Path(path)
    matrices = _matrices(obj, kind, chunk_mb)
    with atomic_path(path) as tmp, h5py.File(tmp, "w", libver=_LIBVER) as f:
        _stream(matrices, f, f"writing {path}", progress)
        if kind == "key":
            _write_strings(f, "file_format", "2.0", scalar=True)
        group = f.require_group("ID")
        _write_strings(group, "row_ids", obj.model.values)
        _write_strings(group, "column_ids", obj.segment.values)
    return path


# --------------------------------------------------------------------------------------------
# quality tables
# --------------------------------------------------------------------------------------------


def read_quality_hdf5(path: str | os.PathLike[str]) -> xr.DataArray:
    """Read a quality table (BOSARIS ``Seg_Quality``: ``/values`` (q, n) and ``/ids``).

    Returns
    -------
    xarray.DataArray
        :func:`~bosaris_dask.trials.quality_table`: dims ``("id", "measure")``, (n, q) values.

    Examples
    --------
    >>> import tempfile, h5py, numpy as np
    >>> path = tempfile.mkdtemp() + "/q.h5"
    >>> with h5py.File(path, "w") as f:
    ...     f["values"] = np.array([[0.1, 0.2, 0.3], [5.0, 6.0, 7.0]])
    ...     f["ids"] = np.array([b"s1", b"s2", b"s3"])
    >>> read_quality_hdf5(path).sel(id="s2").values.tolist()
    [0.2, 6.0]
    """
    path = Path(path)
    if not path.exists():
        raise StoreNotFoundError(f"{path}: no such HDF5 file")
    try:
        f = h5py.File(path, "r")
    except _H5_ERRORS as exc:
        raise StoreError(f"{path}: not a readable HDF5 file ({exc})") from exc
    with f:
        ids = _read_ids(path, f, "ids")
        dset = _dataset(path, f, "values")
        if dset.dtype.kind not in "iuf":
            raise StoreError(f"{path}: /values holds {dset.dtype}, expected numbers")
        try:
            values = np.asarray(dset[()], dtype=np.float64)
        except _H5_ERRORS as exc:
            raise StoreError(f"{path}: cannot read /values ({exc})") from exc
    n = len(ids)
    if values.ndim == 1 and values.size == n:
        values = values[None, :]
    if values.ndim == 2 and values.shape[1] == n:
        table = values.T
    elif values.ndim == 2 and values.shape[0] == n:  # (n, q), as a non-MATLAB writer may store
        table = values
    else:
        raise StoreError(f"{path}: /values has shape {values.shape} for {n} ids")
    return quality_table(ids, table)


def write_quality_hdf5(table: xr.DataArray, path: str | os.PathLike[str]) -> Path:
    """Write a quality table as ``/values`` (q measures x n ids, double) and ``/ids``.

    Parameters
    ----------
    table
        A 2-D DataArray whose first dimension is indexed by ids
        (:func:`~bosaris_dask.trials.quality_table`).

    Examples
    --------
    >>> import tempfile
    >>> from bosaris_dask.trials import quality_table
    >>> t = quality_table(["s1", "s2"], [[0.1, 5.0], [0.2, 6.0]])
    >>> path = write_quality_hdf5(t, tempfile.mkdtemp() + "/q.h5")
    >>> read_quality_hdf5(path).equals(t)
    True
    """
    if not isinstance(table, xr.DataArray) or table.ndim != 2:
        raise StoreError(f"{path}: a quality table must be a 2-D DataArray (ids x measures)")
    ids = table[table.dims[0]].values
    values = np.asarray(table.values, dtype=np.float64).T
    path = Path(path)
    with atomic_path(path) as tmp, h5py.File(tmp, "w", libver=_LIBVER) as f:
        f.create_dataset("values", data=values)
        _write_strings(f, "ids", ids)
    return path
