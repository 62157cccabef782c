"""Opening embedding files of each format as ``(ids, lazy 2-D array)``.

Every reader returns the ids (a 1-D object array of ``str``) and a dask array of shape
``(n_ids, dimension)`` whose chunks read rows from the file only when computed. Files are
reopened inside each task from their path, so the arrays pickle to any dask worker.

==============================  ===================================================================
format (by extension)           layout
==============================  ===================================================================
``.npy``                        a 2-D float array; the ids in a text file beside it, one per line:
                                ``NAME.ids`` (or ``NAME.txt``) for ``NAME.npy``, or ``ids=``
``.npz``                        arrays ``ids`` and ``embeddings`` (read whole: zip members cannot
                                be read by rows; use ``.npy``, HDF5 or zarr for large sets)
``.h5``, ``.hdf5``              datasets ``ids`` (strings) and ``embeddings`` (2-D float)
``.zarr``                       a group with arrays ``ids`` and ``embeddings``
``.scp``                        Kaldi script file of vectors (``id rxspecifier`` lines), via
                                ``kaldiio``; each task loads its rows by their specifiers; a
                                relative archive is found from the working directory or beside
                                the script (two different ones: an error)
``.ark``                        Kaldi archive of vectors, via ``kaldiio`` (read whole: an archive
                                has no index)
==============================  ===================================================================

In HDF5 and zarr a single 2-D float array of another name is accepted when ``embeddings`` is
absent.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np

from bosaris_dask.errors import ParseError, StoreError, StoreNotFoundError

#: Rows per chunk when reading (about 8 MiB of float32 at d = 256).
DEFAULT_ROWS = 8192

FORMATS = ("npy", "npz", "hdf5", "zarr", "scp", "ark")


def detect(path: str | os.PathLike[str]) -> str:
    """The embedding format of ``path``, from its extension.

    Examples
    --------
    >>> detect("enrol.npz"), detect("x.H5"), detect("xvector.scp"), detect("emb.zarr/")
    ('npz', 'hdf5', 'scp', 'zarr')
    """
    suffix = Path(str(path).rstrip("/")).suffix.lower().lstrip(".")
    fmt = {"h5": "hdf5"}.get(suffix, suffix)
    if fmt not in FORMATS:
        raise StoreError(
            f"{path}: unknown embedding format {suffix!r}: expected one of "
            ".npy (+ ids file), .npz, .h5/.hdf5, .zarr, .scp, .ark"
        )
    return fmt


def _identity(path: str) -> tuple[str, int, int]:
    st = os.stat(path)
    return os.path.abspath(path), st.st_size, st.st_mtime_ns


class _Rows:
    """A picklable array-like whose ``__getitem__`` reopens the file and reads the rows asked:
    a memory map of a ``.npy`` (``kind="npy"``) or the dataset ``name`` of an HDF5 file. Only
    the path and the shape are pickled; every task opens the file itself (an open per chunk of
    thousands of rows costs little next to reading them).
    """

    def __init__(self, path: str, kind: str, name: str, shape: tuple[int, int], dtype: Any):
        self.path, self.kind, self.name = path, kind, name
        self.shape, self.dtype, self.ndim = shape, np.dtype(dtype), 2

    def __dask_tokenize__(self) -> tuple:
        """Graph keys follow the file's identity (path, size, modification time), so opening
        the same unchanged file twice builds the same graph."""
        return (type(self).__name__, *_identity(self.path), self.kind, self.name, self.shape,
                str(self.dtype))  # fmt: skip

    def __getitem__(self, key: Any) -> np.ndarray:
        if self.kind == "npy":
            return np.asarray(np.load(self.path, mmap_mode="r")[key])
        import h5py

        with h5py.File(self.path, "r") as f:
            return np.asarray(f[self.name][key])


def _lazy(rows: Any, chunk_rows: int) -> da.Array:
    return da.from_array(
        rows, chunks=(chunk_rows, rows.shape[1]), asarray=True, lock=False,
        meta=np.empty((0, 0), dtype=rows.dtype),
    )  # fmt: skip


def _as_ids(values: Any, path: Any) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ParseError(f"ids must be 1-D, got shape {arr.shape}", path=path)
    if arr.dtype.kind == "S":
        return np.asarray([v.decode("utf-8") for v in arr], dtype=object)
    return np.asarray([v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in arr],
                      dtype=object)  # fmt: skip


def _check_matrix(shape: tuple[int, ...], dtype: Any, path: Any, name: str) -> None:
    if len(shape) != 2:
        raise ParseError(f"{name} must be a 2-D (ids x dimension) array, got shape {shape}",
                         path=path)  # fmt: skip
    if np.dtype(dtype).kind not in "fiu":
        raise ParseError(f"{name} must hold real numbers, got dtype {dtype}", path=path)


def _ids_file(path: Path, ids: Any) -> Path:
    if ids is not None:
        return Path(ids)
    for candidate in (path.with_suffix(".ids"), path.with_suffix(".txt")):
        if candidate.is_file():
            return candidate
    raise StoreNotFoundError(
        f"{path}: a .npy file needs its ids: {path.with_suffix('.ids')} (or .txt), one id per "
        "line, or pass ids="
    )


def read_ids_file(path: str | os.PathLike[str]) -> np.ndarray:
    """Ids from a text file, one per line (surrounding whitespace stripped, no empty lines).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.ids"
    >>> _ = p.write_text("spk1-a\\nspk2-b\\n")
    >>> read_ids_file(p).tolist()
    ['spk1-a', 'spk2-b']
    """
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if lines and lines[-1].strip() == "":
        lines = lines[:-1]
    out = np.empty(len(lines), dtype=object)
    for n, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or len(text.split()) != 1:
            raise ParseError(f"expected one id per line, got {line!r}", path=path, line=n)
        out[n - 1] = text
    return out


def open_npy(path: Path, ids: Any, chunk_rows: int) -> tuple[np.ndarray, da.Array]:
    try:
        mm = np.load(path, mmap_mode="r")
    except (ValueError, EOFError, OSError) as error:  # numpy says EOF for an empty file
        raise ParseError(f"not a readable .npy array: {str(error) or 'empty or cut short'}",
                         path=path) from None  # fmt: skip
    _check_matrix(mm.shape, mm.dtype, path, "the array")
    listed = isinstance(ids, np.ndarray | list | tuple)
    names = ids if listed else read_ids_file(_ids_file(path, ids))
    rows = _Rows(os.fspath(path), "npy", "", mm.shape, mm.dtype)
    return _as_ids(names, path), _lazy(rows, chunk_rows)


def _member(container: Any, name: str, path: Any, fallback: bool = True) -> Any:
    if name in container:
        return container[name]
    if fallback and name == "embeddings":
        matrices = [k for k in container if len(getattr(container[k], "shape", ())) == 2
                    and np.dtype(container[k].dtype).kind == "f"]  # fmt: skip
        if len(matrices) == 1:
            return container[matrices[0]]
    raise ParseError(f"no {name!r} array (found: {', '.join(sorted(container)) or 'nothing'})",
                     path=path)  # fmt: skip


def open_npz(path: Path, chunk_rows: int) -> tuple[np.ndarray, da.Array]:
    try:
        with np.load(path, allow_pickle=False) as z:
            names = _as_ids(_member(z, "ids", path, False), path)
            values = np.asarray(_member(z, "embeddings", path))
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
        raise ParseError(f"not a readable .npz file: {str(error) or 'empty or cut short'}",
                         path=path) from None  # fmt: skip
    _check_matrix(values.shape, values.dtype, path, "embeddings")
    return names, da.from_array(values, chunks=(chunk_rows, values.shape[1]))


def open_hdf5(path: Path, chunk_rows: int) -> tuple[np.ndarray, da.Array]:
    import h5py

    try:
        with h5py.File(path, "r") as f:
            names = _as_ids(_member(f, "ids", path, False)[()], path)
            dset = _member(f, "embeddings", path)
            shape, dtype, name = dset.shape, dset.dtype, dset.name
    except OSError as error:
        raise StoreError(f"{path}: not a readable HDF5 file ({error})") from None
    _check_matrix(shape, dtype, path, "embeddings")
    return names, _lazy(_Rows(os.fspath(path), "hdf5", name, shape, dtype), chunk_rows)


def open_zarr(path: Path, chunk_rows: int) -> tuple[np.ndarray, da.Array]:
    import zarr

    try:
        group = zarr.open_group(os.fspath(path), mode="r")
        arrays = dict(group.arrays())
    except (FileNotFoundError, ValueError, TypeError) as error:
        raise StoreError(f"{path}: not a readable zarr group ({error})") from None
    names = _as_ids(_member(arrays, "ids", path, False)[...], path)
    arr = _member(arrays, "embeddings", path)
    _check_matrix(arr.shape, arr.dtype, path, "embeddings")
    return names, da.from_zarr(arr, chunks=(chunk_rows, arr.shape[1]))


def _kaldiio() -> Any:
    try:
        import kaldiio
    except ImportError:
        raise ImportError(
            "reading Kaldi .scp/.ark embeddings needs kaldiio: "
            "pip install 'bosaris-dask[embeddings]'"
        ) from None
    return kaldiio


def _vector(value: Any, path: Any, name: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 1:
        raise ParseError(f"id {name!r}: expected a vector, got shape {arr.shape}", path=path)
    return arr


class _KaldiRows:
    """Rows of a Kaldi script file, loaded by their rxspecifiers inside each task."""

    def __init__(self, path: str, specs: np.ndarray, ids: np.ndarray, dim: int, dtype: Any):
        self.path, self.specs, self.ids = path, specs, ids
        self.shape, self.dtype, self.ndim = (len(specs), dim), np.dtype(dtype), 2

    def __dask_tokenize__(self) -> tuple:
        return (type(self).__name__, *_identity(self.path), self.shape, str(self.dtype))

    def __getitem__(self, key: Any) -> np.ndarray:
        kaldiio = _kaldiio()
        rows, cols = key if isinstance(key, tuple) else (key, slice(None))
        index = np.arange(self.shape[0])[rows]
        out = np.empty((len(index), self.shape[1]), dtype=self.dtype)
        for k, i in enumerate(index):
            v = _vector(_load_mat(kaldiio, self.specs[i], self.path, self.ids[i]), self.path,
                        self.ids[i])  # fmt: skip
            if v.shape[0] != self.shape[1]:
                raise ParseError(f"id {self.ids[i]!r} has dimension {v.shape[0]}, the first "
                                 f"has {self.shape[1]}", path=self.path)  # fmt: skip
            out[k] = v
        return out[:, cols]


def _ark_items(kaldiio: Any, f: Any, path: Any) -> Any:
    """kaldiio's ``(id, vector)`` pairs of an archive; a cut-short or corrupt one names the file
    (and the last id read)."""
    name = None
    try:
        for name, value in kaldiio.load_ark(f):
            yield name, value
    except Exception as error:  # kaldiio raises ValueError/AssertionError/EOFError of its own
        after = f" after id {name!r}" if name is not None else ""
        why = str(error) or "cut short or corrupt"
        raise ParseError(f"cannot read the archive{after} ({type(error).__name__}: {why})",
                         path=path) from None  # fmt: skip


def _load_mat(kaldiio: Any, spec: str, path: Any, name: str) -> Any:
    """kaldiio's vector at ``spec``; what goes wrong names the script file and the id."""
    try:
        return kaldiio.load_mat(spec)
    except Exception as error:  # kaldiio asserts, and raises OSError/ValueError of its own
        raise ParseError(f"id {name!r}: cannot read {spec} "
                         f"({type(error).__name__}: {str(error) or 'bad offset or data'})",
                         path=path) from None  # fmt: skip


def _resolve_specs(specs: list[str], lines: list[int], path: Path) -> list[str]:
    """The ``file:offset`` specifiers of a script file with absolute files, so that any worker
    process, whatever its working directory, reads the same archive.

    A relative file is looked up relative to the working directory (Kaldi's rule: recipes write
    ``exp/xvectors/xvector.1.ark:27`` and run from the recipe folder) and beside the script
    file (kaldiio's ``ark,scp:xvector.ark,xvector.scp`` written in an output folder). Found in
    one place, that one is read; in both, as two different files, it is an error naming the
    line, since reading the wrong one gives every id another id's vector at an offset that may
    well exist (silently wrong scores); in neither, an error naming both places.
    """
    resolved: dict[str, str] = {}
    out = []
    for spec, line in zip(specs, lines, strict=True):
        file, colon, offset = spec.rpartition(":") if ":" in spec else (spec, "", "")
        if spec.endswith("|") or os.path.isabs(file):
            out.append(spec)
            continue
        if file not in resolved:
            resolved[file] = _one_archive(file, path, line)
        out.append(f"{resolved[file]}{colon}{offset}")
    return out


def _one_archive(file: str, path: Path, line: int) -> str:
    here, beside = Path(os.path.abspath(file)), Path(os.path.abspath(path.parent / file))
    found = [p for p in dict.fromkeys((here, beside)) if p.is_file()]
    if len(found) == 2 and not os.path.samefile(*found):
        raise ParseError(
            f"archive {file!r} is relative, and there are two: {here} (from the working "
            f"directory, Kaldi's rule) and {beside} (beside the script file); run from the "
            "folder the script's paths are relative to, or write them absolute",
            path=path, line=line,
        )  # fmt: skip
    if not found:
        raise ParseError(
            f"archive {file!r} not found: neither {here} (from the working directory) nor "
            f"{beside} (beside the script file) exists",
            path=path, line=line,
        )  # fmt: skip
    return os.fspath(found[0])


def open_scp(path: Path, chunk_rows: int) -> tuple[np.ndarray, da.Array]:
    kaldiio = _kaldiio()
    names, specs, lines = [], [], []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.strip().split(maxsplit=1)
        if len(parts) != 2:
            raise ParseError(f"expected 'id rxspecifier', got {line!r}", path=path, line=n)
        names.append(parts[0])
        specs.append(parts[1])
        lines.append(n)
    if not names:
        raise ParseError("no embeddings in the script file", path=path)
    specs = _resolve_specs(specs, lines, path)
    first = _vector(_load_mat(kaldiio, specs[0], path, names[0]), path, names[0])
    ids = np.asarray(names, dtype=object)
    rows = _KaldiRows(os.fspath(path), np.asarray(specs, dtype=object), ids, first.shape[0],
                      first.dtype)  # fmt: skip
    return ids, _lazy(rows, chunk_rows)


def open_ark(path: Path, chunk_rows: int) -> tuple[np.ndarray, da.Array]:
    kaldiio = _kaldiio()
    names, vectors = [], []
    with open(path, "rb") as f:
        for name, value in _ark_items(kaldiio, f, path):
            v = _vector(value, path, name)
            if vectors and v.shape != vectors[0].shape:
                raise ParseError(f"id {name!r} has dimension {v.shape[0]}, the first has "
                                 f"{vectors[0].shape[0]}", path=path)  # fmt: skip
            names.append(name)
            vectors.append(v)
    if not names:
        raise ParseError("no embeddings in the archive", path=path)
    values = np.stack(vectors)
    return np.asarray(names, dtype=object), da.from_array(values, chunks=(chunk_rows, -1))


def open_file(
    path: str | os.PathLike[str], *, ids: Any = None, chunk_rows: int = DEFAULT_ROWS
) -> tuple[np.ndarray, da.Array, str]:
    """Ids, lazy values and format of an embedding file (see the module docstring)."""
    fmt = detect(path)
    p = Path(path)
    if not p.exists():
        raise StoreNotFoundError(f"{path}: no such embedding file")
    if fmt == "npy":
        names, values = open_npy(p, ids, chunk_rows)
    else:
        if ids is not None:
            raise StoreError(f"{path}: ids= is only for .npy files; {fmt} files hold their ids")
        opener = {"npz": open_npz, "hdf5": open_hdf5, "zarr": open_zarr, "scp": open_scp,
                  "ark": open_ark}[fmt]  # fmt: skip
        names, values = opener(p, chunk_rows)
    if len(names) != values.shape[0]:
        raise ParseError(f"{len(names)} ids for {values.shape[0]} embeddings", path=path)
    if not len(names):  # as a Kaldi file without vectors
        raise ParseError("no embeddings in the file", path=path)
    return names, values, fmt
