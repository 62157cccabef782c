"""MATLAB .mat files of the BOSARIS Toolkit, versions 5 (:mod:`scipy.io`) and 7.3 (:mod:`.v73`):
one struct ``key``, ``ndx``, ``scr`` or ``qual`` (fields: ``docs/formats.md``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import pandas as pd
import scipy.io
import xarray as xr

from bosaris_dask.errors import (
    QualityTableError,
    StoreError,
    StoreNotFoundError,
    TrialError,
    quality_object_refused,
)
from bosaris_dask.io.atomic import atomic_path
from bosaris_dask.io.compute import as_dask, first_cell
from bosaris_dask.io.hdf5 import key_signs, quality_from_values
from bosaris_dask.io.mat.v73 import is_v73, read_v73, write_v73
from bosaris_dask.progress import compute
from bosaris_dask.trials import (
    key_from_masks,
    kind_of,
    make_key,
    make_ndx,
    make_scores,
    trial_classes,
    validate,
)
from bosaris_dask.trials.key_codes import checked_codes

__all__ = ["read_mat", "write_mat", "read_quality_mat", "write_quality_mat"]

#: The variable name of each kind, as the toolkit saves it.
VARIABLES = {"key": "key", "ndx": "ndx", "scores": "scr", "quality": "qual"}
KINDS = {v: k for k, v in VARIABLES.items()}
#: The largest variable a version 5 MAT file can hold (its sizes are 32-bit).
V5_LIMIT = 2**31 - 1
_ALIASES = {
    "row_ids": ("row_ids", "modelset"),
    "column_ids": ("column_ids", "segset"),
    "trial_mask": ("trial_mask", "trialmask"),
    "scores": ("scores", "scoremat"),
    "score_mask": ("score_mask", "scoremask"),
}
_SCIPY_ERRORS = (ValueError, TypeError, OSError, EOFError, KeyError, IndexError, AttributeError)


def _field(fields: dict, name: str) -> Any:
    return _located(fields, name, "")[0]


def _located(fields: dict, name: str, where: str) -> tuple[Any, str]:
    """A field by any of its names (``None`` if absent), and ``where.NAME`` as the struct
    names it, for messages."""
    for alias in _ALIASES.get(name, (name,)):
        if alias in fields:
            return fields[alias], f"{where}.{alias}"
        sub = fields.get("ID")
        if isinstance(sub, dict) and alias in sub:
            return sub[alias], f"{where}.ID.{alias}"
    toolkit = _ALIASES.get(name, (name,))[-1]  # a missing field by the toolkit's name
    return None, f"{where}.{toolkit}"


def ids_of(value: Any, where: str) -> np.ndarray:
    """Ids as a 1-D object array of unique ``str`` (from a cell array, a list or a char matrix)."""
    if value is None:
        raise StoreError(f"{where} is missing")
    # a char matrix (numpy str rows) pads its rows with spaces, as MATLAB's char() does
    padded = isinstance(value, np.ndarray) and value.dtype.kind == "U"
    flat = np.ravel(np.asarray([value] if isinstance(value, str) else value, dtype=object))
    out = []
    for v in flat:
        if isinstance(v, np.ndarray) and v.size == 1:
            v = v.item()
        if isinstance(v, np.ndarray) and v.size == 0:  # MATLAB's '' in a cell array
            raise StoreError(f"{where} holds an empty id (entry {len(out) + 1})")
        if not isinstance(v, str):
            raise StoreError(f"{where} holds {type(v).__name__}, not strings")
        out.append(v.rstrip("\x00 ") if padded else v.rstrip("\x00"))
    index = pd.Index(out)
    if not index.is_unique:
        raise StoreError(f"{where}: duplicate id {index[index.duplicated()][0]!r}")
    return np.array(out, dtype=object)


def _matrix(value: Any, shape: tuple[int, int], where: str) -> Any:
    """A numeric matrix of ``shape`` (MAT readers squeeze 1 x n matrices to vectors)."""
    if value is None:
        raise StoreError(f"{where} is missing")
    if not hasattr(value, "dtype") or not hasattr(value, "shape"):
        value = np.asarray(value)
    if value.dtype.kind not in "biuf":
        raise StoreError(f"{where} holds {value.dtype}, expected numbers")
    if tuple(value.shape) != shape:
        squeezed = value.ndim <= 1 and value.size == shape[0] * shape[1] and min(shape) <= 1
        if not squeezed:  # a matrix of another shape is never reshaped: it would mix trials
            turned = " (transposed?)" if tuple(value.shape) == shape[::-1] else ""
            raise StoreError(
                f"{where} has shape {tuple(value.shape)} but there are {shape[0]} row ids and "
                f"{shape[1]} column ids{turned}"
            )
        value = value.reshape(shape)
    return value


def _logical(mask: Any, named: str, models: np.ndarray, segments: np.ndarray) -> Any:
    """A mask as booleans: MATLAB's logical, integers holding only 0 and 1, or floats (nonzero:
    true, as MATLAB's ``logical``); an integer's other value (2) or a NaN (``logical(NaN)`` is
    MATLAB's error too) is a :class:`StoreError` naming the field and the first such trial."""
    if mask.dtype.kind == "b":
        return mask

    def check(block: np.ndarray, block_info: Any = None) -> np.ndarray:
        bad = np.isnan(block) if block.dtype.kind == "f" else (block != 0) & (block != 1)
        _refuse(block, bad, block_info, named, models, segments)
        return block != 0

    if isinstance(mask, da.Array):
        return mask.map_blocks(check, dtype=bool)
    return check(np.asarray(mask))


def _key_codes(mask: Any, named: str, models: np.ndarray, segments: np.ndarray) -> Any:
    """A key's signed ``trial_mask``: floats by their sign past 0.5 (MATLAB's meaning, as the
    HDF5 reader reads them; a NaN is a :class:`StoreError` naming the trial), integers as they
    are (:func:`~bosaris_dask.trials.make_key` checks their codes)."""
    if mask.dtype.kind != "f":
        return mask

    def signs(block: np.ndarray, block_info: Any = None) -> np.ndarray:
        _refuse(block, np.isnan(block), block_info, named, models, segments)
        return key_signs(block)

    if isinstance(mask, da.Array):
        return mask.map_blocks(signs, dtype=np.int8)
    return signs(np.asarray(mask))


def _refuse(block: np.ndarray, bad: np.ndarray, block_info: Any, named: str,
            models: np.ndarray, segments: np.ndarray) -> None:  # fmt: skip
    """A :class:`StoreError` naming the first ``bad`` cell's value and trial, if any."""
    if bad.any():
        i, j = first_cell(bad, block_info)
        raise StoreError(f"{named} holds {block[bad][0].item()} at trial "
                         f"({models[i]}, {segments[j]}), not a mask value")  # fmt: skip


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


def _no_negative(mask: np.ndarray, named: str) -> np.ndarray:
    """``mask`` (a block of an Ndx's trial mask), or a StoreError where it holds a negative
    value: a key's signed codes, whose -1 would read as a trial."""
    if (mask < 0).any():
        raise StoreError(f"{named} holds negative values: a key, not an ndx")
    return mask


def to_object(fields: dict, kind: str, where: str) -> xr.Dataset | xr.DataArray:
    """The trial object (or quality table) of a struct's fields."""
    if kind == "quality":
        ids = ids_of(fields.get("ids"), f"{where}.ids")
        given = fields.get("values")
        if given is None:  # (np.asarray(None, float64) is NaN: "no quality", silently)
            raise StoreError(f"{where}.values is missing")
        values = np.asarray(given)
        if values.dtype.kind not in "biuf":
            raise StoreError(f"{where}.values holds {values.dtype}, expected numbers")
        values = values.astype(np.float64)
        return quality_from_values(ids, values, f"{where}.values")
    models = ids_of(*_located(fields, "row_ids", where))
    segments = ids_of(*_located(fields, "column_ids", where))
    shape = (len(models), len(segments))
    try:
        if kind == "scores":
            value, named = _located(fields, "score_mask", where)
            mask = _logical(_matrix(value, shape, named), named, models, segments)
            value, named = _located(fields, "scores", where)
            score = _matrix(value, shape, named)
            if score.dtype.kind != "f":
                raise StoreError(f"{named} holds {score.dtype}, expected double or single")
            pick = np.where if isinstance(score, np.ndarray) else da.where
            score = pick(mask, score, score.dtype.type(0))  # as the HDF5 reader: 0 off the mask
            return make_scores(models, segments, score, mask)
        if kind == "ndx":
            value, named = _located(fields, "trial_mask", where)
            mask = _matrix(value, shape, named)
            if mask.dtype.kind in "if":
                if isinstance(mask, np.ndarray):
                    _no_negative(mask, named)
                else:  # a large v7.3 matrix: checked as its blocks are read, as a key's codes
                    mask = mask.map_blocks(_no_negative, named, dtype=mask.dtype)
            return make_ndx(models, segments, _logical(mask, named, models, segments))
        if "tar" in fields and _field(fields, "trial_mask") is None:
            tar, non = (
                _logical(_matrix(fields.get(n), shape, f"{where}.{n}"), f"{where}.{n}",
                         models, segments)
                for n in ("tar", "non")
            )  # fmt: skip
            return key_from_masks(models, segments, tar, non)
        value, named = _located(fields, "trial_mask", where)
        mask = _key_codes(_matrix(value, shape, named), named, models, segments)
        if isinstance(mask, da.Array):  # a large v7.3 matrix: checked as its blocks are read
            mask = checked_codes(mask, models, segments, where=f"{where}: ")
        return make_key(models, segments, mask)
    except TrialError as exc:
        raise StoreError(f"{where}: {exc}") from exc


def to_fields(obj: xr.Dataset | xr.DataArray, *, lazy: bool = False) -> tuple[str, dict]:
    """The variable name and fields of a trial object or quality table; the matrices computed, or
    dask arrays with ``lazy=True``.
    """
    if isinstance(obj, xr.DataArray):
        return VARIABLES["quality"], {
            "ids": _ids(obj[obj.dims[0]].values, "ids"),
            "values": np.asarray(obj.values, dtype=np.float64).T,
        }
    kind = kind_of(validate(obj))
    if kind == "quality":
        raise StoreError(quality_object_refused("a MAT file"))
    if kind not in ("key", "ndx", "scores"):
        raise StoreError(f"a {kind} cannot be written to a MAT file")
    fields: dict[str, Any] = {"modelset": _ids(obj.model.values, "modelset"),
                              "segset": _ids(obj.segment.values, "segset")}  # fmt: skip
    if kind == "key":  # the toolkit's Key: logical target and non-target masks
        classes = trial_classes(obj)
        fields.update(tar=classes == 1, non=classes == -1)
    elif kind == "ndx":
        fields["trialmask"] = as_dask(obj.trial_mask.data).astype(bool)
    else:
        mask, score = as_dask(obj.score_mask.data).astype(bool), as_dask(obj.score.data)
        fields.update(scoremat=da.where(mask, score, score.dtype.type(0)), scoremask=mask)
    if not lazy:
        names = [k for k, v in fields.items() if isinstance(v, da.Array)]
        values = compute([fields[k] for k in names])
        fields.update(zip(names, (np.asarray(v) for v in values), strict=True))
    return VARIABLES[kind], fields


def _ids(values: Any, name: str) -> np.ndarray:
    """Ids as an object array of ``str`` for a cell array; NUL characters refused (MATLAB's
    char arrays end at them, or read them as spaces: another id)."""
    ids = np.asarray([str(i) for i in values], dtype=object)
    if any(i == "" for i in ids):  # (refused when read: written, it would not read back)
        raise StoreError(f"an empty id cannot be stored in a MAT file's {name}")
    bad = [i for i in ids if "\x00" in i]
    if bad:
        raise StoreError(f"ids with NUL characters cannot be stored in a MAT file's {name}: "
                         f"{bad[0]!r}")  # fmt: skip
    return ids


def read_v5(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The variables of a version 5 MAT file: structs as dicts, cell arrays as lists."""
    try:
        with open(path, "rb") as f:
            variables = scipy.io.loadmat(f, simplify_cells=True, mat_dtype=False)
        if any(_scalars(v) for v in variables.values()):  # 1 x 1 matrices: their types back
            with open(path, "rb") as f:
                raw = scipy.io.loadmat(f, struct_as_record=False, mat_dtype=False)
            for name, fields in variables.items():
                for field in _scalars(fields):
                    fields[field] = getattr(raw[name][0, 0], field)
        return variables
    except (*_SCIPY_ERRORS, NotImplementedError, scipy.io.matlab.MatReadError) as exc:
        raise StoreError(f"{path}: not a readable MAT file ({exc}){_text_hint(path)}") from exc


def _text_hint(path: Any) -> str:
    """A hint for a text file named ``.mat`` (scipy's message then says nothing of it)."""
    with open(path, "rb") as f:
        head = f.read(512)
    text = b"\n" in head and not head.startswith(b"MATLAB") and b"\0" not in head
    return ": it holds text lines, not a MAT file; name it .txt" if text else ""


def _scalars(fields: Any) -> list[str]:
    """The fields of a struct that ``simplify_cells`` turned into Python numbers (its 1 x 1
    matrices: a single's or a logical's type lost)."""
    if not isinstance(fields, dict):
        return []
    return [name for name, value in fields.items() if isinstance(value, (bool, int, float))]


def _as_mat(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.dtype == object:
        cell = np.empty((len(value), 1), dtype=object)  # a column cell array of strings
        cell[:, 0] = list(value)
        return cell
    return value  # (a bool matrix is written as a MATLAB logical one)


def write_v5(file: Any, name: str, fields: dict[str, Any], where: Path) -> None:
    """Write one struct variable to an open binary file."""
    size = sum(v.nbytes for v in fields.values() if isinstance(v, np.ndarray) and v.dtype != object)
    if size > V5_LIMIT:
        raise StoreError(
            f"{where}: {size} bytes do not fit a version 5 MAT file (2 GiB per variable); "
            "write a version 7.3 one (mat_version='7.3'; --mat-version 7.3)"
        )
    struct = {k: _as_mat(v) for k, v in fields.items()}
    scipy.io.savemat(file, {name: struct}, format="5", do_compression=True, oned_as="column")


def _struct(path: Path, kind: str | None) -> tuple[str, dict]:
    """The name and fields of the struct holding a ``kind`` (or the only struct)."""
    if not path.exists():
        raise StoreNotFoundError(f"{path}: no such MAT file")
    try:
        v73 = is_v73(path)
    except OSError as exc:
        raise StoreError(f"{path}: cannot read ({exc})") from exc
    found = read_v73(path) if v73 else read_v5(path)
    variables = {k: v for k, v in found.items() if not k.startswith("__")}
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
        By default from the variable's name (``key``, ``ndx``, ``scr``) or its fields.

    Raises
    ------
    StoreError
        Naming the file and the field: not a MAT file, no such struct, missing fields, ids that
        are not unique strings, shapes that do not match the ids, bad key codes.

    Examples
    --------
    >>> import tempfile, scipy.io
    >>> path = tempfile.mkdtemp() + "/ndx.mat"
    >>> ids = {"row_ids": ["m1"], "column_ids": ["s1", "s2"]}
    >>> scipy.io.savemat(path, {"ndx": {**ids, "trial_mask": [[1, 0]]}})
    >>> read_mat(path).trial_mask.values.tolist()
    [[True, False]]
    """
    path = Path(path)
    name, fields = _struct(path, kind)
    found = KINDS.get(name) or guess_kind(fields)
    if kind == "ndx" and found == "key" and "tar" not in fields and (
            "file_format" not in fields):  # fmt: skip
        # an Ndx written with a signed mask (SIDEKIT's int8), or an Ndx's logical trialmask
        # in a struct named key (no tar/non: not the toolkit's Key): 0/1, checked below
        found = kind
    if found == "quality":
        raise QualityTableError.of(path)
    if kind is not None and found != kind:
        raise StoreError.wrong_kind(path, found, kind)
    return to_object(fields, found, f"{path}: {name}")


def read_quality_mat(path: str | os.PathLike[str]) -> xr.DataArray:
    """Read a quality table (struct ``qual``: ``ids``, ``values`` measures x ids)."""
    path = Path(path)
    name, fields = _struct(path, "quality")
    return to_object(fields, "quality", f"{path}: {name}")


def write_mat(
    obj: xr.Dataset | xr.DataArray, path: str | os.PathLike[str], *, mat_version: str = "5"
) -> Path:
    """Write a Key, Ndx, Scores (or a quality table) to a MAT file, atomically.

    Parameters
    ----------
    obj
        The object.
    path
        The file.
    mat_version : {"5", "7.3"}
        Version 5 (:func:`scipy.io.savemat`, in memory, 2 GiB per variable) or 7.3 (HDF5,
        streamed block by block).

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
    if mat_version not in ("5", "7.3"):
        raise StoreError(f"{path}: mat_version must be '5' or '7.3', not {mat_version!r}")
    path = Path(path)
    try:
        name, fields = to_fields(obj, lazy=mat_version == "7.3")
    except StoreError as exc:  # what cannot be stored, said with the file
        raise StoreError(f"{path}: {exc}") from None
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
    if table.shape[0] == 0 and str(mat_version) == "5":  # (it would not read back)
        raise StoreError(
            f"{path}: a quality table of no ids cannot be stored in a version 5 .mat file (its "
            "readers drop an empty matrix's shape, and with it the number of measures); write "
            "version 7.3 (mat_version='7.3'; --mat-version 7.3), zarr or HDF5"
        )
    return write_mat(table, path, mat_version=mat_version)
