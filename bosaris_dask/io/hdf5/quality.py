"""Quality tables (BOSARIS ``Seg_Quality``) in HDF5: ``/values`` (q measures x n ids), ``/ids``."""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np
import xarray as xr

from bosaris_dask.errors import StoreError, StoreNotFoundError
from bosaris_dask.io.atomic import atomic_path
from bosaris_dask.io.hdf5.read import _read_ids
from bosaris_dask.io.hdf5.safety import _H5_ERRORS, _dataset
from bosaris_dask.io.hdf5.write import _LIBVER, _write_strings
from bosaris_dask.trials import quality_table


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
