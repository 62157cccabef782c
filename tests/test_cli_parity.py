"""CLI options for BOSARIS parity (issue 17): --fill-missing, DET windows, dev+eval NBE."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bosaris_dask import io
from bosaris_dask.cli import main
from bosaris_dask.trials import make_key, make_ndx, make_scores

RNG = np.random.default_rng(17)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 4 x 30 dev key and scores (every trial scored), eval scores with two holes, an eval
    ndx with a model the scores lack."""
    d = tmp_path_factory.mktemp("tiny")
    labels = RNG.integers(0, 4, size=30)
    key_mask = np.where(np.arange(4)[:, None] == labels[None, :], 1, -1)
    dev = key_mask * 1.5 + RNG.normal(size=key_mask.shape)
    models, segments = [f"m{i}" for i in range(4)], [f"s{j}" for j in range(30)]
    io.write(make_key(models, segments, key_mask), d / "key.h5")
    io.write(make_scores(models, segments, dev), d / "dev.h5")
    ev_mask = np.ones((4, 30), bool)
    ev_mask[0, 3] = ev_mask[2, 7] = False
    io.write(make_scores(models, segments, dev[::-1], ev_mask), d / "eval.h5")
    io.write(make_ndx([*models, "m9"], segments), d / "ndx.h5")
    return d


def test_calibrate_apply_fill_missing(tiny, tmp_path, capsys):
    out, model = tmp_path / "cal.h5", tmp_path / "cal.json"
    rc = main(["calibrate", "--key", str(tiny / "key.h5"), "--scores", str(tiny / "dev.h5"),
               "--model-out", str(model), "--apply", str(tiny / "eval.h5"),
               "--ndx", str(tiny / "ndx.h5"), "--fill-missing", "0", "--out", str(out),
               "--cluster", "threads"])  # fmt: skip
    assert rc == 0
    assert "32 of the 150 --ndx trials have no score: filled with 0" in capsys.readouterr().err
    doc = json.loads(model.read_text())
    cal = io.read(out)
    assert cal.model.values.tolist() == [*(f"m{i}" for i in range(4)), "m9"]
    assert cal.score_mask.values.all()
    ev = io.read(tiny / "eval.h5")
    expected = np.zeros((5, 30))
    expected[:4] = np.where(
        ev.score_mask.values, doc["offset"] + doc["weights"][0] * ev.score.values, 0.0
    )
    np.testing.assert_allclose(cal.score.values, expected, rtol=1e-12, atol=1e-300)
    assert cal.score.values[0, 3] == 0.0 and np.all(cal.score.values[4] == 0.0)


def test_apply_fill_missing_needs_an_ndx(tiny, tmp_path, capsys):
    model = tmp_path / "cal.json"
    assert main(["calibrate", "--key", str(tiny / "key.h5"), "--scores", str(tiny / "dev.h5"),
                 "--model-out", str(model), "-q", "--cluster", "threads"]) == 0  # fmt: skip
    rc = main(["apply", "--model", str(model), "--scores", str(tiny / "eval.h5"),
               "--fill-missing", "0", "--out", str(tmp_path / "o.h5"),
               "--cluster", "threads"])  # fmt: skip
    assert rc != 0
    assert "--fill-missing needs --ndx" in capsys.readouterr().err
    rc = main(["apply", "--model", str(model), "--scores", str(tiny / "eval.h5"),
               "--ndx", str(tiny / "ndx.h5"), "--fill-missing", "-1.5",
               "--out", str(tmp_path / "o.h5"), "--cluster", "threads"])  # fmt: skip
    assert rc == 0
    out = io.read(tmp_path / "o.h5")
    assert out.score.values[2, 7] == -1.5 and out.score.values[4, 0] == -1.5
    assert out.score_mask.values.all()


def test_plot_det_window_and_dr30_from_the_cli(tiny, tmp_path, monkeypatch):
    import bosaris_dask.plots as plots

    seen = {}

    def spy(results, kind, path, **options):
        seen.update(options, kind=kind)
        return original(results, kind, path, **options)

    original = plots.save_plot
    monkeypatch.setattr(plots, "save_plot", spy)
    out = tmp_path / "det.png"
    rc = main(["plot", "det", "--key", str(tiny / "key.h5"), "--scores", str(tiny / "dev.h5"),
               "--window", "0.01,0.5,0.02,0.9", "--dr30", "miss", "--out", str(out), "-q",
               "--cluster", "threads"])  # fmt: skip
    assert rc == 0 and out.stat().st_size > 0
    assert seen == {"kind": "det", "window": "0.01,0.5,0.02,0.9", "dr30": "miss"}
    rc = main(["plot", "det", "--key", str(tiny / "key.h5"), "--scores", str(tiny / "dev.h5"),
               "--window", "sre10", "--out", str(out), "-q", "--cluster", "threads"])  # fmt: skip
    assert rc == 0 and seen["window"] == "sre10"


def test_plot_nbe_dev_and_eval_in_one_plot(tiny, tmp_path, monkeypatch):
    import bosaris_dask.plots as plots
    from bosaris_dask.metrics import evaluate

    seen = {}

    def spy(results, kind, path, **options):
        seen.update(results=results, options=options)
        return original(results, kind, path, **options)

    original = plots.save_plot
    monkeypatch.setattr(plots, "save_plot", spy)
    out = tmp_path / "nbe.pdf"
    # eval: the dev key with the eval scores' holes filled (apply needs every key trial)
    ev = io.read(tiny / "eval.h5")
    io.write(make_scores(ev.model.values, ev.segment.values,
                         np.where(ev.score_mask.values, ev.score.values, 0.0)),
             tmp_path / "ev.h5")  # fmt: skip
    rc = main(["plot", "nbe", "--key", str(tiny / "key.h5"), "--scores", str(tiny / "dev.h5"),
               "--eval-key", str(tiny / "key.h5"), "--eval-scores", str(tmp_path / "ev.h5"),
               "--prior", "0.01", "--out", str(out), "-q", "--cluster", "threads"])  # fmt: skip
    assert rc == 0 and out.stat().st_size > 0
    results, options = seen["results"], seen["options"]
    assert list(results) == ["dev", "eval"] and options["contributions"] is True
    expected = evaluate(io.read(tmp_path / "ev.h5"), io.read(tiny / "key.h5"), priors=[0.01])
    np.testing.assert_allclose(
        results["eval"].min_dcf.values.ravel(), expected.min_dcf.values.ravel(), rtol=1e-12
    )
    assert results["eval"].system.values.tolist() == ["ev"]  # named after its own file
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    plots.nbe_plot(results, ax=ax, **options)
    gids = {line.get_gid() for line in ax.get_lines()}
    for part in ("act_miss", "act_fa", "min_miss", "min_fa"):
        assert {f"nbe/{part}/dev [dev]", f"nbe/{part}/ev [eval]"} <= gids
    (op,) = [line for line in ax.get_lines() if line.get_gid() == "nbe/operating-point"]
    np.testing.assert_allclose(op.get_xdata(), [np.log(0.01 / 0.99)] * 2, rtol=1e-12)


def test_plot_eval_options_are_checked(tiny, tmp_path, capsys):
    base = ["plot", "nbe", "--key", str(tiny / "key.h5"), "--scores", str(tiny / "dev.h5"),
            "--out", str(tmp_path / "x.png"), "-q"]  # fmt: skip
    assert main([*base, "--eval-key", str(tiny / "key.h5")]) != 0
    assert "--eval-key and --eval-scores go together" in capsys.readouterr().err
    two = ["--eval-scores", str(tiny / "dev.h5")] * 2
    assert main([*base, "--eval-key", str(tiny / "key.h5"), *two]) != 0
    assert "same 1 systems" in capsys.readouterr().err


def test_fuse_apply_reports_target_proportions_and_kl(tiny, tmp_path, capsys):
    from bosaris_dask.fusion.diagnostics import posterior_report

    ev = io.read(tiny / "eval.h5")
    filled = make_scores(ev.model.values, ev.segment.values,
                         np.where(ev.score_mask.values, ev.score.values, 0.0))  # fmt: skip
    io.write(filled, tmp_path / "ev.h5")
    io.write(make_scores(ev.model.values, ev.segment.values, 0.5 * filled.score.values + 1),
             tmp_path / "ev2.h5")  # fmt: skip
    dev = io.read(tiny / "dev.h5")
    io.write(make_scores(dev.model.values, dev.segment.values, 0.5 * dev.score.values + 1),
             tmp_path / "dev2.h5")  # fmt: skip
    out = tmp_path / "fused.h5"
    rc = main(["fuse", "--key", str(tiny / "key.h5"), "--scores", str(tiny / "dev.h5"),
               "--scores", str(tmp_path / "dev2.h5"), "--model-out", str(tmp_path / "f.json"),
               "--apply", str(tmp_path / "ev.h5"), "--apply", str(tmp_path / "ev2.h5"),
               "--out", str(out), "--cluster", "threads"])  # fmt: skip
    assert rc == 0
    err = capsys.readouterr().err
    want = posterior_report(
        [filled, io.read(tmp_path / "ev2.h5"), io.read(out)],
        prior=0.5, names=["ev", "ev2", "fused"],
    )  # fmt: skip
    assert "120 trials, posteriors at prior 0.5" in err
    # dev2 is an affine map of dev: the training data cannot tell its weight from dev's
    assert (
        "warning: the training data do not determine the weight of dev, the weight of "
        "dev2 and the offset"
    ) in err  # fmt: skip  (the systems by their files)
    line = next(x for x in err.splitlines() if x.startswith("estimated target proportion"))
    values = [float(v.split()[-1]) for v in line.split(":")[1].split(",")]
    np.testing.assert_allclose(values, want.target_proportion.values, rtol=1e-5)
    assert "KL(row || column), nats:" in err


def test_fuse_apply_onto_one_of_its_inputs_reports_on_the_inputs(tiny, tmp_path, capsys):
    import shutil

    ev = io.read(tiny / "eval.h5")
    filled = make_scores(ev.model.values, ev.segment.values,
                         np.where(ev.score_mask.values, ev.score.values, 0.0))  # fmt: skip
    io.write(filled, tmp_path / "ev.h5")
    io.write(make_scores(ev.model.values, ev.segment.values, filled.score.values ** 2 / 4),
             tmp_path / "ev2.h5")  # fmt: skip
    shutil.copy(tmp_path / "ev2.h5", tmp_path / "ev2_copy.h5")

    def fuse(second: str, out: str) -> str:
        argv = ["fuse", "--key", str(tiny / "key.h5"), "--scores", str(tiny / "dev.h5"),
                "--scores", str(tiny / "eval.h5"), "--model-out", str(tmp_path / "f.json"),
                "--apply", str(tmp_path / "ev.h5"), "--apply", str(tmp_path / second),
                "--out", str(tmp_path / out), "--cluster", "threads",
                "--allow-missing"]  # fmt: skip
        assert main(argv) == 0
        err = capsys.readouterr().err
        return err[err.index("trials, posteriors") :]

    elsewhere = fuse("ev2.h5", "fused.h5")
    # the write replaces ev2_copy.h5 under the lazily opened input: the report was read from
    # the fused scores (ev2's proportion was the fusion's, its KL to the fusion 0)
    onto_input = fuse("ev2_copy.h5", "ev2_copy.h5").replace("ev2_copy", "ev2")
    assert onto_input.split() == elsewhere.split()
    fused = io.read(tmp_path / "ev2_copy.h5")
    np.testing.assert_array_equal(fused.score.values, io.read(tmp_path / "fused.h5").score.values)


def test_fuse_with_quality_and_qtrans(tiny, tmp_path, capsys):
    from bosaris_dask.fusion import QualityFuser
    from bosaris_dask.trials import make_quality, quality_table

    rng = np.random.default_rng(2)
    key, dev = io.read(tiny / "key.h5"), io.read(tiny / "dev.h5")
    mq = quality_table(key.model.values, rng.normal(size=(4, 2)))
    sq = quality_table(key.segment.values, rng.normal(size=(30, 2)))
    io.write_quality(mq, tmp_path / "mq.h5")
    io.write_quality(sq, tmp_path / "sq.h5")
    (tmp_path / "qtrans.txt").write_text("1 -0.5\n")
    model = tmp_path / "q.json"
    rc = main(["fuse", "--key", str(tiny / "key.h5"), "--scores", str(tiny / "dev.h5"),
               "--model-quality", str(tmp_path / "mq.h5"), "--segment-quality",
               str(tmp_path / "sq.h5"), "--qtrans", str(tmp_path / "qtrans.txt"),
               "--model-out", str(model), "-q", "--cluster", "threads"])  # fmt: skip
    assert rc == 0
    doc = json.loads(model.read_text())
    assert doc["qtrans"] == [[1.0, -0.5]] and len(doc["quality_matrix"]) == 2
    ref = QualityFuser(0.5, qtrans=[[1.0, -0.5]]).fit([dev], key, make_quality(mq, sq))
    np.testing.assert_allclose(doc["quality_matrix"], ref.quality_matrix_, rtol=1e-12)
    (tmp_path / "bad.txt").write_text("1 x\n")
    rc = main(["fuse", "--key", str(tiny / "key.h5"), "--scores", str(tiny / "dev.h5"),
               "--model-quality", str(tmp_path / "mq.h5"), "--segment-quality",
               str(tmp_path / "sq.h5"), "--qtrans", str(tmp_path / "bad.txt"),
               "--model-out", str(model), "-q"])  # fmt: skip
    assert rc != 0
    assert "bad.txt: not a matrix of numbers" in capsys.readouterr().err
