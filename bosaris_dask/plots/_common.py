"""What every plot shares: picking the curves to draw, colours, new Axes, saving figures."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import matplotlib as mpl
import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure
from matplotlib.lines import Line2D

from bosaris_dask.errors import PlotError
from bosaris_dask.io.atomic import refuse_inside_store

__all__ = [
    "Results", "Curve", "curves", "dr30_sides", "new_axes", "finish_curve_axes", "save_figure",
    "check_plot_path", "legend_text", "log_label", "FORMATS", "LEGEND_OUTSIDE", "outside_legend",
]  # fmt: skip

#: An evaluation (``metrics.evaluate``), or several by name (``{"dev": ..., "eval": ...}``).
Results = xr.Dataset | Mapping[str, xr.Dataset]

#: A legend to the right of the Axes, as every plot here places it.
LEGEND_OUTSIDE = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0,
                  "fontsize": 8, "frameon": False}  # fmt: skip

#: Entries a column of an outside legend holds before another column starts (about the height
#: of the default figure at fontsize 8: more ran off its bottom, the key to the marks last).
LEGEND_ROWS = 20


def outside_legend(ax: Any, handles: list[Any], labels: list[str]) -> Any:
    """A legend right of ``ax`` (:data:`LEGEND_OUTSIDE`), in as many columns as its entries need
    (:data:`LEGEND_ROWS` each)."""
    columns = max(1, -(-len(labels) // LEGEND_ROWS))
    return ax.legend(handles, labels, ncols=columns, **LEGEND_OUTSIDE)


#: File formats :func:`save_figure` writes, by suffix.
FORMATS = ("png", "pdf", "svg")


@dataclass(frozen=True)
class Curve:
    """One system of one evaluation, as a plot draws it."""

    label: str
    data: xr.Dataset  # results.sel(system=...)
    color: str


def _palette(n: int = 0) -> list[str]:
    """The style's colour cycle; for more curves than it has colours (curves per condition of
    several systems), ``n`` distinct colours from a qualitative (up to 20) or a continuous map,
    so that no two curves share a colour.

    Examples
    --------
    >>> len(set(_palette(12))) >= 12
    True
    """
    colors = mpl.rcParams["axes.prop_cycle"].by_key().get("color")
    palette = list(colors) if colors else ["C0", "C1", "C2", "C3"]
    if n <= len(palette):
        return palette
    if n <= 20:
        cmap = mpl.colormaps["tab20"]
        return [mpl.colors.to_hex(cmap(i)) for i in range(20)]
    cmap = mpl.colormaps["turbo"]
    return [mpl.colors.to_hex(cmap(0.05 + 0.9 * i / (n - 1))) for i in range(n)]


def curves(results: Results, systems: Sequence[str] | None, ax: Axes, kind: str) -> list[Curve]:
    """The systems to draw, labelled, each with a colour not yet used by a ``kind`` plot on ``ax``.

    ``results`` is a Dataset (labels are the system names) or a mapping ``{set: Dataset}``
    (labels ``"system [set]"``). ``systems`` selects and orders systems by name (all if None).
    In a mapping whose sets hold several systems each, one system's curves share a hue (later
    sets in darker, then lighter shades of it), so that several systems' dev and eval curves
    can be told apart: a system of a later set is the earlier set's system of the same name,
    else of the same rank among the curves of its condition (``--by`` curves; as ``plot
    --eval-key`` gives the eval scores of the same systems in the same order, each named after
    its own file, and a set may leave a condition out). With one system per set, each
    set takes its own colour (distinct hues read better than shades).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from bosaris_dask import evaluate
    >>> from bosaris_dask.simulate import simulate
    >>> key, scores = simulate(20, 30, systems=2, target_rate=0.2, seed=0)
    >>> ds = evaluate(scores, key)
    >>> drawn = curves({"dev": ds, "eval": ds}, None, plt.figure().gca(), "det")
    >>> [c.label for c in drawn]
    ['system-1 [dev]', 'system-2 [dev]', 'system-1 [eval]', 'system-2 [eval]']
    >>> drawn[0].color == drawn[1].color, drawn[2].color == _shade(drawn[0].color, 1)
    (False, True)
    """
    if isinstance(results, xr.Dataset):
        sets: list[tuple[str | None, xr.Dataset]] = [(None, results)]
    elif isinstance(results, Mapping) and results:
        sets = [(str(k), v) for k, v in cast(Mapping[str, xr.Dataset], results).items()]
    else:
        raise PlotError("plot an evaluation Dataset, or a non-empty mapping of them by name")
    chosen_per_set = []
    for set_name, ds in sets:
        if not isinstance(ds, xr.Dataset) or "system" not in ds.dims:
            raise PlotError(f"{set_name or 'results'}: not an evaluation Dataset (no 'system')")
        names = [str(s) for s in ds.system.values]
        chosen = names if systems is None else [str(s) for s in systems]
        unknown = [s for s in chosen if s not in names]
        if unknown:
            raise PlotError(
                f"no system {', '.join(map(repr, unknown))} in {set_name or 'the results'} "
                f"(systems: {', '.join(names)})"
            )
        chosen_per_set.append(chosen)
    paired = all(len(chosen) > 1 for chosen in chosen_per_set)
    out = []
    hues: dict[str, int] = {}  # system name -> hue index
    ranked: dict[tuple[str, int], int] = {}  # (condition, rank among its curves) -> hue
    for k, ((set_name, ds), chosen) in enumerate(zip(sets, chosen_per_set, strict=True)):
        for (condition, rank), position, name in zip(_ranks(chosen), range(len(chosen)), chosen,
                                                     strict=True):  # fmt: skip
            label = name if set_name is None else f"{name} [{set_name}]"
            if paired:
                same = ranked.get((condition, rank), position)  # (names differ: files)
                hue, shade = hues.setdefault(name, same if k else len(hues)), k
                ranked.setdefault((condition, rank), hue)
            else:
                hue, shade = len(out), 0
            out.append((legend_text(label), ds.sel(system=name), hue, shade))
    if not out:
        raise PlotError("no system to plot")
    # Systems already drawn by a plot of this kind (gids "kind/what/label"): new hues after.
    gids = [a.get_gid() for a in (*ax.get_lines(), *ax.patches)]
    parts = [g.split("/", 2) for g in gids if g and g.startswith(f"{kind}/")]
    start = len({p[2] for p in parts if len(p) == 3})  # >= the hues they took
    palette = _palette(start + 1 + max(hue for _, _, hue, _ in out))
    return [
        Curve(label, data, _shade(palette[(start + hue) % len(palette)], shade))
        for label, data, hue, shade in out
    ]


def _ranks(names: Sequence[str]) -> list[tuple[str, int]]:
    """Each name's condition (a trailing ``" [...]"``, as ``--by`` curves are named; ``""``
    without one) and its rank among the names of that condition: the same system of two sets
    whose names differ (files), in a condition that one set leaves out, still pairs up.

    Examples
    --------
    >>> _ranks(["a [x=1]", "b [x=1]", "a [x=2]", "c"])
    [('[x=1]', 0), ('[x=1]', 1), ('[x=2]', 0), ('', 0)]
    """
    seen: dict[str, int] = {}
    out = []
    for name in names:
        condition = "[" + name.rsplit(" [", 1)[1] if name.endswith("]") and " [" in name else ""
        out.append((condition, seen.get(condition, 0)))
        seen[condition] = seen.get(condition, 0) + 1
    return out


def _shade(color: str, k: int) -> str:
    """``color`` for the ``k``-th set of a plot: itself for ``k = 0``, then alternately darker
    and lighter, further each time.

    Examples
    --------
    >>> [_shade("#ff0000", k) for k in range(4)]
    ['#ff0000', '#990000', '#ff8080', '#5c0000']
    """
    if k == 0:
        return color
    rgb = np.array(mpl.colors.to_rgb(color))
    step = (k + 1) // 2
    if k % 2:
        return mpl.colors.to_hex(rgb * 0.6**step)
    return mpl.colors.to_hex(1 - (1 - rgb) * 0.5**step)


def legend_text(name: str) -> str:
    r"""A system name as matplotlib shows it: ``$`` escaped (a pair would be read as math
    text, drawn wrongly or raise), and a leading ``_`` kept (such labels are left out of
    legends) by a zero-width space before it.

    Examples
    --------
    >>> legend_text("_fused"), legend_text("sys$^$x")
    ('\u200b_fused', 'sys\\$^\\$x')
    """
    text = name.replace("$", r"\$")
    return f"\u200b{text}" if text.startswith("_") else text


def log_label(base: str) -> str:
    r"""The logarithm of LLRs in ``base`` (``"e"``, ``"10"``, ``"2"``) as an axis label writes it.

    >>> log_label("10"), log_label("e")
    ('$\\log_{10}$', '$\\log$')
    """
    return r"$\log_{10}$" if base == "10" else r"$\log$" if base == "e" else rf"$\log_{{{base}}}$"


def dr30_sides(dr30: bool | str) -> tuple[str, ...]:
    """The DR30 marks asked for: a subset of ``("fa", "miss")``.

    ``True``/``"both"``: both; ``"fa"``: false alarms only; ``"miss"``: misses only;
    ``False``/``"none"``: neither.

    Examples
    --------
    >>> dr30_sides(True), dr30_sides("miss"), dr30_sides("none")
    (('fa', 'miss'), ('miss',), ())
    """
    choices: dict[bool | str, tuple[str, ...]] = {
        True: ("fa", "miss"), "both": ("fa", "miss"), "fa": ("fa",), "miss": ("miss",),
        False: (), "none": (),
    }  # fmt: skip
    if not isinstance(dr30, bool | str) or dr30 not in choices:
        raise PlotError(f"dr30 must be True, False, 'both', 'miss', 'fa' or 'none', not {dr30!r}")
    return choices[dr30]


def new_axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    """``ax``, or the Axes of a new pyplot figure (so that notebooks show it)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def finish_curve_axes(
    ax: Axes, *, title: str | None, legend: bool, solid: str, dashed: str, dotted: str | None
) -> None:
    """Grid, title and the outside legend of a plot of solid and dashed curves per system (one
    colour each) and an optional grey dotted reference curve: the systems' labels, then what
    each line style means."""
    ax.grid(True, color="0.9", linewidth=0.6)
    ax.set_axisbelow(True)
    if title:
        ax.set_title(title)
    if not legend:
        return
    handles, labels = ax.get_legend_handles_labels()
    key = [
        (Line2D([], [], color="0.2", linewidth=1.5), solid),
        (Line2D([], [], color="0.2", linestyle="--", linewidth=1.5), dashed),
    ]
    if dotted:
        key.append((Line2D([], [], color="0.5", linestyle=":"), dotted))
    outside_legend(ax, handles + [h for h, _ in key], labels + [label for _, label in key])


def check_plot_path(path: str | os.PathLike[str]) -> str:
    """The format of a plot output path (its suffix), or a PlotError: another suffix, a folder
    that does not exist, or a folder at the path. The plot command checks it before reading.

    Examples
    --------
    >>> check_plot_path("det.PDF")
    'pdf'
    """
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise PlotError(f"{path}: plots are written as {', '.join(FORMATS)} (from the suffix)")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise PlotError(f"{path}: no folder {parent} to write the plot in")
    if path.is_dir():
        raise PlotError(f"{path}: a folder is there, not a plot file")
    refuse_inside_store(path, parent)
    return fmt


def save_figure(figure: Figure | Axes, path: str | os.PathLike[str], *, dpi: float = 150) -> Path:
    """Write a figure (or the figure of an Axes) atomically; the suffix picks the format.

    Parameters
    ----------
    figure
        A matplotlib Figure, or an Axes of one.
    path
        Output file ending in ``.png``, ``.pdf`` or ``.svg``. Its directory must exist.
    dpi
        Resolution of PNG output.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    PlotError
        For another suffix.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from matplotlib.figure import Figure
    >>> fig = Figure()
    >>> _ = fig.add_subplot().plot([0, 1], [1, 0])
    >>> out = save_figure(fig, pathlib.Path(tempfile.mkdtemp()) / "line.svg")
    >>> out.read_text()[:5], out.suffix
    ('<?xml', '.svg')
    """
    from bosaris_dask.io.atomic import atomic_path

    path = Path(path)
    fmt = check_plot_path(path)
    with atomic_path(path) as tmp:
        write_figure(figure, tmp, fmt, dpi=dpi)
    return path


def write_figure(figure: Figure | Axes, path: Path, fmt: str, *, dpi: float = 150) -> None:
    """Write a figure to ``path`` (as it is: not atomic) in format ``fmt``, the same bytes for
    the same figure (:func:`save_figure` writes it atomically)."""
    fig = figure.get_figure() if isinstance(figure, Axes) else figure
    if isinstance(fig, SubFigure):
        fig = fig.figure  # the figure the sub-figure is drawn in is what a file holds
    if fig is None:
        raise PlotError("this Axes belongs to no figure")
    # No date, and SVG element ids from a fixed salt (else random per run), keep the same
    # figure's PDF and SVG files the same bytes
    metadata = {"png": None, "pdf": {"CreationDate": None}, "svg": {"Date": None}}[fmt]
    with mpl.rc_context({"svg.hashsalt": "bosaris-dask"}):
        fig.savefig(path, format=fmt, dpi=dpi, metadata=metadata)
