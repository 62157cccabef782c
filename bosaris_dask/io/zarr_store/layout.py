"""The layout of a zarr store: its version, the variables of each kind, the labels of a key.

A key derived from labels is stored as its labels only (``model_label``, ``segment_label``),
with one type for both sides and ``*_missing`` arrays where labels are missing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from bosaris_dask.errors import StoreError
from bosaris_dask.trials import DIMS

#: Version of the layout written by :func:`write_zarr`.
STORE_VERSION = 1


#: The data variables of each kind and the dtypes a store may hold for them.
_VARIABLES: dict[str, dict[str, tuple[np.dtype, ...]]] = {
    "ndx": {"trial_mask": (np.dtype(bool),)},
    "key": {"trial_mask": (np.dtype(np.int8),)},
    "scores": {
        "score": (np.dtype(np.float32), np.dtype(np.float64)),
        "score_mask": (np.dtype(bool),),
    },
}


_MASKS = {"ndx": "trial_mask", "scores": "score_mask"}  # masks that may be omitted when all true


_LABELS = ("model_label", "segment_label")


def _label_kind(present: np.ndarray) -> str:
    if all(isinstance(v, str) for v in present):
        return "str"
    if all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in present):
        return "int"
    if all(isinstance(v, int | float | np.integer | np.floating) for v in present):
        return "float"
    return "mixed"


def _encode_labels(model_labels: Any, segment_labels: Any) -> dict[str, tuple]:
    """Coordinates storing the labels of a label key.

    Both sides are stored with one type (str, int64 or float64, chosen over the union so that
    equal labels stay equal), plus a bool ``*_missing`` array where some labels are missing.
    Labels of mixed types are stored as strings if that merges no two distinct labels.
    """
    sides = {"model_label": model_labels, "segment_label": segment_labels}
    labels = {k: np.asarray(v, dtype=object) for k, v in sides.items()}
    missing = {k: np.asarray(pd.isna(v), dtype=bool) for k, v in labels.items()}
    present = np.concatenate([labels[k][~missing[k]] for k in sides])
    kind = _label_kind(present)
    if kind == "mixed":
        as_str = np.array([str(v) for v in present], dtype=object)
        if not np.array_equal(pd.factorize(present)[0], pd.factorize(as_str)[0]):
            raise StoreError("labels of mixed types that collide as strings cannot be stored")
    out: dict[str, tuple] = {}
    for name, dim in zip(_LABELS, DIMS, strict=True):
        lab, miss = labels[name], missing[name]
        if kind == "int":
            values = np.where(miss, 0, lab).astype(np.int64)
        elif kind == "float":
            values = np.where(miss, np.nan, lab).astype(np.float64)
        else:
            values = np.array([str(v) for v in np.where(miss, "", lab)], dtype=object)
        out[name] = (dim, values)
        if miss.any():
            out[f"{name}_missing"] = (dim, miss)
    return out


def _decode_labels(ds: xr.Dataset, name: str) -> np.ndarray:
    values = np.asarray(ds[name].values).astype(object)
    if f"{name}_missing" in ds.variables:
        values[np.asarray(ds[f"{name}_missing"].values, dtype=bool)] = None
    elif values.dtype == object and ds[name].dtype.kind == "f":
        values[pd.isna(values)] = None
    return values
