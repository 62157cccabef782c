"""Zarr v3 stores of trial objects, the default store (layout and checks: ``docs/formats.md``):
reading and checking them; writing them is :mod:`bosaris_dask.io.zarr_write`."""

from __future__ import annotations

import base64
import itertools
import json
import math
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr
from dask.base import tokenize

from bosaris_dask.errors import StoreError, StoreNotFoundError, TrialError
from bosaris_dask.io.compute import plan_chunks
from bosaris_dask.io.stamps import Stamp, check_unchanged, file_stamp
from bosaris_dask.io.worker_paths import for_workers
from bosaris_dask.trials import (
    DIMS,
    key_from_labels,
    make_key,
    make_ndx,
    make_quality,
    make_scores,
    quality_table,
)
from bosaris_dask.trials.key_codes import checked_codes

if TYPE_CHECKING:
    import zarr

__all__ = ["read_zarr", "plan_chunks", "STORE_VERSION", "is_url", "store_location"]

#: Version of the layout written by :func:`write_zarr`.
STORE_VERSION = 1
#: The data variables of each kind and the dtypes a store may hold for them.
_VARIABLES: dict[str, dict[str, tuple[np.dtype, ...]]] = {
    "ndx": {"trial_mask": (np.dtype(bool),)},
    "key": {"trial_mask": (np.dtype(np.int8),)},
    "scores": {
        "score": (np.dtype(np.float32), np.dtype(np.float64)),
        "score_mask": (np.dtype(bool),),
    },
}
_MASKS = {"ndx": "trial_mask", "scores": "score_mask"}  # masks that may be omitted when all true
_LABELS = ("model_label", "segment_label")


def _zarr_errors() -> tuple[type[BaseException], ...]:
    """What opening a store may raise: zarr is imported here, not with the module (0.15 s)."""
    import zarr

    return (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        RecursionError,  # metadata JSON nested too deeply
        zarr.errors.BaseZarrError,
        zarr.errors.ZarrUserWarning,  # raised as an error while opening: a node zarr cannot parse
    )


def _decode_errors() -> tuple[type[BaseException], ...]:
    import zarr

    return (RuntimeError, ValueError, TypeError, OSError, zarr.errors.BaseZarrError)


def _label_kind(present: np.ndarray) -> str:
    if all(isinstance(v, str) for v in present):
        return "str"
    if all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in present):
        return "int"
    if all(isinstance(v, int | float | np.integer | np.floating) for v in present):
        return "float"
    return "mixed"


def _encode_labels(model_labels: Any, segment_labels: Any) -> dict[str, tuple]:
    """Both sides with one type (str, int64 or float64) plus ``*_missing`` masks; mixed types as
    strings unless that merges two distinct labels.
    """
    sides = {"model_label": model_labels, "segment_label": segment_labels}
    labels = {k: np.asarray(v, dtype=object) for k, v in sides.items()}
    missing = {k: np.asarray(pd.isna(v), dtype=bool) for k, v in labels.items()}
    present = np.concatenate([labels[k][~missing[k]] for k in sides])
    kind = _label_kind(present)
    if kind == "mixed":
        as_str = np.array([str(v) for v in present], dtype=object)
        if not np.array_equal(pd.factorize(present)[0], pd.factorize(as_str)[0]):
            raise StoreError("labels of mixed types that collide as strings cannot be stored")
    out: dict[str, tuple] = {}
    for name, dim in zip(_LABELS, DIMS, strict=True):
        lab, miss = labels[name], missing[name]
        if kind == "int":
            values = np.where(miss, 0, lab).astype(np.int64)
        elif kind == "float":
            values = np.where(miss, np.nan, lab).astype(np.float64)
        else:
            values = np.array([str(v) for v in np.where(miss, "", lab)], dtype=object)
        out[name] = (dim, values)
        if miss.any():
            out[f"{name}_missing"] = (dim, miss)
    return out


def _decode_labels(ds: xr.Dataset, name: str) -> np.ndarray:
    values = np.asarray(ds[name].values).astype(object)
    if f"{name}_missing" in ds.variables:
        values[np.asarray(ds[f"{name}_missing"].values, dtype=bool)] = None
    elif values.dtype == object and ds[name].dtype.kind == "f":
        values[pd.isna(values)] = None
    return values


def _codec_ids(meta: Any) -> list[str]:
    """Every ``name`` and ``id`` string in array metadata outside its attributes."""
    if isinstance(meta, list):
        return [i for item in meta for i in _codec_ids(item)]
    if not isinstance(meta, dict):
        return []
    found = [v for k, v in meta.items() if k in ("name", "id") and isinstance(v, str)]
    return found + [i for k, v in meta.items() if k != "attributes" for i in _codec_ids(v)]


def _check_metadata(store: Path, file: Path) -> None:
    try:
        meta = json.loads(file.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise StoreError(f"{store}: cannot parse {file.relative_to(store)} ({exc})") from exc
    unsafe = [i for i in _codec_ids(meta) if "pickle" in i.lower()]
    if unsafe:
        raise StoreError(
            f"{store}: {file.relative_to(store)} asks for the codec {unsafe[0]!r}; stores whose "
            "data would be unpickled are not read"
        )


def _check_local_store(path: Path) -> dict[str, int]:
    """Refuse links out of the store, entries that are not files or directories, and pickle codecs;
    return the size of every file by relative POSIX path.
    """
    root = os.path.realpath(path)
    sizes: dict[str, int] = {}
    stack = [path]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError as exc:
            raise StoreError(f"{path}: not a readable zarr store ({exc})") from exc
        for entry in entries:
            here = Path(entry.path)
            if entry.is_symlink():
                target = os.path.realpath(here)
                if os.path.commonpath([root, target]) != root:
                    raise StoreError(
                        f"{path}: {here.relative_to(path)} is a symbolic link to {target}, "
                        "outside the store; it is not followed"
                    )
            if entry.is_dir(follow_symlinks=False):
                stack.append(here)
            elif not entry.is_file() and not entry.is_dir():
                raise StoreError(f"{path}: {here.relative_to(path)} is not a regular file")
            elif entry.name in ("zarr.json", ".zarray"):
                _check_metadata(path, here)
            elif entry.is_file():
                sizes[here.relative_to(path).as_posix()] = entry.stat().st_size
    return sizes


def _raw_dtype(arr: zarr.Array) -> np.dtype | None:
    """The on-disk dtype when a chunk file is the chunk's raw bytes (``bytes`` codec only)."""
    codecs = getattr(arr.metadata, "codecs", ())
    if len(codecs) != 1 or type(codecs[0]).__name__ != "BytesCodec" or arr.shards is not None:
        return None
    endian = getattr(getattr(codecs[0], "endian", None), "value", "little")
    return arr.dtype.newbyteorder("<" if endian == "little" else ">")


def _check_chunks(path: Path | str, name: str, arr: zarr.Array, absent_ok: bool, files: dict):
    """Raise StoreError naming the first truncated chunk of ``arr``, or a missing one unless
    ``absent_ok`` (behind a URL: the count of stored chunks).
    """
    if not isinstance(path, Path):
        stored, expected = arr.nchunks_initialized, arr.nchunks
        if stored < expected and not absent_ok:
            raise StoreError(
                f"{path}: array {name!r} has {expected - stored} of its {expected} chunks missing"
            )
        return
    if 0 in arr.shape:
        return
    outer = arr.shards or arr.chunks
    raw = _raw_dtype(arr)
    size = None if raw is None else math.prod(outer) * arr.dtype.itemsize
    for index in itertools.product(
        *(range(math.ceil(s / c)) for s, c in zip(arr.shape, outer, strict=True))
    ):
        key = arr.metadata.encode_chunk_key(index)
        found = files.get(f"{name}/{key}")
        if found is None:
            if absent_ok:
                continue
            raise StoreError(f"{path}: array {name!r} is missing chunk {index} (file {key})")
        if size is not None and found != size:
            raise StoreError(
                f"{path}: array {name!r} chunk {index} (file {key}) has {found} bytes, "
                f"expected {size}"
            )


def _chunk_array(arr: zarr.Array, path: Path | str, name: str, absent_ok: bool) -> da.Array:
    """A dask array, one task per stored chunk (or shard): raw chunk files of a local store
    memory-mapped (5x faster than zarr's codecs), others decoded by zarr (a StoreError naming a
    chunk that cannot be); an absent chunk reads as the fill value."""
    outer = arr.shards or arr.chunks
    chunks = tuple(
        tuple(min(c, n - k) for k in range(0, n, c)) if n else (0,)
        for n, c in zip(arr.shape, outer, strict=True)
    )
    if not math.prod(arr.shape):
        return da.empty(arr.shape, dtype=arr.dtype, chunks=chunks)
    raw = _raw_dtype(arr) if isinstance(path, Path) else None
    stamp = file_stamp(path / name) if isinstance(path, Path) else None
    token = tokenize(os.fspath(path), name, arr.metadata.to_dict(), stamp, absent_ok)
    # blockwise: dask fuses each read into the task using the chunk (workers read, not receive)
    return da.map_blocks(
        _read_chunk, arr=arr, outer=tuple(outer), where=os.fspath(path), array_name=name,
        raw=raw, fill=arr.metadata.fill_value if absent_ok else None, stamp=stamp,
        name=f"zarr-{name}-{token}", chunks=chunks, dtype=arr.dtype,
        meta=np.empty((0,) * len(chunks), dtype=arr.dtype),
    )  # fmt: skip


def _read_chunk(
    *, arr: zarr.Array, outer: tuple, where: str, array_name: str, raw: np.dtype | None,
    fill: Any, stamp: Stamp | None, block_id: tuple[int, ...], block_info: dict | None = None,
) -> np.ndarray:  # fmt: skip
    if stamp is not None:  # the array's directory: a rewritten store is a new one
        check_unchanged(os.path.join(where, array_name), stamp, where, "store")
    index = tuple(block_id)
    shape = tuple(block_info[None]["chunk-shape"]) if block_info else outer
    key = arr.metadata.encode_chunk_key(index)
    if raw is not None:
        file = os.path.join(where, array_name, key)
        if fill is not None and not os.path.exists(file):  # never written: the fill value
            return np.full(shape, fill, dtype=raw.newbyteorder("="))
        data = np.memmap(file, dtype=raw, mode="r", shape=outer)  # read-only, no copy
        if data.shape != shape:
            data = data[tuple(slice(0, n) for n in shape)]
        return data.astype(data.dtype.newbyteorder("="), copy=False)
    region = tuple(slice(i * c, i * c + n) for i, c, n in zip(index, outer, shape, strict=True))
    try:
        return np.asarray(arr[region])
    except _decode_errors() as exc:
        raise StoreError(
            f"{where}: array {array_name!r} chunk {index} (file {key}) cannot be read: it is "
            f"corrupt or truncated ({type(exc).__name__}: {exc})"
        ) from exc


def is_url(path: Any) -> bool:
    """Whether ``path`` is an fsspec URL (``s3://...``), not ``file://``."""
    return isinstance(path, str) and "://" in path and not path.startswith("file://")


def store_location(path: str | os.PathLike[str]) -> Path | str:
    """A local :class:`~pathlib.Path`, or the URL string of a store fsspec reaches."""
    if isinstance(path, str) and path.startswith("file://"):
        return Path(path.removeprefix("file://"))
    return path if isinstance(path, str) and is_url(path) else Path(path)


def _store_exists(path: Path | str) -> bool:
    if isinstance(path, Path):
        return path.exists()
    from fsspec.core import url_to_fs

    try:
        fs, root = url_to_fs(path)
        return bool(fs.exists(root))
    except (ImportError, OSError, ValueError) as exc:
        raise StoreError(f"{path}: cannot reach the store ({exc})") from exc


def _absent_ok(attrs: dict, name: str) -> bool:
    """Chunks may be absent only in a data matrix of a store not written here."""
    return "bosaris_store_version" not in attrs and name in ("trial_mask", "score", "score_mask")


def _open_group(
    path: Path | str, shown: Path | str | None = None
) -> tuple[dict[str, Any], dict[str, zarr.Array]]:
    """The attributes and arrays of the store at ``path`` (its messages name ``shown``)."""
    import zarr

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", zarr.errors.ZarrUserWarning)
            # consolidated metadata is a second copy that could disagree with the arrays' own
            group = zarr.open_group(store=os.fspath(path), mode="r", use_consolidated=False)
            return dict(group.attrs), dict(group.arrays())
    except _zarr_errors() as exc:
        raise StoreError(f"{shown or path}: not a readable zarr store ({exc})") from exc


def _require(path: Path | str, arrays: dict, name: str, dims: tuple[str, ...]) -> zarr.Array:
    if name not in arrays:
        raise StoreError(f"{path}: array {name!r} is missing")
    arr = arrays[name]
    found = getattr(arr.metadata, "dimension_names", None)
    found = arr.attrs.get("_ARRAY_DIMENSIONS") if found is None else found
    found = None if found is None else tuple(found)
    if found != dims:
        raise StoreError(f"{path}: array {name!r} has dimensions {found}, expected {dims}")
    return arr


#: CF attributes with which xarray stores values other than the ones it reads back.
_CF_PACKING = ("scale_factor", "add_offset")


def _check_not_packed(path: Path | str, name: str, arr: Any) -> None:
    """A StoreError for an array stored with CF packing or masking (``to_zarr(encoding=...)``):
    its stored values are not the data (xarray reads a ``_FillValue`` other than NaN, or a
    ``missing_value``, as NaN), and reading them as they are would give other scores."""
    packing = [a for a in _CF_PACKING if a in arr.attrs]
    fill = arr.attrs.get("_FillValue")
    source = ""
    scores = getattr(arr.dtype, "kind", "") == "f"  # (masks and ids: no fill xarray sets)
    if fill is None and scores and getattr(arr.metadata, "zarr_format", 3) == 2:
        fill = arr.metadata.fill_value  # (zarr v2: xarray's _FillValue is the array's own)
        source = " (the zarr v2 fill_value)"
    if fill is not None and not _is_nan(fill):
        packing.append(f"_FillValue {_fill_value(fill)!r}{source}")
    if "missing_value" in arr.attrs:
        packing.append(f"missing_value {arr.attrs['missing_value']!r}")
    if packing:
        raise StoreError(
            f"{path}: array {name!r} is stored with CF packing or masking ({'; '.join(packing)}"
            "): xarray reads other values than those stored (its to_zarr writes them with an "
            "encoding); write it with bosaris_dask.write, or open it with xarray.open_zarr and "
            "pass the Dataset"
        )


def _fill_value(fill: Any) -> Any:
    """A ``_FillValue`` attribute's value: a number, ``"NaN"``, or the base64 of its bytes (as
    xarray writes floats to zarr v3, e.g. ``'AAAAAAAA+H8='`` for float64 NaN)."""
    if not isinstance(fill, str):
        return fill.item() if hasattr(fill, "item") else fill  # (numpy scalars: zarr v2)
    try:
        return float(fill)
    except ValueError:
        pass
    try:
        raw = base64.b64decode(fill, validate=True)
    except ValueError:
        return fill
    kinds = {8: "<f8", 4: "<f4", 2: "<f2"}
    return float(np.frombuffer(raw, dtype=kinds[len(raw)])[0]) if len(raw) in kinds else fill


def _is_nan(fill: Any) -> bool:
    value = _fill_value(fill)
    return isinstance(value, float) and math.isnan(value)


def _check_trial_layout(path: Path | str, kind: str, attrs: dict, arrays: dict) -> None:
    sizes = {}
    for dim in DIMS:
        ids = _require(path, arrays, dim, (dim,))
        if ids.dtype.kind not in "TU":
            raise StoreError(f"{path}: ids {dim!r} have dtype {ids.dtype}, expected strings")
        sizes[dim] = ids.shape[0]
    shape = (sizes["model"], sizes["segment"])
    if "model_label" in arrays or "segment_label" in arrays:
        if kind != "key":
            raise StoreError(f"{path}: a {kind} store has label arrays")
        for name, dim in zip(_LABELS, DIMS, strict=True):
            if _require(path, arrays, name, (dim,)).shape != (sizes[dim],):
                raise StoreError(f"{path}: {name} has {arrays[name].shape} for {sizes[dim]} ids")
        return
    omitted = list(attrs.get("bosaris_all_true", []))
    if any(name != _MASKS.get(kind) for name in omitted):
        raise StoreError(f"{path}: bosaris_all_true={omitted} is not valid for a {kind}")
    both = [name for name in omitted if name in arrays]
    if both:  # which one holds? (the array was ignored: its holes became scores of 0)
        raise StoreError(f"{path}: bosaris_all_true says {both[0]} is all true and left out, "
                         f"but the store has a {both[0]} array: remove one of them")  # fmt: skip
    for name, dtypes in _VARIABLES[kind].items():
        if name in omitted:
            continue
        arr = _require(path, arrays, name, DIMS)
        if arr.shape != shape:
            raise StoreError(
                f"{path}: array {name!r} has shape {arr.shape} but there are {shape[0]} model "
                f"ids and {shape[1]} segment ids"
            )
        if arr.dtype not in dtypes:
            raise StoreError(f"{path}: array {name!r} has dtype {arr.dtype}")


def _build(
    path: Path | str, kind: str, ds: xr.Dataset, attrs: dict, chunks: Any, arrays: dict,
    opened: Path | str,
):  # fmt: skip
    """The trial object of a store read at ``path`` (its messages' name); ``opened``: where its
    chunks' tasks open it (absolute)."""
    models, segments = ds["model"].values, ds["segment"].values
    plan = plan_chunks((len(models), len(segments)), 1) if chunks is None else chunks
    if "model_label" in ds.variables:
        ml, sl = _decode_labels(ds, "model_label"), _decode_labels(ds, "segment_label")
        return key_from_labels(models, ml, segments, sl, chunks=plan)
    omitted = set(attrs.get("bosaris_all_true", []))

    def matrix(name: str) -> Any:
        if name in omitted:
            return None
        return _chunk_array(arrays[name], opened, name, _absent_ok(attrs, name))

    if kind == "key":  # codes outside {-1, 0, +1} raise when a block is read, naming the trial
        mask = checked_codes(matrix("trial_mask"), models, segments, where=f"{path}: ")
        return make_key(models, segments, mask, chunks=chunks)
    if kind == "ndx":
        mask = matrix("trial_mask")
        return make_ndx(models, segments, mask, chunks=plan if mask is None else chunks)
    return make_scores(models, segments, matrix("score"), matrix("score_mask"), chunks=chunks)


def _build_quality(path: Path | str, ds: xr.Dataset) -> xr.Dataset:
    tables = {}
    for side in DIMS:
        name = f"{side}_quality"
        if name in ds.data_vars:
            var = ds[name]
            if var.dims != (side, f"{side}_measure"):
                raise StoreError(f"{path}: {name} has dimensions {var.dims}")
            tables[name] = quality_table(
                var[side].values, var.values, measures=var[f"{side}_measure"].values
            )
    if not tables:
        raise StoreError(f"{path}: a quality store holds no model_quality or segment_quality")
    return make_quality(tables.get("model_quality"), tables.get("segment_quality"))


def read_zarr(path: str | os.PathLike[str], *, chunks: Any = None) -> xr.Dataset:
    """Open a trial object stored by :func:`write_zarr`, lazily, after checking its layout.

    Parameters
    ----------
    path
        The store directory, or an fsspec URL.
    chunks
        Dask chunks of the returned arrays; ``None`` keeps the store's chunks.

    Raises
    ------
    StoreError
        Naming the store (and the array and chunk) when it is missing, corrupt or not ours.

    Examples
    --------
    >>> import tempfile
    >>> from bosaris_dask.io.zarr_write import write_zarr
    >>> from bosaris_dask.trials import make_ndx
    >>> ndx = make_ndx(["m"], ["a", "b"], [[True, False]])
    >>> path = write_zarr(ndx, tempfile.mkdtemp() + "/n.zarr")
    >>> read_zarr(path).trial_mask.values.tolist()
    [[True, False]]
    """
    path = store_location(path)
    if not _store_exists(path):
        raise StoreNotFoundError(f"{path}: no such zarr store")
    files = _check_local_store(path) if isinstance(path, Path) else {}
    # the arrays' tasks open the store where they run: absolute (as given in the messages here;
    # a task's own messages name the path it opened)
    opened = Path(for_workers(path)) if isinstance(path, Path) else path
    attrs, arrays = _open_group(opened, path)
    kind = attrs.get("bosaris_kind")
    if kind not in ("ndx", "key", "scores", "quality"):
        raise StoreError(f"{path}: not a bosaris_dask store (bosaris_kind = {kind!r})")
    for name, arr in arrays.items():
        _check_not_packed(path, name, arr)
    if kind != "quality":
        _check_trial_layout(path, kind, attrs, arrays)
    for name, arr in arrays.items():
        _check_chunks(path, name, arr, kind != "quality" and _absent_ok(attrs, name), files)
    try:
        ds = xr.open_zarr(
            os.fspath(path), consolidated=False, chunks={}, mask_and_scale=False,
            decode_times=False,
        )  # fmt: skip
    except _zarr_errors() as exc:
        raise StoreError(f"{path}: cannot open the zarr store ({exc})") from exc
    try:
        if kind == "quality":
            return _build_quality(path, ds)
        return _build(path, kind, ds, attrs, chunks, arrays, opened)
    except TrialError as exc:
        raise StoreError(f"{path}: {exc}") from exc
