"""HDF5 files in the layout of the BOSARIS Toolkit (``docs/formats.md``): liberal about ids, strict
about the rest; matrices read lazily, memory-mapped where possible (:mod:`.mapped`).
"""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dask.array as da
import h5py
import numpy as np
import pandas as pd
import xarray as xr
from xarray.backends import CachingFileManager

from bosaris_dask.errors import QualityTableError, StoreError, StoreNotFoundError, TrialError
from bosaris_dask.io.compute import first_cell, plan_chunks
from bosaris_dask.io.hdf5.mapped import (
    H5_ERRORS,
    ChunkOffsets,
    chunk_offsets,
    contiguous_offset,
    read_mapped,
)
from bosaris_dask.io.hdf5.write import QUALITY_LAYOUT, write_hdf5, write_quality_hdf5
from bosaris_dask.io.stamps import Stamp, check_unchanged, file_stamp
from bosaris_dask.io.worker_paths import for_workers
from bosaris_dask.trials import make_key, make_ndx, make_scores, quality_table
from bosaris_dask.trials.construction import exact_in_float64

__all__ = [
    "read_hdf5", "write_hdf5", "read_quality_hdf5", "write_quality_hdf5", "detect_hdf5_kind",
]  # fmt: skip


#: The number types matrices may hold (see _standard_type): IEEE 754 floats and two's
#: complement integers of either byte order (big-endian ones are read into native arrays).
_STANDARD_TYPES = tuple(
    getattr(h5py.h5t, f"{name}{order}")
    for name in ("IEEE_F32", "IEEE_F64", *(f"STD_{s}{b}" for s in "IU" for b in (8, 16, 32, 64)))
    for order in ("LE", "BE")
)


#: Soft links followed in a row before a path is refused (a cycle).
_MAX_SOFT_LINKS = 16


def _resolve(path: Any, f: h5py.File, name: str, hops: int = 0) -> str | None:
    """The in-file path of hard links only that ``name`` leads to, None if absent: soft links are
    resolved here (HDF5 would open an external link's file to test it); external and user-defined
    links, soft-link cycles and unreadable links are errors.
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
        except H5_ERRORS as exc:
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
    except H5_ERRORS as exc:
        raise StoreError(f"{path}: cannot open /{name.strip('/')} ({exc})") from exc


def _dataset(path: Any, f: h5py.File, name: str) -> h5py.Dataset:
    """Dataset ``name`` of ``f``, refused unless its data are stored in ``f`` itself."""
    found = _node(path, f, name)
    if found is None or not isinstance(found[1], h5py.Dataset):
        raise StoreError(f"{path}: dataset /{name} is missing")
    dset = found[1]
    try:
        dset.dtype, dset.shape  # noqa: B018 (h5py raises here for types numpy cannot hold)
        virtual, external = dset.is_virtual, dset.external
    except H5_ERRORS as exc:
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


def _standard_type(path: Path, dset: h5py.Dataset) -> bool:
    """Whether ``dset`` holds IEEE floats or standard integers (or an enum of them): a flipped
    bit in a datatype message would otherwise change every value read.
    """
    try:
        tid = dset.id.get_type()
        if tid.get_class() == h5py.h5t.ENUM:
            tid = tid.get_super()
        return any(tid.equal(t) for t in _STANDARD_TYPES)
    except H5_ERRORS as exc:
        raise StoreError(f"{path}: cannot read the type of {dset.name} ({exc})") from exc


def _mask_values(
    x: np.ndarray, allowed: tuple[int, ...], path: str, name: str, block_info: Any = None
) -> np.ndarray:
    """``x``, a block of ``path``'s ``/name`` (``block_info``: dask's), checked: an integer mask
    holding values other than ``allowed``, or a float mask holding NaN (a float's other values
    have MATLAB's meaning: nonzero, or a key's sign past 0.5; ``logical(NaN)`` is MATLAB's
    error too) is corrupt; the first such value's trial is named.
    """
    if x.dtype.kind in "iu":
        lo, hi = min(allowed), max(allowed)
        if len(allowed) == hi - lo + 1 and (
            not x.size or (np.minimum.reduce(x, axis=None) >= lo
                           and np.maximum.reduce(x, axis=None) <= hi)
        ):  # fmt: skip
            return x  # a range of codes: two reductions, no temporaries (isin: 10x slower)
    bad = np.isnan(x) if x.dtype.kind == "f" else ~np.isin(x, allowed)
    if bad.any():
        value = x[bad][0].item()
        i, j = first_cell(bad, block_info)
        raise StoreError(
            f"{path}: /{name} holds {value} at trial {_trial_ids(path, i, j)}, "
            f"expected {', '.join(map(str, allowed))} (corrupt?)"
        )
    return x


#: Where a file's ids lie: the toolkit's ``ID`` group (hyperion writes it too), or SIDEKIT's
#: top-level sets (one SIDEKIT release wrote a score file's second set as ``segest``).
_ID_PLACES = (("ID/row_ids", "ID/column_ids"), ("modelset", "segset"), ("modelset", "segest"))


def _read_all_ids(path: Path, f: h5py.File) -> tuple[np.ndarray, np.ndarray]:
    """``(model ids, segment ids)`` from the first place of :data:`_ID_PLACES` that holds both;
    a file with neither is said to miss the toolkit's."""
    rows, columns = next(
        (place for place in _ID_PLACES if all(_resolve(path, f, n) is not None for n in place)),
        _ID_PLACES[0],
    )
    return _read_ids(path, f, rows), _read_ids(path, f, columns)


@dataclass(eq=False)
class _H5Array:
    """A read-only picklable view of a dataset: slabs through a memory map where ``_mapped``
    says where the values lie (:mod:`.mapped`), else through h5py and a :class:`CachingFileManager`.
    """

    _manager: CachingFileManager
    _path: str
    _name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    _token: Stamp  # the file when opened, checked before each read
    _mapped: int | ChunkOffsets | None = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, key: Any) -> np.ndarray:
        check_unchanged(self._path, self._token)
        if self._mapped is not None:
            try:
                if isinstance(self._mapped, ChunkOffsets):
                    block = read_mapped(self._path, self.dtype, self._mapped, key)
                    if block is not None:
                        return block
                else:  # contiguous and uncompressed: map the file's bytes
                    data = np.memmap(self._path, self.dtype, "r", self._mapped, self.shape)
                    return data[key]
            except (OSError, ValueError) as exc:
                raise StoreError(f"{self._path}: cannot read {self._name} ({exc})") from exc
        try:
            dset = self._manager.acquire()[self._name]
            if dset.shape == self.shape:
                return np.asarray(dset[key])
            return np.asarray(dset[()]).reshape(self.shape)[key]  # a 1x1 or 1xn matrix as (), (n,)
        except H5_ERRORS as exc:
            raise StoreError(f"{self._path}: cannot read {self._name} ({exc})") from exc

    def __dask_tokenize__(self) -> tuple:
        return ("bosaris-hdf5", self._path, self._name, self._token, self.shape)


def _open(path: Path) -> tuple[CachingFileManager, h5py.File]:
    if not path.exists():
        raise StoreNotFoundError(f"{path}: no such HDF5 file")
    manager = CachingFileManager(h5py.File, for_workers(path), mode="r")  # opened in tasks
    try:
        return manager, manager.acquire()
    except H5_ERRORS as exc:
        manager.close()
        raise StoreError(f"{path}: not a readable HDF5 file ({exc})") from exc


def _read_ids(path: Path, f: h5py.File, name: str) -> np.ndarray:
    """Ids of a dataset of fixed or variable-length strings, as unique ``str`` (NULs stripped)."""
    dset = _dataset(path, f, name)
    if h5py.check_string_dtype(dset.dtype) is None:
        raise StoreError(f"{path}: dataset /{name} holds {dset.dtype}, not strings")
    if dset.ndim > 2 or (dset.ndim == 2 and 1 not in dset.shape):
        raise StoreError(f"{path}: dataset /{name} has shape {dset.shape}, expected (n,) or (n, 1)")
    try:
        raw = dset.asstr(encoding="utf-8")[()]
    except (*H5_ERRORS, UnicodeDecodeError) as exc:
        raise StoreError(f"{path}: cannot read the strings of /{name} ({exc})") from exc
    ids = np.array([s.rstrip("\x00") for s in np.ravel(raw)], dtype=object)
    index = pd.Index(ids)
    if not index.is_unique:
        raise StoreError(f"{path}: duplicate id {index[index.duplicated()][0]!r} in /{name}")
    return ids


def detect_hdf5_kind(f: h5py.File, path: str | os.PathLike[str] = "") -> str:
    """The kind of an open BOSARIS HDF5 file: ``scores``, ``key`` (signed ``/trial_mask``, old
    ``/target_mask`` or ``/file_format``), ``ndx`` (unsigned or bool) or ``quality``.
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
        raise StoreError(
            f"{path}: /trial_mask holds {dtype}, neither a key's int8 nor an "
            "ndx's uint8: say which it is (--kind key|ndx; kind= in Python)"
        )
    if has("values") and has("ids"):
        return "quality"
    raise StoreError(f"{path}: not a BOSARIS HDF5 file (no /trial_mask, /scores or /values)")


def _checked_kind(f: h5py.File, path: Path, kind: str | None) -> str:
    """``kind``, or the file's own: a file whose datasets say another kind is refused, as zarr
    and .mat stores are (an Ndx read as a key made every trial a target; a key read as scores
    was said to miss /score_mask). A float /trial_mask says nothing: ``kind`` decides; a signed
    one alone may be an Ndx (SIDEKIT writes int8): ``kind="ndx"`` reads it so, its values 0/1."""
    try:
        found = detect_hdf5_kind(f, path)
    except StoreError:
        if kind is None:
            raise
        return kind
    if kind == "ndx" and found == "key" and _signed_mask_only(f, path):
        return kind  # an Ndx written with a signed mask (SIDEKIT's int8): 0/1, checked as read
    if found == "quality":  # (its own reader: read_quality_hdf5)
        raise QualityTableError.of(path)
    if kind is not None and found != kind:
        raise StoreError.wrong_kind(path, found, kind)
    return found


def _signed_mask_only(f: h5py.File, path: Path) -> bool:
    """Whether the file says "key" only by its signed ``/trial_mask`` (no ``/file_format``, no
    old two-mask layout): an Ndx stored as int8 looks the same, so ``kind="ndx"`` may read it."""
    return all(_resolve(path, f, name) is None for name in ("file_format", "target_mask"))


def key_signs(x: np.ndarray) -> np.ndarray:
    """The codes of a signed ``trial_mask`` block: integers as they are, floats by their sign
    past 0.5 (MATLAB's meaning; the .mat reader's too), without 8-byte temporaries.

    >>> key_signs(np.array([[0.25, 0.75, -0.6, 1.0]])).tolist()
    [[0, 1, -1, 1]]
    """
    if x.dtype.kind in "iu":
        return x.astype(np.int8, copy=False)
    out = np.greater(x, 0.5).view(np.int8)  # 1 or 0, one byte per trial
    out -= np.less(x, -0.5).view(np.int8)
    return out


def _masked_scores(score: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``score`` with 0 where ``mask`` is false (in place where writable)."""
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
        i, j = first_cell(both, block_info)
        raise StoreError(
            f"{path}: trial {_trial_ids(path, i, j)} is in both /target_mask and /nontarget_mask"
        )
    return tar.astype(np.int8) - non.astype(np.int8)


def _trial_ids(path: str, i: int, j: int) -> str:
    """``(model, segment)`` of cell ``(i, j)`` of a file, for an error message."""
    try:
        with h5py.File(path, "r") as f:
            models, segments = _read_all_ids(Path(path), f)
    except (OSError, StoreError):  # the ids were readable when the file was opened
        return f"(row {i + 1}, column {j + 1})"
    return f"({models[i]}, {segments[j]})"


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
    """Dataset ``name`` as a checked dask array; ``allowed``: a mask's values."""
    dset = _dataset(path, f, name)
    if dset.dtype.kind not in "biuf":
        raise StoreError(f"{path}: /{name} holds {dset.dtype}, expected numbers")
    if not _standard_type(path, dset):
        raise StoreError(
            f"{path}: /{name} holds a non-standard number type ({dset.dtype}); floats must be "
            "IEEE 754, as MATLAB, h5py and SIDEKIT write them (corrupt?)"
        )
    # a 1 x 1 or 1 x n (n x 1) matrix stored squeezed is unambiguous; a full matrix flattened
    # to 1-D is not (row- or column-major?), so it is refused as the .mat reader refuses it
    squeezed = dset.ndim < 2 and dset.size == np.prod(shape) and min(shape) <= 1
    if dset.shape != shape and not squeezed:
        hint = ""
        if dset.shape == shape[::-1]:
            hint = " (stored segments x models, transposed, as MATLAB's h5write does?)"
        elif dset.ndim < 2 and dset.size == np.prod(shape):
            hint = " (a matrix flattened to 1-D: row- or column-major cannot be told)"
        raise StoreError(
            f"{path}: /{name} has shape {dset.shape} but there are {shape[0]} row ids and "
            f"{shape[1]} column ids{hint}"
        )
    stamp = file_stamp(path)
    arr = _H5Array(
        manager, for_workers(path), dset.name, shape, dset.dtype, stamp,
        contiguous_offset(dset, shape, stamp.size)
        if dset.chunks is None
        else chunk_offsets(dset, shape, stamp.size),
    )  # fmt: skip
    out = da.from_array(
        arr, chunks=chunks, asarray=True, fancy=False, meta=np.empty((0, 0), dtype=dset.dtype)
    )
    if not out.dtype.isnative:  # big-endian: the kernels take native numbers (fused per chunk)
        out = out.astype(out.dtype.newbyteorder("="))
    if allowed is None or dset.dtype.kind == "b":
        return out
    return out.map_blocks(_mask_values, allowed, os.fspath(path), name, dtype=out.dtype)


def read_hdf5(
    path: str | os.PathLike[str], kind: str | None = None, *, chunks: Any = None
) -> xr.Dataset:
    """Open a Key, Ndx or Scores stored in the BOSARIS HDF5 layout, lazily.

    Parameters
    ----------
    path
        The HDF5 file.
    kind : {"key", "ndx", "scores"}, optional
        By default detected from the datasets (:func:`detect_hdf5_kind`).
    chunks
        Dask chunks; by default about 64 MiB of double scores in full rows (the same for a key).

    Returns
    -------
    xarray.Dataset
        Scores are float64 (float32 if stored so) and 0 where the mask is 0.

    Raises
    ------
    StoreError
        Naming the file and the dataset: not HDF5, truncated, missing datasets, ids that are not
        unique strings, shapes that do not match, links or data outside the file.

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
    manager, f = _open(path)
    try:
        found = _checked_kind(f, path, kind)
        if found not in ("key", "ndx", "scores"):
            raise StoreError(f"{path}: cannot read kind {found!r} from HDF5")
        models, segments = _read_all_ids(path, f)
        shape = (len(models), len(segments))
        # keys and indexes in the chunks of double scores of the same shape: an evaluation
        # then reads key and scores in the same chunks, no key block held for several tasks
        plan = plan_chunks(shape, 8) if chunks is None else chunks
        lazy = functools.partial(_lazy, path, manager, f, shape=shape, chunks=plan)
        if found == "scores":
            mask = lazy("score_mask", (0, 1)) != 0
            raw = exact_in_float64(lazy("scores"), f"{path}: /scores")
            score = raw if raw.dtype == np.float32 else raw.astype(np.float64)
            score = da.map_blocks(_masked_scores, score, mask, dtype=score.dtype)
            return make_scores(models, segments, score, mask)
        if found == "ndx":
            return make_ndx(models, segments, lazy("trial_mask", (0, 1)) != 0)
        if _resolve(path, f, "target_mask") is not None:
            tar, non = lazy("target_mask", (0, 1)), lazy("nontarget_mask", (0, 1))
            mask = da.map_blocks(_key_from_two, tar, non, os.fspath(path), dtype=np.int8)
        else:
            mask = lazy("trial_mask", (-1, 0, 1)).map_blocks(key_signs, dtype=np.int8)
        return make_key(models, segments, mask)
    except TrialError as exc:
        manager.close()
        raise StoreError(f"{path}: {exc}") from exc
    except BaseException:
        manager.close()
        raise


def read_quality_hdf5(path: str | os.PathLike[str]) -> xr.DataArray:
    """Read a quality table (``/values``, measures x ids, and ``/ids``).

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
    manager, f = _open(path)
    try:
        ids = _read_ids(path, f, "ids")
        dset = _dataset(path, f, "values")
        if dset.dtype.kind not in "iuf":
            raise StoreError(f"{path}: /values holds {dset.dtype}, expected numbers")
        try:
            values = np.asarray(dset[()], dtype=np.float64)
            said = _attribute_text(dset, "layout")
        except H5_ERRORS as exc:
            raise StoreError(f"{path}: cannot read /values ({exc})") from exc
    finally:
        manager.close()
    if said not in (None, QUALITY_LAYOUT):
        raise StoreError(f"{path}: /values says its layout is {said!r}, not {QUALITY_LAYOUT!r}")
    return quality_from_values(ids, values, f"{path}: /values", ambiguous=said is None)


def _attribute_text(obj: Any, name: str) -> str | None:
    """An HDF5 object's attribute ``name`` as text (h5py gives ``str`` or ``bytes``); ``None``
    if absent."""
    value = obj.attrs.get(name)
    if value is None:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class QualityLayoutWarning(UserWarning):
    """A stored quality matrix is square (as many measures as ids): read as measures x ids, the
    layout, though one row per id (which a non-square matrix may be) would look the same."""


def quality_from_values(
    ids: np.ndarray, values: np.ndarray, what: str, *, ambiguous: bool = False
) -> xr.DataArray:
    """The quality table of ``values`` stored measures x ids (or a vector, or ids x measures;
    square: measures x ids, with a :class:`QualityLayoutWarning` where the file is
    ``ambiguous``: an HDF5 file whose ``/values`` does not say its layout, as the package's
    writer does; a MAT file's matrices have MATLAB's orientation)."""
    n = len(ids)
    if values.ndim < 2 and n and values.size % n == 0:
        values = values.reshape(-1, n)
    if values.ndim == 2 and values.shape[1] == n:
        if ambiguous and values.shape[0] == n > 1:  # which side is which, the shape cannot say
            warnings.warn(
                f"{what} is {n} x {n}, as many measures as ids: read as measures x ids (one "
                "column per id, the BOSARIS layout); a matrix of one row per id is read "
                "transposed that way: transpose it before writing",
                QualityLayoutWarning,
                stacklevel=2,
            )
        return quality_table(ids, values.T)
    if values.ndim == 2 and values.shape[0] == n:
        return quality_table(ids, values)
    raise StoreError(f"{what} has shape {values.shape} for {n} ids")
