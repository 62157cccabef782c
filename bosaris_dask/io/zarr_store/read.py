"""Reading a zarr store lazily, after checking its layout and its chunk files."""

from __future__ import annotations

import itertools
import math
import os
import warnings
from pathlib import Path
from typing import Any

import xarray as xr
import zarr

from bosaris_dask.errors import StoreError, StoreNotFoundError, TrialError
from bosaris_dask.io.compute import plan_chunks
from bosaris_dask.io.raw_chunks import raw_chunk_array
from bosaris_dask.io.zarr_store.blocks import block_array
from bosaris_dask.io.zarr_store.layout import _LABELS, _MASKS, _VARIABLES, _decode_labels
from bosaris_dask.io.zarr_store.safety import _check_local_store
from bosaris_dask.trials import (
    DIMS,
    key_from_labels,
    make_key,
    make_ndx,
    make_quality,
    make_scores,
    quality_table,
)
from bosaris_dask.trials.construction import checked_codes

_ZARR_ERRORS = (
    OSError,
    ValueError,
    KeyError,
    TypeError,
    RecursionError,  # metadata JSON nested too deeply
    zarr.errors.BaseZarrError,
    zarr.errors.ZarrUserWarning,  # raised as an error while opening: a node zarr cannot parse
)


def _dims(arr: zarr.Array) -> tuple[str, ...] | None:
    names = getattr(arr.metadata, "dimension_names", None)
    if names is None:
        names = arr.attrs.get("_ARRAY_DIMENSIONS")
    return None if names is None else tuple(names)


def _chunk_files(base: Path) -> dict[str, int]:
    """Relative POSIX path -> size of every file under an array directory but its metadata."""
    out: dict[str, int] = {}
    stack = [base]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.name not in ("zarr.json", ".zarray", ".zattrs"):
                    rel = Path(entry.path).relative_to(base).as_posix()
                    out[rel] = entry.stat().st_size
    return out


def is_url(path: Any) -> bool:
    """Whether ``path`` is an fsspec URL (``s3://...``, ``gs://...``, ``memory://...``)."""
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
    """Whether chunks of array ``name`` may be absent (read as the fill value).

    :func:`~bosaris_dask.io.zarr_store.write_zarr` writes every chunk (and marks its stores with
    ``bosaris_store_version``): a chunk missing there is damage, e.g. an interrupted copy. Other
    writers (zarr v3, ``xarray.Dataset.to_zarr``) skip the chunks of a data matrix that hold
    only the fill value; ids and labels are never all fill, so theirs must all be present.
    """
    return "bosaris_store_version" not in attrs and name in ("trial_mask", "score", "score_mask")


def _check_remote_chunks(path: str, name: str, arr: zarr.Array, absent_ok: bool) -> None:
    """The missing-chunk check for stores behind a URL: count the stored chunks."""
    stored, expected = arr.nchunks_initialized, arr.nchunks
    if stored < expected and not absent_ok:
        raise StoreError(
            f"{path}: array {name!r} has {expected - stored} of its {expected} chunks missing"
        )


def _check_chunks(path: Path, name: str, arr: zarr.Array, absent_ok: bool) -> None:
    """Raise StoreError naming the first chunk of ``arr`` whose file is truncated, or missing
    where chunks may not be absent."""
    if 0 in arr.shape:
        return
    outer = arr.shards or arr.chunks
    grid = [range(math.ceil(s / c)) for s, c in zip(arr.shape, outer, strict=True)]
    files = _chunk_files(path / name)
    codecs = getattr(arr.metadata, "codecs", ())
    raw = len(codecs) == 1 and type(codecs[0]).__name__ == "BytesCodec" and arr.shards is None
    size = math.prod(outer) * arr.dtype.itemsize if raw else None
    for index in itertools.product(*grid):
        key = arr.metadata.encode_chunk_key(index)
        if key not in files:
            if absent_ok:
                continue
            raise StoreError(f"{path}: array {name!r} is missing chunk {index} (file {key})")
        if size is not None and files[key] != size:
            raise StoreError(
                f"{path}: array {name!r} chunk {index} (file {key}) has {files[key]} bytes, "
                f"expected {size}"
            )


def _open_group(path: Path | str) -> tuple[dict[str, Any], dict[str, zarr.Array]]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", zarr.errors.ZarrUserWarning)
            # consolidated metadata is a second copy that could disagree with the arrays' own
            group = zarr.open_group(store=os.fspath(path), mode="r", use_consolidated=False)
            attrs = dict(group.attrs)
            arrays = dict(group.arrays())
    except _ZARR_ERRORS as exc:
        raise StoreError(f"{path}: not a readable zarr store ({exc})") from exc
    return attrs, arrays


def _require(path: Path | str, arrays: dict[str, zarr.Array], name: str, dims: tuple[str, ...]):
    if name not in arrays:
        raise StoreError(f"{path}: array {name!r} is missing")
    arr = arrays[name]
    if _dims(arr) != dims:
        raise StoreError(f"{path}: array {name!r} has dimensions {_dims(arr)}, expected {dims}")
    return arr


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


def _open_xarray(path: Path | str) -> xr.Dataset:
    try:
        return xr.open_zarr(
            os.fspath(path),
            consolidated=False,
            chunks={},
            mask_and_scale=False,
            decode_times=False,
        )
    except _ZARR_ERRORS as exc:
        raise StoreError(f"{path}: cannot open the zarr store ({exc})") from exc


def _matrix(path: Path | str, name: str, arrays: dict, attrs: dict) -> Any:
    """Data matrix ``name`` as a dask array: uncompressed local chunks memory-mapped, others
    decoded chunk by chunk (a corrupt chunk names itself); absent chunks as the fill value."""
    arr, absent_ok = arrays[name], _absent_ok(attrs, name)
    if isinstance(path, Path):
        raw = raw_chunk_array(path / name, arr, absent_ok=absent_ok)
        if raw is not None:
            return raw
    return block_array(arr, os.fspath(path), name)


def _build(
    path: Path | str,
    kind: str,
    ds: xr.Dataset,
    attrs: dict,
    chunks: Any,
    arrays: dict,
) -> xr.Dataset:
    models, segments = ds["model"].values, ds["segment"].values
    if "model_label" in ds.variables:
        ml, sl = _decode_labels(ds, "model_label"), _decode_labels(ds, "segment_label")
        plan = plan_chunks((len(models), len(segments)), 1) if chunks is None else chunks
        return key_from_labels(models, ml, segments, sl, chunks=plan)
    omitted = set(attrs.get("bosaris_all_true", []))

    def matrix(name: str) -> Any:
        return _matrix(path, name, arrays, attrs)

    if kind == "key":  # codes outside {-1, 0, +1} raise when a block is read, naming the trial
        mask = checked_codes(matrix("trial_mask"), models, segments, where=f"{path}: ")
        return make_key(models, segments, mask, chunks=chunks)
    if kind == "ndx":
        if "trial_mask" in omitted:
            plan = plan_chunks((len(models), len(segments)), 1) if chunks is None else chunks
            return make_ndx(models, segments, None, chunks=plan)
        return make_ndx(models, segments, matrix("trial_mask"), chunks=chunks)
    mask = None if "score_mask" in omitted else matrix("score_mask")
    return make_scores(models, segments, matrix("score"), mask, chunks=chunks)


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
    """Open a trial object stored by :func:`write_zarr`, lazily.

    The layout is checked when the store is opened (cheap: metadata and a listing of the chunk
    files): the kind, the dimension names, the shapes of the ids against the matrices, the
    dtypes, and that no uncompressed chunk is truncated. Chunks absent from a store written by
    another tool read as the fill value; in a store written by :func:`write_zarr` a missing
    chunk is an error. A compressed chunk that cannot be decoded raises a StoreError naming it
    when it is read.

    Parameters
    ----------
    path
        The store directory.
    chunks
        Dask chunks of the returned arrays; ``None`` keeps the store's chunks.

    Returns
    -------
    xarray.Dataset
        The trial object; its data are dask arrays reading the store.

    Raises
    ------
    StoreError
        Naming the store (and the array and chunk) when it is missing, corrupt or not a
        bosaris_dask store.

    Examples
    --------
    >>> import tempfile
    >>> from bosaris_dask.io.zarr_store import write_zarr
    >>> from bosaris_dask.trials import make_ndx
    >>> ndx = make_ndx(["m"], ["a", "b"], [[True, False]])
    >>> path = write_zarr(ndx, tempfile.mkdtemp() + "/n.zarr")
    >>> read_zarr(path).trial_mask.values.tolist()
    [[True, False]]
    """
    path = store_location(path)
    if not _store_exists(path):
        raise StoreNotFoundError(f"{path}: no such zarr store")
    if isinstance(path, Path):
        _check_local_store(path)
    attrs, arrays = _open_group(path)
    kind = attrs.get("bosaris_kind")
    if kind not in ("ndx", "key", "scores", "quality"):
        raise StoreError(f"{path}: not a bosaris_dask store (bosaris_kind = {kind!r})")
    if kind != "quality":
        _check_trial_layout(path, kind, attrs, arrays)
    for name, arr in arrays.items():
        absent_ok = kind != "quality" and _absent_ok(attrs, name)
        if isinstance(path, Path):
            _check_chunks(path, name, arr, absent_ok)
        else:
            _check_remote_chunks(path, name, arr, absent_ok)
    ds = _open_xarray(path)
    try:
        if kind == "quality":
            return _build_quality(path, ds)
        return _build(path, kind, ds, attrs, chunks, arrays)
    except TrialError as exc:
        raise StoreError(f"{path}: {exc}") from exc
