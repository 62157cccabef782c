"""The lower convex hull of float points ordered by ``x`` (an ROC's edges in probabilities).

The engine's hulls (:mod:`bosaris_dask.roc`) are over integer counts of one class pair; the
partition-equalized curve (:mod:`bosaris_dask.conditions.equalized`) is a weighted mean of
several partitions' rates, so its hull is over float points, found here.

Examples
--------
>>> import numpy as np
>>> lower_hull(np.array([0.0, 0.2, 0.6, 1.0]), np.array([1.0, 0.3, 0.2, 0.0])).tolist()
[0, 1, 3]
"""

from __future__ import annotations

import numpy as np

__all__ = ["lower_hull"]

#: Points more than this above a polyline through some of the points cannot be lower-hull
#: vertices (the curves' values are at most 1 in magnitude; float errors are ~1e-16).
_ABOVE = 1e-9


def _chain(x: list[float], y: list[float]) -> list[int]:
    """Andrew's monotone chain over points ordered by ``x`` then ``y``: the lower hull's
    vertices, from the first point to the last (collinear points are not vertices)."""
    stack: list[int] = []
    for k in range(len(x)):
        while len(stack) >= 2:
            o, a = stack[-2], stack[-1]
            if (x[a] - x[o]) * (y[k] - y[o]) - (y[a] - y[o]) * (x[k] - x[o]) <= 0:
                stack.pop()  # o -> a -> k does not turn left: a is not a vertex
            else:
                break
        stack.append(k)
    return stack


def _maybe_vertices(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The points that may be lower-hull vertices: all but those clearly above a polyline
    through some of the points.

    A segment between two of the points lies inside their convex hull, so a polyline through
    some of them (ordered by ``x``) is nowhere below the lower hull, and a vertex of the lower
    hull is never above it. The polyline is the chain of Qhull's vertices (and the ends): tight,
    but only a guide: if Qhull merged away a near-collinear vertex, that vertex is still within
    ``_ABOVE`` of the polyline and kept, so the chain over the kept points finds it.
    """
    from scipy.spatial import ConvexHull, QhullError  # 0.06 s to import: here, where needed

    n = len(x)
    try:
        some = ConvexHull(np.column_stack([x, y])).vertices
    except QhullError:  # degenerate (all on one line): no filter
        return np.arange(n)
    some = np.unique(np.concatenate([some, [0, n - 1]]))  # ordered as the points
    xs, ys = x[some], y[some]
    first = np.concatenate([[True], xs[1:] != xs[:-1]])  # the lowest point of each x
    xs, ys = xs[first], ys[first]
    guide = np.asarray(_chain(xs.tolist(), ys.tolist()), dtype=np.int64)
    line = np.interp(x, xs[guide], ys[guide])
    keep = y <= line + _ABOVE
    keep[[0, n - 1]] = True
    return np.flatnonzero(keep)


def lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the lower convex hull of float points ordered by ``x`` then ``y`` (as the
    edges of an ROC are), from the first point to the last (Andrew's monotone chain; points on
    a segment are not vertices).

    Above 256 points the chain runs over the points that may be vertices only
    (:func:`_maybe_vertices`: a guaranteed-safe filter guided by Qhull), with the same result.

    Examples
    --------
    >>> lower_hull(np.array([0.0, 0.5, 0.5, 1.0]), np.array([0.0, 0.6, 0.7, 1.0])).tolist()
    [0, 3]
    >>> lower_hull(np.array([0.0, 0.5, 1.0, 1.0]), np.array([0.0, 0.1, 0.5, 1.0])).tolist()
    [0, 1, 2, 3]
    """
    idx = _maybe_vertices(x, y) if len(x) > 256 else np.arange(len(x))
    stack = _chain(x[idx].tolist(), y[idx].tolist())
    return idx[np.asarray(stack, dtype=np.int64)]
