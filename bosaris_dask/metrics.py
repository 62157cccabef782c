"""BOSARIS metrics: actDCF, minDCF, ROCCH, EER, PRBEP, Cllr, minCllr, DR30 and the NBE sweep.

Definitions follow Brümmer & de Villiers (2011), section 2 (unit costs, effective prior ``p``, Bayes
threshold ``-logit(p)``, accept iff ``score >= threshold``). Everything is computed from
:class:`~bosaris_dask.passes.score_summary.ScoreSummary` objects, so the same code serves a few
thousand scores in numpy arrays and a billion-trial store. The short names of two arrays' metrics
(``eer``, ``min_dcf``, ``cllr``, ...) live in :mod:`bosaris_dask.array_metrics` and are re-exported
here.

Examples
--------
>>> import numpy as np
>>> tar, non = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.0, 1.5, -2.0])
>>> ds = evaluate_arrays(tar, non, priors=[0.5, 0.1])
>>> round(float(ds.eer.item()), 4), float(ds.min_dcf.sel(prior=0.5).item())
(0.1429, 0.25)
>>> operating_points(ds).act_dcf.sel(prior=0.1).item() == act_dcf(tar, non, 0.1)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import xarray as xr

from bosaris_dask import fixed_rates
from bosaris_dask.arguments import one_or_many
from bosaris_dask.array_metrics import (
    act_dcf,
    auc,
    auc_rocch,
    cllr,
    eer,
    fmr_at_fnmr,
    fnmr_at_fmr,
    min_cllr,
    min_dcf,
    min_threshold,
    prbep,
    rocch,
    uer,
)
from bosaris_dask.costs import OperatingPoint, merge_operating_points
from bosaris_dask.engine import DEFAULT_SPLIT_EVERY, summarize
from bosaris_dask.errors import OptionError, option
from bosaris_dask.measures import (
    DEFAULT_PRIORS,
    check_priors,
    check_sweep,
    default_sweep,
    effective_prior,
    hull_auc,
    plo_axis,
    stated_plo,
    steppy_roc,
    summary_auc,
    summary_from_arrays,
    summary_metrics,
)
from bosaris_dask.passes.score_summary import ScoreSummary
from bosaris_dask.result_layout import (
    concat_systems,
    curve,
    fixed_rate_metrics,
    operating_points,
    results_dataset,
    sweep_points,
)

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
    "concat_systems",
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
    exact_auc: bool = False,
    bootstrap_method: str = "multinomial",
) -> xr.Dataset:
    """Evaluate one or more systems against a key, exactly, at any scale.

    Parameters
    ----------
    scores
        A Scores object or a list of them (one per system).
    key
        The Key (stored, in memory, or derived from labels).
    priors
        Effective priors of the reported operating points (unit costs); the defaults stay
        beside ``operating_points`` unless ``priors=[]`` (the CLI's ``--operating-point``
        alone reports only the points it states).
    operating_points
        More operating points in users' terms, after ``priors``: :class:`OperatingPoint` objects
        or ``"Ptar:Cmiss:Cfa"`` strings; each is reported at its effective prior, one point per
        effective prior: a point replaces the entry of ``priors`` it equals (reported with its
        costs), and two points of one effective prior with other costs are refused
        (OptionError).
    sweep
        Prior log-odds of the normalized Bayes error-rate sweep (default: 201 points, -10..10,
        extended in its steps of 0.1 to half a unit beyond any operating point outside it).
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
        Condition tables (:class:`~bosaris_dask.conditions.ConditionTable`, pandas DataFrames
        with a ``model`` and/or ``segment`` column, or paths) and
        ``model.COL``/``segment.COL``/``same.COL``/
        ``trial.COL`` specs:
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
        achieved rate can lie well below the target (it is reported); where ties put more
        non-targets than ``f`` allows on the highest score (no target above it), the FMR
        threshold is ``+inf`` with FMR 0 and FNMR 1. A target below one error
        (``f < 1/N_non`` for FMR, ``f < 1/N_tar`` for FNMR) cannot be measured: NaN.
        Exact order statistics (:mod:`bosaris_dask.fixed_rates`), refined in the same passes
        as the hull (``attrs["passes"]`` does not grow, except when nothing else needed one).
    ece_plo
        Prior log-odds of the empirical cross-entropy (ECE) plot (:mod:`bosaris_dask.ece`):
        ``ece`` (the scores as LLRs), ``ece_pav`` (PAV-calibrated) and ``ece_neutral``
        (``LR = 1``) in bits along ``ece_plo``. Pass 1 sums the raw terms (one softplus per
        trial and grid point; no extra pass). With conditions, also per condition
        (``condition_ece``, ``condition_ece_pav``), from the same pass.
    ci, bootstrap, resample, seed, compare
        Two-way bootstrap percentile intervals (level ``ci``, default 0.95) from ``bootstrap``
        resamples of the ``resample`` groups (``model.COL`` and/or ``segment.COL`` of the condition
        tables): ``eer_ci``, ``cllr_ci``, ``min_cllr_ci``, ``cllr_cal_ci``, ``act_dcf_ci``,
        ``min_dcf_ci`` along ``bound`` (low, high); with ``compare``, paired differences of every
        pair of systems. The point estimates stay exact (:mod:`bosaris_dask.bootstrap.evaluation`
        says what the intervals are computed from).
    exact_auc
        Make ``auc`` exact at any scale (:mod:`bosaris_dask.passes.exact_auc`): when every system's
        targets fit ``bosaris_dask.auc-limit``, in the evaluation's own passes (pass 1 pulls
        their keys, the count rides the refinement pass; one more pass when there is none);
        else one or two more passes after the summary (none when no coarse bin holds both
        classes), for every system at once, when the smaller class of the mixed bins fits
        the budget; else ``auc`` stays NaN with its bounds, an
        :class:`~bosaris_dask.passes.exact_auc.ExactAucWarning` and ``attrs["auc_notes"]`` saying
        why. With conditions, per condition too (``condition_auc``, each from its own
        trials), from the same passes.
    bootstrap_method
        ``"multinomial"`` (each side draws as many of its groups as it has, with replacement)
        or ``"poisson"`` (each group's multiplicity from Poisson(1)): how the bootstrap
        resamples (:mod:`bosaris_dask.bootstrap.resample`).

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
        (exact steppy-ROC points thinned by :func:`steppy_roc`, dimension ``roc_point``, each
        with its score threshold ``roc_threshold``: ``roc_pmiss`` is the share of targets
        below it, ``roc_pfa`` that of non-targets at or above it) are NaN-padded past each
        system's ``n_vertices``/``n_roc_points``; :func:`curve` returns one at its exact
        length. ``attrs["passes"]`` says how many passes over the data the
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

    Examples
    --------
    >>> from bosaris_dask.trials import make_key, make_scores
    >>> key = make_key(["m1", "m2"], ["s1", "s2", "s3"], [[1, -1, -1], [-1, 1, -1]])
    >>> scores = make_scores(["m1", "m2"], ["s1", "s2", "s3"],
    ...                      [[2.5, -1.0, 0.3], [-0.5, 1.5, -2.0]])
    >>> r = evaluate(scores, key, priors=[0.5, 0.01])
    >>> int(r.n_target.item()), int(r.n_nontarget.item()), float(r.eer.item())
    (2, 4, 0.0)
    >>> round(float(r.cllr.item()), 4), operating_points(r).act_dcf.values.round(3).tolist()
    (0.42, [[0.25, 1.0]])
    """
    cprimary_priors = np.atleast_1d(np.asarray(cprimary_priors, dtype=object)).tolist()
    conditions, by, resample = (one_or_many(x) for x in (conditions, by, resample))
    if seed is not None and not (isinstance(seed, (int, np.integer)) and seed >= 0):
        raise OptionError(f"{option('seed')} must be an integer >= 0, got {seed!r}")
    if bootstrap is None and (seed is not None or bootstrap_method != "multinomial"):
        raise OptionError(f"{option('seed')} and {option('bootstrap_method')} choose the "
                          f"bootstrap's resamples: give {option('bootstrap')}, a number of "
                          "resamples, too")  # fmt: skip
    if bootstrap is not None or ci is not None or resample or compare:  # (bootstrap=0: refused)
        from bosaris_dask.bootstrap import evaluate_with_intervals

        return evaluate_with_intervals(
            scores, key, priors=priors, operating_points=operating_points, sweep=sweep,
            names=names, allow_missing=allow_missing, progress=progress, split_every=split_every,
            conditions=conditions, by=by, cprimary_priors=cprimary_priors, equalize=equalize,
            fmr=fmr, fnmr=fnmr, ece_plo=ece_plo, ci=ci, bootstrap=bootstrap, resample=resample,
            seed=seed, compare=compare, bootstrap_method=bootstrap_method,
            **({"exact_auc": True} if exact_auc else {}),
        )  # fmt: skip
    if conditions or by or len(cprimary_priors) or equalize:
        from bosaris_dask.conditions.evaluation import evaluate_conditions

        return evaluate_conditions(
            scores, key, conditions=conditions, by=by, cprimary_priors=cprimary_priors,
            priors=priors, operating_points=operating_points, sweep=sweep, names=names,
            allow_missing=allow_missing, progress=progress, split_every=split_every,
            equalize=equalize, fmr=fmr, fnmr=fnmr, ece_plo=ece_plo, exact_auc=exact_auc,
        )  # fmt: skip
    return pooled_evaluation(
        scores, key, priors=priors, operating_points=operating_points, sweep=sweep,
        names=names, allow_missing=allow_missing, progress=progress, split_every=split_every,
        fmr=fmr, fnmr=fnmr, ece_plo=ece_plo, exact_auc=exact_auc,
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
    exact_auc: bool = False,
) -> tuple[xr.Dataset, list[ScoreSummary]]:
    """:func:`evaluate` of the pooled trials, and the summaries it was computed from (their
    ``passes`` count the exact AUC's too)."""
    systems = [scores] if isinstance(scores, xr.Dataset) else list(scores)
    points = stated_operating_points(priors, operating_points)
    fmr, fnmr = check_fixed_rates(fmr, fnmr)
    plo = stated_plo(points)
    sweep = check_sweep(sweep, plo)
    if ece_plo is not None:
        from bosaris_dask.ece import check_plo

        ece_plo = check_plo(ece_plo)
    riding = None
    if exact_auc:  # the exact AUC rides along the evaluation's passes where it fits
        from bosaris_dask.passes.riding_auc import RidingAuc

        riding = RidingAuc(len(systems), names, split_every)
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
        rider=None if riding is None else riding.rider,
    )
    if riding is None:
        return results_dataset(summaries, points, sweep, fmr, fnmr), summaries
    from bosaris_dask.passes.exact_auc import apply_exact_auc, exact_aucs, with_passes

    if riding.served:
        found = riding.found()
    else:
        found = exact_aucs(systems, key, summaries, split_every=split_every, progress=progress)
    summaries = with_passes(summaries, found.passes)
    ds = results_dataset(summaries, points, sweep, fmr, fnmr)
    return apply_exact_auc(ds, found), summaries


def check_fixed_rates(fmr: Any, fnmr: Any) -> tuple[np.ndarray, np.ndarray]:
    """The fixed-rate targets, checked (empty arrays where none)."""
    return fixed_rates.check_rates(fmr, "FMR"), fixed_rates.check_rates(fnmr, "FNMR")


def stated_operating_points(
    priors: Sequence[float], operating_points: Sequence[OperatingPoint | str]
) -> list[OperatingPoint]:
    """The operating points of an evaluation: ``priors`` (effective priors) merged with the
    ``operating_points`` stated as :class:`OperatingPoint` or ``"Ptar:Cmiss:Cfa"`` strings.

    Raises
    ------
    OptionError
        If a prior or a stated point is invalid, or there is no operating point at all.
    """
    if isinstance(operating_points, (str, OperatingPoint)):  # one point, not its characters
        operating_points = [operating_points]
    stated = [_operating_point(op) for op in operating_points]
    points = merge_operating_points(check_priors(priors).tolist(), stated)  # a prior, or several
    if not points:
        raise OptionError("no operating point: give at least one prior or operating point")
    return points


def _operating_point(op: Any) -> OperatingPoint:
    """An operating point given as itself, ``"Ptar:Cmiss:Cfa"`` or ``(Ptar, Cmiss, Cfa)``."""
    if isinstance(op, OperatingPoint):
        return op
    if isinstance(op, str):
        return OperatingPoint.parse(op)
    if isinstance(op, Sequence) and len(op) == 3:
        return OperatingPoint(*op)
    raise OptionError(f"an operating point is an OperatingPoint, 'Ptar:Cmiss:Cfa' or "
                      f"(Ptar, Cmiss, Cfa), not {op!r}")  # fmt: skip


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
    points = stated_operating_points(priors, operating_points)
    sweep = check_sweep(sweep, stated_plo(points))
    fmr, fnmr = check_fixed_rates(fmr, fnmr)
    summary = summary_from_arrays(tar, non, name)
    if ece_plo is not None:
        from bosaris_dask.ece import check_plo
        from bosaris_dask.passes.softplus import cross_entropy_units

        a = check_plo(ece_plo)
        sums = cross_entropy_units(np.asarray(tar), np.asarray(non), a)
        summary = replace(summary, cross_entropy_plo=a, cross_entropy=sums)
    return results_dataset([summary], points, sweep, fmr, fnmr)
