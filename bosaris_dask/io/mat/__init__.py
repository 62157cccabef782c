"""MATLAB .mat files of the BOSARIS Toolkit: Key, Ndx, Scores and quality tables.

The toolkit saves an object ``obj`` to ``name.mat`` as one struct variable (``key``, ``ndx``,
``scr`` or ``qual``); the struct's fields are those of the HDF5 layout
(:mod:`bosaris_dask.io.mat.fields`). Both versions of the format are read and written:

- version 5 (:mod:`scipy.io`), the default for writing: in memory, 2 GiB per variable;
- version 7.3 (HDF5 underneath, :mod:`h5py`): large matrices are read lazily; written with
  ``mat_version="7.3"``, streamed block by block.

Writes are atomic. Reading tells the version from the file's header.

Examples
--------
>>> import tempfile, numpy as np
>>> from bosaris_dask.trials import make_key
>>> key = make_key(["m1", "m2"], ["s1", "s2"], np.array([[1, -1], [0, 1]]))
>>> d = tempfile.mkdtemp()
>>> for version in ("5", "7.3"):
...     path = write_mat(key, f"{d}/key{version}.mat", mat_version=version)
...     print(version, read_mat(path).trial_mask.values.tolist())
5 [[1, -1], [0, 1]]
7.3 [[1, -1], [0, 1]]
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import xarray as xr

from bosaris_dask.errors import StoreError, StoreNotFoundError
from bosaris_dask.io.atomic import atomic_path
from bosaris_dask.io.mat.fields import KINDS, VARIABLES, guess_kind, to_fields, to_object
from bosaris_dask.io.mat.v5 import read_v5, write_v5
from bosaris_dask.io.mat.v73 import is_v73, read_v73, write_v73

__all__ = ["read_mat", "write_mat", "read_quality_mat", "write_quality_mat"]


def _variables(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise StoreNotFoundError(f"{path}: no such MAT file")
    try:
        v73 = is_v73(path)
    except OSError as exc:
        raise StoreError(f"{path}: cannot read ({exc})") from exc
    found = read_v73(path) if v73 else read_v5(path)
    return {k: v for k, v in found.items() if not k.startswith("__")}


def _struct(path: Path, variables: dict[str, Any], kind: str | None) -> tuple[str, dict]:
    """The name and fields of the struct holding a ``kind`` (or the only struct)."""
    structs = {k: v for k, v in variables.items() if isinstance(v, dict)}
    if kind is not None and VARIABLES[kind] in structs:
        return VARIABLES[kind], structs[VARIABLES[kind]]
    named = [k for k in structs if k in KINDS and (kind is None or KINDS[k] == kind)]
    if len(named) == 1:
        return named[0], structs[named[0]]
    if len(structs) == 1:
        return next(iter(structs.items()))
    what = f"a {kind}" if kind else "key, ndx, scr or qual"
    raise StoreError(
        f"{path}: expected one struct variable ({what}), found "
        f"{', '.join(sorted(variables)) or 'no variables'}"
    )


def read_mat(path: str | os.PathLike[str], kind: str | None = None) -> xr.Dataset:
    """Read a Key, Ndx or Scores from a MAT file (version 5 or 7.3).

    Parameters
    ----------
    path
        The file.
    kind : {"key", "ndx", "scores"}, optional
        What to expect; by default from the variable's name (``key``, ``ndx``, ``scr``) or, for
        another name, its fields.

    Raises
    ------
    StoreNotFoundError
        When ``path`` does not exist.
    StoreError
        Naming the file and the field: not a MAT file, no such struct, missing fields, ids that
        are not unique strings, shapes that do not match the ids, bad key codes.
    """
    path = Path(path)
    name, fields = _struct(path, _variables(path), kind)
    found = KINDS.get(name) or guess_kind(fields)
    if kind is not None and found != kind:
        raise StoreError(f"{path}: holds a {found}, expected a {kind}")
    if found == "quality":
        raise StoreError(f"{path}: holds a quality table; read it with read_quality")
    return to_object(fields, found, f"{path}: {name}")


def read_quality_mat(path: str | os.PathLike[str]) -> xr.DataArray:
    """Read a quality table (``qual``: ``ids`` and ``values``, measures x ids) from a MAT file."""
    path = Path(path)
    name, fields = _struct(path, _variables(path), "quality")
    return to_object(fields, "quality", f"{path}: {name}")


def write_mat(
    obj: xr.Dataset | xr.DataArray, path: str | os.PathLike[str], *, mat_version: str = "5"
) -> Path:
    """Write a Key, Ndx, Scores (or a quality table) to a MAT file, atomically.

    Parameters
    ----------
    obj
        The object. Version 5 computes its matrices into memory (as MATLAB holds them);
        version 7.3 streams them block by block.
    path
        The file.
    mat_version : {"5", "7.3"}
        Version 5 (:func:`scipy.io.savemat`; 2 GiB per variable) or 7.3 (HDF5).

    Returns
    -------
    Path
        ``path``.
    """
    if mat_version not in ("5", "7.3"):
        raise StoreError(f"{path}: mat_version must be '5' or '7.3', not {mat_version!r}")
    path = Path(path)
    name, fields = to_fields(obj, lazy=mat_version == "7.3")
    with atomic_path(path) as tmp:
        if mat_version == "5":
            with open(tmp, "wb") as f:
                write_v5(f, name, fields, path)
        else:
            write_v73(tmp, name, fields)
    return path


def write_quality_mat(
    table: xr.DataArray, path: str | os.PathLike[str], *, mat_version: str = "5"
) -> Path:
    """Write a quality table as the struct ``qual`` (``ids``, ``values``: measures x ids)."""
    if not isinstance(table, xr.DataArray) or table.ndim != 2:
        raise StoreError(f"{path}: a quality table must be a 2-D DataArray (ids x measures)")
    return write_mat(table, path, mat_version=mat_version)
