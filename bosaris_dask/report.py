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

import xarray as xr

__all__ = ["to_json_dict", "format_table"]

_OP_FIELDS = ("act_dcf", "min_dcf", "act_dcf_raw", "min_dcf_raw",
              "act_pmiss", "act_pfa", "min_pmiss", "min_pfa")  # fmt: skip


def _number(x: Any) -> float | int | None:
    value = x.item() if hasattr(x, "item") else x
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def to_json_dict(results: xr.Dataset) -> dict[str, Any]:
    """The evaluation as the documented JSON structure (``bosaris-dask evaluate --json``).

    ``{"systems": [{"name", "n_target", "n_nontarget", "n_missing", "eer", "prbep", "cllr",
    "min_cllr", "operating_points": [{"prior", "act_dcf", "min_dcf", "act_dcf_raw",
    "min_dcf_raw", "act_pmiss", "act_pfa", "min_pmiss", "min_pfa"}]}], "passes": N}``;
    ``act_dcf``/``min_dcf`` are normalized by ``min(p, 1 - p)``.
    """
    systems = []
    for name in results.system.values:
        r = results.sel(system=name)
        ops = [
            {"prior": float(p), **{f: _number(r[f].sel(prior=p)) for f in _OP_FIELDS}}
            for p in results.prior.values
        ]
        systems.append(
            {
                "name": str(name),
                "n_target": int(r.n_target),
                "n_nontarget": int(r.n_nontarget),
                "n_missing": int(r.n_missing),
                "eer": _number(r.eer),
                "prbep": _number(r.prbep),
                "cllr": _number(r.cllr),
                "min_cllr": _number(r.min_cllr),
                "operating_points": ops,
            }
        )
    return {"systems": systems, "passes": int(results.attrs.get("passes", 0))}


def _prior_label(p: float) -> str:
    return f"P={p:g}"


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
    names = [str(n) for n in results.system.values]
    width = max(6, *(len(n) for n in names))
    head = (f"{'system':<{width}}  {'targets':>12}  {'non-targets':>14}  {'EER (%)':>8}  "
            f"{'PRBEP':>10}  {'Cllr (bits)':>11}  {'minCllr (bits)':>14}")  # fmt: skip
    lines = [head]
    for name in names:
        r = results.sel(system=name)
        lines.append(
            f"{name:<{width}}  {int(r.n_target):>12,}  {int(r.n_nontarget):>14,}  "
            f"{100 * float(r.eer):>8.3f}  {float(r.prbep):>10.3f}  {float(r.cllr):>11.3f}  "
            f"{float(r.min_cllr):>14.3f}"
        )
        if int(r.n_missing):
            lines.append(
                f"{'':<{width}}  ({int(r.n_missing):,} key trials without a score dropped)"
            )
    lines += ["", "normalized actDCF / minDCF at each effective prior"]
    cells = [_prior_label(float(p)) for p in results.prior.values]
    col = max(15, *(len(c) for c in cells))
    lines.append(f"{'system':<{width}}" + "".join(f"  {c:>{col}}" for c in cells))
    for name in names:
        r = results.sel(system=name)
        row = [
            f"{float(a):.3f} / {float(m):.3f}"
            for a, m in zip(r.act_dcf.values, r.min_dcf.values, strict=True)
        ]
        lines.append(f"{name:<{width}}" + "".join(f"  {c:>{col}}" for c in row))
    return "\n".join(lines)
