"""Turning an evaluation Dataset into what people read: a text table and a JSON document.

Examples
--------
>>> import numpy as np
>>> from bosaris_dask.metrics import evaluate_arrays
>>> ds = evaluate_arrays(np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.0, 1.5]), priors=[0.5])
>>> doc = to_json_dict(ds)
>>> doc["systems"][0]["operating_points"][0]["min_dcf"]
0.3333333333333333
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr

from bosaris_dask.fixed_rates import unmeasurable_note
from bosaris_dask.llr_base import log_of_base
from bosaris_dask.metrics import operating_points
from bosaris_dask.result_layout import check_evaluation

__all__ = ["to_json_dict", "format_table"]

_OP_FIELDS = ("act_dcf", "min_dcf", "act_dcf_raw", "min_dcf_raw",
              "act_pmiss", "act_pfa", "min_pmiss", "min_pfa", "min_threshold")  # fmt: skip
_OP_COORDS = ("p_target", "c_miss", "c_fa", "act_threshold")


def _number(x: Any) -> float | int | None:
    value = x.item() if hasattr(x, "item") else x
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or infinity
    return value


def to_json_dict(results: xr.Dataset) -> dict[str, Any]:
    """The evaluation as the documented JSON structure (``bosaris-dask evaluate --json``).

    ``{"systems": [{"name", "n_target", "n_nontarget", "n_missing", "eer", "prbep", "cllr",
    "min_cllr", "cllr_cal", "auc", "auc_low", "auc_high", "auc_rocch", "operating_points":
    [{"prior", "p_target", "c_miss", "c_fa", "act_threshold", "act_dcf", "min_dcf",
    "act_dcf_raw", "min_dcf_raw", "act_pmiss", "act_pfa", "min_pmiss", "min_pfa",
    "min_threshold", "act_cdet", "min_cdet"}]}], "passes": N}``; with Cprimary priors each
    system also has ``"cprimary": {"act", "min", "priors"}``, and with conditions
    ``"conditions": [{"by": {spec: value}, ...}]``: one entry per condition with the keys of the
    system's own entry (``by`` instead of ``name``; ``null`` metrics for a condition without
    targets or non-targets); with ``equalize``, ``"equalized": {"by", "eer", "operating_points":
    [{"prior", "act_dcf", "min_dcf"}]}`` (and ``"cprimary"`` with Cprimary priors); with
    bootstrap intervals, ``"eer_ci": [low, high]`` etc. and ``"bootstrap"``, ``"comparisons"``
    (:mod:`bosaris_dask.bootstrap.report`); with ``ece_plo`` (``evaluate --ece``), ``"ece":
    {"plo", "raw", "pav", "neutral"}``: the prior log-odds of the grid (natural, or in the base
    of ``results.attrs["llr_base"]``, as the thresholds) and the empirical cross-entropy in bits
    there of the LLRs as given, PAV-calibrated and ``LR = 1`` (:mod:`bosaris_dask.ece`; ``raw``
    at ``plo`` 0 is ``cllr``; each condition entry has its own, from its own trials); with
    ``exact_auc`` (``evaluate --exact-auc``) beyond its budget, ``"auc_notes"``: why ``auc`` is
    ``null``;
    ``prior`` is the effective prior of the operating point ``(p_target, c_miss, c_fa)``;
    ``act_dcf``/``min_dcf`` are normalized by ``min(p, 1 - p)`` (the same number as the DCF in
    cost units normalized by ``min(p_target c_miss, (1 - p_target) c_fa)``); ``*_dcf_raw`` are
    Bayes error rates at the effective prior, ``p Pmiss + (1 - p) Pfa``, and ``act_cdet``/
    ``min_cdet`` the DCF in cost units, ``c_miss p_target Pmiss + c_fa (1 - p_target) Pfa``
    (NIST's C_det; equal to ``_raw`` for unit costs). ``act_threshold``
    is the Bayes threshold ``-logit(prior)`` actDCF applies; ``min_threshold`` is a score
    threshold attaining minDCF (accept iff ``score >= threshold``), ``null`` when the optimum
    accepts every trial (``-inf``: ``min_pmiss`` is 0) or rejects every trial (``+inf``).
    """
    systems = _systems_json(check_evaluation(results, "to_json_dict", per_system=True))
    if "condition" in results.dims:
        from bosaris_dask.conditions.evaluation import condition_result

        for g in range(results.sizes["condition"]):
            view = condition_result(results, g)
            for system, entry in zip(systems, _systems_json(view), strict=True):
                entry.pop("name")
                system.setdefault("conditions", []).append({"by": view.attrs["by"], **entry})
    doc = {"systems": systems, "passes": int(results.attrs.get("passes", 0))}
    if results.attrs.get("auc_notes"):  # exact AUC asked for, not computed (bounds)
        doc["auc_notes"] = list(results.attrs["auc_notes"])
    if "eer_ci" in results:
        from bosaris_dask.bootstrap.report import add_json

        add_json(doc, results)
    return doc


def _with_cdet(point: dict[str, Any]) -> dict[str, Any]:
    """An operating point's entry with ``act_cdet`` and ``min_cdet``: the DCF in cost units,
    ``c_miss p_target Pmiss + c_fa (1 - p_target) Pfa`` (NIST's C_det), which is the Bayes
    error rate at the effective prior (``*_dcf_raw``) times ``c_miss p_target + c_fa (1 -
    p_target)``. Without stated costs (a prior alone) the costs are 1 and C_det is ``_raw``."""
    p, c_miss, c_fa = (point.get(k, d) for k, d in (("p_target", point["prior"]),
                                                   ("c_miss", 1.0), ("c_fa", 1.0)))  # fmt: skip
    scale = c_miss * p + c_fa * (1.0 - p)
    for which in ("act", "min"):
        raw = point.get(f"{which}_dcf_raw")
        if f"{which}_dcf_raw" in point:
            point[f"{which}_cdet"] = None if raw is None else raw * scale
    return point


def _systems_json(results: xr.Dataset) -> list[dict[str, Any]]:
    systems = []
    points = operating_points(results)
    for name in results.system.values:
        r = points.sel(system=name)
        # each point by position in numpy arrays (a .sel per value and point was most of a
        # report's time with a few hundred conditions)
        coords = {c: points[c].values for c in _OP_COORDS if c in points.coords}
        fields = {f: r[f].transpose("prior").values for f in _OP_FIELDS if f in r}
        ops = [
            _with_cdet({
                "prior": float(p),
                **{c: _number(v[i]) for c, v in coords.items()},
                **{f: _number(v[i]) for f, v in fields.items()},
            })
            for i, p in enumerate(points.prior.values)
        ]  # fmt: skip
        entry = {
            "name": str(name),
            "n_target": int(r.n_target),
            "n_nontarget": int(r.n_nontarget),
            "n_missing": int(r.n_missing),
            "eer": _number(r.eer),
            "prbep": _number(r.prbep),
            "cllr": _number(r.cllr),
            "min_cllr": _number(r.min_cllr),
            "cllr_cal": _number(r.cllr_cal) if "cllr_cal" in r else None,
            **{f: _number(r[f]) for f in ("auc", "auc_low", "auc_high", "auc_rocch") if f in r},
            "operating_points": ops,
        }
        for side in ("fmr", "fnmr"):
            if f"fixed_{side}_threshold" in r:
                entry[f"fixed_{side}"] = _fixed_json(r, side)
        if "cprimary_act" in r:
            entry["cprimary"] = {
                "act": _number(r.cprimary_act),
                "min": _number(r.cprimary_min),
                "priors": list(results.attrs["cprimary_priors"]),
            }
        if "ece" in r:
            entry["ece"] = _ece_json(results, r)
        if "equalized_eer" in results:
            from bosaris_dask.conditions.equalized import json_entry

            entry["equalized"] = json_entry(results, name)
        systems.append(entry)
    return systems


def _ece_json(results: xr.Dataset, r: xr.Dataset) -> dict[str, list[Any]]:
    """One system's ECE curves: ``{"plo", "raw", "pav", "neutral"}`` (bits; ``plo`` in the
    results' LLR base)."""
    curves = {"raw": r.ece, "pav": r.ece_pav, "neutral": results.ece_neutral}
    factor = log_of_base(results.attrs.get("llr_base", "e"))
    return {
        "plo": [float(a) / factor for a in results.ece_plo.values],
        **{k: [_number(v) for v in c.values] for k, c in curves.items()},
    }


def _fixed_note(r: xr.Dataset, side: str, target: float) -> str | None:
    """Why a fixed-rate point has no finite threshold (``None`` when it has one)."""
    t = float(r[f"fixed_{side}_threshold"].sel({f"{side}_target": target}))
    if math.isfinite(t):
        return None
    n = int(r.n_nontarget if side == "fmr" else r.n_target)
    if math.isnan(t) and not n * int(r.n_target if side == "fmr" else r.n_nontarget):
        return "no targets or no non-targets"
    if math.isnan(t):
        return unmeasurable_note(target, n, side.upper())
    return "ties: only rejecting every trial meets the target"


def _fixed_json(r: xr.Dataset, side: str) -> list[dict[str, Any]]:
    out = []
    for target in r[f"{side}_target"].values:
        at = {f"{side}_target": target}
        item: dict[str, Any] = {"target": float(target)}
        item |= {k: _number(r[f"fixed_{side}_{k}"].sel(at)) for k in ("threshold", "fmr", "fnmr")}
        note = _fixed_note(r, side, float(target))
        if note:
            item["note"] = note
        out.append(item)
    return out


def _fixed_lines(results: xr.Dataset, names: list[str], width: int, side: str) -> list[str]:
    """The fixed-FMR (TAR = 1 - FNMR) or fixed-FNMR table of :func:`format_table`."""
    if f"fixed_{side}_threshold" not in results:
        return []
    if side == "fmr":
        title = ("TAR = 1 - FNMR at fixed FMR (threshold: the smallest score with "
                 "FMR <= target; accept iff score >= threshold)")  # fmt: skip
        cols = ("FMR target", "threshold", "actual FMR", "FNMR", "TAR")
    else:
        title = ("FMR at fixed FNMR (threshold: the largest score with FNMR <= target; "
                 "accept iff score >= threshold)")  # fmt: skip
        cols = ("FNMR target", "threshold", "FMR", "actual FNMR", "TAR")
    rows = []
    for name in names:
        r = results.sel(system=name)
        for target in r[f"{side}_target"].values:
            at = {f"{side}_target": target}
            t, fmr, fnmr = (float(r[f"fixed_{side}_{k}"].sel(at))
                            for k in ("threshold", "fmr", "fnmr"))  # fmt: skip
            cells = [f"{target:g}", shown_threshold(t), f"{fmr:.6g}", f"{fnmr:.6g}",
                     f"{1 - fnmr:.6g}"]  # fmt: skip
            if math.isnan(t):
                cells = [cells[0]] + ["n/a"] * 4
            note = _fixed_note(r, side, float(target))
            rows.append((name, cells, note))
    wide = [max([11, *(len(cells[k]) for _, cells, _ in rows)]) for k in range(len(cols))]
    lines = ["", title, f"{'system':<{width}}" + "".join(f"  {c:>{w}}" for c, w in
                                                         zip(cols, wide, strict=True))]  # fmt: skip
    for name, cells, note in rows:
        lines.append(f"{name:<{width}}" + "".join(f"  {c:>{w}}" for c, w in
                                                   zip(cells, wide, strict=True))
                     + (f"  ({note})" if note else ""))  # fmt: skip
    return lines


def _auc_lines(results: xr.Dataset, names: list[str], width: int) -> list[str]:
    """The AUC block of :func:`format_table` where the exact AUC was asked for
    (``evaluate --exact-auc``): the AUC, or its bounds where it stayed one."""
    if not results.attrs.get("exact_auc"):
        return []
    lines = ["", "AUC (exact Mann-Whitney, ties counted half)"]
    for name in names:
        r = results.sel(system=name)
        auc, low, high = float(r.auc), float(r.auc_low), float(r.auc_high)
        shown = (f"{auc:.6f}" if np.isfinite(auc) else f"{low:.6f}..{high:.6f} (bounds)"
                 if np.isfinite(low) else "undefined")  # fmt: skip
        lines.append(f"{name:<{width}}  {shown}")
    return lines


def _ece_lines(results: xr.Dataset, names: list[str], width: int) -> list[str]:
    """The ECE block of :func:`format_table`: raw / PAV-calibrated ECE at each operating point
    whose prior log-odds lies on the ECE grid (``evaluate --ece`` puts them all there), and
    the neutral ``LR = 1`` row."""
    if "ece" not in results:
        return []
    points = operating_points(results)
    grid = np.asarray(results.ece_plo.values, dtype=np.float64)
    cols = []
    for p, a in zip(points.prior.values, points.plo.values, strict=True):
        hit = np.flatnonzero(np.isclose(grid, float(a), rtol=0.0, atol=1e-12))
        if len(hit):
            cols.append((_point_label(points, p), int(hit[0])))
    head = ("empirical cross-entropy in bits, raw / PAV-calibrated LLRs (the difference is the "
            "calibration loss; at P=0.5: Cllr / minCllr)")  # fmt: skip
    if not cols:
        return ["", head + ": no operating point on the ECE grid (see the JSON)"]
    rows = [[_pair(float(r.ece[j]), float(r.ece_pav[j])) for _, j in cols]
            for r in (results.sel(system=name) for name in names)]  # fmt: skip
    rows.append([shown(float(results.ece_neutral[j])) for _, j in cols])
    col = max(15, *(len(label) for label, _ in cols), *(len(c) for row in rows for c in row))
    lines = ["", head, f"{'system':<{width}}" + "".join(f"  {c:>{col}}" for c, _ in cols)]
    for name, cells in zip([*names, "LR = 1"], rows, strict=True):
        lines.append(f"{name:<{width}}" + "".join(f"  {c:>{col}}" for c in cells))
    return lines


def _pair(raw: float, pav: float) -> str:
    if math.isnan(raw):
        return "n/a"
    return f"{shown(raw)} / {shown(pav)}"


def shown(value: float) -> str:
    """A metric in the text table: three decimals, or two significant digits where three
    decimals would show a value that is not 0 as ``0.000`` (a perfect-looking system), or
    three in exponent form from a million (the Cllr of LLRs near the float64 limit had 300
    digits).

    Examples
    --------
    >>> shown(0.0831), shown(5e-06), shown(0.00018), shown(0.0), shown(float("nan"))
    ('0.083', '5e-06', '0.00018', '0.000', 'nan')
    >>> shown(9.337840876355713e305), shown(12345.678)
    ('9.34e+305', '12345.678')
    """
    if value != 0 and abs(value) < 0.0005:
        return f"{value:.2g}"
    return f"{value:.3g}" if abs(value) >= 1e6 else f"{value:.3f}"


def shown_threshold(value: float) -> str:
    """A score threshold in the text table: six significant digits where they give the value
    back, else the shortest digits that do (in float32 where the value is a float32, as a
    float32 store's scores are), so that applying the printed threshold decides every trial
    as the table's rates say.

    Examples
    --------
    >>> shown_threshold(2.5), shown_threshold(1.0000000000454747)
    ('2.5', '1.0000000000454747')
    >>> shown_threshold(float(np.float32(0.1234567891)))
    '0.12345679'
    """
    short = f"{value:.6g}"
    if not math.isfinite(value) or float(short) == value:
        return short
    single = np.float32(value)
    return str(single) if float(single) == value else repr(float(value))


def _prior_label(p: float) -> str:
    return f"P={p:g}"


def _point_label(results: xr.Dataset, p: float) -> str:
    """``P=0.01`` for an effective prior, ``0.01:10:1`` for a point stated with costs."""
    if "c_miss" in results.coords:
        op = results.sel(prior=p)
        p_target, c_miss, c_fa = (float(op[c]) for c in ("p_target", "c_miss", "c_fa"))
        if (c_miss, c_fa) != (1.0, 1.0):
            return f"{p_target:g}:{c_miss:g}:{c_fa:g}"
    return _prior_label(float(p))


def format_table(results: xr.Dataset) -> str:
    """A plain-text report: one summary row per system, then actDCF/minDCF per operating point.

    Examples
    --------
    >>> import numpy as np
    >>> from bosaris_dask.metrics import evaluate_arrays
    >>> ds = evaluate_arrays(np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.0, 1.5]), priors=[0.5])
    >>> print(format_table(ds))  # doctest: +NORMALIZE_WHITESPACE
    system       targets     non-targets   EER (%)       PRBEP  Cllr (bits)  minCllr (bits)
    system             3               3    16.667       0.500        0.769           0.333
    <BLANKLINE>
    normalized actDCF / minDCF at each effective prior
    system            P=0.5
    system    0.667 / 0.333
    """
    names = [
        str(n) for n in check_evaluation(results, "format_table", per_system=True).system.values
    ]
    width = max(6, *(len(n) for n in names))
    head = (f"{'system':<{width}}  {'targets':>12}  {'non-targets':>14}  {'EER (%)':>8}  "
            f"{'PRBEP':>10}  {'Cllr (bits)':>11}  {'minCllr (bits)':>14}")  # fmt: skip
    lines = [head]
    for name in names:
        r = results.sel(system=name)
        lines.append(
            f"{name:<{width}}  {int(r.n_target):>12,}  {int(r.n_nontarget):>14,}  "
            f"{shown(100 * float(r.eer)):>8}  {shown(float(r.prbep)):>10}  "
            f"{shown(float(r.cllr)):>11}  {shown(float(r.min_cllr)):>14}"
        )
        if int(r.n_missing):
            lines.append(
                f"{'':<{width}}  ({int(r.n_missing):,} key trials without a score dropped)"
            )
    lines += ["", "normalized actDCF / minDCF at each effective prior"]
    points = operating_points(results)
    cells = [_point_label(points, p) for p in points.prior.values]
    rows = [[_pair(float(a), float(m)) for a, m in zip(r.act_dcf.values, r.min_dcf.values,
                                                        strict=True)]
            for r in (points.sel(system=name) for name in names)]  # fmt: skip
    col = max(15, *(len(c) for c in cells), *(len(c) for row in rows for c in row))
    lines.append(f"{'system':<{width}}" + "".join(f"  {c:>{col}}" for c in cells))
    for name, row in zip(names, rows, strict=True):
        lines.append(f"{name:<{width}}" + "".join(f"  {c:>{col}}" for c in row))
    for side in ("fmr", "fnmr"):
        lines += _fixed_lines(results, names, width, side)
    lines += _ece_lines(results, names, width)
    lines += _auc_lines(results, names, width)
    if "cprimary_act" in results:
        priors = ", ".join(f"{p:g}" for p in results.attrs["cprimary_priors"])
        lines += ["", f"Cprimary (mean normalized DCF over priors {priors}): actual / minimum"]
        for name in names:
            r = results.sel(system=name)
            lines.append(f"{name:<{width}}  {_pair(float(r.cprimary_act), float(r.cprimary_min))}")
    if "equalized_eer" in results:
        from bosaris_dask.conditions.equalized import format_block

        lines += format_block(results)
    if "eer_ci" in results:
        from bosaris_dask.bootstrap.report import format_block as format_intervals

        lines += format_intervals(results)
    if "condition" in results.dims:
        from bosaris_dask.conditions.evaluation import condition_result

        for g, label in enumerate(results.condition.values):
            view = condition_result(results, g)
            lines += ["", f"== condition {label} ==", format_table(view)]
            empty = [
                str(n)
                for n in view.system.values
                if not int(view.n_target.sel(system=n)) * int(view.n_nontarget.sel(system=n))
            ]
            if empty:
                lines.append(f"(no targets or no non-targets for {', '.join(empty)}: "
                             "their metrics are undefined)")  # fmt: skip
    return "\n".join(lines)
