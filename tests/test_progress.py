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

from bosaris_dask.progress import compute, current_client


def _collection() -> tuple[da.Array, float]:
    values = np.arange(1, 101, dtype=np.float64).reshape(10, 10)
    x = da.from_array(values, chunks=(3, 4))
    return (x * 2).sum(), float(2 * values.sum())  # 10100


@pytest.fixture(scope="module")
def client():
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
