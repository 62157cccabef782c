"""Quality measures in their own units, fitted in standardized ones.

A quality fusion's term ``q~_m' W q~_s`` multiplies a model-side and a segment-side measure: a
duration in samples (``1e5``-``1e7``) makes products of ``1e14``, whose gradient dwarfs the
systems' weights', so the solver's relative stopping test passes short of the minimum; a
measure far from 0 for its spread (``1000 +- 3``) is nearly collinear with the constant 1,
which the fit checks read as parameters the data do not determine. The model itself does not
depend on the units: mapping both sides' measures by ``q -> (q - c) / h`` is an affine change
``q~ -> T q~`` that ``W`` absorbs (``W = T' W' T``, the corner moved to the offset). So the fit
runs in standardized measures where they are far from 0 or from unit spread, and the
parameters are mapped back; the L2 penalty stays the one on the original parameters
(:func:`penalty_block`), so the optimum is the same.

Examples
--------
>>> qm = np.array([[1000.0, 1.0], [1004.0, 1.0], [0.0, 0.0]])  # the last id has no quality
>>> qs = np.array([[1002.0, 1.0]])
>>> centers, scales = quality_standardization(qm, qs)
>>> centers.tolist(), scales.tolist()  # the median, half the interquartile range
([1002.0], [1.0])
>>> standardize_block(qm, centers, scales).tolist()
[[-2.0, 1.0], [2.0, 1.0], [0.0, 0.0]]
>>> x = np.array([0.5, 0.1, 0.25, -0.5])  # b, a, then W' = [[0.25, -0.5], [-0.5, 0]]
>>> back = unstandardize(x, 1, centers, scales)
>>> w_std = (qm[0, 0] - 1002.0) / 1.0, (qs[0, 0] - 1002.0) / 1.0  # the same term both ways
>>> term = 0.1 + 0.25 * w_std[0] * w_std[1] - 0.5 * (w_std[0] + w_std[1])
>>> W = quality_matrix(back[2:], 1)
>>> bool(np.isclose(back[1] + np.r_[qm[0, 0], 1] @ W @ np.r_[qs[0, 0], 1], term))
True
"""

from __future__ import annotations

import dask.array as da
import numpy as np

from bosaris_dask.objectives.kernel import n_quality_params, quality_matrix, quality_params

__all__ = [
    "quality_standardization",
    "standardize_block",
    "standardize_vectors",
    "unstandardize",
    "penalty_block",
    "mapped_back_error",
    "QUALITY_OFFSET_RATIO",
    "QUALITY_SPREAD_BOUNDS",
    "MAPPED_BACK_TOLERANCE",
]

#: A measure more than this many half-ranges from 0, or with a half-range outside these
#: bounds, is fitted standardized. Stricter than the scores' (``OFFSET_RATIO``,
#: ``SPREAD_BOUNDS``): the quality term multiplies two measures, so their products carry the
#: square of a measure's scale.
QUALITY_OFFSET_RATIO, QUALITY_SPREAD_BOUNDS = 10.0, (1e-2, 1e2)

#: The largest difference between a trial's quality term fitted in standardized measures and
#: the same term of the parameters mapped back (:func:`mapped_back_error`, relative to the
#: largest term) before the fit runs again in the measures' own units: mapped back, ``W``'s
#: entries grow with the square of a centre's distance in scales, and a fused score cancels
#: terms of that size (``1000 +- 1e-5``: LLRs off by thousands).
MAPPED_BACK_TOLERANCE = 1e-6


def quality_standardization(qm: np.ndarray, qs: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Each measure's centre and scale over both sides' ids with quality (``qm``, ``qs``: the
    ``q~`` vectors of :func:`~bosaris_dask.objectives.quality_sides`, a constant 1 last, zero
    rows without quality), where one measure lies more than :data:`QUALITY_OFFSET_RATIO`
    scales from 0 or has a scale outside :data:`QUALITY_SPREAD_BOUNDS`; else ``None``.

    The centre is the median and the scale half the interquartile range (half the whole range
    where the quartiles meet): one far outlier (a duration of ``1e9`` among values of 1-3) does
    not squeeze every other id's measure into a sliver, which left the fit short of its
    minimum. A constant measure keeps centre 0 and scale 1 (the fit checks name it as it
    is). A centre very far from 0 for its scale (``1000 +- 1e-3``) makes a map back that
    float64 cannot hold: :func:`mapped_back_error` tells, and the fit then runs in the
    measures' own units.

    >>> quality_standardization(np.array([[0.5, 1.0], [-1.0, 1.0]]), np.array([[2.0, 1.0]]))
    >>> [c.tolist() for c in quality_standardization(np.array([[3e5, 1.0], [2e5, 1.0]]),
    ...                                              np.array([[1e5, 1.0]]))]
    [[200000.0], [50000.0]]
    """
    rows = np.concatenate([qm[qm[:, -1] != 0, :-1], qs[qs[:, -1] != 0, :-1]])
    if rows.size == 0:
        return None
    q25, mid, q75 = np.percentile(rows, [25, 50, 75], axis=0)
    lo, hi = rows.min(axis=0), rows.max(axis=0)
    half = np.where(q75 > q25, (q75 - q25) / 2, (hi - lo) / 2)
    varies = half > 0
    far = np.abs(mid) > QUALITY_OFFSET_RATIO * half
    odd = (half < QUALITY_SPREAD_BOUNDS[0]) | (half > QUALITY_SPREAD_BOUNDS[1])
    if not np.any((far | odd) & varies):
        return None
    return np.where(varies, mid, 0.0), np.where(varies, half, 1.0)


def standardize_block(q: np.ndarray, centers: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """``q~`` vectors (the last axis: the measures, then the constant 1; zero rows without
    quality) with each measure mapped to ``(q - c) / h``; rows without quality stay zero."""
    out = np.zeros_like(q, dtype=np.float64)
    has = q[..., -1] != 0
    out[..., :-1] = np.where(has[..., None], (q[..., :-1] - centers) / scales, 0.0)
    out[..., -1] = q[..., -1]
    return out


def standardize_vectors(q: da.Array, centers: np.ndarray, scales: np.ndarray) -> da.Array:
    """:func:`standardize_block` on each block of a lazy array of ``q~`` vectors (per id, or
    per cell for packed trials; every block holds whole vectors)."""
    return q.map_blocks(standardize_block, centers=centers, scales=scales, dtype=np.float64)


def _affine(centers: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """``T`` with ``T q~ = ((q - c) / h, 1)``."""
    n = len(centers)
    T = np.eye(n + 1)
    T[:n, :n] = np.diag(1.0 / scales)
    T[:n, n] = -centers / scales
    return T


def _map_quality(w_std: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, float]:
    """The free entries of ``W = T' W' T`` and its corner (which the offset takes)."""
    n_measures = T.shape[0] - 1
    W = T.T @ quality_matrix(w_std, n_measures) @ T
    return quality_params(W), float(W[-1, -1])


def unstandardize(
    x: np.ndarray, n_systems: int, centers: np.ndarray, scales: np.ndarray
) -> np.ndarray:
    """Parameters fitted on standardized measures (``K`` weights, the offset, ``W'``'s free
    entries) as those of the original measures: ``W = T' W' T``, its corner added to the
    offset. The fused scores are the same."""
    x = np.asarray(x, dtype=np.float64).copy()
    k = n_systems
    w, corner = _map_quality(x[k + 1 :], _affine(centers, scales))
    x[k + 1 :] = w
    x[k] += corner
    return x


def penalty_block(centers: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """``M' M`` for the linear map ``M`` from ``W'``'s free entries to ``W``'s: the L2
    penalty ``||w||^2`` on the original entries, as a quadratic form in the standardized
    ones (the corner goes to the offset, which is not penalized).

    >>> P = penalty_block(np.array([0.0]), np.array([2.0]))  # W[0, 0] = W'[0, 0] / 4, ...
    >>> np.round(P, 4).tolist()
    [[0.0625, 0.0], [0.0, 0.25]]
    """
    T = _affine(centers, scales)
    n = n_quality_params(len(centers))
    M = np.column_stack([_map_quality(e, T)[0] for e in np.eye(n)])
    return M.T @ M


def _extremes_and_sample(q: np.ndarray, size: int = 512) -> np.ndarray:
    """Up to ``size`` evenly spaced rows of ``q`` and each measure's smallest and largest."""
    if len(q) <= size:
        return q
    rows = np.r_[np.linspace(0, len(q) - 1, size).astype(np.intp),
                 q[:, :-1].argmin(axis=0), q[:, :-1].argmax(axis=0)]  # fmt: skip
    return q[np.unique(rows)]


def mapped_back_error(
    x_std: np.ndarray,
    x: np.ndarray,
    n_systems: int,
    qm: np.ndarray,
    qs: np.ndarray,
    centers: np.ndarray,
    scales: np.ndarray,
) -> float:
    """The largest difference between the quality terms (offset included) of the fitted
    standardized parameters ``x_std`` on standardized measures and of the mapped-back ``x`` on
    the measures themselves, over the pairs of ids with quality (``qm``, ``qs``: the ``q~``
    vectors; up to 512 ids a side and each measure's extremes; no pass over the trials),
    relative to the largest term (at least 1).

    >>> qm, qs = np.array([[1000.0, 1.0], [1004.0, 1.0]]), np.array([[1002.0, 1.0]])
    >>> c, h = np.array([1002.0]), np.array([2.0])
    >>> x = np.array([0.5, 0.1, 0.25, -0.5])
    >>> mapped_back_error(x, unstandardize(x, 1, c, h), 1, qm, qs, c, h) < 1e-9
    True
    """
    k, n = n_systems, len(centers)
    am, as_ = (_extremes_and_sample(q[q[:, -1] != 0]) for q in (qm, qs))
    W_std, W = quality_matrix(x_std[k + 1 :], n), quality_matrix(x[k + 1 :], n)
    std = (
        x_std[k]
        + standardize_block(am, centers, scales) @ W_std @ standardize_block(as_, centers, scales).T
    )
    raw = x[k] + am @ W @ as_.T
    return float(
        np.max(np.abs(raw - std), initial=0.0) / max(1.0, np.max(np.abs(std), initial=0.0))
    )
