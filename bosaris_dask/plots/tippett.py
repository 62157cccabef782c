"""Tippett plots of forensic likelihood ratios (lir's ``tippett``, its default type 1).

For each system, against an LLR threshold ``x``: the proportion of the target (same-source,
``Hp`` true) trials whose LLR is at least ``x`` (solid) and the proportion of the non-target
(different-source, ``Hd`` true) trials whose LLR is at least ``x`` (dashed), with a vertical
line at ``LLR = 0`` (``LR = 1``). The further apart the two curves, the better the LLRs tell
the hypotheses apart; at the line, one minus the solid curve is the proportion of targets whose
evidence points to ``Hd`` (``LLR < 0``) and the dashed curve the proportion of non-targets whose
evidence does not point to ``Hd`` (``LLR >= 0``); the legend gives both (exact: the actDCF
rates at prior 0.5, when the evaluation's prior log-odds hold 0, as the default sweep does).

Every point drawn is exact: the evaluation's steppy-ROC points (``roc_threshold``, with
``1 - roc_pmiss`` and ``roc_pfa``, thinned for plotting as the DET plot's), drawn as steps (the
proportion at ``x`` is the one at the next point's threshold). Between two kept points the
steps are placed to within that thinning (0.005 on the DET's probit axes): where points were
dropped, a step is drawn at the next kept threshold, not at its own score (on the demo's
system-3, up to 2 of its 500 targets). With ``attrs["llr_base"]``
(``--llr-base 10``) the thresholds are in that base, as lir draws them (log10 LR).

Examples
--------
>>> import numpy as np, matplotlib
>>> matplotlib.use("Agg")
>>> from bosaris_dask.metrics import evaluate_arrays
>>> ds = evaluate_arrays(np.array([-0.5, 1.0, 2.0, 3.0]), np.array([-2.0, -1.0, 0.5]), name="demo")
>>> ax = tippett_plot(ds)
>>> sorted(line.get_gid() for line in ax.get_lines())
['tippett/nontarget/demo', 'tippett/target/demo', 'tippett/zero']
>>> line = next(x for x in ax.get_lines() if x.get_gid() == "tippett/target/demo")
>>> [(float(x), float(y)) for x, y in zip(*line.get_data()) if x >= -0.5]  # LLR >= x
[(-0.5, 1.0), (0.5, 0.75), (1.0, 0.75), (2.0, 0.5), (3.0, 0.25), (3.15, 0.0)]
>>> ax.get_legend().get_texts()[0].get_text()
'demo: targets LLR < 0: 25.0%, non-targets LLR ≥ 0: 33.3%'
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import xarray as xr
from matplotlib.axes import Axes

from bosaris_dask.errors import PlotError
from bosaris_dask.plots._common import Results, curves, finish_curve_axes, log_label, new_axes
from bosaris_dask.result_layout import CURVES

__all__ = ["tippett_plot", "tippett_points", "TAIL", "FEW"]

#: The x axis leaves out LLRs beyond half the width of the curves' core (where either curve is
#: within ``TAIL`` of neither 1 nor 0, or of :data:`FEW` trials of its class where that is
#: more and at most 5% of them) from its ends, and says so (a note in the log).
TAIL = 1e-3
#: A class's trials at either end that its core may leave out where they are at most 5% of
#: its trials: a sentinel or an outlier among 200 forensic comparisons is not the curve, but
#: a handful of trials are all curve.
FEW = 2
#: The widest x axis: matplotlib cannot draw ticks over the whole float64 range.
_FAR = 1e307

_log = logging.getLogger("bosaris_dask.plots")


def tippett_points(data: xr.Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One system's Tippett points ``(x, targets, non-targets)``: the finite ROC thresholds
    (ascending) and the proportions of the target and of the non-target LLRs at or above each.

    ``data`` is one system of an evaluation (``results.sel(system=...)``).

    Examples
    --------
    >>> from bosaris_dask.metrics import evaluate_arrays
    >>> ds = evaluate_arrays([1.0, 2.0], [-1.0, 1.0], name="a")
    >>> [v.tolist() for v in tippett_points(ds.sel(system="a"))]
    [[-1.0, 1.0, 2.0], [1.0, 1.0, 0.5], [1.0, 0.5, 0.0]]
    """
    if "roc_threshold" not in data:
        raise PlotError("no roc_threshold in these results: evaluate them with this version")
    n = int(data[CURVES["roc_threshold"][1]])
    x, pmiss, pfa = (np.asarray(data[v].values[:n], dtype=np.float64)
                     for v in ("roc_threshold", "roc_pmiss", "roc_pfa"))  # fmt: skip
    n_target = int(data.n_target)  # the count above each threshold, then its proportion
    targets = (n_target - np.rint(pmiss * n_target)) / n_target
    finite = np.isfinite(x)
    return x[finite], targets[finite], pfa[finite]


def tippett_plot(
    results: Results,
    *,
    ax: Axes | None = None,
    systems: Sequence[str] | None = None,
    xlim: tuple[float, float] | None = None,
    legend: bool = True,
    title: str | None = None,
) -> Axes:
    """Draw Tippett curves: the proportions of target and non-target LLRs at or above each
    threshold, per system, and the line ``LLR = 0``.

    Parameters
    ----------
    results
        An evaluation Dataset (:func:`bosaris_dask.metrics.evaluate`), or a mapping of them by
        name.
    ax
        Axes to draw on (a new figure if None).
    systems
        Names of the systems to draw (default: all).
    xlim
        LLR range of the x axis, in the LLRs' base (default: every system's LLRs but far
        outliers, beyond half the width of the curves' core, drawn at the axis's edges and
        named in a log note; the core leaves out a class's 0.1% or up to 2 trials, at most 5%
        of them, whichever is more, at either end).
    legend
        Add a legend (each system with its proportions of targets below 0 and of non-targets
        at or above 0).
    title
        Axes title.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes; lines carry gids ``tippett/target/LABEL``, ``tippett/nontarget/LABEL`` and
        ``tippett/zero``, with x the LLR thresholds and y proportions in ``[0, 1]``.

    Raises
    ------
    PlotError
        Results that are not an evaluation (or without ``roc_threshold``), or an unknown
        system.
    """
    ax = new_axes(ax, (8.0, 4.8))
    chosen = [c for c in curves(results, systems, ax, "tippett")
              if int(c.data.n_target) and int(c.data.n_nontarget)]  # fmt: skip
    points = [tippett_points(c.data) for c in chosen]
    counts = [(int(c.data.n_target), int(c.data.n_nontarget)) for c in chosen]
    spans = [s for s in (_span(*p, n) for p, n in zip(points, counts, strict=True)) if s]
    lo, hi = min([0.0, *(a for a, _ in spans)]), max([0.0, *(b for _, b in spans)])
    pad = (0.03 * hi - 0.03 * lo) or 1.0  # without overflow, at +-1e308 too
    lo, hi = xlim if xlim is not None else (lo - pad, hi + pad)
    lo, hi = max(float(lo), -_FAR), min(float(hi), _FAR)
    ax.set_xlim(lo, hi)
    ax.set_autoscalex_on(False)
    for c, (x, targets, nontargets) in zip(chosen, points, strict=True):
        # every LLR is at or above x left of the lowest point, none right of the highest;
        # points beyond the axis are drawn at its edges
        x = np.clip(np.concatenate([[lo], x, [hi]]), lo, hi)
        for y, kind in ((targets, "target"), (nontargets, "nontarget")):
            ax.plot(x, np.concatenate([[1.0], y, [0.0]]), color=c.color, zorder=3,
                    linestyle="-" if kind == "target" else "--",
                    linewidth=1.8 if kind == "target" else 1.5, drawstyle="steps-pre",
                    label=_label(c.label, c.data) if kind == "target" else None,
                    gid=f"tippett/{kind}/{c.label}")  # fmt: skip
    _say_clipped(chosen, points, lo, hi)
    if not any(line.get_gid() == "tippett/zero" for line in ax.get_lines()):
        ax.axvline(0.0, color="0.4", linestyle=":", linewidth=1.2, zorder=2, gid="tippett/zero")
    ax.set_ylim(-0.02, 1.02)
    first = results if isinstance(results, xr.Dataset) else next(iter(results.values()))
    base = str(first.attrs.get("llr_base", "e"))  # (of the results: every curve may be empty)
    ax.set_xlabel(f"LLR threshold x  ({log_label(base)} LR)")
    ax.set_ylabel("Proportion of LLRs ≥ x")
    finish_curve_axes(ax, title=title, legend=legend, solid="targets (Hp true)",
                      dashed="non-targets (Hd true)", dotted="LLR = 0")  # fmt: skip
    return ax


def _span(
    x: np.ndarray, targets: np.ndarray, nontargets: np.ndarray, counts: tuple[int, int]
) -> tuple[float, float] | None:
    """The LLR range of a system's curves (``None`` without a point): from its lowest point
    (the bin edge at or just below its lowest LLR) to its highest, but no further out than half
    the width of its core beyond the core's ends. The core is where the curves are neither
    both near 1 nor both near 0: within :data:`TAIL`, or :data:`FEW` trials of the class
    (``counts``: targets, non-targets) where that is more and at most 5% of the class. A few
    extreme LLRs (a sentinel score, an outlier far out) do not squeeze the curves into a
    sliver of the axis."""
    if not len(x):
        return None
    tail_tar, tail_non = (max(TAIL, min(FEW + 0.5, 0.05 * n) / n) for n in counts)
    inside = (targets < 1.0 - tail_tar) | (nontargets < 1.0 - tail_non)
    above = (targets > tail_tar) | (nontargets > tail_non)
    low, high = np.minimum(targets, nontargets), np.maximum(targets, nontargets)

    def ends(start: np.ndarray, stop: np.ndarray) -> tuple[float, float]:
        # drawn as steps-pre, a curve falls past a level just after the point before the first
        # below it, and stays below one just after the last point above it
        a = float(x[max(start[0] - 1, 0)]) if len(start) else float(x[0])
        b = float(x[stop[-1]]) if len(stop) else float(x[-1])
        return a, b

    lowest, highest = ends(np.flatnonzero(low < 1.0), np.flatnonzero(high > 0.0))
    a, b = ends(np.flatnonzero(inside), np.flatnonzero(above))
    half = b / 2 - a / 2  # half the core's width, without overflow
    return max(lowest, a - half), min(highest, b + half)


def _say_clipped(chosen: Sequence, points: Sequence, lo: float, hi: float) -> None:
    """Log a note for each system with LLRs beyond the x axis (drawn at its edges)."""
    for c, (x, targets, nontargets) in zip(chosen, points, strict=True):
        changes = (np.minimum(targets, nontargets) < 1.0) & (np.maximum(targets, nontargets) > 0)
        held = x[changes | np.r_[changes[1:], False]]  # a point and the one before a change
        # the points are bin edges: at or just below the LLRs they hold (exact for few trials)
        beyond = ([f"LLRs down to about {held[0]:.4g}, left of the x axis (from {lo:.4g})"]
                  if len(held) and held[0] < lo else []) + (
                  [f"LLRs up to about {held[-1]:.4g}, right of it (to {hi:.4g})"]
                  if len(held) and held[-1] > hi else [])  # fmt: skip
        if beyond:
            _log.info("tippett plot: %s has %s: drawn at the edges", c.label, " and ".join(beyond))


def _label(label: str, data: xr.Dataset) -> str:
    """The legend entry: the system, and its exact proportions of targets below 0 and of
    non-targets at or above 0 (its actDCF rates at prior log-odds 0) where the evaluation
    has them."""
    plo = np.asarray(data.plo.values, dtype=np.float64)
    at = np.flatnonzero(plo == 0.0)
    if not len(at):
        return label
    pmiss = float(data.act_pmiss.values[at[0]])
    pfa = float(data.act_pfa.values[at[0]])
    return f"{label}: targets LLR < 0: {pmiss:.1%}, non-targets LLR ≥ 0: {pfa:.1%}"
