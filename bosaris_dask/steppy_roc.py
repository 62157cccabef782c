"""The exact ROC points of a summary at its bin edges, and their score thresholds, thinned
for plotting: what the steppy DET curve and the Tippett plot draw.

A summary's bins are ascending and disjoint, so rejecting its first ``i`` bins is an exact ROC
point (the targets below the ``i``-th bin's lowest value are misses, the non-targets at or above
it false alarms). A billion-trial summary has millions of bin edges: :func:`steppy_roc_positions`
keeps those whose point moves on probit (DET) axes by more than a resolution, a few thousand.

Examples
--------
>>> from bosaris_dask.passes.score_summary import ScoreSummary
>>> from bosaris_dask.passes.keys import order_keys
>>> s = ScoreSummary(np.dtype(np.float64), lo=order_keys(np.array([-2.0, 1.0, 3.0])),
...                  bits=np.zeros(3, np.int8), n_tar=np.array([0, 1, 1]),
...                  n_non=np.array([1, 1, 0]), softplus_units=(0, 0))
>>> kept = steppy_roc_positions(s)
>>> [v.tolist() for v in (*roc_points(s, kept), roc_thresholds(s, kept))]
[[0.0, 0.0, 0.5, 1.0], [1.0, 0.5, 0.0, 0.0], [-2.0, 1.0, 3.0, inf]]
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

from bosaris_dask.passes.keys import keys_to_values
from bosaris_dask.passes.score_summary import ScoreSummary

__all__ = ["steppy_roc", "steppy_roc_positions", "roc_points", "roc_thresholds"]


def steppy_roc(summary: ScoreSummary, resolution: float = 0.005) -> tuple[np.ndarray, np.ndarray]:
    """ROC points ``(pmiss, pfa)`` at the summary's bin edges, thinned for plotting.

    Every point returned is an exact ROC point. Consecutive points closer than ``resolution``
    on probit (DET) axes are merged, so a billion-trial curve is a few thousand points: a point
    is kept where its cell ``floor(probit(p) / resolution)`` on either axis differs from the
    point before (the first and the last are always kept). :func:`steppy_roc_positions` says
    which bin edges they are (:func:`roc_thresholds` gives their score thresholds).

    Examples
    --------
    >>> s = ScoreSummary(np.dtype(np.float64), lo=np.arange(4, dtype=np.uint64),
    ...                  bits=np.zeros(4, np.int8), n_tar=np.array([0, 1, 1, 2]),
    ...                  n_non=np.array([3, 1, 0, 0]), softplus_units=(0, 0))
    >>> pmiss, pfa = steppy_roc(s)
    >>> pmiss.tolist(), pfa.tolist()
    ([0.0, 0.0, 0.25, 0.5, 1.0], [1.0, 0.25, 0.0, 0.0, 0.0])
    """
    summary = ScoreSummary.given_to("steppy_roc", summary)
    return roc_points(summary, steppy_roc_positions(summary, resolution))


def roc_points(summary: ScoreSummary, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact ROC points ``(pmiss, pfa)`` that reject the summary's first ``positions``
    bins: the miss rate of the targets below each edge, the false-alarm rate of the
    non-targets at or above it."""
    cum_tar = np.concatenate([[0], np.cumsum(summary.n_tar)])
    cum_non = np.concatenate([[0], np.cumsum(summary.n_non)])
    pfa = (cum_non[-1] - cum_non[positions]) / summary.n_nontarget
    return cum_tar[positions] / summary.n_target, pfa


def roc_thresholds(summary: ScoreSummary, positions: np.ndarray) -> np.ndarray:
    """The score threshold of each ROC point of :func:`roc_points`: the lowest value the first
    accepted bin can hold (the exact score where the bin is one value), so that the point's
    miss rate is that of the targets below it and its false-alarm rate that of the non-targets
    at or above it; ``+inf`` past the last bin, and ``-inf`` (``+inf``) where a bin's lowest
    value is no number and nothing lies below (above) it.

    >>> from bosaris_dask.passes.keys import order_keys
    >>> s = ScoreSummary(np.dtype(np.float64), lo=order_keys(np.array([-2.0, 1.0, 3.0])),
    ...                  bits=np.zeros(3, np.int8), n_tar=np.array([0, 1, 1]),
    ...                  n_non=np.array([1, 1, 0]), softplus_units=(0, 0))
    >>> roc_thresholds(s, np.arange(4)).tolist()
    [-2.0, 1.0, 3.0, inf]
    """
    positions = np.asarray(positions)
    inside = positions < len(summary.lo)  # past the last bin: +inf
    values = np.full(positions.shape, np.inf)
    lowest = keys_to_values(summary.lo[positions[inside]], summary.dtype)  # those bins only
    values[inside] = lowest.astype(np.float64)
    before = np.concatenate([[0], np.cumsum(summary.n_tar + summary.n_non)])[positions] == 0
    return np.where(np.isnan(values), np.where(before, -np.inf, np.inf), values)


def steppy_roc_positions(summary: ScoreSummary, resolution: float = 0.005) -> np.ndarray:
    """The bin edges :func:`steppy_roc` keeps: position ``i`` is the ROC point that rejects
    the summary's first ``i`` bins (``0 .. nbins``, ascending).

    >>> s = ScoreSummary(np.dtype(np.float64), lo=np.arange(4, dtype=np.uint64),
    ...                  bits=np.zeros(4, np.int8), n_tar=np.array([0, 1, 1, 2]),
    ...                  n_non=np.array([3, 1, 0, 0]), softplus_units=(0, 0))
    >>> steppy_roc_positions(s).tolist()
    [0, 1, 2, 3, 4]
    """
    pmiss, pfa = roc_points(summary, np.arange(len(summary.n_tar) + 1))
    keep = np.ones(len(pmiss), dtype=bool)
    if len(pmiss) > 2:
        keep[1:-1] = False
        for p, falling in ((pmiss, False), (pfa, True)):
            at = _cell_changes(p, resolution, falling)
            keep[at[at < len(p) - 1]] = True
    return np.flatnonzero(keep)


#: Up to this many ROC points, :func:`_cell_changes` evaluates every point's cell (faster
#: than its searches over a few thousand bins, as a condition's summary has).
_DIRECT = 1 << 12


def _cell_changes(p: np.ndarray, resolution: float, falling: bool) -> np.ndarray:
    """The positions ``i >= 1`` where the probit cell ``floor(probit(p) / resolution)`` of
    monotone ``p`` (non-decreasing, or non-increasing where ``falling``) differs from that at
    ``i - 1``.

    The cells are monotone along ``p``, so each such position is the first that reaches a cell:
    found per cell crossed (a few thousand at most on ``[1e-12, 1 - 1e-12]``) by a binary
    search, bracketed first where ``ndtr`` of the cell's edge falls in ``p`` and checked with
    the exact cells at the bracket's ends (else the whole range), instead of evaluating the
    probit at every bin (which it does up to :data:`_DIRECT` points).
    """
    eps = 1e-12
    sign = -1.0 if falling else 1.0  # cells negated where falling: non-decreasing
    n = len(p)

    def cell(i: np.ndarray | int) -> np.ndarray:
        return sign * np.floor(ndtri(np.clip(p[i], eps, 1 - eps)) / resolution)

    first, last = float(cell(0)), float(cell(n - 1))
    if n <= _DIRECT or not (np.isfinite(first) and np.isfinite(last)):
        # few bins (a condition's), or a rate of no trials (0 / 0: NaN): every bin's cell
        cells = cell(np.arange(n))
        return np.flatnonzero(cells[1:] != cells[:-1]) + 1
    if last <= first:
        return np.empty(0, dtype=np.intp)
    targets = np.arange(first + 1, last + 1)
    if falling:  # the first p below ndtr of the cell's upper edge
        guess = np.searchsorted(-p, -ndtr((1 - targets) * resolution), side="right")
    else:  # the first p at or above ndtr of the cell's lower edge
        guess = np.searchsorted(p, ndtr(targets * resolution), side="left")
    lo = np.clip(guess - 2, 1, n - 1)
    hi = np.clip(guess + 2, 1, n - 1)
    bracketed = (cell(lo - 1) < targets) & (cell(hi) >= targets)
    lo[~bracketed], hi[~bracketed] = 1, n - 1  # invariant: cell(lo - 1) < target <= cell(hi)
    while True:
        open_ = lo < hi
        if not open_.any():
            break
        mid = (lo + hi) // 2
        reached = cell(mid) >= targets
        hi = np.where(open_ & reached, mid, hi)
        lo = np.where(open_ & ~reached, mid + 1, lo)
    return np.unique(lo)
