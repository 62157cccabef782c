"""MAT files of version 7.3 (HDF5 in MATLAB's layout, dimensions reversed), through h5py."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import dask.array as da
import h5py
import numpy as np

from bosaris_dask.errors import StoreError
from bosaris_dask.io.hdf5 import (
    _attribute_text,
    _dataset,
    _H5Array,
    _node,
    _open,
    _standard_type,
)
from bosaris_dask.io.hdf5.mapped import H5_ERRORS
from bosaris_dask.io.hdf5.write import _stream
from bosaris_dask.io.stamps import file_stamp
from bosaris_dask.io.worker_paths import for_workers

#: Matrices larger than this many bytes are read lazily (dask), smaller ones at once.
_LAZY_BYTES = 64 * 2**20

_HEADER = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: %s HDF5 schema 1.00 ."


def is_v73(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a version 7.3 MAT file (an HDF5 file with MATLAB's header)."""
    with open(path, "rb") as f:
        head = f.read(128)
    return head.startswith(b"MATLAB 7.3") or (
        head.startswith(b"MATLAB") and b"HDF5" in head and h5py.is_hdf5(os.fspath(path))
    )


def _class(obj: Any) -> str:
    return _attribute_text(obj, "MATLAB_class") or ""


def _chars(values: np.ndarray) -> Any:
    """A MATLAB char array (reversed dims) as a string, or a list for a char matrix: UTF-16
    code units (uint16, as MATLAB writes them), or whole code points in wider integers
    (hdf5storage's ``MATLAB_int_decode=4``, uint32), never cut to 16 bits."""
    values = np.asarray(values)
    wide = values.dtype.kind in "iu" and values.dtype.itemsize > 2
    unit, codec = ("<u4", "utf-32-le") if wide else ("<u2", "utf-16-le")
    rows = np.atleast_2d(values.astype(unit)).T  # MATLAB's (rows, length)
    text = [r.tobytes().decode(codec, "replace") for r in rows]
    return text[0] if len(text) == 1 else [t.rstrip(" ") for t in text]


class _Reader:
    """Decodes MATLAB objects; follows no link or reference out of the file."""

    def __init__(self, path: Path):
        self.path = path
        self.manager, self.file = _open(path)
        self.token = file_stamp(path)

    def node(self, name: str) -> Any:
        """The object ``name``, through hard and in-file soft links only; a dataset must keep
        its data in this file (as the HDF5 reader requires, :mod:`bosaris_dask.io.hdf5`)."""
        found = _node(self.path, self.file, name)
        if found is None:
            raise StoreError(f"{self.path}: {name} is missing")
        if isinstance(found[1], h5py.Dataset):
            return _dataset(self.path, self.file, found[0])
        return found[1]

    def decode(self, obj: Any, depth: int = 0) -> Any:
        if depth > 8:
            raise StoreError(f"{self.path}: structs nested too deeply at {obj.name}")
        cls = _class(obj)
        if isinstance(obj, h5py.Group):
            if cls not in ("struct", ""):
                raise StoreError(f"{self.path}: {obj.name} is a MATLAB {cls}, not a struct")
            return {name: self.decode(self.node(f"{obj.name}/{name}"), depth + 1) for name in obj}
        if obj.attrs.get("MATLAB_empty", 0):
            return [] if cls in ("cell", "char") else np.zeros((0, 0))
        if cls == "cell":
            refs = np.ravel(np.asarray(obj[()]).T)
            return [self.decode(self.node(self.file[r].name), depth + 1) for r in refs]
        if cls == "char":
            return _chars(obj[()])
        if obj.dtype.kind not in "biuf" or not _standard_type(self.path, obj):
            raise StoreError(f"{self.path}: {obj.name} holds {obj.dtype} ({cls or 'no class'})")
        if obj.ndim != 2 or obj.size * obj.dtype.itemsize <= _LAZY_BYTES:
            value = np.asarray(obj[()])
            return value.T.astype(bool) if cls == "logical" else value.T
        source = _H5Array(
            self.manager, for_workers(self.path), obj.name, obj.shape, obj.dtype, self.token
        )
        lazy = da.from_array(source, chunks="auto", asarray=True, fancy=False).T
        return lazy != 0 if cls == "logical" else lazy


def read_v73(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The variables of a version 7.3 MAT file; large matrices as lazy dask arrays."""
    path = Path(path)
    try:
        reader = _Reader(path)
        names = [k for k in reader.file if not k.startswith("#")]
        return {k: reader.decode(reader.node(k)) for k in names}
    except H5_ERRORS as exc:
        raise StoreError(f"{path}: not a readable MAT 7.3 file ({exc})") from exc


def _attr_class(obj: Any, cls: str, decode: int | None = None) -> None:
    obj.attrs.create("MATLAB_class", np.bytes_(cls.encode("ascii")))
    if decode is not None:
        obj.attrs.create("MATLAB_int_decode", np.int32(decode))


def _write_chars(parent: h5py.Group, name: str, text: str) -> h5py.Dataset:
    units = np.frombuffer(text.encode("utf-16-le"), dtype="<u2")
    if not len(units):
        dset = parent.create_dataset(name, data=np.array([0, 0], dtype=np.uint64))
        dset.attrs.create("MATLAB_empty", np.uint8(1))
    else:
        dset = parent.create_dataset(name, data=units.reshape(-1, 1))  # a 1 x L char array
    _attr_class(dset, "char", 2)
    return dset


def _write_cell(f: h5py.File, parent: h5py.Group, name: str, ids: np.ndarray) -> None:
    refs_group = f.require_group("#refs#")
    refs = np.empty((1, len(ids)), dtype=h5py.ref_dtype)  # an n x 1 cell array
    for k, text in enumerate(ids):
        cell = _write_chars(refs_group, f"{parent.name.strip('/')}_{name}_{k}", str(text))
        refs[0, k] = cell.ref
    dset = parent.create_dataset(name, data=refs)
    _attr_class(dset, "cell")


_CLASSES = {
    np.dtype(np.int8): "int8",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.float64): "double",
    np.dtype(np.float32): "single",
    np.dtype(bool): "logical",
}


def write_v73(tmp: Path, name: str, fields: dict[str, Any]) -> None:
    """Write one struct variable to a new version 7.3 MAT file at ``tmp``; dask matrices are
    streamed block by block."""
    with h5py.File(tmp, "w", userblock_size=512, libver=("earliest", "v110")) as f:
        group = f.create_group(name)
        _attr_class(group, "struct")
        # the field names in their order, as MATLAB writes them: one string of 1-byte chars each
        names = np.empty(len(fields), dtype=object)
        names[:] = [np.frombuffer(k.encode("ascii"), dtype="S1") for k in fields]
        group.attrs.create("MATLAB_fields", names, dtype=h5py.vlen_dtype(np.dtype("S1")))
        for field, value in fields.items():
            if isinstance(value, str):
                _write_chars(group, field, value)
            elif value.dtype == object:
                _write_cell(f, group, field, value)
            else:
                cls = _CLASSES[value.dtype]
                data = value.astype(np.uint8) if cls == "logical" else value
                if isinstance(data, da.Array):  # streamed, transposed as MATLAB stores it
                    (dset,) = _stream({field: data.T}, group, f"writing {tmp}", False)
                else:
                    dset = group.create_dataset(field, data=np.ascontiguousarray(data.T))
                _attr_class(dset, cls, 1 if cls == "logical" else None)
    stamp = time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime()).encode("ascii")
    header = (_HEADER % stamp).ljust(116, b" ") + b" " * 8 + b"\x00\x02" + b"IM"
    with open(tmp, "r+b") as f:
        f.write(header.ljust(512, b"\x00"))
