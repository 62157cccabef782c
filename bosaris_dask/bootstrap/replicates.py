"""Every metric of every resample, from its weighted coarse histogram and exact Cllr sums.

A resample is a weighted trial list; its coarse histogram ``(targets, non-targets)`` per bin is
exact (integer weighted counts). From it:

- **EER**, **minDCF** and **minCllr** come from the ROC convex hull of the bins (PAV over the
  bins), i.e. of the resample's scores rounded down to their bin's edge: at the bins'
  resolution (the hull of the bin edges' ROC points lies on or above the exact hull); every
  resample's hull at once (:mod:`~bosaris_dask.bootstrap.hulls`);
- **actDCF** at the reported operating points is exact: their Bayes thresholds are bin edges;
- **Cllr** is exact: the resample's sums of the per-trial Cllr terms (each rounded to a
  multiple of ``2**-57``) over its targets and non-targets;
- the **calibration loss** ``cllr_cal = Cllr - minCllr`` is the exact Cllr minus the bins'
  minCllr, at least 0 (as the exact loss is): at the bins' resolution too, at most the exact
  loss.

Each binned metric also gets its **other bound** (``<metric>_bound``): its value on the bins
split in two, each bin's non-targets below its targets, the best order its trials could be in.
That ROC's hull lies on or below the exact one (every exact ROC point between two bin edges is
above and to the right of the split's corner), as the bin edges' lies on or above it, so the
exact EER, minCllr and minDCF are in ``[bound, binned]`` for every resample, and the exact
calibration loss (:data:`BINNED_BELOW`) in ``[binned, bound]``: the binning's error, bounded.

A resample without targets or without non-targets gets NaN metrics.

Examples
--------
>>> import numpy as np
>>> out = replicate_metrics(np.array([[0, 1, 2]]), np.array([[2, 1, 0]]), np.array([1.0]),
...                         np.array([2.0]), np.array([0.0]), np.array([1]))
>>> out["eer"].tolist(), out["act_dcf"].tolist()
([0.16666666666666666], [[0.3333333333333333]])
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from bosaris_dask.bootstrap.hulls import row_hulls, rows_eer, rows_min_bayes_error, rows_min_cllr

__all__ = ["replicate_metrics", "scaled_copies", "METRICS", "PER_POINT", "BINNED", "BINNED_BELOW"]

#: Scalar metrics of a resample, and those per operating point.
METRICS = ("eer", "cllr", "min_cllr", "cllr_cal")
PER_POINT = ("act_dcf", "min_dcf")
#: The metrics at the bins' resolution, each with its other bound (``<metric>_bound``).
BINNED = ("eer", "min_cllr", "cllr_cal", "min_dcf")
#: Those whose binned value is at most the exact one (and the bound at least): the others'
#: binned values are at least the exact ones.
BINNED_BELOW = ("cllr_cal",)


def replicate_metrics(
    tar: np.ndarray, non: np.ndarray, sp_tar: np.ndarray, sp_non: np.ndarray,
    plo: np.ndarray, edge_index: np.ndarray,
) -> dict[str, np.ndarray]:  # fmt: skip
    """Metrics of each row (resample) of ``(R, bins)`` weighted counts.

    Parameters
    ----------
    tar, non
        Weighted target and non-target counts per bin, ascending score.
    sp_tar, sp_non
        Each row's sums of ``log(1 + exp(-s))`` over targets and ``log(1 + exp(s))`` over
        non-targets (natural log, weighted).
    plo
        Prior log-odds of the operating points.
    edge_index
        For each operating point, the index ``i`` of its Bayes threshold among the bin edges
        (its misses are the targets of bins ``0..i``).

    Returns
    -------
    dict
        ``eer``, ``cllr``, ``min_cllr``, ``cllr_cal`` ``(R,)`` and normalized ``act_dcf``,
        ``min_dcf`` ``(R, len(plo))``; ``eer_bound``, ``min_cllr_bound``, ``cllr_cal_bound``,
        ``min_dcf_bound`` as those: the exact value lies between a binned metric and its bound.
    """
    rows = tar.shape[0]
    out = {name: np.full(rows, np.nan) for name in METRICS}
    out |= {name: np.full((rows, len(plo)), np.nan) for name in PER_POINT}
    for name in BINNED:
        out[f"{name}_bound"] = np.full_like(out[name], np.nan)
    p, q = expit(plo), expit(-plo)
    norm = np.minimum(p, q)
    n_t, n_n = tar.sum(axis=1), non.sum(axis=1)
    valid = np.flatnonzero((n_t > 0) & (n_n > 0))
    if not len(valid):
        return out
    hulls = row_hulls(tar[valid], non[valid])
    n_t, n_n = n_t[valid], n_n[valid]
    out["eer"][valid] = rows_eer(hulls)
    out["min_cllr"][valid] = rows_min_cllr(hulls)
    out["cllr"][valid] = (sp_tar[valid] / n_t + sp_non[valid] / n_n) / (2 * np.log(2))
    out["min_dcf"][valid] = rows_min_bayes_error(hulls, plo) / norm
    split = np.zeros((len(valid), 2 * tar.shape[1]), dtype=np.result_type(tar, non))
    split_tar, split_non = split, split.copy()
    split_non[:, 0::2], split_tar[:, 1::2] = non[valid], tar[valid]  # ascending: non-targets first
    best = row_hulls(split_tar, split_non)
    out["eer_bound"][valid] = rows_eer(best)
    out["min_cllr_bound"][valid] = rows_min_cllr(best)
    out["min_dcf_bound"][valid] = rows_min_bayes_error(best, plo) / norm
    out["cllr_cal"] = np.maximum(out["cllr"] - out["min_cllr"], 0.0)  # (the exact is >= 0)
    out["cllr_cal_bound"] = out["cllr"] - out["min_cllr_bound"]
    misses = np.cumsum(tar[valid], axis=1)[:, edge_index]
    fas = n_n[:, None] - np.cumsum(non[valid], axis=1)[:, edge_index]
    out["act_dcf"][valid] = (p * misses / n_t[:, None] + q * fas / n_n[:, None]) / norm
    return out


def scaled_copies(tar: np.ndarray, non: np.ndarray) -> bool:
    """Does every resample (rows 1.. of ``(R, bins)`` weighted counts) that holds targets and
    non-targets hold the data's (row 0) in the data's proportions, each bin's counts one factor
    times the data's? Its metrics are then the data's, and an interval from them would have no
    width: the trials are of one resampled group, drawn whole or not at all (or of groups
    alike bin for bin).

    >>> import numpy as np
    >>> data = np.array([[1, 2], [0, 0], [3, 6]]), np.array([[2, 0], [0, 0], [6, 0]])
    >>> scaled_copies(*data)
    True
    >>> scaled_copies(data[0], np.array([[2, 0], [0, 0], [4, 2]]))
    False
    """
    t, n = tar.sum(axis=1), non.sum(axis=1)
    rows = np.flatnonzero((t > 0) & (n > 0))
    rows = rows[rows > 0]
    if not rows.size or not (t[0] > 0 and n[0] > 0):
        return False

    def same(a: np.ndarray, b: np.ndarray) -> bool:  # exact integer counts, divided once
        return bool(np.allclose(a, b, rtol=1e-13, atol=0))

    return (
        same(tar[rows] / t[rows, None], tar[0] / t[0])
        and same(non[rows] / n[rows, None], non[0] / n[0])
        and same(n[rows] / t[rows], n[0] / t[0])
    )
