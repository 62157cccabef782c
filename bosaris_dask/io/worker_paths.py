"""Paths as the tasks that read them must open them: absolute.

A lazy object's tasks open their file where they run. A worker's working directory is its own
(a batch job starts in the user's home, a scheduler and its workers were started elsewhere), so
a relative path given on the client names another file there, or none. The readers hand the
tasks :func:`for_workers` of the path; what they say on the client names the path as given, a
task's own messages the absolute path it opened.

Examples
--------
>>> import os
>>> for_workers("key.zarr") == os.path.join(os.getcwd(), "key.zarr")
True
"""

from __future__ import annotations

import os

__all__ = ["for_workers"]


def for_workers(path: str | os.PathLike[str]) -> str:
    """Local ``path`` made absolute against the client's working directory (``..`` and links
    left for the file system to follow; an fsspec URL is no local path)."""
    return os.path.join(os.getcwd(), os.fspath(path))
