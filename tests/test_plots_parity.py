"""The toolkit's DET windows, windows from a string, and DR30 marks for one side only
(issue 17 item 6)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from scipy.special import ndtri  # noqa: E402

from bosaris_dask.errors import PlotError  # noqa: E402
from bosaris_dask.metrics import evaluate_arrays  # noqa: E402
from bosaris_dask.plots import DET_WINDOWS, det_plot, nbe_plot  # noqa: E402
from bosaris_dask.plots.axes import resolve_window  # noqa: E402

RNG = np.random.default_rng(6)
TAR, NON = RNG.normal(2.0, 1.5, 500), RNG.normal(-1.0, 1.0, 40_000)
DS = evaluate_arrays(TAR, NON, name="sys")


@pytest.fixture
def ax():
    return Figure(figsize=(6, 6)).add_subplot()


def gids(ax):
    return [a.get_gid() for a in (*ax.get_lines(), *ax.patches)]


@pytest.mark.parametrize(
    "name, limits",
    [
        ("old", (5e-4, 0.5, 5e-4, 0.5)),
        ("new", (5e-6, 5e-3, 1e-2, 0.99)),
        ("big", (5e-6, 0.99, 5e-6, 0.99)),
        ("sre10", (3e-6, 0.5, 3e-4, 0.9)),
    ],
)
def test_toolkit_windows_set_the_axis_limits(name, limits, ax):
    assert DET_WINDOWS[name] == limits
    det_plot(DS, ax=ax, window=name)
    np.testing.assert_allclose(ax.get_xlim(), ndtri(limits[:2]), rtol=1e-12)
    np.testing.assert_allclose(ax.get_ylim(), ndtri(limits[2:]), rtol=1e-12)


@pytest.mark.parametrize("text", ["0.001:0.2:0.01:0.6", "0.001,0.2,0.01,0.6"])
def test_window_from_a_string_of_four_limits(ax, text):
    det_plot(DS, ax=ax, window=text)  # ':' as --operating-point joins parts; ',' as before
    np.testing.assert_allclose(ax.get_xlim(), ndtri([0.001, 0.2]), rtol=1e-12)
    np.testing.assert_allclose(ax.get_ylim(), ndtri([0.01, 0.6]), rtol=1e-12)
    with pytest.raises(PlotError, match="four limits"):
        resolve_window("0.001:0.2:0.01")
    with pytest.raises(PlotError, match="four limits"):
        resolve_window("0.001,0.2,0.01")
    with pytest.raises(PlotError, match="0 < low < high < 1"):
        resolve_window("0.2,0.001,0.01,0.6")
    with pytest.raises(PlotError, match="four probabilities"):
        resolve_window("0.001,x,0.01,0.6")


@pytest.mark.parametrize(
    "dr30, want", [(True, {"fa", "miss"}), ("both", {"fa", "miss"}), ("miss", {"miss"}),
                   ("fa", {"fa"}), ("none", set()), (False, set())],
)  # fmt: skip
def test_det_dr30_sides(dr30, want, ax):
    det_plot(DS, ax=ax, window="big", dr30=dr30)
    drawn = {g.split("-")[1] for g in gids(ax) if g and g.startswith("det/dr30-")}
    assert drawn == want
    lines = {g: line for line in ax.get_lines() if (g := line.get_gid())}
    if "fa" in want:  # Pfa = 30/N, Pmiss = 30/T
        np.testing.assert_allclose(lines["det/dr30-fa"].get_xdata(), [ndtri(30 / 40_000)] * 2)
    if "miss" in want:
        np.testing.assert_allclose(lines["det/dr30-miss"].get_ydata(), [ndtri(30 / 500)] * 2)


@pytest.mark.parametrize("dr30, want", [("miss", {"miss"}), ("fa", {"fa"}), ("none", set())])
def test_nbe_dr30_sides(dr30, want, ax):
    nbe_plot(DS, ax=ax, dr30=dr30)
    marks = {g.split("/")[1][5:] for g in gids(ax) if g.count("/") == 2 and "/dr30-" in g}
    spans = {g.rsplit("-", 1)[1] for g in gids(ax) if g.startswith("nbe/dr30-span-")}
    assert marks == want and spans == want


def test_bad_dr30_is_a_plot_error(ax):
    with pytest.raises(PlotError, match="dr30 must be"):
        det_plot(DS, ax=ax, dr30="misses")
