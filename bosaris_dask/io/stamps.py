"""What a lazily read file was when it was opened, checked again at each chunk read.

A lazy object holds a store's ids and reads its values when computed. Once the path has been
rewritten (another run's output, an atomic write onto the object's own input), those values are
another store's, and pairing them with the ids would give a wrong number without any error. A
*stamp* (inode, size and modification time of a file or directory) taken at open and compared
before each read turns that into an error naming the path; a stat costs microseconds against a
chunk's megabytes.

Examples
--------
>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "x.bin"
>>> _ = path.write_bytes(b"12")
>>> stamp = file_stamp(path)
>>> check_unchanged(path, stamp)
>>> _ = path.write_bytes(b"123")
>>> check_unchanged(path, stamp)
Traceback (most recent call last):
...
bosaris_dask.errors.StoreError: ...x.bin: the file was replaced or changed after this object was ...
"""

from __future__ import annotations

import os
from typing import NamedTuple

from bosaris_dask.errors import StoreError

__all__ = ["Stamp", "file_stamp", "check_unchanged"]


class Stamp(NamedTuple):
    """A file's or directory's inode, size and modification time (ns); not its device, which a
    network file system may number differently on each worker."""

    inode: int
    size: int
    mtime_ns: int


def file_stamp(path: str | os.PathLike[str]) -> Stamp:
    """The :class:`Stamp` of ``path`` (links followed)."""
    st = os.stat(path)
    return Stamp(st.st_ino, st.st_size, st.st_mtime_ns)


def check_unchanged(
    path: str | os.PathLike[str], stamp: Stamp, shown: object = None, noun: str = "file"
) -> None:
    """Raise :class:`StoreError` naming ``shown`` (default ``path``), the ``noun`` that changed,
    unless ``path`` still has ``stamp``: the object's ids would be paired with other values."""
    try:
        now = file_stamp(path)
    except OSError:
        now = None
    if now != stamp:
        what = "is gone" if now is None else "was replaced or changed"
        raise StoreError(
            f"{shown if shown is not None else path}: the {noun} {what} after this object was "
            "read from it lazily; its ids would be paired with other values. Read it again, or "
            "compute (.compute()) or persist the object before its path is rewritten"
        )
