"""The result ``xarray.Dataset`` of an evaluation: its variables, dimensions and attributes.

:func:`results_dataset` lays out the :func:`~bosaris_dask.measures.summary_metrics` of several
systems: scalars along ``system`` (:data:`SCALARS`), per-prior metrics along ``(system, plo)``
(:data:`PER_PLO`), ragged curves NaN-padded with their lengths (:data:`CURVES`), the
fixed-FMR/FNMR points (:data:`FIXED_RATES`), and ``units``/``long_name`` on every variable
(:data:`ATTRS`). :func:`operating_points`, :func:`sweep_points` and :func:`curve` are the views
a user reads it through.

Examples
--------
>>> from bosaris_dask.costs import OperatingPoint
>>> from bosaris_dask.measures import summary_from_arrays
>>> s = summary_from_arrays([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5], name="a")
>>> ds = results_dataset([s], [OperatingPoint(0.5)], np.array([0.0]))
>>> ds.eer.attrs["units"], operating_points(ds).prior.values.tolist()
('probability', [0.5])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr
from scipy.special import expit

from bosaris_dask import fixed_rates
from bosaris_dask.costs import OperatingPoint
from bosaris_dask.errors import OptionError, TrialError
from bosaris_dask.measures import (
    DR30_ERRORS,
    check_priors,
    plo_axis,
    stated_plo,
    summary_metrics,
)
from bosaris_dask.passes.score_summary import ScoreSummary

__all__ = [
    "SCALARS",
    "PER_PLO",
    "CURVES",
    "ATTRS",
    "FIXED_RATES",
    "with_attrs",
    "padded",
    "fixed_rate_metrics",
    "results_dataset",
    "operating_points",
    "reported_positions",
    "sweep_points",
    "curve",
    "RAGGED_DIMS",
    "concat_systems",
]

#: The scalar variables (one value per ``system``).
SCALARS = ("n_target", "n_nontarget", "n_missing", "eer", "prbep", "cllr", "min_cllr",
            "cllr_cal", "auc", "auc_low", "auc_high", "auc_rocch", "pmiss30", "pfa30",
            "dr30_fa_plo", "dr30_miss_plo", "n_vertices", "n_roc_points")  # fmt: skip
#: The variables along ``plo`` (``system``, ``plo``): one value per prior log-odds.
PER_PLO = ("act_dcf", "min_dcf", "act_dcf_raw", "min_dcf_raw",
           "act_pmiss", "act_pfa", "min_pmiss", "min_pfa", "min_threshold")  # fmt: skip
#: The ragged curves: variable -> (padded dimension, the variable counting each row's length).
CURVES = {"rocch_pmiss": ("vertex", "n_vertices"), "rocch_pfa": ("vertex", "n_vertices"),
          "roc_pmiss": ("roc_point", "n_roc_points"),
          "roc_pfa": ("roc_point", "n_roc_points"),
          "roc_threshold": ("roc_point", "n_roc_points")}  # fmt: skip

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
    "auc": (
        _P,
        "exact ROC AUC (Mann-Whitney, ties half); NaN where the passes' bins leave it "
        "between auc_low and auc_high: evaluate(exact_auc=True) computes it",
    ),
    "auc_low": (_P, "lower bound on the exact AUC"),
    "auc_high": (_P, "upper bound on the exact AUC"),
    "auc_rocch": (_P, "area under the ROC convex hull"),
    "pmiss30": (
        _P,
        "DR30: Pmiss of 30 misses, 30 / targets (rates below rest on < 30 errors; "
        "at or above 1 with 30 or fewer targets: no DR30 point)",
    ),
    "pfa30": (
        _P,
        "DR30: Pfa of 30 false alarms, 30 / non-targets (rates below rest on < 30 "
        "errors; at or above 1 with 30 or fewer non-targets: no DR30 point)",
    ),
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
    "roc_threshold": (
        "score",
        "score threshold t of each roc point: roc_pmiss = P(s < t | target), roc_pfa = "
        "P(s >= t | non-target); +inf last; NaN-padded beyond n_roc_points",
    ),
    "system": ("name", "the evaluated system (its score file's name, or as named)"),
    "condition": ("label", "the condition: the values of its --by specs, joined"),
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
    priors = check_priors([op.effective_prior for op in points])
    plo = plo_axis(points, sweep)
    at = np.searchsorted(plo, stated_plo(points))
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
        "act_threshold": ("plo", 0.0 - plo),  # 0.0, not -0.0, at P = 0.5
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
    >>> from bosaris_dask.measures import summary_from_arrays
    >>> s = summary_from_arrays([1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 2.0, 2.0, 3.5])
    >>> out = fixed_rate_metrics(s, fmr=[0.2])
    >>> out["fixed_fmr_threshold"].tolist(), out["fixed_fmr_fnmr"].tolist()
    ([3.0], [0.5])
    """
    summary = ScoreSummary.given_to("fixed_rate_metrics", summary)
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


def results_dataset(
    summaries: Sequence[ScoreSummary],
    points: Sequence[OperatingPoint],
    sweep: np.ndarray,
    fmr: np.ndarray | Sequence[float] = (),
    fnmr: np.ndarray | Sequence[float] = (),
) -> xr.Dataset:
    from bosaris_dask.ece import ece_from_summary

    results = [summary_metrics(s, points, sweep) for s in summaries]
    data: dict[str, Any] = {}
    for name in SCALARS:
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


def is_evaluation(obj: Any) -> bool:
    """Whether ``obj`` is the result of :func:`bosaris_dask.evaluate` (it has its ``plo`` axis)."""
    return isinstance(obj, xr.Dataset) and "plo" in obj.dims and "operating_point" in obj.coords


def check_evaluation(obj: Any, what: str, *, per_system: bool = False) -> xr.Dataset:
    """``obj``, or a :class:`TrialError` saying that ``what`` takes an evaluation's result
    (``per_system``: one that still has its ``system`` and ``condition`` dimensions).

    Examples
    --------
    >>> check_evaluation(xr.Dataset(), "operating_points")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.TrialError: operating_points works on the result of ... this Dataset
    """
    if not is_evaluation(obj):
        shown = "Dataset" if isinstance(obj, xr.Dataset) else type(obj).__name__
        raise TrialError(f"{what} works on the result of bosaris_dask.evaluate (a Dataset with "
                         f"a 'plo' dimension), not on this {shown}")  # fmt: skip
    for dim in ("system", "condition") if per_system else ():
        if dim in obj.coords and dim not in obj.dims:  # a selection of one dropped it
            raise TrialError(f"{what} works on a result with a {dim!r} dimension: select a "
                             f"list, e.g. result.sel({dim}=['a'])")  # fmt: skip
    return obj


def operating_points(results: xr.Dataset) -> xr.Dataset:
    """The reported operating points of an evaluation, in the order stated, indexed by ``prior``.

    ``results`` keeps them on its ``plo`` dimension among the sweep's points (the coordinate
    ``operating_point`` gives their order); this view selects them and makes ``prior`` (the
    effective prior) the dimension, so ``operating_points(ds).min_dcf.sel(prior=0.01)`` works.
    The curves (ROC and ROCCH, :func:`curve`) are left out: ``to_dataframe()`` of the view is
    then a table of the points (with them, one row per point and curve vertex).

    Examples
    --------
    >>> from bosaris_dask.metrics import act_dcf, evaluate_arrays
    >>> ds = evaluate_arrays([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5], priors=[0.5, 0.1])
    >>> ops = operating_points(ds)
    >>> ops.prior.values.tolist(), ds.sizes["plo"]
    ([0.5, 0.1], 202)
    >>> ops.act_dcf.sel(prior=0.1).item() == act_dcf([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5], 0.1)
    True
    >>> len(ops[["act_dcf", "min_dcf"]].to_dataframe()), "vertex" in ops.dims
    (2, False)
    """
    at = reported_positions(check_evaluation(results, "operating_points"))
    points = results.isel(plo=at).swap_dims(plo="prior")
    return points.drop_dims([d for d in RAGGED_DIMS if d in points.dims])


def reported_positions(results: xr.Dataset) -> np.ndarray:
    """Positions on ``plo`` of an evaluation's reported operating points, in the order stated
    (what :func:`operating_points` selects).

    >>> from bosaris_dask.metrics import evaluate_arrays
    >>> ds = evaluate_arrays([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5], priors=[0.5, 0.1])
    >>> ds.prior.values[reported_positions(ds)].tolist()
    [0.5, 0.1]
    """
    order = results.operating_point.values
    at = np.flatnonzero(order >= 0)
    return at[np.argsort(order[at], kind="stable")]


def sweep_points(results: xr.Dataset) -> xr.Dataset:
    """The NBE sweep of an evaluation: its ``plo`` points that were asked for as the sweep.

    Examples
    --------
    >>> from bosaris_dask.metrics import evaluate_arrays
    >>> ds = evaluate_arrays([1.0, 2.0], [0.0], priors=[0.1], sweep=[-1.0, 0.0, 1.0])
    >>> ds.plo.values.round(3).tolist(), sweep_points(ds).plo.values.tolist()
    ([-2.197, -1.0, 0.0, 1.0], [-1.0, 0.0, 1.0])
    """
    return results.isel(plo=check_evaluation(results, "sweep_points").in_sweep.values)


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
    >>> from bosaris_dask.metrics import evaluate_arrays
    >>> ds = evaluate_arrays([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5], name="a")
    >>> pmiss, pfa = curve(ds, "a", "rocch")
    >>> pmiss.tolist(), pfa.tolist()
    ([0.0, 0.0, 0.3333333333333333, 1.0], [1.0, 0.3333333333333333, 0.0, 0.0])
    """
    if kind not in ("rocch", "roc"):
        raise OptionError(f'curve kind must be "rocch" or "roc", got {kind!r}')
    if f"{kind}_pmiss" not in results:
        raise TrialError(f"curve works on the result of bosaris_dask.evaluate (with its "
                         f"'{kind}_pmiss'), not on this {type(results).__name__}")  # fmt: skip
    if system is not None and "system" in results.dims and system not in results.system:
        names = ", ".join(map(str, results.system.values))
        raise OptionError(f"curve: no system {system!r}; the systems are {names}")
    if system is None and "system" in results.dims:
        if results.sizes["system"] != 1:
            names = ", ".join(map(str, results.system.values))
            raise OptionError(f"curve: name one of the systems ({names})")
        system = results.system.values[0]
    r = results if system is None else results.sel(system=system)
    n = int(r[CURVES[f"{kind}_pmiss"][1]])
    return r[f"{kind}_pmiss"].values[:n], r[f"{kind}_pfa"].values[:n]


#: The NaN-padded dimensions of an evaluation (its curves, pooled and per condition).
RAGGED_DIMS = ("vertex", "roc_point", "condition_vertex", "condition_roc_point")


def _merged_attrs(attrs: list[dict[str, Any]], context: Any = None) -> dict[str, Any]:
    """The results' attributes, which :func:`concat_systems` checked are the same but for
    ``passes``: the most any of them took (``xr.concat`` merges each variable's attributes with
    this function too: theirs are the same, from :data:`ATTRS`)."""
    if not any("passes" in a for a in attrs):
        return dict(attrs[0])
    return {**attrs[0], "passes": max(int(a.get("passes", 0)) for a in attrs)}


def _check_alike(results: list[xr.Dataset]) -> None:
    """An OptionError unless the results hold the same variables and attributes (but
    ``passes``), so that none is dropped or filled in by ``xr.concat``."""
    first = results[0]
    for r in results[1:]:
        if set(r.variables) != set(first.variables):
            odd = sorted(set(r.variables) ^ set(first.variables))
            raise OptionError(f"concat_systems: the results were not evaluated alike (conditions, "
                              f"equalization, fixed rates, ECE): {', '.join(odd[:5])} "
                              f"{'is' if len(odd) == 1 else 'are'} in some only")  # fmt: skip
        for name in set(r.attrs) | set(first.attrs):
            a, b = first.attrs.get(name), r.attrs.get(name)
            if name != "passes" and not (a is not None and b is not None and np.array_equal(a, b)):
                raise OptionError(f"concat_systems: the results differ in their attribute "
                                  f"{name!r} ({a!r} against {b!r})")  # fmt: skip


def concat_systems(results: Sequence[xr.Dataset]) -> xr.Dataset:
    """The results of separate evaluations of the same trials as one result along ``system``,
    as if :func:`~bosaris_dask.metrics.evaluate` had taken all the systems at once (e.g. each
    system evaluated by its own batch job).

    Every exact metric (counts, EER, PRBEP, Cllr, minCllr, actDCF, minDCF, per condition,
    equalized, fixed rates, ECE) equals that of one evaluation of all the systems. What rests on
    the bins the passes chose (the thinned steppy ROC ``roc_*``, the AUC bounds where ``auc`` is
    NaN, ``min_threshold``: one of the thresholds that attain minDCF) may differ, as it may
    between any two evaluations of different sets of systems.

    Each result's curves are NaN-padded to the longest (their lengths stay in ``n_vertices``
    and ``n_roc_points``, so :func:`curve` reads each at its own length). The results must
    share everything that is not per system: the ``plo`` axis (priors and sweep), conditions,
    fixed rates and ECE grid, else a :class:`~bosaris_dask.errors.OptionError` says what
    differs; they must hold the same variables and attributes (but ``passes``: the most any
    took), and distinct system names. Bootstrap results are refused: their resamples, bins
    and paired comparisons belong to one run.

    Examples
    --------
    >>> from bosaris_dask.metrics import evaluate_arrays
    >>> a = evaluate_arrays([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5], name="a")
    >>> b = evaluate_arrays([1.0, 4.0, 5.0, 8.0], [0.0, 2.0, 3.0, 6.0, 7.0], name="b")
    >>> both = concat_systems([a, b])
    >>> both.system.values.tolist(), both.eer.values.tolist() == [*a.eer.values, *b.eer.values]
    (['a', 'b'], True)
    >>> [len(curve(both, name)[0]) for name in ("a", "b")], both.sizes["vertex"]
    ([4, 5], 5)
    """
    results = [check_evaluation(r, "concat_systems", per_system=True) for r in results]
    if not results:
        raise OptionError("concat_systems needs at least one result")
    for r in results:
        if "system" not in r.dims:
            raise OptionError("concat_systems takes results with a 'system' dimension")
        if "bound" in r.dims:
            raise OptionError("concat_systems does not join bootstrap results: their resamples, "
                              "bins and comparisons belong to one run; evaluate the systems "
                              "together")  # fmt: skip
    names = [str(n) for r in results for n in r.system.values]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise OptionError(f"concat_systems: system names must be distinct; repeated: "
                          f"{', '.join(twice)}")  # fmt: skip
    _check_alike(results)
    longest = {d: max(r.sizes.get(d, 0) for r in results) for d in RAGGED_DIMS}
    padded_results = [
        r.pad(
            {d: (0, longest[d] - r.sizes[d]) for d in RAGGED_DIMS if d in r.dims},
            constant_values=np.nan,
        )  # fmt: skip
        for r in results
    ]
    try:
        out = xr.concat(padded_results, dim="system", data_vars="minimal", coords="minimal",
                        compat="equals", join="exact", combine_attrs=_merged_attrs)  # fmt: skip
    except ValueError as exc:
        raise OptionError(
            f"concat_systems: the results differ in more than their systems "
            f"(priors, sweep, conditions, fixed rates or ECE grid): {exc}"
        ) from exc
    return with_attrs(out)
