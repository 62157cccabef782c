"""Probit (DET) axes: the warping, the preset windows, ticks labelled in percent.

A DET plot draws ``x = probit(Pfa)`` and ``y = probit(Pmiss)`` with ``probit(p) = sqrt(2) *
erfinv(2p - 1)`` (the standard normal quantile). Our DET Axes hold *probit coordinates* as their
data: a line drawn on them at ``(probit(pfa), probit(pmiss))``; :func:`probit` converts. Ticks sit
at the familiar 1-2-5 probabilities (and their mirror images above 50%) and are labelled in
percent, as evaluators read them.

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> from matplotlib.figure import Figure
>>> ax = Figure().add_subplot()
>>> set_det_axes(ax, "classic")
>>> [t.get_text() for t in ax.get_xticklabels()]
['0.05', '0.1', '0.2', '0.5', '1', '2', '5', '10', '20', '50']
>>> round(float(probit(0.5)), 6), [round(float(v), 3) for v in ax.get_xlim()]
(0.0, [-3.291, 0.0])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from scipy.special import ndtr, ndtri

from bosaris_dask.errors import PlotError

__all__ = [
    "DET_WINDOWS",
    "Window",
    "probit",
    "inverse_probit",
    "det_ticks",
    "percent_label",
    "resolve_window",
    "set_det_axes",
]

#: A DET window: ``(pfa_low, pfa_high, pmiss_low, pmiss_high)`` as probabilities in (0, 1).
Window = tuple[float, float, float, float]

#: Preset DET windows, by name.
#:
#: - ``"classic"``: 0.05% to 50% on both axes, the box of NIST and BOSARIS DET plots.
#: - ``"low_fa"``: false alarms from 0.0001% to 20% and misses from 0.1% to 95%, for operating
#:   points with a small target prior (``P_tar = 0.001`` and below), where the interesting part
#:   of the curve lies far to the left of the classic box.
#: - ``"wide"``: 0.0001% to 99% on both axes.
#:
#: The BOSARIS toolkit's named windows (its DET plots take ``'old'``, ``'new'``, ``'big'`` and
#: ``'sre10'``). The paper gives no limits; these are the ones documented for the toolkit's
#: windows in SIDEKIT's port of its DET plot (``sidekit/bosaris/detplot.py``, the docstrings of
#: ``PlotWindow.axis_old/axis_new/axis_big/axis_sre10``):
#:
#: - ``"old"``: 0.05% to 50% on both axes (NIST SRE'08 style; the same box as ``"classic"``).
#: - ``"new"``: false alarms 0.0005% to 0.5%, misses 1% to 99%.
#: - ``"big"``: 0.0005% to 99% on both axes.
#: - ``"sre10"``: false alarms 0.0003% to 50%, misses 0.03% to 90% (NIST SRE'10 style).
DET_WINDOWS: dict[str, Window] = {
    "classic": (5e-4, 0.5, 5e-4, 0.5),
    "low_fa": (1e-6, 0.2, 1e-3, 0.95),
    "wide": (1e-6, 0.99, 1e-6, 0.99),
    "old": (5e-4, 0.5, 5e-4, 0.5),
    "new": (5e-6, 5e-3, 1e-2, 0.99),
    "big": (5e-6, 0.99, 5e-6, 0.99),
    "sre10": (3e-6, 0.5, 3e-4, 0.9),
}

# Tick ladder below 0.5 by priority (mirrored as 1 - p above 0.5): powers of ten and 50% first,
# then 5 x 10^k, then 2 x 10^k.
_MANTISSAS = ((1.0,), (5.0,), (2.0,))


def probit(p: Any) -> np.ndarray:
    """The standard normal quantile ``sqrt(2) * erfinv(2p - 1)``, the DET axis warping.

    ``probit(0) = -inf`` and ``probit(1) = inf``.

    Examples
    --------
    >>> [round(float(v), 4) for v in probit([0.001, 0.5, 0.975])]
    [-3.0902, 0.0, 1.96]
    """
    return ndtri(np.asarray(p, dtype=np.float64))


def inverse_probit(x: Any) -> np.ndarray:
    """The standard normal CDF: the probability at a DET coordinate.

    Examples
    --------
    >>> float(inverse_probit(0.0))
    0.5
    """
    return ndtr(np.asarray(x, dtype=np.float64))


def _ladder() -> tuple[np.ndarray, np.ndarray]:
    """Candidate tick probabilities and their priorities (0 first)."""
    values, ranks = [0.5], [0]
    for rank, mantissas in enumerate(_MANTISSAS):
        for e in range(-12, 0):
            for m in mantissas:
                p = round(m * 10.0**e, 15)
                if p < 0.5:
                    values += [p, round(1.0 - p, 15)]
                    ranks += [rank, rank]
    return np.array(values), np.array(ranks)


def _label_width(p: float, fontsize: float) -> float:
    """Width in inches of a tick label (DejaVu Sans: digits 0.636 em, the point 0.318 em)."""
    text = percent_label(p)
    return (0.636 * sum(c.isdigit() for c in text) + 0.318 * text.count(".")) * fontsize / 72


def det_ticks(
    low: float,
    high: float,
    min_gap: float = 0.055,
    *,
    length: float | None = None,
    fontsize: float = 9.0,
    horizontal: bool = True,
) -> np.ndarray:
    """Tick probabilities between ``low`` and ``high`` whose labels do not crowd or collide.

    Candidates are ``{1, 2, 5} x 10^k`` below 50%, 50%, and their mirror images ``1 - p`` above
    (80%, 90%, 95%, 98%, 99%...). They are taken by priority (powers of ten and 50%, then
    ``5 x 10^k``, then ``2 x 10^k``), each only if it lies at least ``min_gap`` times the probit
    length of the axis from every tick already taken, so a window spanning many decades thins
    itself. Given the axis ``length`` in inches, a tick is also skipped where its label would
    touch a neighbour's (labels ``fontsize`` points high; side by side if ``horizontal``).

    Examples
    --------
    >>> (det_ticks(5e-4, 0.5) * 100).round(4).tolist()
    [0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0]
    >>> (det_ticks(1e-6, 0.2) * 100).round(4).tolist()
    [0.0001, 0.001, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0]
    >>> (det_ticks(5e-4, 0.5, length=2.0) * 100).round(4).tolist()  # a 2-inch axis
    [0.1, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0]
    """
    values, ranks = _ladder()
    tol = 1e-9
    inside = (values >= low * (1 - tol)) & (1 - values >= (1 - high) * (1 - tol))
    values, ranks = values[inside], ranks[inside]
    span = float(probit(high) - probit(low))
    per_inch = span / length if length else 0.0
    pad = 0.3 * fontsize / 72

    def room(a: float, b: float) -> float:
        if horizontal:
            need = (_label_width(a, fontsize) + _label_width(b, fontsize)) / 2 + pad
        else:
            need = 1.2 * fontsize / 72
        return max(min_gap * span, need * per_inch) * (1 - 1e-9)

    taken: list[tuple[float, float]] = []  # (probit, probability)
    for i in np.lexsort((values, ranks)):
        p = float(values[i])
        x = float(probit(p))
        if all(abs(x - t) >= room(p, q) for t, q in taken):
            taken.append((x, p))
    return np.sort(np.array([p for _, p in taken]))


def percent_label(p: float) -> str:
    """A probability as a percent tick label: ``0.0005 -> '0.05'``, ``0.95 -> '95'``.

    Examples
    --------
    >>> [percent_label(p) for p in (1e-6, 0.002, 0.1, 0.5, 0.999)]
    ['0.0001', '0.2', '10', '50', '99.9']
    """
    value = float(f"{100.0 * p:.10g}")
    return np.format_float_positional(value, trim="-")


def resolve_window(window: str | Sequence[float]) -> Window:
    """A preset name from :data:`DET_WINDOWS` or four limits, checked.

    Examples
    --------
    >>> resolve_window("classic")
    (0.0005, 0.5, 0.0005, 0.5)
    >>> resolve_window((0.001, 0.4, 0.01, 0.6))
    (0.001, 0.4, 0.01, 0.6)
    >>> resolve_window("0.001:0.4:0.01:0.6")  # the CLI's --window PFA_MIN:PFA_MAX:...
    (0.001, 0.4, 0.01, 0.6)
    >>> resolve_window("0.001,0.4,0.01,0.6")  # (commas, as earlier releases took them)
    (0.001, 0.4, 0.01, 0.6)
    """
    if isinstance(window, str) and ("," in window or ":" in window):
        window = window.replace(",", ":").split(":")
    if isinstance(window, str):
        name = window.replace("-", "_").lower()
        if name not in DET_WINDOWS:
            raise PlotError(
                f"unknown DET window {window!r}: use one of {', '.join(DET_WINDOWS)}, 'auto', "
                "or (pfa_low, pfa_high, pmiss_low, pmiss_high)"
            )
        return DET_WINDOWS[name]
    try:
        limits = tuple(float(v) for v in window)
    except (TypeError, ValueError):
        raise PlotError(f"a DET window is a name or four probabilities, not {window!r}") from None
    if len(limits) != 4:
        raise PlotError(f"a DET window has four limits (pfa_low, pfa_high, pmiss_low, pmiss_high), "
                        f"got {len(limits)}")  # fmt: skip
    pfa_lo, pfa_hi, pmiss_lo, pmiss_hi = limits
    if not (0 < pfa_lo < pfa_hi < 1 and 0 < pmiss_lo < pmiss_hi < 1):
        raise PlotError(f"DET limits must satisfy 0 < low < high < 1 on both axes, got {limits}")
    return pfa_lo, pfa_hi, pmiss_lo, pmiss_hi


def set_det_axes(
    ax: Axes,
    window: str | Sequence[float] = "classic",
    min_gap: float = 0.055,
    fontsize: float = 9.0,
) -> None:
    """Turn ``ax`` into DET axes: probit limits of ``window``, percent ticks, grid, labels.

    Parameters
    ----------
    ax
        The Axes; its data are probit coordinates.
    window
        A name in :data:`DET_WINDOWS` or ``(pfa_low, pfa_high, pmiss_low, pmiss_high)``.
    min_gap
        Smallest distance between ticks, as a fraction of the axis (see :func:`det_ticks`).
    fontsize
        Size of the tick labels in points; ticks are thinned so that labels do not touch at the
        Axes' current size.
    """
    pfa_lo, pfa_hi, pmiss_lo, pmiss_hi = resolve_window(window)
    width, height = _size_inches(ax)
    for axis, set_lim, lo, hi, length, horizontal in (
        (ax.xaxis, ax.set_xlim, pfa_lo, pfa_hi, width, True),
        (ax.yaxis, ax.set_ylim, pmiss_lo, pmiss_hi, height, False),
    ):
        ticks = det_ticks(lo, hi, min_gap, length=length, fontsize=fontsize,
                          horizontal=horizontal)  # fmt: skip
        axis.set_ticks(probit(ticks), [percent_label(t) for t in ticks])
        axis.set_ticks([], minor=True)
        set_lim(float(probit(lo)), float(probit(hi)))
    ax.tick_params(labelsize=fontsize)
    ax.grid(True, which="major", color="0.85", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel("False alarm probability (%)")
    ax.set_ylabel("Miss probability (%)")


def _size_inches(ax: Axes) -> tuple[float | None, float | None]:
    """The Axes' width and height in inches (None where there is no figure to measure)."""
    fig = ax.get_figure()
    if not isinstance(fig, Figure):  # None, or a SubFigure (which has no size of its own)
        return None, None
    box = ax.get_position()
    w, h = fig.get_size_inches()
    return float(box.width * w), float(box.height * h)
