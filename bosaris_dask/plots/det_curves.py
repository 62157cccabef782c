"""DET curve geometry: rates to probit coordinates, and the ROCCH-DET and steppy DET curves
as the points :func:`bosaris_dask.plots.det.det_plot` draws (each segment of a curve straight in
ROC space, clipped to the window and warped).

Examples
--------
>>> x, y = rocch_det_points([0.0, 0.2, 1.0], [1.0, 0.2, 0.0], "classic", 1)  # two segments
>>> np.round(x, 3).tolist(), np.round(y, 3).tolist()
([0.0, -0.842, -0.842, -1.15], [-1.15, -0.842, -0.842, 0.0])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bosaris_dask.errors import PlotError
from bosaris_dask.plots.axes import probit, resolve_window

__all__ = ["det_xy", "rocch_det_points", "steppy_det_points", "FAR"]

# Probit coordinate standing in for probit(0) = -inf (and -that for probit(1)): beyond any window.
FAR = 40.0


def det_xy(pfa: Any, pmiss: Any) -> np.ndarray:
    """``(n, 2)`` DET coordinates ``probit([pfa, pmiss])``; rates 0 and 1 go to -40 and 40.

    Examples
    --------
    >>> det_xy([0.5, 0.0], [0.5, 1.0]).tolist()
    [[0.0, 0.0], [-40.0, 40.0]]
    """
    xy = probit(np.stack([np.asarray(pfa, float), np.asarray(pmiss, float)], axis=-1))
    return np.clip(xy, -FAR, FAR)


def rocch_det_points(
    pmiss: Any,
    pfa: Any,
    window: str | Sequence[float] = "classic",
    points_per_segment: int = 100,
) -> tuple[np.ndarray, np.ndarray]:
    """The ROCCH-DET curve: hull segments clipped to a window, sampled, in probit coordinates.

    Each segment between consecutive hull vertices is clipped to the window's box (in ROC
    space, where it is straight), then sampled at ``points_per_segment + 1`` equally spaced
    points, both ends included, and warped by probit. Segments outside the box are skipped.
    Consecutive segments share an end point, which appears twice.

    Parameters
    ----------
    pmiss, pfa
        Hull vertices in order, from ``(pfa=1, pmiss=0)`` to ``(pfa=0, pmiss=1)``
        (``rocch_pmiss``, ``rocch_pfa`` of an evaluation; NaN padding is dropped).
    window
        A preset name or ``(pfa_low, pfa_high, pmiss_low, pmiss_high)``.
    points_per_segment
        Sampling intervals per (clipped) segment.

    Returns
    -------
    x, y
        ``probit(pfa)`` and ``probit(pmiss)`` along the curve.

    Examples
    --------
    >>> x, y = rocch_det_points([0.0, 0.2, 1.0], [1.0, 0.2, 0.0], "classic", 2)
    >>> np.round(x, 4).tolist(), np.round(y, 4).tolist()
    ([0.0, -0.3853, -0.8416, -0.8416, -0.9842, -1.1503], [-1.1503, -0.9842, -0.8416, -0.8416, -0.3853, 0.0])
    """  # noqa: E501
    if points_per_segment < 1:
        raise PlotError(f"points_per_segment must be at least 1, got {points_per_segment}")
    start, step, t0, t1 = _segments_in(pmiss, pfa, window)
    seg = t0 <= t1
    u = np.linspace(0.0, 1.0, points_per_segment + 1)
    t = t0[seg, None] + (t1 - t0)[seg, None] * u
    points = start[seg, None, :] + t[..., None] * step[seg, None, :]
    xy = probit(points.reshape(-1, 2))
    return xy[:, 0], xy[:, 1]


def _segments_in(
    pmiss: Any, pfa: Any, window: str | Sequence[float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The segments between consecutive ROC points (NaN padding dropped) in ROC space,
    ``start + t * step`` for ``t`` in ``[0, 1]``, and the interval ``[t0, t1]`` of each inside
    the window's box (``t0 > t1``: outside it)."""
    pmiss = np.asarray(pmiss, dtype=np.float64).ravel()
    pfa = np.asarray(pfa, dtype=np.float64).ravel()
    keep = ~(np.isnan(pmiss) | np.isnan(pfa))
    pmiss, pfa = pmiss[keep], pfa[keep]
    pfa_lo, pfa_hi, pmiss_lo, pmiss_hi = resolve_window(window)
    start = np.stack([pfa[:-1], pmiss[:-1]], axis=1)
    step = np.stack([pfa[1:], pmiss[1:]], axis=1) - start
    lo = np.array([pfa_lo, pmiss_lo])
    hi = np.array([pfa_hi, pmiss_hi])
    # Liang-Barsky: the parameter interval [t0, t1] of each segment inside the box.
    with np.errstate(divide="ignore", invalid="ignore"):
        ta, tb = (lo - start) / step, (hi - start) / step
    inside = (start >= lo) & (start <= hi)
    flat = step == 0
    t_enter = np.where(flat, np.where(inside, -np.inf, np.inf), np.minimum(ta, tb))
    t_leave = np.where(flat, np.where(inside, np.inf, -np.inf), np.maximum(ta, tb))
    return start, step, np.maximum(0.0, t_enter.max(axis=1)), np.minimum(1.0, t_leave.min(axis=1))


def steppy_det_points(
    pmiss: Any, pfa: Any, window: str | Sequence[float] = "classic", max_gap: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """The steppy DET curve: the exact ROC points in probit coordinates (rates 0 and 1 at -40
    and 40, as :func:`det_xy`), joined, where two are further apart than ``max_gap`` on the
    probit axes (a run of tied scores, or a step to a rate of 0), by points sampled along
    their straight ROC segment where it crosses the window: the drawn line follows the
    segment, not a straight probit line aimed at -40.

    Examples
    --------
    >>> x, y = steppy_det_points([0.0, 0.5, 0.5], [1.0, 0.5, 0.0], (0.1, 0.9, 0.1, 0.9), 1.0)
    >>> np.round(x, 3).tolist()  # (1, 0), 2 points inside the window, (0.5, 0.5), 2, (0, 0.5)
    [40.0, 1.282, 0.524, 0.0, -0.524, -1.282, -40.0]
    >>> np.round(y, 3).tolist()
    [-40.0, -1.282, -0.524, 0.0, 0.0, 0.0, 0.0]
    """
    start, step, t0, t1 = _segments_in(pmiss, pfa, window)
    ends = np.concatenate([start, start[-1:] + step[-1:]])  # the exact points, (pfa, pmiss)
    xy = det_xy(ends[:, 0], ends[:, 1])
    gap = np.hypot(*(xy[1:] - xy[:-1]).T)
    pieces = [xy[:1]]
    for i in range(len(step)):
        if gap[i] > max_gap and t0[i] <= t1[i]:
            a, b = det_xy(*(start[i] + np.array([t0[i], t1[i]])[:, None] * step[i]).T)
            k = max(1, int(np.ceil(np.hypot(*(b - a)) / max_gap)))
            t = np.linspace(t0[i], t1[i], k + 1)
            t = t[(t > 0.0) & (t < 1.0)]  # the segment's own ends are the exact points
            pieces.append(probit(start[i] + t[:, None] * step[i]))
        pieces.append(xy[i + 1 : i + 2])
    out = np.concatenate(pieces)
    return out[:, 0], out[:, 1]
