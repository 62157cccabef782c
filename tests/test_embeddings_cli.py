"""``bosaris-dask score`` and ``evaluate --enrol --test``: writing the scores and evaluating them
gives the same JSON, byte for byte, as evaluating straight from the embeddings."""

from __future__ import annotations

import numpy as np
import pytest

from bosaris_dask import io
from bosaris_dask.cli import main
from bosaris_dask.trials import key_from_labels, make_ndx

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
    (d / "models.txt").write_text("".join(f"{lab} {i}\n" for i, lab in zip(e_ids, e_lab,
                                                                              strict=True)))
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
        "bosaris-dask: error: scores from embeddings need both --enrol and --test")
    assert main(["evaluate", "--key", "key.zarr"]) == 1
    assert "no scores: give --scores, or --enrol and --test" in capsys.readouterr().err
    assert main(["score", "--enrol", "enrol.npz", "--test", "cohort.npz", "--key", "key.zarr",
                 "--out", "x.zarr"]) == 1  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no embedding in cohort.npz" in err[0]


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
