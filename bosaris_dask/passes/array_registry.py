"""Values registered for dask arrays by name, each for as long as its array object lives.

A score source attaches what it can do more cheaply than computing its chunks (a screen,
:mod:`bosaris_dask.passes.screening`; a strided reader, :mod:`bosaris_dask.passes.subgrids`) to the
dask array it returns. The engine meets that array again by name: an array transformed on its way
(another name) finds nothing, and nothing depends on a value being found. A later registration under
the same name replaces an earlier one, which then leaves nothing behind when its array is freed.

Examples
--------
>>> import dask.array as da
>>> import numpy as np
>>> x = da.from_array(np.zeros(3), chunks=1)
>>> notes = ArrayRegistry()
>>> notes.add(x, "cheap")
>>> notes.get(x), notes.get(x + 1)
('cheap', None)
"""

from __future__ import annotations

import threading
import weakref
from typing import Generic, TypeVar

import dask.array as da

__all__ = ["ArrayRegistry"]

T = TypeVar("T")


class ArrayRegistry(Generic[T]):
    """A thread-safe map from dask array names to values (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, T] = {}

    def add(self, array: da.Array, value: T) -> None:
        """Register ``value`` for ``array``'s name while the ``array`` object lives."""
        with self._lock:
            self._values[array.name] = value
        weakref.finalize(array, self._drop, array.name, value)

    def get(self, array: da.Array) -> T | None:
        """The value registered for an array of ``array``'s name, or ``None``."""
        with self._lock:
            return self._values.get(array.name)

    def _drop(self, name: str, value: T) -> None:
        with self._lock:
            if self._values.get(name) is value:
                del self._values[name]
