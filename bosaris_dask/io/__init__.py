"""Reading and writing trial objects in the format the path names (:func:`detect_format`): zarr
(the default store), BOSARIS HDF5 and MAT files, and text files (``docs/formats.md``); outputs
are written atomically (:mod:`~bosaris_dask.io.atomic`).
"""

from __future__ import annotations

import logging
import os
from numbers import Real
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import xarray as xr

from bosaris_dask.errors import (
    BosarisError,
    OptionError,
    StoreError,
    StoreNotFoundError,
    TrialError,
)
from bosaris_dask.io.atomic import atomic_path, remove_stale
from bosaris_dask.io.hdf5 import read_hdf5, read_quality_hdf5, write_hdf5, write_quality_hdf5
from bosaris_dask.io.zarr_store import is_url, read_zarr, store_location
from bosaris_dask.io.zarr_write import write_zarr

__all__ = [
    "read", "write", "read_quality", "write_quality", "detect_format", "TEXT_SUFFIXES",
    "read_zarr", "write_zarr", "read_hdf5", "write_hdf5", "read_quality_hdf5",
    "write_quality_hdf5", "atomic_path", "remove_stale",
]  # fmt: skip

Format = Literal["zarr", "hdf5", "mat", "text"]

#: Suffixes only embedding files have (HDF5 and zarr hold trials too): never read as trials.
EMBEDDING_ONLY_SUFFIXES = (".npy", ".npz", ".scp", ".ark")

#: Suffixes that :func:`write` takes as text without being told (``format="text"``).
TEXT_SUFFIXES = (
    "", ".txt", ".tsv", ".lst", ".list", ".trials", ".trial", ".trl", ".scores", ".score",
    ".ndx", ".key",
)  # fmt: skip


#: The suffixes that name a binary file format (text: any other, :data:`TEXT_SUFFIXES` to write).
_FILE_SUFFIXES: dict[str, Format] = {".h5": "hdf5", ".hdf5": "hdf5", ".mat": "mat"}


def detect_format(path: str | os.PathLike[str]) -> Format:
    """The format of ``path``: ``"zarr"`` (``.zarr``, a directory with ``zarr.json``), ``"hdf5"``
    (``.h5``, ``.hdf5``), ``"mat"`` (``.mat``), else ``"text"``.

    Examples
    --------
    >>> detect_format("trials.zarr"), detect_format("key.H5"), detect_format("scores.txt")
    ('zarr', 'hdf5', 'text')
    >>> detect_format("key.mat")
    'mat'
    """
    url = is_url(path)
    p = PurePosixPath(str(path).rstrip("/")) if url else Path(path)
    suffix = p.suffix.lower()
    if suffix == ".zarr" or (not url and suffix != ".mat" and (p / "zarr.json").is_file()):
        return "zarr"
    return _FILE_SUFFIXES.get(suffix, "text")


def _existing(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.exists():
        raise StoreNotFoundError(f"{p}: no such file or store")
    return p


def read(
    path: str | os.PathLike[str],
    kind: str | None = None,
    *,
    chunks: Any = None,
    scratch: str | os.PathLike[str] | None = None,
    text_format: str | None = None,
) -> xr.Dataset:
    """Read a trial object (ndx, key or scores) from a zarr store, an HDF5, MAT or text file.

    Parameters
    ----------
    path
        The file or store (:func:`detect_format`); a zarr store may be an fsspec URL.
    kind : {"ndx", "key", "scores"}, optional
        What to expect; by default the store's own kind, or detected from the content.
    chunks
        Dask chunks; by default the store's chunks (zarr) or about 64 MiB.
    scratch
        Where a large text input is staged for the workers
        (:func:`~bosaris_dask.io.staging.scratch_directory`).
    text_format
        A text file's layout (:func:`bosaris_dask.io.text.read_text`); ``None`` detects it.

    Raises
    ------
    StoreNotFoundError
        When ``path`` does not exist (also a :class:`FileNotFoundError`).
    StoreError, ParseError
        When the store or file is corrupt or not what ``kind`` says.

    Examples
    --------
    >>> import tempfile
    >>> from bosaris_dask.trials import make_ndx
    >>> path = write(make_ndx(["m"], ["a"], [[True]]), tempfile.mkdtemp() + "/n.txt")
    >>> read(path, "ndx").trial_mask.values.tolist()
    [[True]]
    """
    path = store_location(path)
    fmt = detect_format(path)
    if is_url(path) and fmt != "zarr":
        raise StoreError(f"{path}: only zarr stores can be read from a URL")
    chunks = _by_axis(chunks)
    p = path if is_url(path) else _existing(path)
    if fmt == "zarr":
        obj = read_zarr(p, chunks=chunks)
        if kind is not None and obj.attrs["bosaris_kind"] != kind:
            raise StoreError.wrong_kind(p, obj.attrs["bosaris_kind"], kind)
        return obj
    if fmt == "hdf5":
        return read_hdf5(p, kind, chunks=chunks)
    if fmt == "mat":
        from bosaris_dask.io.mat import read_mat

        obj = read_mat(p, kind)
        if isinstance(chunks, tuple | list):
            chunks = dict(zip(("model", "segment"), chunks, strict=True))
        elif isinstance(chunks, dict):
            chunks = {("model", "segment")[axis]: c for axis, c in chunks.items()}
        return obj if chunks is None else obj.chunk(chunks)
    if p.is_dir():
        raise StoreError(f"{p}: a directory that is not a zarr store")
    if Path(p).suffix.lower() in EMBEDDING_ONLY_SUFFIXES:
        raise StoreError(f"{p}: embeddings, not trials or scores (score them with --enrol and "
                         "--test, or bosaris_dask.embeddings)")  # fmt: skip
    from bosaris_dask.io.text import read_text
    from bosaris_dask.io.text.read import refuse_binary

    refuse_binary(p)

    return read_text(p, kind, chunks=chunks, scratch_dir=scratch, format=text_format)


def _by_axis(chunks: Any) -> Any:
    """``read``'s ``chunks`` with a dict's dimension names as axes (``{"model": 4}`` is
    ``{0: 4}``), as every reader takes them (zarr raised TypeError on names, HDF5 and text
    ignored them); anything else as it is.

    >>> _by_axis({"model": 4, 1: 10}), _by_axis((4, 10))
    ({0: 4, 1: 10}, (4, 10))
    """
    if not isinstance(chunks, dict):
        return chunks
    axes = {"model": 0, "segment": 1, 0: 0, 1: 1}
    unknown = [k for k in chunks if k not in axes]
    if unknown:
        raise OptionError(f"chunks are given per dimension, 'model' and 'segment' (or axes 0 "
                          f"and 1), not {unknown[0]!r}")  # fmt: skip
    return {axes[k]: c for k, c in chunks.items()}


def _write_format(path: str | os.PathLike[str], format: Format | None) -> Format:
    """The format to write ``path`` in: as told, or from a suffix that says it."""
    if format is not None:
        if format not in ("zarr", "hdf5", "mat", "text"):
            raise StoreError(f"{path}: unknown format {format!r} (zarr, hdf5, mat or text)")
        return format
    fmt = detect_format(path)
    suffix = Path(path).suffix.lower()
    named = _FILE_SUFFIXES.get(suffix, "text" if suffix and suffix in TEXT_SUFFIXES else None)
    if fmt == "zarr" and named is not None:  # (a store read by what it is, not by its name)
        shown = "text" if named == "text" else named.upper()
        raise StoreError(
            f"{path}: a zarr store, where the suffix {suffix} names a {shown} output: remove "
            "the store or choose another name"
        )
    if fmt == "text" and suffix not in TEXT_SUFFIXES and not Path(path).is_dir():
        raise StoreError(
            f"{path}: cannot tell the format to write from the suffix {suffix!r}; use .zarr, "
            ".h5, .mat or .txt (in Python, format='text' writes text under this name)"
        )
    return fmt


def write(
    obj: xr.Dataset,
    path: str | os.PathLike[str],
    *,
    format: Format | None = None,
    progress: bool = False,
    **options: Any,
) -> Path:
    """Write a trial object, atomically, in the format the suffix of ``path`` names.

    Parameters
    ----------
    obj
        An ndx, key or scores (or, for zarr, a quality object).
    path
        ``.zarr``, ``.h5``/``.hdf5``, ``.mat``, or a text name (:data:`TEXT_SUFFIXES`); any other
        suffix is an error unless ``format`` is given.
    format : {"zarr", "hdf5", "mat", "text"}, optional
        The format, whatever the suffix.
    progress
        Show progress while a zarr or HDF5 store is written.
    **options
        For the writer: ``chunk_mb`` (zarr, HDF5), ``omit_true_masks`` (zarr), ``mat_version``
        (MAT: ``"5"`` or ``"7.3"``), ``header`` (text).

    Examples
    --------
    >>> import tempfile
    >>> from bosaris_dask.trials import make_key
    >>> path = write(make_key(["m"], ["a"], [[1]]), tempfile.mkdtemp() + "/key.lst")
    >>> print(path.read_text(), end="")
    m a target
    """
    if isinstance(obj, str | os.PathLike) and isinstance(path, xr.Dataset):
        raise TrialError("write takes (obj, path), not (path, obj)")
    if "plo" in getattr(obj, "dims", ()):
        raise TrialError(
            "this is an evaluation's result, not a trial object: keep it with "
            "its own to_zarr or to_netcdf, or as JSON (report.to_json_dict)"
        )
    if is_url(path):
        raise StoreError(
            f"{path}: writing to a URL is not supported (object stores cannot rename, so the "
            "write could not be atomic); write to a local or shared file system"
        )
    path = store_location(path)  # file:// as read takes it
    fmt = _write_format(path, format)
    obj = _naming_sent_data(obj)
    try:
        return _write_as(fmt, obj, Path(path), progress, options)
    except BosarisError:  # already says what and where (a StoreError is an OSError too)
        raise
    except (OSError, RuntimeError) as exc:  # h5py's close after a failed write: a RuntimeError
        cause = exc if isinstance(exc, OSError) else exc.__context__
        if not isinstance(cause, OSError):
            raise
        reason = os.strerror(cause.errno) if cause.errno else str(cause)  # h5py's is a page
        raise StoreError(f"cannot write {path}: {reason}") from exc


def _naming_sent_data(obj: xr.Dataset) -> xr.Dataset:
    """``obj`` naming the data already on the active client's workers
    (:func:`~bosaris_dask.io.staging.on_the_workers`): the zarr and HDF5 writers build graphs
    of their own (xarray's fused ``to_zarr`` tasks, batches of delayed chunks) in which
    :mod:`bosaris_dask.progress` no longer finds the data's layers to rewrite."""
    from bosaris_dask.progress import current_client

    client = current_client()
    if client is None:
        return obj
    from bosaris_dask.io.scattered import named

    return named(obj, client)


#: The options each format's writer takes (``write``'s ``**options``).
_WRITE_OPTIONS = {"zarr": ("chunk_mb", "omit_true_masks"), "hdf5": ("chunk_mb",),
                  "mat": ("mat_version",), "text": ("header",)}  # fmt: skip


def _write_as(fmt: str, obj: xr.Dataset, path: Path, progress: bool, options: dict) -> Path:
    shown = {"zarr": "zarr", "hdf5": "HDF5", "mat": "MAT", "text": "text"}
    for name in options:
        if name not in _WRITE_OPTIONS[fmt]:
            takes = [shown[f] for f, names in _WRITE_OPTIONS.items() if name in names]
            if takes:
                raise OptionError(f"{path}: {name} is an option of {' and '.join(takes)} "
                                  f"writes, not of a {shown[fmt]} file")  # fmt: skip
            raise OptionError(f"{path}: no write option {name!r} (a {shown[fmt]} write takes "
                              f"{', '.join(_WRITE_OPTIONS[fmt])})")  # fmt: skip
    mb = options.get("chunk_mb")
    if mb is not None and (isinstance(mb, bool) or not isinstance(mb, Real) or not mb > 0):
        raise OptionError(f"{path}: chunk_mb is a chunk's size in MiB, a positive number; got "
                          f"{mb!r}")  # fmt: skip
    if not isinstance(options.get("omit_true_masks", True), bool):
        raise OptionError(f"{path}: omit_true_masks is True or False, got "
                          f"{options['omit_true_masks']!r}")  # fmt: skip
    if fmt == "zarr":
        return write_zarr(obj, path, progress=progress, **options)
    if fmt == "hdf5":
        return write_hdf5(obj, path, progress=progress, **options)
    if fmt == "mat":
        from bosaris_dask.io.mat import write_mat

        return write_mat(obj, path, **options)
    from bosaris_dask.io.text import write_text

    write_text(obj, path, **options)
    return path


def read_quality(path: str | os.PathLike[str]) -> xr.DataArray:
    """Read a quality table (:func:`~bosaris_dask.trials.quality_table`) from an HDF5, MAT or
    text file.

    Parameters
    ----------
    path
        The file: HDF5 (BOSARIS's ``/ids`` and ``/values``, measures by ids), MAT, or text
        (the number of measures ``q``, then ``id v1 ... vq`` per line); its format is detected
        from its contents.

    Returns
    -------
    xarray.DataArray
        ``(id, measure)``, float64; the measures numbered ``0, 1, ...``.

    Raises
    ------
    StoreError
        A zarr store (quality tables of one side are not kept there).
    ParseError
        A malformed file, naming it and the line or id.

    Examples
    --------
    >>> import tempfile
    >>> from bosaris_dask.trials import quality_table
    >>> path = tempfile.mkdtemp() + "/q.txt"
    >>> _ = write_quality(quality_table(["s1", "s2"], [[0.1, 3.0], [0.2, 4.0]]), path)
    >>> read_quality(path).sel(id="s2").values.tolist()
    [0.2, 4.0]
    """
    p = _existing(path)
    fmt = detect_format(p)
    if fmt == "hdf5":
        return read_quality_hdf5(p)
    if fmt == "mat":
        from bosaris_dask.io.mat import read_quality_mat

        return read_quality_mat(p)
    if fmt == "zarr":
        from bosaris_dask.trials import kind_of

        try:
            kind = kind_of(read(p))
        except BosarisError:  # not a store of this package's
            kind = "something else"
        held = ("a Quality object of both sides (--quality; bd.read)" if kind == "quality"
                else f"{kind}, not quality")  # fmt: skip
        raise StoreError(f"{p}: a zarr store holding {held}; quality tables of one side are "
                         "read from HDF5, MAT or text files")  # fmt: skip
    from bosaris_dask.io.text import read_quality_text

    return read_quality_text(p)


def _side_table(table: Any) -> Any:
    """A quality table ``(id, measure)`` from one side of a Quality object; a TrialError for a
    whole Quality object; anything else as it is (the writers check it)."""
    if isinstance(table, xr.Dataset) and "model_quality" in table and "segment_quality" in table:
        raise TrialError("a Quality object holds both sides: write each side's table "
                         "(bd.write_quality(Q.model_quality, ...), bd.write_quality("
                         "Q.segment_quality, ...)), or both to zarr with bd.write")  # fmt: skip
    for side in ("model", "segment"):
        if isinstance(table, xr.DataArray) and table.dims == (side, f"{side}_measure"):
            return table.rename({side: "id", f"{side}_measure": "measure"})
    return table


def write_quality(
    table: xr.DataArray, path: str | os.PathLike[str], *, format: Format | None = None
) -> Path:
    """Write a quality table to an HDF5 (``.h5``, ``.hdf5``), MAT (``.mat``) or text file.

    These formats number the measures: their names, if any, are not kept (a note on the
    ``bosaris_dask.io`` logger says so: a quality fusion trained on named measures cannot then
    check their order; a Quality object in zarr keeps them). ``table`` may also be one side
    of a Quality object (``Q.model_quality``, ``Q.segment_quality``).

    Parameters
    ----------
    table
        ``(id, measure)`` (:func:`~bosaris_dask.trials.quality_table`), or one side of a
        Quality object.
    path
        The file to write, atomically: its suffix chooses the format unless ``format``.
    format
        ``"hdf5"``, ``"mat"`` or ``"text"``.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    TrialError
        A whole Quality object (both sides): each side is written to its own file.
    StoreError
        A zarr path (a Quality object of both sides goes to zarr with :func:`write`).

    Examples
    --------
    >>> import tempfile
    >>> from bosaris_dask.trials import quality_table
    >>> path = write_quality(quality_table(["s1"], [[0.5]]), tempfile.mkdtemp() + "/q.h5")
    >>> read_quality(path).values.tolist()
    [[0.5]]
    """
    table = _side_table(table)
    fmt = _write_format(path, format)
    names = [str(m) for m in table["measure"].values] if "measure" in table.coords else []
    if names and names != [str(i) for i in range(len(names))]:
        logging.getLogger("bosaris_dask.io").info(
            "%s: the measures' names (%s) are not kept in this format, only their order",
            path, ", ".join(names),
        )  # fmt: skip
    if fmt == "hdf5":
        return write_quality_hdf5(table, path)
    if fmt == "mat":
        from bosaris_dask.io.mat import write_quality_mat

        return write_quality_mat(table, path)
    if fmt == "zarr":
        raise StoreError(f"{path}: quality tables (one side) are written to HDF5, MAT or text "
                         "files; a Quality object of both sides (make_quality) goes to zarr with "
                         "bd.write")  # fmt: skip
    from bosaris_dask.io.text import write_quality_text

    write_quality_text(table, path)
    return Path(path)
