"""``progress.compute``: same results with and without a bar, the bar on stderr only, on the
threaded scheduler and under a distributed client, also where distributed thinks it runs in a
Jupyter kernel (which made it build an ``ipywidgets`` widget)."""

from __future__ import annotations

import dask
import dask.array as da
import distributed.diagnostics.progressbar as distributed_progressbar
import numpy as np
import pytest
from distributed import Client, LocalCluster

from bosaris_dask.progress import compute, compute_and_keep, current_client


def _collection() -> tuple[da.Array, float]:
    values = np.arange(1, 101, dtype=np.float64).reshape(10, 10)
    x = da.from_array(values, chunks=(3, 4))
    return (x * 2).sum(), float(2 * values.sum())  # 10100


@pytest.fixture
def client():  # per test: the finder tests below need none left over
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


def test_threaded_scheduler_bar_on_stderr(capsys):
    x, expected = _collection()
    with dask.config.set(scheduler="threads"):
        assert current_client() is None
        assert float(compute(x, progress=True)) == expected
        captured = capsys.readouterr()
        assert "100% Completed" in captured.err
        assert captured.out == ""
        assert float(compute(x)) == expected  # no bar without progress
        assert capsys.readouterr().err == ""


def test_distributed_bar_on_stderr(client, capsys):
    x, expected = _collection()
    assert current_client() is client
    assert float(compute(x, progress=True)) == expected
    captured = capsys.readouterr()
    assert "100% Completed" in captured.err
    assert captured.out == ""  # distributed's text bar prints to stdout: redirected


def test_distributed_bar_in_a_kernel_is_text(client, capsys, monkeypatch):
    # In Jupyter distributed's progress() guesses notebook=True and needs ipywidgets (optional):
    # compute must use the text bar there too.
    monkeypatch.setattr(distributed_progressbar, "is_kernel", lambda: True)
    x, expected = _collection()
    assert float(compute(x, progress=True)) == expected
    assert "100% Completed" in capsys.readouterr().err


# --- one client finder: current_client() is where dask.compute and compute() run -------------


def _where_it_runs(client) -> None:
    """current_client(), dask's own choice of scheduler, and where a task of compute() and of
    dask.compute() actually runs (on a worker of ``client`` or in this process) all agree."""
    import dask.base
    from distributed import get_worker

    def worker_address(_):
        try:
            return get_worker().address
        except ValueError:  # not inside a worker: this process's threads
            return None

    probe = dask.delayed(worker_address)(0)
    owner = getattr(dask.base.get_scheduler(), "__self__", None)
    if client is None:
        assert current_client() is None
        assert owner is None
        assert compute(probe) is None
        assert compute(probe, progress=True) is None
        assert dask.compute(probe)[0] is None
    else:
        workers = set(client.scheduler_info()["workers"])
        assert current_client() is client
        assert owner is client
        assert compute(probe) in workers
        assert compute(probe, progress=True) in workers
        assert dask.compute(probe)[0] in workers


def _local_cluster() -> LocalCluster:
    return LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None)


def test_client_finder_with_no_client():
    _where_it_runs(None)


def test_client_finder_with_a_default_client_then_closed():
    with _local_cluster() as cluster:
        client = Client(cluster)  # the default client, not in a with block
        try:
            _where_it_runs(client)
            with dask.config.set(scheduler="threads"):  # the config wins, as in dask.compute
                _where_it_runs(None)
        finally:
            client.close()
        assert client.status == "closed"
        _where_it_runs(None)


def test_client_finder_inside_with_client_and_after():
    with _local_cluster() as cluster:
        with Client(cluster) as client:
            _where_it_runs(client)
        _where_it_runs(None)
        other = Client(cluster, set_as_default=False)  # not the default: dask does not use it
        try:
            _where_it_runs(None)
        finally:
            other.close()


def test_compute_drains_its_threads_before_raising():
    # A failing task must not leave its siblings running after compute() raises.
    import threading
    import time

    finished = []
    lock = threading.Lock()

    def slow(i):
        time.sleep(0.2)
        with lock:
            finished.append(i)
        return i

    def fail():
        raise ValueError("boom")

    parts = [dask.delayed(slow)(i) for i in range(3)] + [dask.delayed(fail)()]
    with dask.config.set(num_workers=4), pytest.raises(ValueError, match="boom"):
        compute(parts)
    assert sorted(finished) == [0, 1, 2]


def _count_blocks(block: np.ndarray, log: str) -> np.ndarray:
    with open(log, "a") as f:  # a file: the worker runs its own copy of this function
        f.write("x")
    return block + 1


@pytest.mark.parametrize("also", [False, True])
def test_compute_and_keep_runs_shared_tasks_once_on_a_cluster(client, tmp_path, also):
    # Persisting the kept array alone and then computing the graph that reads it ran every
    # block twice: the optimizer fused the kept tasks into the computed ones under other keys
    # (a refinement pass read and selected each chunk twice on worker processes).
    log = tmp_path / "calls"
    log.touch()
    values = np.arange(48.0).reshape(6, 8)
    keep = da.from_array(values, chunks=(2, 4)).map_blocks(
        _count_blocks, log=str(log), meta=np.empty((0, 0))
    )
    x = (keep.sum(), keep.max()) if also else keep.sum()
    kept, got = compute_and_keep(keep, x)
    assert log.read_text() == "x" * 6  # each of the 6 blocks once
    expected = float((values + 1).sum())
    assert (tuple(map(float, got)) if also else float(got)) == (
        (expected, 48.0) if also else expected
    )
    np.testing.assert_array_equal(kept.compute(), values + 1)
    assert log.read_text() == "x" * 6  # kept on the worker: not computed again


def test_each_passs_bar_is_named(capsys):
    # a terminal showed bare dask bars: which pass, over how many chunks, was not said
    import bosaris_dask as bd

    key = bd.make_key(["m1", "m2"], ["s1", "s2"], [[1, -1], [-1, 1]])
    scores = bd.make_scores(["m1", "m2"], ["s1", "s2"], [[3.0, -2.0], [0.5, 4.0]])
    with dask.config.set(scheduler="threads"):
        bd.evaluate(scores, key, progress=True)
    err = capsys.readouterr().err
    assert err.startswith("pass 1: 1 chunk\n") and "Completed" in err
    with dask.config.set(scheduler="threads"):
        bd.evaluate(scores, key)
    assert capsys.readouterr().err == ""  # no bar, no name
