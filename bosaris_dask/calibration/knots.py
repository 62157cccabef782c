"""The PAV map as array functions: from per-bin counts to knots, and from knots to LLRs.

:func:`pav_map` builds the knots ``(score_bounds, llr_bounds)`` of the monotone map described
in :mod:`bosaris_dask.calibration`; :func:`interpolate_map` evaluates it on any scores.
"""

from __future__ import annotations

import sys

import numpy as np

from bosaris_dask._deprecation import renamed_module
from bosaris_dask.errors import ScoreError
from bosaris_dask.roc import pav_blocks

#: Where the pseudo-observations sit (unless scores lie beyond).
DEFAULT_BOUND = 1e6


def _check_bins(lo, hi, n_tar, n_non) -> tuple[np.ndarray, ...]:
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    nt = np.asarray(n_tar)
    nn = np.asarray(n_non)
    if not (lo.ndim == 1 and lo.shape == hi.shape == nt.shape == nn.shape):
        raise ScoreError("score_lo, score_hi, n_tar and n_non must be 1-D and of equal length")
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        raise ScoreError("bin bounds must be finite")
    if (nt < 0).any() or (nn < 0).any() or (nt != np.round(nt)).any() or (nn != np.round(nn)).any():
        raise ScoreError("bin counts must be non-negative integers")
    keep = (nt > 0) | (nn > 0)
    lo, hi, nt, nn = lo[keep], hi[keep], nt[keep].astype(np.int64), nn[keep].astype(np.int64)
    if (lo > hi).any() or (hi[:-1] >= lo[1:]).any():
        raise ScoreError("bins must be ascending and disjoint: lo <= hi < next lo")
    return lo, hi, nt, nn


def pav_map(
    score_lo: np.ndarray,
    score_hi: np.ndarray,
    n_tar: np.ndarray,
    n_non: np.ndarray,
    *,
    small_val: float = 1e-3,
    pseudo_counts: bool = True,
    bound: float = DEFAULT_BOUND,
) -> tuple[np.ndarray, np.ndarray]:
    """The knots ``(score_bounds, llr_bounds)`` of the PAV calibration map of binned counts.

    Parameters
    ----------
    score_lo, score_hi
        Lowest and highest score of each bin; bins ascending and disjoint (e.g. the distinct
        scores, ``lo == hi``). Empty bins are ignored.
    n_tar, n_non
        Targets and non-targets per bin.
    small_val
        Half-height of the ramp inside each block (0: flat blocks).
    pseudo_counts
        Add one target below and one non-target above all scores (finite LLRs).
    bound
        Where the pseudo-observations sit: ``-bound`` and ``+bound``, or the extreme scores if
        those lie beyond.

    Returns
    -------
    score_bounds, llr_bounds
        ``2B`` knots (``lo_k``, ``hi_k`` per block) and their LLRs, both non-decreasing.

    Examples
    --------
    >>> sb, lb = pav_map([0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [0, 1, 2], [2, 1, 0], small_val=0)
    >>> sb.tolist()
    [-1000000.0, 0.0, 1.0, 1.0, 2.0, 1000000.0]
    >>> np.round(lb, 6).tolist()
    [-0.693147, -0.693147, 0.0, 0.0, 0.693147, 0.693147]
    """
    lo, hi, nt, nn = _check_bins(score_lo, score_hi, n_tar, n_non)
    if nt.sum() == 0 or nn.sum() == 0:
        raise ScoreError(
            f"PAV calibration needs targets and non-targets; got {int(nt.sum())} and "
            f"{int(nn.sum())}"
        )
    if small_val < 0:
        raise ValueError(f"small_val must be non-negative, got {small_val!r}")
    if pseudo_counts:
        low, high = min(-bound, float(lo[0])), max(bound, float(hi[-1]))
        if low == lo[0]:  # a data bin sits at the pseudo-target's place: the target joins it
            nt = nt.copy()
            nt[0] += 1
        else:
            lo, hi, nt, nn = (np.r_[low, lo], np.r_[low, hi], np.r_[1, nt], np.r_[0, nn])
        if high == hi[-1]:
            nn = nn.copy()
            nn[-1] += 1
        else:
            lo, hi, nt, nn = (np.r_[lo, high], np.r_[hi, high], np.r_[nt, 0], np.r_[nn, 1])
    starts, bt, bn = pav_blocks(nt, nn)
    bt, bn = bt.astype(np.float64), bn.astype(np.float64)
    with np.errstate(divide="ignore"):
        llr = np.log(bt) - np.log(bn) - (np.log(nt.sum()) - np.log(nn.sum()))
    block_lo, block_hi = lo[starts[:-1]], hi[starts[1:] - 1]
    half = np.full(len(llr), float(small_val))
    if len(llr) > 1 and small_val > 0:
        gaps = np.diff(llr)  # > 0; ramps shrink to a third of a gap only where they would meet
        limit = np.where(gaps > 2.0 * small_val, np.inf, gaps / 3.0)
        half = np.minimum(half, np.r_[np.inf, limit])
        half = np.minimum(half, np.r_[limit, np.inf])
    score_bounds = np.column_stack([block_lo, block_hi]).ravel()
    with np.errstate(invalid="ignore"):
        llr_bounds = np.column_stack([llr - half, llr + half]).ravel()
    return score_bounds, np.where(np.isnan(llr_bounds), np.repeat(llr, 2), llr_bounds)


def interpolate_map(s: np.ndarray, score_bounds: np.ndarray, llr_bounds: np.ndarray) -> np.ndarray:
    """Evaluate the piecewise-linear map through the knots, and beyond the outer knots a
    bounded, strictly increasing continuation (:func:`_beyond`).

    Infinite knot values (``pseudo_counts=False``) extend as limits: below a ``-inf`` block the
    map is ``-inf``, above a ``+inf`` block ``+inf``.

    Examples
    --------
    >>> x, y = np.array([0.0, 1.0, 2.0, 3.0]), np.array([-1.1, -0.9, 0.9, 1.1])
    >>> np.round(interpolate_map(np.array([-1e9, 0.5, 1.5, 3.5, 1e9]), x, y), 6).tolist()
    [-1.2, -1.0, 0.0, 1.15, 1.2]
    """
    s = np.asarray(s, dtype=np.float64)
    x, y = np.asarray(score_bounds, np.float64), np.asarray(llr_bounds, np.float64)
    m = len(x)
    if m == 1:
        return np.full(s.shape, y[0])
    j = np.clip(np.searchsorted(x, s, side="right") - 1, 0, m - 2)
    x0, x1, y0, y1 = x[j], x[j + 1], y[j], y[j + 1]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        slope = (y1 - y0) / (x1 - x0)
        slope = np.where(np.isfinite(slope), slope, 0.0)
        # anchor at the nearer end: exact at every knot, the last one included
        out = np.where(s >= x1, y1 + slope * (s - x1), y0 + slope * (s - x0))
    inner = (s >= x0) & (s < x1)
    # rounding may carry y0 + slope * (s - x0) one ulp past y1: keep the map monotone
    out = np.where(inner, np.minimum(np.maximum(out, y0), y1), out)
    out = np.where(inner & np.isneginf(y0), -np.inf, out)
    out = np.where(inner & np.isposinf(y1) & (s > x0), np.inf, out)
    out = np.where(np.isinf(y0) & (y0 == y1), y0, out)
    out = np.where(s < x[0], y[0] - _beyond(x[0] - s, x[:2], y[:2]), out)
    return np.where(s >= x[-1], y[-1] + _beyond(s - x[-1], x[-2:], y[-2:]), out)


def _beyond(distance: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray | float:
    """How far the map moves ``distance`` beyond an outer knot, whose block's ramp runs
    through the knots ``x``, ``y``: at the ramp's slope at first, then bending, never by more
    than half the ramp's rise (``small_val``): the map stays strictly increasing, and no LLR
    goes further than the training set supports (continuing the ramp's slope mapped 1e12 to
    about 2,000 nats). Zero where the outer block is flat, infinite or a single score."""
    width = x[1] - x[0]
    with np.errstate(invalid="ignore"):  # an infinite block: inf - inf
        half = (y[1] - y[0]) / 2.0
    if not (width > 0 and np.isfinite(half) and half > 0):
        return 0.0
    distance = np.maximum(distance, 0.0)  # (evaluated at every score; used beyond the knot)
    with np.errstate(over="ignore"):  # a huge distance: the full half
        return half * (1.0 - 1.0 / (1.0 + 2.0 * (distance / width)))


# the old name of this module, which is also the name of a function of the package
renamed_module("bosaris_dask.calibration.pav_map", sys.modules[__name__])
