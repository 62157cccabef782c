"""The standard set of plot files of an evaluation, for ``bosaris-dask evaluate --plots-dir DIR``.

Examples
--------
>>> import tempfile, numpy as np
>>> from bosaris_dask.metrics import evaluate_arrays
>>> rng = np.random.default_rng(0)
>>> ds = evaluate_arrays(rng.normal(3, 1, 500), rng.normal(0, 1, 5000), name="demo")
>>> [p.name for p in save_standard_plots(ds, tempfile.mkdtemp(), formats=("png", "svg"))]
['det.png', 'det.svg', 'det_low_fa.png', 'det_low_fa.svg', 'nbe.png', 'nbe.svg', 'ape.png', 'ape.svg']
"""  # noqa: E501

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from bosaris_dask.errors import PlotError
from bosaris_dask.io.atomic import atomic_paths, refuse_inside_store
from bosaris_dask.plots._common import FORMATS, Results, save_figure, write_figure
from bosaris_dask.plots.ape import _count, ape_plot, cllr_plot
from bosaris_dask.plots.det import det_plot
from bosaris_dask.plots.ece import ece_plot
from bosaris_dask.plots.nbe import nbe_plot
from bosaris_dask.plots.tippett import tippett_plot

__all__ = ["PLOT_KINDS", "STANDARD_PLOTS", "save_plot", "standard_figures", "save_standard_plots"]

#: The files :func:`save_standard_plots` writes (one per format), and what each shows.
STANDARD_PLOTS = {
    "det": "ROCCH-DET curves in the classic 0.05%-50% window, minDCF points, EER, DR30 lines",
    "det_low_fa": "the same in the low-false-alarm window (0.0001%-20% false alarms)",
    "nbe": "normalized actDCF and minDCF against prior log-odds, DR30 marks, operating points",
    "ape": "APE curves (Bayes error rates; areas are Cllr, minCllr) and Cllr = minCllr + loss",
}


def _det(window: str) -> Callable[[Results, Sequence[str] | None], Figure]:
    def draw(results: Results, systems: Sequence[str] | None) -> Figure:
        fig = Figure(figsize=(6.4, 6.4), layout="constrained")
        det_plot(results, ax=fig.add_subplot(), systems=systems, window=window)
        return fig

    return draw


def _nbe(results: Results, systems: Sequence[str] | None) -> Figure:
    fig = Figure(figsize=(9.0, 5.0), layout="constrained")
    nbe_plot(results, ax=fig.add_subplot(), systems=systems)
    return fig


def _ape(results: Results, systems: Sequence[str] | None) -> Figure:
    bars = _count(results, systems)
    fig = Figure(figsize=(9.0, 4.6 + 0.45 * bars), layout="constrained")
    top, bottom = fig.subplots(2, 1, height_ratios=[4.0, 1.0 + 0.45 * bars])
    ape_plot(results, ax=top, systems=systems)
    cllr_plot(results, ax=bottom, systems=systems)
    return fig


_DRAW: dict[str, Callable[[Results, Sequence[str] | None], Figure]] = {
    "det": _det("classic"),
    "det_low_fa": _det("low_fa"),
    "nbe": _nbe,
    "ape": _ape,
}


#: What :func:`save_plot` draws, by name: the plot function and the figure size in inches.
PLOT_KINDS: dict[str, tuple[Callable[..., Axes], tuple[float, float]]] = {
    "det": (det_plot, (6.4, 6.4)),
    "nbe": (nbe_plot, (9.0, 5.0)),
    "ape": (ape_plot, (9.0, 4.6)),
    "cllr": (cllr_plot, (8.0, 2.5)),
    "ece": (ece_plot, (9.0, 4.6)),
    "tippett": (tippett_plot, (9.0, 4.6)),
}


def save_plot(
    results: Results,
    kind: str,
    path: str | os.PathLike[str],
    *,
    dpi: float = 150,
    **options: Any,
) -> Path:
    """Draw one plot on a new figure (no pyplot) and write it; the suffix picks the format.

    What ``bosaris-dask plot det|nbe|ape|cllr|ece|tippett ... --out FILE`` does.

    Parameters
    ----------
    results
        An evaluation Dataset, or a mapping of them by name.
    kind : {"det", "nbe", "ape", "cllr", "ece", "tippett"}
        Which plot: :func:`det_plot`, :func:`nbe_plot`, :func:`ape_plot`, :func:`cllr_plot`,
        :func:`ece_plot` (results evaluated with ``ece_plo``) or :func:`tippett_plot`.
    path
        Output file ending in ``.png``, ``.pdf`` or ``.svg``; its directory must exist.
    dpi
        Resolution of PNG output.
    **options
        Passed to the plot function (``window="low_fa"``, ``systems=[...]``, ``xlim=...``).

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np
    >>> from bosaris_dask.metrics import evaluate_arrays
    >>> ds = evaluate_arrays(np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.0, 1.5]))
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "det.svg"
    >>> save_plot(ds, "det", out, window="wide").name
    'det.svg'
    """
    if kind not in PLOT_KINDS:
        raise PlotError(f"unknown plot {kind!r}: use one of {', '.join(PLOT_KINDS)}")
    draw, size = PLOT_KINDS[kind]
    if kind == "cllr":
        size = (size[0], 1.2 + 0.5 * _count(results, options.get("systems")))
    fig = Figure(figsize=size, layout="constrained")
    try:
        draw(results, ax=fig.add_subplot(), **options)
    except TypeError as exc:  # an option the plot does not take
        raise PlotError(f"{kind} plot: {exc}") from None
    return save_figure(fig, path, dpi=dpi)


def standard_figures(
    results: Results, *, systems: Sequence[str] | None = None
) -> dict[str, Figure]:
    """The standard plots as matplotlib Figures (not attached to pyplot), by name.

    Names and contents are those of :data:`STANDARD_PLOTS`.
    """
    return {name: draw(results, systems) for name, draw in _DRAW.items()}


def save_standard_plots(
    results: Results,
    directory: str | os.PathLike[str],
    *,
    formats: Sequence[str] = ("png",),
    systems: Sequence[str] | None = None,
    dpi: float = 150,
) -> list[Path]:
    """Write the standard plots of an evaluation into ``directory`` (created if missing).

    Writes ``det``, ``det_low_fa``, ``nbe`` and ``ape`` (see :data:`STANDARD_PLOTS`), each in
    every format, atomically and as a set (they all appear together, or none: a run cut
    short leaves the previous ones), without pyplot or a display.

    Parameters
    ----------
    results
        An evaluation Dataset (:func:`bosaris_dask.metrics.evaluate`), or a mapping of them by
        name (e.g. dev and eval, drawn together).
    directory
        Where to write; created with its parents if missing. Existing files are replaced.
    formats
        Any of ``"png"``, ``"pdf"``, ``"svg"``.
    systems
        Names of the systems to draw (default: all).
    dpi
        Resolution of PNG files.

    Returns
    -------
    list of pathlib.Path
        The files written, plot by plot, in the order of ``formats``.

    Raises
    ------
    PlotError
        For an unknown format or system, or results that are not an evaluation.
    """
    formats = [f.lower().lstrip(".") for f in formats]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise PlotError(f"plot formats are {', '.join(FORMATS)}; got {list(formats)}")
    out = Path(directory)
    refuse_inside_store(out, out)  # before the folder is made in it
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PlotError(f"cannot create the plot directory {out}: {exc.strerror}") from None
    figures = [(name, draw(results, systems)) for name, draw in _DRAW.items()]
    paths = [out / f"{name}.{fmt}" for name, _ in figures for fmt in formats]
    try:  # written as a set: an interrupted run left some images new and some old
        with atomic_paths(paths) as tmps:
            at = iter(tmps)
            for _, fig in figures:
                for fmt in formats:
                    write_figure(fig, next(at), fmt, dpi=dpi)
    except BaseException:
        if created:
            with contextlib.suppress(OSError):  # (left where it holds anything else)
                out.rmdir()
        raise
    return paths
