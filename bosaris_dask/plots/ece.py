"""The empirical cross-entropy (ECE) plot of forensic likelihood ratios (lir's ECE plot).

For each system: the ECE of its LLRs as given (solid) and after the optimal monotone (PAV)
calibration (dashed), against the prior log-odds; the neutral ``LR = 1`` (grey, dotted) is the
prior entropy. A system whose solid curve rises above the neutral one at some prior does worse
than reporting no evidence there; the gap between solid and dashed is the calibration loss
(at prior log-odds 0 the curves are Cllr and minCllr). Definitions: :mod:`bosaris_dask.ece`.

The results come from :func:`bosaris_dask.metrics.evaluate` with ``ece_plo`` (what
``bosaris-dask plot ece`` runs). With ``attrs["llr_base"]`` (``--llr-base 10``) the x axis is
in log10 prior odds, as lir draws it.

Examples
--------
>>> import numpy as np, matplotlib
>>> matplotlib.use("Agg")
>>> from bosaris_dask.metrics import evaluate_arrays
>>> rng = np.random.default_rng(0)
>>> ds = evaluate_arrays(rng.normal(2, 1.5, 300), rng.normal(-2, 1.5, 3000), name="demo",
...                      ece_plo=np.linspace(-6, 6, 49))
>>> ax = ece_plot(ds)
>>> sorted(line.get_gid() for line in ax.get_lines())
['ece/neutral', 'ece/pav/demo', 'ece/raw/demo']
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes

from bosaris_dask.errors import PlotError
from bosaris_dask.llr_base import log_of_base
from bosaris_dask.plots._common import (
    Results,
    curves,
    finish_curve_axes,
    log_label,
    new_axes,
)

__all__ = ["ece_plot", "ECE_YMAX"]

#: The y axis (bits) ends at most a little above this: a badly calibrated system's ECE grows
#: without bound at extreme priors, and the neutral curve (at most 1 bit) must stay readable.
ECE_YMAX = 2.0

_log = logging.getLogger("bosaris_dask.plots")


def ece_plot(
    results: Results,
    *,
    ax: Axes | None = None,
    systems: Sequence[str] | None = None,
    xlim: tuple[float, float] | None = None,
    neutral: bool = True,
    legend: bool = True,
    title: str | None = None,
) -> Axes:
    """Draw ECE curves: raw and PAV-calibrated LLRs of each system, and the neutral LR = 1.

    Parameters
    ----------
    results
        An evaluation Dataset with ``ece``, ``ece_pav`` and ``ece_neutral`` (``evaluate(...,
        ece_plo=...)``), or a mapping of them by name.
    ax
        Axes to draw on (a new figure if None).
    systems
        Names of the systems to draw (default: all).
    xlim
        Prior log-odds range, in the units of the x axis (default: the whole grid).
    neutral
        Draw the ECE of the neutral ``LR = 1``.
    legend
        Add a legend (systems with Cllr and minCllr in bits).
    title
        Axes title.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes; lines carry gids ``ece/raw/LABEL``, ``ece/pav/LABEL`` and ``ece/neutral``,
        with x = ``ece_plo`` (divided by ``ln(base)`` with an ``llr_base``) and y in bits.

    Raises
    ------
    PlotError
        Results without the ECE variables.
    """
    ax = new_axes(ax, (8.0, 4.2))
    chosen = curves(results, systems, ax, "ece")
    # a grid of one or two points draws no visible curve: mark the points
    marker = "o" if min(c.data.sizes.get("ece_plo", 0) for c in chosen) < 3 else None
    top = 0.0
    x = np.empty(0)
    base = "e"
    for c in chosen:
        if "ece" not in c.data:
            raise PlotError("no ECE in these results: evaluate with ece_plo (plot ece does)")
        base = str(c.data.attrs.get("llr_base", "e"))
        x = np.asarray(c.data.ece_plo.values, dtype=np.float64) / log_of_base(base)
        label = (f"{c.label}: Cllr {float(c.data.cllr):.3f}, "
                 f"minCllr {float(c.data.min_cllr):.3f} bits")  # fmt: skip
        raw, pav = c.data.ece.values, c.data.ece_pav.values
        ax.plot(x, raw, color=c.color, linewidth=1.8, label=label, zorder=3,
                gid=f"ece/raw/{c.label}", marker=marker)  # fmt: skip
        ax.plot(x, pav, color=c.color, linewidth=1.5, linestyle="--", zorder=3,
                gid=f"ece/pav/{c.label}", marker=marker, markerfacecolor="white")  # fmt: skip
        top = max(top, float(np.max(raw)), float(np.max(c.data.ece_neutral.values)))
    if neutral and not any(line.get_gid() == "ece/neutral" for line in ax.get_lines()):
        ax.plot(x, chosen[-1].data.ece_neutral.values, color="0.5", linestyle=":",
                linewidth=1.3, zorder=2, gid="ece/neutral", marker=marker)  # fmt: skip
    lo, hi = float(x.min()), float(x.max())
    ax.set_xlim(*(xlim if xlim is not None else (lo, hi) if lo < hi else (lo - 1.0, hi + 1.0)))
    # a badly calibrated system's ECE grows without bound at extreme priors: the y axis ends
    # at 2 bits at most, so the neutral curve (at most 1 bit) stays readable; a curve above
    # it says so
    ax.set_ylim(0.0, max(min(top, ECE_YMAX), 0.05) * 1.05)  # (all 0 bits: an axis still)
    _label_clipped(ax, ax.get_xlim(), ax.get_ylim()[1])
    ax.set_xlabel(f"Prior log-odds  {log_label(base)}" + r"$\,\frac{P(H_p)}{P(H_d)}$")
    ax.set_ylabel("Empirical cross-entropy (bits)")
    finish_curve_axes(
        ax,
        title=title,
        legend=legend,
        solid="LLRs as given",
        dashed="after PAV calibration",
        dotted="neutral LR = 1" if neutral else None,
    )
    return ax


def _label_clipped(ax: Axes, xlim: tuple[float, float], top: float) -> None:
    """Say in the legend entry of each raw ECE curve that goes above ``top`` within ``xlim``
    how high it goes, and log a note with the prior log-odds where it peaks."""
    for line in ax.get_lines():
        gid = str(line.get_gid())
        if not gid.startswith("ece/raw/"):
            continue
        x = np.asarray(line.get_xdata(), dtype=np.float64)
        y = np.asarray(line.get_ydata(), dtype=np.float64)
        inside = np.flatnonzero((x >= xlim[0]) & (x <= xlim[1]) & ~np.isnan(y))
        if not len(inside) or not y[inside].max() > top:
            continue
        i = inside[int(np.argmax(y[inside]))]
        note = f"ECE above the axis, up to {y[i]:.3g} bits"
        if note not in line.get_label():
            line.set_label(f"{line.get_label()} ({note})")
            _log.info(
                "ece plot: %s's ECE reaches %.3g bits at prior log-odds %.3g, above the y "
                "axis (top %.3g bits): clipped",
                gid[len("ece/raw/") :],
                y[i],
                x[i],
                top,
            )
