"""Empirical cross-entropy (ECE) of LLRs against the prior log-odds: the forensic ECE plot.

At prior log-odds ``a = logit(P(Hp))`` (``p = P(Hp)``), LLRs ``l`` (natural log) give posterior
log-odds ``l + a``, and their empirical cross-entropy in bits is (Ramos and Gonzalez-Rodriguez;
lir's ``ece`` plot; ``shared/reference/FIELD_METRICS.md`` section 5)::

    ECE(a) = p * mean_targets[ -log2 P(Hp | l) ] + (1 - p) * mean_non-targets[ -log2 P(Hd | l) ]
           = p / T * sum_tar log2(1 + exp(-(l + a))) + (1 - p) / N * sum_non log2(1 + exp(l + a))

drawn for three sets of LLRs:

* **raw**: the scores as given (read as natural-log LLRs; ``--llr-base 10`` converts log10 LRs
  on input). Its sums are accumulated in the evaluation's first pass at every grid point
  (:func:`bosaris_dask.engine.summarize`'s ``cross_entropy_plo``: one softplus per trial and
  grid point, no extra pass), each term rounded and summed exactly, as Cllr's; in compiled
  loops where numba is installed (:mod:`bosaris_dask.passes.fast_ece`, the same bits).
* **PAV** (calibrated): the optimal LLRs (:func:`bosaris_dask.calibration.optimal_llr_table`,
  raw PAV without Laplace's dummies: pure end blocks give ``±inf``, which cost nothing), from the
  summary's exact ROC convex hull alone.
* **neutral** (``LR = 1``, ``l = 0``): the prior entropy ``H(p)``, 1 bit at ``a = 0``.

At ``a = 0`` the raw ECE is Cllr and the PAV one minCllr. With conditions (``evaluate(...,
by=..., ece_plo=...)``), every condition's sums come from the same pass, per ``(condition,
class)`` (:func:`bosaris_dask.passes.grouped_cross_entropy.grouped_cross_entropy_kernel`), so each
condition's ECE is that of its own trials.

Examples
--------
>>> import numpy as np
>>> tar, non = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.0, 1.5, -2.0])
>>> out = ece_arrays(tar, non, [-2.0, 0.0, 2.0])
>>> from bosaris_dask.metrics import cllr, min_cllr
>>> bool(out["ece"][1] == cllr(tar, non)), round(float(out["ece_pav"][1] - min_cllr(tar, non)), 14)
(True, 0.0)
>>> out["ece_neutral"].round(6).tolist()  # H(p) at p = sigmoid(-2), 1/2, sigmoid(2)
[0.527065, 1.0, 0.527065]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr
from scipy.special import expit

from bosaris_dask.arguments import float_vector
from bosaris_dask.calibration.optimal import optimal_llr_table
from bosaris_dask.errors import OptionError
from bosaris_dask.passes import exact_sum

if TYPE_CHECKING:
    from bosaris_dask.passes.score_summary import ScoreSummary

__all__ = [
    "DEFAULT_ECE_PLO", "check_plo", "evaluate_ece", "ece_from_summary", "neutral_ece",
    "ece_arrays",
]  # fmt: skip

#: The default grid of the ECE plot: 41 natural prior log-odds from -10 to 10, every 0.25
#: between -3 and 3 (where the curves bend most), every 0.875 outside. Each point costs one
#: softplus per trial in pass 1.
DEFAULT_ECE_PLO = np.unique(np.concatenate([
    np.linspace(-10.0, -3.0, 9), np.linspace(-3.0, 3.0, 25), np.linspace(3.0, 10.0, 9),
]))  # fmt: skip
_LN2 = np.log(2.0)


def check_plo(plo: Any) -> np.ndarray:
    """The ECE grid as a 1-D float64 array of finite prior log-odds."""
    return float_vector(plo, "ECE grid prior log-odds", "finite", empty_ok=False)


def neutral_ece(plo: Any) -> np.ndarray:
    """ECE of the neutral ``LR = 1``: the prior entropy ``H(sigmoid(plo))`` in bits."""
    a = check_plo(plo)
    return (expit(a) * np.logaddexp(0, -a) + expit(-a) * np.logaddexp(0, a)) / _LN2


def _pav_ece(summary: ScoreSummary, a: np.ndarray) -> np.ndarray:
    llr = optimal_llr_table(summary.n_tar, summary.n_non)[None, :] + a[:, None]
    n_tar = summary.n_tar[None, :].astype(np.float64)
    n_non = summary.n_non[None, :].astype(np.float64)
    with np.errstate(invalid="ignore"):  # +-inf LLRs: 0 * inf where a class is absent
        tar = np.where(n_tar > 0, n_tar * np.logaddexp(0, -llr), 0.0).sum(axis=1)
        non = np.where(n_non > 0, n_non * np.logaddexp(0, llr), 0.0).sum(axis=1)
    return _weighted(a, tar, non, summary.n_target, summary.n_nontarget)


def _weighted(a: np.ndarray, tar: np.ndarray, non: np.ndarray, t: int, n: int) -> np.ndarray:
    return (expit(a) * tar / t + expit(-a) * non / n) / _LN2


def _mean_weighted(a: np.ndarray, mean_tar: np.ndarray, mean_non: np.ndarray) -> np.ndarray:
    return (expit(a) * mean_tar + expit(-a) * mean_non) / _LN2


def ece_from_summary(summary: ScoreSummary, plo: Any | None = None) -> dict[str, np.ndarray]:
    """``{"ece", "ece_pav", "ece_neutral"}`` in bits at the prior log-odds ``plo``.

    ``plo`` defaults to the grid the summary's cross-entropy sums were made for
    (``summary.cross_entropy_plo``); the raw ECE needs those sums, so another grid is an error.
    """
    if summary.cross_entropy is None or summary.cross_entropy_plo is None:
        raise OptionError("the raw ECE needs the cross-entropy sums of the evaluation's first "
                          "pass: summarize with cross_entropy_plo")  # fmt: skip
    a = summary.cross_entropy_plo if plo is None else check_plo(plo)
    if not np.array_equal(a, summary.cross_entropy_plo):
        raise OptionError("the summary's cross-entropy sums were made for another ECE grid")
    t, n = summary.n_target, summary.n_nontarget  # exact means, as Cllr's: finite, same bits
    means = np.array([[exact_sum.mean(tar, t), exact_sum.mean(non, n)]
                      for tar, non in summary.cross_entropy]).reshape(-1, 2)  # fmt: skip
    return {
        "ece": _mean_weighted(a, means[:, 0], means[:, 1]),
        "ece_pav": _pav_ece(summary, a),
        "ece_neutral": neutral_ece(a),
    }


def ece_arrays(tar: Any, non: Any, plo: Any = DEFAULT_ECE_PLO) -> dict[str, np.ndarray]:
    """:func:`ece_from_summary` of in-memory target and non-target LLRs (natural log)."""
    from dataclasses import replace

    from bosaris_dask.metrics import summary_from_arrays
    from bosaris_dask.passes.softplus import cross_entropy_units

    a = check_plo(plo)
    summary = summary_from_arrays(tar, non)
    sums = cross_entropy_units(np.asarray(tar), np.asarray(non), a)
    return ece_from_summary(replace(summary, cross_entropy_plo=a, cross_entropy=sums))


def evaluate_ece(
    scores: xr.Dataset | Any, key: xr.Dataset, plo: Any = DEFAULT_ECE_PLO, **kwargs: Any
) -> xr.Dataset:
    """The ECE curves of one or more systems against a key, exactly, at any scale.

    :func:`bosaris_dask.metrics.evaluate` with ``ece_plo=plo`` (``kwargs`` go to it), reduced
    to ``ece``, ``ece_pav`` (``system``, ``ece_plo``), ``ece_neutral`` (``ece_plo``) and the
    ``cllr``/``min_cllr`` they meet at prior log-odds 0. Draw it with
    :func:`bosaris_dask.plots.ece_plot`.

    Examples
    --------
    >>> from bosaris_dask.trials import make_key, make_scores
    >>> key = make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [-1, 1]])
    >>> scores = make_scores(["m1", "m2"], ["s1", "s2"], [[2.0, 0.5], [-1.0, 0.5]])
    >>> ds = evaluate_ece(scores, key, plo=[-1.0, 0.0, 1.0])
    >>> bool(ds.ece.sel(ece_plo=0.0).item() == ds.cllr.item()), ds.ece_pav.values.round(4)
    (True, array([[0.42, 0.5 , 0.42]]))

    The PAV blocks are -1 (non-target), 0.5 (one of each: LLR 0) and 2 (target), so the
    calibrated ECE is half the neutral one: ``H(sigmoid(a)) / 2``.
    """
    from bosaris_dask.metrics import evaluate

    ds = evaluate(scores, key, ece_plo=check_plo(plo), **kwargs)
    out = ds[["ece", "ece_pav", "ece_neutral", "cllr", "min_cllr"]]
    out.attrs = dict(ds.attrs)
    return out
