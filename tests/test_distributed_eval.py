"""Evaluation and fusion on a real multi-process LocalCluster: identical to threads, even when a
worker process is killed mid-pass."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
import xarray as xr

from bosaris_dask import io
from bosaris_dask.cluster import connect
from bosaris_dask.metrics import evaluate
from bosaris_dask.simulate import simulate

pytestmark = pytest.mark.slow
LOCAL = {"dashboard": False, "announce": None}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    key, systems = simulate(300, 400, systems=2, target_rate=0.02, seed=3,
                            chunks=(50, 200))  # fmt: skip
    io.write(key, out / "key.zarr")
    for k, s in enumerate(systems, start=1):
        io.write(s, out / f"system-{k}.zarr", chunk_mb=0.1)
    return out


def _evaluate(stores):
    key = io.read(stores / "key.zarr")
    systems = [io.read(stores / f"system-{k}.zarr") for k in (1, 2)]
    return evaluate(systems, key, split_every=2, fmr=[1e-4, 1e-2], fnmr=[0.05],
                    ece_plo=[-3.0, 0.0, 3.0])  # fmt: skip


def _slow(block):
    time.sleep(0.2)
    return block


def _run_while_killing_a_worker(job, victim: int):
    """Run ``job()`` on a 2-process LocalCluster, SIGKILL one worker once tasks are running."""
    result: dict[str, object] = {}

    def run():
        try:
            result["value"] = job()
        except Exception as error:  # reported by the assertion below
            result["error"] = error

    with connect(cluster="local", workers=2, threads_per_worker=1, **LOCAL) as client:
        pids = list(client.run(os.getpid).values())
        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.monotonic() + 30
        while not any(client.processing().values()):
            assert time.monotonic() < deadline, "the computation never started"
            time.sleep(0.02)
        time.sleep(0.5)
        os.kill(pids[victim], signal.SIGKILL)
        worker.join(timeout=180)
    assert "error" not in result, result.get("error")
    return result["value"]


def test_local_cluster_equals_threads(stores, tmp_path):
    expected = _evaluate(stores)
    scores = io.read(stores / "system-1.zarr")
    io.write(scores, tmp_path / "threads.h5")
    with connect(cluster="local", workers=2, threads_per_worker=1, **LOCAL) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        got = _evaluate(stores)
        io.write(scores, tmp_path / "local.h5")
    xr.testing.assert_identical(got, expected)
    # the same bytes: datasets placed in their order (not the first written first), no times
    assert (tmp_path / "local.h5").read_bytes() == (tmp_path / "threads.h5").read_bytes()


def test_worker_killed_mid_evaluation_still_exact(stores):
    key = io.read(stores / "key.zarr")
    systems = [io.read(stores / f"system-{k}.zarr") for k in (1, 2)]
    rechunked = [
        s.copy(data={"score": s.score.data.rechunk((30, 400)),
                     "score_mask": s.score_mask.data.rechunk((30, 400))})
        for s in systems
    ]  # fmt: skip
    expected = evaluate(rechunked, key, split_every=2)  # same chunks: same summation order
    slowed = [
        s.copy(data={"score": s.score.data.rechunk((30, 400)).map_blocks(_slow),
                     "score_mask": s.score_mask.data.rechunk((30, 400))})
        for s in systems
    ]  # fmt: skip
    assert slowed[0].score.data.npartitions >= 8
    got = _run_while_killing_a_worker(lambda: evaluate(slowed, key, split_every=2), victim=0)
    xr.testing.assert_identical(got, expected)
    assert np.isfinite(expected.eer.values).all()


def test_worker_killed_mid_fusion_still_exact(stores):
    from bosaris_dask.fusion import LinearFuser

    key = io.read(stores / "key.zarr")
    systems = [io.read(stores / f"system-{k}.zarr") for k in (1, 2)]
    expected = LinearFuser(0.1).fit(systems, key)
    slowed = [s.copy(data={"score": s.score.data.map_blocks(_slow), "score_mask":
                           s.score_mask.data}) for s in systems]  # fmt: skip
    fitted = _run_while_killing_a_worker(lambda: LinearFuser(0.1).fit(slowed, key), victim=1)
    np.testing.assert_array_equal(fitted.weights_, expected.weights_)
    assert fitted.offset_ == expected.offset_ and fitted.passes_ == expected.passes_


def test_exact_auc_on_a_local_cluster_equals_threads(stores):
    """The exact AUC's two extra passes (its keys shipped once as a graph input) on worker
    processes give what the threaded scheduler gives."""
    import dask

    from bosaris_dask.metrics import pooled_evaluation
    from bosaris_dask.passes.exact_auc import mixed_bins

    key = io.read(stores / "key.zarr")
    systems = [io.read(stores / f"system-{k}.zarr") for k in (1, 2)]
    plain, summaries = pooled_evaluation(systems, key, priors=[0.5])
    small = sum(b.n_s for b in map(mixed_bins, summaries) if b is not None)
    assert small > 0 and plain.auc.isnull().all()
    with dask.config.set({"bosaris_dask.auc-limit": small}):  # the two-pass path
        expected = evaluate(systems, key, priors=[0.5], exact_auc=True)
        with connect(cluster="local", workers=2, threads_per_worker=1, **LOCAL):
            got = evaluate(systems, key, priors=[0.5], exact_auc=True)
    xr.testing.assert_identical(got, expected)
    assert got.attrs["passes"] == plain.attrs["passes"] + 2 and got.auc.notnull().all()
    riding = evaluate(systems, key, priors=[0.5], exact_auc=True)  # the count rides pass 2
    with connect(cluster="local", workers=2, threads_per_worker=1, **LOCAL):
        got = evaluate(systems, key, priors=[0.5], exact_auc=True)
    xr.testing.assert_identical(got, riding)
    assert got.attrs["passes"] == plain.attrs["passes"] and got.auc.values.tolist() == (
        expected.auc.values.tolist()
    )
