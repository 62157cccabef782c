r"""Each embedding's mean and standard deviation over the whole cohort, from the cohort's mean
and covariance: no cohort score is computed.

For prepared rows ``e`` (an embedding) and ``c_1 .. c_n`` (the cohort), the scores ``e . c_j``
are linear in ``c_j``, so their mean and population variance are

.. math::

    \mu(e) = e \cdot \bar c, \qquad \sigma^2(e) = e^\top \Sigma\, e, \qquad
    \Sigma = \frac1n \sum_j (c_j - \bar c)(c_j - \bar c)^\top

with ``c̄`` and ``Σ`` the cohort's mean and population covariance: ``O(d)`` and ``O(d^2)`` per
embedding instead of ``O(n d)``. ``c̄`` and ``Σ`` are computed once (:func:`cohort_moments`),
in float64 and in a fixed order (sequential sums over chunks of :data:`CHUNK` cohort rows, the
chunks' partial sums then added in order; deviations from the first cohort row, so that a
cohort of equal vectors has ``Σ = 0`` exactly and every standard deviation is exactly 0); the
per-embedding products (:func:`row_moments`) too, so the statistics do not depend on the BLAS,
the chunking or the thread count. Rounding may make ``e^T Σ e`` a tiny negative number: it is
clipped at 0.

**What they are the statistics of.** They are the mean and standard deviation of the *exact*
dot products ``x_j = e . c_j`` of the prepared rows (the scores before their rounding to
float32), up to float64 rounding. That error is absolute in ``σ²`` (the terms of
``e^T Σ e`` may cancel) and bounded per row (:func:`error_bounds`: at most 3e-13 for cosine
scores of d = 256 against 1e5 cohort rows); a row whose bound exceeds :data:`TRUSTED` times
its ``σ²`` (dot scores whose cohort spreads far more across ``e`` than along it: 1% off for a
cohort 1e7 times wider across than along) takes the statistics of its own cohort products
(:func:`direct_moments`), which the caller computes. The cohort scores ``r_j = fl32(x_j)``
that the previous implementation averaged differ from them by ``|r_j - x_j| <= 2^-24 |x_j|``
(float32 round to nearest), so

- ``|mean(r) - mean(x)| <= 2^-24 mean(|x|)``, and
- ``|std(r) - std(x)| <= 2^-24 sqrt(mean(x^2))`` (the standard deviation is the norm of the
  centered vector over ``sqrt(n)``, and centering is a contraction),

i.e. at most ``2^-24`` (6e-8) of the cosine scale: a relative ``2^-24`` of the mean of ``|x|``,
and of the standard deviation unless the spread is far smaller than the scores themselves.

Examples
--------
>>> import numpy as np
>>> c = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
>>> mean, cov = cohort_moments(c)
>>> row_moments(np.array([[1.0, 0.0]]), mean, cov).tolist()  # scores 1, 0, -1
[[0.0, 0.816496580927726]]
"""

from __future__ import annotations

import numpy as np

from bosaris_dask.passes.jit import compiled

__all__ = ["CHUNK", "TRUSTED", "cohort_moments", "row_moments", "error_bounds", "direct_moments"]

#: Cohort rows summed sequentially before their partial sum joins the total (bounds the
#: rounding error of the sums to about ``(CHUNK + n / CHUNK)`` units of roundoff).
CHUNK = 256


def _moments_loop(c, mean, cov, dev, part):  # pragma: no cover - compiled by numba
    n, d = c.shape
    for k in range(d):
        mean[k] = 0.0
    for start in range(0, n, CHUNK):  # the mean of the deviations from c[0]
        for k in range(d):
            part[0, k] = 0.0
        for j in range(start, min(start + CHUNK, n)):
            for k in range(d):
                part[0, k] += c[j, k] - c[0, k]
        for k in range(d):
            mean[k] += part[0, k]
    for k in range(d):
        mean[k] = c[0, k] + mean[k] / n
    for k in range(d):
        for m in range(d):
            cov[k, m] = 0.0
    for start in range(0, n, CHUNK):
        for k in range(d):
            for m in range(d):
                part[k, m] = 0.0
        for j in range(start, min(start + CHUNK, n)):
            for k in range(d):
                dev[k] = c[j, k] - mean[k]
            for k in range(d):
                x = dev[k]
                row, src = part[k, k:], dev[k:]  # the upper triangle (x * y == y * x: the
                for m in range(d - k):  # lower is its mirror); slices from 0 vectorize
                    row[m] += x * src[m]
        for k in range(d):
            for m in range(k, d):
                cov[k, m] += part[k, m]
    for k in range(d):
        for m in range(k, d):
            cov[k, m] /= n
            cov[m, k] = cov[k, m]


def _moments_numpy(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The loop of :func:`_moments_loop` in numpy: the same operations in the same order."""
    n, d = c.shape
    total = np.zeros(d)
    for start in range(0, n, CHUNK):
        part = np.zeros(d)
        for row in c[start : start + CHUNK] - c[0]:
            part += row
        total += part
    mean = c[0] + total / n
    cov = np.zeros((d, d))
    for start in range(0, n, CHUNK):
        dev = c[start : start + CHUNK] - mean
        outer = dev[:, :, None] * dev[:, None, :]
        part = np.zeros((d, d))
        for o in outer:
            part += o
        cov += part
    cov /= n
    return mean, cov


def cohort_moments(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mean ``(d,)`` and population covariance ``(d, d)`` of the rows of ``c`` (float64, a
    fixed summation order; the compiled loop and the numpy path give the same bits)."""
    c = np.ascontiguousarray(c, dtype=np.float64)
    n, d = c.shape
    loop = compiled(_moments_loop)
    if loop is None:
        return _moments_numpy(c)
    mean, cov = np.empty(d), np.empty((d, d))
    loop(c, mean, cov, np.empty(d), np.empty((max(d, 1), d)))
    return mean, cov


def _rows_loop(e, mean, cov, out, t):  # pragma: no cover - compiled by numba
    m, d = e.shape
    for i in range(m):
        mu = 0.0
        for k in range(d):
            mu += e[i, k] * mean[k]
        for k in range(d):
            t[k] = 0.0
        for m2 in range(d):
            x = e[i, m2]
            for k in range(d):
                t[k] += x * cov[m2, k]
        q = 0.0
        for k in range(d):
            q += e[i, k] * t[k]
        out[i, 0] = mu
        out[i, 1] = np.sqrt(max(q, 0.0))


def _rows_numpy(e: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    m, d = e.shape
    mu, t, q = np.zeros(m), np.zeros((m, d)), np.zeros(m)
    for k in range(d):
        mu += e[:, k] * mean[k]
    for k in range(d):
        t += e[:, k, None] * cov[k]
    for k in range(d):
        q += e[:, k] * t[:, k]
    return np.stack([mu, np.sqrt(np.maximum(q, 0.0))], axis=1)


def row_moments(e: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """``(m, 2)``: each row's mean ``e . mean`` and standard deviation ``sqrt(e^T cov e)``
    (clipped at 0) of its scores against the cohort of :func:`cohort_moments`."""
    e = np.ascontiguousarray(e, dtype=np.float64)
    loop = compiled(_rows_loop)
    if loop is None:
        return _rows_numpy(e, mean, cov)
    out = np.empty((e.shape[0], 2))
    loop(e, np.ascontiguousarray(mean), np.ascontiguousarray(cov), out, np.empty(e.shape[1]))
    return out


#: A row's ``σ²`` from ``e^T Σ e`` is kept where :func:`error_bounds` is at most this fraction of
#: it (``σ`` then within about ``2^-31`` of the exact products' std, far below float32's
#: ``2^-24``); other rows take :func:`direct_moments`.
TRUSTED = 2.0**-30


def error_bounds(e: np.ndarray, cov: np.ndarray, n: int) -> np.ndarray:
    """``(m,)``: a bound on the float64 rounding error of each row's ``σ² = e^T Σ e``, that of
    ``Σ`` (from ``n`` cohort rows, :func:`cohort_moments`) included: twice
    ``(2 d + CHUNK + n / CHUNK + 8) 2^-53 (sum_k |e_k| sqrt(Σ_kk))^2`` (each entry of ``Σ`` is
    a mean of products whose magnitudes average at most ``sqrt(Σ_kk Σ_mm)``). For cosine
    scores it is at most about ``3e-13`` at d = 256 and ``n = 1e5`` (unit rows:
    ``|e|^2 tr Σ <= 1``); where the terms of
    ``e^T Σ e`` cancel (a cohort spread far more across ``e`` than along it), it exceeds
    :data:`TRUSTED` times ``σ²``.

    Examples
    --------
    >>> c = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    >>> mean, cov = cohort_moments(c)
    >>> bool(error_bounds(np.array([[1.0, 0.0]]), cov, 3)[0] < TRUSTED * (2 / 3))
    True
    """
    e = np.asarray(e, dtype=np.float64)
    spread = np.sqrt(np.maximum(np.diagonal(cov), 0.0))
    w = (np.abs(e) * spread).sum(axis=1)  # a fixed order: the same decision on every machine
    return 2.0 * (2 * e.shape[1] + CHUNK + n / CHUNK + 8) * 2.0**-53 * w * w


def direct_moments(e: np.ndarray, cohort: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """``(m, 2)``: each row's mean and population std of its products with the cohort rows,
    from the products themselves: ``y_j = (c_j - mean) . e`` in float64 (an error relative to
    ``|c_j - mean| |e|``, not to the cohort's whole spread), summed exactly
    (:func:`math.fsum`, two passes): the same bits whatever the BLAS or the threads.

    Examples
    --------
    >>> c = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    >>> direct_moments(np.array([[1.0, 0.0]]), c, c.mean(axis=0)).tolist()  # scores 1, 0, -1
    [[0.0, 0.816496580927726]]
    """
    import math

    c = np.asarray(cohort, dtype=np.float64)
    n = len(c)
    out = np.empty((len(e), 2))
    for i, row in enumerate(np.asarray(e, dtype=np.float64)):
        y = np.concatenate([((c[start : start + CHUNK] - mean) * row).sum(axis=1)
                            for start in range(0, n, CHUNK)])  # fmt: skip
        shift = math.fsum(y) / n
        out[i, 0] = math.fsum(row * mean) + shift
        out[i, 1] = math.sqrt(math.fsum((y - shift) ** 2) / n)
    return out
