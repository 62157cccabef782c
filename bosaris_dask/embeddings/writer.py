"""Writing embedding sets, atomically: ``.npy`` (+ ``.ids``), ``.npz``, HDF5 and zarr.

Useful to turn a Kaldi archive or an ``.npz`` (which are read whole) into a store that is read
lazily by rows. HDF5, zarr and ``.npy`` are written chunk by chunk from the dask array, so the
set never has to fit in memory; an ``.npz`` is written whole. An output appears under its name
only once complete (:mod:`bosaris_dask.io.atomic`); a ``.npy`` and its ``.ids`` appear together.

Examples
--------
>>> import tempfile, numpy as np
>>> from bosaris_dask.embeddings import from_arrays, read
>>> emb = from_arrays(["a", "b"], np.arange(6, dtype=np.float32).reshape(2, 3))
>>> d = tempfile.mkdtemp()
>>> [float(read(write(emb, f"{d}/e.{ext}")).embedding.sum()) for ext in ("npy", "h5", "zarr")]
[15.0, 15.0, 15.0]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dask.array as da
import numpy as np
import xarray as xr

from bosaris_dask._deprecation import renamed_module
from bosaris_dask.embeddings.formats import DEFAULT_ROWS, detect
from bosaris_dask.errors import StoreError
from bosaris_dask.io.atomic import atomic_path, atomic_paths
from bosaris_dask.progress import compute

__all__ = ["write"]


def _values(emb: xr.Dataset, chunk_rows: int) -> da.Array:
    data = emb.embedding.data
    arr = data if isinstance(data, da.Array) else da.from_array(np.asarray(data))
    return arr.rechunk((chunk_rows, -1))


def write(emb: xr.Dataset, path: str | os.PathLike[str], *, chunk_rows: int = DEFAULT_ROWS) -> Path:
    """Write an embedding set in the format of ``path``'s extension (not Kaldi: use kaldiio).

    Returns
    -------
    Path
        ``path``.
    """
    from bosaris_dask.embeddings.prepare import check_embedding_set

    check_embedding_set(emb)
    fmt = detect(path)
    final = Path(path)
    ids = np.asarray([str(i) for i in emb.id.values], dtype=object)
    values = _values(emb, chunk_rows)
    if fmt == "npy":
        with atomic_paths([final, final.with_suffix(".ids")]) as (tmp, tmp_ids):
            out = np.lib.format.open_memmap(tmp, mode="w+", dtype=values.dtype,
                                            shape=values.shape)  # fmt: skip
            compute(da.store(values, out, lock=False, compute=False))
            out.flush()
            del out
            tmp_ids.write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    elif fmt == "npz":
        with atomic_path(final) as tmp, open(tmp, "wb") as f:
            np.savez(f, ids=ids.astype(str), embeddings=compute(values))
    elif fmt == "hdf5":
        import h5py

        with atomic_path(final) as tmp, h5py.File(tmp, "w") as f:
            f.create_dataset("ids", data=ids, dtype=h5py.string_dtype("utf-8"))
            dset = f.create_dataset("embeddings", shape=values.shape, dtype=values.dtype,
                                    chunks=(min(chunk_rows, max(1, values.shape[0])),
                                            max(1, values.shape[1])))  # fmt: skip
            compute(da.store(values, dset, lock=True, compute=False))
    elif fmt == "zarr":
        import zarr

        with atomic_path(final) as tmp:
            group = zarr.open_group(os.fspath(tmp), mode="w")
            group.create_array("ids", shape=ids.shape, dtype=str)[...] = ids
            arr = group.create_array("embeddings", shape=values.shape, dtype=values.dtype,
                                     chunks=(min(chunk_rows, max(1, values.shape[0])),
                                             max(1, values.shape[1])))  # fmt: skip
            compute(da.store(values.rechunk(arr.chunks), arr, lock=False, compute=False))
    else:
        raise StoreError(f"{path}: writing Kaldi {fmt} files is kaldiio's job "
                         "(kaldiio.save_ark); write .npy, .npz, .h5 or .zarr")  # fmt: skip
    return final


# the old name of this module, which is also the name of a function of the package
renamed_module("bosaris_dask.embeddings.write", sys.modules[__name__])
