"""Brute-force references that share no code with bosaris_dask: plain Python, exact arithmetic.

Deliberately naive and independent of the package's algorithms (no keys, no bins of the engine,
no ``bosaris_dask.roc``): ROC points are counted threshold by threshold; the ROC convex hull
comes from a plain pool-adjacent-violators loop on the distinct scores (the hull's segments are
the PAV blocks), with block posteriors compared as :class:`fractions.Fraction`; EER and PRBEP
are the exact rational crossings of that hull with ``Pmiss = Pfa`` (``misses = false alarms``),
rounded to float once; minCllr sums ``log1p`` of exact ratios with :func:`math.fsum`. Nothing
here may import from ``bosaris_dask``.

Examples
--------
>>> tar, non = [1.0, 2.0, 3.0], [-2.0, -1.0, 0.0, 1.5]
>>> pav(tar, non)
[(-2.0, 0.0, 0, 3), (1.0, 1.5, 1, 1), (2.0, 3.0, 2, 0)]
>>> hull(tar, non)
([0, 0, 1, 3], [4, 1, 0, 0])
>>> eer(tar, non) == 1 / 7, prbep(tar, non)
(True, 0.5)
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
from scipy.special import expit

Block = tuple[float, float, int, int]  # (lowest score, highest score, targets, non-targets)


def roc_points(tar: np.ndarray, non: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ROC point in counts: (misses, false alarms) at each distinct threshold and +inf."""
    thresholds = np.concatenate([np.unique(np.concatenate([tar, non])), [np.inf]])
    return _counts(np.asarray(tar), np.asarray(non), thresholds)


def _counts(tar: np.ndarray, non: np.ndarray, thresholds: np.ndarray):
    """``#(tar < t)`` and ``#(non >= t)`` for every ``t``, by binary search in the sorted
    scores."""
    misses = np.searchsorted(np.sort(tar), thresholds, side="left")
    fas = len(non) - np.searchsorted(np.sort(non), thresholds, side="left")
    return misses, fas


def dcf_at(tar, non, plo):
    """(raw actDCF, pmiss, pfa) thresholding at -plo, counted directly."""
    pmiss = np.mean(tar < -plo)
    pfa = np.mean(non >= -plo)
    return expit(plo) * pmiss + expit(-plo) * pfa, pmiss, pfa


def min_dcf(tar, non, plo):
    """Raw minDCF: the minimum over every threshold of the Bayes error rate (``plo`` any shape)."""
    misses, fas = roc_points(np.asarray(tar), np.asarray(non))
    plo = np.asarray(plo, dtype=np.float64)[..., None]
    cost = expit(plo) * misses / len(tar) + expit(-plo) * fas / len(non)
    return cost.min(axis=-1)


def cllr(tar, non):
    """Cllr in bits, straight from the definition."""
    t = np.mean(np.logaddexp(0, -np.asarray(tar, dtype=np.float64)))
    n = np.mean(np.logaddexp(0, np.asarray(non, dtype=np.float64)))
    return (t + n) / 2 / np.log(2)


def bins(tar, non) -> list[tuple[float, int, int]]:
    """``(score, targets, non-targets)`` for every distinct score, ascending (ties pooled)."""
    t = Counter(float(s) for s in np.asarray(tar).ravel().tolist())
    n = Counter(float(s) for s in np.asarray(non).ravel().tolist())
    return [(s, t[s], n[s]) for s in sorted(set(t) | set(n))]


def pav(tar, non, *, pseudo_counts: bool = False, bound: float = 1e6) -> list[Block]:
    """The PAV blocks of the labels sorted by score: pool adjacent violators until the block
    posteriors ``t / (t + n)`` increase strictly (exact :class:`~fractions.Fraction` compares).

    ``pseudo_counts`` adds one target at ``min(-bound, lowest score)`` and one non-target at
    ``max(bound, highest score)`` first, as the PAV calibration map does.
    """
    data = bins(tar, non)
    if pseudo_counts:
        low, high = min(-bound, data[0][0]), max(bound, data[-1][0])
        t = Counter({s: a for s, a, _ in data})
        n = Counter({s: b for s, _, b in data})
        t[low] += 1
        n[high] += 1
        data = [(s, t[s], n[s]) for s in sorted(set(t) | set(n))]
    blocks: list[Block] = []
    for s, t, n in data:
        block = (s, s, t, n)
        while blocks and Fraction(blocks[-1][2], blocks[-1][2] + blocks[-1][3]) >= Fraction(
            block[2], block[2] + block[3]
        ):
            lo, _, pt, pn = blocks.pop()
            block = (lo, block[1], pt + block[2], pn + block[3])
        blocks.append(block)
    return blocks


def pav_llrs(blocks: list[Block]) -> list[float]:
    """Each block's LLR ``log(t / n) - log(T / N)``, correctly rounded from the exact ratio."""
    T, N = sum(b[2] for b in blocks), sum(b[3] for b in blocks)
    out = []
    for _, _, t, n in blocks:
        if t == 0 or n == 0:
            out.append(math.inf if n == 0 else -math.inf)
        else:  # the exact ratio, rounded once to float, then its log
            out.append(math.log(Fraction(t * N, n * T)))
    return out


def hull(tar, non) -> tuple[list[int], list[int]]:
    """The ROC convex hull's vertices in counts: ``(misses, false_alarms)`` from the PAV blocks."""
    blocks = pav(tar, non)
    misses, fas = [0], [sum(b[3] for b in blocks)]
    for _, _, t, n in blocks:
        misses.append(misses[-1] + t)
        fas.append(fas[-1] - n)
    return misses, fas


def _crossing(x: list[Fraction], y: list[Fraction]) -> Fraction:
    """Where the polyline through ``(x, y)`` (x falling, y rising) crosses ``y = x``, exactly."""
    d = [b - a for a, b in zip(x, y, strict=True)]
    for i in range(len(d)):
        if d[i] == 0:
            return x[i]
        if d[i] > 0:  # d[i - 1] < 0 (d[0] = -x[0] < 0): interpolate along the segment
            w = -d[i - 1] / (d[i] - d[i - 1])
            return x[i - 1] + w * (x[i] - x[i - 1])
    raise AssertionError("the hull does not reach misses = T")


def eer(tar, non) -> float:
    """ROCCH-EER: where the hull crosses ``Pmiss = Pfa``, exact, rounded once."""
    misses, fas = hull(tar, non)
    T, N = misses[-1], fas[0]
    return float(_crossing([Fraction(f, N) for f in fas], [Fraction(m, T) for m in misses]))


def prbep(tar, non) -> float:
    """PRBEP as a count: where the hull crosses ``misses = false alarms``, exact, rounded once."""
    misses, fas = hull(tar, non)
    return float(_crossing([Fraction(f) for f in fas], [Fraction(m) for m in misses]))


def min_cllr(tar, non) -> float:
    """minCllr in bits: Cllr of the PAV LLRs, block by block.

    A block with ``t`` targets and ``n`` non-targets costs ``t log(1 + nT/(tN))`` for its
    targets and ``n log(1 + tN/(nT))`` for its non-targets; the ratios are exact rationals.
    """
    blocks = pav(tar, non)
    T, N = sum(b[2] for b in blocks), sum(b[3] for b in blocks)
    tar_cost, non_cost = [], []
    for _, _, t, n in blocks:
        if t and n:
            tar_cost.append(t * math.log1p(Fraction(n * T, t * N)))
            non_cost.append(n * math.log1p(Fraction(t * N, n * T)))
    return (math.fsum(tar_cost) / T + math.fsum(non_cost) / N) / (2 * math.log(2))


def check_hull(misses, fas, hull_misses, hull_fas) -> None:
    """Assert that (hull_misses, hull_fas) is the lower-left convex hull of the ROC points.

    Exact rational arithmetic: every ROC point lies on or above every hull edge's line (within
    the edge's span), every vertex is an ROC point, and consecutive edges turn strictly and
    always the same way (convex: no collinear and no reflex vertex).
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
        assert cross < 0, f"vertex {b} is collinear with its neighbours or turns the wrong way"


def fixed_fmr(tar, non, f) -> tuple[float, float, float]:
    """(threshold, FMR, FNMR) at a target FMR ``f``, trying every observed score in turn.

    The threshold is the smallest observed score ``t`` (either class) with
    ``#{non >= t} / N <= f``; ``+inf`` (FMR 0, FNMR 1) when none qualifies; all NaN when
    ``f < 1 / N`` (no non-zero FMR can meet the target).
    """
    tar, non = np.asarray(tar, dtype=np.float64), np.asarray(non, dtype=np.float64)
    if f < 1 / len(non):
        return math.nan, math.nan, math.nan
    thresholds = np.unique(np.concatenate([tar, non]))  # ascending
    misses, fas = _counts(tar, non, thresholds)
    ok = np.flatnonzero(fas / len(non) <= f)
    if not len(ok):
        return math.inf, 0.0, 1.0
    i = ok[0]
    return float(thresholds[i]), fas[i] / len(non), misses[i] / len(tar)


def fixed_fnmr(tar, non, f) -> tuple[float, float, float]:
    """(threshold, FMR, FNMR) at a target FNMR ``f``: the largest observed score ``t`` with
    ``#{tar < t} / T <= f``, tried from the top; all NaN when ``f < 1 / T``."""
    tar, non = np.asarray(tar, dtype=np.float64), np.asarray(non, dtype=np.float64)
    if f < 1 / len(tar):
        return math.nan, math.nan, math.nan
    thresholds = np.unique(np.concatenate([tar, non]))  # ascending
    misses, fas = _counts(tar, non, thresholds)
    ok = np.flatnonzero(misses / len(tar) <= f)
    assert len(ok), "the lowest target score always qualifies"
    i = ok[-1]
    return float(thresholds[i]), fas[i] / len(non), misses[i] / len(tar)


def ece(llr_tar, llr_non, plo) -> float:
    """Empirical cross-entropy in bits of natural-log LLRs at prior log-odds ``plo``, from the
    definition: ``p * mean(-log2 P(Hp | l)) + (1 - p) * mean(-log2 P(Hd | l))`` with posterior
    log-odds ``l + plo``; LLRs of ``+-inf`` on their own side cost nothing."""
    p = 1 / (1 + math.exp(-plo))

    def cost(x):  # -log2 sigmoid(x) = log2(1 + e^-x), 0 at +inf
        if x == math.inf:
            return 0.0
        if x > -30:
            return math.log1p(math.exp(-x)) / math.log(2)
        return (-x + math.log1p(math.exp(x))) / math.log(2)  # no overflow of e^-x

    tar = math.fsum(cost(float(v) + plo) for v in llr_tar) / len(llr_tar)
    non = math.fsum(cost(-(float(v) + plo)) for v in llr_non) / len(llr_non)
    return p * tar + (1 - p) * non


def pav_llr_of(tar, non) -> tuple[list[float], list[float]]:
    """The (raw) PAV LLR of every target and non-target score, from :func:`pav`'s blocks."""
    blocks = pav(tar, non)
    llrs = pav_llrs(blocks)

    lows = np.array([b[0] for b in blocks])

    def of(s):  # the block whose span holds s: the last one starting at or below it
        k = int(np.searchsorted(lows, s, side="right")) - 1
        assert k >= 0 and blocks[k][0] <= s <= blocks[k][1], s
        return llrs[k]

    return [of(float(s)) for s in tar], [of(float(s)) for s in non]
