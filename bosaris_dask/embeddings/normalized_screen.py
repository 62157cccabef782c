r"""The float32 screen of a block of normalized scores (Z-, T-, S- and AS-norm) for the engine's
refinement passes: exact scores only near the candidate bins.

A normalized score is ``n = fl32(G(r))``: ``r`` the exact raw score of the pair (the exact dot
product rounded once to float32, :mod:`bosaris_dask.embeddings.rounding`) and ``G`` the float64
arithmetic of :mod:`bosaris_dask.embeddings.normalization` (``(r - mu) / sigma`` per side, or
half the sum of both sides'). Each of its operations is correctly rounded, hence
non-decreasing in its argument (``sigma > 0``), so ``G`` and ``fl32`` are non-decreasing
functions of ``r``. With ``v`` the float32 product of the float32-rounded rows and ``e`` the
bound of :func:`~bosaris_dask.embeddings.rounding.screen_factors` (``v - e <= r <= v + e``):

    ``fl32(G(v - e)) <= n <= fl32(G(v + e))``

exactly, with no error analysis of ``G``. :func:`screen_normalized_block` gives every pair
whose interval meets a score range its exact normalized score (its exact raw score, then the
same ``G``: the bits of the exact block), and every other pair ``fl32(G(v))``, which lies in
the interval, so outside every range. The compiled loop tests first, per value of the top 16
bits of ``fl32(G(v))``, whether the value can be near a range at all (a table widened by more
than any interval's width: ``2.1 alpha e`` plus float32 rounding, ``alpha`` the largest slope
of ``G``); the numpy path (the reference) tests every pair's interval.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> a, b = rng.normal(size=(40, 8)), rng.normal(size=(50, 8))
>>> a /= np.linalg.norm(a, axis=1, keepdims=True)
>>> b /= np.linalg.norm(b, axis=1, keepdims=True)
>>> mu_e, sd_e = rng.normal(0, 0.1, 40), rng.uniform(0.2, 0.4, 40)
>>> mu_t, sd_t = rng.normal(0, 0.1, 50), rng.uniform(0.2, 0.4, 50)
>>> exact = normalized_block(a, b, mu_e, sd_e, mu_t, sd_t, "s")
>>> got, recomputed = screen_normalized_block(a, b, mu_e, sd_e, mu_t, sd_t, "s",
...                                           np.array([1.0]), np.array([2.0]))
>>> inside = (exact >= 1.0) & (exact <= 2.0)
>>> bool((got[inside] == exact[inside]).all()), bool(((got < 1) | (got > 2))[~inside].all())
(True, True)
>>> int(inside.sum()) <= recomputed < 40 * 50
True
"""

from __future__ import annotations

import numpy as np

from bosaris_dask.embeddings.kernel import score_block
from bosaris_dask.embeddings.rounding import (
    exact_pairs,
    product_bound,
    screen_factors,
)
from bosaris_dask.embeddings.screen import (
    SCREEN_PARTS,
    STRIP_CELLS,
    _certified_dot,
    _meets,
    bucket_lut,
    count_block,
)
from bosaris_dask.passes.blas import pinned_blas
from bosaris_dask.passes.jit import compiled

__all__ = [
    "KINDS", "normalized_values", "normalized_block", "screen_normalized_block",
    "screened_normalized",
]  # fmt: skip

#: The normalizations by their code in the loops: the enrolment side's statistics (z), the
#: test side's (t), half the sum of both (s; AS-norm is s with top-N statistics).
KINDS = {"z": 0, "t": 1, "s": 2, "as": 2}


def normalized_values(s, mu_e, sd_e, mu_t, sd_t, kind: int):
    """``G(s)`` in float64, the operations of :func:`normalized_block` (scalars or arrays that
    broadcast).

    >>> float(normalized_values(0.6, 0.5, 0.5, 0.0, 1.0, 0))
    0.19999999999999996
    """
    if kind == 0:
        return (s - mu_e) / sd_e
    if kind == 1:
        return (s - mu_t) / sd_t
    return 0.5 * ((s - mu_e) / sd_e + (s - mu_t) / sd_t)


def normalized_block(a, b, mu_e, sd_e, mu_t, sd_t, norm: str, device: str = "cpu") -> np.ndarray:
    """The exact float32 block of ``norm``-normalized scores of prepared rows ``a`` and ``b``
    (:data:`KINDS`; the statistics per row of ``a`` and of ``b``): ``fl32(G(r))``, ``r`` each
    pair's exact raw score (its product on ``device``: :func:`~bosaris_dask.embeddings.kernel
    .score_block`), ``G`` in float64 (:func:`normalized_values`)."""
    s = score_block(a, b, device).astype(np.float64)
    out = normalized_values(s, mu_e[:, None], sd_e[:, None], mu_t[None, :], sd_t[None, :],
                            KINDS[norm])  # fmt: skip
    return out.astype(np.float32)


def _norm_loop(a, b, v, bits, me, se, mt, st, kind, lut, na, nb, c, t, lo, hi, bound):
    # pragma: no cover - compiled by numba; tested against the numpy path
    flagged = 0
    uncertain = 0
    for i in range(v.shape[0]):
        ci = c * na[i]
        for j in range(v.shape[1]):
            x = np.float64(v[i, j])
            v[i, j] = np.float32(normalized_values(x, me[i], se[i], mt[j], st[j], kind))
            if not lut[bits[i, j] >> 16]:
                continue
            e = ci * nb[j] + t
            low = np.float64(np.float32(normalized_values(x - e, me[i], se[i], mt[j], st[j], kind)))
            high = np.float64(
                np.float32(normalized_values(x + e, me[i], se[i], mt[j], st[j], kind))
            )
            if not _meets(lo, hi, low, high):
                continue
            flagged += 1
            r = _certified_dot(a, b, i, j, bound)
            if r == r:
                v[i, j] = np.float32(
                    normalized_values(np.float64(r), me[i], se[i], mt[j], st[j], kind)
                )
            else:
                v[i, j] = r
                uncertain += 1
    return flagged, uncertain


def _loop():
    """The compiled loop, or ``None`` without numba (``normalized_values`` on scalars: the
    same float64 operations)."""
    return compiled(_norm_loop, calls=(*SCREEN_PARTS, normalized_values))


def _widen(lo, hi, e_max: float, slope: float) -> float:
    """More than ``fl32(G(v + e)) - fl32(G(v - e))`` for any pair whose interval meets a range:
    ``G``'s increase over ``2e`` (slope at most ``slope``, its float64 roundings relative
    ``2^-50``) plus two float32 roundings of values at most the largest finite range end (and
    the width) in magnitude."""
    ends = np.abs(np.concatenate([lo, hi]))
    big = float(ends[np.isfinite(ends)].max(initial=0.0))
    width = 2.1 * slope * e_max
    return width + 2.0**-21 * (big + width + 1.0)


def _exact_normalized(a, b, rows, cols, stats, kind, a_max, b_max) -> np.ndarray:
    """The exact normalized scores of the listed pairs."""
    mu_e, sd_e, mu_t, sd_t = stats
    r = exact_pairs(a, b, rows, cols, a_norm=a_max, b_norm=b_max).astype(np.float64)
    return normalized_values(r, mu_e[rows], sd_e[rows], mu_t[cols], sd_t[cols], kind).astype(
        np.float32
    )


def screen_normalized_block(
    a: np.ndarray, b: np.ndarray, mu_e: np.ndarray, sd_e: np.ndarray, mu_t: np.ndarray,
    sd_t: np.ndarray, norm: str, lo: np.ndarray, hi: np.ndarray, *, compiled_loop: bool = True,
) -> tuple[np.ndarray, int]:  # fmt: skip
    """The screened float32 block of normalized scores of prepared rows ``a`` and ``b`` (the
    statistics per row of ``a`` and of ``b``) for the ranges ``[lo[k], hi[k]]`` (ascending,
    disjoint), and how many of its pairs were recomputed exactly."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    lo = np.ascontiguousarray(lo, dtype=np.float64)
    hi = np.ascontiguousarray(hi, dtype=np.float64)
    stats = tuple(np.ascontiguousarray(x, dtype=np.float64) for x in (mu_e, sd_e, mu_t, sd_t))
    kind = KINDS[norm]
    shape = (a.shape[0], b.shape[0])
    if not len(lo):  # no range: any value will do
        return np.zeros(shape, dtype=np.float32), 0
    na = np.sqrt(np.einsum("ij,ij->i", a, a))
    nb = np.sqrt(np.einsum("ij,ij->i", b, b))
    a_max, b_max = float(na.max(initial=0.0)), float(nb.max(initial=0.0))
    factors = screen_factors(a.shape[1], a_max, b_max)
    if factors is None or not shape[0] or not shape[1]:
        return normalized_block(a, b, *stats, norm), shape[0] * shape[1]
    c, t = factors
    v = np.empty(shape, dtype=np.float32)
    with pinned_blas():
        np.matmul(a.astype(np.float32), b.astype(np.float32).T, out=v)
    loop = _loop() if compiled_loop else None
    if loop is not None:
        e_max = 1.01 * (c * a_max * b_max + t)
        inv_e, inv_t = 1.0 / stats[1].min(), 1.0 / stats[3].min()
        slope = inv_e if kind == 0 else inv_t if kind == 1 else 0.5 * (inv_e + inv_t)
        lut = bucket_lut(lo, hi, _widen(lo, hi, e_max, slope))
        flagged, uncertain = loop(a, b, v, v.view(np.uint32), *stats, kind, lut, na, nb, c, t,
                                  lo, hi, product_bound(a.shape[1], a_max, b_max))  # fmt: skip
        if uncertain:  # the few products too close to a float32 boundary: exactly
            flat = np.flatnonzero(np.isnan(v))
            rows, cols = np.divmod(flat, shape[1])
            v.reshape(-1)[flat] = _exact_normalized(a, b, rows, cols, stats, kind, a_max, b_max)
        return v, int(flagged)
    flagged = []
    step = max(1, STRIP_CELLS // max(1, shape[1]))
    for start in range(0, shape[0], step):
        rows = slice(start, start + step)
        x = v[rows].astype(np.float64)
        e = (c * na[rows])[:, None] * nb[None, :] + t
        me, se = stats[0][rows, None], stats[1][rows, None]
        ends = [normalized_values(y, me, se, stats[2], stats[3], kind).astype(np.float32)
                for y in (x - e, x + e, x)]  # fmt: skip
        low, high = (y.astype(np.float64) for y in ends[:2])
        at = np.searchsorted(hi, low, side="left")
        meets = at < len(hi)
        meets[meets] = lo[at[meets]] <= high[meets]
        v[rows] = ends[2]
        flagged.append(np.flatnonzero(meets) + start * shape[1])
    flat = np.concatenate(flagged)
    rows_, cols_ = np.divmod(flat, shape[1])
    v.reshape(-1)[flat] = _exact_normalized(a, b, rows_, cols_, stats, kind, a_max, b_max)
    return v, len(flat)


def screened_normalized(a, b, mu_e, sd_e, mu_t, sd_t, *, norm: str, lo: np.ndarray,
                        hi: np.ndarray) -> np.ndarray:  # fmt: skip
    """:func:`screen_normalized_block`'s block alone (the chunk function of a screened
    normalized matrix), counted in :func:`bosaris_dask.embeddings.screen.counts`."""
    v, recomputed = screen_normalized_block(a, b, mu_e, sd_e, mu_t, sd_t, norm, lo, hi)
    count_block(v.size, recomputed)
    return v
