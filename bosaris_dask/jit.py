"""Optional numba kernels: compiled on first use, or ``None`` (the caller's numpy path).

numba is an optional dependency (the ``fast`` extra). A kernel module writes its loop in plain
Python over numpy arrays and asks :func:`compiled` for the compiled version; without numba, or
with :data:`DISABLE_ENV` set to any non-empty value, it gets ``None`` and runs its numpy path,
which the tests compare with the compiled one bit for bit.

Examples
--------
>>> import os
>>> def add(a, b):
...     return a + b
>>> fn = compiled(add)
>>> fn is None or fn(1, 2) == 3
True
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["compiled", "DISABLE_ENV"]

#: Set this environment variable to any non-empty value to use the numpy paths even with numba.
DISABLE_ENV = "BOSARIS_DASK_NO_NUMBA"

_cache: dict[Callable[..., Any], Callable[..., Any] | None] = {}


def compiled(fn: Callable[..., Any], *, fastmath: bool = False) -> Callable[..., Any] | None:
    """``fn`` compiled by numba (``nogil``: dask's threads run it in parallel; cached on disk
    where numba can write), or ``None`` when numba is missing or :data:`DISABLE_ENV` is set.

    ``fastmath`` lets LLVM reassociate and vectorize floating-point sums: only for a kernel
    whose result is certified for any summation order (the first call's choice sticks)."""
    if os.environ.get(DISABLE_ENV):
        return None
    if fn not in _cache:
        try:
            import numba
        except ImportError:
            _cache[fn] = None
        else:
            try:  # numba finds no cache directory for a read-only install without a home
                _cache[fn] = numba.njit(nogil=True, cache=True, fastmath=fastmath)(fn)
            except RuntimeError:  # pragma: no cover
                _cache[fn] = numba.njit(nogil=True, fastmath=fastmath)(fn)
    return _cache[fn]
