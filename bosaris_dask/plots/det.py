"""DET plots: steppy DET and ROCCH-DET curves on probit axes, with minDCF, EER and DR30 marks.

The DET curve is the ROC with both axes warped by :func:`~bosaris_dask.plots.axes.probit`
(false alarms on x, misses on y). Two curves can be drawn per system:

- the **ROCCH-DET** (default): each segment of the ROC convex hull, sampled at
  ``points_per_segment + 1`` points and warped, so it shows the curved image of the hull, the
  curve on which every minDCF operating point lies (Brümmer & de Villiers 2011, section 2.6);
- the **steppy DET**: the exact ROC points of the evaluation (``roc_pfa``, ``roc_pmiss``; thinned
  in probit space by :func:`bosaris_dask.metrics.steppy_roc`) joined by straight lines, or,
  where two are far apart (a run of tied scores), by their ROC segment sampled and warped
  (:func:`steppy_det_points`).

Marks: a filled marker per effective prior at the minDCF operating point (optionally a hollow
one at the actDCF operating point, where the system's own threshold ``-logit(p)`` lands), the
EER point on the diagonal ``Pmiss = Pfa``, and the DR30 lines ``Pfa = 30/N`` and
``Pmiss = 30/T`` (left of and below them, fewer than 30 errors are behind a rate), and the
biometric operating points of an evaluation with ``fmr``/``fnmr`` targets
(:mod:`bosaris_dask.fixed_rates`): a cross ("X") at each exact ``(FMR, FNMR)`` of a fixed-FMR
target and a plus ("P") at each fixed-FNMR one, listed under their system in the legend as
``"FMR 1e-3: FNMR 4.21%"`` (``"FNMR 1e-2: FMR 0.5%"``).

The Axes' data are probit coordinates: ``ax.lines[i].get_xydata()`` is
``probit([pfa, pmiss])`` of what is drawn.

Examples
--------
>>> import numpy as np, matplotlib
>>> matplotlib.use("Agg")
>>> from bosaris_dask.metrics import evaluate_arrays
>>> rng = np.random.default_rng(0)
>>> ds = evaluate_arrays(rng.normal(3, 1, 500), rng.normal(0, 1, 5000), name="demo")
>>> ax = det_plot(ds)
>>> [line.get_gid() for line in ax.get_lines()][:3]
['det/diagonal', 'det/curve/demo', 'det/eer/demo']
>>> ax.get_legend().get_texts()[0].get_text()
'demo (EER 5.90%)'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from matplotlib.axes import Axes
from matplotlib.lines import Line2D

from bosaris_dask.errors import PlotError
from bosaris_dask.metrics import curve as exact_curve
from bosaris_dask.metrics import operating_points
from bosaris_dask.plots._common import Results, curves, dr30_sides, new_axes
from bosaris_dask.plots.axes import Window, probit, resolve_window, set_det_axes
from bosaris_dask.plots.det_curves import FAR, det_xy, rocch_det_points, steppy_det_points
from bosaris_dask.report import point_labels

__all__ = ["rocch_det_points", "steppy_det_points", "det_xy", "auto_window", "det_plot",
           "PRIOR_MARKERS", "FIXED_RATE_MARKERS", "rate_label", "fixed_rate_label"]  # fmt: skip

#: Marker shapes of the operating points, in the order of the results' priors.
PRIOR_MARKERS = ("o", "s", "^", "D", "v", "p", "h", "<", ">")

# The EER mark: a star in the system's colour.
_EER_STYLE: dict[str, Any] = dict(
    linestyle="none", marker="*", markersize=12, markeredgecolor="black", markeredgewidth=0.8
)


def auto_window(results: Results, systems: Sequence[str] | None = None) -> Window:
    """A DET window fitted to the data: from half the DR30 rates up to the operating points.

    The lower limits are half of the smallest ``Pfa = 30/N`` and ``Pmiss = 30/T`` of the
    systems, rounded down to a 1-2-5 value (at least 1e-9, at most 10%: with 30 or fewer
    targets or non-targets, 30 errors are more than there are). The upper limits are 50%, or the
    next of 80%, 90%, 95%, 99% that holds every minDCF operating point lying within the other
    axis' limits.

    Examples
    --------
    >>> import numpy as np
    >>> from bosaris_dask.metrics import evaluate_arrays
    >>> rng = np.random.default_rng(0)
    >>> ds = evaluate_arrays(rng.normal(2, 1, 3000), rng.normal(0, 1, 300000))
    >>> [float(f"{v:.3g}") for v in auto_window(ds)]
    [5e-05, 0.5, 0.005, 0.95]
    """
    from matplotlib.figure import Figure

    chosen = curves(results, systems, Figure().add_subplot(), "auto")
    steps = np.array([m * 10.0**e for e in range(-9, 0) for m in (1.0, 2.0, 5.0)])
    lows = []
    for var in ("pfa30", "pmiss30"):
        # at most 10%: with 30 or fewer targets (non-targets) the DR30 rate is 100% or more
        value = min(max(0.5 * min(float(c.data[var]) for c in chosen), steps[0]), 0.1)
        lows.append(float(steps[steps <= value * (1 + 1e-9)][-1]))
    pfa = np.concatenate([operating_points(c.data).min_pfa.values for c in chosen])
    pmiss = np.concatenate([operating_points(c.data).min_pmiss.values for c in chosen])
    tops = np.array([0.5, 0.8, 0.9, 0.95, 0.99])
    highs = []
    for mine, other, other_lo in ((pfa, pmiss, lows[1]), (pmiss, pfa, lows[0])):
        need = mine[(other >= other_lo) & (mine < 1)]
        top = max(float(need.max()) if len(need) else 0.0, 0.5)
        highs.append(float(tops[min(int(np.searchsorted(tops, top * (1 - 1e-9))), len(tops) - 1)]))
    return lows[0], highs[0], lows[1], highs[1]


def _legend_proxy(**kwargs: Any) -> Line2D:
    return Line2D([], [], **kwargs)


def det_plot(
    results: Results,
    *,
    ax: Axes | None = None,
    systems: Sequence[str] | None = None,
    window: str | Sequence[float] = "classic",
    curve: Literal["rocch", "steppy", "both"] = "rocch",
    points_per_segment: int = 100,
    priors: Sequence[float] | None = None,
    min_dcf: bool = True,
    act_dcf: bool = False,
    eer: bool = True,
    dr30: bool | Literal["both", "miss", "fa", "none"] = True,
    fixed_rates: bool = True,
    legend: bool = True,
    title: str | None = None,
) -> Axes:
    """Draw DET curves of one or more systems on probit axes.

    Parameters
    ----------
    results
        An evaluation Dataset (:func:`bosaris_dask.metrics.evaluate`), or a mapping of them by
        name (e.g. ``{"dev": ..., "eval": ...}``; labels become ``"system [dev]"``).
    ax
        Axes to draw on (a new figure if None). Drawing twice on one Axes adds curves in new
        colours.
    systems
        Names of the systems to draw, in order (default: all).
    window : {"classic", "low_fa", "wide", "old", "new", "big", "sre10", "auto"} or limits
        The visible part of the DET, as probabilities ``(pfa_low, pfa_high, pmiss_low,
        pmiss_high)``, a string of them separated by commas, or a name
        (:data:`~bosaris_dask.plots.axes.DET_WINDOWS`, where the toolkit's are cited):

        - ``"classic"``: 0.05%..50% on both axes.
        - ``"low_fa"``: false alarms 0.0001%..20%, misses 0.1%..95% (``P_tar = 0.001`` work).
        - ``"wide"``: 0.0001%..99% on both axes.
        - the toolkit's ``"old"`` (= ``"classic"``), ``"new"`` (false alarms 0.0005%..0.5%,
          misses 1%..99%), ``"big"`` (0.0005%..99%) and ``"sre10"`` (false alarms
          0.0003%..50%, misses 0.03%..90%).
        - ``"auto"``: fitted to the data by :func:`auto_window`.
    curve : {"rocch", "steppy", "both"}
        - ``"rocch"``: the ROCCH-DET (where the minDCF points lie).
        - ``"steppy"``: the exact ROC points joined by lines.
        - ``"both"``: ROCCH-DET, with the steppy DET thinner and lighter.
    points_per_segment
        Samples per hull segment of the ROCCH-DET (see :func:`rocch_det_points`).
    priors
        Effective priors whose operating points are marked (default: all of the results');
        each must be one of the results' priors.
    min_dcf, act_dcf
        Mark the minDCF operating points (filled) and the actDCF ones (hollow).
    eer
        Mark the EER point and draw the diagonal ``Pmiss = Pfa``.
    dr30 : {True, False, "both", "miss", "fa", "none"}
        Draw the DR30 lines ``Pfa = 30/N`` (vertical, ``"fa"``) and/or ``Pmiss = 30/T``
        (horizontal, ``"miss"``); ``True`` is ``"both"``, ``False`` is ``"none"``.
    fixed_rates
        Mark the fixed-FMR and fixed-FNMR operating points the results hold (an evaluation
        with ``fmr=``/``fnmr=``, ``bosaris-dask plot det --fmr 1e-3``): each at its exact
        ``(actual FMR, FNMR)``, the point of the steppy DET where the threshold lands (ties
        can put the actual FMR below the target). The system's legend lists each, e.g.
        ``"FMR 1e-3: FNMR 4.21%"`` (with ``" (outside the window)"`` where it is), and the
        targets below one error among the trials as ``"FMR 1e-6: not measurable"``.
    legend
        Add a legend (systems with their EER, then a key to the marks).
    title
        Axes title.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes. Artists carry gids: ``det/curve/LABEL`` (ROCCH-DET, or the steppy DET when
        ``curve="steppy"``), ``det/steppy/LABEL``, ``det/eer/LABEL``, ``det/min_dcf/LABEL``,
        ``det/act_dcf/LABEL`` (one point per prior, in the results' prior order),
        ``det/fixed_fmr/LABEL``, ``det/fixed_fnmr/LABEL`` (one per target, in the results'
        order; no data where the target is not measurable), ``det/dr30-fa``,
        ``det/dr30-miss``, ``det/diagonal``.
    """
    if curve not in ("rocch", "steppy", "both"):
        raise PlotError(f"curve must be 'rocch', 'steppy' or 'both', not {curve!r}")
    ax = new_axes(ax, (6.0, 6.0))
    limits = auto_window(results, systems) if window == "auto" else resolve_window(window)
    chosen = curves(results, systems, ax, "det")
    visible: dict[int, str] = {}  # the marked priors seen in the window: their labels
    outside: dict[int, str] = {}  # and those marked outside it

    if eer and not any(line.get_gid() == "det/diagonal" for line in ax.get_lines()):
        ax.plot([-FAR, FAR], [-FAR, FAR], color="0.75", linewidth=0.8, zorder=1,
                gid="det/diagonal")  # fmt: skip

    for c in chosen:
        name = c.label if not eer else f"{c.label} (EER {100 * float(c.data.eer):.2f}%)"
        if curve in ("rocch", "both"):
            x, y = rocch_det_points(*exact_curve(c.data, None, "rocch"), limits,
                                    points_per_segment)  # fmt: skip
            ax.plot(x, y, color=c.color, linewidth=1.8, label=name, zorder=3,
                                    gid=f"det/curve/{c.label}")  # fmt: skip
        if curve in ("steppy", "both"):
            x, y = steppy_det_points(*exact_curve(c.data, None, "roc"), limits)
            main = curve == "steppy"
            ax.plot(
                x, y, color=c.color, zorder=2.5,
                linewidth=1.5 if main else 0.8, alpha=1.0 if main else 0.55,
                label=name if main else "_nolegend_",
                gid=f"det/curve/{c.label}" if main else f"det/steppy/{c.label}",
            )  # fmt: skip
        if eer:
            e = float(probit(float(c.data.eer)))
            ax.plot([e], [e], color=c.color, zorder=5, gid=f"det/eer/{c.label}", **_EER_STYLE)
        _operating_points(ax, c, priors, min_dcf, act_dcf, limits, visible, outside)
        if fixed_rates:
            _fixed_rate_marks(ax, c, limits)

    which = dr30_sides(dr30)
    too_few = _dr30_lines(ax, chosen, limits, which) if which else []
    set_det_axes(ax, limits)
    if title:
        ax.set_title(title)
    if legend:
        stars = [x for x in ax.get_lines() if str(x.get_gid()).startswith("det/eer/")]
        shown = any(np.isfinite(x.get_xydata()).all() for x in stars)  # EER 0: no star
        _legend(ax, _key(visible, min_dcf, act_dcf, eer and shown, bool(which), too_few,
                         outside))  # fmt: skip
    return ax


def _prior_indices(data: Any, priors: Sequence[float] | None) -> list[int]:
    all_priors = np.asarray(data.prior.values, dtype=np.float64)
    if priors is None:
        return list(range(len(all_priors)))
    out = []
    for p in priors:
        hit = np.flatnonzero(np.isclose(all_priors, float(p), rtol=1e-9, atol=0))
        if not len(hit):
            raise PlotError(f"prior {p} is not among the evaluated priors {all_priors.tolist()}")
        out.append(int(hit[0]))
    return out


def _operating_points(
    ax: Axes, c: Any, priors: Sequence[float] | None, min_dcf: bool, act_dcf: bool,
    limits: Window, visible: dict[int, str], outside: dict[int, str],
) -> None:  # fmt: skip
    """Mark minDCF (filled) and actDCF (hollow) points; note in ``visible`` the labels of the
    points seen (``P=0.01``, or ``0.01:10:1`` for a point stated with costs, as the tables),
    and in ``outside`` those of the points outside the window."""
    points = operating_points(c.data)
    labels = point_labels(points.prior.values, points)
    index = _prior_indices(points, priors)
    box = probit(np.array(limits)).reshape(2, 2)
    for which, on, filled in (("min", min_dcf, True), ("act", act_dcf, False)):
        if not on:
            continue
        xy = det_xy(points[f"{which}_pfa"].values[index], points[f"{which}_pmiss"].values[index])
        for i, (x, y) in zip(index, xy, strict=True):
            ax.plot([x], [y], markerfacecolor=c.color if filled else "white",
                    markeredgecolor="black" if filled else c.color,
                    zorder=6, gid=f"det/{which}_dcf/{c.label}", **_marker_style(i))  # fmt: skip
            seen = box[0, 0] <= x <= box[0, 1] and box[1, 0] <= y <= box[1, 1]
            (visible if seen else outside)[i] = labels[i]


#: The marks of the fixed-rate operating points: a cross at fixed FMR, a plus at fixed FNMR.
FIXED_RATE_MARKERS = {"fmr": "X", "fnmr": "P"}


def rate_label(rate: float) -> str:
    """A target rate as the IJB-C tables write it: ``1e-3`` below 0.1, else as is.

    Examples
    --------
    >>> rate_label(0.001), rate_label(5e-6), rate_label(0.0125), rate_label(0.1)
    ('1e-3', '5e-6', '1.25e-2', '0.1')
    """
    if rate >= 0.1:
        return f"{rate:g}"
    mantissa, exponent = f"{rate:.6e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def fixed_rate_label(side: str, target: float, fmr: float, fnmr: float) -> str:
    """The legend text of a fixed-FMR (``side="fmr"``) or fixed-FNMR operating point.

    Examples
    --------
    >>> fixed_rate_label("fmr", 1e-3, 0.00098, 0.0421)
    'FMR 1e-3: FNMR 4.21%'
    >>> fixed_rate_label("fnmr", 0.01, 0.005, 0.01), fixed_rate_label("fmr", 1e-6, np.nan, np.nan)
    ('FNMR 1e-2: FMR 0.5%', 'FMR 1e-6: not measurable')
    """
    head = f"{side.upper()} {rate_label(target)}"
    other, value = ("FNMR", fnmr) if side == "fmr" else ("FMR", fmr)
    if np.isnan(value):
        return f"{head}: not measurable"
    return f"{head}: {other} {100 * value:.3g}%"


def _fixed_rate_marks(ax: Axes, c: Any, limits: Window) -> None:
    """Mark the fixed-FMR/FNMR points of one system, each in the legend (one outside the
    window said to be, with its rates: they are computed, just not in view)."""
    box = probit(np.array(limits)).reshape(2, 2)
    for side, marker in FIXED_RATE_MARKERS.items():
        if f"fixed_{side}_threshold" not in c.data:
            continue
        targets = np.asarray(c.data[f"{side}_target"].values, dtype=np.float64)
        fmr = np.asarray(c.data[f"fixed_{side}_fmr"].values, dtype=np.float64)
        fnmr = np.asarray(c.data[f"fixed_{side}_fnmr"].values, dtype=np.float64)
        for target, a, b in zip(targets, fmr, fnmr, strict=True):
            label = fixed_rate_label(side, float(target), float(a), float(b))
            style = dict(linestyle="none", marker=marker, markersize=9, markeredgewidth=0.9,
                         markerfacecolor=c.color, markeredgecolor="black", zorder=6,
                         gid=f"det/fixed_{side}/{c.label}")  # fmt: skip
            if np.isnan(a):  # no point: the legend says why
                ax.plot([], [], label=label, **style)
                continue
            ((x, y),) = det_xy([a], [b])
            inside = box[0, 0] <= x <= box[0, 1] and box[1, 0] <= y <= box[1, 1]
            ax.plot([x], [y], label=label if inside else f"{label} (outside the window)",
                    **style)  # fmt: skip


def _marker_style(i: int) -> dict[str, Any]:
    marker = PRIOR_MARKERS[i % len(PRIOR_MARKERS)]
    return dict(marker=marker, markersize=7, markeredgewidth=1.3, linestyle="none")


def _key(
    visible: dict[int, str],
    min_dcf: bool,
    act_dcf: bool,
    eer: bool,
    dr30: bool,
    too_few: Sequence[str] = (),
    outside: dict[int, str] | None = None,
) -> list[tuple[Any, str]]:
    """Legend entries explaining the marks: one per visible prior, one naming the priors whose
    points no system has in the window (in ``outside``, not in ``visible``), EER,
    DR30 (and why a DR30 line is missing: ``too_few`` names the trials that number fewer than
    30)."""
    keyed: list[tuple[Any, str]] = []
    what = "/".join(w for w, on in (("min", min_dcf), ("act", act_dcf)) if on)
    unseen = [label for i, label in sorted((outside or {}).items()) if i not in visible]
    for i in sorted(visible):
        filled = _legend_proxy(markerfacecolor="0.55", markeredgecolor="black", **_marker_style(i))
        hollow = _legend_proxy(markerfacecolor="white", markeredgecolor="0.3", **_marker_style(i))
        handle = (filled, hollow) if min_dcf and act_dcf else filled if min_dcf else hollow
        keyed.append((handle, f"{what}DCF, {visible[i]}"))
    if unseen:
        keyed.append((_legend_proxy(linestyle="none"),
                      f"{what}DCF, {', '.join(unseen)}: outside the window"))  # fmt: skip
    if eer:
        keyed.append((_legend_proxy(color="0.55", **_EER_STYLE), "EER"))
    if dr30:
        keyed.append((_legend_proxy(color="0.35", linestyle=":", linewidth=1.2),
                      "DR30: 30 errors"))  # fmt: skip
        for trials in too_few:
            keyed.append((_legend_proxy(linestyle="none"), f"(30 or fewer {trials}: no line)"))
    return keyed


def _dr30_lines(
    ax: Axes, chosen: Sequence[Any], limits: Window, which: Sequence[str] = ("fa", "miss")
) -> list[str]:
    """Draw the DR30 lines of ``which`` sides within ``limits``; return the trials
    (``"non-targets"``, ``"targets"``) some system has 30 or fewer of: no line for it."""
    pfa_lo, pfa_hi, pmiss_lo, pmiss_hi = limits
    too_few = []
    for var, lo, hi, vertical, text in (
        ("pfa30", pfa_lo, pfa_hi, True, "30 false alarms"),
        ("pmiss30", pmiss_lo, pmiss_hi, False, "30 misses"),
    ):
        if ("fa" if vertical else "miss") not in which:
            continue
        values = [float(c.data[var]) for c in chosen]
        if any(not v < 1.0 for v in values):  # 30/N >= 1: 30 errors are never made
            too_few.append("non-targets" if vertical else "targets")
        labelled: list[tuple[float, Any]] = []  # one label for lines closer than a label
        gap = 0.04 * (float(probit(hi)) - float(probit(lo)))
        for value in dict.fromkeys(values):  # unique, in order
            if not lo < value < hi:
                continue
            owners = [c for c, v in zip(chosen, values, strict=True) if v == value]
            color = "0.35" if len(owners) == len(chosen) else owners[0].color
            pos = float(probit(value))
            gid = "det/dr30-fa" if vertical else "det/dr30-miss"
            draw = ax.axvline if vertical else ax.axhline
            draw(pos, color=color, linestyle=":", linewidth=1.2, zorder=2, gid=gid)
            near = [label for at, label in labelled if abs(at - pos) < gap]
            if near:  # the same words over each other: one label, in the shared grey
                near[0].set_color("0.35")
                continue
            if vertical:
                label = ax.annotate(text, (pos, 1.0), xycoords=("data", "axes fraction"),
                                    rotation=90, xytext=(3, -4), textcoords="offset points",
                                    ha="left", va="top", fontsize=7, color=color)  # fmt: skip
            else:
                label = ax.annotate(text, (1.0, pos), xycoords=("axes fraction", "data"),
                                    xytext=(-4, 3), textcoords="offset points", ha="right",
                                    va="bottom", fontsize=7, color=color)  # fmt: skip
            labelled.append((pos, label))
    return too_few


def _legend(ax: Axes, keyed: list[tuple[Any, str]]) -> None:
    """Systems top right (above every DET curve), the key to the marks bottom left (below)."""
    from matplotlib.legend_handler import HandlerTuple

    if keyed:
        key = ax.legend(
            [h for h, _ in keyed], [label for _, label in keyed], loc="lower left", fontsize=7.5,
            framealpha=0.9, handler_map={tuple: HandlerTuple(ndivide=None)},
        )  # fmt: skip
        key.set_gid("det/key")
        ax.add_artist(key)
    ax.legend(loc="upper right", fontsize=8, framealpha=0.9)
