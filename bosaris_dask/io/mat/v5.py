"""MAT files of version 5 (MATLAB's default before 7.3), through :mod:`scipy.io`.

A version 5 file is read whole into memory (as MATLAB does); a variable is limited to 2 GiB.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import scipy.io

from bosaris_dask.errors import StoreError

#: The largest variable a version 5 MAT file can hold (its sizes are 32-bit).
V5_LIMIT = 2**31 - 1

_SCIPY_ERRORS = (ValueError, TypeError, OSError, EOFError, KeyError, IndexError, AttributeError)


def read_v5(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The variables of a version 5 MAT file: structs as dicts, cell arrays as lists."""
    try:
        with open(path, "rb") as f:
            return scipy.io.loadmat(f, simplify_cells=True, mat_dtype=False)
    except (*_SCIPY_ERRORS, NotImplementedError, scipy.io.matlab.MatReadError) as exc:
        raise StoreError(f"{path}: not a readable MAT file ({exc})") from exc


def _cell(ids: np.ndarray) -> np.ndarray:
    """A column cell array of strings (as the toolkit's ``union`` builds them)."""
    out = np.empty((len(ids), 1), dtype=object)
    out[:, 0] = list(ids)
    return out


def _as_mat(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.dtype == object:
        return _cell(value)
    if isinstance(value, np.ndarray) and value.dtype == bool:
        return value.astype(np.uint8)
    return value


def write_v5(file: Any, name: str, fields: dict[str, Any], where: Path) -> None:
    """Write one struct variable to an open binary file."""
    size = sum(v.nbytes for v in fields.values() if isinstance(v, np.ndarray) and v.dtype != object)
    if size > V5_LIMIT:
        raise StoreError(
            f"{where}: {size} bytes do not fit a version 5 MAT file (2 GiB per variable); "
            "write a version 7.3 one (mat_version='7.3')"
        )
    struct = {k: _as_mat(v) for k, v in fields.items()}
    scipy.io.savemat(file, {name: struct}, format="5", do_compression=True, oned_as="column")
