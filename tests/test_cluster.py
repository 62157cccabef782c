"""Tests of bosaris_dask.cluster with real dask components on loopback.

Real worker processes (LocalCluster), a real ``dask scheduler`` and ``dask worker`` started as
subprocesses, a worker killed with SIGKILL mid-computation. Everything binds to 127.0.0.1 and is
torn down by fixtures, whatever the test does.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pytest

from bosaris_dask.cluster import (
    CLUSTER_KINDS,
    SMALL_JOB_TRIALS,
    add_cluster_arguments,
    connect,
    connect_from_args,
    current_client,
    jobqueue_job_script,
    scheduler,
)
from bosaris_dask.errors import BosarisError, ClusterError

LOCAL = {"dashboard": False, "announce": None}


@pytest.fixture(autouse=True)
def _collect_dead_clients():
    """Collect, after each test, the clients that failed to connect (a refused or malformed
    address leaves a half-made Client in a reference cycle). Collected later by chance, inside
    another Client's start, their ``__del__`` takes the lock that start holds (distributed's
    LoopRunner lock, not re-entrant): that thread hangs holding it, and so does every later
    cluster of the process (CI: a LocalCluster waited 600 s)."""
    yield
    gc.collect()


def _data() -> tuple[np.ndarray, da.Array]:
    """Float data whose sum depends on the summation order, chunked so a tree sum is needed."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(20_000) * 10.0 ** rng.integers(-8, 8, 20_000)
    return x, da.from_array(x, chunks=1_000)


def _threaded_sum(dx: da.Array) -> float:
    return float(dx.sum(split_every=2).compute(scheduler="threads"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped) still answers kill(0): read its state.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _wait_dead(pids, timeout=15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        if not alive:
            return []
        time.sleep(0.1)
    return alive


# --------------------------------------------------------------------------------------------
# threaded scheduler, option handling
# --------------------------------------------------------------------------------------------


def test_threads_yields_none_and_uses_threaded_scheduler():
    x, dx = _data()
    with connect(cluster="threads", workers=2) as client:
        assert client is None
        assert dask.config.get("scheduler") == "threads"
        assert dask.config.get("num_workers") == 2
        total = float(dx.sum(split_every=2).compute())
    assert total == _threaded_sum(dx)
    assert total == pytest.approx(x.sum(), rel=1e-12, abs=1e-3)
    assert dask.config.get("scheduler", None) is None


def test_default_small_job_uses_threads():
    assert current_client() is None
    with connect(size_hint=SMALL_JOB_TRIALS - 1) as client:
        assert client is None
        assert dask.config.get("scheduler") == "threads"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scheduler": "tcp://127.0.0.1:1", "cluster": "local"}, "only one of"),
        ({"scheduler": "tcp://127.0.0.1:1", "scheduler_file": "f.json"}, "only one of"),
        ({"cluster": "yarn"}, "unknown cluster 'yarn'"),
        ({"cluster": "local", "jobs": 2}, r"\(--jobs\) only apply to cluster \(--cluster\) slurm"),
        (
            {"cluster": "threads", "queue": "q", "walltime": "1:00"},
            r"queue \(--queue\), walltime \(--walltime\) only",
        ),
        ({"cluster": "mpi", "workers": 4}, "mpirun -n N"),
        ({"cluster": "slurm", "memory_limit": "4GB"}, "memory per job"),
        (
            {"scheduler": "tcp://127.0.0.1:1", "workers": 2},  # the flags too (the CLI's)
            r"^workers \(--workers\) only apply to a cluster this program starts \(cluster "
            r"\(--cluster\)\), not to a running scheduler \(scheduler \(--scheduler\)\)$",
        ),
        ({"cluster": "local", "workers": 0}, "workers must be a positive integer"),
        ({"cluster": "local", "memory_limit": "lots"}, "invalid memory limit 'lots'"),
        ({"cluster": "local", "memory_limit": -1}, "invalid memory limit -1"),
        ({"cluster": "local", "memory_limit": 1.5}, "invalid memory limit 1.5"),  # 1 byte
        ({"cluster": "local", "memory_limit": float("inf")}, "invalid memory limit inf"),
    ],
)
def test_bad_options_raise_cluster_error(kwargs, match):
    with pytest.raises(ClusterError, match=match):
        with connect(**kwargs, announce=None):
            pytest.fail("the block must not run")


# --------------------------------------------------------------------------------------------
# what each kind of cluster is built with: --workers is the number of workers in all, and only
# the options given reach dask-jobqueue / dask-mpi (their config and defaults decide the rest)
# --------------------------------------------------------------------------------------------


class _FakeClient:
    status = "running"
    dashboard_link = None

    def register_plugin(self, plugin):  # a local cluster's worker-log plugin
        pass


class _FakeJobQueue:
    """Stands in for SLURMCluster/PBSCluster: records its arguments and what it was scaled to."""

    made: list = []
    per_job_default = 2  # jobqueue.<kind>.processes, as if from dask's config

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.scaled = None
        per_job = kwargs.get("processes", self.per_job_default)
        self._dummy_job = argparse.Namespace(worker_processes=per_job, worker_cores=None)
        _FakeJobQueue.made.append(self)

    def scale(self, n=None, jobs=0):
        self.scaled = {"n": n, "jobs": jobs}

    def sync(self, function, *args):
        return function(*args)

    def _correct_state(self):  # submits nothing: no job, so no job id to watch
        self.workers = {}

    def worker_count(self) -> int:
        """The worker processes this would run, as dask-jobqueue counts them."""
        per_job = self._dummy_job.worker_processes
        jobs = (
            -(-self.scaled["n"] // per_job) if self.scaled["n"] is not None else self.scaled["jobs"]
        )
        return jobs * per_job

    def close(self):
        pass


@pytest.fixture
def fake_clusters(monkeypatch):
    """LocalCluster, dask-jobqueue and dask-mpi replaced by recorders; no process starts."""
    import types

    import distributed

    from bosaris_dask.cluster import hpc, scheduler, session

    made = {"local": [], "mpi": []}

    class FakeLocalCluster:
        def __init__(self, **kwargs):
            made["local"].append(kwargs)

        def close(self):
            pass

    def initialize(**kwargs):
        made["mpi"].append(kwargs)
        return True  # this rank is the client

    fake_mpi = types.SimpleNamespace(
        initialize=initialize, WorldTooSmallException=RuntimeError, send_close_signal=lambda: None
    )
    comm = types.SimpleNamespace(Get_rank=lambda: 1, Get_size=lambda: 6)
    monkeypatch.setitem(sys.modules, "dask_mpi", fake_mpi)
    monkeypatch.setitem(
        sys.modules, "mpi4py", types.SimpleNamespace(MPI=types.SimpleNamespace(COMM_WORLD=comm))
    )
    monkeypatch.setattr(distributed, "LocalCluster", FakeLocalCluster)
    monkeypatch.setattr(scheduler, "_client", lambda *a, **k: _FakeClient())
    monkeypatch.setattr(hpc, "_client", lambda *a, **k: _FakeClient())
    monkeypatch.setattr(hpc, "_jobqueue_class", lambda kind: _FakeJobQueue)
    monkeypatch.setattr(session, "_wait_for_workers", lambda *a: None)
    monkeypatch.setattr(_FakeJobQueue, "made", [])
    return made


@pytest.mark.parametrize("kind", ["local", "threads", "slurm", "pbs"])
def test_workers_is_the_number_of_workers_for_every_kind(kind, fake_clusters):
    with connect(cluster=kind, workers=4, **LOCAL):
        threads = dask.config.get("num_workers", None)
    if kind == "local":
        assert fake_clusters["local"] == [
            {"processes": True, "host": "127.0.0.1", "dashboard_address": None, "n_workers": 4,
             "scheduler_kwargs": {"dashboard": False, "dashboard_address": "127.0.0.1:0"}}
        ]  # fmt: skip
    elif kind == "threads":
        assert threads == 4
    else:
        (jq,) = _FakeJobQueue.made
        # Nothing of the job's size comes from us: dask's config (here 2 per job) decides.
        assert jq.kwargs == {"scheduler_options": {"dashboard": False, "dashboard_address": ":0"}}
        assert jq.scaled == {"n": 4, "jobs": 0}
        assert jq.worker_count() == 4  # two jobs of two


def test_a_dashboard_asked_for_without_bokeh_is_a_warning(fake_clusters, monkeypatch, caplog):
    """``--dashboard`` where no page can be served says so; the default says nothing."""
    from bosaris_dask.cluster import session

    monkeypatch.setattr(_FakeClient, "dashboard_link", "http://127.0.0.1:8787/status")
    monkeypatch.setattr(session, "_has_bokeh", lambda: False)
    messages: list[str] = []
    for dashboard in (None, True):
        caplog.clear()
        with caplog.at_level("INFO", logger="bosaris_dask.cluster"):
            with connect(cluster="local", workers=1, dashboard=dashboard, announce=messages.append):
                pass
        levels = [r.levelname for r in caplog.records if "no dask dashboard" in r.message]
        assert levels == (["WARNING"] if dashboard else ["INFO"])
    assert messages == []  # no link announced that would not load
    monkeypatch.setattr(session, "_has_bokeh", lambda: True)
    with connect(cluster="local", workers=1, dashboard=True, announce=messages.append):
        pass
    assert messages == ["dask dashboard at http://127.0.0.1:8787/status"]


def test_the_local_dashboard_port_comes_from_dask_config(fake_clusters):
    with dask.config.set({"distributed.scheduler.dashboard.address": ":9999"}):
        with connect(cluster="local", workers=1, announce=None):
            pass
    assert fake_clusters["local"][0]["dashboard_address"] == "127.0.0.1:9999"  # loopback only
    with connect(cluster="local", workers=1, dashboard=False, announce=None):
        pass  # no dashboard: the scheduler's HTTP routes on a free port, 8787 left alone
    assert fake_clusters["local"][1]["dashboard_address"] is None
    assert fake_clusters["local"][1]["scheduler_kwargs"] == {
        "dashboard": False, "dashboard_address": "127.0.0.1:0"}  # fmt: skip


@pytest.mark.parametrize("kind", ["slurm", "pbs"])
def test_jobqueue_workers_with_jobs_sets_the_processes_per_job(kind, fake_clusters):
    with connect(cluster=kind, workers=6, jobs=3, queue="long", cores=6, **LOCAL):
        pass
    (jq,) = _FakeJobQueue.made
    assert {k: v for k, v in jq.kwargs.items() if k != "scheduler_options"} == {
        "processes": 2,
        "queue": "long",
        "cores": 6,
    }
    assert jq.scaled == {"n": None, "jobs": 3}
    assert jq.worker_count() == 6


@pytest.mark.parametrize("kind", ["slurm", "pbs"])
def test_jobqueue_with_nothing_given_leaves_everything_to_dask_config(kind, fake_clusters):
    with connect(cluster=kind, announce=None):
        pass
    (jq,) = _FakeJobQueue.made
    assert jq.kwargs == {}  # no queue, cores, memory, walltime, processes of ours
    assert jq.scaled == {"n": None, "jobs": 1}  # one job unless told
    assert jq.worker_count() == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"workers": 3}, "3 workers are not whole slurm jobs of 2 worker processes"),
        ({"workers": 5, "jobs": 2}, "5 workers do not split evenly over 2 slurm jobs"),
    ],
)
def test_jobqueue_workers_that_are_not_whole_jobs_are_refused(kwargs, match, fake_clusters):
    with pytest.raises(ClusterError, match=match):
        with connect(cluster="slurm", **kwargs, **LOCAL):
            pytest.fail("the block must not run")


@pytest.mark.parametrize("cluster", ["mpi", "slurm"])
def test_an_interface_this_host_lacks_is_one_line_before_anything_starts(cluster, fake_clusters):
    # mpi: rank 0 died with a traceback and the other ranks waited forever; slurm: a 76-line
    # traceback of distributed's RuntimeError
    with pytest.raises(ClusterError, match=r"^--interface no-such-nic: this host has no such "
                                           r"network interface \(it has .*lo"):  # fmt: skip
        with connect(cluster=cluster, interface="no-such-nic", **LOCAL):
            pytest.fail("the block must not run")
    assert fake_clusters["mpi"] == []


def test_mpi4py_without_its_mpi_library_is_one_line(fake_clusters, monkeypatch):
    import types

    mpi4py = types.ModuleType("mpi4py")

    def no_library(name):
        raise RuntimeError("cannot load MPI library (libmpi.so: cannot open shared object file)")

    mpi4py.__getattr__ = no_library  # as mpi4py's MPI module fails to load
    monkeypatch.setitem(sys.modules, "mpi4py", mpi4py)
    with pytest.raises(
        ClusterError,
        match=r"^cluster='mpi': mpi4py cannot load the MPI library "
        r"\(cannot load MPI library .*\); load the MPI",
    ):
        with connect(cluster="mpi", **LOCAL):
            pytest.fail("the block must not run")


def test_mpi_passes_only_what_was_given(fake_clusters):
    with dask.config.set(scheduler_address="tcp://127.0.0.1:1"):
        with connect(cluster="mpi", announce=None) as client:
            assert isinstance(client, _FakeClient)
        with connect(cluster="mpi", threads_per_worker=4, memory_limit="7GB", interface="lo",
                     **LOCAL):  # fmt: skip
            pass
    assert fake_clusters["mpi"] == [
        {"dashboard": True, "exit": False},  # dask-mpi's defaults: 1 thread, memory "auto"
        {
            "dashboard": False,
            "exit": False,
            "nthreads": 4,
            "memory_limit": "7GB",
            "interface": "lo",
            "dashboard_address": ":0",  # no dashboard: the HTTP routes on a free port
        },
    ]
    with pytest.raises(ClusterError, match="mpirun -n N"):
        with connect(cluster="mpi", workers=4, **LOCAL):
            pytest.fail("the block must not run")


def test_cluster_error_is_a_bosaris_error():
    assert issubclass(ClusterError, BosarisError)
    assert issubclass(ClusterError, RuntimeError)


def test_add_cluster_arguments_parses_and_defaults_to_none():
    parser = argparse.ArgumentParser()
    add_cluster_arguments(parser)
    empty = parser.parse_args([])
    for name in ("scheduler", "scheduler_file", "cluster", "workers", "threads_per_worker",
                 "memory_limit", "queue", "cores", "memory", "walltime", "jobs", "interface",
                 "dashboard", "timeout", "worker_timeout"):  # fmt: skip
        assert getattr(empty, name) is None, name
    args = parser.parse_args(
        ["--cluster", "local", "--workers", "3", "--threads-per-worker", "2",
         "--memory-limit", "0.25", "--no-dashboard", "--scheduler-timeout", "2.5"]
    )  # fmt: skip
    assert (args.cluster, args.workers, args.threads_per_worker) == ("local", 3, 2)
    assert args.memory_limit == 0.25 and args.dashboard is False and args.timeout == 2.5
    args = parser.parse_args(
        [
            "--cluster",
            "pbs",
            "--queue",
            "long",
            "--cores",
            "8",
            "--memory",
            "32GB",
            "--walltime",
            "04:00:00",
            "--jobs",
            "5",
        ]
    )
    assert (args.queue, args.cores, args.memory, args.walltime, args.jobs) == (
        "long", 8, "32GB", "04:00:00", 5)  # fmt: skip
    assert parser.parse_args(["--memory-limit", "4GB"]).memory_limit == "4GB"
    assert parser.parse_args(["--memory-limit", "2000000000"]).memory_limit == 2_000_000_000
    assert set(CLUSTER_KINDS) == {"local", "threads", "slurm", "pbs", "mpi"}


@pytest.mark.parametrize(
    "argv",
    [
        ["--workers", "0"],
        ["--workers", "two"],
        ["--memory-limit", "lots"],
        ["--memory", "banana"],  # dask-jobqueue's ValueError, under a generic hint, before
        ["--memory", "16"],  # 16 bytes
        ["--cluster", "yarn"],
        ["--scheduler", "tcp://a:1", "--cluster", "local"],
        ["--scheduler", "tcp://a:1", "--scheduler-file", "f"],
        ["--scheduler-timeout", "0"],
        ["--scheduler-timeout", "inf"],  # a KeyError traceback from dask's time parser
        ["--memory-limit", "inf"],  # an OverflowError traceback
        ["--memory-limit", "nan"],  # "invalid _memory_limit value"
        ["--memory-limit", "1.5"],  # 1 byte: distributed gave each worker all the memory
        ["--memory-limit", "5B"],
    ],
)
def test_add_cluster_arguments_rejects_bad_values(argv, capsys):
    parser = argparse.ArgumentParser()
    add_cluster_arguments(parser)
    with pytest.raises(SystemExit) as info:
        parser.parse_args(argv)
    assert info.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_connect_from_args_threads():
    parser = argparse.ArgumentParser()
    add_cluster_arguments(parser)
    args = parser.parse_args(["--cluster", "threads", "--workers", "3"])
    _, dx = _data()
    with connect_from_args(args) as client:
        assert client is None
        assert dask.config.get("num_workers") == 3
        assert float(dx.sum(split_every=2).compute()) == _threaded_sum(dx)


def test_missing_optional_dependency_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)  # makes the import fail
    with pytest.raises(ClusterError, match=r"dask_jobqueue.*pip install 'bosaris-dask\[hpc\]'"):
        with connect(cluster="slurm", announce=None):
            pass
    monkeypatch.setitem(sys.modules, "dask_mpi", None)
    with pytest.raises(ClusterError, match=r"dask_mpi.*bosaris-dask\[hpc\]"):
        with connect(cluster="mpi", announce=None):
            pass


# --------------------------------------------------------------------------------------------
# unreachable schedulers
# --------------------------------------------------------------------------------------------


def test_unreachable_scheduler_address_fails_fast():
    address = f"tcp://127.0.0.1:{_free_port()}"  # nothing listens there
    start = time.monotonic()
    with pytest.raises(ClusterError, match=f"cannot reach the dask scheduler at {address}"):
        with connect(scheduler=address, timeout=1.0, announce=None):
            pytest.fail("the block must not run")
    assert time.monotonic() - start < 10.0
    assert current_client() is None


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("tcp://127.0.0.1:notaport", "invalid literal for int"),
        ("http://127.0.0.1:8786", "scheme 'http'; dask's are inproc, tcp, tls"),
        ("tcp://", "missing port number"),
    ],
)
def test_a_malformed_scheduler_address_is_said_to_be_one_at_once(address, why):
    # each was "cannot reach ... within 5 s", then a 10 s wait and a traceback at exit
    start = time.monotonic()
    with pytest.raises(ClusterError, match=rf"^{address} is no dask scheduler address \(") as info:
        with connect(scheduler=address, timeout=5.0, announce=None):
            pytest.fail("the block must not run")
    assert why in str(info.value) and str(info.value).endswith(": give tcp://HOST:PORT")
    assert time.monotonic() - start < 2.0


def test_a_workers_address_is_said_to_be_no_schedulers():
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                      dashboard_address=None) as theirs:  # fmt: skip
        worker = next(iter(theirs.workers.values())).address
        with pytest.raises(ClusterError, match="a dask worker \\(or nanny\\) answers there, not"):
            with connect(scheduler=worker, timeout=5.0, announce=None):
                pytest.fail("the block must not run")
    assert current_client() is None


def test_workers_gone_while_a_local_cluster_starts_are_said_to_be(monkeypatch):
    # a --memory-limit below what an idle worker holds: the nannies restarted the workers, and
    # the run ended with distributed's "Stream is closed" (now and then)
    import distributed
    from distributed.comm.core import CommClosedError

    def closed(self, *args, **kwargs):
        raise CommClosedError("in <TCP (closed) ConnectionPool.register_worker_plugin>")

    monkeypatch.setattr(distributed.Client, "register_plugin", closed)
    with pytest.raises(ClusterError, match=r"^the local dask cluster's workers went away while "
                       r"it started \(--memory-limit 300MB: a worker needs about"):  # fmt: skip
        with connect(cluster="local", workers=1, memory_limit="300MB", announce=None):
            pytest.fail("the block must not run")
    assert current_client() is None


def test_a_server_that_is_no_dask_scheduler_is_said_to_be_one():
    # an SSH banner read as a message's length: 'MemoryError: Unable to allocate 2.82 EiB'
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def banner():
        connection, _ = server.accept()
        connection.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n" * 4)

    threading.Thread(target=banner, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
    try:
        with pytest.raises(ClusterError, match=r"something answers there, but not as a dask "
                                               r"scheduler"):  # fmt: skip
            with connect(scheduler=address, timeout=5, announce=None):
                pytest.fail("the block must not run")
    finally:
        server.close()


def test_the_connect_timeout_comes_from_dask_config_unless_given(tmp_path):
    """No copy of distributed's connect timeout: without ``timeout`` (or --scheduler-timeout)
    dask's ``distributed.comm.timeouts.connect`` decides."""
    start = time.monotonic()
    with dask.config.set({"distributed.comm.timeouts.connect": "0.5s"}):
        with pytest.raises(ClusterError, match=r"nope.json: the file does not exist after 0.5 s"):
            with connect(scheduler_file=tmp_path / "nope.json", announce=None):
                pytest.fail("the block must not run")
        parser = argparse.ArgumentParser()
        add_cluster_arguments(parser)
        args = parser.parse_args(["--scheduler-file", str(tmp_path / "nope.json")])
        assert args.timeout is None
        with pytest.raises(ClusterError, match="after 0.5 s"):
            with connect_from_args(args, announce=None):
                pytest.fail("the block must not run")
    assert time.monotonic() - start < 10.0


def test_missing_scheduler_file_fails_fast(tmp_path):
    start = time.monotonic()
    with pytest.raises(ClusterError, match="cannot reach the dask scheduler of .*nope.json"):
        with connect(scheduler_file=tmp_path / "nope.json", timeout=1.0, announce=None):
            pytest.fail("the block must not run")
    assert time.monotonic() - start < 10.0


# --------------------------------------------------------------------------------------------
# real LocalCluster
# --------------------------------------------------------------------------------------------


def test_a_ctrl_c_closes_quietly_and_leaves_the_log_levels_as_they_were():
    """A Ctrl-C during a run on worker processes printed asyncio's 'Task exception was never
    retrieved ... AllExit' and the workers' heartbeat tracebacks after 'interrupted'; the
    shutdown silences them, and this process's levels come back once the cluster has closed."""
    import logging

    levels = {n: logging.getLogger(n).level for n in ("distributed", "asyncio", "tornado")}
    with pytest.raises(KeyboardInterrupt):
        with connect(cluster="local", workers=1, threads_per_worker=1, announce=None) as client:
            assert int(da.ones(4, chunks=2).sum().compute()) == 4  # (as mid-run: workers up)
            raise KeyboardInterrupt
    assert client.status == "closed"
    assert {n: logging.getLogger(n).level for n in levels} == levels


def _slow(block):
    time.sleep(1.0)
    return block


def test_a_run_whose_workers_are_all_lost_ends_with_a_cluster_error():
    """Every worker gone mid-run (killed for memory, a job's walltime): the tasks waited for
    a worker forever. A scheduler this package starts fails them after the worker timeout,
    and connect says so in one line; the scheduler's line per task is left out."""
    import logging
    import threading

    from bosaris_dask.progress import compute

    start = time.monotonic()
    with pytest.raises(
        ClusterError,
        match=r"^every worker of the local dask cluster was lost "
        r"during the work and none came back within 1 s",
    ):
        with connect(cluster="local", workers=1, threads_per_worker=1, announce=None) as client:
            assert client.run_on_scheduler(
                lambda dask_scheduler: dask_scheduler.no_workers_timeout) == 60.0  # fmt: skip
            client.run_on_scheduler(
                lambda dask_scheduler: setattr(dask_scheduler, "no_workers_timeout", 1.0)
            )
            logged: list[str] = []
            handler = logging.Handler()
            handler.emit = lambda record: logged.append(record.getMessage())  # type: ignore
            logging.getLogger("distributed.scheduler").addHandler(handler)
            threading.Timer(0.5, lambda: client.cluster.scale(0)).start()  # all workers gone
            try:
                compute(da.ones(6, chunks=1).map_blocks(_slow).sum())
            finally:
                logging.getLogger("distributed.scheduler").removeHandler(handler)
    assert time.monotonic() - start < 30
    assert not [m for m in logged if "timed out waiting" in m]
    assert dask.config.get("distributed.comm.timeouts.connect")  # dask's config left whole


def test_someone_elses_scheduler_losing_every_worker_ends_when_a_worker_timeout_is_given():
    """Your own --scheduler whose workers all die mid-run (a walltime) waited forever: with
    --worker-timeout, its tasks fail after it, and its setting is put back after the run."""
    import threading

    from distributed import LocalCluster

    from bosaris_dask.progress import compute

    def timeout_of(dask_scheduler):
        return dask_scheduler.no_workers_timeout

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as theirs:  # fmt: skip
        with dask.config.set({"distributed.scheduler.no-workers-timeout": None}):
            theirs.scheduler.no_workers_timeout = None  # (as a scheduler without the setting)
        address = theirs.scheduler_address
        with connect(scheduler=address, announce=None) as client:  # not asked: theirs kept
            assert client.run_on_scheduler(timeout_of) is None
        start = time.monotonic()
        with pytest.raises(
            ClusterError, match=rf"^every worker of the dask scheduler at {address} was lost "
            r"during the work and none came back within 1 s",
        ):  # fmt: skip
            with connect(scheduler=address, worker_timeout=1, announce=None) as client:
                assert client.run_on_scheduler(timeout_of) == 1
                threading.Timer(0.5, lambda: theirs.scale(0)).start()  # all workers gone
                compute(da.ones(6, chunks=1).map_blocks(_slow).sum())
        assert time.monotonic() - start < 30
        assert theirs.scheduler.no_workers_timeout is None  # put back
        theirs.scheduler.no_workers_timeout = 7.0  # a setting of theirs is theirs
        theirs.scale(1)
        with connect(scheduler=address, worker_timeout=1, announce=None) as client:
            assert client.run_on_scheduler(timeout_of) == 7.0
        assert theirs.scheduler.no_workers_timeout == 7.0


def test_overlapping_runs_on_one_scheduler_keep_the_worker_timeout_until_the_last_ends():
    # the first run to end put the scheduler's setting back while the other still ran (which
    # then waited forever for workers), and that other called the first's value "its own"
    from distributed import LocalCluster

    def timeout_of(dask_scheduler):
        return dask_scheduler.no_workers_timeout

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as theirs:  # fmt: skip
        theirs.scheduler.no_workers_timeout = None  # (as a scheduler without the setting)
        address = theirs.scheduler_address
        with connect(scheduler=address, worker_timeout=5, announce=None) as first:
            with connect(scheduler=address, worker_timeout=9, announce=None) as second:
                assert second.run_on_scheduler(timeout_of) == 9  # the larger of the two
            assert first.run_on_scheduler(timeout_of) == 5
            with connect(scheduler=address, worker_timeout=2, announce=None) as third:
                assert third.run_on_scheduler(timeout_of) == 5
        assert theirs.scheduler.no_workers_timeout is None  # the last to end put it back
        assert not hasattr(theirs.scheduler, "_bosaris_dask_worker_timeouts")


def test_the_worker_timeout_reaches_a_scheduler_without_this_package(tmp_path):
    # the setter was pickled by reference, so a scheduler host without bosaris_dask (the usual
    # 'someone else's scheduler') could not run it: --worker-timeout was only a warning
    import os
    import subprocess
    import sys

    from bosaris_dask.cluster.no_workers import theirs_failing_without_workers

    file = tmp_path / "scheduler.json"
    code = ("import sys; sys.modules['bosaris_dask'] = None\n"
            "from distributed.cli.dask_scheduler import main\n"
            f"sys.argv = ['dask-scheduler', '--scheduler-file', {str(file)!r}, "
            "'--no-dashboard', '--port', '0']\nmain()")  # fmt: skip
    scheduler = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if file.exists() and os.path.getsize(file):
                break
            time.sleep(0.1)
        from distributed import Client

        with Client(scheduler_file=str(file), timeout=30) as client:

            def timeout_of(dask_scheduler):
                return dask_scheduler.no_workers_timeout

            with theirs_failing_without_workers(client, 30.0, "the dask scheduler"):
                assert client.run_on_scheduler(timeout_of) == 30.0
            assert client.run_on_scheduler(timeout_of) is None  # put back
    finally:
        scheduler.terminate()
        scheduler.wait()


def test_local_cluster_two_processes_matches_threads():
    x, dx = _data()
    expected = _threaded_sum(dx)
    messages: list[str] = []
    with connect(cluster="local", workers=2, threads_per_worker=1, memory_limit="1GB",
                 announce=messages.append) as client:  # fmt: skip
        assert current_client() is client
        info = client.scheduler_info()
        assert len(info["workers"]) == 2
        assert {w["nthreads"] for w in info["workers"].values()} == {1}
        assert {w["memory_limit"] for w in info["workers"].values()} == {10**9}
        assert all(a.startswith("tcp://127.0.0.1:") for a in info["workers"])
        pids = set(client.run(os.getpid).values())
        assert len(pids) == 2 and os.getpid() not in pids
        # dask.compute inside the block runs on the cluster, not in this process.
        task_pids = set(da.from_array(np.arange(8), chunks=1).map_blocks(
            lambda b: np.array([os.getpid()])).compute().tolist())  # fmt: skip
        assert task_pids <= pids
        total = float(dx.sum(split_every=2).compute())
        link = client.dashboard_link
        # An existing client is reused as it is, and left open.
        with connect(announce=None) as inner:
            assert inner is client
        assert client.status == "running"
    assert total == expected
    assert total == pytest.approx(x.sum(), rel=1e-12, abs=1e-3)
    # The link is announced exactly when the dashboard can serve pages (that needs bokeh).
    served = link is not None and importlib.util.find_spec("bokeh") is not None
    assert messages == ([f"dask dashboard at {link}"] if served else [])
    # What connect started is closed: client, scheduler, worker processes.
    assert client.status == "closed"
    assert current_client() is None
    assert _wait_dead(pids) == []


def test_worker_sigkill_mid_computation_gives_exact_result():
    n_chunks, chunk = 24, 50_000
    x = da.arange(n_chunks * chunk, chunks=chunk, dtype="int64")

    def slow(block):
        time.sleep(0.15)
        return block * 3 + 1

    y = x.map_blocks(slow, dtype="int64").sum(split_every=2)
    n = n_chunks * chunk
    expected = 3 * (n * (n - 1) // 2) + n
    with connect(cluster="local", workers=2, threads_per_worker=1, **LOCAL) as client:
        pids = client.run(os.getpid)
        future = client.compute(y)
        deadline = time.monotonic() + 20
        while not client.processing() or not any(client.processing().values()):
            assert time.monotonic() < deadline, "computation never started"
            time.sleep(0.02)
        time.sleep(0.5)  # a few chunks done, many more to go
        victim_addr, victim = next(iter(pids.items()))
        assert future.status == "pending"
        os.kill(victim, signal.SIGKILL)
        result = future.result(timeout=60)
        assert _wait_dead([victim]) == []
        # The nanny restarted the killed worker: a new process serves the cluster.
        new_pids = set(client.run(os.getpid).values())
        assert victim not in new_pids
    assert result == expected


# --------------------------------------------------------------------------------------------
# dask scheduler + dask worker subprocesses and a scheduler file
# --------------------------------------------------------------------------------------------


class _SchedulerProcesses:
    """A ``dask scheduler`` and one ``dask worker`` on loopback, as subprocesses."""

    def __init__(self, directory: Path):
        self.file = directory / "scheduler.json"
        self.procs: list[subprocess.Popen] = []
        self.log = directory / "dask.log"
        self._out = open(self.log, "wb")  # closed in stop()
        self.scheduler = self._start(
            "distributed.cli.dask_scheduler", "--scheduler-file", str(self.file),
            "--host", "127.0.0.1", "--port", "0", "--dashboard-address", "127.0.0.1:0",
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not (self.file.exists() and self.file.stat().st_size):
            if self.scheduler.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"dask scheduler did not start:\n{self.log.read_text()}")
            time.sleep(0.05)
        time.sleep(0.1)  # the file is written in one go, but let it be closed
        self.address = json.loads(self.file.read_text())["address"]
        self.worker = self._start(
            "distributed.cli.dask_worker", "--scheduler-file", str(self.file),
            "--host", "127.0.0.1", "--nthreads", "1", "--nworkers", "1", "--no-dashboard",
            "--death-timeout", "20",
        )  # fmt: skip

    def _start(self, module: str, *args: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdout=self._out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: the nanny's child dies with it
        )
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                with _suppress():
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with _suppress():
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        for proc in self.procs:  # stray children (the worker under its nanny)
            with _suppress():
                os.killpg(proc.pid, signal.SIGKILL)
        self._out.close()


def _suppress():
    import contextlib

    return contextlib.suppress(ProcessLookupError, PermissionError)


@pytest.fixture
def dask_processes(tmp_path):
    procs = _SchedulerProcesses(tmp_path)
    try:
        yield procs
    finally:
        procs.stop()


def test_scheduler_file_and_address_with_real_processes(dask_processes):
    x, dx = _data()
    expected = _threaded_sum(dx)
    with connect(scheduler_file=dask_processes.file, timeout=20, worker_timeout=30,
                 announce=None) as client:  # fmt: skip
        assert client.scheduler.address == dask_processes.address
        (worker_pid,) = client.run(os.getpid).values()
        assert worker_pid != os.getpid()
        assert float(dx.sum(split_every=2).compute()) == expected
    assert client.status == "closed"
    # Only the client was closed: the scheduler and worker go on serving.
    assert dask_processes.scheduler.poll() is None and dask_processes.worker.poll() is None
    messages: list[str] = []
    with connect(scheduler=dask_processes.address, timeout=20, announce=messages.append) as client:
        link = client.dashboard_link
        assert link.startswith("http://127.0.0.1:")
        # someone else's dashboard: announced where that scheduler has bokeh (asked; this
        # one runs in this environment), not a link to a page that says to install it
        served = importlib.util.find_spec("bokeh") is not None
        assert messages == ([f"dask dashboard at {link}"] if served else [])
        assert client.run(os.getpid) == {next(iter(client.scheduler_info()["workers"])):
                                         worker_pid}  # fmt: skip
        assert float(dx.sum(split_every=2).compute()) == expected
    assert dask_processes.scheduler.poll() is None
    assert x.size == 20_000


def test_evaluate_via_scheduler_file_gives_identical_json(dask_processes, tmp_path):
    from bosaris_dask import io
    from bosaris_dask.simulate import simulate

    key, systems = simulate(120, 150, systems=2, target_rate=0.05, seed=4, chunks=(40, 150))
    io.write(key, tmp_path / "key.zarr")
    for k, scores in enumerate(systems, start=1):
        io.write(scores, tmp_path / f"s{k}.zarr", chunk_mb=0.02)
    common = [
        "-m",
        "bosaris_dask.cli",
        "evaluate",
        "--key",
        str(tmp_path / "key.zarr"),
        "--scores",
        str(tmp_path / "s1.zarr"),
        "--scores",
        str(tmp_path / "s2.zarr"),
        "-q",
    ]
    runs = {}
    for name, where in (
        ("threads", ["--cluster", "threads"]),
        ("file", ["--scheduler-file", str(dask_processes.file)]),
    ):
        out = tmp_path / f"{name}.json"
        result = subprocess.run(
            [sys.executable, *common, *where, "--json", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        runs[name] = json.loads(out.read_text())
    assert runs["file"] == runs["threads"]
    assert dask_processes.scheduler.poll() is None  # the CLI closed only its client


def test_scheduler_that_disappears_gives_cluster_error(dask_processes):
    def slow(block):
        time.sleep(0.5)
        return block

    y = da.ones(40, chunks=1).map_blocks(slow).sum()
    start = time.monotonic()
    with pytest.raises(ClusterError, match="lost the connection to the dask scheduler at"):
        with connect(scheduler=dask_processes.address, timeout=3, announce=None) as client:
            future = client.compute(y)
            time.sleep(0.5)
            os.killpg(dask_processes.scheduler.pid, signal.SIGKILL)
            future.result(timeout=60)
    assert time.monotonic() - start < 45
    assert current_client() is None


# --------------------------------------------------------------------------------------------
# dask-jobqueue job scripts (no job system needed)
# --------------------------------------------------------------------------------------------


@pytest.fixture
def jobqueue():
    # Import before dask.config.set: leaving a config.set block drops keys set up inside it,
    # which would drop the jobqueue defaults if the import happened there.
    return pytest.importorskip("dask_jobqueue")


def test_pbs_job_script_from_config_with_overrides(jobqueue):
    config = {
        "jobqueue.pbs.queue": "batch",
        "jobqueue.pbs.account": "proj42",
        "jobqueue.pbs.cores": 4,
        "jobqueue.pbs.processes": 1,
        "jobqueue.pbs.memory": "8GiB",
        "jobqueue.pbs.walltime": "01:00:00",
        "jobqueue.pbs.job-extra-directives": ["-m abe"],
    }
    with dask.config.set(config):
        script = jobqueue_job_script("pbs")
        overridden = jobqueue_job_script(
            "pbs", queue="long", walltime="12:00:00", workers=4, jobs=2
        )
    lines = script.splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    for directive in ("#PBS -q batch", "#PBS -A proj42", "#PBS -l select=1:ncpus=4:mem=8192MB",
                      "#PBS -l walltime=01:00:00", "#PBS -m abe"):  # fmt: skip
        assert directive in lines
    assert "--nthreads 4 --memory-limit 8.00GiB" in script and "--nworkers" not in script
    assert "#PBS -q long" in overridden and "#PBS -q batch" not in overridden
    assert "#PBS -l walltime=12:00:00" in overridden
    assert "--nthreads 2 --memory-limit 4.00GiB --nworkers 2" in overridden


def test_slurm_job_script_from_arguments(jobqueue):
    script = jobqueue_job_script("slurm", queue="debug", cores=2, memory="2GiB",
                                 walltime="00:10:00", interface="lo")  # fmt: skip
    lines = script.splitlines()
    for directive in ("#SBATCH -p debug", "#SBATCH -n 1", "#SBATCH --cpus-per-task=2",
                      "#SBATCH --mem=2G", "#SBATCH -t 00:10:00"):  # fmt: skip
        assert directive in lines
    assert "--interface lo" in script


def test_jobs_with_fewer_cores_than_worker_processes_are_refused(jobqueue):
    # dask-jobqueue wrote --nthreads 0: distributed then shares out the node's CPUs
    with pytest.raises(ClusterError, match=r"^slurm jobs of 1 core cannot run 2 worker processes "
                       r"each \(a thread each at least\): give --cores 2 or more"):  # fmt: skip
        jobqueue_job_script("slurm", workers=2, jobs=1, cores=1, memory="1GiB")
    script = jobqueue_job_script("slurm", workers=2, jobs=1, cores=2, memory="1GiB")
    assert "--nthreads 1 " in script and "--nworkers 2" in script


def test_jobqueue_without_cores_and_memory_is_a_clear_error(jobqueue):
    with dask.config.set({"jobqueue.slurm.cores": None, "jobqueue.slurm.memory": None}):
        with pytest.raises(ClusterError, match="jobqueue.slurm.cores"):
            jobqueue_job_script("slurm")
    with pytest.raises(ClusterError, match="not 'mpi'"):
        jobqueue_job_script("mpi")


EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "hpc"


def _flat(config: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}: dask.config.set replaces nested dicts whole."""
    out = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def test_example_jobqueue_yaml_gives_the_documented_jobs(jobqueue):
    import yaml

    config = yaml.safe_load((EXAMPLES / "jobqueue.yaml").read_text())
    with dask.config.set(_flat(config)):
        pbs = jobqueue_job_script("pbs").splitlines()
        slurm = jobqueue_job_script("slurm", queue="long").splitlines()
    for line in ("#PBS -N bosaris-worker", "#PBS -q workq",
                 "#PBS -l select=1:ncpus=8:mem=30GB", "#PBS -l walltime=02:00:00"):  # fmt: skip
        assert line in pbs
    for line in ("#SBATCH -J bosaris-worker", "#SBATCH -p long", "#SBATCH --cpus-per-task=8",
                 "#SBATCH --mem=30G", "#SBATCH -t 02:00:00"):  # fmt: skip
        assert line in slurm
    # 4 worker processes of 2 threads and 8 GB (32 GB / 4, written in GiB) per job.
    for script in (pbs, slurm):
        assert "--nthreads 2 --memory-limit 7.45GiB --nworkers 4" in script[-1]


_FAKE_MPIRUN = """#!/bin/bash
# Drop mpirun's own options; run the program once, as one rank would.
while [[ $# -gt 0 && $1 != */bosaris-dask ]]; do shift; done
exec "$@"
"""
_FAKE_CLI = """#!/bin/bash
printf '%s\\n' "$@" > "$ARGV_FILE"
"""


@pytest.mark.parametrize("script", sorted(p.name for p in EXAMPLES.glob("*.sh")))
def test_example_batch_scripts_run_a_command_the_cli_accepts(script, tmp_path):
    from bosaris_dask.cli import build_parser

    text = (EXAMPLES / script).read_text()
    assert ("#SBATCH" in text) == script.startswith("slurm")
    assert ("#PBS" in text) == script.startswith("pbs")
    # Run the script with stand-ins for mpirun and bosaris-dask that record the arguments.
    fake = tmp_path / "bin"
    fake.mkdir()
    for name, body in (("mpirun", _FAKE_MPIRUN), ("bosaris-dask", _FAKE_CLI)):
        (fake / name).write_text(body)
        (fake / name).chmod(0o755)
    nodefile = tmp_path / "nodes"
    nodefile.write_text("node1\n" * 20)
    env = {
        "PATH": f"{fake}:/usr/bin:/bin", "HOME": str(tmp_path), "USER": "me",
        "ARGV_FILE": str(tmp_path / "argv"), "BOSARIS_DASK": str(fake / "bosaris-dask"),
        "SLURM_JOB_ID": "42", "SLURM_NTASKS": "18", "SLURM_CPUS_PER_TASK": "4",
        "PBS_JOBID": "42.pbs", "PBS_NODEFILE": str(nodefile), "PBS_O_WORKDIR": str(tmp_path),
    }  # fmt: skip
    done = subprocess.run(["bash", str(EXAMPLES / script)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 0, done.stderr
    argv = (tmp_path / "argv").read_text().splitlines()
    args = build_parser().parse_args(argv)
    assert args.command == "evaluate"
    assert args.key == "/scratch/me/sre-1e9/key.zarr"
    assert len(args.scores) == 2 and args.json.startswith("/scratch/me/sre-1e9/results-42")
    if "mpi" in script:
        assert args.cluster == "mpi"
        assert args.threads_per_worker == 4 and args.memory_limit in ("7GB", "15GB")
    else:
        assert args.cluster == script.split("-")[0] and args.jobs == 8
        assert args.worker_timeout == 3600


def test_real_jobqueue_class_tells_the_worker_processes_per_job(jobqueue):
    # _start_jobqueue reads dask-jobqueue's per-job worker count as its scale(n=...) does; this
    # guards that (private) attribute against dask-jobqueue versions, with the real class.
    from bosaris_dask.cluster import hpc

    options = {"host": "127.0.0.1", "dashboard": False}
    config = {"jobqueue.slurm.cores": 6, "jobqueue.slurm.memory": "6GB"}
    with dask.config.set({**config, "jobqueue.slurm.processes": 3}):
        kwargs = hpc._jobqueue_kwargs("slurm", None, None, None, None, None, None, None)
        with hpc._jobqueue_cluster(
            jobqueue.SLURMCluster, "slurm", {**kwargs, "scheduler_options": options}
        ) as jq:
            assert jq._dummy_job.worker_processes == 3
        kwargs = hpc._jobqueue_kwargs("slurm", 4, 2, None, None, None, None, None)
        assert kwargs == {"processes": 2}
        with hpc._jobqueue_cluster(
            jobqueue.SLURMCluster, "slurm", {**kwargs, "scheduler_options": options}
        ) as jq:
            assert jq._dummy_job.worker_processes == 2
            assert "--nthreads 3 --memory-limit 2.79GiB --nworkers 2" in jq.job_script()


def test_local_workers_start_without_distributeds_malloc_trim_threshold():
    """distributed's MALLOC_TRIM_THRESHOLD_=65536 made every kernel temporary a fresh mmap
    (2.2x the threads' time at 1e8): our local workers start without it, unless configured."""
    code = (
        "import os, dask\n"
        "from bosaris_dask.cluster import connect\n"
        "def env():\n"
        "    with connect(cluster='local', workers=1, threads_per_worker=1, announce=None) as c:\n"
        "        return set(c.run(lambda: os.environ.get('MALLOC_TRIM_THRESHOLD_')).values())\n"
        "if __name__ == '__main__':\n"
        "    print(env())\n"
        "    with dask.config.set({'distributed.nanny.pre-spawn-environ."
        "MALLOC_TRIM_THRESHOLD_': 131072}):\n"
        "        print(env())\n"
    )  # fmt: skip
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", code], env=clean, capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()  # fmt: skip
    assert out == ["{None}", "{'131072'}"]


def test_local_workers_run_without_the_profiler_when_no_dashboard_shows_it(monkeypatch):
    """The statistical profiler's samples took time from the kernels (a warm 1e9 evaluation:
    40.9 s with it, 35.1 s without): off in our local workers unless a dashboard is served."""

    def profiling(dask_worker) -> bool:
        return "profile" in dask_worker.periodic_callbacks

    with connect(cluster="local", workers=1, threads_per_worker=1, **LOCAL) as client:
        assert set(client.run(profiling).values()) == {False}
    assert scheduler.worker_config(dashboard=False)[scheduler.PROFILE_KEY] is False
    monkeypatch.setattr("importlib.util.find_spec", lambda name: object())  # "bokeh installed"
    assert scheduler.PROFILE_KEY not in scheduler.worker_config(dashboard=True)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    assert scheduler.worker_config(dashboard=True)[scheduler.PROFILE_KEY] is False


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--cluster", "threads", "--memory-limit", "1GB"],
         "--memory-limit acts on --cluster local or mpi; this run uses the threaded scheduler"),
        (["--memory-limit", "1GB"], "(chosen for a small job: --cluster local starts worker "),
        (["--cluster", "threads", "--threads-per-worker", "2"], "--threads-per-worker acts on"),
        (["--cluster", "local", "--interface", "lo"], "--interface acts on --cluster slurm or "
         "pbs or mpi; this run uses --cluster local"),
        (["--cluster", "threads", "--worker-timeout", "5"], "--worker-timeout acts on"),
        (["--cluster", "threads", "--scheduler-timeout", "5"], "--scheduler-timeout acts on"),
        (["--cluster", "threads", "--dashboard"], "--dashboard acts on"),
        (["--cluster", "local", "--queue", "q"], "--queue acts on --cluster slurm or pbs"),
        (["--scheduler-file", "f.json", "--interface", "lo"], "a running scheduler "
         "(--scheduler-file)"),
    ],
)  # fmt: skip
def test_cluster_options_the_run_would_not_use_are_refused_by_their_names(argv, says):
    # each was accepted and ignored (or refused naming Python keywords, 'queue only apply')
    parser = argparse.ArgumentParser()
    add_cluster_arguments(parser)
    with pytest.raises(ClusterError) as info, connect_from_args(parser.parse_args(argv),
                                                                 size_hint=10):  # fmt: skip
        pass
    assert says in str(info.value)
    with connect_from_args(parser.parse_args(["--cluster", "threads", "--no-dashboard"]),
                           size_hint=10) as client:  # fmt: skip
        assert client is None  # --no-dashboard asks for nothing: accepted anywhere


def test_a_scheduler_address_that_never_answers_as_dask_is_given_up(monkeypatch):
    # a web server (a dashboard's port) accepts the connection and never answers the
    # handshake: the run waited without end, whatever --scheduler-timeout said
    from bosaris_dask.cluster import scheduler

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    monkeypatch.setattr(scheduler, "_HANDSHAKE_GRACE", 1.0)
    start = time.monotonic()
    try:
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        with pytest.raises(ClusterError, match="does not answer as a dask scheduler"):
            with connect(scheduler=address, timeout=1, announce=None):
                pass
    finally:
        server.close()
    assert time.monotonic() - start < 10
    # the abandoned Client had set dask's scheduler to "dask.distributed": restored, or every
    # later compute in this process failed ("no Client active")
    assert dask.config.get("scheduler", None) is None
    with pytest.raises(ClusterError, match="missing port number in address 'foo'"):
        with connect(scheduler="foo", timeout=1, announce=None):  # was a ValueError traceback
            pass


def test_a_connection_given_up_never_becomes_dasks_scheduler_later(monkeypatch):
    # CI: on a loaded machine the abandoned attempt reached Client's constructor after the
    # attempt was given up; it then set dask's scheduler to "dask.distributed" (and itself as
    # the default client) while it waited on the handshake, and every later compute of that
    # test process failed with "Requested dask.distributed scheduler but no Client active"
    import threading

    import distributed
    from distributed.client import _get_global_client

    from bosaris_dask.cluster import scheduler

    slow_start = threading.Event()
    original = distributed.Client.__init__

    def late_init(self, *args, **kwargs):
        slow_start.wait(10)  # released once the attempt has been given up
        original(self, *args, **kwargs)

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    monkeypatch.setattr(scheduler, "_HANDSHAKE_GRACE", 0.5)
    monkeypatch.setattr(distributed.Client, "__init__", late_init)
    try:
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        with pytest.raises(ClusterError, match="does not answer as a dask scheduler"):
            with connect(scheduler=address, timeout=0.5, announce=None):
                pass
        gc.collect()  # (see _collect_dead_clients: none may be collected inside its start)
        gc.disable()
        slow_start.set()  # the abandoned attempt now constructs its client and hangs
        time.sleep(1.0)
        assert dask.config.get("scheduler", None) is None
        assert _get_global_client() is None
        assert float(da.ones(4, chunks=2).sum().compute()) == 4.0
    finally:
        slow_start.set()
        server.close()
        try:
            for thread in [t for t in threading.enumerate() if t.name == "bosaris-dask-connect"]:
                thread.join(15)
        finally:
            gc.enable()
    assert dask.config.get("scheduler", None) is None


# --------------------------------------------------------------------------------------------
# Submitting to a batch system that refuses the job, or whose job ends without a worker
# (the real dask-jobqueue class; sbatch, squeue and scancel are small scripts on PATH)
# --------------------------------------------------------------------------------------------


def _fake_slurm(directory: Path, monkeypatch, sbatch: str, squeue: str) -> None:
    """Put shell scripts named sbatch, squeue and scancel first on PATH."""
    bin_dir = directory / "bin"
    bin_dir.mkdir()
    for name, body in {"sbatch": sbatch, "squeue": squeue, "scancel": "exit 0"}.items():
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_a_refused_submission_fails_at_once_with_the_batch_systems_message(
    jobqueue, tmp_path, monkeypatch
):
    # Before, sbatch's refusal was logged by dask's event loop and the run waited the whole
    # worker timeout, then blamed the queue.
    refusal = "sbatch: error: Memory specification can not be satisfied"
    _fake_slurm(tmp_path, monkeypatch, sbatch=f"echo '{refusal}' >&2; exit 1", squeue="exit 0")
    start = time.monotonic()
    with pytest.raises(ClusterError) as raised:
        with connect(cluster="slurm", cores=1, memory="100GB", worker_timeout=120, **LOCAL):
            pytest.fail("the block must not run")
    message = str(raised.value)
    assert message.startswith(f"could not submit slurm worker jobs: {refusal}\njob script:\n")
    assert "#SBATCH --mem=" in message
    assert time.monotonic() - start < 60  # not the 120 s worker timeout


@pytest.mark.parametrize(
    ("queued", "match"),
    [
        ("", r"no dask worker joined the dask-jobqueue \(slurm\) scheduler: the slurm worker "
             r"job\(s\) 4242 ended before any dask worker joined; see their output files in "),
        ("4242 PENDING Priority", r"within 2 s \(are the jobs still queued\? see 'squeue'"),
        # a job that can never start: it waited the whole worker timeout (600 s by default)
        ("4242 PENDING PartitionConfig", r"job\(s\) 4242 cannot start: squeue says "
                                         r"PartitionConfig \(they ask for more than the "),
    ],
)  # fmt: skip
def test_a_job_that_ends_without_a_worker_ends_the_wait(
    jobqueue, tmp_path, monkeypatch, queued, match
):
    from bosaris_dask.cluster import scheduler

    monkeypatch.setattr(scheduler, "HOPELESS_POLL_S", 0.2)
    _fake_slurm(tmp_path, monkeypatch, sbatch="echo 4242", squeue=f"echo '{queued}'")
    logs = tmp_path / "logs"
    with dask.config.set({"jobqueue.slurm.log-directory": str(logs)}):
        with pytest.raises(ClusterError, match=match) as raised:
            with connect(cluster="slurm", cores=1, memory="1GB", worker_timeout=2, **LOCAL):
                pytest.fail("the block must not run")
    assert (str(logs) in str(raised.value)) == (not queued)


def test_a_cluster_that_fails_to_close_is_not_left_to_the_exit_hook():
    # a refused job submission: the SLURMCluster never started, its close failed, and
    # distributed's atexit hook waited 10 s on it before the program could end
    import weakref

    from bosaris_dask.cluster.scheduler import _close_quietly

    class NeverStarted:
        _instances: weakref.WeakSet = weakref.WeakSet()

        def close(self):
            raise RuntimeError("Status.created")

    cluster = NeverStarted()
    NeverStarted._instances.add(cluster)
    _close_quietly(cluster)
    assert cluster not in NeverStarted._instances


def test_a_taken_dashboard_port_gives_no_warning(recwarn):
    """With the dashboard's port taken (another cluster's), distributed served on a free port
    and printed a four-line UserWarning on every run."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        with dask.config.set({"distributed.scheduler.dashboard.address": f":{port}"}):
            with connect(cluster="local", workers=1, threads_per_worker=1, dashboard=True,
                         announce=None) as client:  # fmt: skip
                assert client.submit(sum, [1, 2]).result() == 3
    finally:
        taken.close()
    assert not [w for w in recwarn if "already in use" in str(w.message)]


def test_a_task_error_on_local_workers_prints_one_line_not_the_workers_log(tmp_path, capfd):
    """A key code outside -1/0/1 found in a task: the worker logged "Compute Failed" and the
    task's traceback (seven lines) before the command's own one-line error."""
    import zarr

    from bosaris_dask import io
    from bosaris_dask.cli import main
    from bosaris_dask.trials import make_key, make_scores

    ids = (["m1", "m2"], ["s1", "s2"])
    io.write(make_key(*ids, [[1, -1], [-1, 1]]), tmp_path / "key.zarr")
    io.write(make_scores(*ids, [[2.0, -1.0], [0.5, 1.5]]), tmp_path / "s.zarr")
    zarr.open_array(tmp_path / "key.zarr" / "trial_mask", mode="r+")[0, 1] = 7
    argv = ["evaluate", "--key", str(tmp_path / "key.zarr"), "--scores", str(tmp_path / "s.zarr"),
            "--cluster", "local", "--workers", "1", "--threads-per-worker", "1",
            "--no-dashboard"]  # fmt: skip
    assert main(argv) == 1
    err = capfd.readouterr().err
    assert "Compute Failed" not in err and "Traceback" not in err, err
    assert "7" in err and "(m1, s2)" in err, err


def test_a_scheduler_refusing_the_worker_timeout_leaves_the_runs_errors_alone(caplog):
    # the run went on inside the except block of the refusal: every error of the run carried
    # it as __context__ ("During handling of the above exception, another exception occurred")
    from bosaris_dask.cluster.no_workers import theirs_failing_without_workers

    class Refusing:
        def run_on_scheduler(self, *args, **kwargs):
            raise RuntimeError("pickle disabled on this scheduler")

    with pytest.raises(ValueError, match="the run's own") as info:
        with theirs_failing_without_workers(Refusing(), 30, "their scheduler"):
            raise ValueError("the run's own error")
    assert info.value.__context__ is None
    assert "their scheduler keeps its own no-workers-timeout (--worker-timeout 30 not set " \
           "there: pickle disabled on this scheduler)" in caplog.text  # fmt: skip


def test_the_cli_prints_the_clusters_logged_warnings_as_warnings_even_with_q(
    tmp_path, monkeypatch, capsys
):
    # they went to logging's last resort: no 'warning:' prefix, and printed under -q as if
    # they were notes
    from bosaris_dask.cli import main
    from bosaris_dask.cluster import session

    monkeypatch.setattr(session, "_has_bokeh", lambda: False)
    (tmp_path / "key.txt").write_text("m1 s1 target\nm1 s2 nontarget\n")
    (tmp_path / "scores.txt").write_text("m1 s1 1.0\nm1 s2 -1.0\n")
    argv = ["evaluate", "--key", str(tmp_path / "key.txt"), "--scores",
            str(tmp_path / "scores.txt"), "--cluster", "local", "--workers", "1",
            "--dashboard", "-q"]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "warning: no dask dashboard: install bokeh where the scheduler runs\n" in err


def test_importing_dask_jobqueue_keeps_the_signal_handlers():
    """dask-jobqueue installs a SIGINT handler calling sys.exit() when imported: a Ctrl-C of a
    --cluster slurm run ended it with status 0, no message and no output. The import keeps the
    process's handlers (in a fresh interpreter: the import happens once per process)."""
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue missing: bosaris-dask[hpc]")
    code = (
        "import signal\n"
        "from bosaris_dask.cluster.hpc import _jobqueue_class\n"
        "_jobqueue_class('slurm')\n"
        "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
        "import dask_jobqueue.runner  # imported already: nothing installed again\n"
        "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    broken = code.replace("from bosaris_dask.cluster.hpc import _jobqueue_class\n"
                          "_jobqueue_class('slurm')\n", "import dask_jobqueue\n")  # fmt: skip
    assert subprocess.run([sys.executable, "-c", broken], capture_output=True).returncode != 0


def test_a_jobqueue_dashboard_port_in_use_is_not_a_four_line_warning():
    """dask-jobqueue's scheduler, on a dashboard port someone else holds, serves on a free one
    and said so in distributed's four-line UserWarning, even with -q (a local cluster did not)."""
    import warnings

    from bosaris_dask.cluster.hpc import _jobqueue_class, _jobqueue_cluster

    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue missing: bosaris-dask[hpc]")
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        options = {"host": "127.0.0.1", "dashboard_address": f"127.0.0.1:{port}"}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kwargs = {"cores": 1, "memory": "1GB", "scheduler_options": options}
            with _jobqueue_cluster(_jobqueue_class("slurm"), "slurm", kwargs) as jq:
                assert f":{port}/" not in jq.dashboard_link  # (it took another port)
    assert not [w for w in caught if "is already in use" in str(w.message)]


def test_a_local_cluster_interrupted_while_it_starts_is_left_off_the_exit_hook(monkeypatch):
    """A Ctrl-C or SIGTERM while LocalCluster starts left a half-started cluster to
    distributed's exit hook, whose close printed 'Exception ignored in atexit callback ...
    AssertionError'; a cluster made before is kept."""
    import distributed
    from distributed.deploy.spec import SpecCluster

    class Half:  # what LocalCluster registers first thing
        status = None

    kept, half = Half(), Half()
    SpecCluster._instances.add(kept)

    def starting(**kwargs):
        SpecCluster._instances.add(half)
        raise KeyboardInterrupt

    monkeypatch.setattr(distributed, "LocalCluster", starting)
    try:
        with pytest.raises(KeyboardInterrupt):
            with connect(cluster="local", workers=1, announce=None):
                pytest.fail("the block must not run")
        assert half not in SpecCluster._instances and kept in SpecCluster._instances
    finally:
        SpecCluster._instances.discard(kept)
