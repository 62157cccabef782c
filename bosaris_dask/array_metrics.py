"""Metrics of two in-memory score arrays (targets, non-targets) by their short names: actDCF,
minDCF, EER, UER, PRBEP, Cllr, minCllr, the minDCF threshold, AUC, the ROCCH and the fixed-rate
points. Each builds a one-bin-per-value summary of the arrays
(:func:`~bosaris_dask.measures.summary_from_arrays`), so each is exact, and reads its number
from it as :func:`bosaris_dask.metrics.evaluate` reads a store's; :mod:`bosaris_dask.metrics`
re-exports them all.

Examples
--------
>>> import numpy as np
>>> tar, non = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.0, 1.5, -2.0])
>>> round(eer(tar, non), 4), round(min_dcf(tar, non, 0.5), 4), round(act_dcf(tar, non, 0.5), 4)
(0.1429, 0.25, 0.5)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bosaris_dask import fixed_rates, roc
from bosaris_dask.errors import OptionError
from bosaris_dask.measures import (
    act_rates,
    check_priors,
    dcf_normalizer,
    hull_auc,
    stated_plo,
    summary_auc,
    summary_cllr,
    summary_from_arrays,
    vertex_thresholds,
)

__all__ = [
    "act_dcf",
    "min_dcf",
    "eer",
    "uer",
    "prbep",
    "cllr",
    "min_cllr",
    "min_threshold",
    "auc",
    "auc_rocch",
    "rocch",
    "fnmr_at_fmr",
    "fmr_at_fnmr",
]


def act_dcf(tar: Any, non: Any, prior: float, *, normalize: bool = True) -> float:
    """actDCF at an effective prior, treating scores as LLRs (threshold ``-logit(prior)``).

    Examples
    --------
    >>> act_dcf([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5, -2.0], 0.5)  # the non-target 1.5 accepted
    0.5
    """
    plo = _one_prior(prior, "act_dcf")
    act = act_rates(summary_from_arrays(tar, non), plo)["raw"]
    return float((act / dcf_normalizer(plo) if normalize else act)[0])


def min_dcf(tar: Any, non: Any, prior: float, *, normalize: bool = True) -> float:
    """minDCF at an effective prior (the best threshold, found on the ROC convex hull).

    Examples
    --------
    >>> min_dcf([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5, -2.0], 0.5)
    0.25
    """
    plo = _one_prior(prior, "min_dcf")
    raw = roc.min_bayes_error(summary_from_arrays(tar, non).hull, plo)[0]
    return float((raw / dcf_normalizer(plo) if normalize else raw)[0])


def _one_prior(prior: Any, function: str) -> np.ndarray:
    """The prior log-odds of one effective prior; an OptionError for several."""
    if np.ndim(prior) != 0:
        raise OptionError(f"{function} takes one effective prior, got {prior!r}: "
                          "evaluate_arrays(tar, non, priors=[...]) gives several")  # fmt: skip
    return stated_plo(check_priors([prior]))


def eer(tar: Any, non: Any) -> float:
    """The ROCCH-EER of target and non-target scores.

    Examples
    --------
    >>> round(eer([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5, -2.0]), 4)
    0.1429
    """
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
    """Cllr in bits, treating the scores as natural-log LLRs.

    Examples
    --------
    >>> round(cllr([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5, -2.0]), 4)
    0.6287
    """
    return float(summary_cllr(summary_from_arrays(tar, non)))


def min_cllr(tar: Any, non: Any) -> float:
    """minCllr in bits: Cllr after the optimal monotone (PAV) calibration (never above
    :func:`cllr`: the scores' own map is one of the monotone ones).

    Examples
    --------
    >>> round(min_cllr([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5, -2.0]), 4)
    0.2874
    """
    summary = summary_from_arrays(tar, non)
    return float(min(roc.hull_min_cllr(summary.hull), summary_cllr(summary)))


def min_threshold(tar: Any, non: Any, prior: float) -> float:
    """A score threshold attaining minDCF at an effective prior (accept iff ``s >= t``).

    Examples
    --------
    >>> tar, non = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.0, 1.5, -2.0])
    >>> min_threshold(tar, non, 0.5)  # accepts the 3 targets and the non-target 1.5
    1.0
    """
    summary = summary_from_arrays(tar, non)
    plo = _one_prior(prior, "min_threshold")
    vertex = roc.min_bayes_error_vertex(summary.hull, plo)
    return float(vertex_thresholds(summary, summary.hull.positions[vertex])[0])


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
