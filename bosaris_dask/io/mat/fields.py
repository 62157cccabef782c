"""The fields of a BOSARIS object in a MAT file, and the trial objects they make.

A MAT file holds one struct variable, named as the toolkit names it (``key``, ``ndx``, ``scr``,
``qual``), whose fields are those of the BOSARIS HDF5 layout:

==========  ====================================================================
kind        fields (matrices are models x segments)
==========  ====================================================================
key         ``row_ids``, ``column_ids`` (cell arrays of strings), ``trial_mask``
            (int8: +1 target, -1 non-target, 0 no trial), ``file_format`` ('2.0')
ndx         ``row_ids``, ``column_ids``, ``trial_mask`` (uint8 or logical)
scores      ``row_ids``, ``column_ids``, ``scores`` (double or single),
            ``score_mask`` (uint8 or logical)
quality     ``ids`` (cell array of strings), ``values`` (double, measures x ids)
==========  ====================================================================

Reading is liberal: the ids may also sit in an ``ID`` sub-struct (as in HDF5), and the field
names of the toolkit's own objects are accepted too (``modelset``, ``segset``, ``tar`` and
``non``, ``trialmask``, ``scoremat`` and ``scoremask``).
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr

from bosaris_dask.errors import StoreError, TrialError
from bosaris_dask.progress import compute
from bosaris_dask.trials import (
    key_from_masks,
    kind_of,
    make_key,
    make_ndx,
    make_scores,
    quality_table,
    trial_classes,
    validate,
)
from bosaris_dask.trials.construction import checked_codes

#: The variable name of each kind, as the toolkit saves it.
VARIABLES = {"key": "key", "ndx": "ndx", "scores": "scr", "quality": "qual"}
KINDS = {v: k for k, v in VARIABLES.items()}

_ALIASES = {
    "row_ids": ("row_ids", "modelset"),
    "column_ids": ("column_ids", "segset"),
    "trial_mask": ("trial_mask", "trialmask"),
    "scores": ("scores", "scoremat"),
    "score_mask": ("score_mask", "scoremask"),
}


def _field(fields: dict, name: str) -> Any:
    for alias in _ALIASES.get(name, (name,)):
        if alias in fields:
            return fields[alias]
        sub = fields.get("ID")
        if isinstance(sub, dict) and alias in sub:
            return sub[alias]
    return None


def ids_of(value: Any, where: str) -> np.ndarray:
    """Ids as a 1-D object array of ``str`` (a cell array, a list or a char matrix)."""
    if value is None:
        raise StoreError(f"{where} is missing")
    if isinstance(value, str):
        value = [value]
    flat = np.ravel(np.asarray(value, dtype=object))
    out = []
    for v in flat:
        if isinstance(v, np.ndarray) and v.size == 1:
            v = v.item()
        if not isinstance(v, str):
            raise StoreError(f"{where} holds {type(v).__name__}, not strings")
        out.append(v.rstrip("\x00"))
    ids = np.array(out, dtype=object)
    index = pd.Index(ids)
    if not index.is_unique:
        raise StoreError(f"{where}: duplicate id {index[index.duplicated()][0]!r}")
    return ids


def _matrix(value: Any, shape: tuple[int, int], where: str) -> Any:
    """A numeric matrix of ``shape`` (MAT readers squeeze 1 x n matrices to vectors)."""
    if value is None:
        raise StoreError(f"{where} is missing")
    if not hasattr(value, "dtype") or not hasattr(value, "shape"):
        value = np.asarray(value)
    if value.dtype.kind not in "biuf":
        raise StoreError(f"{where} holds {value.dtype}, expected numbers")
    if tuple(value.shape) != shape:
        if int(np.prod(value.shape)) != shape[0] * shape[1] or len(value.shape) > 2:
            raise StoreError(
                f"{where} has shape {tuple(value.shape)} but there are {shape[0]} row ids and "
                f"{shape[1]} column ids"
            )
        value = value.reshape(shape)
    return value


def guess_kind(fields: dict) -> str:
    """The kind of a struct from its fields."""
    if _field(fields, "scores") is not None:
        return "scores"
    if "values" in fields and "ids" in fields:
        return "quality"
    if "tar" in fields or "file_format" in fields:
        return "key"
    mask = _field(fields, "trial_mask")
    if mask is not None:  # signed: a key (as in HDF5); floats: a key if some are negative
        dtype = np.asarray(mask).dtype if not hasattr(mask, "dtype") else mask.dtype
        if dtype.kind == "f":
            return "key" if np.min(np.asarray(mask), initial=0) < 0 else "ndx"
        return "key" if dtype.kind == "i" else "ndx"
    raise StoreError("the struct has none of the fields of a key, ndx, scores or quality")


def to_object(fields: dict, kind: str, where: str) -> xr.Dataset | xr.DataArray:
    """The trial object (or quality table) of a struct's fields."""
    if kind == "quality":
        ids = ids_of(fields.get("ids"), f"{where}.ids")
        values = np.asarray(fields.get("values"), dtype=np.float64)
        n = len(ids)
        if values.ndim < 2:
            values = values.reshape(-1, n) if values.size % max(n, 1) == 0 else values
        if values.ndim != 2 or values.shape[1] != n:
            raise StoreError(f"{where}.values has shape {values.shape} for {n} ids")
        return quality_table(ids, values.T)
    models = ids_of(_field(fields, "row_ids"), f"{where}.row_ids")
    segments = ids_of(_field(fields, "column_ids"), f"{where}.column_ids")
    shape = (len(models), len(segments))
    try:
        if kind == "scores":
            mask = _matrix(_field(fields, "score_mask"), shape, f"{where}.score_mask") != 0
            score = _matrix(_field(fields, "scores"), shape, f"{where}.scores")
            if score.dtype.kind != "f":
                raise StoreError(f"{where}.scores holds {score.dtype}, expected double or single")
            where = np.where if isinstance(score, np.ndarray) else da.where
            score = where(mask, score, score.dtype.type(0))  # as the HDF5 reader: 0 off the mask
            return make_scores(models, segments, score, mask)
        if kind == "ndx":
            mask = _matrix(_field(fields, "trial_mask"), shape, f"{where}.trial_mask")
            return make_ndx(models, segments, mask != 0)
        if "tar" in fields and _field(fields, "trial_mask") is None:
            tar = _matrix(fields["tar"], shape, f"{where}.tar") != 0
            non = _matrix(fields.get("non"), shape, f"{where}.non") != 0
            return key_from_masks(models, segments, tar, non)
        mask = _matrix(_field(fields, "trial_mask"), shape, f"{where}.trial_mask")
        if isinstance(mask, da.Array):  # a large v7.3 matrix: checked as its blocks are read
            mask = checked_codes(mask, models, segments, where=f"{where}: ")
        return make_key(models, segments, mask)
    except TrialError as exc:
        raise StoreError(f"{where}: {exc}") from exc


def _lazy(x: Any) -> da.Array:
    return x if isinstance(x, da.Array) else da.from_array(np.asarray(x), chunks="auto")


def to_fields(obj: xr.Dataset, *, lazy: bool = False) -> tuple[str, dict[str, Any]]:
    """The variable name and the fields of a trial object or quality table.

    The matrices are computed into memory, or with ``lazy=True`` left as dask arrays (for a
    writer that streams them block by block).
    """
    if isinstance(obj, xr.DataArray):
        ids = np.asarray([str(i) for i in obj[obj.dims[0]].values], dtype=object)
        return VARIABLES["quality"], {
            "ids": ids,
            "values": np.asarray(obj.values, dtype=np.float64).T,
        }
    kind = kind_of(validate(obj))
    if kind not in ("key", "ndx", "scores"):
        raise StoreError(f"a {kind} cannot be written to a MAT file")
    fields: dict[str, Any] = {
        "row_ids": np.asarray([str(i) for i in obj.model.values], dtype=object),
        "column_ids": np.asarray([str(i) for i in obj.segment.values], dtype=object),
    }
    if kind == "key":
        fields["trial_mask"] = trial_classes(obj).astype(np.int8)
        fields["file_format"] = "2.0"
    elif kind == "ndx":
        fields["trial_mask"] = _lazy(obj.trial_mask.data).astype(np.uint8)
    else:
        mask = _lazy(obj.score_mask.data).astype(bool)
        score = _lazy(obj.score.data)
        fields["scores"] = da.where(mask, score, score.dtype.type(0))
        fields["score_mask"] = mask.astype(np.uint8)
    if not lazy:
        names = [k for k, v in fields.items() if isinstance(v, da.Array)]
        values = compute([fields[k] for k in names])
        fields.update(zip(names, (np.asarray(v) for v in values), strict=True))
    return VARIABLES[kind], fields
