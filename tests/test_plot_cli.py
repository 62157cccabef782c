"""``bosaris-dask plot``: what the drawn figure says (curve labels, axis limits), read from the
matplotlib artists and from the saved SVG's text, not by eye."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from bosaris_dask import io, plots  # noqa: E402
from bosaris_dask.cli import main  # noqa: E402
from bosaris_dask.metrics import evaluate  # noqa: E402
from bosaris_dask.simulate import simulate  # noqa: E402


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """A dev and an eval key, two systems each; every file has its own name (the eval ones are
    not the dev ones' names), and the eval files are given in the dev files' system order."""
    d = tmp_path_factory.mktemp("sets")
    key, (s1, s2) = simulate(40, 60, systems=2, target_rate=0.1, seed=1)
    io.write(key, d / "dev-key.zarr")
    io.write(s1, d / "alpha.zarr")
    io.write(s2, d / "beta.zarr")
    key, (e1, e2) = simulate(40, 60, systems=2, target_rate=0.1, seed=2)
    io.write(key, d / "eval-key.zarr")
    io.write(e1, d / "alpha-eval.zarr")
    io.write(e2, d / "beta-eval.zarr")
    return d


def _svg_texts(path):
    """The texts of an SVG that matplotlib wrote (each drawn text follows it as a comment)."""
    return set(re.findall(r"<!-- (.*?) -->", path.read_text()))


def _dev_and_eval(d, kind, out, *more):
    return ["plot", kind, "--key", str(d / "dev-key.zarr"), "--scores", str(d / "alpha.zarr"),
            "--scores", str(d / "beta.zarr"), "--eval-key", str(d / "eval-key.zarr"),
            "--eval-scores", str(d / "alpha-eval.zarr"), "--eval-scores",
            str(d / "beta-eval.zarr"), "--out", str(out), "-q", "--cluster", "threads",
            *more]  # fmt: skip


@pytest.mark.parametrize("kind", ["nbe", "det", "ape"])
def test_eval_curves_are_named_after_the_eval_files(sets, tmp_path, kind):
    out = tmp_path / f"{kind}.svg"
    assert main(_dev_and_eval(sets, kind, out)) == 0
    texts = _svg_texts(out)
    legend = {re.split(r": | \(", t)[0] for t in texts}  # ape adds ": Cllr ...", det " (EER"
    assert {"alpha [dev]", "beta [dev]", "alpha-eval [eval]", "beta-eval [eval]"} <= legend
    assert not {"alpha [eval]", "beta [eval]"} & legend  # (the dev files' names, before)


def test_each_eval_curve_is_computed_from_the_file_it_is_named_after(sets, monkeypatch):
    seen = {}

    def spy(results, kind, path, **options):
        seen.update(results=results, options=options)

    monkeypatch.setattr(plots, "save_plot", spy)
    assert main(_dev_and_eval(sets, "nbe", "nbe.png")) == 0
    results, options = seen["results"], seen["options"]
    assert results["dev"].system.values.tolist() == ["alpha", "beta"]
    assert results["eval"].system.values.tolist() == ["alpha-eval", "beta-eval"]
    key = io.read(sets / "eval-key.zarr")
    for name in ("alpha-eval", "beta-eval"):
        alone = evaluate(io.read(sets / f"{name}.zarr"), key)
        assert float(results["eval"].eer.sel(system=name)) == float(alone.eer.squeeze())
    ax = Figure().add_subplot()
    plots.nbe_plot(results, ax=ax, **options)
    labels = [
        line.get_label().split(": ")[0]
        for line in ax.get_lines()
        if not line.get_label().startswith("_")
    ]  # (": actDCF above the axis ...")
    assert labels == ["alpha [dev]", "beta [dev]", "alpha-eval [eval]", "beta-eval [eval]"]
    act = {line.get_gid(): line for line in ax.get_lines()}
    sweep = results["eval"].sel(system="beta-eval")
    np.testing.assert_array_equal(act["nbe/act/beta-eval [eval]"].get_ydata(),
                                  plots.nbe.metrics.sweep_points(sweep).act_dcf.values)  # fmt: skip


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    """A key (400 targets, 3,600 non-targets), well-calibrated Gaussian LLRs ``good`` and the
    same times 20, shifted by 5 (``bad``: overconfident, its actDCF in the thousands)."""
    from bosaris_dask.trials import make_key, make_scores

    d = tmp_path_factory.mktemp("calibration")
    models, segments = [f"m{i}" for i in range(40)], [f"s{j}" for j in range(100)]
    target = (np.arange(40)[:, None] % 10) == (np.arange(100)[None, :] % 10)
    rng = np.random.default_rng(1)
    llr = np.where(target, 3.0, -3.0) + rng.normal(0.0, np.sqrt(6.0), target.shape)
    io.write(make_key(models, segments, np.where(target, 1, -1)), d / "key.zarr")
    io.write(make_scores(models, segments, llr), d / "good.zarr")
    io.write(make_scores(models, segments, 20.0 * llr + 5.0), d / "bad.zarr")
    return d


def _nbe(d, *more, monkeypatch, out="nbe.png"):
    """Run ``plot nbe`` and return the Axes of the figure it wrote."""
    from bosaris_dask.plots import standard

    figures = []

    def spy(fig, path, **kw):
        figures.append(fig)
        return original(fig, path, **kw)

    original = standard.save_figure
    monkeypatch.setattr(standard, "save_figure", spy)
    assert main(["plot", "nbe", "--key", str(d / "key.zarr"), *more, "--out",
                 str(d / out), "--cluster", "threads"]) == 0  # fmt: skip
    (fig,) = figures
    return fig.axes[0]


def _act_max(ax, label):
    (act,) = [line for line in ax.get_lines() if line.get_gid() == f"nbe/act/{label}"]
    x, y = act.get_xdata(), act.get_ydata()
    lo, hi = ax.get_xlim()
    return float(np.nanmax(y[(x >= lo) & (x <= hi)]))


def test_plot_nbe_keeps_0_to_1_2_for_a_calibrated_system(calibration, monkeypatch, capsys):
    ax = _nbe(calibration, "--scores", str(calibration / "good.zarr"), monkeypatch=monkeypatch)
    assert _act_max(ax, "good") <= 1.2 and ax.get_ylim() == (0.0, 1.2)
    assert "clipped" not in capsys.readouterr().err


def test_plot_nbe_clips_a_miscalibrated_system_and_says_so(calibration, monkeypatch, capsys):
    ax = _nbe(calibration, "--scores", str(calibration / "good.zarr"), "--scores",
              str(calibration / "bad.zarr"), monkeypatch=monkeypatch)  # fmt: skip
    high = _act_max(ax, "bad")
    assert high > 1.2 and ax.get_ylim() == (0.0, 1.2)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:2] == ["good", f"bad: actDCF above the axis, up to {high:,.0f}"]
    err = capsys.readouterr().err
    assert f"nbe plot: bad's actDCF reaches {high:,.0f} at prior log-odds " in err
    assert "above the y axis (top 1.2): clipped" in err and "good's" not in err


def test_plot_nbe_ymax_sets_the_top(calibration, monkeypatch, capsys):
    bad = ["--scores", str(calibration / "bad.zarr")]
    ax = _nbe(calibration, *bad, "--ymax", "1e4", monkeypatch=monkeypatch)
    high = _act_max(ax, "bad")
    assert ax.get_ylim() == (0.0, 1e4) and high < 1e4
    assert [t.get_text() for t in ax.get_legend().get_texts()][0] == "bad"
    assert "clipped" not in capsys.readouterr().err
    monkeypatch.undo()
    ax = _nbe(calibration, *bad, "--ymax", "2", "-q", monkeypatch=monkeypatch)
    assert ax.get_ylim() == (0.0, 2.0)  # as asked, clipped: the legend says so (-q: no note)
    assert ax.get_legend().get_texts()[0].get_text().startswith("bad: actDCF above the axis")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("value", ["0", "-1", "inf", "nan", "1,2"])
def test_plot_nbe_ymax_is_a_positive_number(calibration, value, capsys):
    with pytest.raises(SystemExit):
        main(["plot", "nbe", "--key", str(calibration / "key.zarr"), "--scores",
              str(calibration / "good.zarr"), "--ymax", value, "--out", "x.png"])  # fmt: skip
    last = capsys.readouterr().err.strip().splitlines()[-1]  # (the usage lists --ymax too)
    why = "not a number" if value == "1,2" else "is not a finite number > 0"
    assert "error: argument --ymax: " in last and why in last, last


def test_plot_ymax_is_for_nbe_plots(calibration, tmp_path, capsys):
    assert main(["plot", "det", "--key", str(calibration / "key.zarr"), "--scores",
                 str(calibration / "good.zarr"), "--ymax", "2", "--out",
                 str(tmp_path / "det.png")]) == 1  # fmt: skip
    assert "--ymax is for nbe plots" in capsys.readouterr().err


def test_plot_max_curves_is_for_plots_by_condition(calibration, tmp_path, capsys):
    # it was accepted and unused without --by (its default hid whether it was given)
    assert main(["plot", "ape", "--key", str(calibration / "key.zarr"), "--scores",
                 str(calibration / "good.zarr"), "--max-curves", "3", "--out",
                 str(tmp_path / "ape.png")]) == 1  # fmt: skip
    assert "--max-curves is for plots with --by" in capsys.readouterr().err
    assert not (tmp_path / "ape.png").exists()


def test_allow_missing_says_how_many_trials_each_plotted_system_dropped(sets, tmp_path, capsys):
    # its help said "(and report how many)", and nothing was said
    d = sets
    dropped = io.read(d / "alpha-eval.zarr")
    n_trials = int((io.read(d / "eval-key.zarr").trial_mask.values != 0)[:, :7].sum())
    io.write(
        dropped.assign(
            score_mask=dropped.score_mask.copy(
                data=np.where(np.arange(60) < 7, False, dropped.score_mask.values)
            )
        ),
        tmp_path / "a.zarr",
    )
    argv = _dev_and_eval(d, "det", tmp_path / "det.png")
    argv[argv.index(str(d / "alpha-eval.zarr"))] = str(tmp_path / "a.zarr")
    argv.remove("-q")
    assert main([*argv, "--allow-missing"]) == 0
    err = capsys.readouterr().err
    assert f"a (eval): {n_trials:,} key trials without a score dropped\n" in err
    assert err.count("without a score dropped") == 1
