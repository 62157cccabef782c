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
