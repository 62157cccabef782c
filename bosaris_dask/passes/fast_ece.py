"""The ECE's cross-entropy sums as compiled (numba) loops, when numba is installed
(``pip install bosaris-dask[fast]``).

At each prior log-odds ``a`` of the ECE grid, pass 1 adds every trial's term
``softplus(-c * (s + a))`` to its (group and) class's exact sum
(:func:`bosaris_dask.passes.softplus.cross_entropy_kernel`,
:func:`bosaris_dask.passes.grouped_cross_entropy.grouped_cross_entropy_kernel`): in numpy about
fifteen array operations per block and grid point (the shift, the class's sign, ``-|z|``,
``exp``, ``log1p``, a maximum, an addition, the split of each term into the integer grid units of
:mod:`bosaris_dask.passes.exact_sum` and their sums). Here one loop writes ``s + a`` and ``-|s +
a|``, numpy takes ``exp`` and ``log1p`` of the latter (numba's differ from numpy's SIMD ones in the
last bits), and a second loop makes each term with exact operations (a sign, a maximum, one
addition) and adds its grid units (power-of-two scalings, ``floor`` and ``rint``) to its slot's
integer sums, which do not depend on their order: the same sums as the numpy path, bit for bit
(the tests check them against each other).

The loops take a block whose terms all lie below ``2**17``
(:data:`~bosaris_dask.passes.exact_sum.BIG`), which :func:`fits` checks from the block's largest
``|s|`` and ``|a|``: other blocks and grid points (scores or prior log-odds beyond about ±131071)
keep the numpy path.

Examples
--------
>>> import math
>>> from bosaris_dask.passes.softplus import softplus_sums
>>> from bosaris_dask.passes.workspace import workspace
>>> c = np.array([1, -1, 0, 1], dtype=np.int8)
>>> x = np.array([2.0, 0.5, 7.0, -1.0])
>>> kernel = loops()
>>> if kernel is not None:
...     units = two_sums(kernel, x, c, 0.5, np.empty(4), np.empty(4))
... else:
...     units = softplus_sums(c, x + 0.5, workspace(np.dtype(np.float64), 4, 4), False)
>>> softplus = lambda z: math.log1p(math.exp(z))
>>> [round(exact_sum.to_float(u), 12) for u in units]  # s + a = 1.0 (non-target); 2.5, -0.5
[1.313261687518, 1.052966718473]
>>> round(softplus(1.0), 12), round(softplus(-2.5) + softplus(0.5), 12)
(1.313261687518, 1.052966718473)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from bosaris_dask.passes import exact_sum
from bosaris_dask.passes.jit import DISABLE_ENV, compiled

__all__ = ["loops", "fits", "two_sums", "run_sums", "DISABLE_ENV"]

_WHOLE = 2.0**exact_sum.HI_BITS  # a term's whole grid units: floor(t * 2**20)
_FINE = 2.0**exact_sum.LO_BITS  # its fine units: rint(frac * 2**37)


def _shift(x, a, xa, e):  # pragma: no cover
    # compiled by numba: x + a and -|x + a| (the argument of numpy's exp), in float64
    for i in range(x.size):
        v = x[i] + a
        xa[i] = v
        e[i] = -abs(v)


def _sum_two(cls, xa, e):  # pragma: no cover
    # compiled by numba: each trial's term softplus(-c * (x + a)) = max(-c * xa, 0) + e
    # (e holds numpy's log1p(exp(-|xa|)); 0 where c is 0), below 2**17, as its grid units
    # floor(t * 2**20) and rint(frac * 2**37), summed over all trials and over the targets.
    # Selects, no branches: the loop runs on vectors
    all_hi, all_lo, tar_hi, tar_lo = 0, 0, 0, 0
    for i in range(xa.size):
        c = cls[i]
        v = xa[i]
        term = max(-v if c > 0 else v, 0.0) + e[i]
        term = term if c != 0 else 0.0
        whole = term * _WHOLE
        h = np.int64(whole)  # truncation: floor, as whole >= 0
        f = np.int64(np.rint((whole - h) * _FINE))
        all_hi += h
        all_lo += f
        tar_hi += h if c > 0 else 0
        tar_lo += f if c > 0 else 0
    return all_hi, all_lo, tar_hi, tar_lo


def _sum_runs(cls, xa, e, starts, hi, lo):  # pragma: no cover
    # compiled by numba: as _sum_two, the sums of each run of trials (starts ascending; the
    # last run ends at the end), each run one plain loop on vectors (over slices: a loop from
    # starts[r] does not run on vectors, measured 6x slower)
    n_runs = starts.size
    for r in range(n_runs):
        end = starts[r + 1] if r + 1 < n_runs else xa.size
        cr, vr, er = cls[starts[r] : end], xa[starts[r] : end], e[starts[r] : end]
        run_hi, run_lo = 0, 0
        for i in range(vr.size):
            c = cr[i]
            v = vr[i]
            term = max(-v if c > 0 else v, 0.0) + er[i]
            term = term if c != 0 else 0.0
            whole = term * _WHOLE
            h = np.int64(whole)
            run_hi += h
            run_lo += np.int64(np.rint((whole - h) * _FINE))
        hi[r] = run_hi
        lo[r] = run_lo


Loops = tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]


def loops() -> Loops | None:
    """The compiled loops of :func:`two_sums` and :func:`run_sums`, or ``None`` when numba is
    missing or :data:`DISABLE_ENV` is set (compiled on first use, cached on disk where numba can
    write; they release the GIL)."""
    fns = tuple(compiled(fn) for fn in (_shift, _sum_two, _sum_runs))
    return None if any(fn is None for fn in fns) else fns  # type: ignore[return-value]


def fits(largest: float, a: float) -> bool:
    """Whether every term of a block whose largest ``|s|`` is ``largest`` lies below ``2**17``
    at prior log-odds ``a``: ``softplus(z) <= |z| + ln 2``."""
    return largest + abs(a) + 1.0 < exact_sum.BIG


def _log1p_exp(kernel: Loops, x: np.ndarray, a: float, xa: np.ndarray, e: np.ndarray) -> None:
    kernel[0](x, np.float64(a), xa, e)  # xa = x + a, e = -|x + a|
    np.exp(e, out=e)  # numpy's exp and log1p: the numpy path's bits
    np.log1p(e, out=e)


def two_sums(
    kernel: Loops, x: np.ndarray, cls: np.ndarray, a: float, xa: np.ndarray, e: np.ndarray
) -> tuple[int, int]:
    """The exact non-target and target sums of ``softplus(-c * (x + a))``, in units of
    ``2**-GRID_BITS``, as :func:`~bosaris_dask.passes.softplus.softplus_sums` of ``x + a``
    makes them.

    ``kernel``: :func:`loops`; ``x``: a block's float64 scores (finite, at most
    :data:`~bosaris_dask.passes.exact_sum.MAX_BLOCK` of them, :func:`fits` at ``a``); ``cls``: int8
    codes (0: no term); ``xa``, ``e``: float64 scratch at least as long as ``x``.
    """
    n = x.size
    xa, e = xa[:n], e[:n]
    _log1p_exp(kernel, x, a, xa, e)
    all_hi, all_lo, tar_hi, tar_lo = kernel[1](cls, xa, e)
    tar = (int(tar_hi) << exact_sum.LO_BITS) + int(tar_lo)
    return (int(all_hi) << exact_sum.LO_BITS) + int(all_lo) - tar, tar


def run_sums(
    kernel: Loops,
    x: np.ndarray,
    cls: np.ndarray,
    starts: np.ndarray,
    a: float,
    xa: np.ndarray,
    e: np.ndarray,
) -> list[int]:
    """:func:`two_sums`' terms summed per run of ``x`` (``starts``: where each run begins,
    ascending, the first at 0, each run non-empty), as
    :func:`bosaris_dask.passes.grouped_cross_entropy.grouped_cross_entropy_kernel` sums them."""
    n = x.size
    xa, e = xa[:n], e[:n]
    _log1p_exp(kernel, x, a, xa, e)
    hi = np.empty(starts.size, dtype=np.int64)
    lo = np.empty(starts.size, dtype=np.int64)
    kernel[2](cls, xa, e, np.ascontiguousarray(starts, dtype=np.int64), hi, lo)
    return [(int(u) << exact_sum.LO_BITS) + int(v) for u, v in zip(hi.tolist(), lo.tolist(),
                                                                   strict=True)]  # fmt: skip
