"""DET marks at the fixed-FMR/FNMR operating points: each drawn at probit of the exact rates a
brute-force count gives, labelled in the legend; ``plot det --fmr`` and ``evaluate --fmr
--plots-dir`` draw them."""

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from scipy.special import ndtri  # noqa: E402

from bosaris_dask.cli import main  # noqa: E402
from bosaris_dask.metrics import evaluate, evaluate_arrays  # noqa: E402
from bosaris_dask.plots import det_plot, save_standard_plots  # noqa: E402
from bosaris_dask.trials import make_key, make_scores  # noqa: E402

from . import reference as ref  # noqa: E402

FMR = [1e-4, 0.01, 0.1]
FNMR = [0.02, 0.2]


@pytest.fixture
def ax():
    return Figure(figsize=(6.4, 6.4)).add_subplot()


@pytest.fixture(scope="module")
def tied():
    """Two systems, 60 x 80 trials with heavy ties, evaluated from 4 x 3 chunks."""
    rng = np.random.default_rng(11)
    labels = np.where(rng.random((60, 80)) < 0.1, 1, -1)
    models, segments = [f"m{i}" for i in range(60)], [f"s{j}" for j in range(80)]
    key = make_key(models, segments, labels)
    systems, arrays = [], []
    for shift, step in ((2.0, 0.25), (1.0, 0.5)):
        s = np.round(rng.normal(0, 1, labels.shape) + shift * (labels > 0), 0) * step
        scores = make_scores(models, segments, s).chunk({"model": 15, "segment": 27})
        systems.append(scores)
        arrays.append((s[labels > 0], s[labels < 0]))
    ds = evaluate(systems, key, names=["a", "b"], fmr=FMR, fnmr=FNMR)
    return ds, arrays


def _marks(ax, gid):
    return [line for line in ax.get_lines() if line.get_gid() == gid]


def test_marks_sit_at_probit_of_the_exact_rates(tied, ax):
    ds, arrays = tied
    det_plot(ds, ax=ax, window="wide")
    for name, (tar, non) in zip(["a", "b"], arrays, strict=True):
        for side, targets, brute in (("fmr", FMR, ref.fixed_fmr), ("fnmr", FNMR, ref.fixed_fnmr)):
            marks = _marks(ax, f"det/fixed_{side}/{name}")
            assert len(marks) == len(targets)
            for mark, f in zip(marks, targets, strict=True):
                _, fmr, fnmr = brute(tar, non, f)
                if math.isnan(fmr):
                    assert len(mark.get_xydata()) == 0
                    continue
                want = np.clip(ndtri([[fmr, fnmr]]), -40, 40)
                np.testing.assert_allclose(mark.get_xydata(), want, rtol=1e-12)
                assert mark.get_marker() == ("X" if side == "fmr" else "P")
        # the FMR target 1e-4 is below one false match among these non-targets
        assert 1e-4 < 1 / len(non)


def test_legend_lists_each_systems_points_under_it(tied, ax):
    ds, arrays = tied
    det_plot(ds, ax=ax, window="wide")
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    want = []
    for name, (tar, non) in zip(["a", "b"], arrays, strict=True):
        want.append(f"{name} (EER {100 * float(ds.eer.sel(system=name)):.2f}%)")
        want.append("FMR 1e-4: not measurable")
        for f, label in ((0.01, "1e-2"), (0.1, "0.1")):
            fnmr = ref.fixed_fmr(tar, non, f)[2]
            want.append(f"FMR {label}: FNMR {100 * fnmr:.3g}%")
        for f, label in ((0.02, "2e-2"), (0.2, "0.2")):
            fmr = ref.fixed_fnmr(tar, non, f)[1]
            want.append(f"FNMR {label}: FMR {100 * fmr:.3g}%")
    assert texts == want


def test_hand_worked_labels_and_window(ax):
    # FMR 0.1 of 10 non-targets allows one false match: t = 8.5 (non-targets 9 above it),
    # FNMR = 3/5; FNMR 0.2 allows one miss: t = 6.5, FMR = 3/10
    tar, non = np.array([5.5, 6.5, 7.5, 8.5, 9.5]), np.arange(10.0)
    ds = evaluate_arrays(tar, non, name="x", fmr=[0.1], fnmr=[0.2])
    det_plot(ds, ax=ax, window="wide")
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts[1:] == ["FMR 0.1: FNMR 60%", "FNMR 0.2: FMR 30%"]
    (fmr_mark,) = _marks(ax, "det/fixed_fmr/x")
    np.testing.assert_allclose(fmr_mark.get_xydata(), ndtri([[0.1, 0.6]]))
    # outside the window (misses up to 50%): listed as such (it vanished from the legend)
    ax2 = Figure().add_subplot()
    det_plot(ds, ax=ax2, window="classic")
    assert [t.get_text() for t in ax2.get_legend().get_texts()][1:] == [
        "FMR 0.1: FNMR 60% (outside the window)", "FNMR 0.2: FMR 30%"]  # fmt: skip
    assert len(_marks(ax2, "det/fixed_fmr/x")[0].get_xydata()) == 1
    # and switched off
    ax3 = Figure().add_subplot()
    det_plot(ds, ax=ax3, window="wide", fixed_rates=False)
    assert not _marks(ax3, "det/fixed_fmr/x")
    assert len(ax3.get_legend().get_texts()) == 1


def test_cli_plot_det_and_evaluate_plots_dir_mark_the_points(tmp_path, monkeypatch):
    tar, non = np.array([5.5, 6.5, 7.5, 8.5, 9.5]), np.arange(10.0)
    key_lines = [f"m{i} s{i} {'target' if i < 5 else 'nontarget'}" for i in range(15)]
    score_lines = [f"m{i} s{i} {v}" for i, v in enumerate([*tar, *non])]
    (tmp_path / "key.txt").write_text("\n".join(key_lines) + "\n")
    (tmp_path / "sys.txt").write_text("\n".join(score_lines) + "\n")
    drawn = []
    import bosaris_dask.plots.det as det

    real = det._fixed_rate_marks

    def spy(ax, c, limits):
        real(ax, c, limits)
        drawn.append([t for t in (line.get_label() for line in ax.get_lines())
                      if t.startswith("FMR") or t.startswith("FNMR")])  # fmt: skip

    monkeypatch.setattr(det, "_fixed_rate_marks", spy)
    common = ["--key", str(tmp_path / "key.txt"), "--scores", str(tmp_path / "sys.txt"),
              "--fmr", "0.1", "--fnmr", "0.2", "-q"]  # fmt: skip
    assert main(["plot", "det", *common, "--window", "wide", "--out",
                 str(tmp_path / "det.png")]) == 0  # fmt: skip
    assert drawn == [["FMR 0.1: FNMR 60%", "FNMR 0.2: FMR 30%"]]
    assert (tmp_path / "det.png").read_bytes()[:4] == b"\x89PNG"
    drawn.clear()
    assert main(["evaluate", *common, "--plots-dir", str(tmp_path / "plots")]) == 0
    # det.png (classic: misses up to 50%, the FMR point's 60% is outside) and det_low_fa.png
    # (false alarms up to 20%: the FNMR point's FMR 30% is outside)
    assert drawn == [
        ["FMR 0.1: FNMR 60% (outside the window)", "FNMR 0.2: FMR 30%"],
        ["FMR 0.1: FNMR 60%", "FNMR 0.2: FMR 30% (outside the window)"],
    ]


def test_standard_plots_without_fixed_rates_are_unchanged(tmp_path):
    ds = evaluate_arrays(np.array([5.5, 6.5, 7.5]), np.arange(10.0), name="x")
    ax = det_plot(ds, ax=Figure().add_subplot())
    assert not [line for line in ax.get_lines() if "fixed" in str(line.get_gid())]
    assert [p.name for p in save_standard_plots(ds, tmp_path)][0] == "det.png"
