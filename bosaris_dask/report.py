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
from bosaris_dask.report_columns import Columns, condition_columns, pooled_columns
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


def json_float(x: Any) -> float | None:
    """``x`` as a JSON number: a float, ``None`` where it is NaN or infinite (JSON has neither).

    >>> json_float(np.float32(0.5)), json_float(float("nan"))
    (0.5, None)
    """
    value = float(x)
    return value if math.isfinite(value) else None


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
    results = check_evaluation(results, "to_json_dict", per_system=True)
    systems = _systems_json(results, pooled_columns(results), pooled=True)
    if "condition" in results.dims:
        for by, columns in zip(_condition_by(results), condition_columns(results), strict=True):
            for system, entry in zip(systems, _systems_json(results, columns), strict=True):
                entry.pop("name")
                system.setdefault("conditions", []).append({"by": by, **entry})
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


def _condition_by(results: xr.Dataset) -> list[dict[str, str]]:
    """Each condition's ``{spec: value}`` (its ``"by"`` entry)."""
    specs = [str(b) for b in results.attrs["by"]]
    values = [results[spec].values for spec in specs]
    return [{spec: str(v[g]) for spec, v in zip(specs, values, strict=True)}
            for g in range(results.sizes["condition"])]  # fmt: skip


def _systems_json(
    results: xr.Dataset, columns: Columns, *, pooled: bool = False
) -> list[dict[str, Any]]:
    """The systems' JSON entries from their ``columns`` (pooled, or one condition's; the
    equalized metrics only ``pooled``)."""
    systems = []
    coords = {c: v for c, v in columns.points.items() if c in _OP_COORDS}
    fields = [f for f in _OP_FIELDS if f in columns]
    for k, name in enumerate(columns.names):
        ops = [
            _with_cdet({
                "prior": float(p),
                **{c: _number(v[i]) for c, v in coords.items()},
                **{f: _number(columns[f][k, i]) for f in fields},
            })
            for i, p in enumerate(columns.priors)
        ]  # fmt: skip

        def value(var: str, k: int = k) -> float | int | None:
            return _number(columns[var][k])

        entry = {
            "name": name,
            "n_target": int(columns["n_target"][k]),
            "n_nontarget": int(columns["n_nontarget"][k]),
            "n_missing": int(columns["n_missing"][k]),
            **{v: value(v) for v in ("eer", "prbep", "cllr", "min_cllr")},
            "cllr_cal": value("cllr_cal") if "cllr_cal" in columns else None,
            **{v: value(v) for v in ("auc", "auc_low", "auc_high", "auc_rocch") if v in columns},
            "operating_points": ops,
        }
        for side in ("fmr", "fnmr"):
            if f"fixed_{side}_threshold" in columns:
                entry[f"fixed_{side}"] = _fixed_json(columns, k, side)
        if "cprimary_act" in columns:
            entry["cprimary"] = {
                "act": value("cprimary_act"),
                "min": value("cprimary_min"),
                "priors": list(results.attrs["cprimary_priors"]),
            }
        if "ece" in columns:
            entry["ece"] = _ece_json(results, columns, k)
        if pooled and "equalized_eer" in results:
            from bosaris_dask.conditions.equalized_report import json_entry

            entry["equalized"] = json_entry(results, results.system.values[k])
        systems.append(entry)
    return systems


def _ece_json(results: xr.Dataset, columns: Columns, k: int) -> dict[str, list[Any]]:
    """System ``k``'s ECE curves: ``{"plo", "raw", "pav", "neutral"}`` (bits; ``plo`` in the
    results' LLR base)."""
    curves = {"raw": columns["ece"][k], "pav": columns["ece_pav"][k],
              "neutral": columns.grids["ece_neutral"]}  # fmt: skip
    factor = log_of_base(results.attrs.get("llr_base", "e"))
    return {
        "plo": [float(a) / factor for a in columns.grids["ece_plo"]],
        **{name: [_number(v) for v in c] for name, c in curves.items()},
    }


def _fixed_note(threshold: float, n_target: int, n_nontarget: int, side: str,
                target: float) -> str | None:  # fmt: skip
    """Why a fixed-rate point has no finite threshold (``None`` when it has one)."""
    if math.isfinite(threshold):
        return None
    if math.isnan(threshold) and not n_target * n_nontarget:
        return "no targets or no non-targets"
    if math.isnan(threshold):
        n = n_nontarget if side == "fmr" else n_target
        return unmeasurable_note(target, n, side.upper())
    return "ties: only rejecting every trial meets the target"


def _fixed_points(
    columns: Columns, k: int, side: str
) -> list[tuple[float, float, float, float, str | None]]:
    """System ``k``'s fixed-FMR (or fixed-FNMR) points: ``(target, threshold, fmr, fnmr,
    note)``."""
    n_target, n_nontarget = int(columns["n_target"][k]), int(columns["n_nontarget"][k])
    found = [columns[f"fixed_{side}_{v}"][k] for v in ("threshold", "fmr", "fnmr")]
    out = []
    for j, target in enumerate(columns.grids[f"{side}_target"]):
        t, fmr, fnmr = (float(v[j]) for v in found)
        note = _fixed_note(t, n_target, n_nontarget, side, float(target))
        out.append((float(target), t, fmr, fnmr, note))
    return out


def _fixed_json(columns: Columns, k: int, side: str) -> list[dict[str, Any]]:
    out = []
    for target, t, fmr, fnmr, note in _fixed_points(columns, k, side):
        item: dict[str, Any] = {"target": target}
        item |= {"threshold": _number(t), "fmr": _number(fmr), "fnmr": _number(fnmr)}
        if note:
            item["note"] = note
        out.append(item)
    return out


def _fixed_lines(columns: Columns, width: int, side: str) -> list[str]:
    """The fixed-FMR (TAR = 1 - FNMR) or fixed-FNMR table of :func:`format_table`."""
    if f"fixed_{side}_threshold" not in columns:
        return []
    if side == "fmr":
        title = ("TAR = 1 - FNMR at fixed FMR (threshold: the smallest score with "
                 "FMR <= target; accept iff score >= threshold)")  # fmt: skip
        heads = ("FMR target", "threshold", "actual FMR", "FNMR", "TAR")
    else:
        title = ("FMR at fixed FNMR (threshold: the largest score with FNMR <= target; "
                 "accept iff score >= threshold)")  # fmt: skip
        heads = ("FNMR target", "threshold", "FMR", "actual FNMR", "TAR")
    rows = []
    for k, name in enumerate(columns.names):
        for target, t, fmr, fnmr, note in _fixed_points(columns, k, side):
            cells = [f"{target:g}", shown_threshold(t), f"{fmr:.6g}", f"{fnmr:.6g}",
                     f"{1 - fnmr:.6g}"]  # fmt: skip
            if math.isnan(t):
                cells = [cells[0]] + ["n/a"] * 4
            rows.append((name, cells, note))
    wide = [max([11, *(len(cells[k]) for _, cells, _ in rows)]) for k in range(len(heads))]
    header = "".join(f"  {c:>{w}}" for c, w in zip(heads, wide, strict=True))
    lines = ["", title, f"{'system':<{width}}" + header]
    for name, cells, note in rows:
        lines.append(f"{name:<{width}}" + "".join(f"  {c:>{w}}" for c, w in
                                                   zip(cells, wide, strict=True))
                     + (f"  ({note})" if note else ""))  # fmt: skip
    return lines


def _auc_lines(results: xr.Dataset, columns: Columns, width: int) -> list[str]:
    """The AUC block of :func:`format_table` where the exact AUC was asked for
    (``evaluate --exact-auc``): the AUC, or its bounds where it stayed one."""
    if not results.attrs.get("exact_auc"):
        return []
    lines = ["", "AUC (exact Mann-Whitney, ties counted half)"]
    for k, name in enumerate(columns.names):
        auc, low, high = (float(columns[v][k]) for v in ("auc", "auc_low", "auc_high"))
        shown = (f"{auc:.6f}" if np.isfinite(auc) else f"{low:.6f}..{high:.6f} (bounds)"
                 if np.isfinite(low) else "undefined")  # fmt: skip
        lines.append(f"{name:<{width}}  {shown}")
    return lines


def _ece_lines(columns: Columns, width: int) -> list[str]:
    """The ECE block of :func:`format_table`: raw / PAV-calibrated ECE at each operating point
    whose prior log-odds lies on the ECE grid (``evaluate --ece`` puts them all there), and
    the neutral ``LR = 1`` row."""
    if "ece" not in columns:
        return []
    grid = np.asarray(columns.grids["ece_plo"], dtype=np.float64)
    cols = []
    for label, a in zip(_point_labels(columns), columns.points["plo"], strict=True):
        hit = np.flatnonzero(np.isclose(grid, float(a), rtol=0.0, atol=1e-12))
        if len(hit):
            cols.append((label, int(hit[0])))
    head = ("empirical cross-entropy in bits, raw / PAV-calibrated LLRs (the difference is the "
            "calibration loss; at P=0.5: Cllr / minCllr)")  # fmt: skip
    if not cols:
        return ["", head + ": no operating point on the ECE grid (see the JSON)"]
    rows = [[_pair(float(columns["ece"][k, j]), float(columns["ece_pav"][k, j]))
             for _, j in cols] for k in range(len(columns.names))]  # fmt: skip
    neutral = columns.grids["ece_neutral"]
    rows.append([shown(float(neutral[j])) for _, j in cols])
    col = max(15, *(len(label) for label, _ in cols), *(len(c) for row in rows for c in row))
    lines = ["", head, f"{'system':<{width}}" + "".join(f"  {c:>{col}}" for c, _ in cols)]
    for name, cells in zip([*columns.names, "LR = 1"], rows, strict=True):
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
    digits); ``n/a`` where it is undefined (NaN: no targets or no non-targets), as the DCF
    cells say.

    Examples
    --------
    >>> shown(0.0831), shown(5e-06), shown(0.00018), shown(0.0), shown(float("nan"))
    ('0.083', '5e-06', '0.00018', '0.000', 'n/a')
    >>> shown(9.337840876355713e305), shown(12345.678)
    ('9.34e+305', '12345.678')
    """
    if math.isnan(value):
        return "n/a"
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


def _point_labels(columns: Columns) -> list[str]:
    """:func:`point_labels` of the columns' operating points."""
    return point_labels(columns.priors, columns.points)


def point_labels(priors: Any, points: Any) -> list[str]:
    """Each operating point's label: ``P=0.01`` for an effective prior, ``0.01:10:1`` for a
    point stated with costs (``points``: a mapping holding ``p_target``, ``c_miss``, ``c_fa``
    where the evaluation has them, e.g. :func:`~bosaris_dask.operating_points`' view); with all
    their digits where six would show two points alike (priors 0.3 and 0.1 + 0.2 are two).

    Examples
    --------
    >>> point_labels([0.3, 0.1 + 0.2], {})
    ['P=0.3', 'P=0.30000000000000004']
    >>> point_labels([1 / 11], {"p_target": [0.01], "c_miss": [10.0], "c_fa": [1.0]})
    ['0.01:10:1']
    """

    def labels(number: Any) -> list[str]:
        out = []
        for i, p in enumerate(priors):
            label = f"P={number(p)}"
            if "c_miss" in points:
                p_target, c_miss, c_fa = (float(np.asarray(points[c])[i])
                                          for c in ("p_target", "c_miss", "c_fa"))  # fmt: skip
                if (c_miss, c_fa) != (1.0, 1.0):
                    label = f"{number(p_target)}:{number(c_miss)}:{number(c_fa)}"
            out.append(label)
        return out

    short = labels(lambda v: f"{float(v):g}")
    return short if len(set(short)) == len(short) else labels(lambda v: repr(float(v)))


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
    results = check_evaluation(results, "format_table", per_system=True)
    lines = _table_lines(results, pooled_columns(results))
    if "equalized_eer" in results:
        from bosaris_dask.conditions.equalized_report import format_block

        lines += format_block(results)
    if "eer_ci" in results:
        from bosaris_dask.bootstrap.report import format_block as format_intervals

        lines += format_intervals(results)
    if "condition" in results.dims:
        lines += _condition_lines(results)
    return "\n".join(lines)


def _table_lines(results: xr.Dataset, columns: Columns) -> list[str]:
    """The table's blocks of the systems' ``columns`` (pooled, or one condition's): counts and
    metrics, actDCF / minDCF, fixed rates, ECE, AUC and Cprimary."""
    names = columns.names
    width = max(6, *(len(n) for n in names))
    head = (f"{'system':<{width}}  {'targets':>12}  {'non-targets':>14}  {'EER (%)':>8}  "
            f"{'PRBEP':>10}  {'Cllr (bits)':>11}  {'minCllr (bits)':>14}")  # fmt: skip
    lines = [head]
    for k, name in enumerate(names):
        n_target, n_nontarget, n_missing = (
            int(columns[v][k]) for v in ("n_target", "n_nontarget", "n_missing")
        )
        eer, prbep, cllr, min_cllr = (
            float(columns[v][k]) for v in ("eer", "prbep", "cllr", "min_cllr")
        )
        lines.append(
            f"{name:<{width}}  {n_target:>12,}  {n_nontarget:>14,}  "
            f"{shown(100 * eer):>8}  {shown(prbep):>10}  {shown(cllr):>11}  {shown(min_cllr):>14}"
        )
        if n_missing:
            lines.append(f"{'':<{width}}  ({n_missing:,} key trials without a score dropped)")
    lines += ["", "normalized actDCF / minDCF at each effective prior"]
    cells = _point_labels(columns)
    rows = [[_pair(float(a), float(m)) for a, m in zip(columns["act_dcf"][k],
                                                        columns["min_dcf"][k], strict=True)]
            for k in range(len(names))]  # fmt: skip
    col = max(15, *(len(c) for c in cells), *(len(c) for row in rows for c in row))
    lines.append(f"{'system':<{width}}" + "".join(f"  {c:>{col}}" for c in cells))
    for name, row in zip(names, rows, strict=True):
        lines.append(f"{name:<{width}}" + "".join(f"  {c:>{col}}" for c in row))
    for side in ("fmr", "fnmr"):
        lines += _fixed_lines(columns, width, side)
    lines += _ece_lines(columns, width)
    lines += _auc_lines(results, columns, width)
    if "cprimary_act" in columns:
        priors = ", ".join(f"{p:g}" for p in results.attrs["cprimary_priors"])
        lines += ["", f"Cprimary (mean normalized DCF over priors {priors}): actual / minimum"]
        for k, name in enumerate(names):
            pair = _pair(float(columns["cprimary_act"][k]), float(columns["cprimary_min"][k]))
            if "cprimary_act_ci" in columns:
                resolution = (columns["cprimary_min_ci_resolution"][k]
                              if "cprimary_min_ci_resolution" in columns else None)  # fmt: skip
                pair += cprimary_intervals(results, columns["cprimary_act_ci"][k],
                                           columns["cprimary_min_ci"][k], resolution)  # fmt: skip
            lines.append(f"{name:<{width}}  {pair}")
    return lines


def cprimary_intervals(results: xr.Dataset, act: Any, minimum: Any, resolution: Any = None) -> str:
    """The bootstrap intervals after a Cprimary pair: ``  95% intervals [..] / [..]``, and the
    minimum's ``(bins -R)`` where its ends can be above the exact bootstrap's by ``R``."""
    text = (f"  {100 * float(results.attrs['ci']):g}% intervals {interval_text(act)} / "
            f"{interval_text(minimum)}")  # fmt: skip
    if resolution is not None and np.isfinite(resolution) and resolution > 0:
        text += f" (bins -{float(resolution):.3f})"
    return text


def interval_text(bounds: Any, scale: float = 1.0) -> str:
    """``[low, high]`` in the table's digits, or ``n/a``."""
    low, high = (float(v) * scale for v in bounds)
    return f"[{shown(low)}, {shown(high)}]" if math.isfinite(low) and math.isfinite(high) else "n/a"


def _condition_lines(results: xr.Dataset) -> list[str]:
    """One block of the table per condition: its label, then its own table."""
    intervals = "condition_eer_ci" in results
    if intervals:
        from bosaris_dask.bootstrap.report import format_block as format_intervals
        from bosaris_dask.conditions.evaluation import condition_result
    lines = []
    for g, (label, columns) in enumerate(
        zip(results.condition.values, condition_columns(results), strict=True)
    ):
        lines += ["", f"== condition {label} ==", *_table_lines(results, columns)]
        if intervals:  # (an xarray view of the condition: bootstrap runs are few)
            lines += format_intervals(condition_result(results, g))
        empty = [
            name
            for k, name in enumerate(columns.names)
            if not int(columns["n_target"][k]) * int(columns["n_nontarget"][k])
        ]
        if empty:
            lines.append(f"(no targets or no non-targets for {', '.join(empty)}: "
                         "their metrics are undefined)")  # fmt: skip
    return lines
