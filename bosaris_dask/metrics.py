"""BOSARIS metrics: actDCF, minDCF, ROCCH, EER, PRBEP, Cllr, minCllr, DR30 and the NBE sweep.

Definitions follow DESIGN.md section 2 (unit costs, effective prior ``p``, Bayes threshold
``-logit(p)``, accept iff ``score >= threshold``). Everything is computed from
:class:`~bosaris_dask.engine.ScoreSummary` objects, so the same code serves a few thousand scores
in numpy arrays and a billion-trial store.

Examples
--------
>>> import numpy as np
>>> tar, non = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.0, 1.5, -2.0])
>>> round(eer(tar, non), 4), round(min_dcf(tar, non, 0.5), 4), round(act_dcf(tar, non, 0.5), 4)
(0.1429, 0.25, 0.5)
>>> ds = evaluate_arrays(tar, non, priors=[0.5, 0.1])
>>> operating_points(ds).act_dcf.sel(prior=0.1).item() == act_dcf(tar, non, 0.1)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np
import xarray as xr
from scipy.special import expit, logit, ndtri

from bosaris_dask import fixed_rates, roc
from bosaris_dask.costs import OperatingPoint, merge_operating_points
from bosaris_dask.engine import DEFAULT_SPLIT_EVERY, ScoreSummary, summarize
from bosaris_dask.errors import OptionError, ScoreError
from bosaris_dask.kernels import softplus_totals
from bosaris_dask.keys import order_keys

__all__ = [
    "DEFAULT_PRIORS",
    "default_sweep",
    "effective_prior",
    "summary_from_arrays",
    "summary_metrics",
    "plo_axis",
    "operating_points",
    "sweep_points",
    "curve",
    "steppy_roc",
    "evaluate",
    "evaluate_arrays",
    "act_dcf",
    "min_dcf",
    "eer",
    "prbep",
    "uer",
    "cllr",
    "min_cllr",
    "rocch",
    "min_threshold",
    "auc",
    "auc_rocch",
    "summary_auc",
    "hull_auc",
    "fixed_rate_metrics",
    "fnmr_at_fmr",
    "fmr_at_fnmr",
]

#: Effective priors reported by default (SRE-style operating points).
DEFAULT_PRIORS = (0.5, 0.1, 0.01, 0.001)
#: Rule of 30: the error count below which a rate is considered unreliable.
DR30_ERRORS = 30


def default_sweep() -> np.ndarray:
    """The default NBE sweep: 201 prior log-odds from -10 to 10."""
    return np.linspace(-10.0, 10.0, 201)


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
    (p,) = _check_priors([p_target], "target prior")
    for name, cost in (("c_miss", c_miss), ("c_fa", c_fa)):
        try:
            value = float(cost)
        except (TypeError, ValueError):
            value = np.nan
        if not 0 < value < np.inf:
            raise OptionError(f"{name} must be a positive finite cost, got {cost!r}")
    return float(p * c_miss / (p * c_miss + (1 - p) * c_fa))


def _check_priors(priors: Sequence[float], what: str = "effective prior") -> np.ndarray:
    """Priors as a 1-D float64 array; anything not strictly between 0 and 1 is an error."""
    try:
        p = np.atleast_1d(np.asarray(priors, dtype=np.float64))
    except (TypeError, ValueError):
        raise OptionError(f"{what}s must be numbers, got {priors!r}") from None
    if p.ndim != 1:
        raise OptionError(f"{what}s must be a number or a 1-D list, got shape {p.shape}")
    bad = ~((p > 0) & (p < 1))
    if bad.any():
        raise OptionError(f"{what} {p[bad][0]} is not strictly between 0 and 1")
    return p


def _check_sweep(sweep: Any) -> np.ndarray:
    """The NBE sweep (prior log-odds) as a 1-D float64 array of finite numbers."""
    if sweep is None:
        return default_sweep()
    try:
        plo = np.atleast_1d(np.asarray(sweep, dtype=np.float64))
    except (TypeError, ValueError):
        raise OptionError(f"the sweep holds prior log-odds (numbers), got {sweep!r}") from None
    if plo.ndim != 1 or not np.isfinite(plo).all():
        raise OptionError("the sweep must be a 1-D array of finite prior log-odds")
    return plo


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
    tar, non = np.asarray(tar), np.asarray(non)
    for side, arr in (("target", tar), ("non-target", non)):
        if arr.dtype.kind not in "iuf":
            raise ScoreError(f"{name}: {side} scores must be real numbers, got dtype {arr.dtype}")
    dtype = np.float32 if tar.dtype == non.dtype == np.float32 else np.float64
    tar, non = tar.astype(dtype).ravel(), non.astype(dtype).ravel()
    both = np.concatenate([tar, non])
    if not np.all(np.isfinite(both)):
        raise ScoreError(f"{name}: {int(np.sum(~np.isfinite(both)))} scores are not finite")
    if tar.size == 0 or non.size == 0:
        raise ScoreError(f"{name}: need targets and non-targets, got {tar.size} and {non.size}")
    keys, inverse = np.unique(order_keys(both), return_inverse=True)
    n_tar = np.bincount(inverse[: tar.size], minlength=len(keys))
    n_non = np.bincount(inverse[tar.size :], minlength=len(keys))
    softplus_tar, softplus_non = softplus_totals(tar, non)  # the same bits as over chunks
    return ScoreSummary(
        dtype=np.dtype(dtype),
        lo=keys.astype(np.uint64),
        bits=np.zeros(len(keys), dtype=np.int8),
        n_tar=n_tar,
        n_non=n_non,
        softplus_tar=softplus_tar,
        softplus_non=softplus_non,
        passes=0,
        name=name,
    )


# --------------------------------------------------------------------------------------------
# metrics of one summary
# --------------------------------------------------------------------------------------------


def _act(summary: ScoreSummary, plo: np.ndarray) -> dict[str, np.ndarray]:
    misses, false_alarms = summary.error_counts(-plo)
    pmiss, pfa = misses / summary.n_target, false_alarms / summary.n_nontarget
    raw = expit(plo) * pmiss + expit(-plo) * pfa
    return {"raw": raw, "pmiss": pmiss, "pfa": pfa, "misses": misses, "fas": false_alarms}


def _normalizer(plo: np.ndarray) -> np.ndarray:
    return np.minimum(expit(plo), expit(-plo))


def _cllr(summary: ScoreSummary) -> float:
    t, n = summary.n_target, summary.n_nontarget
    return (summary.softplus_tar / t + summary.softplus_non / n) / (2 * np.log(2))


def _dr30_plo(summary: ScoreSummary, sweep: np.ndarray) -> tuple[float, float]:
    """Where the minDCF error counts along the sweep reach 30 false alarms / 30 misses.

    Returns the first sweep point (from low prior log-odds) with at least 30 false alarms and
    the last with at least 30 misses; NaN where there is none.
    """
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

    What the engine would need for an exact AUC at any scale: refine *every* mixed coarse bin
    (``n_tar > 0 and n_non > 0 and bits > 0``) down to single values, i.e. one more candidate
    rule next to the hull, threshold and PAV-bound ones of :mod:`bosaris_dask.refinement`.
    That costs passes that grow with the number and width of the mixed bins (the whole overlap
    of the two score distributions), unlike the hull, which needs only the few bins near its
    vertices; without it the reported bounds say how far from exact the AUC can be.

    Returns
    -------
    (float, float)
        Lower and upper bound, each correctly rounded from an exact integer ratio.
    """
    n_tar = summary.n_tar.astype(np.int64)
    n_non = summary.n_non.astype(np.int64)
    below = np.concatenate([[0], np.cumsum(n_non)[:-1]])
    pairs = n_tar * n_non
    coarse = summary.bits > 0
    # twice the Mann-Whitney U, in integers: 2·(pairs ordered by the bins) + (tied pairs)
    base = 2 * int(np.dot(n_tar, below)) + int(pairs[~coarse].sum())
    unknown = 2 * int(pairs[coarse].sum())
    total = 2 * summary.n_target * summary.n_nontarget
    return float(Fraction(base, total)), float(Fraction(base + unknown, total))


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


def steppy_roc(summary: ScoreSummary, resolution: float = 0.005) -> tuple[np.ndarray, np.ndarray]:
    """ROC points ``(pmiss, pfa)`` at the summary's bin edges, thinned for plotting.

    Every point returned is an exact ROC point. Consecutive points closer than ``resolution``
    on probit (DET) axes are merged, so a billion-trial curve is a few thousand points.
    """
    cum_tar = np.concatenate([[0], np.cumsum(summary.n_tar)])
    cum_non = np.concatenate([[0], np.cumsum(summary.n_non)])
    pmiss = cum_tar / summary.n_target
    pfa = (cum_non[-1] - cum_non) / summary.n_nontarget
    eps = 1e-12
    cells = np.stack([ndtri(np.clip(pmiss, eps, 1 - eps)), ndtri(np.clip(pfa, eps, 1 - eps))])
    cells = np.floor(cells / resolution)
    keep = np.ones(len(pmiss), dtype=bool)
    keep[1:-1] = np.any(cells[:, 1:-1] != cells[:, :-2], axis=0)
    return pmiss[keep], pfa[keep]


def _vertex_thresholds(summary: ScoreSummary, positions: np.ndarray) -> np.ndarray:
    """Score thresholds that reject exactly the first ``positions`` bins (accept ``s >= t``).

    A bin covers the keys ``[lo, lo + 2**bits)``, ascending and disjoint, so the lowest value a
    bin can hold (:meth:`ScoreSummary.values`) separates it from every bin before it. Rejecting
    no trial is ``-inf``; rejecting every trial (or every bin that holds one) is ``+inf``.
    """
    positions = np.asarray(positions)
    values = np.append(summary.values().astype(np.float64), np.inf)
    out = values[positions]
    cum = np.concatenate([[0], np.cumsum(summary.n_tar + summary.n_non)])
    out = np.where(cum[positions] == 0, -np.inf, out)  # nothing below: accept everything
    return np.where(cum[positions] == cum[-1], np.inf, out)  # nothing above: reject everything


def plo_axis(priors: Sequence[float], sweep: np.ndarray) -> np.ndarray:
    """The ``plo`` dimension of an evaluation: the prior log-odds of the operating points and of
    the sweep, one sorted axis without repeats.

    Examples
    --------
    >>> plo_axis([0.5], np.array([-1.0, 0.0, 1.0])).tolist()
    [-1.0, 0.0, 1.0]
    """
    return np.unique(np.concatenate([logit(_check_priors(priors)), np.asarray(sweep, float)]))


def summary_metrics(
    summary: ScoreSummary, priors: Sequence[float], sweep: np.ndarray
) -> dict[str, Any]:
    """All metrics of one system from its summary, as a dict of scalars and arrays.

    The per-prior metrics (:data:`PER_PLO`) are arrays along ``out["plo"]``, the sorted union of
    ``logit(priors)`` and ``sweep`` (:func:`plo_axis`). ``min_threshold`` is a score threshold
    that attains minDCF: the one that rejects exactly the bins before the minimizing ROCCH vertex
    (:func:`roc.min_bayes_error_vertex`), i.e. the lowest score of the first accepted bin;
    ``-inf`` when accepting everything is optimal, ``+inf`` when rejecting everything is. The
    DR30 points are looked for along ``sweep`` alone.
    """
    plo = plo_axis(priors, sweep)
    sweep = np.asarray(sweep, dtype=np.float64)
    hull = summary.hull
    out: dict[str, Any] = {
        "plo": plo,
        "n_target": summary.n_target,
        "n_nontarget": summary.n_nontarget,
        "n_missing": summary.n_missing,
        "eer": roc.hull_eer(hull),
        "prbep": roc.hull_prbep(hull),
        "cllr": _cllr(summary),
        "min_cllr": roc.hull_min_cllr(hull),
        "cllr_cal": _cllr(summary) - roc.hull_min_cllr(hull),
        "auc_rocch": hull_auc(hull),
        "pmiss30": DR30_ERRORS / summary.n_target,
        "pfa30": DR30_ERRORS / summary.n_nontarget,
        "rocch_pmiss": hull.pmiss,
        "rocch_pfa": hull.pfa,
    }
    out["roc_pmiss"], out["roc_pfa"] = steppy_roc(summary)
    out["n_vertices"], out["n_roc_points"] = len(hull.pmiss), len(out["roc_pmiss"])
    out["auc_low"], out["auc_high"] = summary_auc(summary)
    out["auc"] = out["auc_low"] if out["auc_low"] == out["auc_high"] else np.nan
    out["min_threshold"] = _vertex_thresholds(
        summary, hull.positions[roc.min_bayes_error_vertex(hull, plo)]
    )
    out["dr30_fa_plo"], out["dr30_miss_plo"] = _dr30_plo(summary, sweep)
    act = _act(summary, plo)
    mn_raw, mn_pmiss, mn_pfa = roc.min_bayes_error(hull, plo)
    norm = _normalizer(plo)
    out["act_dcf"] = act["raw"] / norm
    out["min_dcf"] = mn_raw / norm
    out["act_dcf_raw"] = act["raw"]
    out["min_dcf_raw"] = mn_raw
    out["act_pmiss"] = act["pmiss"]
    out["act_pfa"] = act["pfa"]
    out["min_pmiss"] = mn_pmiss
    out["min_pfa"] = mn_pfa
    return out


_SCALARS = ("n_target", "n_nontarget", "n_missing", "eer", "prbep", "cllr", "min_cllr",
            "cllr_cal", "auc", "auc_low", "auc_high", "auc_rocch", "pmiss30", "pfa30",
            "dr30_fa_plo", "dr30_miss_plo", "n_vertices", "n_roc_points")  # fmt: skip
#: The variables along ``plo`` (``system``, ``plo``): one value per prior log-odds.
PER_PLO = ("act_dcf", "min_dcf", "act_dcf_raw", "min_dcf_raw",
           "act_pmiss", "act_pfa", "min_pmiss", "min_pfa", "min_threshold")  # fmt: skip
#: The ragged curves: variable -> (padded dimension, the variable counting each row's length).
CURVES = {"rocch_pmiss": ("vertex", "n_vertices"), "rocch_pfa": ("vertex", "n_vertices"),
          "roc_pmiss": ("roc_point", "n_roc_points"),
          "roc_pfa": ("roc_point", "n_roc_points")}  # fmt: skip

_P, _N = "probability", "count"
#: ``units`` and ``long_name`` of every variable and coordinate of an evaluation.
ATTRS: dict[str, tuple[str, str]] = {
    "n_target": (_N, "number of scored target trials"),
    "n_nontarget": (_N, "number of scored non-target trials"),
    "n_missing": (_N, "key trials without a score, dropped (allow_missing)"),
    "eer": (_P, "ROCCH-EER: where the ROC convex hull crosses Pmiss = Pfa"),
    "prbep": (_N, "PRBEP: the number of false alarms where misses equal false alarms"),
    "cllr": ("bits", "Cllr: the scores' cross-entropy as natural-log LLRs, 0 = perfect"),
    "min_cllr": ("bits", "minCllr: Cllr after the optimal monotone (PAV) calibration"),
    "cllr_cal": ("bits", "calibration loss cllr - min_cllr"),
    "auc": (_P, "exact ROC AUC (Mann-Whitney, ties half), NaN when not determined"),
    "auc_low": (_P, "lower bound on the exact AUC"),
    "auc_high": (_P, "upper bound on the exact AUC"),
    "auc_rocch": (_P, "area under the ROC convex hull"),
    "pmiss30": (_P, "DR30: Pmiss of 30 misses (rates below rest on < 30 errors)"),
    "pfa30": (_P, "DR30: Pfa of 30 false alarms (rates below rest on < 30 errors)"),
    "dr30_fa_plo": ("log-odds", "first sweep plo whose minDCF point has >= 30 false alarms"),
    "dr30_miss_plo": ("log-odds", "last sweep plo whose minDCF point has >= 30 misses"),
    "n_vertices": (_N, "length of this system's rocch_* rows (the rest is NaN padding)"),
    "n_roc_points": (_N, "length of this system's roc_* rows (the rest is NaN padding)"),
    "act_dcf": ("normalized DCF", "actDCF: Bayes error rate at threshold -plo / min(p, 1 - p)"),
    "min_dcf": ("normalized DCF", "minDCF: the lowest Bayes error rate / min(p, 1 - p)"),
    "act_dcf_raw": (_P, "Bayes error rate p Pmiss + (1 - p) Pfa at threshold -plo"),
    "min_dcf_raw": (_P, "the lowest Bayes error rate over all thresholds (on the ROCCH)"),
    "act_pmiss": (_P, "miss rate at the Bayes threshold -plo"),
    "act_pfa": (_P, "false-alarm rate at the Bayes threshold -plo"),
    "min_pmiss": (_P, "miss rate of the minDCF operating point"),
    "min_pfa": (_P, "false-alarm rate of the minDCF operating point"),
    "min_threshold": ("score", "a score threshold attaining minDCF (accept iff score >= it)"),
    "rocch_pmiss": (_P, "ROCCH vertex miss rates; NaN-padded beyond n_vertices"),
    "rocch_pfa": (_P, "ROCCH vertex false-alarm rates; NaN-padded beyond n_vertices"),
    "roc_pmiss": (_P, "exact steppy-ROC miss rates, thinned; NaN-padded beyond n_roc_points"),
    "roc_pfa": (_P, "exact steppy-ROC false-alarm rates, thinned; NaN-padded beyond n_roc_points"),
    "plo": ("log-odds", "prior log-odds logit(p): operating points and NBE sweep, sorted"),
    "prior": (_P, "effective prior p = sigmoid(plo)"),
    "p_target": (_P, "target prior of the operating point as stated (p off the points)"),
    "c_miss": ("cost", "cost of a miss as stated (1 off the operating points)"),
    "c_fa": ("cost", "cost of a false alarm as stated (1 off the operating points)"),
    "act_threshold": ("natural-log LLR", "Bayes threshold -plo that actDCF applies"),
    "operating_point": ("index", "order of the reported operating point; -1: sweep only"),
    "in_sweep": ("boolean", "plo is a point of the NBE sweep"),
    "fmr_target": (_P, "target FMR of a fixed-FMR operating point"),
    "fnmr_target": (_P, "target FNMR of a fixed-FNMR operating point"),
    "fixed_fmr_threshold": (
        "score",
        "smallest observed score t with FMR(t) <= fmr_target "
        "(accept iff score >= t); NaN if fmr_target < 1/n_nontarget",
    ),
    "fixed_fmr_fmr": (_P, "actual FMR (non-targets >= t) at fixed_fmr_threshold"),
    "fixed_fmr_fnmr": (_P, "FNMR (targets < t) at fixed_fmr_threshold; TAR = 1 - FNMR"),
    "fixed_fnmr_threshold": (
        "score",
        "largest observed score t with FNMR(t) <= fnmr_target "
        "(accept iff score >= t); NaN if fnmr_target < 1/n_target",
    ),
    "fixed_fnmr_fmr": (_P, "FMR (non-targets >= t) at fixed_fnmr_threshold"),
    "fixed_fnmr_fnmr": (_P, "actual FNMR (targets < t) at fixed_fnmr_threshold"),
    "ece_plo": ("log-odds", "prior log-odds logit(P(Hp)) of the ECE plot"),
    "ece": ("bits", "empirical cross-entropy of the scores as LLRs (= cllr at ece_plo 0)"),
    "ece_pav": ("bits", "empirical cross-entropy of the PAV-calibrated LLRs (= min_cllr at 0)"),
    "ece_neutral": ("bits", "empirical cross-entropy of LR = 1: the prior entropy"),
    "cprimary_act": ("normalized DCF", "Cprimary: mean normalized actDCF over cprimary_priors"),
    "cprimary_min": ("normalized DCF", "Cprimary: mean normalized minDCF over cprimary_priors"),
}


def with_attrs(ds: xr.Dataset, prefix: str = "") -> xr.Dataset:
    """``ds`` with :data:`ATTRS` set on its variables and coordinates (``prefix + name``)."""
    for name, (units, long_name) in ATTRS.items():
        if prefix + name in ds.variables:
            ds[prefix + name].attrs.update(units=units, long_name=long_name)
    return ds


def _plo_coords(points: Sequence[OperatingPoint], sweep: np.ndarray) -> dict[str, Any]:
    """The ``plo`` dimension and its coordinates (the stated operating points where reported)."""
    priors = _check_priors([op.effective_prior for op in points])
    plo = plo_axis(priors, sweep)
    at = np.searchsorted(plo, logit(priors))
    prior = expit(plo)
    prior[at] = priors  # exactly as stated, not through logit and back
    p_target, c_miss, c_fa = prior.copy(), np.ones(len(plo)), np.ones(len(plo))
    p_target[at] = [op.p_target for op in points]
    c_miss[at] = [op.c_miss for op in points]
    c_fa[at] = [op.c_fa for op in points]
    order = np.full(len(plo), -1, dtype=np.int64)
    order[at] = np.arange(len(points))
    return {
        "plo": plo,
        "prior": ("plo", prior),
        "p_target": ("plo", p_target),
        "c_miss": ("plo", c_miss),
        "c_fa": ("plo", c_fa),
        "act_threshold": ("plo", -plo),
        "operating_point": ("plo", order),
        "in_sweep": ("plo", np.isin(plo, np.asarray(sweep, dtype=np.float64))),
    }


def padded(rows: Sequence[np.ndarray], shape: tuple[int, ...] = ()) -> np.ndarray:
    """Ragged rows as one NaN-padded array of ``shape + (longest,)``, row ``i`` at ``flat i``."""
    out = np.full((len(rows), max([len(r) for r in rows], default=0)), np.nan)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out.reshape(*shape, -1) if shape else out


#: The fixed-rate variables: name -> (dimension, index into ``fixed_rate_metrics``'s triples).
FIXED_RATES = {
    f"fixed_{side}_{what}": (f"{side}_target", side, i)
    for side in ("fmr", "fnmr") for i, what in enumerate(("threshold", "fmr", "fnmr"))
}  # fmt: skip


def fixed_rate_metrics(
    summary: ScoreSummary,
    fmr: Sequence[float] | np.ndarray = (),
    fnmr: Sequence[float] | np.ndarray = (),
) -> dict[str, np.ndarray]:
    """The :data:`FIXED_RATES` variables of one summary (only the sides asked for).

    Examples
    --------
    >>> s = summary_from_arrays([1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 2.0, 2.0, 3.5])
    >>> out = fixed_rate_metrics(s, fmr=[0.2])
    >>> out["fixed_fmr_threshold"].tolist(), out["fixed_fmr_fnmr"].tolist()
    ([3.0], [0.5])
    """
    out: dict[str, np.ndarray] = {}
    for side, rates, fn in (("fmr", fmr, fixed_rates.fixed_fmr),
                            ("fnmr", fnmr, fixed_rates.fixed_fnmr)):  # fmt: skip
        if len(rates):
            for name, value in zip(("threshold", "fmr", "fnmr"), fn(summary, rates), strict=True):
                out[f"fixed_{side}_{name}"] = value
    return out


def _fixed_rate_data(
    summaries: Sequence[ScoreSummary], fmr: np.ndarray, fnmr: np.ndarray
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Variables and coordinates of the fixed-FMR/FNMR operating points (none if not asked)."""
    rows = [fixed_rate_metrics(s, fmr, fnmr) for s in summaries]
    data = {
        name: (("system", dim), np.array([r[name] for r in rows]))
        for name, (dim, side, _) in FIXED_RATES.items()
        if len(fmr if side == "fmr" else fnmr)
    }
    coords = {f"{side}_target": rates for side, rates in (("fmr", fmr), ("fnmr", fnmr))
              if len(rates)}  # fmt: skip
    return data, coords


def _dataset(
    summaries: Sequence[ScoreSummary],
    points: Sequence[OperatingPoint],
    sweep: np.ndarray,
    fmr: np.ndarray | Sequence[float] = (),
    fnmr: np.ndarray | Sequence[float] = (),
) -> xr.Dataset:
    from bosaris_dask.ece import ece_from_summary

    priors = [op.effective_prior for op in points]
    results = [summary_metrics(s, priors, sweep) for s in summaries]
    data: dict[str, Any] = {}
    for name in _SCALARS:
        data[name] = ("system", np.array([r[name] for r in results]))
    for name in PER_PLO:
        data[name] = (("system", "plo"), np.array([r[name] for r in results]))
    for name, (dim, _) in CURVES.items():
        data[name] = (("system", dim), padded([r[name] for r in results]))
    fixed, fixed_coords = _fixed_rate_data(summaries, np.asarray(fmr, float),
                                           np.asarray(fnmr, float))  # fmt: skip
    data.update(fixed)
    ece_plo = summaries[0].cross_entropy_plo
    if ece_plo is not None:
        ece = [ece_from_summary(s) for s in summaries]
        for name in ("ece", "ece_pav"):
            data[name] = (("system", "ece_plo"), np.array([e[name] for e in ece]))
        data["ece_neutral"] = ("ece_plo", ece[0]["ece_neutral"])
        fixed_coords["ece_plo"] = ece_plo
    ds = xr.Dataset(
        data,
        coords={
            "system": [s.name for s in summaries],
            **_plo_coords(points, sweep),
            **fixed_coords,
        },  # fmt: skip
        attrs={"passes": max(s.passes for s in summaries), "dr30_errors": DR30_ERRORS},
    )
    return with_attrs(ds)


def operating_points(results: xr.Dataset) -> xr.Dataset:
    """The reported operating points of an evaluation, in the order stated, indexed by ``prior``.

    ``results`` keeps them on its ``plo`` dimension among the sweep's points (the coordinate
    ``operating_point`` gives their order); this view selects them and makes ``prior`` (the
    effective prior) the dimension, so ``operating_points(ds).min_dcf.sel(prior=0.01)`` works.

    Examples
    --------
    >>> ds = evaluate_arrays([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5], priors=[0.5, 0.1])
    >>> ops = operating_points(ds)
    >>> ops.prior.values.tolist(), ds.sizes["plo"]
    ([0.5, 0.1], 202)
    >>> ops.act_dcf.sel(prior=0.1).item() == act_dcf([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5], 0.1)
    True
    """
    order = results.operating_point.values
    at = np.flatnonzero(order >= 0)
    return results.isel(plo=at[np.argsort(order[at])]).swap_dims(plo="prior")


def sweep_points(results: xr.Dataset) -> xr.Dataset:
    """The NBE sweep of an evaluation: its ``plo`` points that were asked for as the sweep.

    Examples
    --------
    >>> ds = evaluate_arrays([1.0, 2.0], [0.0], priors=[0.1], sweep=[-1.0, 0.0, 1.0])
    >>> ds.plo.values.round(3).tolist(), sweep_points(ds).plo.values.tolist()
    ([-2.197, -1.0, 0.0, 1.0], [-1.0, 0.0, 1.0])
    """
    return results.isel(plo=results.in_sweep.values)


def curve(
    results: xr.Dataset, system: Any = None, kind: str = "rocch"
) -> tuple[np.ndarray, np.ndarray]:
    """One system's ROC curve ``(pmiss, pfa)`` at its exact length (no NaN padding).

    ``kind`` is ``"rocch"`` (the convex hull's vertices) or ``"roc"`` (the steppy ROC's exact
    points, thinned for plotting). ``system`` None takes the only system of ``results`` (or
    ``results`` as one system's results, without a ``system`` dimension); with several systems
    it must name one.

    Examples
    --------
    >>> ds = evaluate_arrays([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5], name="a")
    >>> pmiss, pfa = curve(ds, "a", "rocch")
    >>> pmiss.tolist(), pfa.tolist()
    ([0.0, 0.0, 0.3333333333333333, 1.0], [1.0, 0.3333333333333333, 0.0, 0.0])
    """
    if kind not in ("rocch", "roc"):
        raise OptionError(f'curve kind must be "rocch" or "roc", got {kind!r}')
    if system is None and "system" in results.dims:
        if results.sizes["system"] != 1:
            names = ", ".join(map(str, results.system.values))
            raise OptionError(f"curve: name one of the systems ({names})")
        system = results.system.values[0]
    r = results if system is None else results.sel(system=system)
    n = int(r[CURVES[f"{kind}_pmiss"][1]])
    return r[f"{kind}_pmiss"].values[:n], r[f"{kind}_pfa"].values[:n]


# --------------------------------------------------------------------------------------------
# public entry points
# --------------------------------------------------------------------------------------------


def evaluate(
    scores: xr.Dataset | Sequence[xr.Dataset],
    key: xr.Dataset,
    *,
    priors: Sequence[float] = DEFAULT_PRIORS,
    operating_points: Sequence[OperatingPoint | str] = (),
    sweep: np.ndarray | None = None,
    names: Sequence[str] | None = None,
    allow_missing: bool = False,
    progress: bool = False,
    split_every: int = DEFAULT_SPLIT_EVERY,
    conditions: Sequence[Any] = (),
    by: Sequence[Any] = (),
    cprimary_priors: Sequence[float] = (),
    equalize: bool = False,
    fmr: Sequence[float] = (),
    fnmr: Sequence[float] = (),
    ece_plo: Sequence[float] | np.ndarray | None = None,
    ci: float | None = None,
    bootstrap: int | None = None,
    resample: Sequence[str] = (),
    seed: int | None = None,
    compare: bool = False,
) -> xr.Dataset:
    """Evaluate one or more systems against a key, exactly, at any scale.

    Parameters
    ----------
    scores
        A Scores object or a list of them (one per system).
    key
        The Key (stored, in memory, or derived from labels).
    priors
        Effective priors of the reported operating points (unit costs).
    operating_points
        More operating points in users' terms, after ``priors``: :class:`OperatingPoint` objects
        or ``"Ptar:Cmiss:Cfa"`` strings; each is reported at its effective prior (one point per
        effective prior: the first stated wins).
    sweep
        Prior log-odds of the normalized Bayes error-rate sweep (default: 201 points, -10..10).
    names
        System names (default ``system-1``, ...).
    allow_missing
        Drop key trials without a score (their count is reported as ``n_missing``) instead of
        raising :class:`~bosaris_dask.errors.MissingTrialsError`. Scores of trials that are
        not in the key are always ignored, as in BOSARIS (count them with
        :func:`bosaris_dask.trials.coverage`).
    progress
        Show a progress bar for each pass over the data.
    split_every
        How many chunk results each merge task combines.
    conditions, by
        Condition tables (or their paths) and ``model.COL``/``segment.COL``/``same.COL`` specs:
        also evaluate every condition (their Cartesian product) from the same passes, into
        ``condition_*`` variables with a ``condition`` dimension
        (:func:`bosaris_dask.conditions.evaluation.evaluate_conditions`).
    cprimary_priors
        Also report Cprimary (``cprimary_act``, ``cprimary_min``): the mean over these
        effective priors of the normalized actDCF and minDCF.
    equalize
        Also the NIST partition-equalized EER, actDCF and minDCF over the ``by`` conditions
        (``equalized_*`` variables; :mod:`bosaris_dask.conditions.equalized`).
    fmr, fnmr
        Biometric operating points (ISO/IEC 19795-1), each target in ``(0, 1]``: for an FMR
        target ``f`` the threshold is the smallest observed score ``t`` with
        ``FMR(t) = #{non-targets >= t} / N_non <= f``; for an FNMR target the largest observed
        score with ``FNMR(t) = #{targets < t} / N_tar <= f``. Ties make the rates jump: the
        achieved rate can lie well below the target (it is reported). A target below one error
        (``f < 1/N_non`` for FMR, ``f < 1/N_tar`` for FNMR) cannot be measured: NaN.
        Exact order statistics (:mod:`bosaris_dask.fixed_rates`), refined in the same passes
        as the hull (``attrs["passes"]`` does not grow, except when nothing else needed one).
    ece_plo
        Prior log-odds of the empirical cross-entropy (ECE) plot (:mod:`bosaris_dask.ece`):
        ``ece`` (the scores as LLRs), ``ece_pav`` (PAV-calibrated) and ``ece_neutral``
        (``LR = 1``) in bits along ``ece_plo``. Pass 1 sums the raw terms (one softplus per
        trial and grid point; no extra pass). Not with conditions.
    ci, bootstrap, resample, seed, compare
        Two-way bootstrap percentile intervals (level ``ci``, default 0.95) from ``bootstrap``
        resamples of the ``resample`` groups (``model.COL`` and/or ``segment.COL`` of the
        condition tables): ``eer_ci``, ``cllr_ci``, ``min_cllr_ci``, ``act_dcf_ci``,
        ``min_dcf_ci`` along ``bound`` (low, high); with ``compare``, paired differences of
        every pair of systems. The point estimates stay exact
        (:mod:`bosaris_dask.bootstrap.evaluation` says what the intervals are computed from).

    Returns
    -------
    xarray.Dataset
        Indexed by ``system`` and ``plo``: the prior log-odds of the reported operating points
        and of the sweep together, sorted, each once. Every per-prior variable (``act_dcf``,
        ``min_dcf``, their ``*_raw`` Bayes error rates, ``act_pmiss``/``act_pfa``,
        ``min_pmiss``/``min_pfa``, ``min_threshold``) is one array over (``system``, ``plo``),
        defined at every point. Along ``plo`` lie the coordinates ``prior`` (the effective prior;
        exactly as stated at an operating point), ``p_target``, ``c_miss``, ``c_fa`` (as stated;
        ``prior``, 1, 1 off the operating points), ``act_threshold`` (the Bayes threshold
        ``-plo = ln((1 - Ptar) Cfa / (Ptar Cmiss))`` that actDCF applies), ``operating_point``
        (the reported points' order, -1 elsewhere) and ``in_sweep``:
        :func:`operating_points` gives the reported points in their order indexed by ``prior``,
        :func:`sweep_points` the sweep. Normalized DCFs are divided by ``min(p, 1 - p)``;
        ``*_raw`` ones are Bayes error rates; ``min_threshold`` is a score threshold attaining
        minDCF (accept iff ``score >= min_threshold``). The ragged ROC curves ``rocch_pmiss``/
        ``rocch_pfa`` (the hull's vertices, dimension ``vertex``) and ``roc_pmiss``/``roc_pfa``
        (exact steppy-ROC points thinned by :func:`steppy_roc`, dimension ``roc_point``) are
        NaN-padded past each system's ``n_vertices``/``n_roc_points``; :func:`curve` returns one
        at its exact length. ``attrs["passes"]`` says how many passes over the data the
        evaluation took. ``cllr_cal = cllr - min_cllr`` is the calibration loss (the forensic
        community's Cllr_cal). ``auc`` is the exact area under the ROC (Mann-Whitney, ties
        counted half), NaN unless the summary determines it, with ``auc_low``/``auc_high`` its
        exact bounds (:func:`summary_auc`); ``auc_rocch`` is the area under the ROC convex hull.
        With ``fmr``: ``fixed_fmr_threshold``, ``fixed_fmr_fmr`` (the actual FMR) and
        ``fixed_fmr_fnmr`` over (``system``, ``fmr_target``); with ``fnmr``: ``fixed_fnmr_*``
        over (``system``, ``fnmr_target``); NaN where the target cannot be measured.
        Every variable and coordinate has ``attrs`` ``units`` and ``long_name`` (:data:`ATTRS`).

    Raises
    ------
    OptionError
        A prior not strictly between 0 and 1, a non-finite sweep point, names that do not
        match the systems.
    TrialError
        ``key`` is not a Key or a system is not a Scores object.
    ScoreError
        Scores that are not real numbers, a non-finite score on a key trial, no target or no
        non-target trial.
    MissingTrialsError
        Key trials without a score (unless ``allow_missing``), naming a few.
    """
    if bootstrap or ci is not None or resample or compare:
        from bosaris_dask.bootstrap import evaluate_with_intervals

        return evaluate_with_intervals(
            scores, key, priors=priors, operating_points=operating_points, sweep=sweep,
            names=names, allow_missing=allow_missing, progress=progress, split_every=split_every,
            conditions=conditions, by=by, cprimary_priors=cprimary_priors, equalize=equalize,
            fmr=fmr, fnmr=fnmr, ece_plo=ece_plo, ci=ci, bootstrap=bootstrap, resample=resample,
            seed=seed, compare=compare,
        )  # fmt: skip
    if conditions or by or len(cprimary_priors) or equalize:
        from bosaris_dask.conditions.evaluation import evaluate_conditions

        if ece_plo is not None:
            from bosaris_dask.ece import NOT_WITH_CONDITIONS

            raise OptionError(NOT_WITH_CONDITIONS)
        return evaluate_conditions(
            scores, key, conditions=conditions, by=by, cprimary_priors=cprimary_priors,
            priors=priors, operating_points=operating_points, sweep=sweep, names=names,
            allow_missing=allow_missing, progress=progress, split_every=split_every,
            equalize=equalize, fmr=fmr, fnmr=fnmr,
        )  # fmt: skip
    return pooled_evaluation(
        scores, key, priors=priors, operating_points=operating_points, sweep=sweep,
        names=names, allow_missing=allow_missing, progress=progress, split_every=split_every,
        fmr=fmr, fnmr=fnmr, ece_plo=ece_plo,
    )[0]  # fmt: skip


def pooled_evaluation(
    scores: xr.Dataset | Sequence[xr.Dataset],
    key: xr.Dataset,
    *,
    priors: Sequence[float] = DEFAULT_PRIORS,
    operating_points: Sequence[OperatingPoint | str] = (),
    sweep: np.ndarray | None = None,
    names: Sequence[str] | None = None,
    allow_missing: bool = False,
    progress: bool = False,
    split_every: int = DEFAULT_SPLIT_EVERY,
    fmr: Sequence[float] = (),
    fnmr: Sequence[float] = (),
    ece_plo: Sequence[float] | np.ndarray | None = None,
) -> tuple[xr.Dataset, list[ScoreSummary]]:
    """:func:`evaluate` of the pooled trials, and the summaries it was computed from."""
    systems = [scores] if isinstance(scores, xr.Dataset) else list(scores)
    sweep = _check_sweep(sweep)
    points = _operating_points(priors, operating_points)
    fmr, fnmr = _check_fixed(fmr, fnmr)
    plo = logit(np.array([op.effective_prior for op in points]))
    if ece_plo is not None:
        from bosaris_dask.ece import check_plo

        ece_plo = check_plo(ece_plo)
    summaries = summarize(
        systems,
        key,
        thresholds=-np.concatenate([plo, sweep]),
        fmr=fmr,
        fnmr=fnmr,
        cross_entropy_plo=() if ece_plo is None else ece_plo,
        allow_missing=allow_missing,
        progress=progress,
        split_every=split_every,
        names=names,
    )
    return _dataset(summaries, points, sweep, fmr, fnmr), summaries


def _check_fixed(fmr: Any, fnmr: Any) -> tuple[np.ndarray, np.ndarray]:
    """The fixed-rate targets, checked (empty arrays where none)."""
    return (
        fixed_rates.check_rates(fmr, "FMR") if len(fmr) else np.empty(0),
        fixed_rates.check_rates(fnmr, "FNMR") if len(fnmr) else np.empty(0),
    )


def _operating_points(
    priors: Sequence[float], operating_points: Sequence[OperatingPoint | str]
) -> list[OperatingPoint]:
    stated = [op if isinstance(op, OperatingPoint) else OperatingPoint.parse(op)
              for op in operating_points]  # fmt: skip
    points = merge_operating_points(_check_priors(priors).tolist() if len(priors) else [], stated)
    if not points:
        raise OptionError("no operating point: give at least one prior or operating point")
    return points


def evaluate_arrays(
    tar: Any,
    non: Any,
    *,
    priors: Sequence[float] = DEFAULT_PRIORS,
    operating_points: Sequence[OperatingPoint | str] = (),
    sweep: np.ndarray | None = None,
    name: str = "system",
    fmr: Sequence[float] = (),
    fnmr: Sequence[float] = (),
    ece_plo: Sequence[float] | np.ndarray | None = None,
) -> xr.Dataset:
    """:func:`evaluate` for in-memory target and non-target score arrays."""
    sweep = _check_sweep(sweep)
    points = _operating_points(priors, operating_points)
    fmr, fnmr = _check_fixed(fmr, fnmr)
    summary = summary_from_arrays(tar, non, name)
    if ece_plo is not None:
        from bosaris_dask.ece import check_plo
        from bosaris_dask.kernels import cross_entropy_totals

        a = check_plo(ece_plo)
        sums = cross_entropy_totals(np.asarray(tar), np.asarray(non), a)
        summary = replace(summary, cross_entropy_plo=a, cross_entropy=sums)
    return _dataset([summary], points, sweep, fmr, fnmr)


def act_dcf(tar: Any, non: Any, prior: float, *, normalize: bool = True) -> float:
    """actDCF at an effective prior, treating scores as LLRs (threshold ``-logit(prior)``)."""
    plo = logit(_check_priors([prior]))
    act = _act(summary_from_arrays(tar, non), plo)["raw"]
    return float((act / _normalizer(plo) if normalize else act)[0])


def min_dcf(tar: Any, non: Any, prior: float, *, normalize: bool = True) -> float:
    """minDCF at an effective prior (the best threshold, found on the ROC convex hull)."""
    plo = logit(_check_priors([prior]))
    raw = roc.min_bayes_error(summary_from_arrays(tar, non).hull, plo)[0]
    return float((raw / _normalizer(plo) if normalize else raw)[0])


def eer(tar: Any, non: Any) -> float:
    """The ROCCH-EER of target and non-target scores."""
    return roc.hull_eer(summary_from_arrays(tar, non).hull)


def uer(tar: Any, non: Any, ratio: float) -> float:
    """The unequal-error-rate ``UER(r)`` (the false-alarm rate where the ROCCH crosses
    ``Pfa = r * Pmiss``; ``uer(tar, non, 1)`` is the EER).

    Examples
    --------
    >>> tar, non = [1.0, 2.0, 3.0], [-1.0, 0.0, 1.5, -2.0]
    >>> uer(tar, non, 1.0) == eer(tar, non)
    True
    """
    return roc.hull_uer(summary_from_arrays(tar, non).hull, ratio)


def prbep(tar: Any, non: Any) -> float:
    """The PRBEP (a count) of target and non-target scores."""
    return roc.hull_prbep(summary_from_arrays(tar, non).hull)


def cllr(tar: Any, non: Any) -> float:
    """Cllr in bits, treating the scores as natural-log LLRs."""
    return _cllr(summary_from_arrays(tar, non))


def min_cllr(tar: Any, non: Any) -> float:
    """minCllr in bits: Cllr after the optimal monotone (PAV) calibration."""
    return roc.hull_min_cllr(summary_from_arrays(tar, non).hull)


def min_threshold(tar: Any, non: Any, prior: float) -> float:
    """A score threshold attaining minDCF at an effective prior (accept iff ``s >= t``).

    Examples
    --------
    >>> tar, non = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.0, 1.5, -2.0])
    >>> min_threshold(tar, non, 0.5)  # accepts the 3 targets and the non-target 1.5
    1.0
    """
    summary = summary_from_arrays(tar, non)
    plo = logit(_check_priors([prior]))
    vertex = roc.min_bayes_error_vertex(summary.hull, plo)
    return float(_vertex_thresholds(summary, summary.hull.positions[vertex])[0])


def auc(tar: Any, non: Any) -> float:
    """The exact AUC: P(s_tar > s_non) + ½·P(s_tar = s_non), as scikit-learn's roc_auc_score.

    Examples
    --------
    >>> auc([1.0, 2.0, 3.0], [0.0, 2.0])  # of 6 pairs: 4 ordered, 1 tie, 1 reversed
    0.75
    """
    low, _ = summary_auc(summary_from_arrays(tar, non))  # one bin per value: exact
    return low


def auc_rocch(tar: Any, non: Any) -> float:
    """The area under the ROC convex hull (at least :func:`auc`)."""
    return hull_auc(summary_from_arrays(tar, non).hull)


def rocch(tar: Any, non: Any) -> tuple[np.ndarray, np.ndarray]:
    """The ROCCH vertices ``(pmiss, pfa)``, from (0, 1) to (1, 0)."""
    hull = summary_from_arrays(tar, non).hull
    return hull.pmiss, hull.pfa


def fnmr_at_fmr(tar: Any, non: Any, fmr: float) -> tuple[float, float, float]:
    """``(threshold, actual FMR, FNMR)`` at a target FMR (:mod:`bosaris_dask.fixed_rates`).

    The threshold is the smallest observed score ``t`` with ``#{non >= t} / N_non <= fmr``;
    all three are NaN when ``fmr < 1 / N_non``.

    Examples
    --------
    >>> fnmr_at_fmr([1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 2.0, 2.0, 3.5], 0.5)  # ties: FMR 0.2
    (3.0, 0.2, 0.5)
    """
    out = fixed_rates.fixed_fmr(summary_from_arrays(tar, non), [fmr])
    return float(out[0][0]), float(out[1][0]), float(out[2][0])


def fmr_at_fnmr(tar: Any, non: Any, fnmr: float) -> tuple[float, float, float]:
    """``(threshold, FMR, actual FNMR)`` at a target FNMR (:mod:`bosaris_dask.fixed_rates`).

    The threshold is the largest observed score ``t`` with ``#{tar < t} / N_tar <= fnmr``;
    all three are NaN when ``fnmr < 1 / N_tar``.

    Examples
    --------
    >>> fmr_at_fnmr([1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 2.0, 2.0, 3.5], 0.25)
    (2.0, 0.6, 0.25)
    """
    out = fixed_rates.fixed_fnmr(summary_from_arrays(tar, non), [fnmr])
    return float(out[0][0]), float(out[1][0]), float(out[2][0])
