"""Correctly rounded float32 dot products, whatever BLAS computed them.

A score from embeddings is defined as the **exact** dot product of two prepared float64 rows,
rounded once to the nearest float32 (ties to even). A float64 matrix product is within
``gamma_d * sum_k |a_k b_k| <= gamma_d * |a| |b|`` of the exact dot product for any summation
order, so for any BLAS, thread count or blocking (``gamma_d = d u / (1 - d u)``, ``u = 2**-53``).
Where both ends of that interval round to the same float32, that float32 is the exact product's:
the score is *certified* (:func:`round_certified`). The few products too close to a float32
rounding boundary (about 1e-4 of cosine scores of random 256-dimensional embeddings, most of
them near 0) are recomputed as an error-free sum of error-free products (double-double, the
``Dot2`` of Ogita, Rump and Oishi, 2005) and certified again against its far smaller error
bound; what is still ambiguous (an exact float32 tie, products that cancel exactly) is settled
in exact rational arithmetic (:func:`exact_round`).

So a recomputed block, a block of another shape or a single pair give the same bits, and the
refinement passes of the engine find the scores of pass 1 (they recompute single pairs: the
screen of :mod:`bosaris_dask.embeddings.screen`). Exact zeros may come out as ``-0.0`` or
``+0.0``; the engine's keys make them equal (:mod:`bosaris_dask.passes.keys`).

Examples
--------
Here the float64 sum ``0.5 + 2**-25 + 2**-60`` rounds to ``0.5 + 2**-25``, a float32 tie that
rounds down to ``0.5``; the exact sum is above the tie and rounds up:

>>> import numpy as np
>>> a = np.array([[0.5, 2.0**-25, 2.0**-60]])
>>> b = np.ones((1, 3))
>>> float(np.float32(a @ b.T)[0, 0]) == 0.5
True
>>> out = np.empty((1, 1), dtype=np.float32)
>>> round_products(a @ b.T, a, b, out)
>>> float(out[0, 0]) == 0.5 + 2.0**-24
True
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from bosaris_dask.passes.jit import compiled

__all__ = [
    "product_bound",
    "round_certified",
    "exact_round",
    "round_products",
    "settle_uncertain",
    "exact_pairs",
    "screen_factors",
    "max_row_norm",
]

_U = 2.0**-53  # float64 unit roundoff
_U32 = 2.0**-24  # float32 unit roundoff
_MIN_NORMAL32 = 2.0**-126  # float32's smallest normal number
#: Rows of larger norms, or a larger product of the largest norms of both sides, are not
#: screened in float32 (their float32 products could overflow).
MAX_SCREEN_NORM = 2.0**100
#: Pairs gathered at once by :func:`exact_pairs`' numpy path (bounds its temporaries).
PAIRS_AT_ONCE = 1 << 14
_TINY = 2.0**-1074  # float64's smallest subnormal: the error of an underflowing product
_SPLIT = 134217729.0  # 2**27 + 1, Dekker's splitter


def product_bound(d: int, a_norm: float, b_norm: float) -> float:
    """An upper bound on the error of any float64 evaluation of a length-``d`` dot product of
    rows with Euclidean norms at most ``a_norm`` and ``b_norm``, widened so that the float64
    ends ``p - bound`` and ``p + bound`` still enclose the exact product.

    ``gamma_d sum_k |a_k b_k| <= gamma_d |a| |b|`` (Cauchy-Schwarz), plus ``2u |a| |b|`` for
    the rounding of the two ends, a relative ``1e-12`` for the rounding of the computed norms,
    and ``4 d`` smallest subnormals for products that underflow.
    """
    gamma = d * _U / (1.0 - d * _U)
    return (gamma + 2.0 * _U) * a_norm * b_norm * (1.0 + 1e-12) + 4.0 * d * _TINY


def _certify_loop(products, bound, out, uncertain):  # pragma: no cover - compiled by numba
    for i in range(products.shape[0]):
        for j in range(products.shape[1]):
            p = products[i, j]
            r = np.float32(p)
            out[i, j] = r
            uncertain[i, j] = (np.float32(p - bound) != r) | (np.float32(p + bound) != r)


def round_certified(
    products: np.ndarray, bound: float, out: np.ndarray, *, compiled_loop: bool = True
) -> np.ndarray:
    """Round float64 ``products`` into the float32 ``out`` and return the flat indices where the
    rounding is not certified by ``bound`` (an error bound of every product).

    Examples
    --------
    >>> p = np.array([[0.25, 1e-20]])
    >>> out = np.empty_like(p, dtype=np.float32)
    >>> round_certified(p, 1e-14, out).tolist()  # near 0 float32 is too fine for the bound
    [1]
    """
    loop = compiled(_certify_loop) if compiled_loop else None
    if loop is not None:
        uncertain = np.empty(products.shape, dtype=np.bool_)
        loop(products, bound, out, uncertain)
    else:
        np.copyto(out, products, casting="same_kind")
        uncertain = (products - bound).astype(np.float32) != out
        uncertain |= (products + bound).astype(np.float32) != out
    return np.flatnonzero(uncertain)


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = _SPLIT * x
    high = c - (c - x)
    return high, x - high


def _dot2_loop(a, b, high, low, size):  # pragma: no cover - compiled by numba
    for i in range(a.shape[0]):
        s = 0.0
        c = 0.0
        t = 0.0
        for k in range(a.shape[1]):
            x = a[i, k]
            y = b[i, k]
            p = x * y
            cx = 134217729.0 * x
            xh = cx - (cx - x)
            xl = x - xh
            cy = 134217729.0 * y
            yh = cy - (cy - y)
            yl = y - yh
            e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
            z = s + p
            w = z - s
            c += ((s - (z - w)) + (p - w)) + e
            s = z
            t += abs(p)
        high[i] = s
        low[i] = c
        size[i] = t


def _dot2(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise ``a . b`` as an unevaluated sum ``high + low`` (error-free products, error-free
    sums, their errors summed in float64; Ogita, Rump and Oishi's ``Dot2``), and an upper bound
    on its error."""
    high, low, size = np.zeros(len(a)), np.zeros(len(a)), np.zeros(len(a))
    loop = compiled(_dot2_loop)
    if loop is not None:
        loop(a, b, high, low, size)
    else:
        p = a * b
        ah, al = _split(a)
        bh, bl = _split(b)
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl  # p + e == a * b exactly
        for k in range(a.shape[1]):
            s = high + p[:, k]
            w = s - high
            low += ((high - (s - w)) + (p[:, k] - w)) + e[:, k]
            high = s
        size = np.abs(p).sum(axis=1)
    d = a.shape[1]
    return high, low, 8.0 * ((2 * d + 2) * _U) ** 2 * size + 16.0 * d * _TINY


def _neighbours(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (np.nextafter(r, np.float32(-np.inf)), np.nextafter(r, np.float32(np.inf)))


def _side_of(high: np.ndarray, low: np.ndarray, bound: np.ndarray, tie: np.ndarray) -> np.ndarray:
    """+1 or -1 where ``high + low`` (within ``bound``) is surely above or below ``tie``, else
    0. ``high - tie`` is exact or nearly so (the two are within a float32 ulp); the slack covers
    the two float64 roundings."""
    t = (high - tie) + low
    slack = bound + 2.0**-50 * (np.abs(high - tie) + np.abs(low)) + 4.0 * _TINY
    return np.where(t > slack, 1, np.where(t < -slack, -1, 0))


def _fraction_round(a: np.ndarray, b: np.ndarray) -> np.float32:
    """The exact dot product of two float64 rows rounded to float32 in rational arithmetic
    (an exact zero is ``+0.0``)."""
    exact = sum((Fraction(x) * Fraction(y) for x, y in zip(a.tolist(), b.tolist(), strict=True)),
                Fraction(0))  # fmt: skip
    if exact == 0:
        return np.float32(0.0)
    r = np.float32(float(exact))  # float() is correctly rounded: r is one float32 ulp off at most
    if not np.isfinite(r):
        return r
    down, up = _neighbours(np.asarray(r))
    best = min(
        (abs(Fraction(float(c)) - exact), int(np.asarray(c).view(np.uint32)) & 1, float(c))
        for c in (down, r, up)
        if np.isfinite(c)
    )  # nearest, ties to the even significand
    return np.float32(best[2])


def exact_round(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The exact dot products of the rows of ``a`` and ``b`` (pairwise: ``a[i] . b[i]``),
    rounded to float32.

    Examples
    --------
    >>> a = np.array([[1.0, 2.0**-30], [0.6, 0.8]])
    >>> b = np.array([[1.0, 1.0], [0.8, -0.6]])
    >>> exact_round(a, b).tolist()
    [1.0, 0.0]
    """
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    out = np.zeros(len(a), dtype=np.float32)
    if len(a) == 0:
        return out
    zero = ((a == 0) | (b == 0)).all(axis=1)  # every product an exact zero: +0.0
    high, low, bound = _dot2(a, b)
    r = high.astype(np.float32)
    down, up = _neighbours(r)
    below = _side_of(high, low, bound, (r.astype(np.float64) + down) / 2)
    above = _side_of(high, low, bound, (r.astype(np.float64) + up) / 2)
    out[:] = np.where(above > 0, up, np.where(below < 0, down, r))
    sure = (below > 0) & (above < 0) | (above > 0) | (below < 0)
    sure &= np.isfinite(down) & np.isfinite(up)
    out[zero] = 0.0
    for i in np.flatnonzero(~sure & ~zero):
        out[i] = _fraction_round(a[i], b[i])
    return out


def max_row_norm(x: np.ndarray) -> float:
    """The largest Euclidean norm of the rows of ``x`` (0 for no rows).

    >>> max_row_norm(np.array([[3.0, 4.0], [1.0, 0.0]]))
    5.0
    """
    return float(np.sqrt(np.einsum("ij,ij->i", x, x).max(initial=0.0)))


def round_products(
    products: np.ndarray, a: np.ndarray, b: np.ndarray, out: np.ndarray, *,
    b_norm: float | None = None,
) -> None:  # fmt: skip
    """Write ``products = a @ b.T`` (float64, from any BLAS) into the float32 ``out`` rounded as
    the exact products are: certified where the float64 error bound allows, recomputed
    exactly elsewhere. ``b_norm``: an upper bound on the norms of ``b``'s rows, when the
    caller has it (the strips of a block share it)."""
    b_norm = max_row_norm(b) if b_norm is None else b_norm
    failed = round_certified(products, product_bound(a.shape[1], max_row_norm(a), b_norm), out)
    settle_uncertain(out, a, b, failed)


def settle_uncertain(out: np.ndarray, a: np.ndarray, b: np.ndarray, uncertain: np.ndarray) -> None:
    """Write the exact float32 products ``a[i] . b[j]`` into ``out[i, j]`` at the flat indices
    ``uncertain`` of ``out`` (the roundings a certification left open).

    >>> a = np.array([[0.5, 2.0**-25, 2.0**-60]])
    >>> out = np.zeros((1, 1), dtype=np.float32)
    >>> settle_uncertain(out, a, np.ones((1, 3)), np.array([0]))
    >>> float(out[0, 0]) == 0.5 + 2.0**-24
    True
    """
    if uncertain.size:
        rows, cols = np.divmod(uncertain, out.shape[1])
        out[rows, cols] = exact_round(a[rows], b[cols])


def exact_pairs(
    a: np.ndarray,
    b: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    *,
    a_norm: float | None = None,
    b_norm: float | None = None,
    dots=None,
) -> np.ndarray:
    """The exact float32 scores ``fl32(a[rows[p]] . b[cols[p]])`` of the listed pairs: the bits
    :func:`round_products` gives them in any block. ``a_norm`` and ``b_norm``: upper bounds on
    the rows' norms (computed when not given); ``dots(a, b, rows, cols, out)``: a compiled loop
    writing the float64 products in any summation order (else gathered rows, in parts).

    Examples
    --------
    >>> a = np.array([[0.6, 0.8], [1.0, 0.0]])
    >>> exact_pairs(a, a, np.array([0, 1]), np.array([1, 1])).tolist()
    [0.6000000238418579, 1.0]
    """
    out = np.empty(len(rows), dtype=np.float32)
    if len(rows) == 0:
        return out
    a_norm = max_row_norm(a) if a_norm is None else a_norm
    b_norm = max_row_norm(b) if b_norm is None else b_norm
    if dots is None:
        products = np.concatenate([
            np.einsum("ij,ij->i", a[rows[s : s + PAIRS_AT_ONCE]], b[cols[s : s + PAIRS_AT_ONCE]])
            for s in range(0, len(rows), PAIRS_AT_ONCE)
        ])  # fmt: skip
    else:
        products = np.empty(len(rows))
        dots(a, b, rows, cols, products)
    bound = product_bound(a.shape[1], a_norm, b_norm)
    failed = round_certified(products[None, :], bound, out[None, :])
    if failed.size:
        out[failed] = exact_round(a[rows[failed]], b[cols[failed]])
    return out


def screen_factors(d: int, a_max: float, b_max: float) -> tuple[float, float] | None:
    r"""``(c, t)`` with ``|v - r| <= c |a| |b| + t`` for every pair of float64 rows ``a``, ``b``
    of dimension ``d`` and norms at most ``a_max`` and ``b_max``, where ``v`` is any float32
    evaluation of ``fl32(a) . fl32(b)`` (any BLAS, summation order, blocking or thread count,
    subnormals kept or flushed to zero) and ``r`` the exact score ``fl32(a . b)``; ``None``
    where the rows are too large for float32 products (:data:`MAX_SCREEN_NORM`).

    With ``u = 2**-24`` and ``gamma_d = d u / (1 - d u)``: the float32 evaluation is within
    ``gamma_d sum_k |a32_k b32_k| <= gamma_d |a32| |b32|`` of ``a32 . b32`` (Cauchy-Schwarz),
    and ``|a32| <= (1 + u) |a|``; rounding the inputs moves ``a . b`` by at most
    ``(2u + u^2) |a| |b|``; ``r`` is within ``u |a . b|`` of ``a . b``. So ``c = 1.01
    (gamma_d (1 + u)^2 + 3u + 2u^2) + 2**-40`` (the last term covers the float64 arithmetic of
    a test ``|v - x| <= e``, the factor the float64 norms), and ``t = 1.01 2**-126 (2 (1 + u)
    sqrt(d) (a_max + b_max) + 4d + 1)`` covers underflow, for inputs and every operation
    flushed to zero.

    Examples
    --------
    >>> c, t = screen_factors(256, 1.0, 1.0)
    >>> round(c, 9), t < 1e-30
    (1.5592e-05, True)
    >>> screen_factors(8, 2.0**60, 2.0**60) is None
    True
    """
    big = MAX_SCREEN_NORM
    if not (a_max < big and b_max < big and a_max * b_max < big and d * _U32 < 0.5):
        return None
    gamma = d * _U32 / (1.0 - d * _U32)
    c = 1.01 * (gamma * (1.0 + _U32) ** 2 + 3.0 * _U32 + 2.0 * _U32**2) + 2.0**-40
    t = 1.01 * _MIN_NORMAL32 * (2.0 * (1.0 + _U32) * np.sqrt(d) * (a_max + b_max) + 4.0 * d + 1.0)
    return c, float(t)
