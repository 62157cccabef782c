"""Fusion's objective passes get evaluation's memory check and progress bars."""

from __future__ import annotations

import numpy as np
import pytest

from bosaris_dask.errors import MemoryLimitError
from bosaris_dask.fusion import LinearFuser
from bosaris_dask.objectives import FusionObjective, fusion_data
from bosaris_dask.passes import memory
from bosaris_dask.passes import runner as runner_module
from bosaris_dask.progress import showing_progress
from bosaris_dask.trials import make_key, make_scores

MB = 2**20


def _inputs():
    rng = np.random.default_rng(5)
    mask = rng.choice(np.array([-1, 1], dtype=np.int8), size=(30, 40), p=[0.8, 0.2])
    systems = [make_scores(range(30), range(40), rng.normal(size=(30, 40)) + mask * k,
                           chunks=(10, 20)) for k in (1.0, 2.0)]  # fmt: skip
    return make_key(range(30), range(40), mask, chunks=(10, 20)), systems


class _FakeClient:
    def __init__(self, **workers):
        self.workers = workers

    def scheduler_info(self, n_workers):
        return {"workers": self.workers}


def test_a_worker_too_small_is_refused_before_the_first_pass(monkeypatch):
    key, systems = _inputs()
    obj = FusionObjective(fusion_data(systems, key), prior=0.5)
    need = obj.task_memory()
    assert need.inputs == 10 * 20 * (8 + 8 + 1 + 1 + 1)  # two float64 systems, masks, classes
    assert need.buffers == 200 * (4 + 2 * 3 * 8 + 4 * 8)  # the whole chunk is one slab
    tiny = {"memory_limit": 210 * MB, "nthreads": 1, "metrics": {"memory": 205 * MB}}
    monkeypatch.setattr(runner_module, "current_client", lambda: _FakeClient(w1=tiny))
    computed = []
    monkeypatch.setattr(runner_module, "compute", lambda *a, **k: computed.append(a))
    with pytest.raises(MemoryLimitError, match=r"^worker w1 would need about 205 MiB .* is 210"):
        obj.evaluate(np.array([0.5, 0.5, 0.0]), "fgH")
    assert computed == [] and obj.passes == 0  # refused before any work


def test_objective_memory_grows_with_the_slab_and_the_parameters():
    small = memory.objective_task_memory((100, 100), input_itemsizes=[4, 1, 1], n_params=2,
                                         n_measures=0, result_length=10, split_every=4,
                                         slab=1 << 16)  # fmt: skip
    assert small.buffers == 10_000 * (4 + 32 + 32)  # the chunk is smaller than a slab
    wide = memory.objective_task_memory((10, 1 << 17), input_itemsizes=[4, 1, 1], n_params=2,
                                        n_measures=2, result_length=10, split_every=4,
                                        slab=1 << 16)  # fmt: skip
    assert wide.buffers == (1 << 17) * (4 + 32 + 32 + 48)  # one whole row, with quality
    assert small.merge == 9 * 80 and small.held == 4 * 80


def test_fusion_shows_progress_bars_when_asked(capsys):
    key, systems = _inputs()
    fuser = LinearFuser(0.5).fit(systems, key)
    assert capsys.readouterr().err == ""  # no bar by default
    with showing_progress():
        again = LinearFuser(0.5).fit(systems, key)
    err = capsys.readouterr().err
    assert err.count("100% Completed") == again.passes_ >= 2  # one bar per pass
    np.testing.assert_array_equal(again.weights_, fuser.weights_)
    obj = FusionObjective(fusion_data(systems, key), prior=0.5, progress=True)
    obj.evaluate(np.array([0.5, 0.5, 0.0]), "f")
    assert capsys.readouterr().err.count("100% Completed") == 1


def test_the_objective_kernel_runs_the_blas_on_one_thread():
    """A quality fusion's offset was -1.4645764817984859 on the threaded scheduler and
    -1.4645764817984845 on worker processes (whose BLAS distributed starts with one thread):
    the kernel's products ran on the process's BLAS threads, which add in another order.
    Checked in a fresh process, as a command runs (a limit another test left set in this one's
    main thread keeps OpenBLAS from taking a worker thread's own)."""
    import os
    import subprocess
    import sys

    pytest.importorskip("threadpoolctl")
    code = """
import numpy as np, threadpoolctl
from bosaris_dask.fusion import LinearFuser
from bosaris_dask.objectives import kernel
def blas_threads():
    return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
seen, inner = [], kernel._class_sums
def spy(*args, **kwargs):
    seen.extend(blas_threads())
    return inner(*args, **kwargs)
kernel._class_sums = spy
before = blas_threads()
rng = np.random.default_rng(0)
LinearFuser().fit_arrays(rng.normal(1, 1, (500, 2)), rng.normal(-1, 1, (2000, 2)))
print(max(before, default=1), sorted(set(seen)), blas_threads() == before)
"""
    two = {name: "2" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env = {**os.environ, **two}  # (another test of this process may have set them to 1)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True, env=env).stdout.split(maxsplit=1)  # fmt: skip
    if int(out[0]) < 2:
        pytest.skip("this machine's BLAS runs on one thread already")
    assert out[1].strip() == "[1] True"  # one thread inside; the process's own setting back
