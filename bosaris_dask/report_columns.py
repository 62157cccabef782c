"""The numbers a report prints, read from an evaluation Dataset once, as numpy arrays.

A report writes one entry per system, and per system and condition with ``--by``: with
tens of thousands of conditions, an xarray selection per condition and value (about 30 ms a
condition) was nearly all of a report's time. :func:`pooled_columns` and
:func:`condition_columns` read each variable once; a condition's columns are numpy views.

Examples
--------
>>> from bosaris_dask.metrics import evaluate_arrays
>>> ds = evaluate_arrays([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5], priors=[0.5, 0.1])
>>> cols = pooled_columns(ds)
>>> cols.names, cols.priors.tolist(), cols["min_dcf"].shape
(['system'], [0.5, 0.1], (1, 2))
>>> cols["n_target"][0].item(), "cprimary_act" in cols
(3, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from bosaris_dask.result_layout import reported_positions

__all__ = ["Columns", "pooled_columns", "condition_columns"]

#: The coordinates of the reported operating points a report shows (where present).
POINT_COORDS = ("plo", "p_target", "c_miss", "c_fa", "act_threshold")
#: The values every system shares that a report shows (where present).
GRIDS = ("fmr_target", "fnmr_target", "ece_plo", "ece_neutral")
#: Dimensions of the curves, which no report prints.
_CURVE_DIMS = {"vertex", "roc_point", "condition_vertex", "condition_roc_point"}


@dataclass(frozen=True)
class Columns:
    """Per-system values of an evaluation, or of one of its conditions.

    Attributes
    ----------
    names
        The systems' names.
    priors
        The effective priors of the reported operating points, in the order stated.
    points
        Their coordinates (:data:`POINT_COORDS`, those the results have), in the same order.
    arrays
        Each per-system variable with ``system`` first; along ``plo``, only the reported
        operating points, in the same order (the sweep's points are left out).
    grids
        What every system shares (:data:`GRIDS`, those the results have): the fixed-rate
        targets, the ECE grid and the neutral ECE curve.
    """

    names: list[str]
    priors: np.ndarray
    points: dict[str, np.ndarray]
    arrays: dict[str, np.ndarray]
    grids: dict[str, np.ndarray]

    def __contains__(self, name: object) -> bool:
        return name in self.arrays

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]


def _read(results: xr.Dataset, prefix: str, lead: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The variables named ``prefix + name`` with the ``lead`` dimensions, those first and
    ``plo`` last (cut to the reported points), as numpy arrays keyed by ``name``."""
    at = reported_positions(results)
    arrays = {}
    for var, values in results.data_vars.items():
        name = str(var)
        if not name.startswith(prefix) or not set(lead) <= set(values.dims):
            continue
        if _CURVE_DIMS & set(values.dims) or ({"condition"} & set(values.dims)) - set(lead):
            continue
        rest = [d for d in values.dims if d not in lead and d != "plo"]
        tail = ["plo"] if "plo" in values.dims else []
        array = values.transpose(*lead, *rest, *tail).values
        arrays[name[len(prefix) :]] = array[..., at] if tail else array
    return arrays


def _shared(results: xr.Dataset) -> dict[str, Any]:
    at = reported_positions(results)
    return {
        "names": [str(n) for n in results.system.values],
        "priors": results.prior.values[at],
        "points": {c: results[c].values[at] for c in POINT_COORDS if c in results.coords},
        "grids": {g: results[g].values for g in GRIDS if g in results.variables},
    }


def pooled_columns(results: xr.Dataset) -> Columns:
    """The pooled systems' columns of an evaluation (with a ``system`` dimension)."""
    return Columns(arrays=_read(results, "", ("system",)), **_shared(results))


def condition_columns(results: xr.Dataset, prefix: str = "condition_") -> list[Columns]:
    """One :class:`Columns` per condition of an evaluation with ``--by`` (variables
    ``condition_*`` along ``(system, condition)``), as views of the same arrays.

    Examples
    --------
    >>> from bosaris_dask.conditions import condition_table
    >>> from bosaris_dask.metrics import evaluate
    >>> from bosaris_dask.trials import make_key, make_scores
    >>> key = make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [-1, 1]])
    >>> scores = make_scores(["m1", "m2"], ["s1", "s2"], [[2.0, 0.5], [-1.0, 0.5]])
    >>> segs = condition_table("segment", ["s1", "s2"], {"lang": ["a", "b"]})
    >>> ds = evaluate(scores, key, conditions=[segs], by=["segment.lang"])
    >>> [c["n_target"].tolist() for c in condition_columns(ds)]
    [[1], [1]]
    """
    shared = _shared(results)
    arrays = _read(results, prefix, ("system", "condition"))
    return [
        Columns(arrays={k: v[:, g] for k, v in arrays.items()}, **shared)
        for g in range(results.sizes["condition"])
    ]
