"""Brute-force numpy references: sort everything, enumerate every threshold.

Deliberately naive and independent of bosaris_dask's algorithms (no hull, no keys, no bins), so
that the tests compare two different computations of the same definitions.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from scipy.special import expit


def roc_points(tar: np.ndarray, non: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ROC point in counts: (misses, false alarms) at each distinct threshold and +inf."""
    thresholds = np.concatenate([np.unique(np.concatenate([tar, non])), [np.inf]])
    misses = np.array([(tar < t).sum() for t in thresholds])
    fas = np.array([(non >= t).sum() for t in thresholds])
    return misses, fas


def dcf_at(tar, non, plo):
    """(raw actDCF, pmiss, pfa) thresholding at -plo, counted directly."""
    pmiss = np.mean(tar < -plo)
    pfa = np.mean(non >= -plo)
    return expit(plo) * pmiss + expit(-plo) * pfa, pmiss, pfa


def min_dcf(tar, non, plo):
    """Raw minDCF: the minimum over every threshold of the Bayes error rate."""
    misses, fas = roc_points(tar, non)
    cost = expit(plo) * misses / len(tar) + expit(-plo) * fas / len(non)
    return cost.min()


def cllr(tar, non):
    """Cllr in bits, straight from the definition."""
    t = np.mean(np.logaddexp(0, -np.asarray(tar, dtype=np.float64)))
    n = np.mean(np.logaddexp(0, np.asarray(non, dtype=np.float64)))
    return (t + n) / 2 / np.log(2)


def check_hull(misses, fas, hull_misses, hull_fas) -> None:
    """Assert that (hull_misses, hull_fas) is the lower-left convex hull of the ROC points.

    Exact rational arithmetic: every ROC point lies on or above every hull edge's line (within
    the edge's span), every vertex is an ROC point, and consecutive edges turn strictly.
    """
    points = set(zip(misses.tolist(), fas.tolist(), strict=True))
    hull = list(zip(hull_misses.tolist(), hull_fas.tolist(), strict=True))
    assert all(v in points for v in hull), "a hull vertex is not an ROC point"
    assert hull[0] == (0, max(fas)) and hull[-1] == (max(misses), 0)
    for (m1, f1), (m2, f2) in zip(hull[:-1], hull[1:], strict=True):
        assert m2 >= m1 and f2 <= f1 and (m2, f2) != (m1, f1)
        for m, f in points:  # in the x = false alarms span of the edge, points are not below it
            if f2 <= f <= f1 and f1 != f2:
                line = Fraction(m1) + Fraction(m2 - m1) * Fraction(f1 - f, f1 - f2)
                assert m >= line, f"ROC point {(m, f)} lies below hull edge {(m1, f1)}-{(m2, f2)}"
    for a, b, c in zip(hull[:-2], hull[1:-1], hull[2:], strict=True):
        cross = (b[1] - a[1]) * (c[0] - a[0]) - (b[0] - a[0]) * (c[1] - a[1])
        assert cross != 0, f"collinear vertex {b}"
