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
                                has no index); both in :mod:`bosaris_dask.embeddings.kaldi`
a folder                        ``ID.npy`` files of one vector each (speechbrain's extraction
                                script), read whole
==============================  ===================================================================

Under other names, as the field's tools write them: in ``.npz``, HDF5 and zarr, the only 2-D
float array is the embeddings (``data``, ``xvectors``; ``(n, 1, d)`` reads as ``(n, d)``) and
the only 1-D array of strings the ids (``keys``, ``utt_ids``, an xarray ``id`` coordinate;
an ``(n, 1)`` column too); a ``.npz`` or HDF5 file whose every member is one vector, named by
its id (hyperion's ``H5DataWriter``, ``np.savez(out, **vectors)``), is read whole. Pickles
(``.pkl``, ``.pt``) and arrays of Python objects are refused: unpickling runs the file's code.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np

from bosaris_dask.errors import ParseError, StoreError, StoreNotFoundError
from bosaris_dask.io.stamps import Stamp, check_unchanged, file_stamp
from bosaris_dask.io.worker_paths import for_workers

#: Rows per chunk when reading (about 8 MiB of float32 at d = 256).
DEFAULT_ROWS = 8192

FORMATS = ("npy", "npz", "hdf5", "zarr", "scp", "ark", "npydir")
#: Pickled files: never unpickled here (unpickling runs the file's code).
_PICKLES = ("pkl", "pickle", "pt", "pth")


def detect(path: str | os.PathLike[str]) -> str:
    """The embedding format of ``path``, from its extension.

    Examples
    --------
    >>> detect("enrol.npz"), detect("x.H5"), detect("xvector.scp"), detect("emb.zarr/")
    ('npz', 'hdf5', 'scp', 'zarr')
    """
    suffix = Path(str(path).rstrip("/")).suffix.lower().lstrip(".")
    fmt = {"h5": "hdf5"}.get(suffix, suffix)
    if fmt != "zarr" and Path(path).is_dir():
        return "npydir"
    if fmt in _PICKLES:
        raise StoreError(
            f"{path}: a pickle (NeMo's *_embeddings.pkl, torch.save) is not read: unpickling "
            "runs code from the file. Save the vectors as arrays, e.g. np.savez(out, "
            "ids=np.asarray(list(d), dtype=str), embeddings=np.stack(list(d.values())))"
        )
    if fmt not in FORMATS:
        raise StoreError(
            f"{path}: unknown embedding format {suffix!r}: expected one of "
            ".npy (+ ids file), .npz, .h5/.hdf5, .zarr, .scp, .ark, or a folder of .npy vectors"
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

    def __init__(self, path: str, kind: str, name: str, shape: tuple[int, ...], dtype: Any):
        self.path, self.kind, self.name = path, kind, name
        self.stamp = file_stamp(path)  # checked before each read: the file as it was opened
        #: An ``(n, 1, d)`` array (one vector per id, kept as a 1 x d matrix) reads as (n, d).
        self.squeeze = len(shape) == 3
        self.shape, self.dtype, self.ndim = (shape[0], shape[-1]), np.dtype(dtype), 2

    def __dask_tokenize__(self) -> tuple:
        """Graph keys follow the file's identity (path and stamp), so opening the same unchanged
        file twice builds the same graph."""
        return (type(self).__name__, os.path.abspath(self.path), *self.stamp, self.kind,
                self.name, self.shape, str(self.dtype))  # fmt: skip

    def __getitem__(self, key: Any) -> np.ndarray:
        check_unchanged(self.path, self.stamp)
        if self.squeeze:
            rows, cols = key if isinstance(key, tuple) else (key, slice(None))
            key = (rows, 0, cols)
        if self.kind == "npy":
            return np.asarray(np.load(self.path, mmap_mode="r")[key])
        import h5py

        with h5py.File(self.path, "r") as f:
            return np.asarray(f[self.name][key])


def _unchanged_since(block: np.ndarray, where: Path, stamp: Stamp, store: Path) -> np.ndarray:
    check_unchanged(where, stamp, store, "store")
    return block


def _lazy(rows: Any, chunk_rows: int) -> da.Array:
    return da.from_array(
        rows, chunks=(chunk_rows, rows.shape[1]), asarray=True, lock=False,
        meta=np.empty((0, 0), dtype=rows.dtype),
    )  # fmt: skip


def _as_ids(values: Any, path: Any) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim == 2 and arr.shape[1] == 1:  # a column, as MATLAB and pandas store a list
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ParseError(f"ids must be 1-D, got shape {arr.shape}", path=path)
    if arr.dtype.kind == "S":
        return np.asarray([v.decode("utf-8") for v in arr], dtype=object)
    return np.asarray([v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in arr],
                      dtype=object)  # fmt: skip


def _check_matrix(shape: tuple[int, ...], dtype: Any, path: Any, name: str) -> None:
    """A 2-D (ids x dimension) array of real numbers, or (ids x 1 x dimension)."""
    if not (len(shape) == 2 or (len(shape) == 3 and shape[1] == 1)):
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
        f"{path}: a .npy file needs its ids: {path.with_suffix('.ids')} (or .txt) beside it, "
        "one id per line (in Python, ids= names the file or gives the ids)"
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
    # utf-8-sig: a byte-order mark (Windows editors) is not part of the first id
    lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
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
        if "Python objects" in str(error):
            raise ParseError(
                "the array holds Python objects (np.save of a dict or list?), which are not "
                "unpickled (a file can run code when unpickled): save a float array, e.g. "
                "np.save(out, np.stack(list(d.values()))) with the ids, one per line, in a "
                ".ids file beside it", path=path,
            ) from None  # fmt: skip
        raise ParseError(f"not a readable .npy array: {str(error) or 'empty or cut short'}",
                         path=path) from None  # fmt: skip
    _check_matrix(mm.shape, mm.dtype, path, "the array")
    listed = isinstance(ids, np.ndarray | list | tuple)
    names = ids if listed else read_ids_file(_ids_file(path, ids))
    rows = _Rows(for_workers(path), "npy", "", mm.shape, mm.dtype)
    return _as_ids(names, path), _lazy(rows, chunk_rows)


def _member(container: Any, name: str, path: Any) -> Any:
    """The array ``name`` (``ids`` or ``embeddings``) of an npz, HDF5 or zarr container; under
    another name, the container's only array that can be it: one 2-D (or ids x 1 x dimension)
    float array for the embeddings (``data``, ``xvectors``, ...), one 1-D array of strings for
    the ids (``keys``, ``utt_ids``, ``names``, ...)."""
    if name in container:
        return container[name]
    fits = _fits_embeddings if name == "embeddings" else _fits_ids
    found = [k for k in container if fits(container[k])]
    if len(found) == 1:
        return container[found[0]]
    listed = ", ".join(sorted(container)) or "nothing"
    if len(listed) > 200:
        listed = f"{listed[:200]}... ({len(container)} members)"
    which = "2-D float array" if name == "embeddings" else "1-D array of strings"
    raise ParseError(f"no {name!r} array, and {'no' if not found else 'more than one'} other "
                     f"{which} to take for it (found: {listed})", path=path)  # fmt: skip


#: Members of the BOSARIS trial files (HDF5 Key, Ndx, Scores, quality): not embeddings.
_TRIAL_MEMBERS = frozenset({"trial_mask", "target_mask", "nontarget_mask", "scores",
                            "score_mask", "values", "ID", "score", "model", "segment"})  # fmt: skip


def holds_embeddings(container: Any) -> bool:
    """Whether an HDF5 file or zarr group (``container``, mapping names to members) holds an
    embedding set as :func:`open_file` reads it: an ``embeddings`` array, or, in a container
    that is no trial file, one array that can be the embeddings and one that can be the ids.

    Examples
    --------
    >>> import numpy as np
    >>> holds_embeddings({"data": np.zeros((3, 4)), "keys": np.array(["a", "b", "c"])})
    True
    >>> holds_embeddings({"scores": np.zeros((3, 4)), "keys": np.array(["a", "b", "c"])})
    False
    """
    if "embeddings" in container:
        return True
    if _TRIAL_MEMBERS & set(container):
        return False
    members = [container[k] for k in container]
    return (sum(map(_fits_embeddings, members)) == 1) and (sum(map(_fits_ids, members)) == 1)


def _fits_embeddings(member: Any) -> bool:
    shape = getattr(member, "shape", ())
    kind = np.dtype(getattr(member, "dtype", "O")).kind
    return kind == "f" and (len(shape) == 2 or (len(shape) == 3 and shape[1] == 1))


def _fits_ids(member: Any) -> bool:
    shape = getattr(member, "shape", ())
    dtype = getattr(member, "dtype", None)
    if not (len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)) or dtype is None:
        return False
    if np.dtype(dtype).kind in "SU" or str(dtype) in ("StringDType()", "str", "<U0"):
        return True
    try:  # h5py's variable-length strings are object arrays that say so
        import h5py

        return h5py.check_string_dtype(dtype) is not None
    except (ImportError, TypeError):
        return False


def is_per_id(items: list[tuple[str, Any]]) -> bool:
    """Whether ``(name, member)`` pairs are one float vector (or 1 x d matrix) per id, all of
    one dimension (shapes and dtypes only: nothing is read)."""
    shapes = {tuple(getattr(member, "shape", ())) for _, member in items}
    if len(shapes) != 1:
        return False
    (shape,) = shapes
    return all(_is_vector(shape, getattr(member, "dtype", "O")) for _, member in items)


def _is_vector(shape: tuple[int, ...], dtype: Any) -> bool:
    """Whether a member of ``shape`` and ``dtype`` is one embedding: a float vector (or 1 x d)."""
    return (len(shape) == 1 or (len(shape) == 2 and shape[0] == 1)) and np.dtype(dtype).kind == "f"


def _per_id(items: list[tuple[str, Any]]) -> tuple[np.ndarray, np.ndarray] | None:
    """``(ids, rows)`` of a container holding one vector per id, named by the id (hyperion's
    ``H5DataWriter``, ``np.savez(out, **vectors)``): every member a float vector (or 1 x d) of
    one dimension; None for any other container."""
    if not is_per_id(items):
        return None
    ids = np.array([name for name, _ in items], dtype=object)
    return ids, np.stack([np.asarray(member[()]).reshape(-1) for _, member in items])


def open_npz(path: Path, chunk_rows: int) -> tuple[np.ndarray, da.Array]:
    try:
        with np.load(path, allow_pickle=False) as z:
            # without ``ids``, every member is looked at (by shape): each is read once here
            members = z if "ids" in z.files else {k: z[k] for k in z.files}
            per_id = None if members is z else _per_id(list(members.items()))
            if per_id is not None:
                names, values = per_id
            else:
                names = _as_ids(_member(members, "ids", path), path)
                values = np.asarray(_member(members, "embeddings", path))
    except ParseError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
        if "allow_pickle=False" in str(error):
            raise ParseError(
                "an array is stored as Python objects, which are not unpickled (a file can run "
                "code when unpickled): save the ids as strings, e.g. np.savez(path, "
                "ids=np.asarray(ids, dtype=str), embeddings=x)", path=path,
            ) from None  # fmt: skip
        raise ParseError(f"not a readable .npz file: {str(error) or 'empty or cut short'}",
                         path=path) from None  # fmt: skip
    _check_matrix(values.shape, values.dtype, path, "embeddings")
    values = values.reshape(values.shape[0], values.shape[-1])
    return names, da.from_array(values, chunks=(chunk_rows, values.shape[1]))


def open_hdf5(path: Path, chunk_rows: int) -> tuple[np.ndarray, da.Array]:
    import h5py

    try:
        with h5py.File(path, "r") as f:
            per_id = None if "ids" in f else hdf5_per_id(f)
            if per_id is not None:
                names, values = per_id
                return names, da.from_array(values, chunks=(chunk_rows, values.shape[1]))
            names = _as_ids(_member(f, "ids", path)[()], path)
            dset = _member(f, "embeddings", path)
            shape, dtype, name = dset.shape, dset.dtype, dset.name
    except OSError as error:
        raise StoreError(f"{path}: not a readable HDF5 file ({error})") from None
    _check_matrix(shape, dtype, path, "embeddings")
    return names, _lazy(_Rows(for_workers(path), "hdf5", name, shape, dtype), chunk_rows)


def hdf5_per_id(
    f: Any, read: bool = True, first: int | None = None
) -> tuple[np.ndarray, np.ndarray | None] | None:
    """:func:`_per_id` of an HDF5 file's datasets, through h5py's low-level interface: one
    open and one read per dataset, without the high-level objects (hyperion writes a dataset
    per id: 1e5 ids in about a third of the time). ``read=False``: the ids only (``None`` for
    the rows), from the datasets' shapes and types; ``first``: look at that many datasets only
    (whether a file looks like one, as ``info`` asks: opening a dataset takes ~50 us).

    Examples
    --------
    >>> import h5py, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "h.h5")
    >>> with h5py.File(path, "w") as f:
    ...     f["spk1/a"], f["b"] = np.ones(3, np.float32), np.zeros(3, np.float32)
    >>> with h5py.File(path, "r") as f:
    ...     ids, rows = hdf5_per_id(f)
    >>> ids.tolist(), rows.tolist()
    (['b', 'spk1/a'], [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    """
    import h5py

    names: list[bytes] = []
    h5py.h5o.visit(f.id, lambda name, info: names.append(name)
                   if info.type == h5py.h5o.TYPE_DATASET else None, info=True)  # fmt: skip
    rows, shapes = [], set()
    for name in names[:first]:
        dataset = h5py.h5d.open(f.id, name)
        shape, dtype = dataset.shape, dataset.dtype
        shapes.add(shape)
        if len(shapes) > 1 or not _is_vector(shape, dtype):
            return None  # not one float vector per id: the file's other layouts
        if read:
            row = np.empty(shape, dtype=dtype)
            dataset.read(h5py.h5s.ALL, h5py.h5s.ALL, row)
            rows.append(row.reshape(-1))
    if not shapes:
        return None
    return np.array([n.decode() for n in names], dtype=object), np.stack(rows) if read else None


def open_npydir(path: Path, chunk_rows: int) -> tuple[np.ndarray, da.Array]:
    """A folder of ``ID.npy`` files, one vector each (speechbrain's
    ``extract_speaker_embeddings.py``); an id is the file's path in the folder, without
    ``.npy``."""
    files = sorted(f for f in path.rglob("*.npy") if f.is_file())
    if not files:
        raise ParseError("a folder without .npy files (and not a zarr store)", path=path)
    names, vectors = [], []
    for f in files:
        name = f.relative_to(path).with_suffix("").as_posix()
        try:
            v = _vector(np.load(f, allow_pickle=False), f, name)
        except ValueError as error:
            raise ParseError(f"not a readable .npy vector: {error}", path=f) from None
        if vectors and v.shape != vectors[0].shape:
            raise ParseError(f"dimension {v.shape[0]}, where {files[0].name} has "
                             f"{vectors[0].shape[0]}", path=f)  # fmt: skip
        names.append(name)
        vectors.append(v)
    values = np.stack(vectors)
    return np.asarray(names, dtype=object), da.from_array(values, chunks=(chunk_rows, -1))


def open_zarr(path: Path, chunk_rows: int) -> tuple[np.ndarray, da.Array]:
    import zarr

    try:
        group = zarr.open_group(for_workers(path), mode="r")  # its arrays are read in tasks
        arrays = dict(group.arrays())
    except (FileNotFoundError, ValueError, TypeError) as error:
        raise StoreError(f"{path}: not a readable zarr group ({error})") from None
    names = _as_ids(_member(arrays, "ids", path)[...], path)
    arr = _member(arrays, "embeddings", path)
    _check_matrix(arr.shape, arr.dtype, path, "embeddings")
    where = Path(for_workers(path)) / arr.path  # checked after each block is read, in its task
    values = da.from_zarr(arr, chunks=(chunk_rows, *arr.shape[1:])).map_blocks(
        _unchanged_since, where, file_stamp(where), path, dtype=arr.dtype
    )
    return names, values.reshape(arr.shape[0], arr.shape[-1]) if arr.ndim == 3 else values


def _vector(value: Any, path: Any, name: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 1:
        raise ParseError(f"id {name!r}: expected a vector, got shape {arr.shape}", path=path)
    return arr


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
        from bosaris_dask.embeddings.kaldi import open_ark, open_scp

        opener = {"npz": open_npz, "hdf5": open_hdf5, "zarr": open_zarr, "scp": open_scp,
                  "ark": open_ark, "npydir": open_npydir}[fmt]  # fmt: skip
        names, values = opener(p, chunk_rows)
    if len(names) != values.shape[0]:
        hint = ""
        if fmt == "npy" and len(names) == values.shape[0] + 1:
            hint = " (a header line in the ids file?)"
        if values.shape[1] == len(names):
            hint = (f": the array is {values.shape[0]} x {values.shape[1]}, dimension first "
                    "(as MATLAB writes it)? store it ids x dimension")  # fmt: skip
        raise ParseError(f"{len(names)} ids for {values.shape[0]} embeddings{hint}", path=path)
    if not len(names):  # as a Kaldi file without vectors
        raise ParseError("no embeddings in the file", path=path)
    return names, values, fmt
