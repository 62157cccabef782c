"""Preparing one side of the trials: select the rows, check them, center and normalize.

A *prepared side* is the float64 matrix whose rows enter the block products: for the cosine
back-end ``(x - c) / ||x - c||`` (``c`` the centering vector, or 0), for the dot back-end
``x - c``. It is built lazily, row by row, from the embedding file; only the per-row norms are
computed upfront, in the same pass that checks the values.

Multi-session enrolment (a model map): each model's embedding is the mean of its segments'
*prepared* rows (so with the cosine back-end each segment is centered and length-normalized
first, and weighs the same whatever its norm), and the mean is then length-normalized again
(cosine) or kept as it is (dot).

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.embeddings.store import from_arrays
>>> emb = from_arrays(["a", "b"], np.array([[3.0, 4.0], [0.0, 2.0]]), source="toy")
>>> side = prepare(emb, ["b", "a"], backend="cosine")
>>> side.ids.tolist(), side.values.compute().tolist()
(['b', 'a'], [[0.0, 1.0], [0.6, 0.8]])
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr

from bosaris_dask.embeddings.model_map import as_model_map, model_rows
from bosaris_dask.embeddings.store import euclidean_norms, from_arrays, read, unit_rows
from bosaris_dask.errors import OptionError, ScoreError, TrialError
from bosaris_dask.progress import compute

__all__ = ["Side", "BACKENDS", "prepare", "prepare_models", "resolve_center", "estimate_center"]

BACKENDS = ("cosine", "dot")


@dataclass(frozen=True)
class Side:
    """The prepared rows of one side: ids, lazy float64 values, the file they came from, and
    the largest norm of a row (1 with the cosine back-end)."""

    ids: np.ndarray
    values: da.Array
    source: str
    max_norm: float = 1.0


_F32_MAX, _F32_TINY = float(np.finfo(np.float32).max), float(np.finfo(np.float32).tiny)


def check_dot_range(a: Side, b: Side) -> None:
    """Refuse two dot-back-end sides whose products cannot be float32 scores: beyond float32's
    largest (they would be infinite) or all below its smallest normal number (0, or a few
    digits). Bounded by the product of the sides' largest norms (Cauchy-Schwarz).

    Examples
    --------
    >>> big = Side(np.array(["a"]), da.zeros((1, 2)), "e.npz", max_norm=1e20)
    >>> check_dot_range(big, big)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.ScoreError: dot products of e.npz and e.npz can reach 1e+40 (the ...
    """
    reach = a.max_norm * b.max_norm
    if reach > _F32_MAX:
        raise ScoreError(f"dot products of {a.source} and {b.source} can reach {reach:.3g} (the "
                         f"product of their largest norms), beyond float32 scores "
                         f"({_F32_MAX:.2g}): they would be infinite; scale the embeddings, or use "
                         "the cosine back-end")  # fmt: skip
    if 0 < reach < _F32_TINY:
        raise ScoreError(f"dot products of {a.source} and {b.source} are all below "
                         f"{reach:.3g}, under float32's smallest normal number "
                         f"({_F32_TINY:.2g}): they would be 0 or lose their digits; scale the "
                         "embeddings, or use the cosine back-end")  # fmt: skip


def _load(emb: xr.Dataset | str | os.PathLike[str]) -> xr.Dataset:
    return check_embedding_set(emb) if isinstance(emb, xr.Dataset) else read(emb)


def check_embedding_set(emb: Any) -> xr.Dataset:
    """``emb``, or a :class:`TrialError` saying that it is no embedding set (``id`` and
    ``embedding``, as :func:`~bosaris_dask.embeddings.read` and ``from_arrays`` make them).

    Examples
    --------
    >>> from bosaris_dask.trials import make_key
    >>> check_embedding_set(make_key(["m"], ["s"], [[1]]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.TrialError: expected an embedding set (...), got a trial object (key)
    """
    if isinstance(emb, xr.Dataset) and "embedding" in emb and "id" in emb.coords:
        return emb
    kind = emb.attrs.get("bosaris_kind") if isinstance(emb, xr.Dataset) else None
    shown = (f"a trial object ({kind})" if kind else "a Dataset without 'id' and 'embedding'"
             if isinstance(emb, xr.Dataset) else f"a {type(emb).__name__}")  # fmt: skip
    raise TrialError(f"expected an embedding set (embeddings.read or from_arrays), got {shown}")


def _source(emb: xr.Dataset) -> str:
    return str(emb.attrs.get("source", "<array>"))


def check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise OptionError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")


def estimate_center(emb: xr.Dataset | str | os.PathLike[str]) -> np.ndarray:
    """The mean vector (float64) of an embedding set, to center others with.

    Raises
    ------
    ScoreError
        An embedding with NaN or infinite values (named).
    """
    emb = _load(emb)
    x = emb.embedding.data.astype(np.float64)
    finite, total = compute((da.isfinite(x).all(axis=1), x.sum(axis=0)), progress=None)
    _raise_non_finite(finite, emb.id.values, _source(emb))
    if not emb.sizes["id"]:  # no mean to center with (it centered nothing)
        raise ScoreError(f"{_source(emb)}: no embeddings to estimate a centering vector from")
    return total / emb.sizes["id"]


def resolve_center(center: Any) -> np.ndarray | None:
    """A centering vector from ``None``, a 1-D array, an embedding set (its mean is estimated),
    or a path: a ``.npy`` file holding a 1-D vector, a Kaldi ``.vec`` (``ivector-mean``'s
    ``mean.vec``, binary or text), or any embedding file (its mean).
    """
    if center is None:
        return None
    if isinstance(center, xr.Dataset):
        return estimate_center(center)
    if isinstance(center, str | os.PathLike):
        path = Path(center)
        if path.suffix.lower() == ".vec" and path.is_file():  # Kaldi's ivector-mean output
            from bosaris_dask.embeddings.kaldi import kaldi_vector

            return _vector(kaldi_vector(path), str(path))
        if path.suffix.lower() == ".npy" and path.is_file():
            vec = np.load(path, mmap_mode="r")
            if vec.ndim == 1:
                return _vector(vec, str(path))
            if vec.ndim == 2:  # rows whose mean is wanted: no ids needed
                ids = np.arange(vec.shape[0]).astype(str)
                return estimate_center(from_arrays(ids, da.from_array(vec, chunks=(8192, -1)),
                                                   source=str(path)))  # fmt: skip
        return estimate_center(path)
    return _vector(center, "center")


def _vector(values: Any, source: str) -> np.ndarray:
    vec = np.asarray(values, dtype=np.float64)
    if vec.ndim != 1:
        raise OptionError(f"{source}: a centering vector is 1-D, got shape {vec.shape}")
    if not np.isfinite(vec).all():
        raise OptionError(f"{source}: the centering vector holds NaN or infinite values")
    return vec


def _raise_non_finite(finite: np.ndarray, ids: np.ndarray, source: str) -> None:
    if not finite.all():
        bad = np.flatnonzero(~finite)
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise ScoreError(f"{source}: id {ids[bad[0]]!r} has NaN or infinite values{more}")


def _raise_zero_norm(norms: np.ndarray, ids: np.ndarray, source: str, centered: bool) -> None:
    zero = norms == 0
    if zero.any():
        bad = np.flatnonzero(zero)
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        after = " after centering" if centered else ""
        raise ScoreError(f"{source}: id {ids[bad[0]]!r} has zero norm{after}: its cosine is "
                         f"undefined{more}")  # fmt: skip


def _check_dimension(emb: xr.Dataset, center: np.ndarray | None) -> None:
    if center is not None and center.shape[0] != emb.sizes["component"]:
        raise TrialError(f"{_source(emb)}: embeddings of dimension {emb.sizes['component']}, "
                         f"centering vector of dimension {center.shape[0]}")  # fmt: skip


def _rows(emb: xr.Dataset, ids: Sequence[Any], what: str) -> np.ndarray:
    wanted = np.asarray([str(i) for i in ids], dtype=object)
    rows = emb.indexes["id"].get_indexer(wanted)
    if (rows < 0).any():
        bad = np.flatnonzero(rows < 0)
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise TrialError(f"{what} id {wanted[bad[0]]!r} has no embedding in {_source(emb)}{more}"
                         f"{_id_hint(str(wanted[bad[0]]), emb.indexes['id'])}")  # fmt: skip
    return rows


def _id_hint(wanted: str, have: Any) -> str:
    """Why an id may be missing where the file holds it under another spelling: a pandas index
    column written with it (``0,spk1-a``), or numbers stored as floats (``1.0`` for ``1``).

    Examples
    --------
    >>> import pandas as pd
    >>> print(_id_hint("spk1-a", pd.Index(["0,spk1-a", "1,spk2-b"]))[:48])
    ; the file has it as '0,spk1-a': an ids file wri
    >>> print(_id_hint("7", pd.Index(["7.0", "8.0"]))[:40])
    ; the file has it as '7.0': numbers stor
    """
    for spelled in have[:100_000]:
        spelled = str(spelled)
        if spelled.partition(",")[2] == wanted and spelled.partition(",")[0].isdigit():
            return (f"; the file has it as {spelled!r}: an ids file written with its index "
                    "(pandas' to_csv)? write the ids alone, one per line")  # fmt: skip
        if spelled.endswith(".0") and spelled[:-2] == wanted:
            return (f"; the file has it as {spelled!r}: numbers stored as floats? store the ids "
                    "as strings")  # fmt: skip
    return ""


def _prepare_rows(x: np.ndarray, center: np.ndarray | None, unit: bool):
    out = x.astype(np.float64)  # a copy: the file's rows are never modified
    if center is not None:
        out -= center
    return unit_rows(out) if unit else out


def prepare(
    emb: xr.Dataset | str | os.PathLike[str],
    ids: Sequence[Any] | None = None,
    *,
    backend: str = "cosine",
    center: np.ndarray | None = None,
    chunk_rows: int = 4096,
    what: str = "key",
) -> Side:
    """The prepared rows of ``ids`` (default: all, in file order), lazily, in ``chunk_rows``.

    Reads the selected rows once to check them and compute their norms.

    Raises
    ------
    TrialError
        An id without embedding (``what`` names the side, e.g. ``"key segment"``), or a centering
        vector of another dimension.
    ScoreError
        NaN or infinity in a selected embedding; with ``backend="cosine"``, a zero vector.
    """
    check_backend(backend)
    emb = _load(emb)
    _check_dimension(emb, center)
    source = _source(emb)
    raw = emb.embedding.data
    if ids is None:
        names = emb.id.values.astype(object)
    else:
        rows = _rows(emb, ids, what)
        names = emb.id.values[rows].astype(object)
        if not np.array_equal(rows, np.arange(emb.sizes["id"])):
            raw = raw[rows]
    raw = raw.rechunk((chunk_rows, -1))
    x = raw.astype(np.float64)
    if center is not None:
        x = x - center
    norms = x.map_blocks(euclidean_norms, drop_axis=1, dtype=np.float64, meta=np.empty(0))
    finite, norms = compute((da.isfinite(raw).all(axis=1), norms), progress=None)
    _raise_non_finite(finite, names, source)
    if not np.isfinite(norms).all():  # finite rows whose norm (after centering) overflows
        where = " after centering" if center is not None else ""
        bad = names[np.flatnonzero(~np.isfinite(norms))[0]]
        raise ScoreError(f"{source}: id {bad!r} has a norm beyond float64{where}")
    if backend == "dot":
        values = raw.map_blocks(_prepare_rows, center, False, dtype=np.float64)
        return Side(names, values, source, float(norms.max(initial=0.0)))
    _raise_zero_norm(norms, names, source, center is not None)
    values = raw.map_blocks(_prepare_rows, center, True, dtype=np.float64)
    return Side(names, values, source)


def prepare_models(
    emb: xr.Dataset | str | os.PathLike[str],
    models: Any,
    ids: Sequence[Any] | None = None,
    *,
    backend: str = "cosine",
    center: np.ndarray | None = None,
    chunk_rows: int = 4096,
) -> Side:
    """The prepared model embeddings of a model map (see the module docstring), for ``ids``.

    The model embeddings are computed in memory (one row per model).

    Raises
    ------
    TrialError
        A map segment without embedding (naming the map's line), a key model not in the map.
    ScoreError
        Bad segment embeddings (as :func:`prepare`); with the cosine back-end, a model whose
        mean embedding is zero.
    """
    check_backend(backend)
    emb = _load(emb)
    table = as_model_map(models)
    names, rows, starts = model_rows(table, emb.indexes["id"], _source(emb))
    used = np.unique(rows)
    segs = prepare(emb, emb.id.values[used], backend=backend, center=center, what="segment")
    local = np.searchsorted(used, rows)
    prepared = np.asarray(compute(segs.values, progress=None))[local]
    means = np.add.reduceat(prepared, starts, axis=0) / np.diff(np.append(starts, len(rows)))[
        :, None]  # fmt: skip
    where = f"{_source(emb)} (models of {table.attrs.get('source', '<model map>')})"
    norms = euclidean_norms(means)
    if not np.isfinite(norms).all():  # dot: a model's mean beyond float64
        raise ScoreError(f"{where}: model {names[np.flatnonzero(~np.isfinite(norms))[0]]!r} has a "
                         "mean embedding whose norm is beyond float64")  # fmt: skip
    if backend == "cosine":
        _raise_zero_norm(norms, names, where, False)
        means = unit_rows(means)
    if ids is not None:
        index = pd.Index(names)
        sel = index.get_indexer(np.asarray([str(i) for i in ids], dtype=object))
        if (sel < 0).any():
            bad = np.asarray(ids)[sel < 0][0]
            raise TrialError(f"key model id {str(bad)!r} is not in the model map "
                             f"{table.attrs.get('source', '<model map>')}")  # fmt: skip
        names, means, norms = names[sel], means[sel], norms[sel]
    top = 1.0 if backend == "cosine" else float(norms.max(initial=0.0))
    return Side(names, da.from_array(means, chunks=(chunk_rows, -1)), where, top)
