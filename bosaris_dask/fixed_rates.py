"""Biometric operating points: FNMR at a fixed FMR, and FMR at a fixed FNMR (ISO/IEC 19795-1).

FMR(t) is the fraction of non-target (non-mated) trials with ``score >= t``, FNMR(t) the
fraction of target (mated) trials with ``score < t`` (accept iff ``score >= t``, as everywhere in
the package); TAR = 1 - FNMR. The threshold always is an **observed score** (of either class):
thresholds between two neighbouring observed scores give the same rates.

* **FNMR at FMR = f**: ``t`` is the *smallest* observed score with ``FMR(t) <= f`` (the most
  permissive threshold that respects the target); equivalently the lowest observed score above
  the ``(m + 1)``-th highest non-target score, where ``m`` is the largest count with
  ``m / N_non <= f``. ``+inf`` (every trial rejected: FMR 0, FNMR 1) when no observed score
  qualifies, which happens when ties put more than ``m`` non-targets on the highest values.
* **FMR at FNMR = f**: ``t`` is the *largest* observed score with ``FNMR(t) <= f``: the
  ``(m + 1)``-th lowest target score, ``m`` the largest count with ``m / N_tar <= f``.

Reported: ``t``, the actual FMR(t) and FNMR(t). **Ties**: FMR jumps at a tied score by the
number of non-targets sharing it, so the achieved FMR can lie well below ``f`` (and the achieved
FNMR below its target): it is reported, never interpolated. **Targets below one error**: when
``f < 1 / N_non`` (``f < 1 / N_tar`` for FNMR) no threshold has a non-zero rate at or below
``f``: the data cannot measure that operating point, and ``t``, FMR and FNMR are NaN.

This is not the ROC point *nearest* to ``f`` that insightface's ``eval_ijbc.py`` reads (its FMR
can exceed ``f``), nor an interpolated quantile: an exact order statistic, at any scale. The
engine (:func:`fixed_rate_candidates`) refines the bins where the cumulative non-target (target)
count crosses ``m``, in the same refinement passes as the ROC convex hull.

Examples
--------
>>> from bosaris_dask.metrics import summary_from_arrays
>>> s = summary_from_arrays([1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 2.0, 2.0, 3.5])
>>> threshold, fmr, fnmr = fixed_fmr(s, [0.2, 0.5, 0.1])
>>> threshold.tolist(), fmr.tolist(), fnmr.tolist()  # 0.5: the tie at 2.0 gives 0.2, not 0.4
([3.0, 3.0, nan], [0.2, 0.2, nan], [0.5, 0.5, nan])
>>> [a.tolist() for a in fixed_fnmr(s, [0.25, 0.5])]
[[2.0, 3.0], [0.6, 0.2], [0.25, 0.5]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from bosaris_dask.arguments import float_vector

if TYPE_CHECKING:
    from bosaris_dask.passes.score_summary import ScoreSummary

__all__ = [
    "check_rates", "allowed_errors", "fixed_fmr", "fixed_fnmr", "fixed_rate_candidates",
    "unmeasurable_note",
]  # fmt: skip


def check_rates(rates: Any, what: str = "FMR") -> np.ndarray:
    """Target rates as a 1-D float64 array, each once in the order given (``0.01`` and
    ``1e-2`` are one target); each must lie in ``(0, 1]``.

    Examples
    --------
    >>> check_rates([1e-3, 0.1, 1e-3]).tolist()
    [0.001, 0.1]
    >>> check_rates([0.0])
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.OptionError: target FMR 0.0 is not in (0, 1]
    """
    rates = float_vector(rates, f"target {what}", "rate")
    return np.asarray(list(dict.fromkeys(rates.tolist())), dtype=np.float64)


def allowed_errors(rate: float, n: int) -> int:
    """The largest count ``m`` of errors among ``n`` trials with ``m / n <= rate``.

    The comparison is the float one of the rate itself (``1 / 10**6 <= 1e-6`` holds), so a
    target written as ``1e-6`` with ``10**6`` non-targets allows one false match.

    Examples
    --------
    >>> allowed_errors(1e-6, 10**6), allowed_errors(0.1, 25), allowed_errors(0.01, 99)
    (1, 2, 0)
    """
    m = min(n, int(np.floor(rate * n)))
    while m < n and (m + 1) / n <= rate:
        m += 1
    while m > 0 and m / n > rate:
        m -= 1
    return m


def _cumulative(s: ScoreSummary) -> tuple[np.ndarray, np.ndarray]:
    """Targets below each bin and non-targets at or above it (``len(bins) + 1`` entries)."""
    cum_tar = np.concatenate([[0], np.cumsum(s.n_tar, dtype=np.int64)])
    cum_non = np.concatenate([[0], np.cumsum(s.n_non, dtype=np.int64)])
    return cum_tar, cum_non[-1] - cum_non


def _fmr_bins(s: ScoreSummary, rates: np.ndarray) -> np.ndarray:
    """Per FMR target: the first bin whose lowest score has ``FMR <= f`` (``len(bins)``: none;
    -1: the target is below one false match)."""
    _, above = _cumulative(s)
    n = int(above[0])
    out = np.empty(len(rates), dtype=np.int64)
    for i, f in enumerate(rates):
        m = allowed_errors(float(f), n)
        # ``above`` does not increase: the first bin with at most m non-targets at or above it
        out[i] = -1 if m == 0 else int(np.searchsorted(-above, -m, side="left"))
    return out


def _fnmr_bins(s: ScoreSummary, rates: np.ndarray) -> np.ndarray:
    """Per FNMR target: the last bin whose lowest score has ``FNMR <= f`` (-1: the target is
    below one false non-match)."""
    cum_tar, _ = _cumulative(s)
    n = int(cum_tar[-1])
    out = np.empty(len(rates), dtype=np.int64)
    for i, f in enumerate(rates):
        m = allowed_errors(float(f), n)
        out[i] = -1 if m == 0 else int(np.searchsorted(cum_tar[:-1], m, side="right")) - 1
    return out


def fixed_rate_candidates(
    s: ScoreSummary, fmr: Sequence[float] | np.ndarray = (), fnmr: Sequence[float] | np.ndarray = ()
) -> np.ndarray:
    """Unrefined bins the fixed-FMR and fixed-FNMR operating points need exact.

    For an FMR target: the bin where the non-targets counted from the top cross ``m`` (it holds
    the ``(m + 1)``-th highest non-target) and the next bin (its lowest score is the
    threshold). For an FNMR target: the bin holding the ``(m + 1)``-th lowest target. Refining
    them to single values makes the threshold and both counts exact; the engine repeats until
    no candidate is left.
    """
    nb = len(s.lo)
    idx: list[int] = []
    if len(fmr):
        for k in _fmr_bins(s, np.asarray(fmr, dtype=np.float64)):
            if k >= 0:
                idx += [int(k) - 1, int(k)]
    if len(fnmr):
        idx += [int(k) for k in _fnmr_bins(s, np.asarray(fnmr, dtype=np.float64)) if k >= 0]
    out = np.unique(np.array([i for i in idx if 0 <= i < nb], dtype=np.int64))
    return out[s.bits[out] > 0]


def _at_bins(
    s: ScoreSummary, values: np.ndarray, k: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Threshold ``values[k]``, FMR and FNMR at the lowest score of each bin ``k`` (NaN where
    ``k`` is -1: the target is below one error)."""
    cum_tar, above = _cumulative(s)
    ok = k >= 0
    kk = np.where(ok, k, 0)
    nan = np.full(len(k), np.nan)
    return (
        np.where(ok, values[kk], nan),
        np.where(ok, above[kk] / above[0], nan),
        np.where(ok, cum_tar[kk] / cum_tar[-1], nan),
    )


def fixed_fmr(s: ScoreSummary, rates: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Threshold, actual FMR and FNMR at each FMR target (see the module text for the rules).

    Exact when ``s`` was refined for these targets (:func:`fixed_rate_candidates`), as
    :func:`bosaris_dask.engine.summarize` does with ``fmr=``.
    """
    rates = check_rates(rates, "FMR")
    values = np.append(s.values().astype(np.float64), np.inf)
    return _at_bins(s, values, _fmr_bins(s, rates))


def fixed_fnmr(s: ScoreSummary, rates: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Threshold, actual FMR and FNMR at each FNMR target (see the module text for the rules).

    Exact when ``s`` was refined for these targets, as :func:`bosaris_dask.engine.summarize`
    does with ``fnmr=``.
    """
    rates = check_rates(rates, "FNMR")
    return _at_bins(s, s.values().astype(np.float64), _fnmr_bins(s, rates))


def unmeasurable_note(rate: float, n: int, what: str = "FMR") -> str:
    """Why an operating point is NaN: its target is below one error among ``n`` trials.

    Examples
    --------
    >>> unmeasurable_note(1e-6, 5000)
    'FMR 1e-06 < 1/5,000 non-targets: not measurable on these trials'
    """
    side = "non-targets" if what == "FMR" else "targets"
    return f"{what} {rate:g} < 1/{n:,} {side}: not measurable on these trials"
