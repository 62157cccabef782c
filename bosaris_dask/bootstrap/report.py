"""The bootstrap's part of the JSON document and of the text table.

JSON: each system gets ``"eer_ci"``, ``"cllr_ci"``, ``"min_cllr_ci"``, ``"cllr_cal_ci"`` (the
calibration loss) and each of its operating points ``"act_dcf_ci"``, ``"min_dcf_ci"`` (``[low,
high]``), with ``"eer_ci_resolution"``, ``"min_cllr_ci_resolution"``,
``"cllr_cal_ci_resolution"``, ``"min_dcf_ci_resolution"`` (the binned intervals' ends are at
most that above the exact bootstrap's; the calibration loss's at most that below), and so does
each of its condition entries with ``--by``, which also say how many resamples drew no target or
no non-target of the condition and are left out of its intervals (``"bootstrap_degenerate"``;
the table says it too) and, where every resample holds the condition's trials in the data's
proportions, why it has none (``"bootstrap_note"``); the document gets ``"bootstrap":
{"resamples", "ci", "seed", "resample", "bins", "groups", "degenerate", "method",
"pair_factor"}`` and, with ``compare``, ``"comparisons": [{"first", "second", ("note": where a
system misses key trials, each is compared on its own scored trials), "eer": {"diff", "diff_ci",
"p_first_better"}, "cllr": ..., "min_cllr": ..., "cllr_cal": ..., "operating_points": [{"prior",
"p_target", "c_miss", "c_fa", "act_dcf": {...}, "min_dcf": {...}}]}]`` (``"diff"``: the first
system's metric minus the second's); with ``--by`` too, each comparison has ``"conditions":
[{"by", "eer", ..., "operating_points"}]``, the same keys per condition. With Cprimary priors,
each ``"cprimary"`` entry gets ``"act_ci"``, ``"min_ci"`` and ``"min_ci_resolution"``, and each
comparison ``"cprimary": {"act": {"diff", ...}, "min": {...}}`` (of the pooled trials), as does
each of its conditions. With ``--equalize``, each comparison's ``"equalized": {"eer",
"operating_points", ("cprimary")}`` compares the equalized metrics likewise.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from bosaris_dask.bootstrap.replicates import BINNED_BELOW, METRICS, PER_POINT
from bosaris_dask.bootstrap.variables import BINNED
from bosaris_dask.report import json_float, point_labels
from bosaris_dask.result_layout import operating_points, reported_positions

__all__ = ["add_json", "format_block"]

_LABELS = {"eer": "EER (%)", "cllr": "Cllr", "min_cllr": "minCllr", "cllr_cal": "Cal loss"}
METHOD = ("two-way bootstrap (multinomial group multiplicities per side, a trial's the product); "
          "percentile intervals")  # fmt: skip
#: The method's words for the Poisson variant.
POISSON_METHOD = ("two-way bootstrap (Poisson(1) group multiplicities per side, a trial's the "
                  "product); percentile intervals")  # fmt: skip


def _method(attrs: dict[str, Any]) -> str:
    """The method's words: two-way where both sides are resampled, else of one side.

    >>> _method({"resample": ["segment.spk"]})[:52]
    'bootstrap of one side (multinomial group multiplicit'
    """
    words = POISSON_METHOD if attrs.get("bootstrap_method") == "poisson" else METHOD
    if len(attrs["resample"]) > 1:
        return words
    return words.replace("two-way bootstrap", "bootstrap of one side").replace(
        " per side, a trial's the product", ""
    )


def _pair(values: Any) -> list[float | None]:
    return [json_float(v) for v in np.asarray(values)]


def _point_names(results: xr.Dataset) -> list[str]:
    """The reported operating points' labels, as the main table's (``P=0.01``, ``0.01:10:1``)."""
    points = operating_points(results)
    return point_labels(points.prior.values, points)


#: What names a reported point in the JSON (as each system's ``operating_points`` entries).
_POINT_KEYS = ("prior", "p_target", "c_miss", "c_fa")


def _point_of(entry: dict[str, Any]) -> dict[str, Any]:
    """A comparison's operating point named as a system's entry ``entry`` names it."""
    return {key: entry[key] for key in _POINT_KEYS if key in entry}


def add_json(doc: dict[str, Any], results: xr.Dataset) -> dict[str, Any]:
    """Add the intervals (and comparisons) of ``results`` to its JSON document ``doc``."""
    ops = reported_positions(results)
    for k, entry in enumerate(doc["systems"]):
        for name in METRICS:
            entry[name + "_ci"] = _pair(results[name + "_ci"].values[k])
            if name in BINNED:
                entry[name + "_ci_resolution"] = json_float(results[name + "_ci_resolution"][k])
        for op, at in zip(entry["operating_points"], ops, strict=True):
            for name in PER_POINT:
                op[name + "_ci"] = _pair(results[name + "_ci"].values[k, at])
                if name in BINNED:
                    op[name + "_ci_resolution"] = json_float(
                        results[name + "_ci_resolution"][k, at]
                    )
    if "condition_eer_ci" in results:
        for k, entry in enumerate(doc["systems"]):
            for g, cond in enumerate(entry.get("conditions", [])):
                for name in METRICS:
                    cond[name + "_ci"] = _pair(results["condition_" + name + "_ci"].values[k, g])
                    if name in BINNED:
                        var = f"condition_{name}_ci_resolution"
                        cond[name + "_ci_resolution"] = json_float(results[var][k, g])
                if "condition_bootstrap_degenerate" in results:
                    left = results.condition_bootstrap_degenerate.values[k, g]
                    cond["bootstrap_degenerate"] = int(left)
                if "condition_bootstrap_whole" in results:
                    if results.condition_bootstrap_whole.values[k, g]:
                        cond["bootstrap_note"] = WHOLE
                for op, at in zip(cond["operating_points"], ops, strict=True):
                    for name in PER_POINT:
                        values = results["condition_" + name + "_ci"].values[k, g, at]
                        op[name + "_ci"] = _pair(values)
                        if name in BINNED:
                            var = f"condition_{name}_ci_resolution"
                            op[name + "_ci_resolution"] = json_float(results[var][k, g, at])
    if "cprimary_act_ci" in results:
        for k, entry in enumerate(doc["systems"]):
            _cprimary_json(entry, results, "", k)
            for g, cond in enumerate(entry.get("conditions", [])):
                _cprimary_json(cond, results, "condition_", k, g)
            if "equalized" in entry:
                _cprimary_json(entry["equalized"], results, "equalized_", k)
    if "equalized_eer_ci" in results:
        for k, entry in enumerate(doc["systems"]):
            equalized = entry.get("equalized")
            if equalized is None:
                continue
            equalized["eer_ci"] = _pair(results.equalized_eer_ci.values[k])
            for op, at in zip(equalized["operating_points"], ops, strict=True):
                for name in PER_POINT:
                    op[name + "_ci"] = _pair(results[f"equalized_{name}_ci"].values[k, at])
    a = results.attrs
    doc["bootstrap"] = {
        "resamples": int(a["bootstrap"]), "ci": float(a["ci"]), "seed": int(a["bootstrap_seed"]),
        "resample": list(a["resample"]), "bins": [int(b) for b in a["bootstrap_bins"]],
        "groups": [int(g) for g in a["bootstrap_groups"]],
        "degenerate": int(a["bootstrap_degenerate"]),
        "method": _method(a),
        "pair_factor": float(a["bootstrap_pair_factor"]),
        "no_intervals": without_intervals(results),
    }  # fmt: skip
    if "pair" in results.dims:
        doc["comparisons"] = []
        for i, _ in enumerate(results.pair.values):
            item: dict[str, Any] = {"first": str(results.first.values[i]),
                                    "second": str(results.second.values[i])}  # fmt: skip
            note = _own_trials_note(results, item["first"], item["second"])
            if note:
                item["note"] = note
            for name in METRICS:
                item[name] = _compare(results, name, i)
            if "compare_cprimary_act" in results:
                item["cprimary"] = {kind: _compare(results, f"cprimary_{kind}", i)
                                    for kind in ("act", "min")}  # fmt: skip
            points = doc["systems"][0]["operating_points"]
            item["operating_points"] = [
                {**_point_of(point), **{name: _compare(results, name, i, at) for name in PER_POINT}}
                for point, at in zip(points, ops, strict=True)
            ]  # fmt: skip
            if "condition_compare_eer" in results:
                item["conditions"] = [
                    {"by": cond["by"],
                     **{name: _compare(results, name, i, g=g) for name in METRICS},
                     "operating_points": [
                         {**_point_of(point),
                          **{name: _compare(results, name, i, at, g) for name in PER_POINT}}
                         for point, at in zip(points, ops, strict=True)]}
                    for g, cond in enumerate(doc["systems"][0].get("conditions", []))
                ]  # fmt: skip
            if "condition_compare_cprimary_act" in results:
                for g, cond in enumerate(item["conditions"]):
                    cond["cprimary"] = {kind: _compare(results, f"cprimary_{kind}", i, g=g)
                                        for kind in ("act", "min")}  # fmt: skip
            if "compare_equalized_eer" in results:
                item["equalized"] = {
                    "eer": _compare(results, "equalized_eer", i),
                    "operating_points": [
                        {**_point_of(point),
                         **{name: _compare(results, f"equalized_{name}", i, at)
                            for name in PER_POINT}}
                        for point, at in zip(points, ops, strict=True)]}  # fmt: skip
            if "compare_equalized_cprimary_act" in results:
                item.setdefault("equalized", {})["cprimary"] = {
                    kind: _compare(results, f"equalized_cprimary_{kind}", i)
                    for kind in ("act", "min")}  # fmt: skip
            doc["comparisons"].append(item)
    return doc


def _cprimary_json(
    entry: dict[str, Any], results: xr.Dataset, prefix: str, k: int, g: int | None = None
) -> None:
    """Add ``"act_ci"``, ``"min_ci"`` and ``"min_ci_resolution"`` to an entry's
    ``"cprimary"`` (where it has one)."""
    cprimary = entry.get("cprimary")
    if cprimary is None or f"{prefix}cprimary_act_ci" not in results:
        return
    at = (k,) if g is None else (k, g)
    for kind in ("act", "min"):
        cprimary[kind + "_ci"] = _pair(results[f"{prefix}cprimary_{kind}_ci"].values[at])
    resolution = f"{prefix}cprimary_min_ci_resolution"
    if resolution in results:
        cprimary["min_ci_resolution"] = json_float(results[resolution].values[at])


def _own_trials_note(results: xr.Dataset, first: str, second: str) -> str | None:
    """What a comparison of systems that miss key trials (``allow_missing``) compares: each
    system on the trials it scores, so the pair is of resamples, not of trials."""
    if "n_missing" not in results:
        return None
    missing = [int(results.n_missing.sel(system=s)) for s in (first, second)]
    if not any(missing):
        return None
    return (
        f"each system on its own scored trials ({first} misses {missing[0]} key trials, "
        f"{second} {missing[1]}): the resamples are paired, not the trials"
    )


def _compare(
    results: xr.Dataset, name: str, i: int, at: int | None = None, g: int | None = None
) -> dict[str, Any]:
    def pick(var: str) -> Any:
        prefix = "compare_" if g is None else "condition_compare_"
        v = results[f"{prefix}{name}{var}"].values[i]
        v = v if g is None else v[g]
        return v if at is None else v[at]

    out = {"diff": json_float(pick("")), "diff_ci": _pair(pick("_ci")),
           "p_first_better": json_float(pick("_p_better"))}  # fmt: skip
    if f"compare_{name}_resolution" in results:
        out["diff_resolution"] = json_float(pick("_resolution"))
    return out


#: Why a condition whose resamples are all its data scaled gets no interval.
WHOLE = ("no intervals: every resample holds this condition's trials in the data's proportions "
         "(they are of one resampled group, drawn whole or not at all), so its metrics are the "
         "data's in every resample")  # fmt: skip


def _left_out_notes(results: xr.Dataset) -> list[str]:
    """Lines saying how many resamples drew no target or no non-target (pooled, and per
    condition where any did): they are left out of the intervals; and which conditions get
    none, their resamples being copies of their data (:data:`WHOLE`)."""
    b = int(results.attrs["bootstrap"])
    lines = []
    degenerate = int(results.attrs["bootstrap_degenerate"])
    lacking = (results.n_target.values == 0) | (results.n_nontarget.values == 0)
    if degenerate == b and lacking.all():  # (a condition's view) no resample could hold both
        lines.append("  no intervals: no target or no non-target here")
    elif degenerate:
        lines.append(f"  {degenerate} of the {b} resamples drew no target or no non-target and "
                     "are left out of the intervals")  # fmt: skip
    if "condition_bootstrap_degenerate" in results:
        left = results.condition_bootstrap_degenerate.values.max(axis=0)
        labels = [str(c) for c in results.condition.values]
        some = [f"{label} {int(n)}" for label, n in zip(labels, left, strict=True) if 0 < n < b]
        if some:
            lines.append(f"  per condition, left out of its intervals: {', '.join(some)}")
    if "bootstrap_whole" in results and results.bootstrap_whole.values.any():  # a condition's
        lines.append(f"  {WHOLE}")
    if "condition_bootstrap_whole" in results:
        whole = results.condition_bootstrap_whole.values.any(axis=0)
        labels = [str(c) for c, w in zip(results.condition.values, whole, strict=True) if w]
        if labels:
            shown = ", ".join(labels[:5]) + (f" and {len(labels) - 5} more" if len(labels) > 5
                                             else "")  # fmt: skip
            lines.append(
                f"  per condition, no intervals where every resample holds the condition's "
                f"trials in the data's proportions (one resampled group): {shown}"
            )
    return lines


#: Results a bootstrap gives no interval, by the variable that says they were computed.
_WITHOUT_INTERVALS = (
    ("prbep", "PRBEP"),
    ("ece", "the ECE"),
    ("fixed_fmr_fnmr", "the fixed-FMR points"),
    ("fixed_fnmr_fmr", "the fixed-FNMR points"),
)


def without_intervals(results: xr.Dataset) -> list[str]:
    """What the evaluation reports that its bootstrap gives no interval: PRBEP (a count, which
    a resample's number of trials changes), the ECE, the fixed-FMR/FNMR points (the resamples'
    coarse bins cannot place a threshold at FMR 1e-4) and the exact AUC."""
    names = [name for var, name in _WITHOUT_INTERVALS if var in results]
    if "auc" in results and np.isfinite(results.auc.values).any():
        names.append("the AUC")
    return names


def format_block(results: xr.Dataset) -> list[str]:
    """Text lines: each system's intervals, then each comparison."""
    a = results.attrs
    names = [str(n) for n in results.system.values]
    width = max(6, *(len(n) for n in names))
    ops = reported_positions(results)
    point_names = _point_names(results)
    level = f"{100 * float(a['ci']):g}%"
    kind = "two-way resamples" if len(a["resample"]) > 1 else "resamples"
    drawn = "; Poisson draws" if a.get("bootstrap_method") == "poisson" else ""
    lines = ["", f"{level} bootstrap intervals ({a['bootstrap']} {kind} of "
             f"{' x '.join(a['resample'])}, seed {a['bootstrap_seed']}{drawn}; "
             "percentile)"]  # fmt: skip
    uncovered = without_intervals(results)
    if uncovered:
        said = ", ".join(uncovered[:-1]) + (" and " if len(uncovered) > 1 else "") + uncovered[-1]
        lines.append(f"  of the pooled metrics (and per condition): {said} "
                     f"{'have' if len(uncovered) > 1 else 'has'} none")  # fmt: skip
    lines += _left_out_notes(results)
    cells = [_LABELS[metric] for metric in METRICS] + [
        f"{n} {label}" for label in point_names for n in ("act", "min")
    ]
    col = 17
    cprimary = "cprimary_min_ci" in results  # its minimum is binned too
    lines.append(
        "  bins -R: EER, minCllr, minDCF and the Cal loss (Cllr minus that minCllr)"
        + (", and Cprimary's minimum," if cprimary else "")
        + " are the bootstrap bins'; the exact bootstrap's interval ends are at most R below "
        "these (+R: above; a bound)"
    )
    lines.append(f"{'system':<{width}}" + "".join(f"  {c:>{col}}" for c in cells))
    for k, name in enumerate(names):
        row, below = [], []
        for metric in METRICS:
            scale = 100 if metric == "eer" else 1
            lo, hi = results[metric + "_ci"].values[k] * scale
            row.append(_interval(lo, hi))
            below.append(_below(results, metric, (k,), scale))
        for at in ops:
            for metric in PER_POINT:
                row.append(_interval(*results[metric + "_ci"].values[k, at]))
                below.append(_below(results, metric, (k, at), 1))
        lines.append(f"{name:<{width}}" + "".join(f"  {c:>{col}}" for c in row))
        lines.append(f"{'  bins':<{width}}" + "".join(f"  {c:>{col}}" for c in below))
    if "pair" in results.dims:
        lines += [
            "",
            f"paired differences first - second: value [{level} interval] "
            "(fraction of resamples where the first is lower)",
        ]
        resolutions = [
            str(v)
            for v in results.data_vars
            if str(v).startswith("compare_") and str(v).endswith("_resolution")
        ]
        if any(float(np.nansum(results[v].values)) > 0 for v in resolutions):
            equalized = any(v.startswith("compare_equalized_") for v in resolutions)
            lines.append(
                "  bins ±R: the resamples' EER, minCllr, Cal loss and minDCF"
                + (" (and Cprimary's)" if cprimary else "")
                + (", equalized too," if equalized else "")
                + " are the bootstrap bins'; each resample's difference is within R of its exact "
                "one (a bound): a difference within ±R is not resolved"
            )
        for i, label in enumerate(results.pair.values):
            if all(np.isnan(results[f"compare_{m}"].values[i]) for m in METRICS):
                lines.append(f"{label}: none (a system without targets or non-targets here)")
                continue
            parts = [_compare_part(results, metric, i, None, _LABELS[metric]) for metric in METRICS]
            parts += [
                _compare_part(results, metric, i, at, f"{_SHORT[metric]} {point}")
                for at, point in zip(ops, point_names, strict=True)
                for metric in PER_POINT
            ]
            if "compare_equalized_eer" in results:
                parts.append(_compare_part(results, "equalized_eer", i, None, "equalized EER (%)"))
                parts += [_compare_part(results, f"equalized_{metric}", i, at,
                                        f"equalized {_SHORT[metric]} {point}")
                          for at, point in zip(ops, point_names, strict=True)
                          for metric in PER_POINT]  # fmt: skip
            for of, label_of in (("", "Cprimary"), ("equalized_", "equalized Cprimary")):
                if f"compare_{of}cprimary_act" in results:
                    parts += [
                        _compare_part(
                            results, f"{of}cprimary_{kind}", i, None, f"{label_of} {kind}"
                        )
                        for kind in ("act", "min")
                    ]
            lines.append(f"{label}:")
            lines += [f"  {p}" for p in parts]
    return lines


#: The DCFs' names in the table.
_SHORT = {"act_dcf": "actDCF", "min_dcf": "minDCF"}


def _compare_part(results: xr.Dataset, metric: str, i: int, at: int | None, label: str) -> str:
    """One comparison's line for ``metric`` (pair ``i``, operating point ``at``): the exact
    difference, its interval and the fraction of resamples where the first is better (an EER
    in percent)."""

    def pick(var: str) -> Any:
        v = results[f"compare_{metric}{var}"].values[i]
        return v if at is None else v[at]

    scale = 100 if metric.endswith("eer") else 1
    d, (lo, hi) = float(pick("")) * scale, pick("_ci") * scale
    return f"{label} {d:+.3f} " + _diff_interval(
        lo, hi, float(pick("_p_better")), _bins(results, metric, i, at, scale)
    )


def _below(results: xr.Dataset, metric: str, at: tuple[int, ...], scale: float) -> str:
    """``-R`` under a binned metric's interval (``at``: its system and operating point; ``+R``
    where the exact ends are above), else ``""``."""
    var = f"{metric}_ci_resolution"
    if metric not in BINNED or var not in results:
        return ""
    r = float(results[var].values[at]) * scale
    sign = "+" if metric in BINNED_BELOW else "-"
    return "" if np.isnan(r) else "0" if r == 0 else f"{sign}{r:.3f}"


def _diff_interval(lo: float, hi: float, p: float, bins: str) -> str:
    """A difference's ``[lo, hi] (p; bins ±R)``; ``(no interval)`` where it has none."""
    if np.isnan(lo) and np.isnan(hi):
        return "(no interval)"
    return f"[{lo:+.3f}, {hi:+.3f}] ({p:.2f}{bins})"


def _interval(lo: float, hi: float) -> str:
    """``[lo, hi]`` to three decimals; ``none`` where there is no interval (no targets or no
    non-targets)."""
    return "none" if np.isnan(lo) and np.isnan(hi) else f"[{lo:.3f}, {hi:.3f}]"


def _bins(results: xr.Dataset, metric: str, i: int, at: int | None, scale: float) -> str:
    """``"; bins ±R"`` for a binned metric of a comparison, else ``""`` (also where ``R`` is 0:
    the two systems' binned values are the same in every resample)."""
    var = f"compare_{metric}_resolution"
    if var not in results:
        return ""
    v = results[var].values[i]
    r = float(v if at is None else v[at])
    return f"; bins ±{r * scale:.3f}" if r else ""
