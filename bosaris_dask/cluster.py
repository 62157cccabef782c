"""Getting a dask client: locally by default, or on any cluster.

One small module used by the command line and the Python API. :func:`connect` is a context
manager that yields a :class:`distributed.Client` (or ``None`` for dask's threaded scheduler),
closes what it started and only that, prints the dashboard link when there is one, and turns a
scheduler that cannot be reached, or that disappears, into a
:class:`~bosaris_dask.errors.ClusterError`.

Where the work runs, by what is given:

``scheduler="tcp://host:8786"`` or ``scheduler_file="scheduler.json"``
    An existing dask scheduler (``dask scheduler``, ``dask-mpi``, a JupyterHub gateway...).
    Only the client is closed at the end.
``cluster="local"``
    A :class:`distributed.LocalCluster` of worker processes sized to the machine (or to
    ``workers``, ``threads_per_worker``, ``memory_limit``), on loopback.
``cluster="threads"``
    No cluster: dask's threaded scheduler in this process (best for small jobs: no start-up).
``cluster="slurm"`` or ``cluster="pbs"``
    dask-jobqueue submits worker jobs. Queue, cores, memory, walltime, and every other job
    setting come from dask's config (``jobqueue.slurm.*``, ``jobqueue.pbs.*``, e.g. in
    ``~/.config/dask/jobqueue.yaml``); the arguments given here override them.
``cluster="mpi"``
    dask-mpi inside an MPI job (``mpirun -n N bosaris-dask ... --cluster mpi``): rank 0 runs
    the scheduler, rank 1 runs the caller's code (the client), ranks 2..N-1 are workers.
``cluster=None`` (the default)
    A distributed client that already exists in this process is used as it is (and left open);
    otherwise ``"threads"`` when ``size_hint`` (trials) is below :data:`SMALL_JOB_TRIALS`, else
    ``"local"``.

How a program must be structured for ``cluster="mpi"``: every MPI rank runs the program from
the start, and :func:`connect` is where they part. On ranks 0 and 2..N-1 it never returns: the
rank serves as scheduler or worker until the client rank is done, then the process exits with
status 0 (``SystemExit``). Only rank 1 enters the ``with`` block. So do nothing before
:func:`connect` but parse arguments (no reading of inputs, no writing of outputs, no printing),
and everything that reads, computes and writes inside the ``with`` block::

    def main(argv=None):
        args = parser.parse_args(argv)           # every rank
        with connect_from_args(args) as client:  # only the client rank gets past this line
            run_the_job(args)                    # reads, computes, writes: once

When the ``with`` block ends (normally or by an exception), the client rank tells the scheduler
and workers to shut down, so ``mpirun`` returns.

Examples
--------
>>> import dask.array as da
>>> with connect(cluster="threads") as client:
...     print(client, int(da.arange(10, chunks=3).sum().compute()))
None 45
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from bosaris_dask.errors import BosarisError, ClusterError
from bosaris_dask.progress import current_client

if TYPE_CHECKING:
    from distributed import Client

__all__ = [
    "CLUSTER_KINDS",
    "SMALL_JOB_TRIALS",
    "add_cluster_arguments",
    "connect",
    "connect_from_args",
    "current_client_or_none",
    "jobqueue_job_script",
]

#: The values ``cluster`` (``--cluster``) accepts.
CLUSTER_KINDS = ("local", "threads", "slurm", "pbs", "mpi")

#: Below this many trials, ``cluster=None`` picks the threaded scheduler. Measured on a 2-core
#: machine, threads beat a 2-process LocalCluster even at 1e9 trials (66 s vs 82 s, identical
#: results): each pass merges a histogram per chunk, which processes must ship to each other.
SMALL_JOB_TRIALS = 10_000_000_000

_JOBQUEUE_KINDS = ("slurm", "pbs")
_HPC_EXTRA = "pip install 'bosaris-dask[hpc]'"
_log = logging.getLogger(__name__)


def _announce_stderr(message: str) -> None:
    print(f"bosaris-dask: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def current_client_or_none() -> Client | None:
    """Return the distributed client this process uses by default, or ``None`` if none exists.

    Python API functions call this to run on the user's cluster when one is set up (for example
    ``client = Client("tcp://...")`` in a notebook) without being told about it.

    Returns
    -------
    distributed.Client or None
        ``distributed.default_client()`` if a client is running, else ``None``.

    Examples
    --------
    >>> current_client_or_none() is None
    True
    """
    return current_client()


@contextlib.contextmanager
def connect(
    scheduler: str | None = None,
    scheduler_file: str | os.PathLike[str] | None = None,
    cluster: str | None = None,
    *,
    workers: int | None = None,
    threads_per_worker: int | None = None,
    memory_limit: str | int | float | None = None,
    queue: str | None = None,
    cores: int | None = None,
    memory: str | None = None,
    walltime: str | None = None,
    jobs: int | None = None,
    interface: str | None = None,
    dashboard: bool = True,
    timeout: float = 30.0,
    worker_timeout: float | None = None,
    size_hint: int | None = None,
    announce: Callable[[str], None] | None = _announce_stderr,
) -> Iterator[Client | None]:
    """Provide a dask client for the duration of a ``with`` block.

    Parameters
    ----------
    scheduler
        Address of a running scheduler, e.g. ``"tcp://10.0.0.5:8786"``.
    scheduler_file
        JSON file written by ``dask scheduler --scheduler-file FILE`` (or dask-mpi).
    cluster : {"local", "threads", "slurm", "pbs", "mpi"} or None
        What to start when no scheduler is given (see the module docstring):

        - ``"local"``: a LocalCluster of worker processes on this machine.
        - ``"threads"``: no cluster, dask's threaded scheduler; yields ``None``.
        - ``"slurm"``, ``"pbs"``: dask-jobqueue worker jobs (needs ``bosaris-dask[hpc]``).
        - ``"mpi"``: dask-mpi in an ``mpirun`` job (needs ``bosaris-dask[hpc]``).
        - ``None``: an existing default client, else threads or local by ``size_hint``.
    workers
        local: number of worker processes (default: sized to the machine). slurm/pbs: worker
        processes per job (dask-jobqueue ``processes``). threads: number of threads. Not
        allowed with mpi (the number of ranks sets it).
    threads_per_worker
        Threads per worker process (local, mpi; default 1 for mpi, sized for local).
    memory_limit
        Memory per worker before it spills and is restarted (local, mpi): bytes, ``"4GB"``,
        a fraction of the machine's memory, or ``"auto"``. For slurm/pbs use ``memory``.
    queue, cores, memory, walltime
        slurm/pbs job settings (partition/queue, cores per job, memory per job such as
        ``"8GB"``, walltime ``"01:00:00"``); override ``jobqueue.<kind>.*`` from dask config.
    jobs
        slurm/pbs: how many jobs to submit (default 1).
    interface
        Network interface for the scheduler and workers (slurm, pbs, mpi), e.g. ``"ib0"``;
        ``"lo"`` keeps everything on loopback.
    dashboard
        Start the dashboard where we start a scheduler (if bokeh is installed) and announce its
        link when there is one.
    timeout
        Seconds to wait to reach a scheduler; also how long a lost scheduler is retried.
    worker_timeout
        Seconds to wait for the first worker (slurm/pbs jobs may queue: default 600; else 60).
    size_hint
        Number of trials of the job, used only by ``cluster=None`` to choose threads or local.
    announce
        Called with one line for the user (the dashboard link); default prints to stderr.
        ``None`` only logs it.

    Yields
    ------
    distributed.Client or None
        The client (already the default client, so ``dask.compute`` uses it), or ``None``
        when the threaded scheduler runs the work.

    Raises
    ------
    ClusterError
        Conflicting or invalid options, an optional dependency missing, a scheduler that cannot
        be reached within ``timeout`` or is lost during the block, no worker within
        ``worker_timeout``.

    Examples
    --------
    >>> import dask.array as da
    >>> with connect(cluster="threads", workers=2) as client:
    ...     int(da.ones(100, chunks=10).sum().compute())
    100
    >>> with connect(scheduler="tcp://127.0.0.1:9", timeout=0.5):  # doctest: +ELLIPSIS
    ...     pass
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.ClusterError: cannot reach the dask scheduler at tcp://127.0.0.1:9 ...
    """
    kind = _choose_kind(scheduler, scheduler_file, cluster, size_hint)
    if memory_limit is not None:
        try:
            memory_limit = _memory_limit(memory_limit)
        except argparse.ArgumentTypeError as exc:
            raise ClusterError(str(exc)) from None
    _check_options(
        kind, workers, threads_per_worker, memory_limit, queue, cores, memory, walltime, jobs
    )
    say = _announcer(announce)

    if kind == "threads":
        import dask

        with dask.config.set(scheduler="threads", num_workers=workers):
            yield None
        return

    if kind == "existing":
        # Someone else's client: use it as it is, close nothing.
        yield current_client_or_none()
        return

    stack = contextlib.ExitStack()
    with stack:
        if kind == "address":
            where = f"the dask scheduler at {scheduler}"
            client = _client(stack, timeout, where, address=scheduler)
        elif kind == "file":
            path = os.fspath(scheduler_file)  # type: ignore[arg-type]
            where = f"the dask scheduler of {path}"
            address = _read_scheduler_file(path, timeout)
            client = _client(stack, timeout, f"{where} ({address})", address=address)
        elif kind == "local":
            where = "the local dask cluster"
            client = _start_local(
                stack, workers, threads_per_worker, memory_limit, dashboard, timeout
            )
        elif kind == "mpi":
            where = "the dask-mpi scheduler"
            client = _start_mpi(
                stack, threads_per_worker, memory_limit, interface, dashboard, timeout
            )
        else:
            where = f"the dask-jobqueue ({kind}) scheduler"
            client = _start_jobqueue(
                stack, kind, workers, queue, cores, memory, walltime, jobs, interface,
                dashboard, timeout,
            )  # fmt: skip

        if kind in ("address", "file", "mpi", "slurm", "pbs"):
            wait = (
                worker_timeout
                if worker_timeout is not None
                else (600.0 if kind in _JOBQUEUE_KINDS else 60.0)
            )
            _wait_for_workers(client, kind, wait, where)
        link = client.dashboard_link
        if dashboard and link:
            # A scheduler we start serves dashboard pages only where bokeh is installed.
            if kind in ("address", "file") or importlib.util.find_spec("bokeh") is not None:
                say(f"dask dashboard at {link}")
            else:
                _log.info("no dask dashboard: install bokeh to get one")
        try:
            yield client
        except BosarisError:
            raise
        except Exception as exc:
            if client.status != "running":
                raise ClusterError(
                    f"lost the connection to {where} ({type(exc).__name__}: {exc}); "
                    "did the scheduler die, or its job end?"
                ) from exc
            raise


def connect_from_args(
    args: argparse.Namespace, **overrides: Any
) -> contextlib.AbstractContextManager[Client | None]:
    """Call :func:`connect` with the options :func:`add_cluster_arguments` added to a parser.

    Parameters
    ----------
    args
        Parsed arguments; options not present on it take :func:`connect`'s defaults.
    **overrides
        Extra keyword arguments for :func:`connect` (e.g. ``size_hint=n_trials``,
        ``announce=None``), which win over ``args``.

    Returns
    -------
    contextlib.AbstractContextManager
        The :func:`connect` context manager.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_cluster_arguments(parser)
    >>> with connect_from_args(parser.parse_args(["--cluster", "threads"])) as client:
    ...     client is None
    True
    """
    names = (
        "scheduler", "scheduler_file", "cluster", "workers", "threads_per_worker",
        "memory_limit", "queue", "cores", "memory", "walltime", "jobs", "interface",
        "dashboard", "timeout", "worker_timeout",
    )  # fmt: skip
    kwargs = {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
    kwargs.update(overrides)
    return connect(**kwargs)


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options that choose where the work runs to a command-line parser.

    The options go into their own argument group, with the destinations :func:`connect`'s
    parameters have, so ``connect_from_args(parser.parse_args())`` passes them on. Options not
    given stay ``None`` so that dask's config files (``jobqueue.*``) and :func:`connect`'s
    defaults decide.

    Parameters
    ----------
    parser
        The parser (or sub-command parser) to extend.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_cluster_arguments(parser)
    >>> args = parser.parse_args(["--cluster", "slurm", "--jobs", "4", "--memory", "16GB"])
    >>> args.cluster, args.jobs, args.memory, args.scheduler
    ('slurm', 4, '16GB', None)
    """
    g = parser.add_argument_group(
        "where to compute",
        "Default: a dask client already running in this process, else the threaded scheduler "
        "for small jobs and a local cluster of worker processes for large ones. SLURM and PBS "
        "settings not given here come from dask's config (jobqueue.slurm.*, jobqueue.pbs.*, "
        "e.g. ~/.config/dask/jobqueue.yaml).",
    )
    where = g.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler", metavar="ADDRESS",
        help="connect to a running dask scheduler, e.g. tcp://10.0.0.5:8786",
    )  # fmt: skip
    where.add_argument(
        "--scheduler-file", metavar="FILE",
        help="connect to the scheduler described by FILE (dask scheduler --scheduler-file)",
    )  # fmt: skip
    where.add_argument(
        "--cluster", choices=CLUSTER_KINDS,
        help="start a cluster: local (worker processes on this machine), threads (no "
        "processes), slurm or pbs (worker jobs via dask-jobqueue), mpi (inside 'mpirun -n N "
        "bosaris-dask ...': rank 0 scheduler, rank 1 this program, the rest workers)",
    )  # fmt: skip
    g.add_argument(
        "--workers", type=_positive_int, metavar="N",
        help="local: worker processes; slurm/pbs: worker processes per job; threads: threads",
    )  # fmt: skip
    g.add_argument(
        "--threads-per-worker", type=_positive_int, metavar="N",
        help="threads per worker process (local, mpi)",
    )  # fmt: skip
    g.add_argument(
        "--memory-limit", type=_memory_limit, metavar="BYTES",
        help="memory per worker, e.g. 4GB, 0.5 (of the machine) or auto (local, mpi)",
    )  # fmt: skip
    g.add_argument("--queue", metavar="NAME", help="slurm partition or pbs queue")
    g.add_argument("--cores", type=_positive_int, metavar="N", help="slurm/pbs: cores per job")
    g.add_argument("--memory", metavar="BYTES", help="slurm/pbs: memory per job, e.g. 16GB")
    g.add_argument("--walltime", metavar="HH:MM:SS", help="slurm/pbs: walltime per job")
    g.add_argument("--jobs", type=_positive_int, metavar="N", help="slurm/pbs: jobs to submit")
    g.add_argument(
        "--interface", metavar="NAME",
        help="network interface for scheduler and workers (slurm, pbs, mpi), e.g. ib0",
    )  # fmt: skip
    g.add_argument(
        "--dashboard", action=argparse.BooleanOptionalAction, default=None,
        help="start the dask dashboard and print its link (default: yes)",
    )  # fmt: skip
    g.add_argument(
        "--scheduler-timeout", dest="timeout", type=_positive_float, metavar="SECONDS",
        help="how long to try to reach the scheduler (default 30)",
    )  # fmt: skip
    g.add_argument(
        "--worker-timeout", type=_positive_float, metavar="SECONDS",
        help="how long to wait for the first worker (default 600 for slurm/pbs, else 60)",
    )  # fmt: skip


def jobqueue_job_script(
    cluster: str,
    *,
    workers: int | None = None,
    queue: str | None = None,
    cores: int | None = None,
    memory: str | None = None,
    walltime: str | None = None,
    interface: str | None = None,
) -> str:
    """Return the batch script dask-jobqueue would submit for one worker job.

    Settings come from dask's config (``jobqueue.<cluster>.*``) with the arguments given here
    overriding them, exactly as :func:`connect` does; nothing is submitted (a short-lived
    scheduler is started on loopback to fill in its address).

    Parameters
    ----------
    cluster : {"slurm", "pbs"}
        The job system.
    workers, queue, cores, memory, walltime, interface
        As for :func:`connect`.

    Returns
    -------
    str
        The job script (``#!/usr/bin/env bash``, ``#SBATCH`` or ``#PBS`` lines, the worker
        command).

    Examples
    --------
    >>> script = jobqueue_job_script("pbs", queue="long", cores=4, memory="8GB",
    ...                              walltime="02:00:00")  # doctest: +SKIP
    >>> "#PBS -q long" in script  # doctest: +SKIP
    True
    """
    if cluster not in _JOBQUEUE_KINDS:
        raise ClusterError(f"job scripts exist for {_JOBQUEUE_KINDS}, not {cluster!r}")
    cls = _jobqueue_class(cluster)
    kwargs = _jobqueue_kwargs(cluster, workers, queue, cores, memory, walltime, interface)
    kwargs.setdefault("scheduler_options", {"host": "127.0.0.1", "dashboard": False})
    with _jobqueue_cluster(cls, cluster, kwargs) as jq:
        return str(jq.job_script())


# --------------------------------------------------------------------------------------------
# Private helpers
# --------------------------------------------------------------------------------------------


def _choose_kind(scheduler, scheduler_file, cluster, size_hint) -> str:
    given = [n for n, v in (("scheduler", scheduler), ("scheduler_file", scheduler_file),
                            ("cluster", cluster)) if v is not None]  # fmt: skip
    if len(given) > 1:
        raise ClusterError(f"give only one of scheduler, scheduler_file, cluster (got {given})")
    if scheduler is not None:
        return "address"
    if scheduler_file is not None:
        return "file"
    if cluster is None:
        if current_client_or_none() is not None:
            return "existing"
        small = size_hint is not None and size_hint < SMALL_JOB_TRIALS
        return "threads" if small else "local"
    if cluster not in CLUSTER_KINDS:
        raise ClusterError(f"unknown cluster {cluster!r}: choose one of {CLUSTER_KINDS}")
    return cluster


def _check_options(kind, workers, threads_per_worker, memory_limit, queue, cores, memory,
                   walltime, jobs) -> None:  # fmt: skip
    for name, value in (("workers", workers), ("threads_per_worker", threads_per_worker),
                        ("cores", cores), ("jobs", jobs)):  # fmt: skip
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ClusterError(f"{name} must be a positive integer, got {value!r}")
    jobqueue_only = {"queue": queue, "cores": cores, "memory": memory, "walltime": walltime,
                     "jobs": jobs}  # fmt: skip
    bad = [n for n, v in jobqueue_only.items() if v is not None]
    if bad and kind not in _JOBQUEUE_KINDS:
        raise ClusterError(f"{', '.join(bad)} only apply to cluster='slurm' or 'pbs'")
    if kind in _JOBQUEUE_KINDS and memory_limit is not None:
        raise ClusterError("with slurm/pbs give the memory per job (memory=...), not memory_limit")
    if kind == "mpi" and workers is not None:
        raise ClusterError("with mpi the number of workers is set by 'mpirun -n N' (N - 2)")
    if kind in ("address", "file", "existing") and any(
        v is not None for v in (workers, threads_per_worker, memory_limit)
    ):
        raise ClusterError(
            "workers, threads_per_worker and memory_limit only apply to a cluster we start"
        )


def _announcer(announce):
    def say(message: str) -> None:
        _log.info(message)
        if announce is not None:
            announce(message)

    return say


def _client(stack: contextlib.ExitStack, timeout: float, what: str, **kwargs) -> Client:
    from distributed import Client

    try:
        client = Client(timeout=timeout, set_as_default=True, **kwargs)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(
            f"cannot reach {what} within {timeout:g} s ({type(exc).__name__}: {exc})"
        ) from exc
    stack.callback(_close_quietly, client)
    return client


def _read_scheduler_file(path: str, timeout: float) -> str:
    """Wait up to ``timeout`` seconds for a scheduler file and return the address in it.

    (``Client(scheduler_file=...)`` would wait forever for a file that never appears.)
    """
    import json
    import time

    deadline = time.monotonic() + timeout
    problem = "does not exist"
    while True:
        try:
            with open(path) as f:
                address = json.load(f)["address"]
            if isinstance(address, str) and address:
                return address
            problem = "has no scheduler address"
        except FileNotFoundError:
            problem = "does not exist"
        except (ValueError, KeyError, TypeError):
            problem = "is not a dask scheduler file (JSON with an 'address')"
        except OSError as exc:
            problem = f"cannot be read ({exc})"
        if time.monotonic() >= deadline:
            raise ClusterError(
                f"cannot reach the dask scheduler of {path}: the file {problem} after {timeout:g} s"
            )
        time.sleep(0.05)


def _close_quietly(closable) -> None:
    try:
        closable.close()
    except Exception as exc:  # a dead scheduler must not hide the block's own error
        _log.debug("closing %r failed: %s", closable, exc)


def _start_local(stack, workers, threads_per_worker, memory_limit, dashboard, timeout) -> Client:
    from distributed import LocalCluster

    kwargs: dict[str, Any] = {
        "processes": True,
        "host": "127.0.0.1",
        "dashboard_address": "127.0.0.1:8787" if dashboard else None,
    }
    if workers is not None:
        kwargs["n_workers"] = workers
    if threads_per_worker is not None:
        kwargs["threads_per_worker"] = threads_per_worker
    if memory_limit is not None:
        kwargs["memory_limit"] = memory_limit
    try:
        local = LocalCluster(**kwargs)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"could not start a local dask cluster: {exc}") from exc
    stack.callback(_close_quietly, local)
    return _client(stack, timeout, "the local dask cluster", address=local)


def _start_mpi(stack, threads_per_worker, memory_limit, interface, dashboard, timeout) -> Client:
    dask_mpi = _import_optional("dask_mpi", "cluster='mpi'")
    _import_optional("mpi4py", "cluster='mpi'")
    from mpi4py import MPI

    if MPI.COMM_WORLD.Get_rank() != 1:
        # The scheduler and worker ranks log every connection (and tracebacks of the closed
        # connections at shutdown) at INFO: keep their output to warnings and errors.
        logging.getLogger("distributed").setLevel(logging.WARNING)
    try:
        is_client = dask_mpi.initialize(
            interface=interface,
            nthreads=threads_per_worker or 1,
            memory_limit=memory_limit if memory_limit is not None else "auto",
            dashboard=dashboard,
            dashboard_address=":8787",
            exit=False,
        )
    except dask_mpi.WorldTooSmallException as exc:
        raise ClusterError(
            f"{exc} Run under 'mpirun -n N' with N >= 3 (scheduler, this program, workers)."
        ) from exc
    if not is_client:
        # Scheduler and worker ranks get here once the client rank has closed the cluster.
        raise SystemExit(0)
    stack.callback(_mpi_shutdown, dask_mpi)
    import dask

    address = dask.config.get("scheduler_address")
    return _client(stack, timeout, f"the dask-mpi scheduler at {address}", address=address)


def _mpi_shutdown(dask_mpi) -> None:
    try:
        dask_mpi.send_close_signal()
    except Exception as exc:
        _log.debug("dask-mpi close signal failed: %s", exc)


def _jobqueue_class(kind: str):
    dask_jobqueue = _import_optional("dask_jobqueue", f"cluster={kind!r}")
    return dask_jobqueue.SLURMCluster if kind == "slurm" else dask_jobqueue.PBSCluster


def _jobqueue_kwargs(kind, workers, queue, cores, memory, walltime, interface) -> dict:
    overrides = {"processes": workers, "queue": queue, "cores": cores, "memory": memory,
                 "walltime": walltime, "interface": interface}  # fmt: skip
    return {k: v for k, v in overrides.items() if v is not None}


@contextlib.contextmanager
def _jobqueue_cluster(cls, kind: str, kwargs: dict):
    try:
        jq = cls(**kwargs)
    except ValueError as exc:
        raise ClusterError(
            f"cannot configure the {kind} cluster: {exc}. Set jobqueue.{kind}.cores and "
            f"jobqueue.{kind}.memory in dask's config (~/.config/dask/jobqueue.yaml) or pass "
            "--cores/--memory."
        ) from exc
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"could not start the {kind} cluster's scheduler: {exc}") from exc
    try:
        yield jq
    finally:
        _close_quietly(jq)


def _start_jobqueue(stack, kind, workers, queue, cores, memory, walltime, jobs, interface,
                    dashboard, timeout) -> Client:  # fmt: skip
    cls = _jobqueue_class(kind)
    kwargs = _jobqueue_kwargs(kind, workers, queue, cores, memory, walltime, interface)
    if not dashboard:
        kwargs["scheduler_options"] = {"dashboard": False}
    jq = stack.enter_context(_jobqueue_cluster(cls, kind, kwargs))
    client = _client(stack, timeout, f"the {kind} cluster's scheduler", address=jq)
    try:
        jq.scale(jobs=jobs or 1)
    except Exception as exc:
        raise ClusterError(
            f"could not submit {kind} worker jobs ({type(exc).__name__}: {exc}); job script:\n"
            f"{jq.job_script()}"
        ) from exc
    return client


def _wait_for_workers(client: Client, kind: str, timeout: float, where: str) -> None:
    n = 1
    if kind == "mpi":
        from mpi4py import MPI

        n = max(MPI.COMM_WORLD.Get_size() - 2, 1)
    try:
        client.wait_for_workers(n, timeout=timeout)
    except (TimeoutError, OSError) as exc:
        hint = {
            "slurm": " (are the jobs still queued? see 'squeue' and the jobs' output files)",
            "pbs": " (are the jobs still queued? see 'qstat' and the jobs' output files)",
        }.get(kind, "")
        raise ClusterError(f"no dask worker joined {where} within {timeout:g} s{hint}") from exc


def _import_optional(module: str, feature: str):
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ClusterError(
            f"{feature} needs the Python package {module!r} ({exc}); install it with {_HPC_EXTRA}"
        ) from exc


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _memory_limit(value: str | int | float) -> str | int | float:
    """Validate a memory limit as distributed understands it; return it in its typed form."""
    from dask.utils import parse_bytes

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        ok = value > 0
        parsed: str | int | float = value
    elif isinstance(value, str):
        text = value.strip()
        parsed = text
        if text == "auto":
            ok = True
        else:
            try:
                number = float(text)
            except ValueError:
                try:
                    ok = parse_bytes(text) > 0
                except ValueError:
                    ok = False
            else:
                parsed = number if number <= 1 else int(number)
                ok = number > 0
    else:
        ok = False
        parsed = value
    if not ok:
        message = f"invalid memory limit {value!r}: use bytes, e.g. 4GB, a fraction, or 'auto'"
        raise argparse.ArgumentTypeError(message)
    return parsed
