"""The partition-equalized metrics in the reports: a system's JSON entry and the table's lines.

The values are those :func:`bosaris_dask.conditions.equalized.add_to_dataset` puts in the result
Dataset (``equalized_*``, with ``equalized_*_ci`` after a bootstrap).
"""

from __future__ import annotations

from typing import Any

import xarray as xr

from bosaris_dask.report import json_float

__all__ = ["json_entry", "format_block"]


def json_entry(results: xr.Dataset, system: Any) -> dict[str, Any]:
    """A system's ``"equalized"`` JSON entry: ``{"by", "eer", "operating_points": [{"prior",
    "act_dcf", "min_dcf"}]}`` (a stated point also ``"p_target"``, ``"c_miss"``, ``"c_fa"``,
    as the main ``"operating_points"`` name it; and ``"cprimary": {"act", "min", "priors"}``
    with Cprimary)."""
    from bosaris_dask.metrics import operating_points

    r = results.sel(system=system)
    points = operating_points(r)
    costs = [c for c in ("p_target", "c_miss", "c_fa") if c in points.variables]
    entry: dict[str, Any] = {
        "by": list(results.attrs.get("equalized_by", [])),
        "eer": json_float(r.equalized_eer),
        "operating_points": [
            {"prior": float(points.prior[i]),
             **{c: float(points[c][i]) for c in costs},
             "act_dcf": json_float(points.equalized_act_dcf[i]),
             "min_dcf": json_float(points.equalized_min_dcf[i])}
            for i in range(points.sizes["prior"])
        ],
    }  # fmt: skip
    if "equalized_cprimary_act" in r:
        entry["cprimary"] = {"act": json_float(r.equalized_cprimary_act),
                             "min": json_float(r.equalized_cprimary_min),
                             "priors": list(results.attrs["cprimary_priors"])}  # fmt: skip
    return entry


def format_block(results: xr.Dataset) -> list[str]:
    """The table's lines for the equalized metrics (empty without them)."""
    if "equalized_eer" not in results:
        return []
    from bosaris_dask.metrics import operating_points
    from bosaris_dask.report import cprimary_intervals, point_labels, shown

    names = [str(n) for n in results.system.values]
    width = max(6, *(len(n) for n in names))
    points = operating_points(results)
    by = " x ".join(results.attrs.get("equalized_by", []))
    cells = point_labels(points.prior.values, points)
    rows = [[f"{shown(float(a))} / {shown(float(m))}"
             for a, m in zip(r.equalized_act_dcf.values, r.equalized_min_dcf.values, strict=True)]
            for r in (points.sel(system=name) for name in names)]  # fmt: skip
    col = max(15, *(len(c) for c in cells), *(len(c) for row in rows for c in row))
    lines = [
        "",
        f"partition-equalized over {by}: EER, then normalized actDCF / minDCF",
        f"{'system':<{width}}  {'EER (%)':>8}" + "".join(f"  {c:>{col}}" for c in cells),
    ]
    for name, row in zip(names, rows, strict=True):
        eer = shown(100 * float(results.equalized_eer.sel(system=name)))
        lines.append(f"{name:<{width}}  {eer:>8}" + "".join(f"  {c:>{col}}" for c in row))
        if "equalized_cprimary_act" in results:
            rr = results.sel(system=name)
            cprimary = (f"Cprimary {shown(float(rr.equalized_cprimary_act))} / "
                        f"{shown(float(rr.equalized_cprimary_min))}")  # fmt: skip
            if "equalized_cprimary_act_ci" in rr:
                cprimary += cprimary_intervals(
                    results, rr.equalized_cprimary_act_ci.values,
                    rr.equalized_cprimary_min_ci.values,
                    rr.get("equalized_cprimary_min_ci_resolution"),
                )  # fmt: skip
            lines.append(f"{'':<{width}}  {cprimary}")
        if "equalized_eer_ci" in results:
            lines.append(f"{'':<{width}}  " + _interval_line(results, points, name, cells))
    return lines


def _interval_line(results: xr.Dataset, points: xr.Dataset, name: str, cells: list[str]) -> str:
    """A system's bootstrap intervals of the equalized metrics, as one line."""
    from bosaris_dask.report import interval_text as pair

    r, p = results.sel(system=name), points.sel(system=name)
    parts = [f"EER (%) {pair(r.equalized_eer_ci.values, 100.0)}"] + [
        f"{cell} {pair(act)} / {pair(mn)}"
        for cell, act, mn in zip(cells, p.equalized_act_dcf_ci.values,
                                 p.equalized_min_dcf_ci.values, strict=True)
    ]  # fmt: skip
    return f"{100 * float(results.attrs['ci']):g}% intervals: " + ", ".join(parts)
