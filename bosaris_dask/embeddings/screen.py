r"""The float32 screen of a block for the refinement passes: exact scores only near the
candidate bins.

Pass 1 of an evaluation needs every score (:mod:`bosaris_dask.embeddings.kernel`: the exact dot
product of the prepared float64 rows, rounded once to float32). A refinement pass needs the
exact score only of the pairs whose score can lie in one of a few score ranges (its candidate
bins: :mod:`bosaris_dask.passes.screening`); :func:`screen_block` computes a block for it as

1. the float32 product ``v = fl(a32 @ b32.T)`` of the rows rounded to float32 (sgemm: about
   half the time of the float64 product here);
2. a bound ``e`` on ``|v - x|``, ``x`` the exact score, valid for any BLAS, summation order,
   blocking and thread count, with or without subnormals flushed to zero
   (:func:`~bosaris_dask.embeddings.rounding.screen_factors`, derived there; ``1.56e-5`` for
   unit rows at ``d = 256``);
3. every pair whose interval ``[v - e, v + e]`` meets a range gets its exact score (the
   float64 dot product of its two rows, certified or recomputed exactly as in
   :mod:`bosaris_dask.embeddings.rounding`: the same bits as in any block); every other pair
   keeps ``v``, which lies outside every range since the interval around it does.

So the refinement kernels select exactly the trials, with exactly the scores, that the exact
block gives them. Blocks whose rows are too large for float32 products are computed exactly.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> a, b = rng.normal(size=(50, 8)), rng.normal(size=(60, 8))
>>> from bosaris_dask.embeddings.kernel import score_block
>>> exact = score_block(a, b)
>>> lo, hi = np.array([0.5]), np.array([1.0])  # one score range
>>> got, recomputed = screen_block(a, b, lo, hi)
>>> inside = (exact >= 0.5) & (exact <= 1.0)
>>> bool((got[inside] == exact[inside]).all())  # exact where a score can be in a range
True
>>> bool(((got < 0.5) | (got > 1.0))[~inside].all())  # outside every range elsewhere
True
>>> int(inside.sum()) <= recomputed < a.shape[0] * b.shape[0]
True
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from bosaris_dask.embeddings.kernel import score_block
from bosaris_dask.embeddings.rounding import exact_pairs, exact_round, product_bound, screen_factors
from bosaris_dask.passes.blas import pinned_blas
from bosaris_dask.passes.jit import compiled

__all__ = [
    "bucket_lut",
    "screen_block",
    "screened_scores",
    "counts",
    "reset_counts",
    "count_block",
    "SCREEN_PARTS",
]

#: Cells per strip of the numpy test (bounds its float64 temporaries).
STRIP_CELLS = 1 << 20

_COUNT_LOCK = threading.Lock()
_COUNTS = {"blocks": 0, "pairs": 0, "recomputed": 0}


def counts() -> dict[str, int]:
    """Screened blocks, their pairs, and the pairs recomputed exactly, in this process since
    :func:`reset_counts` (all threads)."""
    with _COUNT_LOCK:
        return dict(_COUNTS)


def reset_counts() -> None:
    """Set :func:`counts` back to zero."""
    with _COUNT_LOCK:
        for k in _COUNTS:
            _COUNTS[k] = 0


def _meets(lo, hi, low, high):  # pragma: no cover - compiled by numba
    """Whether ``[low, high]`` meets one of the ranges ``[lo[k], hi[k]]`` (ascending,
    disjoint): a binary search for the first range whose upper end is not below ``low``."""
    left = 0
    right = lo.shape[0]
    while left < right:
        mid = (left + right) // 2
        if hi[mid] < low:
            left = mid + 1
        else:
            right = mid
    return left < lo.shape[0] and lo[left] <= high


def _certified_dot(a, b, i, j, bound):  # pragma: no cover - compiled by numba
    """The float32 of ``a[i] . b[j]`` where ``bound`` certifies its rounding, else NaN."""
    s = 0.0
    for k in range(a.shape[1]):
        s += a[i, k] * b[j, k]
    r = np.float32(s)
    if np.float32(s - bound) == r and np.float32(s + bound) == r:
        return r
    return np.float32(np.nan)


#: The range test and certified dot product the screens' compiled loops call by name.
SCREEN_PARTS = (_meets, _certified_dot)


def _screen_loop(a, b, v, bits, lut, na, nb, c, t, lo, hi, bound):  # pragma: no cover - numba
    """Recompute, in place in ``v``, the pairs whose interval meets a range: certified
    float32 of the float64 dot product, NaN where that is not certified. ``bits`` is ``v``
    viewed as ``uint32``; a pair is tested only if ``lut`` holds its top 16 bits. Returns the
    number of pairs recomputed and of NaNs written."""
    flagged = 0
    uncertain = 0
    for i in range(v.shape[0]):
        ci = c * na[i]
        for j in range(v.shape[1]):
            if not lut[bits[i, j] >> 16]:
                continue
            x = np.float64(v[i, j])
            e = ci * nb[j] + t
            if not _meets(lo, hi, x - e, x + e):
                continue
            flagged += 1
            r = _certified_dot(a, b, i, j, bound)
            v[i, j] = r
            uncertain += r != r
    return flagged, uncertain


@functools.cache
def _bucket_ends() -> tuple[np.ndarray, np.ndarray]:
    """The lowest and highest float32 value (as float64) of each value of the top 16 bits."""
    top = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    with np.errstate(invalid="ignore"):  # the NaN patterns
        ends = [x.view(np.float32).astype(np.float64) for x in (top, top | np.uint32(0xFFFF))]
    return np.minimum(*ends), np.maximum(*ends)


def bucket_lut(lo: np.ndarray, hi: np.ndarray, widen: float) -> np.ndarray:
    """Per value of the top 16 bits of a float32 (sign, exponent, 7 mantissa bits): may a
    float32 with those bits lie within ``widen`` of a range ``[lo[k], hi[k]]``? (Infinities
    and NaNs: yes, so the exact test decides.)

    >>> lut = bucket_lut(np.array([1.0]), np.array([1.0]), 0.0)
    >>> bool(lut[np.array([1.0], dtype=np.float32).view(np.uint32)[0] >> 16])
    True
    >>> int(lut.sum())  # 1.0's bucket, and the 256 of the infinities and NaNs
    257
    """
    low, high = _bucket_ends()
    at = np.searchsorted(hi + widen, low, side="left")
    meets = at < len(hi)
    meets[meets] = (lo - widen)[at[meets]] <= high[meets]
    return meets | ~(np.isfinite(low) & np.isfinite(high))


def _flags(v: np.ndarray, na: np.ndarray, nb: np.ndarray, c: float, t: float, lo: np.ndarray,
           hi: np.ndarray) -> np.ndarray:  # fmt: skip
    """The numpy test of :func:`_screen_loop`: flat indices of the pairs to recompute (by
    strips of rows, so the float64 temporaries stay small)."""
    step = max(1, STRIP_CELLS // max(1, v.shape[1]))
    found = []
    for start in range(0, v.shape[0], step):
        x = v[start : start + step].astype(np.float64)
        e = (c * na[start : start + step])[:, None] * nb[None, :] + t
        at = np.searchsorted(hi, x - e, side="left")
        meets = at < len(hi)
        meets[meets] = lo[at[meets]] <= (x + e)[meets]
        found.append(np.flatnonzero(meets) + start * v.shape[1])
    return np.concatenate(found) if found else np.empty(0, dtype=np.intp)


def screen_block(
    a: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray, *, compiled_loop: bool = True
) -> tuple[np.ndarray, int]:
    """The screened float32 block of prepared rows ``a`` and ``b`` for the score ranges
    ``[lo[k], hi[k]]`` (ascending, disjoint), and how many of its pairs were recomputed
    exactly. ``compiled_loop``: the numba loop where numba is installed (the same exact
    scores; the numpy path is the reference)."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    lo = np.ascontiguousarray(lo, dtype=np.float64)
    hi = np.ascontiguousarray(hi, dtype=np.float64)
    shape = (a.shape[0], b.shape[0])
    if not len(lo):  # no range: any value will do
        return np.zeros(shape, dtype=np.float32), 0
    na = np.sqrt(np.einsum("ij,ij->i", a, a))
    nb = np.sqrt(np.einsum("ij,ij->i", b, b))
    a_max, b_max = float(na.max(initial=0.0)), float(nb.max(initial=0.0))
    d = a.shape[1]
    factors = screen_factors(d, a_max, b_max)
    if factors is None:
        return score_block(a, b), shape[0] * shape[1]
    c, t = factors
    v = np.empty(shape, dtype=np.float32)
    with pinned_blas():
        np.matmul(a.astype(np.float32), b.astype(np.float32).T, out=v)
    bound = product_bound(d, a_max, b_max)
    loop = compiled(_screen_loop, calls=SCREEN_PARTS) if compiled_loop else None
    if loop is not None:
        lut = bucket_lut(lo, hi, 1.01 * (c * a_max * b_max + t))
        flagged, uncertain = loop(a, b, v, v.view(np.uint32), lut, na, nb, c, t, lo, hi, bound)
        if uncertain:
            flat = np.flatnonzero(np.isnan(v))
            rows, cols = np.divmod(flat, shape[1])
            v.reshape(-1)[flat] = exact_round(a[rows], b[cols])
        return v, int(flagged)
    flat = _flags(v, na, nb, c, t, lo, hi)
    rows, cols = np.divmod(flat, shape[1])
    v.reshape(-1)[flat] = exact_pairs(a, b, rows, cols, a_norm=a_max, b_norm=b_max)
    return v, len(flat)


def count_block(pairs: int, recomputed: int) -> None:
    """Count a screened block of ``pairs`` pairs, ``recomputed`` of them exactly, in
    :func:`counts`."""
    with _COUNT_LOCK:
        _COUNTS["blocks"] += 1
        _COUNTS["pairs"] += pairs
        _COUNTS["recomputed"] += recomputed


def screened_scores(a: np.ndarray, b: np.ndarray, *, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """:func:`screen_block`'s block alone (the chunk function of a screened score matrix),
    counted in :func:`counts`."""
    v, recomputed = screen_block(a, b, lo, hi)
    count_block(v.size, recomputed)
    return v
