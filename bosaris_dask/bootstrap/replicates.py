"""Every metric of every resample, from its weighted coarse histogram and exact Cllr sums.

A resample is a weighted trial list; its coarse histogram ``(targets, non-targets)`` per bin is
exact (integer weighted counts). From it:

- **EER**, **minDCF** and **minCllr** come from the ROC convex hull of the bins (PAV over the
  bins), i.e. of the resample's scores rounded down to their bin's edge: at the bins'
  resolution (the hull of the bin edges' ROC points lies on or above the exact hull);
- **actDCF** at the reported operating points is exact: their Bayes thresholds are bin edges;
- **Cllr** is exact: the resample's sums of the per-trial Cllr terms (each rounded to a
  multiple of ``2**-57``) over its targets and non-targets.

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

from bosaris_dask import roc

__all__ = ["replicate_metrics", "METRICS", "PER_POINT"]

#: Scalar metrics of a resample, and those per operating point.
METRICS = ("eer", "cllr", "min_cllr")
PER_POINT = ("act_dcf", "min_dcf")


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
        ``eer``, ``cllr``, ``min_cllr`` ``(R,)`` and normalized ``act_dcf``, ``min_dcf``
        ``(R, len(plo))``.
    """
    rows = tar.shape[0]
    out = {name: np.full(rows, np.nan) for name in METRICS}
    out |= {name: np.full((rows, len(plo)), np.nan) for name in PER_POINT}
    p, q = expit(plo), expit(-plo)
    norm = np.minimum(p, q)
    for r in range(rows):
        t_row, n_row = tar[r], non[r]
        n_t, n_n = int(t_row.sum()), int(n_row.sum())
        if n_t == 0 or n_n == 0:
            continue
        hull = roc.hull_from_counts(t_row, n_row)
        out["eer"][r] = roc.hull_eer(hull)
        out["min_cllr"][r] = roc.hull_min_cllr(hull)
        out["cllr"][r] = (sp_tar[r] / n_t + sp_non[r] / n_n) / (2 * np.log(2))
        out["min_dcf"][r] = roc.min_bayes_error(hull, plo)[0] / norm
        misses = np.cumsum(t_row)[edge_index]
        fas = n_n - np.cumsum(n_row)[edge_index]
        out["act_dcf"][r] = (p * misses / n_t + q * fas / n_n) / norm
    return out
