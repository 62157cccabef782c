"""``jit.compiled`` without numba: every loop, with or without helpers to bind, gives ``None``
(its caller's numpy path), as in an install without the ``fast`` extra."""

from __future__ import annotations

import sys

from bosaris_dask.passes import jit


def _one(a):
    return a + 1


def _plus(a, b):
    return _one(a) + b - 1


def _twice(x):
    return _plus(x, x)


def _alone(x):
    return x


def test_without_numba_every_loop_is_none(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` raises ImportError
    monkeypatch.setattr(jit, "_cache", {})
    assert jit.compiled(_twice, calls=[_one, _plus]) is None  # two helpers: _plus needs _one
    assert jit.compiled(_alone) is None
    assert _twice(20) == 40  # the plain functions are left as they were


def test_a_loop_asked_for_alone_then_with_its_helpers_gets_them(monkeypatch) -> None:
    # a test's `compiled(loop) is None` check first cached the loop unbound, and the kernel's
    # `compiled(loop, calls=...)` then got that one: numba's "Untyped global name"
    import pytest

    pytest.importorskip("numba")
    monkeypatch.delenv(jit.DISABLE_ENV, raising=False)
    monkeypatch.setattr(jit, "_cache", {})
    assert jit.compiled(_twice) is not None  # compiled lazily: no call, no error yet
    fn = jit.compiled(_twice, calls=[_one, _plus])
    assert fn(20) == 40
