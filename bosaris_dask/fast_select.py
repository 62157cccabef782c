"""A refinement pass's selection of the trials in candidate bins as one compiled (numba) loop,
when numba is installed (``pip install bosaris-dask[fast]``).

The numpy path of :func:`bosaris_dask.refine_kernels.select_kernel` keys a block of scores, looks up
each key's bucket and bin in two tables, and gathers the keys and classes of the trials in
candidate bins, in a dozen array operations per block. The loop here does it trial by trial,
in one read of each trial's class, mask and score and no branch on them. It computes the same
keys and flags (integer work only), so both paths select the same trials in the same order; the
tests compare them.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.binmap import BinMap
>>> from bosaris_dask.refine_kernels import RefineSpec
>>> from bosaris_dask.keys import order_keys
>>> s = np.array([0.5, -1.0, 2.0, 0.75, -0.0], dtype=np.float32)
>>> c = np.array([1, -1, 1, 0, -1], dtype=np.int8)
>>> lo = order_keys(np.array([0.5, -0.0], np.float32)).astype(np.uint64) >> 24 << 24
>>> spec = RefineSpec(24, 8, np.sort(lo), np.array([24, 24]), np.array([0, 0]), raw=True)
>>> keys, tar = np.empty(5, np.uint32), np.empty(5, bool)
>>> loop = select_loop()
>>> n = 2 if loop is None else select_into(loop, c, s, np.ones(5, bool), spec, keys, tar)
>>> if loop is None:
...     keys[:2], tar[:2] = order_keys(s[[0, 4]] + np.float32(0)), [True, False]
>>> n, (keys[:n] >> 24).tolist(), tar[:n].tolist()  # 0.75 shares 0.5's bin but is no trial
(2, [191, 128], [True, False])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from bosaris_dask.jit import DISABLE_ENV, compiled

if TYPE_CHECKING:
    from bosaris_dask.refine_kernels import RefineSpec

__all__ = ["select_loop", "select_into", "DISABLE_ENV"]


def _select_trials(
    cls,
    bits,
    scored,
    table,
    bucket_shift,
    shift,
    adaptive,
    sign_bit,
    sign,
    ones,
    lut,
    last,
    out_keys,
    out_tar,
):  # pragma: no cover
    # compiled by numba (coverage does not see inside); tested against the numpy path.
    # No branch on the data: every trial's key and flag are written at the next free place,
    # which moves on only for a selected trial (at 1e9 trials half of them can be selected)
    zero = np.uint64(0)
    n = 0
    for i in range(bits.size):
        c = cls[i]
        b = np.uint64(bits[i])
        b = zero if b == sign else b  # -0.0 as +0.0
        key = b ^ (((zero - (b >> sign_bit)) & ones) | sign)  # order key, no branch
        if adaptive:
            t = table[np.intp(key >> bucket_shift)]
            k = (t >> 8) + np.int64(key >> np.uint64(t & 255))
        else:
            k = np.int64(key >> shift)
        out_keys[n] = key
        out_tar[n] = c == 1
        n += (c != 0) & scored[i] & lut[min(max(k, 0), last)]
    return n


def select_loop() -> Callable[..., Any] | None:
    """The compiled selection for :func:`select_into`, or ``None`` when numba is missing or
    :data:`DISABLE_ENV` is set (compiled on first use; it releases the GIL)."""
    return compiled(_select_trials)


def select_into(
    loop: Callable[..., Any],
    cls: np.ndarray,
    s: np.ndarray,
    scored: np.ndarray,
    spec: RefineSpec,
    keys: np.ndarray,
    is_tar: np.ndarray,
) -> int:
    """Write the order keys (into ``keys``, the key dtype) and target flags (``is_tar``) of the
    trials of flat ``cls``, ``s`` and ``scored`` whose pass-1 bin holds a candidate of ``spec``,
    in order; return how many. ``keys`` and ``is_tar`` are at least as long as ``s``.

    Finite scores only: pass 1 has refused non-finite trial scores.
    """
    kbits = s.dtype.itemsize * 8
    bm = spec.binmap
    if bm is not None and bm.adaptive:
        table, bucket_shift, shift = bm.table, kbits - bm.top, 0
    else:
        table, bucket_shift, shift = (
            np.zeros(1, np.int64),
            0,
            spec.shift if bm is None else bm.shift,
        )
    # contiguous arrays (a key's mask is often a broadcast): numba's loops over strided arrays
    # are several times slower
    s = np.ascontiguousarray(s)
    return int(loop(
        np.ascontiguousarray(cls, dtype=np.int8),
        s.view(np.uint32 if kbits == 32 else np.uint64),
        np.ascontiguousarray(scored, dtype=np.bool_),
        table, np.uint64(bucket_shift), np.uint64(shift), bm is not None and bm.adaptive,
        np.uint64(kbits - 1), np.uint64(1 << (kbits - 1)), np.uint64((1 << kbits) - 1),
        spec.lut, np.int64(spec.lut.size - 1), keys, is_tar,
    ))  # fmt: skip
