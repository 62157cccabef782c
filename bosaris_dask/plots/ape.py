"""APE curves and the Cllr decomposition: ``Cllr = minCllr + calibration loss``.

The **APE** (applied probability of error) plot draws the *un-normalized* Bayes error rate
``p * Pmiss + (1 - p) * Pfa`` against ``plo = logit(p)``: the actual error of the scores used as
LLRs (solid), the minimum over thresholds (dashed), and ``min(p, 1 - p)``, the error of deciding
by the prior alone (grey, dotted). Its point: the area under the actual curve, over all ``plo``,
is Cllr, and the area under the minimum curve is minCllr::

    Cllr    = 1 / (2 ln 2) * integral of actDCF_raw(plo) d plo
    minCllr = 1 / (2 ln 2) * integral of minDCF_raw(plo) d plo

(a target with LLR ``s`` is missed for ``plo < -s``, at cost ``sigmoid(plo)``, whose integral is
``ln(1 + e^-s)``, the target's term of Cllr; the minimum curve is the actual curve of the
PAV-calibrated LLRs). So the area *between* the curves is the calibration loss, and the area
under the grey curve, ``2 ln 2``, is the 1 bit of a system that says nothing.

:func:`cllr_plot` shows the same decomposition as bars, one per system.

Examples
--------
>>> import numpy as np, matplotlib
>>> matplotlib.use("Agg")
>>> from bosaris_dask.metrics import evaluate_arrays
>>> rng = np.random.default_rng(0)
>>> ds = evaluate_arrays(rng.normal(3, 1, 500), rng.normal(0, 1, 5000) - 1, name="demo")
>>> ax = cllr_plot(ds)
>>> [round(float(p.get_width()), 3) for p in ax.patches]  # minCllr, then calibration loss
[0.089, 0.261]
>>> round(float(ds.cllr[0]), 3)
0.35
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from scipy.special import expit

from bosaris_dask.metrics import sweep_points
from bosaris_dask.plots._common import (
    LEGEND_OUTSIDE,
    Results,
    curves,
    finish_curve_axes,
    new_axes,
)

__all__ = ["ape_plot", "cllr_plot"]


def ape_plot(
    results: Results,
    *,
    ax: Axes | None = None,
    systems: Sequence[str] | None = None,
    xlim: tuple[float, float] | None = None,
    default: bool = True,
    legend: bool = True,
    title: str | None = None,
) -> Axes:
    """Draw APE curves: actual and minimum Bayes error rates along the sweep.

    Parameters
    ----------
    results
        An evaluation Dataset, or a mapping of them by name.
    ax
        Axes to draw on (a new figure if None).
    systems
        Names of the systems to draw (default: all).
    xlim
        Prior log-odds range (default: the whole sweep).
    default
        Draw ``min(p, 1 - p)``, the error of deciding by the prior alone.
    legend
        Add a legend (systems with Cllr and minCllr in bits).
    title
        Axes title.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes; lines carry gids ``ape/act/LABEL``, ``ape/min/LABEL`` and ``ape/default``,
        with x = the sweep's ``plo`` and y = ``act_dcf_raw`` / ``min_dcf_raw`` there
        (:func:`~bosaris_dask.metrics.sweep_points`).
    """
    ax = new_axes(ax, (8.0, 4.2))
    chosen = curves(results, systems, ax, "ape")
    plo = np.asarray(sweep_points(chosen[0].data).plo.values, dtype=np.float64)
    for c in chosen:
        sweep = sweep_points(c.data)
        x = sweep.plo.values
        label = (f"{c.label}: Cllr {float(c.data.cllr):.3f}, "
                 f"minCllr {float(c.data.min_cllr):.3f} bits")  # fmt: skip
        ax.plot(x, sweep.act_dcf_raw.values, color=c.color, linewidth=1.8, label=label,
                zorder=3, gid=f"ape/act/{c.label}")  # fmt: skip
        ax.plot(x, sweep.min_dcf_raw.values, color=c.color, linewidth=1.5,
                linestyle="--", zorder=3, gid=f"ape/min/{c.label}")  # fmt: skip
    if default and not any(line.get_gid() == "ape/default" for line in ax.get_lines()):
        ax.plot(plo, np.minimum(expit(plo), expit(-plo)), color="0.5", linestyle=":",
                linewidth=1.3, zorder=2, gid="ape/default")  # fmt: skip
    ax.set_xlim(*(xlim if xlim is not None else (float(plo.min()), float(plo.max()))))
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel(r"Prior log-odds  $\log\,\frac{p}{1-p}$")
    ax.set_ylabel("Bayes error rate")
    finish_curve_axes(
        ax,
        title=title,
        legend=legend,
        solid="actual (area: Cllr)",
        dashed="minimum (minCllr)",
        dotted="prior only (1 bit)" if default else None,
    )
    return ax


def cllr_plot(
    results: Results,
    *,
    ax: Axes | None = None,
    systems: Sequence[str] | None = None,
    legend: bool = True,
    title: str | None = None,
) -> Axes:
    """Draw ``Cllr = minCllr + calibration loss`` as one horizontal bar per system.

    The solid part of a bar is minCllr (what the best monotone calibration would leave: the
    discrimination), the hatched part the calibration loss ``Cllr - minCllr``; the dotted line
    at 1 bit is a system that says nothing (all LLRs 0).

    Parameters
    ----------
    results
        An evaluation Dataset, or a mapping of them by name.
    ax
        Axes to draw on (a new figure if None).
    systems
        Names of the systems to draw (default: all), top to bottom.
    legend
        Add a legend explaining the two parts.
    title
        Axes title.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes; bars are ``ax.patches`` with gids ``cllr/min/LABEL`` (width minCllr) and
        ``cllr/loss/LABEL`` (starting at minCllr, width ``Cllr - minCllr``).
    """
    ax = new_axes(ax, (8.0, 1.2 + 0.5 * _count(results, systems)))
    chosen = curves(results, systems, ax, "cllr")
    rows = np.arange(len(chosen))[::-1] + len(
        {p.get_y() for p in ax.patches if isinstance(p, Rectangle)}
    )
    top = 1.0
    for c, y in zip(chosen, rows, strict=True):
        cllr, mincllr = float(c.data.cllr), float(c.data.min_cllr)
        loss = cllr - mincllr
        ax.barh(y, mincllr, height=0.6, color=c.color, edgecolor="black", linewidth=0.6,
                gid=f"cllr/min/{c.label}")  # fmt: skip
        ax.barh(y, loss, left=mincllr, height=0.6, color=c.color, alpha=0.35, hatch="///",
                edgecolor="black", linewidth=0.6, gid=f"cllr/loss/{c.label}")  # fmt: skip
        total, least = round(cllr, 3), round(mincllr, 3)  # the loss their difference: it adds up
        ax.annotate(f"{total:.3f} = {least:.3f} + {total - least:.3f}", (cllr, y), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8)  # fmt: skip
        top = max(top, cllr)
    ax.axvline(1.0, color="0.5", linestyle=":", linewidth=1.2, zorder=0, gid="cllr/one-bit")
    labels = {int(round(p.get_y() + p.get_height() / 2)): gid.split("/", 2)[2]
              for p in ax.patches if isinstance(p, Rectangle) and (gid := p.get_gid())}  # fmt: skip
    ax.set_yticks(sorted(labels), [labels[k] for k in sorted(labels)])
    ax.set_xlim(0.0, max(ax.get_xlim()[1], 1.3 * top))
    ax.set_ylim(min(labels) - 0.6, max(labels) + 0.6)
    ax.set_xlabel("Cllr (bits) = minCllr + calibration loss")
    if title:
        ax.set_title(title)
    if legend:
        ax.legend(
            [Patch(facecolor="0.6", edgecolor="black"),
             Patch(facecolor="0.6", alpha=0.35, hatch="///", edgecolor="black"),
             Line2D([], [], color="0.5", linestyle=":")],
            ["minCllr (discrimination)", "calibration loss", "1 bit: no information"],
            **LEGEND_OUTSIDE,
        )  # fmt: skip
    return ax


def _count(results: Results, systems: Sequence[str] | None) -> int:
    """How many bars :func:`cllr_plot` will draw (to size a new figure)."""
    sets = [results] if isinstance(results, xr.Dataset) else list(results.values())
    if systems is not None:
        return len(systems) * len(sets)
    return sum(int(ds.sizes.get("system", 1)) for ds in sets)
