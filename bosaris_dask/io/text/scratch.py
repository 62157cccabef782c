"""Scratch files: named memmaps owned by this process, swept after killed runs; pipes."""

from __future__ import annotations

import os
import socket
import stat
import tempfile
import weakref
from typing import Any

import dask
import numpy as np

from bosaris_dask.io.atomic import remove_path

_SCRATCH_PREFIX = "bosaris-text-"
#: The dask config key naming the scratch directory (``dask.config.set``; ``--scratch-dir``).
SCRATCH_CONFIG = "bosaris_dask.scratch"


def _is_stream(path: str | os.PathLike[str]) -> bool:
    """Is ``path`` a pipe, socket or character device (readable only once)?"""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # reported where the file is opened
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def _scratch_owner() -> str:
    """``host-pid`` of this process, as scratch file names carry it."""
    return f"{socket.gethostname().replace('-', '_')}-{os.getpid()}"


def _sweep_dead_scratch(directory: str) -> None:
    """Delete scratch files ``bosaris-text-HOST-PID-*.dat`` of this host whose process is gone."""
    host = _scratch_owner().rsplit("-", 1)[0]
    for name in os.listdir(directory):
        parts = name[len(_SCRATCH_PREFIX) :].split("-")
        if not name.startswith(_SCRATCH_PREFIX) or len(parts) < 3 or parts[0] != host:
            continue
        try:
            os.kill(int(parts[1]), 0)
        except ProcessLookupError:
            remove_path(os.path.join(directory, name))
        except (ValueError, PermissionError):  # not a pid, or another user's live process
            continue


#: Scratch files that workers read, in a directory the user did not choose (see ``staging``).
_UNSHARED: weakref.WeakValueDictionary[str, _ScratchFile] = weakref.WeakValueDictionary()


class _ScratchFile:
    """A temporary file deleted with this object (a killed run's are swept by the next); ``staged``
    names the input it holds, remembered if in the temporary folder for
    :func:`bosaris_dask.io.staging.check_staged_readable`.
    """

    def __init__(self, scratch_dir: str | os.PathLike[str] | None, *, staged: str | None = None):
        chosen = scratch_dir if scratch_dir is not None else dask.config.get(SCRATCH_CONFIG, None)
        if staged is not None:
            from bosaris_dask.io.staging import scratch_directory

            directory = scratch_directory(chosen, what=staged)
        else:
            directory = os.fspath(chosen) if chosen is not None else tempfile.gettempdir()
        _sweep_dead_scratch(directory)
        prefix = f"{_SCRATCH_PREFIX}{_scratch_owner()}-"
        fd, self.path = tempfile.mkstemp(prefix=prefix, suffix=".dat", dir=directory)
        os.close(fd)
        self.staged = staged
        self.remove = weakref.finalize(self, remove_path, self.path)
        if staged is not None and chosen is None:
            _UNSHARED[self.path] = self


class _ScratchArray:
    """A read-only array in a scratch file, memory-mapped lazily, picklable by path; the creating
    process owns the file.
    """

    def __init__(self, owner: _ScratchFile | None, path: str, shape: tuple[int, ...], dtype):
        self._owner = owner
        self.path = path
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.ndim = len(self.shape)
        self._mm: np.memmap | None = None

    def __getitem__(self, key: Any) -> np.ndarray:
        if self._mm is None:
            self._mm = np.memmap(self.path, dtype=self.dtype, mode="r", shape=self.shape)
        return np.asarray(self._mm[key])

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "shape": self.shape, "dtype": self.dtype.str}

    def __setstate__(self, state: dict[str, Any]) -> None:
        _ScratchArray.__init__(self, None, state["path"], state["shape"], state["dtype"])

    def __copy__(self) -> _ScratchArray:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _ScratchArray:
        return self
