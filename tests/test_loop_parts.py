"""The compiled loops' shared steps (``loop_parts``) and how ``jit.compiled`` binds them.

The loops that call them are compared with their numpy paths, bit for bit, in their own tests
(test_fast_pass1, test_fast_grouped, test_fast_select, ...); here each step alone, compiled,
against the numpy functions the engine keys and bins with.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosaris_dask.passes import jit
from bosaris_dask.passes.binmap import BinMap
from bosaris_dask.passes.keys import order_keys
from bosaris_dask.passes.loop_parts import (
    LOOP_PARTS,
    add_one,
    bin_of,
    key_args,
    map_args,
    order_key,
)

numba = pytest.importorskip("numba")


def _keys_loop(bits, sign_bit, sign, ones, out):  # compiled below, with LOOP_PARTS
    for i in range(bits.size):
        out[i] = order_key(np.uint64(bits[i]), sign_bit, sign, ones)


def _bins_loop(keys, table, bucket_shift, shift, adaptive, out):
    for i in range(keys.size):
        out[i] = bin_of(np.uint64(keys[i]), table, bucket_shift, shift, adaptive)


def _count_loop(at, low, hist):
    for i in range(at.size):
        add_one(low, hist, at[i])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=200), st.booleans())
def test_order_key_compiled_is_order_keys_with_minus_zero_as_plus_zero(words, wide) -> None:
    dtype, width = (np.float64, 64) if wide else (np.float32, 32)
    raw = np.array(words, dtype=np.uint64)
    if wide:
        raw = (raw << np.uint64(32)) | raw[::-1]
    s = raw.astype(np.uint32 if not wide else np.uint64).view(dtype)
    s = s[np.isfinite(s)]  # the loops key finite scores only (pass 1 maps the rest to 0.0)
    tiny = np.finfo(dtype).smallest_subnormal
    s = np.concatenate([s, np.array([-0.0, 0.0, tiny, -tiny], dtype=dtype)])
    loop = jit.compiled(_keys_loop, calls=LOOP_PARTS)
    out = np.empty(s.size, dtype=np.uint64)
    loop(s.view(np.uint32 if not wide else np.uint64), *key_args(width), out)
    expected = order_keys(np.where(s == 0, dtype(0.0), s))  # -0.0 keyed as +0.0
    assert out.tolist() == expected.astype(np.uint64).tolist()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31), st.integers(6, 24), st.booleans(), st.booleans())
def test_bin_of_compiled_is_the_bin_maps_bin(seed, budget, adaptive, wide) -> None:
    rng = np.random.default_rng(seed)
    s = rng.standard_t(3, size=2000).astype(np.float64 if wide else np.float32)
    keys, width = order_keys(s), 64 if wide else 32
    m = BinMap.from_sample(keys[:500], width, budget) if adaptive else BinMap.uniform(width, budget)
    out = np.empty(keys.size, dtype=np.int64)
    jit.compiled(_bins_loop, calls=LOOP_PARTS)(keys.astype(np.uint64), *map_args(m), out)
    assert out.tolist() == m.bin_of(keys).tolist()


def test_add_one_counts_past_a_byte_exactly() -> None:
    at = np.repeat(np.arange(3), [1, 256, 1000])
    low, hist = np.zeros(3, np.uint8), np.zeros(3, np.uint32)
    jit.compiled(_count_loop, calls=LOOP_PARTS)(at, low, hist)
    assert (hist + low).tolist() == [1, 256, 1000]


def _twice(x):
    return _plus(x, x)


def _plus(a, b):
    return _one(a) + b - 1


def _one(a):
    return a + 1


def test_calls_are_bound_callees_first_and_leave_the_module_alone() -> None:
    fn = jit.compiled(_twice, calls=[_one, _plus])  # _plus calls _one
    assert fn is not None and fn(20) == 40
    assert isinstance(fn, numba.core.registry.CPUDispatcher)
    assert globals()["_plus"] is _plus and not hasattr(_plus, "py_func")  # still plain Python
    assert _twice(20) == 40


def test_no_compiled_loop_when_numba_is_switched_off(monkeypatch) -> None:
    monkeypatch.setenv(jit.DISABLE_ENV, "1")
    assert jit.compiled(_count_loop, calls=LOOP_PARTS) is None
