"""Safety checks of the HDF5 reader: a file is read from itself only, in standard number types.

Links are resolved here without being followed (external and user-defined links are refused,
soft links resolved inside the file), datasets whose data live outside the file (external raw
storage, virtual datasets) are refused, matrices must hold little-endian IEEE 754 floats or
standard integers, and integer masks only the values their kind allows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np

from bosaris_dask.errors import StoreError

#: What h5py raises when a file's metadata or data cannot be read (corrupt or truncated files).
_H5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError)


#: The number types matrices may hold (see _standard_type).
_STANDARD_TYPES = (h5py.h5t.IEEE_F32LE, h5py.h5t.IEEE_F64LE) + tuple(
    getattr(h5py.h5t, f"STD_{sign}{bits}{order}")
    for sign in "IU"
    for bits in (8, 16, 32, 64)
    for order in ("LE", "BE")
)


#: Soft links followed in a row before a path is refused (a cycle).
_MAX_SOFT_LINKS = 16


def _resolve(path: Any, f: h5py.File, name: str, hops: int = 0) -> str | None:
    """The in-file path that ``name`` leads to through hard and soft links; None if absent.

    Each link is inspected without being followed (HDF5 would open the file an external link
    names just to test that it exists), soft links are resolved here, component by component,
    so the returned path holds only hard links: opening it reads nothing outside ``f``.

    Raises
    ------
    StoreError
        For an external link (a path to another file, never followed), a user-defined link, a
        soft-link cycle, or link metadata that cannot be read (a corrupt file).
    """
    where = ""
    for part in (p for p in name.split("/") if p not in ("", ".")):
        here = f"{where}/{part}"
        try:
            if where and not isinstance(f.get(where), h5py.Group):
                return None  # a component is a dataset: nothing below it
            if not f.id.links.exists(here.encode()):
                return None
            info = f.id.links.get_info(here.encode())
            target = f.id.links.get_val(here.encode()) if info.type != h5py.h5l.TYPE_HARD else None
        except _H5_ERRORS as exc:
            raise StoreError(f"{path}: cannot read the link {here} ({exc})") from exc
        if info.type == h5py.h5l.TYPE_EXTERNAL:
            file, inner = (t.decode("utf-8", "replace") for t in target)
            raise StoreError(
                f"{path}: {here} is an external link to {file!r}:{inner}; links to other files "
                "are not followed"
            )
        if info.type == h5py.h5l.TYPE_SOFT:
            if hops >= _MAX_SOFT_LINKS:
                raise StoreError(f"{path}: more than {_MAX_SOFT_LINKS} soft links at {here}")
            link = target.decode("utf-8", "replace")
            resolved = _resolve(
                path, f, link if link.startswith("/") else f"{where}/{link}", hops + 1
            )
            if resolved is None:
                return None
            here = resolved
        elif info.type != h5py.h5l.TYPE_HARD:
            raise StoreError(f"{path}: {here} is a user-defined link (type {info.type}), not read")
        where = here
    return where or "/"


def _node(path: Any, f: h5py.File, name: str) -> tuple[str, Any] | None:
    """``(in-file path, object)`` of ``name`` (see :func:`_resolve`), or None if absent."""
    where = _resolve(path, f, name)
    if where is None:
        return None
    try:
        return where, f[where]
    except _H5_ERRORS as exc:
        raise StoreError(f"{path}: cannot open /{name.strip('/')} ({exc})") from exc


def _dataset(path: Any, f: h5py.File, name: str) -> h5py.Dataset:
    """Dataset ``name`` of ``f``, whose data are stored in ``f`` itself.

    Refused: links to other files, datasets whose raw data live in external files, and
    virtual datasets (mapped from other datasets, possibly of other files).
    """
    found = _node(path, f, name)
    if found is None or not isinstance(found[1], h5py.Dataset):
        raise StoreError(f"{path}: dataset /{name} is missing")
    dset = found[1]
    try:
        dset.dtype, dset.shape  # noqa: B018 (h5py raises here for types numpy cannot hold)
        virtual, external = dset.is_virtual, dset.external
    except _H5_ERRORS as exc:
        raise StoreError(f"{path}: cannot read the layout of /{name} ({exc})") from exc
    if virtual:
        raise StoreError(
            f"{path}: /{name} is a virtual dataset (mapped from other datasets or files); "
            "it is not read"
        )
    if external:
        raise StoreError(
            f"{path}: /{name} keeps its data in the external file {external[0][0]!r}; "
            "it is not read"
        )
    return dset


def _standard_type(path: Path, dset: h5py.Dataset) -> bool:
    """Whether ``dset`` holds little-endian IEEE 754 floats or standard integers (or an enum of
    them, as h5py stores booleans).

    The BOSARIS layout has no checksums: a flipped bit in a datatype message (byte order,
    exponent bias, ...) would otherwise silently change every value read.
    """
    try:
        tid = dset.id.get_type()
        if tid.get_class() == h5py.h5t.ENUM:
            tid = tid.get_super()
        return any(tid.equal(t) for t in _STANDARD_TYPES)
    except _H5_ERRORS as exc:
        raise StoreError(f"{path}: cannot read the type of {dset.name} ({exc})") from exc


def _mask_values(x: np.ndarray, allowed: tuple[int, ...], where: str) -> np.ndarray:
    """``x``, checked: an integer mask holding values other than ``allowed`` is corrupt (float
    masks keep their MATLAB meaning: ``logical()``, or the sign past 0.5 for a key)."""
    if x.dtype.kind in "iu":
        lo, hi = min(allowed), max(allowed)
        if len(allowed) == hi - lo + 1 and (
            not x.size or (np.minimum.reduce(x, axis=None) >= lo
                           and np.maximum.reduce(x, axis=None) <= hi)
        ):  # fmt: skip
            return x  # a range of codes: two reductions, no temporaries (isin: 10x slower)
        bad = ~np.isin(x, allowed)
        if bad.any():
            raise StoreError(
                f"{where} holds {x[bad][0]}, expected {', '.join(map(str, allowed))} (corrupt?)"
            )
    return x
