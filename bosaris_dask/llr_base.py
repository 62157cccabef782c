"""Log-likelihood ratios in another base: the forensic community's log10 LRs.

Everything inside bosaris_dask uses natural-log LLRs (Cllr is then reported in bits, whatever
the base of the input). A log10 LR ``x`` is the natural LLR ``x·ln 10``: :func:`to_natural`
multiplies the scores by ``ln(base)`` (lazily, in float64: a float32 product would merge
neighbouring scores into ties) on input and :func:`from_natural` divides written LLRs by it on
output. Rank-based metrics (minDCF, EER, minCllr) do not change; Cllr, actDCF and the Bayes
thresholds read the scores as LLRs and do.
Thresholds reported in a base-10 evaluation are converted back exactly: the smallest value
whose scaled score reaches the natural threshold (:func:`threshold_in_base`).

Examples
--------
>>> from bosaris_dask.trials import make_scores
>>> s = make_scores(["m"], ["a", "b"], [[1.0, -2.0]])
>>> to_natural(s, 10).score.values.round(6).tolist()
[[2.302585, -4.60517]]
>>> from_natural(to_natural(s, 10), 10).score.values.round(12).tolist()
[[1.0, -2.0]]
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from bosaris_dask.errors import OptionError, ScoreError

__all__ = ["LLR_BASES", "log_of_base", "to_natural", "from_natural", "threshold_in_base",
           "thresholds_from_natural"]  # fmt: skip

#: Bases the CLI accepts for ``--llr-base``.
LLR_BASES = ("e", "10", "2")


def log_of_base(base: float | str) -> float:
    """``ln(base)``: the factor from LLRs in ``base`` to natural-log LLRs (``"e"`` -> 1)."""
    if base == "e":
        return 1.0
    try:
        value = float(base)
    except (TypeError, ValueError):
        raise OptionError(f"LLR base must be 'e' or a number > 1, got {base!r}") from None
    if not 1 < value < math.inf:
        raise OptionError(f"LLR base must be 'e' or a number > 1, got {base!r}")
    return math.log(value)


def _scaled(scores: xr.Dataset, factor: float) -> xr.Dataset:
    if factor == 1.0:
        return scores
    out = scores.copy()
    # in float64 whatever the stored dtype: a float32 product would round each scaled score to
    # float32 again, and a factor of 2 to 4 (ln 10) or below 1 (ln 2) merges neighbouring
    # float32 scores into ties, changing even the rank-based metrics
    mask = scores["score_mask"] if "score_mask" in scores else xr.ones_like(scores.score, bool)
    out["score"] = xr.apply_ufunc(
        _times, scores.score, mask, kwargs={"factor": factor}, dask="parallelized",
        output_dtypes=[np.float64],
    )  # fmt: skip
    out["score"].attrs = dict(scores.score.attrs)
    return out


def _times(score: np.ndarray, mask: np.ndarray, *, factor: float) -> np.ndarray:
    """``score * factor`` in float64; a :class:`ScoreError` where a finite score of a trial
    (``mask``) goes beyond the float64 range (it would be refused as non-finite, though the
    file holds a number).

    Examples
    --------
    >>> _times(np.array([1e308, -2.0]), np.array([False, True]), factor=math.log(10))
    array([        inf, -4.60517019])
    >>> _times(np.array([1e308]), np.array([True]), factor=math.log(10))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.ScoreError: the score 1e+308 is beyond the float64 range ... +-7.807e+307
    """
    with np.errstate(over="ignore"):
        out = score.astype(np.float64) * factor
    over = mask & np.isinf(out) & np.isfinite(score)
    if over.any():
        raise ScoreError(
            f"the score {float(score[over][0])!r} is beyond the float64 range once multiplied "
            f"by {factor:.6g} (ln of the LLRs' base) to a natural-log LLR: scores in that base "
            f"must lie within +-{np.finfo(np.float64).max / factor:.4g}"
        )
    return out


def to_natural(scores: xr.Dataset, base: float | str) -> xr.Dataset:
    """Scores holding LLRs in ``base``, as natural-log LLRs (multiplied by ``ln(base)``)."""
    return _scaled(scores, log_of_base(base))


def from_natural(scores: xr.Dataset, base: float | str) -> xr.Dataset:
    """Natural-log LLRs as LLRs in ``base`` (divided by ``ln(base)``)."""
    return _scaled(scores, 1.0 / log_of_base(base))


def threshold_in_base(threshold: np.ndarray | float, factor: float) -> np.ndarray:
    """The thresholds, on natural LLRs, of LLRs read in a base as ``s * factor``
    (:func:`to_natural`, in float64), as thresholds on those LLRs themselves: the smallest
    float64 ``v`` with ``v * factor >= t`` (a product rounded as numpy rounds it), so that a
    score ``s`` is at or above ``v`` exactly when its natural LLR is at or above ``t``. Plain
    division can miss by an ulp (``-1.96`` scaled by ``ln 10`` and divided back is
    ``-1.9599999999999997``). Non-finite thresholds are divided.

    Examples
    --------
    >>> f = math.log(10)
    >>> t = np.float64(-1.96) * f
    >>> float(t / f), float(threshold_in_base(t, f))
    (-1.9599999999999997, -1.96)
    """
    t = np.asarray(threshold, dtype=np.float64)
    v = t / factor
    finite = np.isfinite(v)
    with np.errstate(over="ignore"):  # products beyond the float range compare as +-inf
        for _ in range(4):  # an ulp or two off: up while too low, then down while it holds
            low = finite & (v * factor < t)
            v = np.where(low, np.nextafter(v, np.inf), v)
        for _ in range(4):
            below = np.nextafter(v, -np.inf)
            v = np.where(finite & (below * factor >= t), below, v)
    return v


def thresholds_from_natural(results: xr.Dataset, base: float | str) -> xr.Dataset:
    """An evaluation whose thresholds (``act_threshold``, ``min_threshold``, the fixed-FMR/FNMR
    ``fixed_*_threshold``, the ROC points' ``roc_threshold``) are given in ``base``, each
    exactly where the scores were read in that base (:func:`threshold_in_base`)."""
    factor = log_of_base(base)
    if factor == 1.0:
        return results
    out = results.copy()
    units = f"LLR in base {base}"
    if "act_threshold" in out.coords:
        act = threshold_in_base(out.act_threshold.values, factor)
        out = out.assign_coords(act_threshold=(out.act_threshold.dims, act))
        out.act_threshold.attrs.update(results.act_threshold.attrs, units=units)
    names = ("min_threshold", "fixed_fmr_threshold", "fixed_fnmr_threshold", "roc_threshold")
    for name in (*names, *(f"condition_{n}" for n in names)):
        if name in out:
            out[name] = out[name].copy(data=threshold_in_base(out[name].values, factor))
            out[name].attrs.update(results[name].attrs, units=units)
    out.attrs["llr_base"] = str(base)
    return out
