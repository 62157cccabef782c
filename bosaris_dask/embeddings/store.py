"""Embedding sets as labelled xarray objects: :func:`read`, :func:`from_arrays`, :func:`info`.

An embedding set is an :class:`xarray.Dataset` with one data variable, ``embedding``, of
dimensions ``("id", "component")``: one row per embedding, one column per component of the
vectors. The ``id`` coordinate holds the ids (``str``, unique); ``attrs["source"]`` names the
file (used in every error message) and ``attrs["format"]`` its format. The values are a dask
array read from the file chunk by chunk, so opening a set reads only its ids.

Examples
--------
>>> import numpy as np
>>> emb = from_arrays(["a", "b", "c"], np.eye(3, 4, dtype=np.float32), source="toy")
>>> dict(emb.sizes), emb.embedding.dtype
({'id': 3, 'component': 4}, dtype('float32'))
>>> info(emb)["count"], info(emb)["dimension"]
(3, 4)
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr

from bosaris_dask.embeddings.formats import DEFAULT_ROWS, open_file
from bosaris_dask.errors import ParseError, TrialError
from bosaris_dask.progress import compute

__all__ = ["read", "from_arrays", "info", "euclidean_norms", "unit_rows", "EMBEDDING_DIMS"]

#: Dimensions of the ``embedding`` variable: one row per id, one column per vector component.
EMBEDDING_DIMS = ("id", "component")


def _unique(ids: np.ndarray, source: str) -> None:
    index = pd.Index(ids)
    if not index.is_unique:
        dup = index[index.duplicated()][0]
        raise TrialError(f"{source}: duplicate id {dup!r}")


def _dataset(ids: np.ndarray, values: da.Array, source: str, fmt: str) -> xr.Dataset:
    _unique(ids, source)
    return xr.Dataset(
        {"embedding": (EMBEDDING_DIMS, values)},
        coords={"id": ids},
        attrs={"source": source, "format": fmt},
    )


def from_arrays(
    ids: Iterable[Any], values: Any, *, source: str = "<array>", chunk_rows: int = DEFAULT_ROWS
) -> xr.Dataset:
    """An embedding set from ids and a 2-D ``(n_ids, dimension)`` array (numpy or dask).

    ``source`` names the set in error messages.
    """
    names = np.asarray([str(i) for i in ids], dtype=object)
    arr = values if isinstance(values, da.Array) else da.from_array(
        np.asarray(values), chunks=(chunk_rows, -1))  # fmt: skip
    if arr.ndim != 2 or arr.shape[0] != len(names):
        raise ParseError(f"{len(names)} ids for embeddings of shape {arr.shape}", path=source)
    if arr.dtype.kind not in "fiu":
        raise ParseError(f"embeddings must be real numbers, got dtype {arr.dtype}", path=source)
    return _dataset(names, arr, source, "array")


def read(
    path: str | os.PathLike[str], *, ids: Any = None, chunk_rows: int = DEFAULT_ROWS
) -> xr.Dataset:
    """Open an embedding file lazily (``.npy`` + ids, ``.npz``, HDF5, zarr, Kaldi scp/ark).

    Parameters
    ----------
    path
        The file or store; the format follows the extension (see
        :mod:`bosaris_dask.embeddings.formats` for each layout).
    ids
        For ``.npy`` only: a text file of ids (one per line) or a list of ids; by default
        ``NAME.ids`` or ``NAME.txt`` beside ``NAME.npy``.
    chunk_rows
        Embeddings per dask chunk.

    Returns
    -------
    xarray.Dataset
        ``embedding`` over ``("id", "component")`` (see the module docstring).

    Raises
    ------
    StoreNotFoundError
        No such file (or no ids file for a ``.npy``).
    ParseError
        A layout that is not ids + one 2-D array of real numbers; ids and rows that differ in
        number; a Kaldi vector of another dimension than the first.
    TrialError
        Duplicate ids (the first is named).

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> path = tempfile.mkdtemp() + "/emb.npz"
    >>> np.savez(path, ids=np.array(["u1", "u2"]), embeddings=np.ones((2, 3), np.float32))
    >>> read(path).id.values.tolist()
    ['u1', 'u2']
    """
    names, values, fmt = open_file(path, ids=ids, chunk_rows=chunk_rows)
    return _dataset(names, values, os.fspath(path), fmt)


def euclidean_norms(x: np.ndarray) -> np.ndarray:
    """Each row's Euclidean norm, ``sqrt((x * x).sum(axis=1))`` scaled by a power of two so
    that no square overflows or falls to a subnormal: the same bits wherever the unscaled sum is
    exact to its last place (scaling by ``2**e`` commutes with every rounding in between), and
    the right value where it is not (rows of 1e160 had an infinite norm, so scores of 0; rows
    of 1e-160 lost digits to subnormal squares).

    >>> x = np.array([[3.0, 4.0], [3.0, 4.0], [0.0, 0.0]]) * [[2.0**600], [2.0**-560], [1.0]]
    >>> (euclidean_norms(x) == [5 * 2.0**600, 5 * 2.0**-560, 0.0]).tolist()
    [True, True, True]
    >>> with np.errstate(over="ignore", under="ignore"):
    ...     np.sqrt((x * x).sum(axis=1)).tolist()  # unscaled
    [inf, 0.0, 0.0]
    """
    y, e = _scaled_rows(x)
    with np.errstate(over="ignore"):  # a norm beyond float64 is inf, for the callers to name
        return np.ldexp(np.sqrt((y * y).sum(axis=1)), e)


def _scaled_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x`` with each row scaled by the power of two ``2**-e`` that brings its largest
    magnitude into ``[0.5, 1)``, exactly, and ``e``."""
    _, e = np.frexp(np.abs(x).max(axis=1, initial=0.0))
    return np.ldexp(x, -e[:, None]), e  # exact: only the exponents change


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Each row of ``x`` divided by its Euclidean norm, in the scaled rows of
    :func:`euclidean_norms`: the bits of ``x / euclidean_norms(x)[:, None]`` wherever neither
    is subnormal, and unit rows where they are (a norm of 1e-320 kept 11 bits, and the rows
    divided by it were 1e-4 off unit length). Zero rows give NaN (callers refuse them first).

    >>> x = np.array([[3.0, 4.0], [3e-320, 4e-320]])
    >>> unit_rows(x).tolist()
    [[0.6, 0.8], [0.6, 0.8]]
    """
    y, _ = _scaled_rows(x)
    with np.errstate(invalid="ignore"):
        return y / np.sqrt((y * y).sum(axis=1))[:, None]


def info(emb: xr.Dataset) -> dict[str, Any]:
    """Count, dimension, dtype and a summary of the vector norms (one pass over the values).

    Returns
    -------
    dict
        ``source``, ``format``, ``count``, ``dimension``, ``dtype``, ``norm_min``,
        ``norm_mean``, ``norm_max`` (float64 Euclidean norms of the finite rows) and
        ``non_finite`` (rows holding NaN or infinity).

    Examples
    --------
    >>> emb = from_arrays(["a", "b"], np.array([[3.0, 4.0], [0.0, 1.0]]))
    >>> d = info(emb)
    >>> d["norm_min"], d["norm_max"], d["non_finite"]
    (1.0, 5.0, 0)
    """
    x = emb.embedding.data.astype(np.float64)
    finite = da.isfinite(x).all(axis=1)
    norms = x.map_blocks(euclidean_norms, drop_axis=1, dtype=np.float64, meta=np.empty(0))
    finite, norms = compute((finite, norms), progress=None)
    good = norms[finite]
    return {
        "source": emb.attrs.get("source", "<array>"),
        "format": emb.attrs.get("format", "array"),
        "count": int(emb.sizes["id"]),
        "dimension": int(emb.sizes["component"]),
        "dtype": str(emb.embedding.dtype),
        "norm_min": float(good.min()) if good.size else float("nan"),
        "norm_mean": float(good.mean()) if good.size else float("nan"),
        "norm_max": float(good.max()) if good.size else float("nan"),
        "non_finite": int((~finite).sum()),
    }
