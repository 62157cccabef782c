"""Metrics of one :class:`~bosaris_dask.passes.score_summary.ScoreSummary`: the priors and sweep
they are asked at, and every number of an evaluation (actDCF, minDCF, EER, PRBEP, Cllr, minCllr,
DR30, the AUC bounds, the ROC and ROCCH curves).

The same functions serve an exact in-memory summary (:func:`summary_from_arrays`) and the
engine's summary of a billion-trial store; :mod:`bosaris_dask.result_layout` arranges their
output as an ``xarray.Dataset``.

Examples
--------
>>> s = summary_from_arrays([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5, -2.0])
>>> out = summary_metrics(s, priors=[0.5], sweep=default_sweep())
>>> round(float(out["eer"]), 4), out["n_target"], out["plo"].shape
(0.1429, 3, (201,))
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.special import expit

from bosaris_dask import roc
from bosaris_dask.arguments import float_vector
from bosaris_dask.costs import OperatingPoint
from bosaris_dask.errors import OptionError, ScoreError
from bosaris_dask.passes import exact_sum
from bosaris_dask.passes.keys import order_keys
from bosaris_dask.passes.score_summary import ScoreSummary
from bosaris_dask.passes.softplus import softplus_units
from bosaris_dask.steppy_roc import roc_points, roc_thresholds, steppy_roc, steppy_roc_positions
from bosaris_dask.trials.construction import check_exact_in_float64

__all__ = [
    "DEFAULT_PRIORS",
    "DR30_ERRORS",
    "default_sweep",
    "effective_prior",
    "check_priors",
    "check_sweep",
    "summary_from_arrays",
    "act_rates",
    "dcf_normalizer",
    "summary_cllr",
    "summary_auc",
    "twice_u_parts",
    "hull_auc",
    "steppy_roc",
    "vertex_thresholds",
    "stated_plo",
    "plo_axis",
    "summary_metrics",
]

#: Effective priors reported by default (SRE-style operating points).
DEFAULT_PRIORS = (0.5, 0.1, 0.01, 0.001)
#: Rule of 30: the error count below which a rate is considered unreliable.
DR30_ERRORS = 30


def default_sweep() -> np.ndarray:
    """The default NBE sweep: 201 prior log-odds from -10 to 10 in steps of 0.1, each the
    double nearest its decimal (``k / 10``; ``linspace`` gave 9.100000000000001, so that
    ``result.sel(plo=9.1)`` found nothing).

    Examples
    --------
    >>> plo = default_sweep()
    >>> len(plo), plo[191], bool((plo == np.round(plo, 1)).all())
    (201, np.float64(9.1), True)
    """
    return np.arange(-100, 101) / 10.0


def effective_prior(p_target: float, c_miss: float = 1.0, c_fa: float = 1.0) -> float:
    """The effective prior of an operating point given as target prior and costs.

    Raises
    ------
    OptionError
        If ``p_target`` is not strictly between 0 and 1 or a cost is not a positive number.

    Examples
    --------
    >>> effective_prior(0.01, c_miss=10, c_fa=1)  # the SRE'08 operating point
    0.09174311926605505
    """
    (p,) = check_priors([p_target], "target prior")
    for name, cost in (("c_miss", c_miss), ("c_fa", c_fa)):
        try:
            value = float(cost)
        except (TypeError, ValueError):
            value = np.nan
        if not 0 < value < np.inf:
            raise OptionError(f"{name} must be a positive finite cost, got {cost!r}")
    return float(p * c_miss / (p * c_miss + (1 - p) * c_fa))


def check_priors(priors: Sequence[float], what: str = "effective prior") -> np.ndarray:
    """Priors as a 1-D float64 array; anything not strictly between 0 and 1 is an error."""
    return float_vector(priors, what, "probability")


def check_sweep(sweep: Any, plo: np.ndarray | None = None) -> np.ndarray:
    """The NBE sweep (prior log-odds) as a 1-D float64 array of finite numbers; ``None``: the
    default, extended in its steps of 0.1 to half a unit beyond each operating point's
    prior log-odds ``plo`` outside it (an NBE plot shows the curve about every one).

    Examples
    --------
    >>> s = check_sweep(None, np.array([np.log(1e-5 / (1 - 1e-5))]))  # -11.51
    >>> len(s), s[:2].tolist(), s[21:23].tolist()
    (222, [-12.1, -12.0], [-10.0, -9.9])
    """
    if sweep is not None:
        return float_vector(sweep, "sweep prior log-odds", "finite")
    out = default_sweep()
    if plo is None or not len(plo):
        return out
    below = np.arange(int(np.floor((np.min(plo) - 0.5) * 10)), int(out[0] * 10))
    above = np.arange(int(out[-1] * 10) + 1, int(np.ceil((np.max(plo) + 0.5) * 10)) + 1)
    return np.concatenate([below / 10, out, above / 10])


# --------------------------------------------------------------------------------------------
# summaries of in-memory scores
# --------------------------------------------------------------------------------------------


def summary_from_arrays(tar: Any, non: Any, name: str = "system") -> ScoreSummary:
    """An exact :class:`ScoreSummary` of target and non-target score arrays (one bin per value).

    Examples
    --------
    >>> s = summary_from_arrays([1.0, 1.0, 2.0], [0.0, 1.0])
    >>> s.values().tolist(), s.n_tar.tolist(), s.n_non.tolist()
    ([0.0, 1.0, 2.0], [0, 2, 1], [1, 1, 0])
    """
    if any(hasattr(arr, "data_vars") for arr in (tar, non)):  # an xarray Dataset
        raise ScoreError("the array metrics take target and non-target score arrays, got a "
                         "Dataset: evaluate(scores, key) evaluates trial objects")  # fmt: skip
    for side, arr in (("target", tar), ("non-target", non)):
        if np.ma.isMaskedArray(arr) and np.ma.getmaskarray(arr).any():  # np.asarray unmasks
            raise ScoreError(f"{name}: the {side} scores are a masked array: the array "
                             "metrics take every value; pass arr.compressed()")  # fmt: skip
    tar, non = np.asarray(tar), np.asarray(non)
    for side, arr in (("target", tar), ("non-target", non)):
        if arr.dtype.kind not in "iuf":
            raise ScoreError(f"{name}: {side} scores must be real numbers, got dtype {arr.dtype}")
        check_exact_in_float64(arr, f"{name}: {side}")
    dtype = np.float32 if tar.dtype == non.dtype == np.float32 else np.float64
    tar, non = tar.astype(dtype).ravel(), non.astype(dtype).ravel()
    both = np.concatenate([tar, non])
    if not np.all(np.isfinite(both)):
        bad = [f"{side}s {int(np.sum(~np.isfinite(arr)))} (the first at index "
               f"{int(np.flatnonzero(~np.isfinite(arr))[0])}: {arr[~np.isfinite(arr)][0]})"
               for side, arr in (("target", tar), ("non-target", non))
               if not np.all(np.isfinite(arr))]  # fmt: skip
        raise ScoreError(f"{name}: scores that are not finite: {', '.join(bad)}")
    if tar.size == 0 or non.size == 0:
        raise ScoreError(f"{name}: need targets and non-targets, got {tar.size} and {non.size}")
    keys, inverse = np.unique(order_keys(both), return_inverse=True)
    n_tar = np.bincount(inverse[: tar.size], minlength=len(keys))
    n_non = np.bincount(inverse[tar.size :], minlength=len(keys))
    units = softplus_units(tar, non)  # the same bits as over chunks
    return ScoreSummary(
        dtype=np.dtype(dtype),
        lo=keys.astype(np.uint64),
        bits=np.zeros(len(keys), dtype=np.int8),
        n_tar=n_tar,
        n_non=n_non,
        softplus_units=units,
        passes=0,
        name=name,
    )


# --------------------------------------------------------------------------------------------
# metrics of one summary
# --------------------------------------------------------------------------------------------


def act_rates(summary: ScoreSummary, plo: np.ndarray) -> dict[str, np.ndarray]:
    misses, false_alarms = summary.error_counts(-plo)
    pmiss, pfa = misses / summary.n_target, false_alarms / summary.n_nontarget
    raw = expit(plo) * pmiss + expit(-plo) * pfa
    return {"raw": raw, "pmiss": pmiss, "pfa": pfa, "misses": misses, "fas": false_alarms}


def dcf_normalizer(plo: np.ndarray) -> np.ndarray:
    return np.minimum(expit(plo), expit(-plo))


def summary_cllr(summary: ScoreSummary) -> float:
    t, n = summary.n_target, summary.n_nontarget
    tar, non = summary.softplus_units  # exact means: finite where the sums exceed float64
    # halved before they are added, so that two means near float64's largest do not overflow
    # (the same bits as (a + b) / (2 ln 2) elsewhere: halving is exact)
    return (0.5 * exact_sum.mean(tar, t) + 0.5 * exact_sum.mean(non, n)) / np.log(2)


def _dr30_plo(summary: ScoreSummary, sweep: np.ndarray) -> tuple[float, float]:
    """Where the minDCF error counts along the sweep reach 30 false alarms / 30 misses.

    Returns the first sweep point (from low prior log-odds, in whatever order ``sweep`` is
    given) with at least 30 false alarms and the last with at least 30 misses; NaN where there
    is none.
    """
    sweep = np.sort(sweep)
    _, pmiss, pfa = roc.min_bayes_error(summary.hull, sweep)
    fas = np.rint(pfa * summary.n_nontarget)
    misses = np.rint(pmiss * summary.n_target)
    fa_ok = np.flatnonzero(fas >= DR30_ERRORS)
    miss_ok = np.flatnonzero(misses >= DR30_ERRORS)
    return (
        float(sweep[fa_ok[0]]) if len(fa_ok) else np.nan,
        float(sweep[miss_ok[-1]]) if len(miss_ok) else np.nan,
    )


def summary_auc(summary: ScoreSummary) -> tuple[float, float]:
    """Bounds on the exact AUC (Mann-Whitney, ties counted half) from a summary.

    ``AUC = (#{s_tar > s_non} + ½·#{s_tar = s_non}) / (T·N)`` over all target/non-target pairs
    (scikit-learn's ``roc_auc_score``). Pairs in different bins are ordered by the bins; pairs
    in one exact bin (one score value, ``bits == 0``) are ties; only pairs inside a *coarse*
    bin that holds both classes are unknown, each adding between 0 and 1. The bounds are equal
    (the AUC is exact) when no such bin is left, as for :func:`summary_from_arrays`.

    Refining every mixed coarse bin (``n_tar > 0 and n_non > 0 and bits > 0``) down to single
    values would cost passes that grow with the number and width of the mixed bins (the whole
    overlap of the two score distributions). :mod:`bosaris_dask.passes.exact_auc` instead counts
    their pairs exactly, in the evaluation's own passes when the targets fit a budget, else in one
    or two more passes when the smaller class of those bins fits it
    (``evaluate(..., exact_auc=True)``); otherwise these bounds say how far from exact the AUC
    can be.

    Returns
    -------
    (float, float)
        Lower and upper bound, each correctly rounded from an exact integer ratio.
    """
    summary = ScoreSummary.given_to("summary_auc", summary)
    base, unknown = twice_u_parts(summary)
    total = 2 * summary.n_target * summary.n_nontarget
    return float(Fraction(base, total)), float(Fraction(base + unknown, total))


def twice_u_parts(summary: ScoreSummary) -> tuple[int, int]:
    """Twice the Mann-Whitney U of the pairs a summary orders, and twice the pairs it cannot.

    ``2·(pairs in different bins with the target above) + (pairs tied in an exact bin)``, and
    ``2·(pairs inside mixed coarse bins)``: exact Python integers (:func:`summary_auc`;
    :mod:`bosaris_dask.passes.exact_auc` counts the second part exactly).

    Examples
    --------
    >>> twice_u_parts(summary_from_arrays([1.0, 2.0, 3.0], [0.0, 2.0]))  # 4 ordered, 1 tie
    (9, 0)
    """
    n_tar = summary.n_tar.astype(np.int64)
    n_non = summary.n_non.astype(np.int64)
    below = np.concatenate([[0], np.cumsum(n_non)[:-1]])
    pairs = n_tar * n_non
    coarse = summary.bits > 0
    base = 2 * int(np.dot(n_tar, below)) + int(pairs[~coarse].sum())
    return base, 2 * int(pairs[coarse].sum())


def hull_auc(hull: roc.Hull) -> float:
    """The area under the ROC convex hull (ROCCH), in ``(Pfa, 1 - Pmiss)`` axes.

    At least the AUC of the (steppy) ROC: the hull joins its best points by straight lines.
    Computed exactly from the vertex counts (trapezoids), then rounded once.
    """
    t, n = hull.n_target, hull.n_nontarget
    hits = [t - int(m) for m in hull.misses]
    fas = [int(f) for f in hull.false_alarms]
    twice = sum((fas[i] - fas[i + 1]) * (hits[i] + hits[i + 1]) for i in range(len(fas) - 1))
    return float(Fraction(twice, 2 * t * n))


def vertex_thresholds(summary: ScoreSummary, positions: np.ndarray) -> np.ndarray:
    """Score thresholds that reject exactly the first ``positions`` bins (accept ``s >= t``).

    A bin covers the keys ``[lo, lo + 2**bits)``, ascending and disjoint, so the lowest value a
    bin can hold (:func:`~bosaris_dask.steppy_roc.roc_thresholds`) separates it from every bin
    before it. Rejecting no trial is ``-inf``; rejecting every trial (or every bin that holds
    one) is ``+inf``.
    """
    positions = np.asarray(positions)
    cum = np.concatenate([[0], np.cumsum(summary.n_tar + summary.n_non)])[positions]
    out = np.where(cum == 0, -np.inf, roc_thresholds(summary, positions))  # nothing below
    return np.where(cum == summary.n_tar.sum() + summary.n_non.sum(), np.inf, out)


def stated_plo(priors: Sequence[float | OperatingPoint]) -> np.ndarray:
    """The prior log-odds of effective priors or operating points: each
    :attr:`~bosaris_dask.costs.OperatingPoint.plo`, rounded down, so that ``score >= -plo``
    accepts exactly the scores at or above the exact Bayes threshold.

    Examples
    --------
    >>> stated_plo([0.5, OperatingPoint(0.5, 10.0, 1.0)]).tolist()  # ln 10 = 2.30258509299404568
    [0.0, 2.3025850929940455]
    """
    points = [p if isinstance(p, OperatingPoint) else None for p in priors]
    if any(p is None for p in points):
        plain = iter(check_priors([p for p in priors if not isinstance(p, OperatingPoint)]))
        points = [OperatingPoint.from_prior(next(plain)) if p is None else p for p in points]
    return np.array([p.plo for p in points], dtype=np.float64)  # type: ignore[union-attr]


def plo_axis(priors: Sequence[float | OperatingPoint], sweep: np.ndarray) -> np.ndarray:
    """The ``plo`` dimension of an evaluation: the prior log-odds of the operating points
    (effective priors or :class:`~bosaris_dask.costs.OperatingPoint`, :func:`stated_plo`) and
    of the sweep, one sorted axis without repeats.

    Examples
    --------
    >>> plo_axis([0.5], np.array([-1.0, 0.0, 1.0])).tolist()
    [-1.0, 0.0, 1.0]
    """
    return np.unique(np.concatenate([stated_plo(priors), np.asarray(sweep, float)]))


def summary_metrics(
    summary: ScoreSummary, priors: Sequence[float | OperatingPoint], sweep: np.ndarray
) -> dict[str, Any]:
    """All metrics of one system from its summary, as a dict of scalars and arrays.

    The per-prior metrics (:data:`PER_PLO`) are arrays along ``out["plo"]``, the sorted union of
    the prior log-odds of ``priors`` (effective priors or operating points: :func:`stated_plo`)
    and ``sweep`` (:func:`plo_axis`). ``min_threshold`` is a score threshold
    that attains minDCF: the one that rejects exactly the bins before the minimizing ROCCH vertex
    (:func:`roc.min_bayes_error_vertex`), i.e. the lowest value of the first accepted bin (its
    lowest score where the bin was refined to one value, else its lower edge: a value between
    two scores, which decides every trial alike, not necessarily a score itself, as
    :func:`bosaris_dask.metrics.min_threshold`'s on arrays is);
    ``-inf`` when accepting everything is optimal, ``+inf`` when rejecting everything is. The
    DR30 points are looked for along ``sweep`` alone.
    """
    summary = ScoreSummary.given_to("summary_metrics", summary)
    plo = plo_axis(priors, sweep)
    sweep = np.asarray(sweep, dtype=np.float64)
    hull = summary.hull
    cllr = summary_cllr(summary)
    # the PAV map is the best of the monotone maps, the scores' own among them: minCllr <= Cllr
    # (the float64 sums of the hull's blocks came out an ulp above an exact Cllr, and the
    # calibration loss at -2e-16)
    min_cllr = min(roc.hull_min_cllr(hull), cllr)
    out: dict[str, Any] = {
        "plo": plo,
        "n_target": summary.n_target,
        "n_nontarget": summary.n_nontarget,
        "n_missing": summary.n_missing,
        "eer": roc.hull_eer(hull),
        "prbep": roc.hull_prbep(hull),
        "cllr": cllr,
        "min_cllr": min_cllr,
        "cllr_cal": cllr - min_cllr,
        "auc_rocch": hull_auc(hull),
        "pmiss30": DR30_ERRORS / summary.n_target,
        "pfa30": DR30_ERRORS / summary.n_nontarget,
        "rocch_pmiss": hull.pmiss,
        "rocch_pfa": hull.pfa,
    }
    kept = steppy_roc_positions(summary)
    out["roc_pmiss"], out["roc_pfa"] = roc_points(summary, kept)
    out["roc_threshold"] = roc_thresholds(summary, kept)
    out["n_vertices"], out["n_roc_points"] = len(hull.pmiss), len(out["roc_pmiss"])
    out["auc_low"], out["auc_high"] = summary_auc(summary)
    out["auc"] = out["auc_low"] if out["auc_low"] == out["auc_high"] else np.nan
    out["min_threshold"] = vertex_thresholds(
        summary, hull.positions[roc.min_bayes_error_vertex(hull, plo)]
    )
    out["dr30_fa_plo"], out["dr30_miss_plo"] = _dr30_plo(summary, sweep)
    act = act_rates(summary, plo)
    mn_raw, mn_pmiss, mn_pfa = roc.min_bayes_error(hull, plo)
    norm = dcf_normalizer(plo)
    out["act_dcf"] = act["raw"] / norm
    out["min_dcf"] = mn_raw / norm
    out["act_dcf_raw"] = act["raw"]
    out["min_dcf_raw"] = mn_raw
    out["act_pmiss"] = act["pmiss"]
    out["act_pfa"] = act["pfa"]
    out["min_pmiss"] = mn_pmiss
    out["min_pfa"] = mn_pfa
    return out
