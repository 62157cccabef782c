"""Small exact algorithms on merged count summaries: ROCCH (= PAV), EER, PRBEP, minDCF, minCllr.

Everything here works on *bins*: groups of trials in ascending score order, each with a count of
targets and non-targets. A bin is typically one distinct score value (ties pooled), but any
grouping of adjacent scores is allowed; the results are exact for the thresholds that lie between
bins. The evaluation engine supplies bins that are exact where it matters.

Rejecting the first ``t`` bins (threshold between bin ``t-1`` and bin ``t``) gives ``misses[t] =
cumsum(n_tar)[t]`` and ``false_alarms[t] = N - cumsum(n_non)[t]``, for ``t = 0..B``. The ROC convex
hull (ROCCH) is the greatest convex minorant of the points ``(cumsum(n_non), cumsum(n_tar))``;
its segments are exactly the pooled bins of the PAV solution on the labels sorted by score.

Examples
--------
>>> import numpy as np
>>> n_tar = np.array([1, 0, 1, 2])     # targets per bin, ascending score
>>> n_non = np.array([2, 1, 1, 0])     # non-targets per bin
>>> hull = hull_from_counts(n_tar, n_non)
>>> hull.positions.tolist(), hull.misses.tolist(), hull.false_alarms.tolist()
([0, 2, 3, 4], [0, 1, 2, 4], [4, 1, 0, 0])
>>> float(hull_eer(hull))
0.25

Names: every function here takes counts or a :class:`Hull`, and those that take a hull are
called ``hull_*``; the functions of :mod:`bosaris_dask.metrics` with the short names
(``metrics.eer``, ``metrics.prbep``, ``metrics.uer``, ``metrics.min_cllr``, ``metrics.rocch``)
take target and non-target score arrays. The old names here (``rocch``, ``rocch_eer``,
``prbep``, ``uer``, ``min_cllr``) still work for one release, with a ``FutureWarning``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from bosaris_dask._deprecation import renamed_getattr
from bosaris_dask.passes.jit import compiled

__all__ = [
    "Hull",
    "hull_from_counts",
    "convex_minorant",
    "hull_eer",
    "hull_prbep",
    "hull_uer",
    "min_bayes_error",
    "min_bayes_error_vertex",
    "hull_min_cllr",
    "pav_blocks",
]


@dataclass(frozen=True)
class Hull:
    """The vertices of an ROC convex hull, in counts.

    Attributes
    ----------
    positions
        For each vertex, how many leading bins are rejected (0 .. B), strictly increasing.
    misses, false_alarms
        Error counts at each vertex: misses increase from 0 to ``n_target``, false alarms
        decrease from ``n_nontarget`` to 0.
    n_target, n_nontarget
        Totals.
    """

    positions: np.ndarray
    misses: np.ndarray
    false_alarms: np.ndarray
    n_target: int
    n_nontarget: int

    @property
    def pmiss(self) -> np.ndarray:
        """Miss rate at each vertex."""
        return self.misses / self.n_target

    @property
    def pfa(self) -> np.ndarray:
        """False-alarm rate at each vertex."""
        return self.false_alarms / self.n_nontarget


def _cross_sign_exact(ox: int, oy: int, ax: int, ay: int, bx: int, by: int) -> int:
    """Sign of the cross product (a - o) x (b - o) in exact integer arithmetic."""
    value = (ax - ox) * (by - oy) - (ay - oy) * (bx - ox)
    return (value > 0) - (value < 0)


def _drop_run_interiors(x: np.ndarray, y: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Drop repeated points and the interior points of horizontal and vertical runs.

    Neither can be a strict vertex of the lower hull.
    """
    repeated = np.zeros(len(keep), dtype=bool)  # a point equal to the one before (empty bin)
    repeated[1:] = (x[keep][1:] == x[keep][:-1]) & (y[keep][1:] == y[keep][:-1])
    repeated[-1] = False  # the last point always stays
    keep = keep[~repeated]
    xs, ys = x[keep], y[keep]
    interior = np.zeros(len(keep), dtype=bool)
    same_x = (xs[1:-1] == xs[:-2]) & (xs[1:-1] == xs[2:])
    same_y = (ys[1:-1] == ys[:-2]) & (ys[1:-1] == ys[2:])
    interior[1:-1] = same_x | same_y
    return keep[~interior]


def _drop_above_qhull(x: np.ndarray, y: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Drop points that lie clearly above the lower hull found by Qhull (in float64).

    Qhull's vertices are real points, so the piecewise-linear curve through them is never below
    the exact hull: a point clearly above it is not a vertex. The margin keeps every decision
    that float64 cannot make exactly for :func:`convex_minorant`'s integer arithmetic.
    """
    from scipy.spatial import ConvexHull, QhullError  # 0.06 s to import: here, where needed

    xs, ys = x[keep].astype(np.float64), y[keep].astype(np.float64)
    try:
        hull = ConvexHull(np.column_stack([xs, ys]))
    except QhullError:  # degenerate (e.g. all points collinear): nothing to drop safely
        return keep
    vertices = np.unique(hull.vertices)
    order = np.lexsort((ys[vertices], xs[vertices]))
    vx, vy = xs[vertices][order], ys[vertices][order]
    # the lower chain of the hull's vertices (a handful of points: a plain loop is fine)
    chain: list[int] = []
    for k in range(len(vx)):
        while len(chain) >= 2:
            o, a = chain[-2], chain[-1]
            if (vx[a] - vx[o]) * (vy[k] - vy[o]) - (vy[a] - vy[o]) * (vx[k] - vx[o]) <= 0:
                chain.pop()
            else:
                break
        chain.append(k)
    curve = np.interp(xs, vx[chain], vy[chain])
    margin = 1e-9 * (np.abs(ys).max() + np.abs(xs).max() + 1.0)
    above = ys > curve + margin
    above[[0, -1]] = False
    return keep[~above]


#: Points whose coordinates stay below this take the compiled hull loop (where numba is
#: installed): the cross products of their differences are exact in int64.
_COMPILED_HULL_LIMIT = 1 << 31
#: From how many points the hull loop runs compiled (it skips runs and repeats itself): the
#: hulls of 1e9-trial evaluations (about 1M bins: Qhull's pre-filter and the Python loop took
#: 0.3-0.4 s per hull on a loaded machine); below, loading numba (0.4 s) would cost more than
#: it saves.
_COMPILED_HULL_POINTS = 1 << 18
#: From how many points the hull loop runs compiled once numba is loaded anyway (e.g. by the
#: compiled pass-1 kernels): Qhull's pre-filter and the Python loop below cost 2-3 ms per hull
#: of 2**14-2**17 bins, 50 hulls in an evaluation of 24 conditions at 1e8 trials (0.11 s of the
#: client's 0.55 s, measured); the loop takes a fraction of a millisecond.
_COMPILED_HULL_POINTS_LOADED = 1 << 8


def _minorant_loop(xs, ys, stack):  # pragma: no cover
    # compiled by numba: convex_minorant's stack loop over int64 points sorted by x (every
    # coordinate below 2**31, so each cross product is exact in int64); returns the stack size
    top = 0
    last = xs.size - 1
    for k in range(xs.size):
        while top > 0 and xs[stack[top - 1]] == xs[k] and ys[k] < ys[stack[top - 1]]:
            top -= 1  # a lower point with the same x replaces it
        if top > 0 and xs[stack[top - 1]] == xs[k]:
            continue  # same x and not lower: not a vertex (the last point is added below)
        while top >= 2:
            o, a = stack[top - 2], stack[top - 1]
            cross = (xs[a] - xs[o]) * (ys[k] - ys[o]) - (ys[a] - ys[o]) * (xs[k] - xs[o])
            if cross <= 0:  # drop a unless o -> a -> k turns strictly counter-clockwise
                top -= 1
            else:
                break
        stack[top] = k
        top += 1
    if stack[top - 1] != last:  # the hull always ends at the last point (reject everything):
        if top > 1 and xs[stack[top - 1]] == xs[last] and ys[stack[top - 1]] == ys[last]:
            top -= 1  # in place of an equal point (trailing empty bins), not after it
        stack[top] = last
        top += 1
    return top


def convex_minorant(x: np.ndarray, y: np.ndarray, fast: bool = True) -> np.ndarray:
    """Indices of the vertices of the greatest convex minorant of points sorted by ``x``.

    ``x`` must be non-decreasing and the points integer-valued (counts), so that the decisions
    are made exactly. Collinear points are not vertices; of points with equal ``x``, only the
    lowest can be one, except that the first and the last point always are (for an ROC they are
    "accept everything" and "reject everything"; a point equal to the last one, as trailing empty
    bins give, is not one: no vertex repeats). ``fast``: run the loop compiled (numba, where
    installed) when every coordinate is a non-negative integer below ``2**31``; the same
    vertices, exactly (from :data:`_COMPILED_HULL_POINTS` points on, or
    :data:`_COMPILED_HULL_POINTS_LOADED` once numba is loaded).

    Examples
    --------
    >>> convex_minorant(np.array([0, 1, 2, 3]), np.array([0, 5, 1, 6])).tolist()
    [0, 2, 3]
    """
    least = _COMPILED_HULL_POINTS_LOADED if "numba" in sys.modules else _COMPILED_HULL_POINTS
    loop = compiled(_minorant_loop) if fast and len(x) >= least else None
    if loop is not None:  # every point: the loop skips runs and repeats as cheaply as a filter
        xs, ys = np.asarray(x), np.asarray(y)
        if xs.dtype.kind in "iu" and ys.dtype.kind in "iu" and min(xs.min(), ys.min()) >= 0 \
                and max(xs.max(), ys.max()) < _COMPILED_HULL_LIMIT:  # fmt: skip
            stack = np.empty(len(xs) + 1, dtype=np.int64)
            top = loop(xs.astype(np.int64, copy=False), ys.astype(np.int64, copy=False), stack)
            return stack[:top].copy()
    candidates = np.arange(len(x))
    if len(candidates) > 2:
        candidates = _drop_run_interiors(x, y, candidates)
    if len(candidates) > 256:
        candidates = _drop_above_qhull(x, y, candidates)
    xs = [int(v) for v in x[candidates]]
    ys = [int(v) for v in y[candidates]]
    stack: list[int] = []  # positions into candidates
    last = len(xs) - 1
    for k in range(len(xs)):
        while stack and xs[stack[-1]] == xs[k] and ys[k] < ys[stack[-1]]:
            stack.pop()  # a lower point with the same x replaces it
        if stack and xs[stack[-1]] == xs[k]:
            continue  # same x and not lower: not a vertex (the last point is added below)
        while len(stack) >= 2:
            o, a = stack[-2], stack[-1]
            # drop a unless o -> a -> k turns strictly counter-clockwise (strictly convex)
            if _cross_sign_exact(xs[o], ys[o], xs[a], ys[a], xs[k], ys[k]) <= 0:
                stack.pop()
            else:
                break
        stack.append(k)
    if stack[-1] != last:  # the hull always ends at the last point (reject everything):
        if len(stack) > 1 and (xs[stack[-1]], ys[stack[-1]]) == (xs[last], ys[last]):
            stack.pop()  # in place of an equal point (trailing empty bins), not after it
        stack.append(last)
    return candidates[np.asarray(stack, dtype=np.int64)]


def hull_from_counts(n_tar: np.ndarray, n_non: np.ndarray) -> Hull:
    """The ROC convex hull of binned target and non-target counts (ascending score).

    Parameters
    ----------
    n_tar, n_non
        Integer counts per bin, in ascending score order. Empty bins are allowed.

    Returns
    -------
    Hull
        Vertices from (misses 0, false alarms N) to (misses T, false alarms 0).
    """
    n_tar = np.asarray(n_tar, dtype=np.int64)
    n_non = np.asarray(n_non, dtype=np.int64)
    cum_tar = np.concatenate([[0], np.cumsum(n_tar)])
    cum_non = np.concatenate([[0], np.cumsum(n_non)])
    positions = convex_minorant(cum_non, cum_tar)
    return Hull(
        positions=positions,
        misses=cum_tar[positions],
        false_alarms=cum_non[-1] - cum_non[positions],
        n_target=int(cum_tar[-1]),
        n_nontarget=int(cum_non[-1]),
    )


def pav_blocks(n_tar: np.ndarray, n_non: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pooled blocks of PAV (isotonic regression of the target indicator on score).

    Returns ``(starts, block_tar, block_non)``: the first bin of each block (with ``B``
    appended), and the target and non-target counts pooled in each block. The block posteriors
    ``block_tar / (block_tar + block_non)`` are strictly increasing. Leading or trailing empty
    bins are pooled into their neighbouring block.

    Examples
    --------
    >>> starts, t, n = pav_blocks(np.array([1, 0, 1, 2]), np.array([2, 1, 1, 0]))
    >>> starts.tolist(), t.tolist(), n.tolist()
    ([0, 2, 3, 4], [1, 1, 2], [3, 1, 0])
    """
    hull = hull_from_counts(n_tar, n_non)
    starts = hull.positions.copy()
    starts[0], starts[-1] = 0, len(np.asarray(n_tar))
    return starts, np.diff(hull.misses), -np.diff(hull.false_alarms)


def _diagonal_crossing(x: np.ndarray, y: np.ndarray) -> float:
    """max over hull segments of where the segment's line crosses ``y = x`` (0 if axis-parallel)."""
    x1, x2, y1, y2 = x[:-1], x[1:], y[:-1], y[1:]
    dx, dy = x2 - x1, y2 - y1
    with np.errstate(divide="ignore", invalid="ignore"):
        crossing = (y1 * dx - x1 * dy) / (dx - dy)
    crossing = np.where((dx == 0) | (dy == 0), 0.0, crossing)
    return float(np.max(crossing, initial=0.0))


def hull_eer(hull: Hull) -> float:
    """The ROCCH-EER: where the hull crosses ``Pmiss = Pfa`` (equals ``max_p minDCF(p)``)."""
    return _diagonal_crossing(hull.pfa, hull.pmiss)


def hull_prbep(hull: Hull) -> float:
    """The precision-recall break-even point, as a count: misses = false alarms on the hull."""
    return _diagonal_crossing(hull.false_alarms.astype(np.float64), hull.misses.astype(np.float64))


def hull_uer(hull: Hull, ratio: float) -> float:
    """The unequal-error-rate ``UER(r)``: the false-alarm rate where the hull crosses
    ``Pfa = r * Pmiss`` (the paper's section on UER; ``UER(1)`` is the ROCCH-EER and
    ``N * UER(T / N)`` the PRBEP). It equals ``max_p minDCF(p, Cmiss=r, Cfa=1)`` (raw).

    Examples
    --------
    >>> hull = hull_from_counts(np.array([1, 0, 1, 2]), np.array([2, 1, 1, 0]))
    >>> hull_uer(hull, 1.0) == hull_eer(hull)
    True
    """
    r = float(ratio)
    if not 0 < r < np.inf:
        raise ValueError(f"the UER ratio must be a positive finite number, got {ratio!r}")
    return _diagonal_crossing(hull.pfa, r * hull.pmiss)


def min_bayes_error(hull: Hull, plo: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The minimum Bayes error rate (raw minDCF, unit costs) at each prior log-odds, with its
    Pmiss and Pfa.

    Not called ``min_dcf``: :func:`bosaris_dask.metrics.min_dcf` takes scores and an effective
    prior and returns the normalized value; this takes a hull and prior *log-odds* and returns
    the raw one.

    The effective prior is ``p = sigmoid(plo)`` and ``1 - p`` is computed as ``sigmoid(-plo)``,
    so that both stay accurate far from ``plo = 0``. The minimum over all thresholds is attained
    at a hull vertex; of tied vertices the first (lowest miss rate) is reported.

    Returns
    -------
    dcf, pmiss, pfa
        Arrays shaped like ``plo``.

    Examples
    --------
    >>> hull = hull_from_counts(np.array([1, 0, 1, 2]), np.array([2, 1, 1, 0]))
    >>> [float(v) for v in min_bayes_error(hull, np.array([0.0]))[0]]
    [0.25]
    """
    cost, best = _vertex_costs(hull, plo)
    return np.take_along_axis(cost, best[..., None], -1)[..., 0], hull.pmiss[best], hull.pfa[best]


def _vertex_costs(hull: Hull, plo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    plo = np.asarray(plo, dtype=np.float64)[..., None]
    cost = expit(plo) * hull.pmiss + expit(-plo) * hull.pfa
    return cost, np.argmin(cost, axis=-1)


def min_bayes_error_vertex(hull: Hull, plo: np.ndarray) -> np.ndarray:
    """The index of the hull vertex at which :func:`min_bayes_error` is attained, for each
    ``plo`` (prior log-odds).

    ``hull.positions[index]`` is then how many leading bins a minimizing threshold rejects.

    Examples
    --------
    >>> hull = hull_from_counts(np.array([1, 0, 1, 2]), np.array([2, 1, 1, 0]))
    >>> min_bayes_error_vertex(hull, np.array([0.0, -5.0, 5.0])).tolist()
    [1, 2, 0]
    """
    return _vertex_costs(hull, plo)[1]


def hull_min_cllr(hull: Hull) -> float:
    """minCllr in bits: Cllr of the PAV-calibrated LLRs, from the hull's segments.

    Each hull segment is one PAV block with ``dt`` targets and ``dn`` non-targets; its LLR is
    ``log(dt/dn) - log(T/N)``. Pure blocks get infinite LLRs, which cost nothing.
    """
    dt = np.diff(hull.misses).astype(np.float64)
    dn = -np.diff(hull.false_alarms).astype(np.float64)
    T, N = hull.n_target, hull.n_nontarget
    with np.errstate(divide="ignore", invalid="ignore"):
        llr = np.log(dt) - np.log(dn) - np.log(T / N)
        tar_cost = np.where(dt > 0, dt * np.logaddexp(0.0, -llr), 0.0)
        non_cost = np.where(dn > 0, dn * np.logaddexp(0.0, llr), 0.0)
    return float((tar_cost.sum() / T + non_cost.sum() / N) / (2 * np.log(2)))


__getattr__ = renamed_getattr(
    __name__,
    {
        "rocch": ("hull_from_counts", hull_from_counts),
        "rocch_eer": ("hull_eer", hull_eer),
        "prbep": ("hull_prbep", hull_prbep),
        "uer": ("hull_uer", hull_uer),
        "min_cllr": ("hull_min_cllr", hull_min_cllr),
    },
)
