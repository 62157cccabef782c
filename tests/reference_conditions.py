"""Brute-force references for partition-equalized metrics and the two-way bootstrap.

Like :mod:`tests.reference`, nothing here imports ``bosaris_dask`` or shares its algorithms:
weighted ROC points are summed threshold by threshold with exact :class:`fractions.Fraction`
weights, the ROC convex hull is a plain monotone-chain lower hull of those points (not PAV), and
bootstrap resamples are drawn group by group with numpy and applied by repeating trials.

Definitions (``../shared/reference/FIELD_METRICS.md`` sections 1 and 2):

- **Equalized weights**: over the partitions ``P``, a target trial of partition ``p`` weighs
  ``max_q N_tar,q / N_tar,p`` and a non-target ``max_q N_non,q / N_non,p`` (the maximum over the
  partitions that have such trials). Pmiss and Pfa are weighted fractions; EER (the ROCCH-EER,
  as the package's) and minDCF and actDCF are computed on that one weighted curve, ties included
  (accept iff ``s >= t``).
- **Two-way bootstrap**: draw, with replacement, as many model-side groups as there are (each
  group's multiplicity is how often it was drawn), and independently the segment-side groups; a
  trial's multiplicity is the product of its model's and its segment's group multiplicities.
  The Poisson(1) variant draws each group's multiplicity from Poisson(1).

Examples
--------
>>> scores, classes = [2.0, 0.0, 1.0], [1, 1, -1]
>>> weighted_eer(scores, classes, [1, 3, 1])  # hand-worked in tests/test_reference_conditions
0.42857142857142855
>>> equalized_weights([1, 1, 1, -1], ["a", "a", "b", "b"])
[Fraction(1, 1), Fraction(1, 1), Fraction(2, 1), Fraction(1, 1)]
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.special import expit

# --------------------------------------------------------------------------------------------
# partition-equalized metrics
# --------------------------------------------------------------------------------------------


def equalized_weights(classes: Sequence[int], partitions: Sequence[Any]) -> list[Fraction]:
    """Each trial's weight: ``max_q N_c,q / N_c,p`` for its class ``c`` and partition ``p``."""
    counts = Counter(zip(classes, partitions, strict=True))
    best = {c: max(n for (k, _), n in counts.items() if k == c) for c in set(classes)}
    return [Fraction(best[c], counts[c, p]) for c, p in zip(classes, partitions, strict=True)]


def _fractions(weights) -> list[Fraction]:
    return [Fraction(x.item() if hasattr(x, "item") else x) for x in weights]


def weighted_roc(scores, classes, weights) -> tuple[list[Fraction], list[Fraction]]:
    """``(pmiss, pfa)`` at every distinct score as threshold, then ``+inf``, exact."""
    w = _fractions(weights)
    total_tar = sum(x for x, c in zip(w, classes, strict=True) if c == 1)
    total_non = sum(x for x, c in zip(w, classes, strict=True) if c == -1)
    at_tar: dict[float, Fraction] = defaultdict(Fraction)  # weight of each score, per class
    at_non: dict[float, Fraction] = defaultdict(Fraction)
    for x, s, c in zip(w, scores, classes, strict=True):
        if c == 1:
            at_tar[float(s)] += x
        elif c == -1:
            at_non[float(s)] += x
    thresholds = [*sorted(set(float(s) for s in scores)), np.inf]
    pmiss, pfa = [], []
    miss, below_non = Fraction(0), Fraction(0)  # target weight below t, non-target weight below t
    for t in thresholds:  # ascending: below the next t lie the scores below this t, and t's
        pmiss.append(miss / total_tar)
        pfa.append((total_non - below_non) / total_non)
        miss += at_tar.get(t, Fraction(0))
        below_non += at_non.get(t, Fraction(0))
    return pmiss, pfa


def lower_hull(points: list[tuple[Fraction, Fraction]]) -> list[tuple[Fraction, Fraction]]:
    """The lower convex hull of ``(x, y)`` points, by x ascending (monotone chain)."""
    out: list[tuple[Fraction, Fraction]] = []
    for p in sorted(set(points)):
        while len(out) >= 2:
            (x1, y1), (x2, y2) = out[-2], out[-1]
            if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) <= 0:  # not a left turn
                out.pop()
            else:
                break
        out.append(p)
    return out


def weighted_eer(scores, classes, weights) -> float:
    """The ROCCH-EER of the weighted curve: where its lower hull meets ``Pmiss = Pfa``."""
    pmiss, pfa = weighted_roc(scores, classes, weights)
    hull = lower_hull(list(zip(pfa, pmiss, strict=True)))  # x = Pfa ascending, Pmiss falling
    for (x1, y1), (x2, y2) in zip(hull[:-1], hull[1:], strict=True):
        d1, d2 = y1 - x1, y2 - x2
        if d1 >= 0 >= d2:  # the segment crosses y = x
            if d1 == d2:
                return float(x1)
            a = d1 / (d1 - d2)
            return float(x1 + a * (x2 - x1))
    raise AssertionError("the hull does not cross Pmiss = Pfa")


def weighted_min_dcf(scores, classes, weights, prior: float) -> float:
    """Normalized minDCF of the weighted curve (minimum over every threshold)."""
    pmiss, pfa = weighted_roc(scores, classes, weights)
    costs = [prior * float(m) + (1 - prior) * float(f) for m, f in zip(pmiss, pfa, strict=True)]
    return min(costs) / min(prior, 1 - prior)


def weighted_act_dcf(scores, classes, weights, prior: float) -> float:
    """Normalized actDCF of the weighted curve: threshold ``-logit(prior)``."""
    t = -np.log(prior / (1 - prior))
    w = _fractions(weights)
    tar = [(x, s) for x, s, c in zip(w, scores, classes, strict=True) if c == 1]
    non = [(x, s) for x, s, c in zip(w, scores, classes, strict=True) if c == -1]
    pmiss = sum(x for x, s in tar if s < t) / sum(x for x, _ in tar)
    pfa = sum(x for x, s in non if s >= t) / sum(x for x, _ in non)
    p = float(expit(-t))
    return (p * float(pmiss) + (1 - p) * float(pfa)) / min(p, 1 - p)


def equalized_metrics(scores, classes, partitions, priors: Sequence[float]) -> dict[str, Any]:
    """EER and, per prior, actDCF and minDCF with equalized weights over ``partitions``."""
    w = equalized_weights(classes, partitions)
    return {
        "eer": weighted_eer(scores, classes, w),
        "operating_points": [
            {"prior": p, "act_dcf": weighted_act_dcf(scores, classes, w, p),
             "min_dcf": weighted_min_dcf(scores, classes, w, p)}
            for p in priors
        ],
    }  # fmt: skip


# --------------------------------------------------------------------------------------------
# the two-way bootstrap
# --------------------------------------------------------------------------------------------


def group_multiplicities(groups: Sequence[Any], drawn: Sequence[Any]) -> dict[Any, int]:
    """How often each group of ``groups`` was drawn (0 for a group never drawn)."""
    count = Counter(drawn)
    return {g: count[g] for g in dict.fromkeys(groups)}


def two_way_multiplicity(model_groups, segment_groups, model_drawn, segment_drawn) -> np.ndarray:
    """``(n_models, n_segments)`` trial multiplicities: model group's times segment group's."""
    cm = group_multiplicities(model_groups, model_drawn)
    cs = group_multiplicities(segment_groups, segment_drawn)
    return np.array([[cm[gm] * cs[gs] for gs in segment_groups] for gm in model_groups])


def draw_groups(groups: Sequence[Any], rng: np.random.Generator, *, poisson: bool = False):
    """One side's draw: the distinct groups resampled with replacement (as many as there are),
    or, with ``poisson``, each group repeated Poisson(1) times."""
    distinct = list(dict.fromkeys(groups))
    if poisson:
        return [g for g, k in zip(distinct, rng.poisson(1.0, len(distinct)), strict=True)
                for _ in range(k)]  # fmt: skip
    return [distinct[i] for i in rng.integers(0, len(distinct), len(distinct))]


def resample(scores: np.ndarray, key: np.ndarray, multiplicity: np.ndarray):
    """Target and non-target scores of one resample: each trial repeated its multiplicity."""
    tar = np.repeat(scores[key == 1], multiplicity[key == 1])
    non = np.repeat(scores[key == -1], multiplicity[key == -1])
    return tar, non


def bootstrap(
    metric,
    scores,
    key,
    model_groups,
    segment_groups,
    *,
    resamples: int,
    seed: int,
    poisson: bool = False,
) -> np.ndarray:
    """``metric(tar, non)`` on each two-way resample (NaN where one class is empty)."""
    rng = np.random.default_rng(seed)
    out = np.full(resamples, np.nan)
    for b in range(resamples):
        mult = two_way_multiplicity(
            model_groups, segment_groups, draw_groups(model_groups, rng, poisson=poisson),
            draw_groups(segment_groups, rng, poisson=poisson),
        )  # fmt: skip
        tar, non = resample(np.asarray(scores), np.asarray(key), mult)
        if len(tar) and len(non):
            out[b] = metric(tar, non)
    return out


def percentile_interval(values: np.ndarray, ci: float) -> tuple[float, float]:
    """The ``(1 - ci) / 2`` and ``(1 + ci) / 2`` quantiles (numpy's default, linear) of the
    finite values (resamples without targets or non-targets are left out)."""
    v = np.asarray(values)[np.isfinite(values)]
    lo, hi = np.quantile(v, [(1 - ci) / 2, (1 + ci) / 2])
    return float(lo), float(hi)
