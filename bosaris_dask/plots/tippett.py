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
proportion at ``x`` is the one at the next point's threshold). With ``attrs["llr_base"]``
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

from collections.abc import Sequence

import numpy as np
import xarray as xr
from matplotlib.axes import Axes

from bosaris_dask.errors import PlotError
from bosaris_dask.plots._common import Results, curves, finish_curve_axes, log_label, new_axes
from bosaris_dask.result_layout import CURVES

__all__ = ["tippett_plot", "tippett_points"]


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
        LLR range of the x axis, in the LLRs' base (default: every system's points).
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
        Results that are not an evaluation, or an unknown system.
    """
    ax = new_axes(ax, (8.0, 4.8))
    chosen = curves(results, systems, ax, "tippett")
    points = [tippett_points(c.data) for c in chosen]
    spans = [_span(*p) for p in points]
    lo = min(0.0, *(a for a, _ in spans))
    hi = max(0.0, *(b for _, b in spans))
    pad = 0.03 * (hi - lo) if hi > lo else 1.0
    lo, hi = xlim if xlim is not None else (lo - pad, hi + pad)
    for c, (x, targets, nontargets) in zip(chosen, points, strict=True):
        # every LLR is at or above x left of the lowest point, none right of the highest
        ends = (min(lo, x[0]), max(hi, x[-1])) if len(x) else (lo, hi)
        x = np.concatenate([[ends[0]], x, [ends[1]]])
        for y, kind in ((targets, "target"), (nontargets, "nontarget")):
            ax.plot(x, np.concatenate([[1.0], y, [0.0]]), color=c.color, zorder=3,
                    linestyle="-" if kind == "target" else "--",
                    linewidth=1.8 if kind == "target" else 1.5, drawstyle="steps-pre",
                    label=_label(c.label, c.data) if kind == "target" else None,
                    gid=f"tippett/{kind}/{c.label}")  # fmt: skip
    if not any(line.get_gid() == "tippett/zero" for line in ax.get_lines()):
        ax.axvline(0.0, color="0.4", linestyle=":", linewidth=1.2, zorder=2, gid="tippett/zero")
    ax.set_xlim(lo, hi)
    ax.set_ylim(-0.02, 1.02)
    base = str(chosen[-1].data.attrs.get("llr_base", "e"))
    ax.set_xlabel(f"LLR threshold x  ({log_label(base)} LR)")
    ax.set_ylabel("Proportion of LLRs ≥ x")
    finish_curve_axes(ax, title=title, legend=legend, solid="targets (Hp true)",
                      dashed="non-targets (Hd true)", dotted="LLR = 0")  # fmt: skip
    return ax


def _span(x: np.ndarray, targets: np.ndarray, nontargets: np.ndarray) -> tuple[float, float]:
    """The LLR range where a system's curves fall: from the last point where every LLR is at
    or above the threshold to the first where none is, each taken unless it lies further than
    half the range of the points between (a wide bin at either end of a large evaluation's
    scores holds a few extreme LLRs far out)."""
    inside = np.flatnonzero((targets < 1.0) | (nontargets < 1.0))
    inside = inside[(targets[inside] > 0.0) | (nontargets[inside] > 0.0)]
    if not len(inside):
        return (float(x[0]), float(x[-1])) if len(x) else (-1.0, 1.0)
    a, b = float(x[inside[0]]), float(x[inside[-1]])
    width = max(b - a, 1e-9)
    if inside[0] > 0 and x[inside[0] - 1] >= a - width / 2:
        a = float(x[inside[0] - 1])
    if inside[-1] + 1 < len(x) and x[inside[-1] + 1] <= b + width / 2:
        b = float(x[inside[-1] + 1])
    return a, b


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
