"""Relative paths on a cluster whose workers run in another working directory.

A batch job starts in the user's home, a scheduler and its workers are started in another
folder: a relative path given on the client named another file (or none) where a task opened it,
and the run stopped with "the store is gone" (an HPC audit). The tasks now get absolute paths;
every reader that opens files in tasks is read here by relative path through worker processes
started elsewhere, and must give what the same inputs give by absolute path on threads.
"""

from __future__ import annotations

import numpy as np
import pytest

import bosaris_dask as bd
from bosaris_dask import embeddings
from bosaris_dask.trials import make_key, make_scores

distributed = pytest.importorskip("distributed")

MODELS = [f"m{i}" for i in range(12)]
SEGMENTS = [f"s{j}" for j in range(15)]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The same key and scores in every lazily read format, under ``data/``."""
    root = tmp_path_factory.mktemp("paths")
    (root / "data").mkdir()
    rng = np.random.default_rng(4)
    labels = np.where(rng.random((12, 15)) < 0.3, 1, -1)
    key = make_key(MODELS, SEGMENTS, labels, chunks=(5, 6))
    scores = make_scores(MODELS, SEGMENTS, rng.normal(size=labels.shape) + labels, chunks=(5, 6))
    bd.write(key, root / "data" / "key.zarr")
    bd.write(scores, root / "data" / "scores.zarr")
    bd.write(scores, root / "data" / "scores.h5")
    bd.write(scores, root / "data" / "scores.txt")
    bd.write(scores, root / "data" / "scores.mat", mat_version="7.3")
    vectors = rng.normal(size=(27, 8)).astype(np.float32)
    emb = embeddings.from_arrays(MODELS + SEGMENTS, vectors)
    for suffix in ("h5", "zarr", "npy"):
        embeddings.write(emb, root / "data" / f"emb.{suffix}")
    return root, bd.evaluate(scores, key, priors=[0.1])


@pytest.fixture(scope="module")
def client_elsewhere(data, tmp_path_factory):
    """Two worker processes started in another folder than the one the paths are relative to."""
    import os

    root, _ = data
    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("workers_home"))
    try:
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)  # fmt: skip
    except BaseException:
        os.chdir(here)
        raise
    os.chdir(root)  # the client's folder: data/... is relative to it
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
        os.chdir(here)


@pytest.mark.parametrize(
    "scores", ["data/scores.zarr", "data/scores.h5", "data/scores.txt", "data/scores.mat"]
)
def test_relative_store_paths_read_by_workers_elsewhere(data, client_elsewhere, scores, tmp_path):
    _, expected = data
    cwd = client_elsewhere.run(lambda: __import__("os").getcwd())
    assert all("workers_home" in d for d in cwd.values())  # the premise: another folder
    got = bd.evaluate(bd.read(scores, scratch="data"), bd.read("data/key.zarr"), priors=[0.1])
    for name in ("eer", "cllr", "min_dcf", "act_dcf"):
        np.testing.assert_array_equal(got[name].values, expected[name].values)


@pytest.mark.parametrize("suffix", ["h5", "zarr", "npy"])
def test_relative_embedding_paths_read_by_workers_elsewhere(data, client_elsewhere, suffix):
    import dask

    key = bd.read("data/key.zarr")

    def scores(path):
        emb = embeddings.read(path, chunk_rows=5)
        return embeddings.scores_from_embeddings(emb, emb, trials=key, chunks=(5, 6))

    got = scores(f"data/emb.{suffix}").score.values
    with dask.config.set(scheduler="threads"):
        expected = scores(str(data[0] / "data" / f"emb.{suffix}")).score.values
    np.testing.assert_array_equal(got, expected)
