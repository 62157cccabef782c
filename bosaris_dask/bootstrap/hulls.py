"""The ROC convex hulls of many histograms at once, and their EER, minCllr and minDCF.

A bootstrap has ``1 + B`` weighted histograms per system and condition (thousands per
evaluation with ``--by``). :func:`bosaris_dask.roc.hull_from_counts` and the metrics of one hull
cost some twenty numpy calls each, about 0.2 ms a histogram of a few hundred bins; here every
hull is found by one loop over the rows (compiled where numba is installed, else
:func:`~bosaris_dask.roc.convex_minorant` per row), their vertices are laid end to end, and each
metric is one vectorised expression over all of them, reduced per row (``np.maximum.reduceat``
and ``np.minimum.reduceat``, exact; sums along the rows of a 2-D array per run length, in
numpy's pairwise order over each row's own run).
The values are those of the one-hull functions, bit for bit: the same vertices, the same
elementwise operations, the same reductions (``tests/test_bootstrap_hulls.py`` compares them).

Examples
--------
>>> import numpy as np
>>> from bosaris_dask import roc
>>> n_tar, n_non = np.array([[1, 0, 1, 2], [0, 1, 1, 1]]), np.array([[2, 1, 1, 0], [1, 1, 0, 0]])
>>> hulls = row_hulls(n_tar, n_non)
>>> eer = rows_eer(hulls)
>>> eer.tolist() == [roc.hull_eer(roc.hull_from_counts(t, n)) for t, n in zip(n_tar, n_non)]
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from bosaris_dask import roc
from bosaris_dask.passes.jit import compiled
from bosaris_dask.roc import _minorant_loop

__all__ = ["RowHulls", "row_hulls", "rows_eer", "rows_min_cllr", "rows_min_bayes_error"]


@dataclass(frozen=True)
class RowHulls:
    """The hulls of ``R`` histograms, their vertices end to end.

    Attributes
    ----------
    starts
        ``(R + 1,)``: row ``r``'s vertices are ``starts[r]:starts[r + 1]`` (at least two).
    misses, false_alarms
        ``(V,)`` int64 error counts at each vertex, as :class:`~bosaris_dask.roc.Hull`'s.
    n_target, n_nontarget
        ``(R,)`` int64 totals of each row.
    """

    starts: np.ndarray
    misses: np.ndarray
    false_alarms: np.ndarray
    n_target: np.ndarray
    n_nontarget: np.ndarray

    def per_vertex(self, values: np.ndarray) -> np.ndarray:
        """A per-row array repeated for each of the row's vertices."""
        return np.repeat(values, np.diff(self.starts), axis=0)


def _rows_loop(xs, ys, stacks, tops):  # pragma: no cover
    # compiled by numba: roc._minorant_loop over each row
    for r in range(xs.shape[0]):
        tops[r] = _minorant_loop(xs[r], ys[r], stacks[r])


def row_hulls(n_tar: np.ndarray, n_non: np.ndarray) -> RowHulls:
    """The ROC convex hull of each row of ``(R, bins)`` integer counts (ascending score), as
    :func:`~bosaris_dask.roc.hull_from_counts` finds it; every row needs a target and a
    non-target."""
    n_tar, n_non = np.asarray(n_tar, dtype=np.int64), np.asarray(n_non, dtype=np.int64)
    zero = np.zeros((len(n_tar), 1), dtype=np.int64)
    cum_tar = np.concatenate([zero, np.cumsum(n_tar, axis=1)], axis=1)
    cum_non = np.concatenate([zero, np.cumsum(n_non, axis=1)], axis=1)
    loop = compiled(_rows_loop, calls=[_minorant_loop])
    if loop is not None and cum_tar.size and max(cum_tar[:, -1].max(), cum_non[:, -1].max()) \
            < roc._COMPILED_HULL_LIMIT:  # fmt: skip
        stacks = np.empty((cum_tar.shape[0], cum_tar.shape[1] + 1), dtype=np.int64)
        tops = np.empty(len(cum_tar), dtype=np.int64)
        loop(cum_non, cum_tar, stacks, tops)
        positions = [stacks[r, :top] for r, top in enumerate(tops.tolist())]
    else:
        positions = [roc.convex_minorant(x, y) for x, y in zip(cum_non, cum_tar, strict=True)]
    starts = np.r_[0, np.cumsum([len(p) for p in positions])]
    rows = np.repeat(np.arange(len(positions)), np.diff(starts))
    flat = np.concatenate(positions) if positions else np.zeros(0, dtype=np.int64)
    totals = cum_non[:, -1]
    return RowHulls(starts=starts, misses=cum_tar[rows, flat],
                    false_alarms=totals[rows] - cum_non[rows, flat], n_target=cum_tar[:, -1],
                    n_nontarget=totals)  # fmt: skip


def _rates(hulls: RowHulls) -> tuple[np.ndarray, np.ndarray]:
    """Each vertex's (Pmiss, Pfa)."""
    return (hulls.misses / hulls.per_vertex(hulls.n_target),
            hulls.false_alarms / hulls.per_vertex(hulls.n_nontarget))  # fmt: skip


def _segments(hulls: RowHulls) -> tuple[np.ndarray, np.ndarray]:
    """The first vertex of each segment (all but each row's last) and each row's first
    segment among them."""
    last = hulls.starts[1:] - 1
    first = np.ones(len(hulls.misses), dtype=bool)
    first[last] = False
    return np.flatnonzero(first), hulls.starts[:-1] - np.arange(len(last))


def rows_eer(hulls: RowHulls) -> np.ndarray:
    """Each row's ROCCH-EER (:func:`~bosaris_dask.roc.hull_eer`)."""
    pmiss, pfa = _rates(hulls)
    seg, row_start = _segments(hulls)
    x1, x2, y1, y2 = pfa[seg], pfa[seg + 1], pmiss[seg], pmiss[seg + 1]
    dx, dy = x2 - x1, y2 - y1
    with np.errstate(divide="ignore", invalid="ignore"):
        crossing = (y1 * dx - x1 * dy) / (dx - dy)
    crossing = np.where((dx == 0) | (dy == 0), 0.0, crossing)
    return np.maximum(np.maximum.reduceat(crossing, row_start), 0.0)


def rows_min_cllr(hulls: RowHulls) -> np.ndarray:
    """Each row's minCllr in bits (:func:`~bosaris_dask.roc.hull_min_cllr`)."""
    seg, row_start = _segments(hulls)
    dt = (hulls.misses[seg + 1] - hulls.misses[seg]).astype(np.float64)
    dn = -(hulls.false_alarms[seg + 1] - hulls.false_alarms[seg]).astype(np.float64)
    T, N = hulls.n_target, hulls.n_nontarget
    n_seg = np.diff(np.r_[row_start, len(seg)])
    with np.errstate(divide="ignore", invalid="ignore"):
        llr = np.log(dt) - np.log(dn) - np.repeat(np.log(T / N), n_seg)
        tar_cost = np.where(dt > 0, dt * np.logaddexp(0.0, -llr), 0.0)
        non_cost = np.where(dn > 0, dn * np.logaddexp(0.0, llr), 0.0)
    # each row's sums in numpy's pairwise order over its own run, as the one-hull function's
    # (reduceat adds in another order): the rows of n segments as the rows of an (r, n) array
    tar_sum, non_sum = np.empty(len(T)), np.empty(len(T))
    for n in np.unique(n_seg).tolist():
        rows = np.flatnonzero(n_seg == n)
        at = row_start[rows][:, None] + np.arange(n)
        tar_sum[rows], non_sum[rows] = tar_cost[at].sum(axis=1), non_cost[at].sum(axis=1)
    return (tar_sum / T + non_sum / N) / (2 * np.log(2))


def rows_min_bayes_error(hulls: RowHulls, plo: np.ndarray) -> np.ndarray:
    """Each row's minimum Bayes error rate (raw minDCF, unit costs) at each prior log-odds:
    ``(R, len(plo))`` (:func:`~bosaris_dask.roc.min_bayes_error`'s first output)."""
    pmiss, pfa = _rates(hulls)
    plo = np.asarray(plo, dtype=np.float64)
    cost = expit(plo) * pmiss[:, None] + expit(-plo) * pfa[:, None]
    return np.minimum.reduceat(cost, hulls.starts[:-1], axis=0)
