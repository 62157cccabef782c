"""The safety walk of a local zarr store, before zarr reads any of it.

A store must not reach outside itself (a symbolic link resolving elsewhere, a FIFO that would
block a read) nor ask for unpickling (numcodecs' ``pickle`` codec).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bosaris_dask.errors import StoreError

_ARRAY_METADATA = ("zarr.json", ".zarray")


def _codec_ids(meta: Any) -> list[str]:
    """Every ``name`` and ``id`` string in array metadata but its attributes: the codecs (v3
    ``codecs``, nested ones of sharding; v2 ``compressor``, ``filters``), data type, grid."""
    if isinstance(meta, list):
        return [i for item in meta for i in _codec_ids(item)]
    if not isinstance(meta, dict):
        return []
    found = [v for k, v in meta.items() if k in ("name", "id") and isinstance(v, str)]
    return found + [i for k, v in meta.items() if k != "attributes" for i in _codec_ids(v)]


def _check_metadata(store: Path, file: Path) -> None:
    """Refuse array metadata that would unpickle chunk data (numcodecs' ``pickle`` codec)."""
    try:
        meta = json.loads(file.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise StoreError(f"{store}: cannot parse {file.relative_to(store)} ({exc})") from exc
    unsafe = [i for i in _codec_ids(meta) if "pickle" in i.lower()]
    if unsafe:
        raise StoreError(
            f"{store}: {file.relative_to(store)} asks for the codec {unsafe[0]!r}; stores whose "
            "data would be unpickled are not read"
        )


def _check_local_store(path: Path) -> None:
    """Check a local store before zarr reads any of it: it must not reach outside itself.

    Every symbolic link inside the store must resolve inside it (the store itself may be a
    link), every entry must be a directory or a regular file (a FIFO would block a read), and
    no array's metadata may ask for unpickling.
    """
    root = os.path.realpath(path)
    stack = [path]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError as exc:
            raise StoreError(f"{path}: not a readable zarr store ({exc})") from exc
        for entry in entries:
            here = Path(entry.path)
            if entry.is_symlink():
                target = os.path.realpath(here)
                if os.path.commonpath([root, target]) != root:
                    raise StoreError(
                        f"{path}: {here.relative_to(path)} is a symbolic link to {target}, "
                        "outside the store; it is not followed"
                    )
            if entry.is_dir(follow_symlinks=False):
                stack.append(here)
            elif not entry.is_file() and not entry.is_dir():
                raise StoreError(f"{path}: {here.relative_to(path)} is not a regular file")
            elif entry.name in _ARRAY_METADATA:
                _check_metadata(path, here)
