"""Normalized Bayes error-rate (NBE) plots: actDCF and minDCF along a sweep of operating points.

x is the prior log-odds ``plo = logit(p)`` of the effective prior, y the normalized DCF (the
Bayes error rate divided by ``min(p, 1 - p)``, the error of a system that always decides by the
prior alone, drawn as the line ``y = 1``). Per system:

- **actDCF** (solid): the system's scores used as LLRs, threshold ``-plo``; it measures
  discrimination *and* calibration;
- **minDCF** (dashed): the best threshold at each ``plo``; the gap between the two curves is the
  calibration loss at that operating point;
- optionally the miss and false-alarm **contributions** to each curve (they add up to it);
- **DR30** marks on the minDCF curve: left of the ``<`` mark fewer than 30 false alarms, right of
  the ``>`` mark fewer than 30 misses, are behind minDCF (Doddington's rule of 30); when every
  system shares the key, the unreliable ranges are shaded.

Vertical dotted lines mark chosen operating points (by default the results' priors).

The y axis is BOSARIS's 0..1.2 (:data:`NBE_YLIM`), where the detail is (``ylim`` sets
another; ``plot nbe --ymax``). A badly calibrated system's actDCF can be far above 1 (at prior
log-odds -10, up to ``e^10``, 22,026 times the cost of deciding by the prior alone): a curve
above the top is clipped there, and says so: its legend entry reads e.g. ``"sys: actDCF above
the axis, up to 8,868"``, and a note naming the point and its error counts is logged (logger
``bosaris_dask.plots``, at INFO; the command line prints it).

Examples
--------
>>> import numpy as np, matplotlib
>>> matplotlib.use("Agg")
>>> from bosaris_dask.metrics import evaluate_arrays
>>> rng = np.random.default_rng(0)
>>> ds = evaluate_arrays(rng.normal(3, 1, 500), rng.normal(0, 1, 5000), name="demo")
>>> ax = nbe_plot(ds)
>>> [line.get_gid() for line in ax.get_lines()][:3]
['nbe/act/demo', 'nbe/min/demo', 'nbe/dr30-fa/demo']
>>> [float(v) for v in (*ax.get_xlim(), *ax.get_ylim())]
[-10.0, 1.0, 0.0, 1.2]
>>> off = evaluate_arrays(rng.normal(3, 1, 500) * 3, rng.normal(0, 1, 5000) * 3, name="x3")
>>> ax = nbe_plot(off)  # overconfident: its actDCF goes above the axis, and it says so
>>> [float(v) for v in ax.get_ylim()], ax.get_legend().get_texts()[0].get_text()
([0.0, 1.2], 'x3: actDCF above the axis, up to 11.9')
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import numpy as np
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from scipy.special import expit, logit

from bosaris_dask import metrics
from bosaris_dask.errors import PlotError
from bosaris_dask.plots._common import (
    Curve,
    Results,
    curves,
    dr30_sides,
    new_axes,
    outside_legend,
)

__all__ = ["nbe_plot", "contributions", "NBE_YLIM"]

#: The y axis (normalized DCF) while every drawn curve fits: BOSARIS's, where the detail is.
NBE_YLIM = (0.0, 1.2)


_log = logging.getLogger("bosaris_dask.plots")


def contributions(data: Any, which: str = "act") -> tuple[np.ndarray, np.ndarray]:
    """The miss and false-alarm parts of a normalized DCF sweep: ``miss + fa = DCF``.

    ``miss = p * Pmiss / min(p, 1 - p)`` and ``fa = (1 - p) * Pfa / min(p, 1 - p)`` along the
    sweep ``plo = logit(p)`` (:func:`~bosaris_dask.metrics.sweep_points`), for the ``"act"`` or
    ``"min"`` curve of one system.

    Examples
    --------
    >>> import numpy as np
    >>> from bosaris_dask.metrics import evaluate_arrays
    >>> ds = evaluate_arrays([1.0, 2.0, 3.0], [-1.0, 0.0, 1.5], sweep=np.array([-1.0, 0.0]))
    >>> miss, fa = contributions(ds.isel(system=0))
    >>> np.allclose(miss + fa, metrics.sweep_points(ds).act_dcf.isel(system=0))
    True
    """
    if which not in ("act", "min"):
        raise PlotError(f"which must be 'act' or 'min', not {which!r}")
    data = metrics.sweep_points(data)
    plo = np.asarray(data.plo.values, dtype=np.float64)
    norm = np.minimum(expit(plo), expit(-plo))
    miss = expit(plo) * data[f"{which}_pmiss"].values / norm
    fa = expit(-plo) * data[f"{which}_pfa"].values / norm
    return miss, fa


def nbe_plot(
    results: Results,
    *,
    ax: Axes | None = None,
    systems: Sequence[str] | None = None,
    xlim: tuple[float, float] | None = None,
    ylim: tuple[float, float] | None = None,
    act_dcf: bool = True,
    min_dcf: bool = True,
    contributions: bool = False,
    dr30: bool | Literal["both", "miss", "fa", "none"] = True,
    operating_points: Sequence[float] | None = None,
    default: bool = True,
    legend: bool = True,
    title: str | None = None,
) -> Axes:
    """Draw the normalized Bayes error-rate plot of one or more systems.

    Parameters
    ----------
    results
        An evaluation Dataset (:func:`bosaris_dask.metrics.evaluate`), or a mapping of them by
        name, e.g. ``{"dev": ..., "eval": ...}`` (labels become ``"system [dev]"``).
    ax
        Axes to draw on (a new figure if None). Drawing twice on one Axes adds curves in new
        colours.
    systems
        Names of the systems to draw, in order (default: all).
    xlim, ylim
        Axis limits: prior log-odds (default -10..1: the low-prior side, where speaker
        verification operates, up to just past ``P = 0.5``, widened to show every operating
        point, e.g. ``P = 0.9``) and normalized DCF (default 0..1.2, :data:`NBE_YLIM`, never
        lowered below the top of a plot already on ``ax``; a curve above the top is clipped
        and its legend entry says how high it goes). The sweep itself is set by ``evaluate``
        (default -10..10).
    act_dcf, min_dcf
        Draw the actDCF (solid) and minDCF (dashed) curves.
    contributions
        Also draw the miss (dotted) and false-alarm (dash-dot) parts of each drawn curve.
    dr30 : {True, False, "both", "miss", "fa", "none"}
        Mark where minDCF rests on fewer than 30 false alarms (``"fa"``) and/or misses
        (``"miss"``) (see module docstring); ``True`` is ``"both"``. The marks sit on the
        minDCF curve (none without it); the shading, where every system shares it, is drawn
        either way.
    operating_points
        Effective priors to mark with vertical lines (default: the results' priors; ``()`` for
        none).
    default
        Draw ``y = 1``, the normalized DCF of deciding by the prior alone.
    legend
        Add a legend outside the Axes, on the right (systems, then a key to line styles and
        marks), where it cannot hide a curve.
    title
        Axes title.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes. Lines carry gids ``nbe/act/LABEL``, ``nbe/min/LABEL``,
        ``nbe/act_miss/LABEL``, ``nbe/act_fa/LABEL`` (and ``min_`` ones), ``nbe/dr30-fa/LABEL``,
        ``nbe/dr30-miss/LABEL``, ``nbe/default``, ``nbe/operating-point``; the x data are the
        sweep's ``plo``.
    """
    if not (act_dcf or min_dcf):
        raise PlotError("draw at least one of the actDCF and minDCF curves")
    ax = new_axes(ax, (8.5, 4.8))
    sides = dr30_sides(dr30)
    chosen = curves(results, systems, ax, "nbe")
    if operating_points is None:
        operating_points = sorted(
            {float(p) for c in chosen for p in metrics.operating_points(c.data).prior.values}
        )
    if xlim is None:  # the classic -10..1, widened to show every operating point
        at = [float(logit(p)) for p in operating_points if 0 < float(p) < 1]
        xlim = (min([-10.0, *(x - 0.5 for x in at)]), max([1.0, *(x + 0.5 for x in at)]))
    if not (xlim[0] < xlim[1] and (ylim is None or ylim[0] < ylim[1])):
        raise PlotError(f"axis limits must increase, got xlim={xlim}, ylim={ylim}")
    earlier = ax.get_ylim()[1] if _highest(ax, xlim) else None  # a plot already on ax
    for c in chosen:
        _system(ax, c, act_dcf, min_dcf, contributions, sides)
    drawn = [which for which, on in (("act", act_dcf), ("min", min_dcf)) if on]
    peaks = {(c.label, which): _peak(c, which, xlim) for c in chosen for which in drawn}
    if ylim is None:
        ylim = NBE_YLIM
        if earlier is not None and earlier > ylim[1]:  # keep showing what is drawn already
            ylim = (ylim[0], earlier)
    _label_clipped(ax, xlim, ylim[1])
    for (label, which), peak in peaks.items():
        if peak.y > ylim[1]:
            _log.info("nbe plot: %s's %sDCF reaches %s at prior log-odds %.3g (%s false "
                      "alarm%s, %s miss%s), above the y axis (top %g): clipped", label, which,
                      _amount(peak.y), peak.x, f"{peak.fa:,}", "s"[: peak.fa != 1],
                      f"{peak.miss:,}", "es"[: 2 * (peak.miss != 1)], ylim[1])  # fmt: skip
    if sides:
        _dr30_spans(ax, chosen, xlim, sides)
    if default and not any(line.get_gid() == "nbe/default" for line in ax.get_lines()):
        ax.axhline(1.0, color="0.45", linewidth=1.0, linestyle=(0, (5, 3)), zorder=1,
                   gid="nbe/default")  # fmt: skip
    _operating_points(ax, operating_points, xlim)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel(r"Prior log-odds  $\log\,\frac{p}{1-p}$")
    ax.set_ylabel("Normalized DCF")
    ax.grid(True, color="0.9", linewidth=0.6)
    ax.set_axisbelow(True)
    if title:
        ax.set_title(title)
    if legend:
        _legend(ax, act_dcf, min_dcf, contributions, sides, default)
    return ax


class _Peak(NamedTuple):
    """A curve's highest point within the x window: ``y`` at ``x`` on ``fa`` false alarms and
    ``miss`` misses."""

    y: float
    x: float
    fa: int
    miss: int


def _peak(c: Curve, which: str, xlim: tuple[float, float]) -> _Peak:
    """The highest point of ``c``'s actDCF or minDCF curve within ``xlim`` (the note on a
    clipped curve gives its error counts: a good system's one false alarm at prior log-odds -10
    is worth ``e^10 / N``, far above 1.2; a badly calibrated system's high actDCF rests on
    many)."""
    sweep = metrics.sweep_points(c.data)
    plo = np.asarray(sweep.plo.values, dtype=np.float64)
    y = np.asarray(sweep[f"{which}_dcf"].values, dtype=np.float64)
    n_fa = np.rint(sweep[f"{which}_pfa"].values * float(c.data.n_nontarget))
    n_miss = np.rint(sweep[f"{which}_pmiss"].values * float(c.data.n_target))
    inside = np.flatnonzero((plo >= xlim[0]) & (plo <= xlim[1]) & ~np.isnan(y))
    if not len(inside):
        return _Peak(np.nan, np.nan, 0, 0)
    i = inside[int(np.argmax(y[inside]))]
    return _Peak(float(y[i]), float(plo[i]), int(n_fa[i]), int(n_miss[i]))


def _highest(
    ax: Axes, xlim: tuple[float, float], edges: bool = True
) -> dict[str, dict[str, float]]:
    """The highest value within ``xlim`` of every actDCF and minDCF line on ``ax`` (earlier
    calls' too): ``{label: {"act": y, "min": y}}``. A line that leaves the window is drawn up to
    its edge: its value there counts too where ``edges`` (else only the line's points: values
    of the evaluation, not interpolated). (The contributions are below their curve.)"""
    out: dict[str, dict[str, float]] = {}
    for line in ax.get_lines():
        parts = str(line.get_gid()).split("/", 2)
        if len(parts) != 3 or parts[0] != "nbe" or parts[1] not in ("act", "min"):
            continue
        x = np.asarray(line.get_xdata(), dtype=np.float64)
        y = np.asarray(line.get_ydata(), dtype=np.float64)
        x, y = x[~np.isnan(y)], y[~np.isnan(y)]
        ys = y[(x >= xlim[0]) & (x <= xlim[1])]
        if edges and len(x) > 1:
            ys = np.concatenate([ys, np.interp([e for e in xlim if x[0] < e < x[-1]], x, y)])
        if len(ys):
            out.setdefault(parts[2], {})[parts[1]] = float(ys.max())
    return out


def _amount(value: float) -> str:
    """A normalized DCF as the legend and the notes write it: three digits, whole numbers with
    thousands separators from 1,000 on.

    >>> _amount(9.7384), _amount(123.4), _amount(8867.9)
    ('9.74', '123', '8,868')
    """
    return f"{value:,.0f}" if value >= 999.5 else f"{value:.3g}"


def _label_clipped(ax: Axes, xlim: tuple[float, float], top: float) -> None:
    """Say in each system's legend entry which of its curves go above ``top``, and how high
    (every system on ``ax``: a later call may have moved the top)."""
    highest, exact = _highest(ax, xlim), _highest(ax, xlim, edges=False)
    for line in ax.get_lines():
        parts = str(line.get_gid()).split("/", 2)
        if len(parts) != 3 or parts[0] != "nbe" or str(line.get_label()).startswith("_"):
            continue
        peaks, points = highest.get(parts[2], {}), exact.get(parts[2], {})
        # clipped where the drawn line leaves the top; how far: the evaluation's own highest
        # value in the window (the log note's), else the line's at the window's edge
        said = [f"{which}DCF above the axis, up to "
                f"{_amount(points[which] if points.get(which, 0.0) > top else peaks[which])}"
                for which in ("act", "min") if peaks.get(which, 0.0) > top]  # fmt: skip
        line.set_label(f"{parts[2]}: {'; '.join(said)}" if said else parts[2])


def _system(ax: Axes, c: Curve, act: bool, min_: bool, parts: bool, dr30: Sequence[str]) -> None:
    sweep = metrics.sweep_points(c.data)
    plo = sweep.plo.values
    first = True
    for which, on, style in (("act", act, "-"), ("min", min_, "--")):
        if not on:
            continue
        ax.plot(plo, sweep[f"{which}_dcf"].values, color=c.color, linestyle=style,
                linewidth=1.8, label=c.label if first else "_nolegend_", zorder=3,
                gid=f"nbe/{which}/{c.label}")  # fmt: skip
        first = False
        if parts:
            miss, fa = contributions(c.data, which)
            for part, values, pstyle in (("miss", miss, ":"), ("fa", fa, "-.")):
                ax.plot(plo, values, color=c.color, linestyle=pstyle, linewidth=1.0, alpha=0.8,
                        zorder=2, gid=f"nbe/{which}_{part}/{c.label}")  # fmt: skip
    if dr30 and min_:  # the points of the minDCF curve (without it, the shading alone)
        curve = sweep.min_dcf
        for var, marker in (("dr30_fa_plo", "<"), ("dr30_miss_plo", ">")):
            at = float(c.data[var])
            if var.split("_")[1] not in dr30 or np.isnan(at):
                continue
            y = float(curve.sel(plo=at).values)
            ax.plot([at], [y], linestyle="none", marker=marker, markersize=8, color=c.color,
                    markeredgecolor="black", markeredgewidth=0.8, zorder=5,
                    gid=f"nbe/{var.replace('_plo', '').replace('_', '-')}/{c.label}")  # fmt: skip


def _dr30_spans(
    ax: Axes, chosen: Sequence[Curve], xlim: tuple[float, float], sides: Sequence[str]
) -> None:
    """Shade the unreliable ranges when every system shares them (one key). A system whose
    minDCF point never reaches 30 false alarms (misses) on the sweep (NaN: few non-targets or
    targets) is unreliable on all of it: the whole range is shaded."""
    for var, left in (("dr30_fa_plo", True), ("dr30_miss_plo", False)):
        if ("fa" if left else "miss") not in sides:
            continue
        nowhere = np.inf if left else -np.inf  # 30 errors reached nowhere: unreliable everywhere
        values = {nowhere if np.isnan(v) else v for v in (float(c.data[var]) for c in chosen)}
        if len(values) != 1:
            continue
        at = min(max(values.pop(), xlim[0]), xlim[1])
        lo, hi = (xlim[0], at) if left else (at, xlim[1])
        if lo < hi:
            ax.axvspan(lo, hi, color="0.5", alpha=0.08, linewidth=0, zorder=0,
                       gid=f"nbe/dr30-span-{'fa' if left else 'miss'}")  # fmt: skip


def _operating_points(ax: Axes, priors: Sequence[float], xlim: tuple[float, float]) -> None:
    for p in priors:
        p = float(p)
        if not 0 < p < 1:
            raise PlotError(f"operating points are effective priors in (0, 1), got {p}")
        x = float(logit(p))
        if not xlim[0] <= x <= xlim[1]:
            continue
        ax.axvline(x, color="0.35", linestyle=":", linewidth=1.0, zorder=1,
                   gid="nbe/operating-point")  # fmt: skip
        ax.annotate(f"P={p:g}", (x, 1.0), xycoords=("data", "axes fraction"), rotation=90,
                    xytext=(-2, -4), textcoords="offset points", ha="right", va="top",
                    fontsize=7.5, color="0.3")  # fmt: skip


def _legend(
    ax: Axes, act: bool, min_: bool, parts: bool, dr30: Sequence[str], default: bool
) -> None:
    handles, labels = ax.get_legend_handles_labels()
    black: dict[str, Any] = dict(color="0.2", linewidth=1.5)
    key: list[tuple[Line2D, str]] = []
    if act:
        key.append((Line2D([], [], linestyle="-", **black), "actDCF"))
    if min_:
        key.append((Line2D([], [], linestyle="--", **black), "minDCF"))
    if parts:
        thin: dict[str, Any] = dict(color="0.2", linewidth=1.0)
        key.append((Line2D([], [], linestyle=":", **thin), "miss part"))
        key.append((Line2D([], [], linestyle="-.", **thin), "false-alarm part"))
    if default:
        key.append((Line2D([], [], color="0.45", linestyle=(0, (5, 3))), "default (prior only)"))
    drawn = {str(a.get_gid()) for a in [*ax.get_lines(), *ax.patches]}
    mark: dict[str, Any] = dict(linestyle="none", color="0.6", markeredgecolor="black",
                                markersize=7)  # fmt: skip
    for side, marker, said in (("fa", "<", "< 30 false alarms to the left"),
                               ("miss", ">", "< 30 misses to the right")):  # fmt: skip
        if side in dr30 and any(g.startswith(f"nbe/dr30-{side}/") for g in drawn):
            key.append((Line2D([], [], marker=marker, **mark), said))  # only marks drawn
    if dr30 and any(g.startswith("nbe/dr30-span-") for g in drawn):
        key.append((Patch(color="0.5", alpha=0.08), "minDCF on < 30 errors"))
    outside_legend(ax, handles + [h for h, _ in key], labels + [label for _, label in key])
