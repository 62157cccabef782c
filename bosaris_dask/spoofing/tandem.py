"""The exact t-EER from engine summaries, and the score bins it needs exact (at any scale).

:func:`~bosaris_dask.spoofing.metrics.t_eer` couples every ASV threshold ``τ`` with the CM
threshold ``J(τ)`` nearest the crossing of the tandem miss and false-alarm rates, then takes
the first ``τ`` minimizing ``crit(τ) = |b/c - f/(1 - m)|`` (``a, b, c``: the ASV miss,
non-target and spoof false-alarm rates at ``τ``; ``m, f``: the CM miss and false-alarm rates at
``J(τ)``). On the common grids of the engine's member summaries (:mod:`.joint`) every edge is
one of the in-memory thresholds with exact rates; :func:`t_eer_on_grids` finds the bins that
could change the in-memory answer, for the engine's ``extra_candidates`` hook, and reads the
answer from the edges once none is left. Why that is exact:

1. For a fixed ``τ`` the tandem difference ``D(j) = Pmiss,tdm - Pfa,tdm`` never decreases with
   the CM threshold (the in-memory bisection rests on it too: exact in real numbers, and in
   floats wherever a step of ``D`` exceeds its rounding error; where it does not, either path
   finds a crossing, not necessarily the same one); ``J(τ)`` is ``j0`` (the first
   ``j`` with ``D >= 0``) or ``j0 - 1``. If the first *edge* with ``D >= 0`` is ``e`` and the
   CM bin ``e - 1`` is one value, ``j0`` and ``j0 - 1`` are the edges ``e`` and ``e - 1``, and
   ``J(τ)`` and ``crit(τ)`` come out of the edges with the in-memory floats.
2. For a fixed CM threshold, ``D`` is a correctly rounded, monotone function of ``a``, ``-b``
   and ``-c``, which never decrease as ``τ`` rises; so ``j0(τ)`` never increases, and the CM
   thresholds ``J(τ)`` of the ASV thresholds inside an ASV bin ``k`` lie between CM edges
   ``e(k + 1) - 1`` and ``e(k)``.
3. Rates inside a bin lie between those of its edges, and every float operation of ``crit``
   is monotone in each input; so ``crit`` inside an ASV bin (or at an ASV edge whose ``J`` is
   not yet exact) is at least the float gap between ``[b_lo/c_hi, b_hi/c_lo]`` and
   ``[f_lo/(1 - m_lo), f_hi/(1 - m_hi)]`` over that CM range, and at an edge at most the
   larger distance to the ends of that range: the least of these upper bounds, ``UB``, bounds
   the in-memory minimum.
4. Refined: every coarse ASV bin whose bound is at most ``UB`` with the CM bins of its range,
   the CM bin ``e - 1`` of every edge whose bound is at most ``UB``, and the bins holding the
   thresholds of those edges (ASV bin ``k``, CM bins ``e - 1`` and ``e``). Once none is left,
   every threshold whose ``crit`` can equal the minimum is an edge with an exact ``J``: the
   first minimizing edge is the in-memory one.

Examples
--------
>>> from bosaris_dask.metrics import summary_from_arrays
>>> from bosaris_dask.spoofing.metrics import t_eer
>>> rng = np.random.default_rng(0)
>>> bona, spf = rng.normal(2, 1, 50), rng.normal(0, 1, 30)
>>> tar, non, aspf = rng.normal(2, 1, 20), rng.normal(0, 1, 30), rng.normal(1, 1, 30)
>>> ss = [summary_from_arrays(bona, spf), summary_from_arrays(tar, aspf),
...       summary_from_arrays(non, aspf)]
>>> cm = (Part(0, "n_tar"), Part(0, "n_non"))
>>> asv = (Part(1, "n_tar"), Part(2, "n_tar"), Part(1, "n_non"))
>>> out, bins = t_eer_on_grids(ss, cm, asv)
>>> out == t_eer(bona[:20], bona[20:], spf, tar, non, aspf), bins
(True, {})
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bosaris_dask.spoofing import joint
from bosaris_dask.spoofing.joint import Part
from bosaris_dask.spoofing.metrics import NAN_RESULT, _first_at_least, _tandem_diff, t_eer_point

__all__ = ["t_eer_on_grids"]


def _ratio(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x / y`` in float, ``inf`` where it is not a number (``0 / 0``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = x / y
    return np.where(np.isnan(r), np.inf, r)


def _bounds(b_lo, b_hi, c_lo, c_hi, m, f, lo_e, hi_e) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of the float ``crit`` for ASV rates in the boxes
    ``[b_lo, b_hi] x [c_lo, c_hi]`` and CM thresholds between edges ``lo_e`` and ``hi_e``
    (the upper bound is meant for point boxes: ASV edges)."""
    m_lo, m_hi, f_lo, f_hi = m[lo_e], m[hi_e], f[hi_e], f[lo_e]
    big_r_lo, big_r_hi = _ratio(b_lo, c_hi), _ratio(b_hi, c_lo)
    with np.errstate(divide="ignore", invalid="ignore"):
        r_lo = _ratio(f_lo, 1.0 - m_lo)
        r_hi = np.where(m_hi == 1.0, np.inf, _ratio(f_hi, 1.0 - m_hi))
        gap = np.maximum(np.maximum(big_r_lo - r_hi, r_lo - big_r_hi), 0.0)
        far = np.maximum(np.abs(big_r_lo - r_lo), np.abs(big_r_hi - r_hi))
    # all c = 0 or all m = 1: crit is infinite (or NaN, counted as infinite) throughout
    gap = np.where((c_hi == 0) | (m_lo == 1.0), np.inf, np.nan_to_num(gap, nan=0.0))
    far = np.where(np.isnan(far), np.inf, far)
    return gap, far


def _spans(first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """The integers of the ranges ``first[i]..last[i]`` (inclusive), as one array."""
    length = np.maximum(last - first + 1, 0)
    start = np.repeat(first - np.concatenate([[0], np.cumsum(length)[:-1]]), length)
    return start + np.arange(int(length.sum()))


def t_eer_on_grids(
    ss: Sequence[Any], cm: tuple[Part, Part], asv: tuple[Part, Part, Part]
) -> tuple[dict[str, float], dict[int, np.ndarray]]:
    """The t-EER of the summaries' current bins, and the member bins still to refine.

    Parameters
    ----------
    ss
        Engine summaries (:class:`~bosaris_dask.passes.score_summary.ScoreSummary`).
    cm
        The CM's bona fide and spoof parts.
    asv
        The ASV system's target, non-target and spoof parts.

    Returns
    -------
    (dict, dict)
        :func:`~bosaris_dask.spoofing.metrics.t_eer`'s dict (exact once no bin is left to
        refine) and, per member index, the bins to refine (empty when none).
    """
    bona, spf_cm = cm
    tar, non, spf = asv
    gc, ga = joint.grid(ss, cm), joint.grid(ss, asv)
    m, f = gc.below(bona) / gc.total(bona), gc.above(spf_cm) / gc.total(spf_cm)
    a, b, c = ga.below(tar) / ga.total(tar), ga.above(non) / ga.total(non), (
        ga.above(spf) / ga.total(spf))  # fmt: skip
    n_c, n_a = len(gc.lo), len(ga.lo)
    kept = int(np.count_nonzero(a < (b + c) / 2))  # a prefix: a rises, b + c falls
    if kept == 0:
        return dict(NAN_RESULT), {}
    last = n_c  # the +inf edge
    e = _first_at_least(a, b, c, m, f, 0.0)  # per ASV edge: first CM edge with D >= 0
    above = np.minimum(e, last)
    below = np.maximum(e - 1, 0)
    d_above = np.abs(_tandem_diff(a, b, c, m[above], f[above]))
    v_below = _tandem_diff(a, b, c, m[below], f[below])
    use_below = (e > 0) & ((e > last) | (np.abs(v_below) <= d_above))
    j = np.where(use_below, below, above)
    exact = (e == 0) | (e > last) | (gc.bits[np.clip(e - 1, 0, max(n_c - 1, 0))] == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        crit = np.abs(b / c - f[j] / (1.0 - m[j]))
    crit = np.where(np.isnan(crit) | ~exact, np.inf, crit)

    # bounds at the kept edges (J anywhere from CM edge e - 1 to e) ...
    edge_lb, edge_ub = _bounds(b, b, c, c, m, f, below, above)
    edge_lb = np.where(exact, crit, edge_lb)[:kept]
    ub = float(np.min(np.where(exact, crit, edge_ub)[:kept]))
    crit = crit[:kept]
    # ... and inside the coarse ASV bins that start at a kept edge
    k = np.arange(min(kept, n_a))
    lo_e = np.maximum(e[k + 1] - 1, 0)
    hi_e = np.minimum(e[k], last)
    bin_lb, _ = _bounds(b[k + 1], b[k], c[k + 1], c[k], m, f, lo_e, np.maximum(hi_e, lo_e))
    coarse = ga.bits[k] > 0

    asv_bins: list[np.ndarray] = []
    cm_bins: list[np.ndarray] = []
    hidden = k[coarse & (bin_lb <= ub) & (bin_lb < np.inf)]
    if len(hidden):
        asv_bins.append(hidden)
        cm_bins.append(_spans(lo_e[hidden], np.minimum(hi_e[hidden], n_c - 1)))
    near = np.flatnonzero((edge_lb <= ub) & (edge_lb < np.inf))  # edges that may attain the minimum
    asv_bins.append(near[near < n_a])
    cm_bins += [e[near] - 1, e[near]]
    asv_cands = np.unique(np.concatenate(asv_bins)).astype(np.int64)
    asv_cands = asv_cands[ga.bits[asv_cands] > 0]
    cm_cands = np.unique(np.concatenate(cm_bins)).astype(np.int64)
    cm_cands = cm_cands[(cm_cands >= 0) & (cm_cands < n_c)]
    cm_cands = cm_cands[gc.bits[cm_cands] > 0]
    bins = joint.member_bins(gc, cm_cands, cm)
    for idx, found in joint.member_bins(ga, asv_cands, asv).items():
        bins[idx] = np.union1d(bins.get(idx, np.empty(0, np.int64)), found)

    i = int(np.argmin(crit))
    if not np.isfinite(crit[i]):
        return dict(NAN_RESULT), bins
    dtype_c, dtype_a = ss[bona.index].dtype, ss[tar.index].dtype
    point = t_eer_point(a[i], b[i], c[i], m[j[i]], f[j[i]], ga.thresholds(dtype_a)[i],
                        gc.thresholds(dtype_c)[j[i]], crit[i])  # fmt: skip
    return point, bins
