"""Tippett plots and the ROC points' thresholds they are drawn from: every drawn point against
a brute force on the trials (proportions of target and non-target LLRs at or above it)."""

import logging
import math

import matplotlib

matplotlib.use("Agg")

import dask  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from bosaris_dask import engine, steppy_roc  # noqa: E402
from bosaris_dask.cli import main  # noqa: E402
from bosaris_dask.conditions import condition_table  # noqa: E402
from bosaris_dask.conditions.evaluation import conditions_as_systems  # noqa: E402
from bosaris_dask.errors import PlotError  # noqa: E402
from bosaris_dask.llr_base import thresholds_from_natural  # noqa: E402
from bosaris_dask.metrics import evaluate, evaluate_arrays  # noqa: E402
from bosaris_dask.plots import save_plot, tippett_plot  # noqa: E402
from bosaris_dask.trials import make_key, make_scores  # noqa: E402


def _points(ds, system=0):
    n = int(ds.n_roc_points.values[system])
    return tuple(ds[v].values[system, :n] for v in ("roc_threshold", "roc_pmiss", "roc_pfa"))


def _check_points(t, pmiss, pfa, tar, non):
    """Each ROC point's rates are those of its threshold, counted on the trials."""
    assert np.all(np.diff(t) > 0) and t[-1] == np.inf
    for x, m, f in zip(t, pmiss, pfa, strict=True):
        assert m == np.count_nonzero(tar < x) / len(tar)
        assert f == np.count_nonzero(non >= x) / len(non)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-6, 6), min_size=1, max_size=40),
    st.lists(st.integers(-6, 6), min_size=1, max_size=40),
    st.sampled_from([1.0, 0.25, 1e-3]),
)
def test_roc_thresholds_split_the_trials_as_the_rates_say(tar, non, scale):
    # integer grids with a scale: ties within and across the classes
    tar, non = np.array(tar) * scale, np.array(non) * scale
    t, pmiss, pfa = _points(evaluate_arrays(tar, non))
    _check_points(t, pmiss, pfa, tar, non)
    assert t[0] == min(tar.min(), non.min())  # nothing below the first: its lowest score


def test_roc_thresholds_of_coarse_bins_are_their_lower_edges():
    # a two-pass summary keeps most bins coarse: a point's threshold is the lowest value its
    # first accepted bin can hold, and the rates still split the trials there exactly
    rng = np.random.default_rng(8)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(40, 50))
    values = (rng.normal(size=mask.shape) * 3 + mask).astype(np.float32)
    key = make_key(range(40), range(50), mask)
    with dask.config.set(scheduler="sync"):
        (s,) = engine.summarize([make_scores(range(40), range(50), values)], key, coarse_bits=6)
    assert (s.bits > 0).any() and (s.bits == 0).any()
    positions = np.arange(len(s.lo) + 1)
    t = steppy_roc.roc_thresholds(s, positions)
    pmiss, pfa = steppy_roc.roc_points(s, positions)
    tar, non = values[mask == 1].astype(np.float64), values[mask == -1].astype(np.float64)
    _check_points(t, pmiss, pfa, tar, non)
    scores = np.concatenate([tar, non])
    edges = t[np.flatnonzero(s.bits > 0)]
    assert not np.isin(edges[np.isfinite(edges)], scores).all()  # bin edges, not scores


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_roc_thresholds_in_base_10_split_the_base_10_scores_exactly(dtype):
    # log10 LRs to two decimals, read as natural LLRs (x ln 10, in float64 as --llr-base 10
    # does): divided back, -1.96 x ln 10 / ln 10 is -1.9599999999999997, which splits a tie
    rng = np.random.default_rng(1)
    tar = np.round(rng.normal(1.0, 1.0, 300), 2).astype(dtype)
    non = np.round(rng.normal(-1.0, 1.0, 800), 2).astype(dtype)
    f = math.log(10)
    ds = evaluate_arrays(tar.astype(np.float64) * f, non.astype(np.float64) * f, name="a")
    ten = thresholds_from_natural(ds, 10)
    _check_points(*_points(ten), tar.astype(np.float64), non.astype(np.float64))
    assert (ds.roc_threshold.values / f != ten.roc_threshold.values).any()  # division misses
    assert ten.roc_threshold.attrs["units"] == "LLR in base 10"
    assert tippett_plot(ten).get_xlabel() == "LLR threshold x  ($\\log_{10}$ LR)"
    plt.close("all")


def test_tippett_curves_are_the_proportions_at_or_above_each_threshold():
    rng = np.random.default_rng(3)
    tar = np.round(rng.normal(1.5, 1.0, 200), 1)  # ties
    non = np.round(rng.normal(-1.5, 1.0, 900), 1)
    ds = evaluate_arrays(tar, non, name="sys")
    ax = tippett_plot(ds)
    lines = {line.get_gid(): line for line in ax.get_lines()}
    assert set(lines) == {"tippett/target/sys", "tippett/nontarget/sys", "tippett/zero"}
    lo, hi = ax.get_xlim()
    assert lo < min(tar.min(), non.min()) and hi > max(tar.max(), non.max())
    for gid, llrs in (("tippett/target/sys", tar), ("tippett/nontarget/sys", non)):
        x, y = (np.asarray(v, dtype=np.float64) for v in lines[gid].get_data())
        assert lines[gid].get_drawstyle() == "steps-pre"
        assert (x[0], y[0], x[-1], y[-1]) == (lo, 1.0, hi, 0.0)  # the ends of the window
        for at, share in zip(x[1:-1], y[1:-1], strict=True):
            assert share == np.count_nonzero(llrs >= at) / len(llrs)
        # steps-pre: between two points the curve is at the right one's proportion, which is
        # exact there: no score lies strictly between two unthinned points
        inner = x[1:-1]
        assert np.all(np.isin(inner, np.concatenate([tar, non])))
    legend = ax.get_legend().get_texts()[0].get_text()
    assert legend == (f"sys: targets LLR < 0: {np.mean(tar < 0):.1%}, "
                      f"non-targets LLR ≥ 0: {np.mean(non >= 0):.1%}")  # fmt: skip
    assert ax.get_xlabel() == "LLR threshold x  ($\\log$ LR)"
    plt.close("all")


def test_tippett_legend_leaves_out_rates_an_evaluation_without_plo_0_lacks():
    ds = evaluate_arrays([1.0, 2.0], [-1.0, 0.5], name="a", priors=[0.01], sweep=[-1.0, 1.0])
    assert 0.0 not in ds.plo.values
    ax = tippett_plot(ds)
    assert ax.get_legend().get_texts()[0].get_text() == "a"
    plt.close("all")


@pytest.mark.parametrize(("n", "m"), [(20, 30), (200, 200), (999, 5000), (1500, 5000),
                                    (2000, 5000), (5000, 5000)])  # fmt: skip
def test_tippett_leaves_far_outliers_off_the_axis_and_says_so(caplog, n, m):
    # one sentinel at each end among thousands, or among the few trials of a forensic set
    # (below 1,000 a trial is more than 0.1% of its class: the axis took it in): the axis
    # holds the curves, not the sentinels
    rng = np.random.default_rng(2)
    tar = np.append(rng.normal(2, 1, n), 1e6)
    non = np.append(rng.normal(-2, 1, m), -1e6)
    with caplog.at_level(logging.INFO, logger="bosaris_dask.plots"):
        ax = tippett_plot(evaluate_arrays(tar, non, name="a"))
    lo, hi = ax.get_xlim()
    assert -20 < lo < non[:-1].min() and tar[:-1].max() < hi < 20
    assert [r.getMessage() for r in caplog.records] == [
        f"tippett plot: a has LLRs down to about -1e+06, left of the x axis (from {lo:.4g}) and "
        f"LLRs up to about 1e+06, right of it (to {hi:.4g}): drawn at the edges"]  # fmt: skip
    line = next(x for x in ax.get_lines() if x.get_gid() == "tippett/target/a")
    x, y = line.get_data()
    assert x.min() == lo and x.max() == hi  # the sentinels are drawn at the edges
    plt.close("all")


def test_tippett_of_the_extreme_floats_draws():
    for tar, non in (([1.7e308, 1.0], [-1.0, 0.0]), ([1e308, 1.0], [-1e308, 0.0])):
        ax = tippett_plot(evaluate_arrays(tar, non, name="a"))
        lo, hi = ax.get_xlim()
        assert np.isfinite([lo, hi]).all() and lo < 0.0 < hi
        ax.figure.canvas.draw()
        plt.close("all")


def test_tippett_leaves_out_a_condition_without_targets():
    key = make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [-1, -1]])
    scores = make_scores(["m1", "m2"], ["s1", "s2"], [[2.0, 0.5], [-1.0, 0.3]])
    table = condition_table("model", ["m1", "m2"], {"g": ["a", "b"]})
    ds = evaluate(scores, key, conditions=[table], by=["model.g"], names=["s"])
    ax = tippett_plot(conditions_as_systems(ds, empty=True))
    assert sorted(line.get_gid() for line in ax.get_lines()) == [
        "tippett/nontarget/s [model.g=a]",
        "tippett/target/s [model.g=a]",
        "tippett/zero",
    ]
    plt.close("all")


def test_tippett_refuses_results_without_thresholds():
    ds = evaluate_arrays([1.0, 2.0], [-1.0, 0.5], name="a").drop_vars("roc_threshold")
    with pytest.raises(PlotError, match="no roc_threshold"):
        tippett_plot(ds)
    plt.close("all")


def test_tippett_per_condition_and_from_the_command_line(tmp_path, capsys):
    rng = np.random.default_rng(5)
    models, segments = [f"m{i}" for i in range(6)], [f"s{j}" for j in range(9)]
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(6, 9), p=[0.7, 0.3])
    mask[:, 0] = 1
    mask[:, 1] = -1
    values = rng.normal(size=mask.shape) + 2 * mask
    key, scores = make_key(models, segments, mask), make_scores(models, segments, values)
    table = condition_table("model", models, {"g": ["f", "m"] * 3})
    ds = evaluate(scores, key, conditions=[table], by=["model.g"], names=["sys"])
    per = conditions_as_systems(ds)
    ax = tippett_plot(per)
    for k, g in enumerate(["f", "m"]):
        rows = np.arange(6) % 2 == k
        tar, non = values[rows][mask[rows] == 1], values[rows][mask[rows] == -1]
        t, pmiss, pfa = _points(per, k)
        _check_points(t, pmiss, pfa, tar, non)
        gid = f"tippett/target/sys [model.g={g}]"
        assert any(line.get_gid() == gid for line in ax.get_lines())
    plt.close("all")
    # the CLI: text inputs, a base-10 axis, and an option tippett plots do not take
    cells = [(i, j) for i in range(len(models)) for j in range(len(segments))]
    (tmp_path / "key.txt").write_text("".join(
        f"{models[i]} {segments[j]} {'target' if mask[i, j] == 1 else 'nontarget'}\n"
        for i, j in cells))  # fmt: skip
    (tmp_path / "sys.txt").write_text(
        "".join(f"{models[i]} {segments[j]} {float(values[i, j])!r}\n" for i, j in cells)
    )
    out = tmp_path / "tippett.svg"
    common = ["plot", "tippett", "--key", str(tmp_path / "key.txt"), "--scores",
              str(tmp_path / "sys.txt"), "-q", "--cluster", "threads"]  # fmt: skip
    assert main([*common, "--llr-base", "10", "--out", str(out)]) == 0
    assert out.read_text().startswith("<?xml")
    assert main([*common, "--prior", "0.01", "--out", str(tmp_path / "x.png")]) == 1
    assert "--prior is for det and nbe plots: 'plot tippett'" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_save_plot_draws_tippett(tmp_path):
    ds = evaluate_arrays([1.0, 2.0, 0.5], [-1.0, 0.5, -2.0], name="a")
    out = save_plot(ds, "tippett", tmp_path / "t.png")
    assert out.stat().st_size > 1000
