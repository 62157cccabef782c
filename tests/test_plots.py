"""Plots: what is drawn is what was computed (line data, marks, ticks, limits, legends, files)."""

import json
import logging
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from scipy.special import expit, logit, ndtr, ndtri  # noqa: E402

from bosaris_dask.errors import BosarisError, PlotError  # noqa: E402
from bosaris_dask.metrics import (  # noqa: E402
    evaluate,
    evaluate_arrays,
    operating_points,
    rocch,
    sweep_points,
)
from bosaris_dask.plots import (  # noqa: E402
    DET_WINDOWS,
    ape_plot,
    auto_window,
    cllr_plot,
    det_plot,
    nbe_plot,
    rocch_det_points,
    save_figure,
    save_standard_plots,
)
from bosaris_dask.plots.axes import det_ticks, percent_label, resolve_window  # noqa: E402
from bosaris_dask.plots.nbe import contributions  # noqa: E402
from bosaris_dask.simulate import simulate  # noqa: E402

DATA = Path(__file__).parent / "data" / "gauss1"
NAMES = ["a", "b", "c"]


@pytest.fixture(scope="module")
def gauss1():
    tar = np.loadtxt(DATA / "tar.txt")
    non = np.loadtxt(DATA / "non.txt")
    return tar, non, json.loads((DATA / "oracle.json").read_text())


@pytest.fixture(scope="module")
def three():
    """Three simulated systems on one key (2,400 targets, 117,600 non-targets)."""
    key, scores = simulate(300, 400, systems=3, target_rate=0.02, seed=3)
    return evaluate(scores, key, names=NAMES)


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(5)
    tar, non = rng.normal(2.0, 1.5, 400), rng.normal(-1.0, 1.0, 3000)
    return tar, non, evaluate_arrays(tar, non, name="small")


@pytest.fixture
def ax():
    fig = Figure(figsize=(6, 6))
    return fig.add_subplot()


def gid_lines(ax, gid):
    return [line for line in ax.get_lines() if line.get_gid() == gid]


def finite(a):
    a = np.asarray(a, dtype=float)
    return a[~np.isnan(a)]


# --------------------------------------------------------------------------------------------
# probit axes
# --------------------------------------------------------------------------------------------


def test_percent_labels_and_classic_ticks(ax):
    assert [percent_label(p) for p in (5e-4, 0.001, 0.02, 0.1, 0.5, 0.8, 0.99, 1e-6)] == [
        "0.05", "0.1", "2", "10", "50", "80", "99", "0.0001"
    ]  # fmt: skip
    det_plot(evaluate_arrays([1.0, 2.0], [0.0, 1.5]), ax=ax, window="classic")
    expected = ["0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50"]
    values = np.array([0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50]) / 100
    for axis in (ax.xaxis, ax.yaxis):
        assert [t.get_text() for t in axis.get_ticklabels()] == expected
        np.testing.assert_allclose(axis.get_ticklocs(), ndtri(values), rtol=1e-12)
    np.testing.assert_allclose(ax.get_xlim(), ndtri([5e-4, 0.5]))
    np.testing.assert_allclose(ax.get_ylim(), ndtri([5e-4, 0.5]))
    assert ax.get_xlabel() == "False alarm probability (%)"
    assert ax.get_ylabel() == "Miss probability (%)"


@pytest.mark.parametrize("window", [*DET_WINDOWS.values(), (1e-9, 0.3, 0.02, 0.999)])
def test_det_ticks_inside_window_and_apart(window):
    for lo, hi in (window[:2], window[2:]):
        ticks = det_ticks(lo, hi)
        assert len(ticks) >= 4
        assert np.all((ticks >= lo * (1 - 1e-9)) & (ticks <= hi * (1 + 1e-9)))
        gaps = np.diff(ndtri(ticks))
        assert gaps.min() >= 0.055 * (ndtri(hi) - ndtri(lo)) * (1 - 1e-6)
        # every tick is a 1-2-5 probability or the mirror image of one
        for t in ticks:
            q = min(t, 1 - t)
            mantissa = q / 10 ** math.floor(math.log10(q) + 1e-9)
            assert min(abs(mantissa - m) for m in (1, 2, 5)) < 1e-6 or abs(q - 0.5) < 1e-12


def test_low_fa_window_ticks(ax):
    det_plot(evaluate_arrays([1.0, 2.0], [0.0, 1.5]), ax=ax, window="low_fa")
    xs = [t.get_text() for t in ax.xaxis.get_ticklabels()]
    ys = [t.get_text() for t in ax.yaxis.get_ticklabels()]
    assert xs == ["0.0001", "0.001", "0.01", "0.1", "0.5", "1", "2", "5", "10", "20"]
    assert ys[0] == "0.1" and ys[-3:] == ["80", "90", "95"]
    np.testing.assert_allclose(ax.get_xlim(), ndtri([1e-6, 0.2]))


@pytest.mark.parametrize(
    "window", ["nope", (0.1, 0.05, 0.01, 0.5), (0.0, 0.5, 0.01, 0.5), (0.1, 0.5), "x" * 0]
)
def test_bad_windows(window):
    with pytest.raises(PlotError):
        resolve_window(window)


# --------------------------------------------------------------------------------------------
# ROCCH-DET points: the MATLAB toolkit's curve
# --------------------------------------------------------------------------------------------


def test_rocch_det_reproduces_the_toolkit(gauss1):
    tar, non, oracle = gauss1
    det = oracle["det"]
    pfa_lo, pfa_hi, pmiss_lo, pmiss_hi = det["rocchdet_box"]
    pmiss, pfa = rocch(tar, non)
    x, y = rocch_det_points(pmiss, pfa, (pfa_lo, pfa_hi, pmiss_lo, pmiss_hi),
                            oracle["meta"]["rocchdet_dps"])  # fmt: skip
    assert len(x) == len(det["rocchdet_probit_pfa"]) == 3232
    np.testing.assert_allclose(x, det["rocchdet_probit_pfa"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(y, det["rocchdet_probit_pmiss"], rtol=0, atol=1e-12)
    # the same from an evaluation's NaN-padded vertices
    ds = evaluate_arrays(tar, non)
    x2, y2 = rocch_det_points(ds.rocch_pmiss[0], ds.rocch_pfa[0], "classic", 100)
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(y, y2)


def test_rocch_det_points_lie_on_the_hull_inside_the_window(small):
    tar, non, _ = small
    pmiss, pfa = rocch(tar, non)
    window = (0.002, 0.3, 0.01, 0.6)
    x, y = rocch_det_points(pmiss, pfa, window, 7)
    px, py = ndtr(x), ndtr(y)
    tol = 1e-12
    assert np.all((px >= window[0] - tol) & (px <= window[1] + tol))
    assert np.all((py >= window[2] - tol) & (py <= window[3] + tol))
    # each point is on the hull: the hull's Pmiss at that Pfa (linear interpolation)
    order = np.argsort(pfa)
    np.testing.assert_allclose(py, np.interp(px, pfa[order], pmiss[order]), atol=1e-12)
    # every hull vertex strictly inside the window is drawn
    inside = (pfa > window[0]) & (pfa < window[1]) & (pmiss > window[2]) & (pmiss < window[3])
    for v_pfa, v_pmiss in zip(pfa[inside], pmiss[inside], strict=True):
        assert np.min(np.hypot(px - v_pfa, py - v_pmiss)) < 1e-12
    assert len(x) % 8 == 0  # 7 intervals: 8 points per drawn segment


# --------------------------------------------------------------------------------------------
# DET plots
# --------------------------------------------------------------------------------------------


def test_det_curves_marks_and_dr30_are_the_computed_values(three, ax):
    det_plot(three, ax=ax, curve="both", act_dcf=True, window="low_fa")
    colors = set()
    ops = operating_points(three)
    for name in NAMES:
        r = three.sel(system=name)
        (curve,) = gid_lines(ax, f"det/curve/{name}")
        x, y = rocch_det_points(r.rocch_pmiss, r.rocch_pfa, "low_fa", 100)
        np.testing.assert_array_equal(curve.get_xydata(), np.column_stack([x, y]))
        colors.add(curve.get_color())
        (steppy,) = gid_lines(ax, f"det/steppy/{name}")
        want = ndtri(np.column_stack([finite(r.roc_pfa), finite(r.roc_pmiss)]))
        want = np.clip(want, -40, 40)
        np.testing.assert_allclose(steppy.get_xydata(), want, rtol=1e-12)
        (eer,) = gid_lines(ax, f"det/eer/{name}")
        e = ndtri(float(r.eer))
        np.testing.assert_allclose(eer.get_xydata(), [[e, e]])
        for which in ("min", "act"):
            marks = gid_lines(ax, f"det/{which}_dcf/{name}")
            assert len(marks) == ops.sizes["prior"] == 4
            o = ops.sel(system=name)
            got = np.vstack([m.get_xydata() for m in marks])
            want = np.clip(ndtri(np.column_stack([o[f"{which}_pfa"], o[f"{which}_pmiss"]])),
                           -40, 40)  # fmt: skip
            np.testing.assert_allclose(got, want, rtol=1e-12)
            assert [m.get_marker() for m in marks] == ["o", "s", "^", "D"]
    assert len(colors) == 3
    # DR30: Pfa = 30/N (vertical) and Pmiss = 30/T (horizontal), shared by the three systems
    (fa,) = gid_lines(ax, "det/dr30-fa")
    (miss,) = gid_lines(ax, "det/dr30-miss")
    np.testing.assert_allclose(fa.get_xdata(), [ndtri(30 / 117600)] * 2)
    np.testing.assert_allclose(miss.get_ydata(), [ndtri(30 / 2400)] * 2)
    assert {t.get_text() for t in ax.texts} == {"30 false alarms", "30 misses"}


def test_det_legend_names_systems_with_eer_and_keys_the_marks(three, ax):
    det_plot(three, ax=ax)
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == [f"{n} (EER {100 * float(three.eer.sel(system=n)):.2f}%)" for n in NAMES]
    (key,) = [a for a in ax.artists if a.get_gid() == "det/key"]
    key_texts = [t.get_text() for t in key.get_texts()]
    # the key lists the priors whose minDCF point is inside the classic window
    ops = operating_points(three)
    pfa, pmiss = ops.min_pfa.values, ops.min_pmiss.values
    inside = ((pfa >= 5e-4) & (pfa <= 0.5) & (pmiss >= 5e-4) & (pmiss <= 0.5)).any(axis=0)
    assert 0 < inside.sum() < 4  # the test is worth something: some priors are outside
    want = [f"minDCF, P={p:g}" for p in ops.prior.values[inside]]
    # and names those outside it, for every system (they were left out without a word)
    unseen = ", ".join(f"P={p:g}" for p in ops.prior.values[~inside])
    assert key_texts == [*want, f"minDCF, {unseen}: outside the window", "EER", "DR30: 30 errors"]


def test_det_key_names_a_stated_point_with_its_costs(ax):
    """A point stated with costs is keyed as the tables name it (was ``P=0.0917431``)."""
    rng = np.random.default_rng(5)
    ds = evaluate_arrays(rng.normal(2, 1, 2000), rng.normal(0, 1, 20000), priors=[0.5],
                         operating_points=["0.01:10:1"])  # fmt: skip
    det_plot(ds, ax=ax, window="wide")
    (key,) = [a for a in ax.artists if a.get_gid() == "det/key"]
    texts = [t.get_text() for t in key.get_texts()]
    assert texts[:2] == ["minDCF, P=0.5", "minDCF, 0.01:10:1"]


def test_det_key_says_why_a_dr30_line_is_missing(ax):
    # 20 targets: 30 misses never happen, so no Pmiss DR30 line; the key says why
    rng = np.random.default_rng(3)
    ds = evaluate_arrays(rng.normal(2, 1, 20), rng.normal(0, 1, 5000), name="few")
    det_plot(ds, ax=ax, window="wide")
    assert gid_lines(ax, "det/dr30-miss") == [] and len(gid_lines(ax, "det/dr30-fa")) == 1
    (key,) = [a for a in ax.artists if a.get_gid() == "det/key"]
    texts = [t.get_text() for t in key.get_texts()]
    assert texts[-2:] == ["DR30: 30 errors", "(30 or fewer targets: no line)"]
    ax.clear()
    det_plot(evaluate_arrays(rng.normal(2, 1, 40), rng.normal(0, 1, 5000)), ax=ax)
    (key,) = [a for a in ax.artists if a.get_gid() == "det/key"]
    assert [t.get_text() for t in key.get_texts()][-1] == "DR30: 30 errors"


def test_det_legends_do_not_cover_curves(three):
    fig = Figure(figsize=(6.4, 6.4), layout="constrained")
    ax = det_plot(three, ax=fig.add_subplot())
    fig.canvas.draw()
    boxes = [ax.get_legend().get_window_extent()]
    boxes += [a.get_window_extent() for a in ax.artists if a.get_gid() == "det/key"]
    for name in NAMES:
        (curve,) = gid_lines(ax, f"det/curve/{name}")
        points = ax.transData.transform(curve.get_xydata())
        for box in boxes:
            assert not np.any(_inside(box, points))


def _inside(box, points):
    return (points[:, 0] > box.x0) & (points[:, 0] < box.x1) & (
        points[:, 1] > box.y0) & (points[:, 1] < box.y1)  # fmt: skip


def test_det_steppy_follows_a_run_of_ties_along_its_roc_segment(ax):
    """Tied scores make a straight ROC segment; joined straight on probit axes (or aimed at
    probit -40 where it reaches a rate of 0) the line passed up to 0.08 probit below the
    ROCCH. Every drawn point is an exact ROC point or lies on the segment between two, and
    the exact points are all drawn, in order."""
    rng = np.random.default_rng(3)
    tar = np.concatenate([rng.normal(2, 1, 990), np.zeros(10)])  # ties at 0 with ...
    non = np.concatenate([rng.normal(-1, 1, 700), np.zeros(300)])  # ... 300 non-targets
    ds = evaluate_arrays(tar, non, name="t")
    det_plot(ds, ax=ax, curve="steppy", window=(1e-3, 0.9, 1e-3, 0.9), eer=False, dr30=False)
    (line,) = gid_lines(ax, "det/curve/t")
    drawn = line.get_xydata()
    pmiss, pfa = finite(ds.roc_pmiss.sel(system="t")), finite(ds.roc_pfa.sel(system="t"))
    exact = np.clip(ndtri(np.column_stack([pfa, pmiss])), -40, 40)
    at = [int(np.flatnonzero((drawn == p).all(axis=1))[0]) for p in exact]
    assert at == sorted(at) and len(drawn) > len(exact)  # all there, in order, and more
    roc = ndtr(drawn)  # back in ROC space: on the segment of the exact points around each
    for k in range(len(at) - 1):
        between = roc[at[k] + 1 : at[k + 1]]
        if len(between):
            a, b = np.array([pfa[k], pmiss[k]]), np.array([pfa[k + 1], pmiss[k + 1]])
            t = (between - a) @ (b - a) / ((b - a) @ (b - a))
            np.testing.assert_allclose(a + t[:, None] * (b - a), between, atol=1e-12)
    (tie,) = np.flatnonzero(-np.diff(pfa) > 0.25)  # the run at 0: 300 non-targets, 10 targets
    assert pmiss[tie + 1] - pmiss[tie] == pytest.approx(0.01) and at[tie + 1] - at[tie] > 10


def test_det_steppy_only_and_selected_systems_and_priors(three, ax):
    det_plot(three, ax=ax, systems=["c", "a"], curve="steppy", priors=[0.1], dr30=False,
             eer=False)  # fmt: skip
    assert [line.get_gid() for line in ax.get_lines()] == [
        "det/curve/c", "det/min_dcf/c", "det/curve/a", "det/min_dcf/a"
    ]  # fmt: skip
    r = operating_points(three).sel(system="a")
    np.testing.assert_allclose(
        gid_lines(ax, "det/min_dcf/a")[0].get_xydata(),
        ndtri([[float(r.min_pfa.sel(prior=0.1)), float(r.min_pmiss.sel(prior=0.1))]]),
    )
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["c", "a"]


def test_det_dev_and_eval_share_an_axes_in_new_colours(three, small, ax):
    _, _, ds = small
    det_plot({"dev": three, "eval": ds}, ax=ax)
    labels = [t.get_text().split(" (")[0] for t in ax.get_legend().get_texts()]
    assert labels == ["a [dev]", "b [dev]", "c [dev]", "small [eval]"]
    det_plot(ds, ax=ax)  # a second call on the same Axes takes the next colour
    colors = [gid_lines(ax, f"det/curve/{lab}")[0].get_color() for lab in labels + ["small"]]
    assert len(set(colors)) == 5
    # two different trial counts: two DR30 lines per axis, in the curves' colours
    assert len(gid_lines(ax, "det/dr30-fa")) >= 2


def test_close_dr30_lines_share_one_label(three, ax):
    # per-condition dev and eval curves of nearly equal trial counts drew their "30 misses"
    # labels over each other, a smear at the right edge
    near = three.assign(pmiss30=three.pmiss30 * 1.02, pfa30=three.pfa30 * 1.02)
    det_plot({"dev": three, "eval": near}, ax=ax, window=(1e-4, 0.5, 1e-4, 0.5))
    assert len(gid_lines(ax, "det/dr30-miss")) == 2 and len(gid_lines(ax, "det/dr30-fa")) == 2
    for words in ("30 misses", "30 false alarms"):
        (label,) = [t for t in ax.texts if t.get_text() == words]
        assert matplotlib.colors.to_hex(label.get_color()) == "#595959"  # the shared grey
    far = three.assign(pmiss30=three.pmiss30 * 3)  # far apart: a label each
    det_plot({"dev": three, "eval": far}, ax=(ax2 := Figure().add_subplot()))
    assert len([t for t in ax2.texts if t.get_text() == "30 misses"]) == 2


def test_one_systems_dev_and_eval_curves_share_a_hue_the_eval_darker(three, ax):
    # dev and eval curves of one system had unrelated colours (the eval ones went on cycling)
    renamed = three.assign_coords(system=["a-eval", "b-eval", "c-eval"])  # as plot --eval-key
    det_plot({"dev": three, "eval": renamed}, ax=ax)
    dev = [matplotlib.colors.to_rgb(gid_lines(ax, f"det/curve/{n} [dev]")[0].get_color())
           for n in NAMES]  # fmt: skip
    ev = [matplotlib.colors.to_rgb(gid_lines(ax, f"det/curve/{n}-eval [eval]")[0].get_color())
          for n in NAMES]  # fmt: skip
    assert len(set(dev)) == 3
    for d, e in zip(dev, ev, strict=True):  # the i-th system of each set: one hue, darker
        np.testing.assert_allclose(e, np.array(d) * 0.6, atol=1 / 255)
    _, ax2 = plt.subplots()
    reordered = three.sel(system=["c", "a", "b"])  # same names: paired by name, not position
    det_plot({"dev": three, "eval": reordered}, ax=ax2)
    for n in NAMES:
        d = matplotlib.colors.to_rgb(gid_lines(ax2, f"det/curve/{n} [dev]")[0].get_color())
        e = matplotlib.colors.to_rgb(gid_lines(ax2, f"det/curve/{n} [eval]")[0].get_color())
        np.testing.assert_allclose(e, np.array(d) * 0.6, atol=1 / 255)
    _, ax3 = plt.subplots()  # one system per set: distinct hues read better than shades
    det_plot({"dev": three.sel(system=["a"]), "eval": renamed.sel(system=["a-eval"])}, ax=ax3)
    one = [
        gid_lines(ax3, f"det/curve/{lab}")[0].get_color() for lab in ("a [dev]", "a-eval [eval]")
    ]
    assert one == list(matplotlib.rcParams["axes.prop_cycle"].by_key()["color"][:2])
    plt.close(ax2.figure)
    plt.close(ax3.figure)


def test_condition_curves_of_dev_and_eval_pair_up_when_a_set_leaves_one_out(three):
    # --by curves are "name [condition]"; eval names differ (their files) and a condition
    # without targets is left out of one set: pairing by position shifted every later hue
    dev = three.sel(system=["a", "b", "a", "b"]).assign_coords(
        system=["a [x=1]", "b [x=1]", "a [x=2]", "b [x=2]"])  # fmt: skip
    ev = three.sel(system=["a", "a", "b"]).assign_coords(
        system=["a2 [x=1]", "a2 [x=2]", "b2 [x=2]"])  # fmt: skip
    ax = det_plot({"dev": dev, "eval": ev})
    color = {lab: matplotlib.colors.to_rgb(gid_lines(ax, f"det/curve/{lab}")[0].get_color())
             for lab in ("a [x=2] [dev]", "b [x=2] [dev]", "a2 [x=2] [eval]",
                         "b2 [x=2] [eval]")}  # fmt: skip
    np.testing.assert_allclose(color["a2 [x=2] [eval]"], np.array(color["a [x=2] [dev]"]) * 0.6,
                               atol=1 / 255)  # fmt: skip
    np.testing.assert_allclose(color["b2 [x=2] [eval]"], np.array(color["b [x=2] [dev]"]) * 0.6,
                               atol=1 / 255)  # fmt: skip
    plt.close(ax.figure)


def test_det_auto_window_and_custom_limits(small, ax):
    tar, non, ds = small
    lo_fa, hi_fa, lo_miss, hi_miss = auto_window(ds)
    # lower limits: half the DR30 rates, rounded down to a 1-2-5 value
    assert lo_fa == 0.005 and 30 / 3000 / 2 == 0.005
    assert lo_miss == 0.02 and 30 / 400 / 2 == 0.0375
    assert hi_fa == 0.5 and hi_miss >= 0.5
    det_plot(ds, ax=ax, window=(0.01, 0.4, 0.02, 0.7))
    np.testing.assert_allclose([*ax.get_xlim(), *ax.get_ylim()], ndtri([0.01, 0.4, 0.02, 0.7]))
    x = gid_lines(ax, "det/curve/small")[0].get_xdata()
    assert x.min() >= ndtri(0.01) - 1e-12 and x.max() <= ndtri(0.4) + 1e-12


@pytest.mark.parametrize(
    "kwargs",
    [{"systems": ["nope"]}, {"window": "tiny"}, {"curve": "smooth"}, {"priors": [0.3]},
     {"points_per_segment": 0}],
)  # fmt: skip
def test_det_bad_options_raise_plot_errors(three, ax, kwargs):
    with pytest.raises(PlotError):
        det_plot(three, ax=ax, **kwargs)
    assert issubclass(PlotError, BosarisError) and issubclass(PlotError, ValueError)


def test_not_an_evaluation_is_a_plot_error(small, ax):
    with pytest.raises(PlotError, match="not an evaluation"):
        det_plot({"x": small[2].drop_dims("system")}, ax=ax)
    with pytest.raises(PlotError):
        nbe_plot({}, ax=ax)


# --------------------------------------------------------------------------------------------
# NBE plots
# --------------------------------------------------------------------------------------------


def brute_act(tar, non, plo):
    """Normalized actDCF parts by brute force: accept iff score >= -plo."""
    pmiss = (tar[None, :] < -plo[:, None]).mean(axis=1)
    pfa = (non[None, :] >= -plo[:, None]).mean(axis=1)
    norm = np.minimum(expit(plo), expit(-plo))
    return expit(plo) * pmiss / norm, expit(-plo) * pfa / norm


def test_nbe_curves_and_contributions_are_the_sweep(small, ax):
    tar, non, ds = small
    nbe_plot(ds, ax=ax, contributions=True)
    r = sweep_points(ds).sel(system="small")
    plo = r.plo.values
    np.testing.assert_array_equal(plo, np.arange(-100, 101) / 10)  # the sweep, no prior added
    np.testing.assert_array_equal(gid_lines(ax, "nbe/act/small")[0].get_xdata(), plo)
    np.testing.assert_array_equal(gid_lines(ax, "nbe/act/small")[0].get_ydata(),
                                  r.act_dcf.values)  # fmt: skip
    np.testing.assert_array_equal(gid_lines(ax, "nbe/min/small")[0].get_ydata(),
                                  r.min_dcf.values)  # fmt: skip
    miss, fa = brute_act(tar, non, plo)
    np.testing.assert_allclose(gid_lines(ax, "nbe/act_miss/small")[0].get_ydata(), miss,
                               rtol=1e-12, atol=1e-15)  # fmt: skip
    np.testing.assert_allclose(gid_lines(ax, "nbe/act_fa/small")[0].get_ydata(), fa,
                               rtol=1e-12, atol=1e-15)  # fmt: skip
    np.testing.assert_allclose(miss + fa, r.act_dcf.values, rtol=1e-12)
    mm, mf = contributions(r, "min")
    np.testing.assert_allclose(gid_lines(ax, "nbe/min_miss/small")[0].get_ydata(), mm)
    np.testing.assert_allclose(mm + mf, r.min_dcf.values, rtol=1e-12)
    assert gid_lines(ax, "nbe/act/small")[0].get_linestyle() == "-"
    assert gid_lines(ax, "nbe/min/small")[0].get_linestyle() == "--"


def test_nbe_dr30_marks_default_line_and_operating_points(small, ax):
    tar, non, ds = small
    nbe_plot(ds, ax=ax)
    r = sweep_points(ds).sel(system="small")
    plo = r.plo.values
    n_fa = np.rint(r.min_pfa.values * len(non))
    n_miss = np.rint(r.min_pmiss.values * len(tar))
    # the '<' mark: the first sweep point with 30 minDCF false alarms, on the minDCF curve
    (fa,) = gid_lines(ax, "nbe/dr30-fa/small")
    i = int(np.flatnonzero(n_fa >= 30)[0])
    assert i > 0 and n_fa[i - 1] < 30
    np.testing.assert_array_equal(fa.get_xydata(), [[plo[i], r.min_dcf.values[i]]])
    assert fa.get_marker() == "<"
    (miss,) = gid_lines(ax, "nbe/dr30-miss/small")
    j = int(np.flatnonzero(n_miss >= 30)[-1])
    assert j < len(plo) - 1 and n_miss[j + 1] < 30
    np.testing.assert_array_equal(miss.get_xydata(), [[plo[j], r.min_dcf.values[j]]])
    # one system: the unreliable ranges are shaded
    assert {p.get_gid() for p in ax.patches} == {"nbe/dr30-span-fa", "nbe/dr30-span-miss"}
    (default,) = gid_lines(ax, "nbe/default")
    np.testing.assert_array_equal(default.get_ydata(), [1, 1])
    ops = gid_lines(ax, "nbe/operating-point")
    np.testing.assert_allclose(sorted(o.get_xdata()[0] for o in ops),
                               sorted(logit([0.5, 0.1, 0.01, 0.001])))  # fmt: skip
    assert sorted(t.get_text() for t in ax.texts) == ["P=0.001", "P=0.01", "P=0.1", "P=0.5"]
    np.testing.assert_allclose([*ax.get_xlim(), *ax.get_ylim()], [-10, 1, 0, 1.2])


def test_nbe_options_dev_eval_and_legend_outside(three, small, ax):
    _, _, ds = small
    nbe_plot({"dev": three, "eval": ds}, ax=ax, xlim=(-8, 4), min_dcf=False,
             operating_points=[0.2], default=False, dr30=False)  # fmt: skip
    gids = [line.get_gid() for line in ax.get_lines()]
    assert gids == ["nbe/act/a [dev]", "nbe/act/b [dev]", "nbe/act/c [dev]",
                    "nbe/act/small [eval]", "nbe/operating-point"]  # fmt: skip
    np.testing.assert_allclose(gid_lines(ax, "nbe/operating-point")[0].get_xdata(),
                               [logit(0.2)] * 2)  # fmt: skip
    texts = [t.get_text().split(": ")[0] for t in ax.get_legend().get_texts()]  # (": clipped")
    assert texts == ["a [dev]", "b [dev]", "c [dev]", "small [eval]", "actDCF"]
    ax.figure.canvas.draw()
    assert ax.get_legend().get_window_extent().x0 > ax.get_window_extent().x1
    with pytest.raises(PlotError):
        nbe_plot(ds, ax=ax, act_dcf=False, min_dcf=False)
    with pytest.raises(PlotError):
        nbe_plot(ds, ax=ax, operating_points=[1.5])


# --------------------------------------------------------------------------------------------
# APE and the Cllr decomposition
# --------------------------------------------------------------------------------------------


def test_ape_areas_are_cllr_and_min_cllr(ax):
    rng = np.random.default_rng(11)
    tar, non = rng.normal(1.5, 1.2, 150), rng.normal(-2.0, 1.5, 600)
    sweep = np.linspace(-30, 30, 24001)
    ds = evaluate_arrays(tar, non, sweep=sweep, name="s")
    ape_plot(ds, ax=ax)
    act = gid_lines(ax, "ape/act/s")[0].get_xydata()
    low = gid_lines(ax, "ape/min/s")[0].get_xydata()
    np.testing.assert_array_equal(act[:, 1], sweep_points(ds).act_dcf_raw.values[0])
    np.testing.assert_array_equal(low[:, 0], sweep)
    area = np.trapezoid(act[:, 1], act[:, 0]) / (2 * np.log(2))
    min_area = np.trapezoid(low[:, 1], low[:, 0]) / (2 * np.log(2))
    assert area == pytest.approx(float(ds.cllr[0]), rel=2e-3)
    assert min_area == pytest.approx(float(ds.min_cllr[0]), rel=2e-3)
    default = gid_lines(ax, "ape/default")[0].get_xydata()
    assert np.trapezoid(default[:, 1], default[:, 0]) / (2 * np.log(2)) == pytest.approx(1, 1e-6)


def test_cllr_bars_are_min_cllr_plus_calibration_loss(three, ax):
    cllr_plot(three, ax=ax)
    for name in NAMES:
        r = three.sel(system=name)
        (low,) = [p for p in ax.patches if p.get_gid() == f"cllr/min/{name}"]
        (loss,) = [p for p in ax.patches if p.get_gid() == f"cllr/loss/{name}"]
        assert low.get_x() == 0 and low.get_width() == pytest.approx(float(r.min_cllr))
        assert loss.get_x() == pytest.approx(float(r.min_cllr))
        assert loss.get_x() + loss.get_width() == pytest.approx(float(r.cllr))
        assert low.get_y() == loss.get_y()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["c", "b", "a"]  # a on top
    for text in ax.texts:  # "0.405 = 0.335 + 0.071": each rounded apart, it did not add up
        total, least, loss = (float(x) for x in text.get_text().replace("+", "=").split("="))
        assert round(least + loss, 3) == total


# --------------------------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------------------------


def test_save_standard_plots_writes_real_images_without_pyplot(three, tmp_path):
    before = plt.get_fignums()
    out = tmp_path / "new" / "plots"
    paths = save_standard_plots(three, out, formats=("png", "pdf", "svg"))
    assert plt.get_fignums() == before
    names = [p.name for p in paths]
    assert names[:3] == ["det.png", "det.pdf", "det.svg"] and len(paths) == 12
    assert sorted(p.name for p in out.iterdir()) == sorted(names)  # no temporaries left
    for p in paths:
        head = p.read_bytes()[:8]
        assert (
            head
            == {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-1.4", "svg": b"<?xml ve"}[p.suffix[1:]]
        )
    width, height = np.frombuffer((out / "det.png").read_bytes()[16:24], dtype=">u4")
    assert (width, height) == (960, 960)  # 6.4 in at 150 dpi
    with pytest.raises(PlotError, match="formats"):
        save_standard_plots(three, out, formats=("jpg",))


def test_standard_plots_cut_short_leave_the_previous_set_whole(three, tmp_path, monkeypatch):
    # each image was atomic, not the set: an interrupt left some new and some old
    from bosaris_dask.plots import _common, standard

    out = tmp_path / "plots"
    save_standard_plots(three, out, formats=("svg",))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    write = _common.write_figure
    calls = []

    def third_fails(fig, path, fmt, **kw):
        calls.append(path)
        if len(calls) == 3:
            raise KeyboardInterrupt
        write(fig, path, fmt, **kw)

    monkeypatch.setattr(standard, "write_figure", third_fails)
    with pytest.raises(KeyboardInterrupt):  # (one system: other images than the previous)
        save_standard_plots(three, out, formats=("svg",), systems=[str(three.system.values[0])])
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no temporaries either
    calls.clear()
    with pytest.raises(KeyboardInterrupt):  # into a new folder: none left behind
        save_standard_plots(three, tmp_path / "fresh", formats=("svg",))
    assert not (tmp_path / "fresh").exists()


def test_save_figure_suffix_and_plot_functions_make_figures(small, tmp_path):
    _, _, ds = small
    ax = nbe_plot(ds)  # no ax: a new pyplot figure (what a notebook shows)
    try:
        assert ax.figure.number in plt.get_fignums()
        assert save_figure(ax, tmp_path / "nbe.svg").read_text().startswith("<?xml")
        with pytest.raises(PlotError, match="suffix"):
            save_figure(ax, tmp_path / "nbe.jpeg")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["nbe.svg"]
    finally:
        plt.close("all")


@pytest.mark.parametrize("size", [3.0, 4.5, 6.4])
@pytest.mark.parametrize("window", ["classic", "low_fa", "wide"])
def test_det_tick_labels_never_overlap(size, window):
    fig = Figure(figsize=(size, size), layout="constrained")
    ax = det_plot(evaluate_arrays([1.0, 2.0], [0.0, 1.5]), ax=fig.add_subplot(), window=window,
                  legend=False)  # fmt: skip
    fig.canvas.draw()
    for labels, lo in ((ax.get_xticklabels(), "x0"), (ax.get_yticklabels(), "y0")):
        boxes = sorted((t.get_window_extent() for t in labels if t.get_text()),
                       key=lambda b: getattr(b, lo))  # fmt: skip
        assert len(boxes) >= 5
        for a, b in zip(boxes, boxes[1:], strict=False):
            assert not a.overlaps(b), (size, window)


def test_save_plot_draws_one_kind_with_options(three, tmp_path):
    from bosaris_dask.plots import save_plot

    before = plt.get_fignums()
    out = save_plot(three, "det", tmp_path / "det.png", window="low_fa", systems=["b"])
    assert out.read_bytes()[:4] == b"\x89PNG" and plt.get_fignums() == before
    for kind in ("nbe", "ape", "cllr"):
        assert save_plot(three, kind, tmp_path / f"{kind}.pdf").read_bytes()[:4] == b"%PDF"
    with pytest.raises(PlotError, match="unknown plot"):
        save_plot(three, "roc", tmp_path / "roc.png")
    with pytest.raises(PlotError, match="det plot"):
        save_plot(three, "det", tmp_path / "x.png", xlim=(-5, 0))
    with pytest.raises(PlotError, match="no system"):
        save_plot(three, "nbe", tmp_path / "x.png", systems=["zzz"])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ape.pdf", "cllr.pdf", "det.png", "nbe.pdf"
    ]  # fmt: skip


def test_names_matplotlib_would_hide_or_misread_are_drawn_as_given():
    # a label starting with '_' is left out of legends; '$...$' is read as math text
    key, scores = simulate(30, 40, systems=2, target_rate=0.1, seed=1)
    ds = evaluate(scores, key, names=["_fused", "sys$^$x"])
    for draw in (det_plot, nbe_plot):
        ax = draw(ds)
        texts = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(t.lstrip("\u200b").startswith("_fused") for t in texts), texts
        assert any(t.startswith(r"sys\$^\$x") for t in texts), texts
        ax.figure.canvas.draw()  # the math-text parser raised on 'sys$^$x'
        plt.close(ax.figure)


@pytest.mark.parametrize("n_tar", [1, 5, 30])
def test_auto_window_with_30_or_fewer_targets_is_a_window(n_tar):
    rng = np.random.default_rng(n_tar)
    ds = evaluate_arrays(rng.normal(2, 1, n_tar), rng.normal(0, 1, 5000))
    pfa_lo, pfa_hi, pmiss_lo, pmiss_hi = auto_window(ds)
    assert 0 < pfa_lo < pfa_hi < 1 and 0 < pmiss_lo <= 0.1 < pmiss_hi < 1
    plt.close(det_plot(ds, window="auto").figure)


def test_the_plot_command_checks_its_output_before_reading_and_names_empty_conditions(
    tmp_path, capsys
):
    from bosaris_dask.cli import main

    absent = str(tmp_path / "no-such-key.txt")
    for out, said in ((tmp_path / "x.jpg", "plots are written as png, pdf, svg"),
                      (tmp_path / "none" / "x.png", "no folder"),
                      (tmp_path / "dir.png", "a folder is there")):  # fmt: skip
        out.mkdir(exist_ok=True) if out.name == "dir.png" else None
        assert main(["plot", "det", "--key", absent, "--scores", absent, "--out", str(out)]) == 1
        assert said in capsys.readouterr().err  # not the missing key: nothing was read
    key, scores, table = tmp_path / "k.txt", tmp_path / "s.txt", tmp_path / "m.tsv"
    key.write_text("a x target\na y nontarget\nb x nontarget\nb y nontarget\n")
    scores.write_text("a x 2\na y 0\nb x 1\nb y -1\n")
    table.write_text("model\tgender\na\tf\nb\tm\n")
    assert (
        main(
            [
                "plot",
                "det",
                "--key",
                str(key),
                "--scores",
                str(scores),
                "--conditions",
                str(table),
                "--by",
                "model.gender",
                "--out",
                str(tmp_path / "d.png"),
            ]
        )
        == 0
    )
    said = "no curve for s [model.gender=m]: no targets or no non-targets"
    assert said in capsys.readouterr().err


def test_plot_by_draws_the_conditions_with_the_most_targets_up_to_max_curves(
    tmp_path, capsys, monkeypatch
):
    """A curve per condition, but not thousands: the ``--max-curves`` conditions with the most
    targets (non-targets break ties), in their table order, and the rest said."""
    from bosaris_dask import plots
    from bosaris_dask.cli import main

    drawn = {}
    monkeypatch.setattr(plots, "save_plot", lambda results, *a, **k: drawn.update(r=results))
    key, scores, table = tmp_path / "k.txt", tmp_path / "s.txt", tmp_path / "m.tsv"
    # model m<k> has k targets among 8 segments (m0 none: no curve); m3 and m4 tie on targets,
    # m3 has more non-targets (a ninth segment)
    rows = [(f"m{k}", f"x{j}", j < k) for k in range(7) for j in range(8)] + [("m3", "x8", False)]
    rows = [(m, s, t) for m, s, t in rows if not (m == "m4" and s == "x3")]
    key.write_text("".join(f"{m} {s} {'target' if t else 'nontarget'}\n" for m, s, t in rows))
    scores.write_text("".join(f"{m} {s} {int(t) + 0.1 * j}\n" for j, (m, s, t) in
                              enumerate(rows)))  # fmt: skip
    table.write_text("model\tc\n" + "".join(f"m{k}\tc{k}\n" for k in range(7)))
    argv = ["plot", "det", "--key", str(key), "--scores", str(scores), "--conditions", str(table),
            "--by", "model.c", "--out", str(tmp_path / "d.png")]  # fmt: skip
    assert main([*argv, "--max-curves", "3"]) == 0
    err = capsys.readouterr().err
    assert "no curve for s [model.c=c0]: no targets or no non-targets" in err
    assert (
        "drawing 3 of the 6 conditions with a curve: those with the most targets, down to 3" in err
    )
    assert drawn["r"].system.values.tolist() == [f"s [model.c=c{k}]" for k in (3, 5, 6)]
    assert main(argv) == 0  # 20 by default: every curve
    assert "drawing" not in capsys.readouterr().err and drawn["r"].sizes["system"] == 6
    # dev and eval in one plot: the limit shared, eval's curves of dev's conditions (eval
    # alone would draw c4 and c6: c5 has one target there)
    eval_key = tmp_path / "ek.txt"
    kept = [(m, s, t and (m != "m5" or s == "x0")) for m, s, t in rows]
    eval_key.write_text("".join(f"{m} {s} {'target' if t else 'nontarget'}\n" for m, s, t in kept))
    both = [*argv, "--eval-key", str(eval_key), "--eval-scores", str(scores), "--max-curves",
            "4"]  # fmt: skip
    assert main(both) == 0
    assert "drawing 2 of the 6 conditions with a curve (dev)" in capsys.readouterr().err
    names = drawn["r"]["eval"].system.values.tolist()
    assert [n.split(" [")[-1] for n in names] == ["model.c=c5]", "model.c=c6]"]
    assert drawn["r"]["dev"].sizes["system"] == 2
    # two systems: the limit counts (system, condition) pairs; the targets said are one
    # system's (the key's), not their sum over systems
    two = [*argv, "--scores", str(scores), "--max-curves", "6"]
    assert main(two) == 0
    err = capsys.readouterr().err
    assert (
        "drawing 3 of the 6 conditions with a curve: those with the most targets, down to 3 " in err
    )
    assert drawn["r"].sizes["system"] == 6


@pytest.mark.parametrize("n", [12, 25])
def test_more_curves_than_the_colour_cycle_get_distinct_colours(n):
    # curves 1 and 11 shared a colour (and line style) past the cycle's 10
    key, scores = simulate(20, 30, systems=n, target_rate=0.2, seed=2)
    ax = det_plot(evaluate(scores, key))
    colours = {line.get_color() for line in ax.get_lines() if line.get_gid() and
               line.get_gid().startswith("det/") and line.get_gid().count("/") == 2 and
               line.get_linewidth() == 1.8}  # fmt: skip
    assert len(colours) == n
    plt.close(ax.figure)


def test_the_nbe_plot_shows_every_operating_point_it_was_given():
    # P = 0.9 (log-odds 2.2) lay past the fixed -10..1 range: evaluated, never drawn
    rng = np.random.default_rng(4)
    ds = evaluate_arrays(rng.normal(2, 1, 300), rng.normal(0, 1, 3000), priors=[0.01, 0.9])
    ax = nbe_plot(ds)
    lo, hi = ax.get_xlim()
    assert lo == -10.0 and hi == pytest.approx(float(logit(0.9)) + 0.5)
    marks = [line for line in ax.get_lines() if line.get_gid() == "nbe/operating-point"]
    assert sorted(round(float(line.get_xdata()[0]), 6) for line in marks) == sorted(
        round(float(logit(p)), 6) for p in (0.01, 0.9))  # fmt: skip
    plt.close(ax.figure)
    plain = nbe_plot(evaluate_arrays(rng.normal(2, 1, 300), rng.normal(0, 1, 3000)))
    assert plain.get_xlim() == (-10.0, 1.0)  # the classic range where nothing asks more
    plt.close(plain.figure)


def test_the_nbe_curves_reach_an_operating_point_past_the_default_sweep():
    # P = 1e-5 (log-odds -11.5): the axis widened to show its line, the curves stopped at -10
    rng = np.random.default_rng(4)
    tar, non = rng.normal(2, 1, 300), rng.normal(0, 1, 3000)
    ds = evaluate_arrays(tar, non, priors=[1e-5, 0.5])
    sweep = sweep_points(ds).plo.values
    assert sweep[0] == pytest.approx(-12.1) and sweep[-1] == 10.0 and len(sweep) == 222
    assert np.array_equal(sweep[21:], sweep_points(evaluate_arrays(tar, non)).plo.values)
    ax = nbe_plot(ds)
    lo, _ = ax.get_xlim()
    for which in ("act", "min"):
        line = next(x for x in ax.get_lines() if x.get_gid() == f"nbe/{which}/system")
        assert line.get_xdata()[0] < lo < float(logit(1e-5))  # drawn across the whole axis
    plt.close(ax.figure)


def test_the_nbe_plot_shades_everything_where_30_false_alarms_are_never_reached():
    # 20 non-targets: the minDCF point never has 30 false alarms, so no mark and no shading
    # said 'reliable everywhere', the opposite of the truth
    rng = np.random.default_rng(6)
    ds = evaluate_arrays(rng.normal(2, 1, 500), rng.normal(0, 1, 20))
    assert np.isnan(float(ds.dr30_fa_plo[0]))
    ax = nbe_plot(ds, dr30="fa")
    (span,) = [p for p in ax.patches if p.get_gid() == "nbe/dr30-span-fa"]
    lo = span.get_x()  # axvspan: a Rectangle, x in data units
    assert (lo, lo + span.get_width()) == ax.get_xlim()
    # no mark is drawn, so the legend keys none; it keys the shading (it had no entry)
    legend = [x.get_text() for x in ax.get_legend().get_texts()]
    assert "< 30 false alarms to the left" not in legend and "minDCF on < 30 errors" in legend
    plt.close(ax.figure)


def test_nbe_dr30_marks_sit_on_the_mindcf_curve_or_nowhere():
    # without the minDCF curve the marks sat on the actDCF curve, at the minDCF points' prior
    # log-odds: a '< 30 misses' mark where the actDCF point has none
    rng = np.random.default_rng(2)
    ds = evaluate_arrays(rng.normal(2, 1, 200), rng.normal(0, 1, 5000), name="s")
    both = nbe_plot(ds)
    marks = [x for x in both.get_lines() if x.get_gid().startswith("nbe/dr30-")]
    (low,) = [x for x in marks if x.get_gid() == "nbe/dr30-miss/s"]
    at = float(ds.dr30_miss_plo[0])
    assert low.get_xydata().tolist() == [[at, float(sweep_points(ds).min_dcf.sel(plo=at)[0])]]
    plt.close(both.figure)
    act = nbe_plot(ds, min_dcf=False)
    assert not [x for x in act.get_lines() if x.get_gid().startswith("nbe/dr30-")]
    legend = [x.get_text() for x in act.get_legend().get_texts()]
    assert not [x for x in legend if x.startswith("< 30")]
    plt.close(act.figure)


# --------------------------------------------------------------------------------------------
# NBE y axis: BOSARIS's 0..1.2 unless told, and a clipped curve says so


def _llrs(a=1.0, b=0.0, *, n=(400, 3600), seed=1, mu=3.0):
    """Calibrated Gaussian LLRs (targets N(mu, 2 mu), non-targets N(-mu, 2 mu)), as ``a * llr +
    b``: a > 1 overconfident, b a shift; ``n`` targets and non-targets."""
    rng = np.random.default_rng(seed)
    tar, non = rng.normal(mu, np.sqrt(2 * mu), n[0]), rng.normal(-mu, np.sqrt(2 * mu), n[1])
    return a * tar + b, a * non + b


def _act_max(ds, xlim):
    """The highest actDCF of the (one) system's sweep within xlim (its grid's points)."""
    sw = sweep_points(ds.isel(system=0))
    inside = (sw.plo.values >= xlim[0]) & (sw.plo.values <= xlim[1])
    return float(np.nanmax(sw.act_dcf.values[inside]))


def _legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_nbe_y_axis_stays_0_to_1_2_for_a_calibrated_system(ax, caplog):
    ds = evaluate_arrays(*_llrs(), name="good")
    assert _act_max(ds, (-10, 1)) <= 1.2
    with caplog.at_level(logging.INFO, logger="bosaris_dask.plots"):
        nbe_plot(ds, ax=ax)
    assert ax.get_ylim() == (0.0, 1.2)
    assert _legend(ax)[0] == "good" and not caplog.records


def test_nbe_a_few_false_alarms_do_not_raise_the_axis_but_their_spike_is_said(ax, caplog):
    # one non-target above every threshold: worth e^10 / 3600 = 6.1 at -10, on 1 false alarm
    tar, non = _llrs()
    non[0] = 11.0
    ds = evaluate_arrays(tar, non, name="good")
    high = _act_max(ds, (-10, 1))
    assert high > 5
    with caplog.at_level(logging.INFO, logger="bosaris_dask.plots"):
        nbe_plot(ds, ax=ax)
    assert ax.get_ylim() == (0.0, 1.2)
    assert _legend(ax)[0] == f"good: actDCF above the axis, up to {high:.3g}"
    (note,) = [r.getMessage() for r in caplog.records]
    assert note.startswith(f"nbe plot: good's actDCF reaches {high:.3g} at prior log-odds -10 "
                           "(1 false alarm, ")  # fmt: skip


def test_nbe_a_miscalibrated_system_is_clipped_and_says_so_or_shown_when_asked(ax):
    # shifted by 2.5 towards targets: up to ~2.3, on over a thousand false alarms
    ds = evaluate_arrays(*_llrs(1.0, 2.5, n=(1000, 100_000)), name="over")
    high = _act_max(ds, (-10, 1))
    assert 1.2 < high < 4
    nbe_plot(ds, ax=ax)
    assert ax.get_ylim() == (0.0, 1.2)
    assert _legend(ax)[0] == f"over: actDCF above the axis, up to {high:.3g}"
    ax = nbe_plot(ds, ax=Figure().add_subplot(), ylim=(0.0, 4.0))  # asked to show it all
    (act,) = gid_lines(ax, "nbe/act/over")
    drawn = act.get_xdata() <= 1.0
    assert np.nanmax(act.get_ydata()[drawn]) <= 4.0 and _legend(ax)[0] == "over"


def test_nbe_a_curve_far_above_the_axis_says_how_far(caplog):
    ds = evaluate_arrays(*_llrs(20.0, 5.0), name="x20")  # far off: thousands at -10
    high = _act_max(ds, (-10, 1))
    assert high > 1000
    with caplog.at_level(logging.INFO, logger="bosaris_dask.plots"):
        ax = nbe_plot(ds, ax=Figure().add_subplot())
    assert ax.get_ylim() == (0.0, 1.2)
    assert _legend(ax)[0] == f"x20: actDCF above the axis, up to {high:,.0f}"
    (note,) = [r.getMessage() for r in caplog.records]
    assert f"x20's actDCF reaches {high:,.0f}" in note and "(top 1.2)" in note
    # given limits are kept; the legend says what they clip
    ax = nbe_plot(ds, ax=Figure().add_subplot(), ylim=(0.0, 1.2))
    assert ax.get_ylim() == (0.0, 1.2) and _legend(ax)[0].startswith("x20: actDCF above")
    ax = nbe_plot(ds, ax=Figure().add_subplot(), ylim=(0.0, 1e4))
    assert ax.get_ylim() == (0.0, 1e4) and _legend(ax)[0] == "x20"
    # a window edge off the sweep's points: the legend says the evaluation's own highest value
    # there, as the note does (it said the drawn line's interpolation at the edge)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="bosaris_dask.plots"):
        ax = nbe_plot(ds, ax=Figure().add_subplot(), xlim=(-5.05, 1.0))
    inside = f"{_act_max(ds, (-5.05, 1.0)):.3g}"  # (below 1,000: three digits)
    assert _legend(ax)[0] == f"x20: actDCF above the axis, up to {inside}"
    assert f"x20's actDCF reaches {inside} " in caplog.records[0].getMessage()
    # a well-calibrated system drawn after it on the same Axes keeps the axis it was given
    ax = nbe_plot(ds, ax=Figure().add_subplot(), xlim=(-10, 1), ylim=(0.0, 5.0))
    nbe_plot(evaluate_arrays(*_llrs(), name="good"), ax=ax, xlim=(-10, 1))
    assert ax.get_ylim() == (0.0, 5.0)
    assert [t.split(":")[0] for t in _legend(ax)[:2]] == ["x20", "good"]


def test_an_ece_curve_above_the_axis_says_how_high_it_goes(caplog):
    from bosaris_dask.plots import ece_plot

    rng = np.random.default_rng(0)
    plo = np.linspace(-6, 6, 49)
    tar, non = rng.normal(2, 1.5, 300), rng.normal(-2, 1.5, 3000)
    good = evaluate_arrays(tar, non, name="good", ece_plo=plo)
    bad = evaluate_arrays(tar * 20 + 20, non * 20 + 20, name="bad", ece_plo=plo)
    with caplog.at_level(logging.INFO, logger="bosaris_dask.plots"):
        ax = ece_plot({"good": good, "bad": bad})
    top = ax.get_ylim()[1]
    assert top == pytest.approx(2.1)
    # the peak within the axis's x range, from the results themselves (bits)
    peak = float(bad.ece.values.max())
    assert peak > top
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    cllr, min_cllr = float(bad.cllr.squeeze()), float(bad.min_cllr.squeeze())
    clipped = f"(ECE above the axis, up to {peak:.3g} bits)"
    assert texts[1].startswith("bad") and texts[1].endswith(
        f": Cllr {cllr:.3f}, minCllr {min_cllr:.3f} bits {clipped}"
    )
    assert texts[0].endswith("bits")  # the good system is not clipped
    assert [r.getMessage().split("'")[0] for r in caplog.records] == ["ece plot: bad [bad]"]
    plt.close("all")


def test_det_legend_keys_the_eer_star_only_where_one_is_drawn():
    # separated classes: EER 0 puts the star at probit(0) = -inf, off the axes; the legend
    # keyed it all the same
    def keyed(ax):
        legends = [a for a in ax.artists if a.get_gid() == "det/key"]
        return [t.get_text() for legend in legends for t in legend.get_texts()]

    ax = det_plot(evaluate_arrays([3.0, 4.0, 5.0], [0.0, 1.0, 2.0]))
    assert "EER" not in keyed(ax)
    plt.close(ax.figure)
    rng = np.random.default_rng(1)
    ax = det_plot(evaluate_arrays(rng.normal(2, 1, 300), rng.normal(0, 1, 3000)))
    assert "EER" in keyed(ax)
    plt.close(ax.figure)


@pytest.mark.parametrize("suffix", [".svg", ".pdf", ".png"])
def test_the_same_figure_saves_the_same_bytes(tmp_path, suffix):
    # an SVG's element ids were random per run (matplotlib's svg.hashsalt unset)
    from matplotlib.figure import Figure

    from bosaris_dask.plots._common import save_figure

    files = []
    for name in ("a", "b"):
        fig = Figure()
        ax = fig.add_subplot()
        ax.plot([0, 1], [1, 0], label="line")
        ax.fill_between([0, 1], [0, 0.5], alpha=0.3)  # (clip paths and patterns get ids)
        ax.legend()
        files.append(save_figure(fig, tmp_path / f"{name}{suffix}").read_bytes())
    assert files[0] == files[1]


def test_an_nbe_legend_of_many_systems_stays_inside_the_saved_figure(tmp_path):
    """25 systems: the one-column legend ran off the figure's bottom, losing the key to the
    marks (audit); it now takes a second column."""
    from matplotlib.transforms import Bbox

    rng = np.random.default_rng(1)
    tar, non = rng.normal(2.0, 1.0, 300), rng.normal(0.0, 1.0, 300)
    systems = {f"s{k:02d}": evaluate_arrays(tar + k / 10, non) for k in range(25)}
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure(figsize=(6, 4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    nbe_plot(systems, ax=ax)
    legend = ax.get_legend()
    fig.canvas.draw()
    box = legend.get_window_extent()
    texts = [t.get_text() for t in legend.get_texts()]
    columns = {round(t.get_window_extent().x0) for t in legend.get_texts()}
    assert texts[-1] == "< 30 misses to the right" and len(columns) == 2
    assert Bbox.intersection(box, fig.bbox).height == pytest.approx(box.height)


def test_an_ece_plot_whose_curves_are_all_zero_draws_without_a_warning():
    import warnings

    from bosaris_dask.plots import ece_plot

    ds = evaluate_arrays(np.array([1.0, 2.0]), np.array([-1.0]), name="a", ece_plo=[1e6])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "identical low and high ylims"
        ax = ece_plot(ds)
    assert ax.get_ylim()[1] > 0
