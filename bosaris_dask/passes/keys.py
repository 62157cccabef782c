"""Order-preserving integer keys of floating-point scores.

A float maps to an unsigned integer of the same width whose unsigned order is the float order:
flip every bit of a negative number, flip only the sign bit of a positive one. ``-0.0`` is first
made ``+0.0`` so that equal scores always share one key. NaN must be rejected before keying.

Examples
--------
>>> import numpy as np
>>> x = np.array([-2.0, -0.0, 0.0, 1e-300, 3.5])
>>> k = order_keys(x)
>>> bool(np.all(np.diff(k.astype(object)) >= 0)), int(k[1] == k[2])
(True, 1)
>>> keys_to_values(k, np.float64).tolist()
[-2.0, 0.0, 0.0, 1e-300, 3.5]
"""

from __future__ import annotations

import numpy as np

__all__ = ["key_dtype", "key_bits", "order_keys", "keys_to_values", "threshold_keys"]

_UINT: dict[np.dtype, np.dtype] = {
    np.dtype(np.float32): np.dtype(np.uint32),
    np.dtype(np.float64): np.dtype(np.uint64),
}
_INT: dict[np.dtype, np.dtype] = {
    np.dtype(np.float32): np.dtype(np.int32),
    np.dtype(np.float64): np.dtype(np.int64),
}


def key_dtype(score_dtype: np.dtype | type) -> np.dtype:
    """The unsigned key dtype of a float dtype (float32 -> uint32, float64 -> uint64)."""
    try:
        return _UINT[np.dtype(score_dtype)]
    except KeyError:
        raise TypeError(f"scores must be float32 or float64, not {np.dtype(score_dtype)}") from None


def key_bits(score_dtype: np.dtype | type) -> int:
    """The number of bits of the key of ``score_dtype``."""
    return key_dtype(score_dtype).itemsize * 8


def order_keys(x: np.ndarray) -> np.ndarray:
    """Order-preserving unsigned keys of a float32 or float64 array."""
    x = np.asarray(x)
    bits = x.dtype.itemsize * 8
    x = x + x.dtype.type(0)  # -0.0 + 0.0 == +0.0: one key per distinct value
    signs = (x.view(_INT[x.dtype]) >> (bits - 1)).view(_UINT[x.dtype])  # all ones if negative
    return x.view(_UINT[x.dtype]) ^ (signs | _UINT[x.dtype].type(1 << (bits - 1)))


def keys_to_values(keys: np.ndarray, score_dtype: np.dtype | type) -> np.ndarray:
    """The float values of keys made by :func:`order_keys`."""
    udt = key_dtype(score_dtype)
    k = np.asarray(keys).astype(udt, copy=False)
    top = udt.type(1 << (udt.itemsize * 8 - 1))
    positive = (k & top) != 0
    return np.where(positive, k ^ top, ~k).view(np.dtype(score_dtype))


def threshold_keys(thresholds: np.ndarray, score_dtype: np.dtype | type) -> np.ndarray:
    """Keys ``kappa`` such that ``score >= threshold`` iff ``order_keys(score) >= kappa``.

    ``thresholds`` are float64 (e.g. Bayes thresholds ``-plo``); for float32 scores each is
    rounded up to the smallest float32 not below it, so the comparison stays exact.

    Examples
    --------
    >>> t = threshold_keys(np.array([0.1]), np.float32)
    >>> s = np.array([0.099999994, 0.1, 0.10000001], dtype=np.float32)
    >>> (order_keys(s) >= t[0]).tolist(), (s.astype(np.float64) >= 0.1).tolist()
    ([False, True, True], [False, True, True])
    """
    t64 = np.asarray(thresholds, dtype=np.float64)
    dtype = np.dtype(score_dtype)
    t = t64.astype(dtype)
    below = t.astype(np.float64) < t64
    t = np.where(below, np.nextafter(t, dtype.type(np.inf)), t)
    return order_keys(t.astype(dtype))
