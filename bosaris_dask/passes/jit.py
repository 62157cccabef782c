"""Optional numba kernels: compiled on first use, or ``None`` (the caller's numpy path).

numba is an optional dependency (the ``fast`` extra). A kernel module writes its loop in plain
Python over numpy arrays and asks :func:`compiled` for the compiled version; without numba, or
with :data:`DISABLE_ENV` set to any non-empty value, it gets ``None`` and runs its numpy path,
which the tests compare with the compiled one bit for bit. A loop may call small plain functions
by name (``calls=``): they are compiled first and the loop is compiled against them (numba calls
compiled functions only), without numba ever being imported before a loop is asked for.

Examples
--------
>>> import os
>>> def add(a, b):
...     return a + b
>>> fn = compiled(add)
>>> fn is None or fn(1, 2) == 3
True
>>> def twice(a):
...     return add(a, a)  # a plain function, by name
>>> fn = compiled(twice, calls=[add])
>>> fn is None or fn(21) == 42
True
"""

from __future__ import annotations

import hashlib
import marshal
import os
import types
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["compiled", "DISABLE_ENV"]

#: Set this environment variable to any non-empty value to use the numpy paths even with numba.
DISABLE_ENV = "BOSARIS_DASK_NO_NUMBA"

#: Compiled functions by ``(fn, the helpers it is bound to)``: the same loop asked for without
#: and then with its helpers (a test's check that numba is there, then the kernel) gets two.
_cache: dict[tuple[Callable[..., Any], tuple[Callable[..., Any], ...]], Any] = {}


def compiled(
    fn: Callable[..., Any], *, fastmath: bool = False, calls: Sequence[Callable[..., Any]] = ()
) -> Callable[..., Any] | None:
    """``fn`` compiled by numba (``nogil``: dask's threads run it in parallel; cached on disk
    where numba can write), or ``None`` when numba is missing or :data:`DISABLE_ENV` is set.

    ``fastmath`` lets LLVM reassociate and vectorize floating-point sums: only for a kernel
    whose result is certified for any summation order (the first call's choice sticks).
    ``calls``: the plain functions ``fn`` calls by their global name (e.g.
    :data:`bosaris_dask.passes.loop_parts.LOOP_PARTS`), callees before their callers: each is
    compiled against those before it, and ``fn`` against all of them (LLVM inlines the small
    ones). ``fn``'s cache files are named after its helpers' code, so an edited helper alone
    compiles ``fn`` again (numba itself checks only ``fn``'s source file)."""
    if os.environ.get(DISABLE_ENV):
        return None
    calls = tuple(calls)
    key = (fn, calls)
    if key not in _cache:
        helpers: dict[str, Callable[..., Any]] = {}
        for k, h in enumerate(calls):
            helper = _njit((h, calls[:k]), _bound(h, helpers))
            if helper is None:  # no numba: nothing to bind the rest to
                _cache[key] = None
                return None
            helpers[h.__name__] = helper
        _njit(key, _bound(fn, helpers), fastmath)
    return _cache[key]


def _njit(key: tuple[Any, ...], target: Callable[..., Any], fastmath: bool = False) -> Any:
    """``numba.njit`` of ``target`` (a function bound to its callees), once per ``key``;
    ``None`` without numba."""
    if key not in _cache:
        try:
            import numba
        except ImportError:
            _cache[key] = None
        else:
            try:  # numba finds no cache directory for a read-only install without a home
                _cache[key] = numba.njit(nogil=True, cache=True, fastmath=fastmath)(target)
            except RuntimeError:  # pragma: no cover
                _cache[key] = numba.njit(nogil=True, fastmath=fastmath)(target)
    return _cache[key]


def _bound(fn: Callable[..., Any], names: dict[str, Any]) -> Callable[..., Any]:
    """``fn`` with ``names`` (compiled helpers) in place of its module's globals of those
    names, its qualified name tagged with a digest of their code: numba names its cache files
    after it, and checks only ``fn``'s own source file, so an edited helper gets fresh files
    rather than the machine code compiled with the old one."""
    if not names:
        return fn
    env = {**fn.__globals__, **names}
    bound = types.FunctionType(fn.__code__, env, fn.__name__, fn.__defaults__, fn.__closure__)
    digest = hashlib.sha1(usedforsecurity=False)
    for name, helper in sorted(names.items()):
        digest.update(name.encode() + marshal.dumps(getattr(helper, "py_func", helper).__code__))
    bound.__qualname__ = f"{fn.__qualname__}.{digest.hexdigest()[:12]}"
    bound.__module__ = fn.__module__
    return bound
