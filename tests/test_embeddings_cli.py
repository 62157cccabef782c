"""``bosaris-dask score`` and ``evaluate --enrol --test``: writing the scores and evaluating them
gives the same JSON, byte for byte, as evaluating straight from the embeddings."""

from __future__ import annotations

import numpy as np
import pytest

from bosaris_dask import io
from bosaris_dask.cli import main
from bosaris_dask.trials import key_from_labels, make_ndx

from . import reference as ref

D = 24


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("emb")
    rng = np.random.default_rng(5)
    centres = rng.normal(size=(12, D))

    def write(name, n, offset):
        labels = (np.arange(n) + offset) % 12
        x = (centres[labels] + 0.9 * rng.normal(size=(n, D))).astype(np.float32)
        ids = [f"spk{lab}-{name}{i}" for i, lab in enumerate(labels)]
        np.savez(d / f"{name}.npz", ids=np.array(ids), embeddings=x)
        return ids, [f"spk{lab}" for lab in labels]

    e_ids, e_lab = write("enrol", 30, 0)
    t_ids, t_lab = write("test", 45, 3)
    write("cohort", 40, 7)
    io.write(key_from_labels(e_ids, e_lab, t_ids, t_lab), d / "key.zarr")
    (d / "models.txt").write_text(
        "".join(f"{lab} {i}\n" for i, lab in zip(e_ids, e_lab, strict=True))
    )
    io.write(key_from_labels(sorted(set(e_lab)), sorted(set(e_lab)), t_ids, t_lab),
             d / "model_key.zarr")  # fmt: skip
    return d


@pytest.mark.parametrize("extra", [
    [],
    ["--norm", "as", "--cohort", "cohort.npz", "--top-n", "8", "--center", "cohort.npz"],
    ["--models", "models.txt", "--norm", "s", "--cohort", "cohort.npz"],
])  # fmt: skip
def test_score_then_evaluate_equals_evaluate_from_embeddings(files, extra, monkeypatch):
    monkeypatch.chdir(files)
    key = "model_key.zarr" if "--models" in extra else "key.zarr"
    common = ["--enrol", "enrol.npz", "--test", "test.npz", "--block", "16", *extra]
    assert main(["score", *common, "--key", key, "--out", "test.zarr", "-q"]) == 0
    assert main(["evaluate", "--key", key, "--scores", "test.zarr", "--json", "a.json",
                 "-q"]) == 0  # fmt: skip
    assert main(["evaluate", "--key", key, *common, "--json", "b.json", "-q"]) == 0
    a, b = (files / "a.json").read_bytes(), (files / "b.json").read_bytes()
    assert a == b and b'"name": "test"' in a
    stored = io.read(files / "test.zarr")
    assert stored.score.dtype == np.float32 and stored.sizes["segment"] == 45


def test_score_with_an_ndx_keeps_its_trials(files, tmp_path):
    ndx = make_ndx(["spk0-enrol0", "spk1-enrol1"], ["spk3-test0"], [[True], [False]])
    io.write(ndx, tmp_path / "ndx.h5")
    out = tmp_path / "s.txt"
    assert main(["score", "--enrol", str(files / "enrol.npz"), "--test",
                 str(files / "test.npz"), "--ndx", str(tmp_path / "ndx.h5"), "--out", str(out),
                 "-q"]) == 0  # fmt: skip
    lines = out.read_text().split()
    assert lines[:2] == ["spk0-enrol0", "spk3-test0"] and len(lines) == 3


def test_info_of_an_embedding_file(files, capsys):
    assert main(["info", str(files / "enrol.npz")]) == 0
    out = capsys.readouterr().out
    assert "30 of dimension 24 (float32)" in out and "norms:" in out


def test_errors_are_one_line(files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    assert main(["evaluate", "--key", "key.zarr", "--enrol", "enrol.npz"]) == 1
    assert capsys.readouterr().err.strip() == (
        "bosaris-dask: error: scores from embeddings need both --enrol and --test"
    )
    assert main(["evaluate", "--key", "key.zarr"]) == 1
    assert "no scores: give --scores, or --enrol and --test" in capsys.readouterr().err
    assert main(["score", "--enrol", "enrol.npz", "--test", "cohort.npz", "--key", "key.zarr",
                 "--out", "x.zarr"]) == 1  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no embedding in cohort.npz" in err[0]
    # --allow-missing drops trials without a score: an id without an embedding is still an
    # error, which says so
    assert main(["evaluate", "--enrol", "enrol.npz", "--test", "cohort.npz", "--key", "key.zarr",
                 "--allow-missing"]) == 1  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(
        "(--allow-missing drops key trials without a score, not ids without an embedding)"
    )


def test_score_writes_cohort_statistics_as_quality(files, monkeypatch):
    from bosaris_dask.embeddings import cohort_stats

    monkeypatch.chdir(files)
    assert main(["score", "--enrol", "enrol.npz", "--test", "test.npz", "--norm", "as",
                 "--cohort", "cohort.npz", "--top-n", "6", "--out", "s.zarr",
                 "--quality-out", "q.zarr", "-q"]) == 0  # fmt: skip
    q = io.read(files / "q.zarr")
    assert q.segment_quality.segment_measure.values.tolist() == [
        "cohort_mean", "cohort_std", "top_mean", "top_std"]  # fmt: skip
    ref = cohort_stats("test.npz", "cohort.npz", top_n=6)
    np.testing.assert_array_equal(q.segment_quality.values[:, 2], ref.top_mean.values)
    assert main(["score", "--enrol", "enrol.npz", "--test", "test.npz", "--out", "s.zarr",
                 "--quality-out", "q.zarr"]) == 1  # fmt: skip
    # one store for both: the scores would silently replace the statistics
    assert (
        main(
            [
                "score",
                "--enrol",
                "enrol.npz",
                "--test",
                "test.npz",
                "--norm",
                "z",
                "--cohort",
                "cohort.npz",
                "--out",
                "q.zarr",
                "--quality-out",
                "./q.zarr",
            ]
        )
        == 1
    )
    assert io.read(files / "q.zarr").segment_quality.values[:, 2].tolist() == (
        ref.top_mean.values.tolist()
    )


@pytest.mark.slow
def test_worker_processes_read_the_files_and_give_the_same_bits(files):
    """Two worker processes open the .npy rows themselves (the graph holds paths, not data) and
    their evaluation equals the threaded one bit for bit."""
    import xarray as xr

    from bosaris_dask.cluster import connect
    from bosaris_dask.embeddings import scores_from_embeddings
    from bosaris_dask.metrics import evaluate

    data = np.load(files / "test.npz")
    np.save(files / "t.npy", data["embeddings"])
    (files / "t.ids").write_text("\n".join(data["ids"]))
    key = io.read(files / "key.zarr")

    def run():
        s = scores_from_embeddings(files / "enrol.npz", files / "t.npy", trials=key,
                                   norm="as", cohort=files / "cohort.npz", top_n=5,
                                   chunks=(8, 16))  # fmt: skip
        return s.score.values, evaluate(s, key, split_every=2)

    threads = run()
    with connect(cluster="local", workers=2, threads_per_worker=1, dashboard=False,
                 announce=None):  # fmt: skip
        procs = run()
    assert procs[0].tobytes() == threads[0].tobytes()
    xr.testing.assert_identical(procs[1], threads[1])


# --- every command that takes --scores also takes --enrol --test (issue 13) -------------------

_EMB = ["--enrol", "enrol.npz", "--test", "test.npz", "--block", "16", "--norm", "s",
        "--cohort", "cohort.npz"]  # fmt: skip


@pytest.fixture()
def scored(files, monkeypatch):
    """``files`` as the working directory, with the embeddings' scores written by ``score``:
    test.zarr (the key's trials), all.zarr (all-vs-all) and other.zarr (another system)."""
    monkeypatch.chdir(files)
    assert main(["score", *_EMB, "--key", "key.zarr", "--out", "test.zarr", "-q"]) == 0
    assert main(["score", *_EMB, "--out", "all.zarr", "-q"]) == 0
    assert main(["score", "--enrol", "enrol.npz", "--test", "test.npz", "--backend", "dot",
                 "--key", "key.zarr", "--out", "other.zarr", "-q"]) == 0  # fmt: skip
    return files


def _assert_same_store(a, b):
    """Two written score stores hold the same ids, mask and score bits."""
    import xarray as xr

    x, y = io.read(a), io.read(b)
    xr.testing.assert_identical(x.compute(), y.compute())
    assert x.score.values.tobytes() == y.score.values.tobytes()


@pytest.mark.parametrize("kind", ["det", "nbe"])
def test_plot_from_embeddings_plots_what_the_written_scores_give(scored, kind, monkeypatch):
    import xarray as xr

    import bosaris_dask.plots

    plotted = []
    monkeypatch.setattr(bosaris_dask.plots, "save_plot",
                        lambda results, *a, **k: plotted.append(results))  # fmt: skip
    common = ["plot", kind, "--key", "key.zarr", "--scores", "other.zarr", "--prior", "0.1"]
    assert main([*common, "--scores", "test.zarr", "--out", "a.png", "-q"]) == 0
    assert main([*common, *_EMB, "--out", "b.png", "-q"]) == 0
    a, b = plotted
    assert list(b.system.values) == ["other", "test"]
    xr.testing.assert_identical(a, b)
    assert a.min_dcf.values.tobytes() == b.min_dcf.values.tobytes()


def test_plot_eval_scores_count_the_embedding_system(scored, capsys):
    assert main(["plot", "det", "--key", "key.zarr", *_EMB, "--eval-key", "key.zarr",
                 "--eval-scores", "test.zarr", "--out", "c.png", "-q"]) == 0  # fmt: skip
    assert main(["plot", "det", "--key", "key.zarr", "--scores", "other.zarr", *_EMB,
                 "--eval-key", "key.zarr", "--eval-scores", "test.zarr", "--out", "c.png",
                 "-q"]) == 1  # fmt: skip
    assert "same 2 systems" in capsys.readouterr().err


@pytest.mark.parametrize("method", ["linear", "pav"])
def test_calibrate_from_embeddings_equals_calibrating_the_written_scores(scored, method):
    common = ["calibrate", "--method", method, "--key", "key.zarr", "--apply", "test.zarr"]
    assert main([*common, "--scores", "test.zarr", "--model-out", "a.json", "--out",
                 "a.zarr", "-q"]) == 0  # fmt: skip
    assert main([*common, *_EMB, "--model-out", "b.json", "--out", "b.zarr", "-q"]) == 0
    assert (scored / "a.json").read_bytes() == (scored / "b.json").read_bytes()
    _assert_same_store(scored / "a.zarr", scored / "b.zarr")


def test_calibrate_takes_one_system(scored, capsys):
    assert main(["calibrate", "--key", "key.zarr", "--scores", "other.zarr", *_EMB,
                 "--model-out", "x.json"]) == 1  # fmt: skip
    assert "one system: give --scores, or --enrol and --test, not both" in (capsys.readouterr().err)


def test_fuse_from_embeddings_equals_fusing_the_written_scores(scored, capsys):
    import json

    common = ["fuse", "--key", "key.zarr", "--scores", "other.zarr", "--apply", "other.zarr",
              "--apply", "test.zarr"]  # fmt: skip
    assert main([*common, "--scores", "test.zarr", "--model-out", "a.json", "--out",
                 "a.zarr", "-q"]) == 0  # fmt: skip
    assert main([*common, *_EMB, "--model-out", "b.json", "--out", "b.zarr", "-q"]) == 0
    assert (scored / "a.json").read_bytes() == (scored / "b.json").read_bytes()
    assert len(json.loads((scored / "b.json").read_text())["weights"]) == 2
    _assert_same_store(scored / "a.zarr", scored / "b.zarr")
    assert main([*common[:-2], *_EMB, "--model-out", "b.json", "--out", "b.zarr"]) == 1
    assert "--apply takes the eval scores of the same 2 systems" in capsys.readouterr().err


def test_apply_to_embeddings_equals_applying_to_the_written_scores(scored, tmp_path):
    assert main(["calibrate", "--key", "key.zarr", "--scores", "test.zarr", "--model-out",
                 "cal.json", "-q"]) == 0  # fmt: skip
    assert main(["apply", "--model", "cal.json", "--scores", "all.zarr", "--out", "a.zarr",
                 "-q"]) == 0  # fmt: skip
    assert main(["apply", "--model", "cal.json", *_EMB, "--out", "b.zarr", "-q"]) == 0
    _assert_same_store(scored / "a.zarr", scored / "b.zarr")
    assert io.read(scored / "b.zarr").sizes == {"model": 30, "segment": 45}
    # --ndx selects the trials scored from the embeddings, as score --ndx does
    ndx = make_ndx(["spk0-enrol0", "spk1-enrol1"], ["spk3-test0"], [[True], [False]])
    io.write(ndx, tmp_path / "ndx.h5")
    assert main(["score", *_EMB, "--ndx", str(tmp_path / "ndx.h5"), "--out", "n.zarr",
                 "-q"]) == 0  # fmt: skip
    for name, source in (("c.zarr", ["--scores", "n.zarr"]), ("d.zarr", _EMB)):
        assert main(["apply", "--model", "cal.json", *source, "--ndx",
                     str(tmp_path / "ndx.h5"), "--out", name, "-q"]) == 0  # fmt: skip
    _assert_same_store(scored / "c.zarr", scored / "d.zarr")
    assert int(io.read(scored / "d.zarr").score_mask.sum()) == 1


# --- a label-derived key from two 'id class' tables (all-vs-all) -----------------------------


@pytest.fixture()
def tables(files, monkeypatch):
    """``files`` as the working directory, with 'id class' tables of its ids (the enrolment
    table also names ids that have no embedding: they are ignored)."""
    monkeypatch.chdir(files)
    for side in ("enrol", "test"):
        data = np.load(files / f"{side}.npz")
        lines = [f"{i} {i.split('-')[0]}\n" for i in data["ids"]]
        extra = ["# a comment\n", "\n", "unscored-id spk99\n"] if side == "enrol" else []
        (files / f"{side}-classes.txt").write_text("".join([*extra, *lines]))
    return files


_CLASSES = ["--enrol-classes", "enrol-classes.txt", "--test-classes", "test-classes.txt"]


def test_key_from_class_tables_marks_targets_by_equal_class(tmp_path):
    from bosaris_dask.embeddings import key_from_class_tables

    rng = np.random.default_rng(3)
    e_lab, t_lab = rng.integers(0, 4, 7), rng.integers(0, 4, 11)
    (tmp_path / "e.txt").write_text("".join(f"e{i} c{c}\n" for i, c in enumerate(e_lab)))
    (tmp_path / "t.txt").write_text("".join(f"t{i}\tc{c}\n" for i, c in enumerate(t_lab)))
    e_ids, t_ids = [f"e{i}" for i in (6, 0, 3)], [f"t{i}" for i in range(11)][::-1]
    key = key_from_class_tables(e_ids, tmp_path / "e.txt", t_ids, tmp_path / "t.txt")
    expected = np.array([[1 if e_lab[int(e[1:])] == t_lab[int(t[1:])] else -1 for t in t_ids]
                         for e in e_ids])  # fmt: skip
    assert key.model.values.tolist() == e_ids and key.segment.values.tolist() == t_ids
    np.testing.assert_array_equal(key.trial_mask.values, expected)


def test_one_file_on_both_sides_scores_no_id_against_itself(tmp_path, monkeypatch):
    # --enrol X --test X with class tables: each id against itself (cosine 1, a certain target)
    # was a target trial; the metrics must be those of the other pairs alone
    import json

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(8)
    spk = np.repeat(np.arange(10), 4)
    emb = rng.normal(size=(10, 16))[spk] + 1.5 * rng.normal(size=(40, 16))
    ids = np.array([f"u{i}" for i in range(40)])
    np.savez("all.npz", ids=ids, embeddings=emb)
    (tmp_path / "c.txt").write_text("".join(f"{u} s{k}\n" for u, k in zip(ids, spk, strict=True)))
    assert (
        main(
            [
                "evaluate",
                "--enrol",
                "all.npz",
                "--test",
                "all.npz",
                "--enrol-classes",
                "c.txt",
                "--test-classes",
                "c.txt",
                "--prior",
                "0.5",
                "--json",
                "r.json",
                "-q",
            ]
        )
        == 0
    )
    (got,) = json.loads((tmp_path / "r.json").read_text())["systems"]
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    cos, same = unit @ unit.T, spk[:, None] == spk[None, :]
    off = ~np.eye(40, dtype=bool)
    tar, non = cos[same & off], cos[~same]
    assert (got["n_target"], got["n_nontarget"]) == (tar.size, non.size) == (40 * 3, 40 * 36)
    # the scores are float32 products of the float64 vectors: rank ties may differ, so the
    # reference takes the package's float32 rounding of the cosines
    tar32, non32 = tar.astype(np.float32), non.astype(np.float32)
    assert got["eer"] == pytest.approx(ref.eer(tar32, non32), rel=1e-9)
    assert got["cllr"] == pytest.approx(ref.cllr(tar32.astype(float), non32.astype(float)),
                                        rel=1e-6)  # fmt: skip


def test_evaluate_with_class_tables_equals_evaluate_with_the_key(tables):
    common = ["evaluate", *_EMB, "--json"]
    assert main([*common, "a.json", "--key", "key.zarr", "-q"]) == 0
    assert main([*common, "b.json", *_CLASSES, "-q"]) == 0
    assert (tables / "a.json").read_bytes() == (tables / "b.json").read_bytes()
    # with a model map, the enrolment table labels the models
    (tables / "model-classes.txt").write_text("".join(f"spk{k} spk{k}\n" for k in range(12)))
    maps = ["--models", "models.txt"]
    assert main([*common, "c.json", *maps, "--key", "model_key.zarr", "-q"]) == 0
    assert main([*common, "d.json", *maps, "--enrol-classes", "model-classes.txt",
                 "--test-classes", "test-classes.txt", "-q"]) == 0  # fmt: skip
    assert (tables / "c.json").read_bytes() == (tables / "d.json").read_bytes()


def test_score_calibrate_and_fuse_take_class_tables(tables):
    assert main(["score", *_EMB, "--key", "key.zarr", "--out", "a.zarr", "-q"]) == 0
    assert main(["score", *_EMB, *_CLASSES, "--out", "b.zarr", "-q"]) == 0
    _assert_same_store(tables / "a.zarr", tables / "b.zarr")
    for command in ("calibrate", "fuse"):
        assert main([command, *_EMB, "--key", "key.zarr", "--model-out", "a.json", "-q"]) == 0
        assert main([command, *_EMB, *_CLASSES, "--model-out", "b.json", "-q"]) == 0
        assert (tables / "a.json").read_bytes() == (tables / "b.json").read_bytes()


@pytest.mark.parametrize(("argv", "message"), [
    (["--enrol-classes", "enrol-classes.txt"],
     "a key from class tables needs both --enrol-classes and --test-classes"),
    (["--key", "key.zarr", *_CLASSES],
     "give --key, or --enrol-classes and --test-classes, not both"),
    (["--enrol-classes", "short.txt", "--test-classes", "test-classes.txt"],
     "enrolment id 'spk1-enrol1' (and 28 more) has no class in short.txt"),
    (["--enrol-classes", "twice.txt", "--test-classes", "test-classes.txt"],
     "twice.txt:3: id 'spk0-enrol0' listed twice (first on line 1)"),
    (["--enrol-classes", "bad.txt", "--test-classes", "test-classes.txt"],
     "bad.txt:1: expected 'id class', got 'spk0-enrol0'"),
])  # fmt: skip
def test_class_table_errors_are_one_line(tables, capsys, argv, message):
    (tables / "short.txt").write_text("spk0-enrol0 spk0\n")
    (tables / "twice.txt").write_text("spk0-enrol0 spk0\nx y\nspk0-enrol0 spk1\n")
    (tables / "bad.txt").write_text("spk0-enrol0\n")
    assert main(["evaluate", *_EMB, *argv]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"bosaris-dask: error: {message}"]


def test_class_tables_need_embeddings_and_calibrate_a_key(tables, capsys):
    assert main(["evaluate", "--scores", "other.zarr", *_CLASSES]) == 1
    assert "label the ids of --enrol and --test: give those too" in capsys.readouterr().err
    assert main(["calibrate", *_EMB, "--model-out", "x.json"]) == 1
    assert "--key is needed (or, with --enrol and --test, --enrol-classes" in (
        capsys.readouterr().err
    )
    assert main(["score", *_EMB, *_CLASSES, "--ndx", "key.zarr", "--out", "x.zarr"]) == 1
    assert "give --ndx, or --enrol-classes and --test-classes, not both" in (
        capsys.readouterr().err
    )


def test_llr_base_treats_scores_from_embeddings_as_a_file(scored):
    """--llr-base 10 scales the scores from embeddings as it scales a written score file."""
    common = ["evaluate", "--key", "key.zarr", "--llr-base", "10", "--json"]
    assert main([*common, "a.json", "--scores", "test.zarr", "-q"]) == 0
    assert main([*common, "b.json", *_EMB, "-q"]) == 0
    assert main(["evaluate", "--key", "key.zarr", *_EMB, "--json", "c.json", "-q"]) == 0
    a, b, c = ((scored / n).read_bytes() for n in ("a.json", "b.json", "c.json"))
    assert a == b and b != c  # base 10 multiplies the LLRs by ln 10: other actDCF and Cllr


@pytest.mark.parametrize("norm", ["z", "s"])
def test_top_n_with_a_norm_and_quality_out_gives_the_top_statistics(files, norm, monkeypatch):
    # refused ('top_n only applies to AS-norm'), though --quality-out uses it
    from bosaris_dask.embeddings import cohort_stats

    monkeypatch.chdir(files)
    common = ["score", "--enrol", "enrol.npz", "--test", "test.npz", "--norm", norm,
              "--cohort", "cohort.npz", "-q"]  # fmt: skip
    assert main([*common, "--top-n", "6", "--out", "n.zarr", "--quality-out", "nq.zarr"]) == 0
    assert main([*common, "--out", "plain.zarr"]) == 0
    np.testing.assert_array_equal(io.read(files / "n.zarr").score.values,
                                  io.read(files / "plain.zarr").score.values)  # fmt: skip
    q = io.read(files / "nq.zarr")
    ref = cohort_stats("enrol.npz", "cohort.npz", top_n=6)
    np.testing.assert_array_equal(q.model_quality.values[:, 3], ref.top_std.values)


@pytest.mark.parametrize("argv", [
    ["score", "--out", "x.zarr"],
    ["evaluate", "--key", "key.zarr"],
    ["score", "--norm", "t", "--cohort", "cohort.npz", "--out", "x.zarr"],
])  # fmt: skip
def test_top_n_that_nothing_uses_is_refused(files, argv, monkeypatch, capsys):
    # without a norm it was silently ignored
    monkeypatch.chdir(files)
    inputs = ["--enrol", "enrol.npz", "--test", "test.npz", "--top-n", "5", "-q"]
    assert main([*argv, *inputs]) == 1
    err = capsys.readouterr().err
    assert "--top-n" in err and "--quality-out" in err and "Traceback" not in err


def test_score_writes_a_mat_file(files, monkeypatch):
    # a TypeError traceback: the MAT writer was passed the stores' chunk size
    monkeypatch.chdir(files)
    argv = ["score", "--enrol", "enrol.npz", "--test", "test.npz", "--key", "key.zarr", "-q"]
    assert main([*argv, "--out", "s.mat"]) == 0
    assert main([*argv, "--out", "s.zarr"]) == 0
    np.testing.assert_array_equal(io.read(files / "s.mat").score.values,
                                  io.read(files / "s.zarr").score.values)  # fmt: skip


def test_top_n_without_a_norm_is_refused_on_the_pair_by_pair_path(files, monkeypatch, capsys):
    # a text key scored to a text file pair by pair ignored it (trial_scores had no check)
    from bosaris_dask.embeddings import from_arrays
    from bosaris_dask.embeddings.scoring import trial_scores
    from bosaris_dask.errors import OptionError

    monkeypatch.chdir(files)
    io.write(io.read(files / "key.zarr"), files / "key.txt")
    argv = ["score", "--enrol", "enrol.npz", "--test", "test.npz", "--key", "key.txt"]
    assert main([*argv, "--out", "listed.txt", "-q"]) == 0
    assert main([*argv, "--top-n", "5", "--out", "listed5.txt", "-q"]) == 1
    assert "--quality-out" in capsys.readouterr().err
    e = from_arrays(["m"], np.array([[1.0, 0.0]]))
    with pytest.raises(OptionError, match="top_n"):
        trial_scores(e, e, ["m"], ["m"], np.array([0]), np.array([0]), top_n=5)
