"""The :func:`connect` context manager: choose where the work runs, check the options, start it.

:func:`connect_from_args` calls it with the options of
:func:`~bosaris_dask.cluster.add_cluster_arguments`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from bosaris_dask.cluster.arguments import _memory_limit
from bosaris_dask.cluster.hpc import _start_jobqueue, _start_mpi
from bosaris_dask.cluster.no_workers import failing_without_workers, theirs_failing_without_workers
from bosaris_dask.cluster.scheduler import (
    _JOBQUEUE_KINDS,
    CLUSTER_KINDS,
    SMALL_JOB_TRIALS,
    _client,
    _log,
    _read_scheduler_file,
    _start_local,
    _wait_for_workers,
    check_address,
)
from bosaris_dask.errors import BosarisError, ClusterError, option
from bosaris_dask.progress import current_client

if TYPE_CHECKING:
    from distributed import Client


def _announce_stderr(message: str) -> None:
    print(f"bosaris-dask: {message}", file=sys.stderr, flush=True)


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
    dashboard: bool | None = None,
    timeout: float | None = None,
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
        How many dask workers compute in parallel, in all: worker processes for local
        (default: sized to the machine) and slurm/pbs (whole jobs of
        ``jobqueue.<kind>.processes`` each, or ``workers / jobs`` per job when ``jobs`` is
        given too); the threaded scheduler's threads for threads. Not allowed with mpi, where
        ``mpirun -n N`` sets it (N - 2).
    threads_per_worker
        Threads per worker process (local, mpi; default 1 for mpi, sized for local).
    memory_limit
        Memory per worker before it spills and is restarted (local, mpi): bytes, ``"4GB"``,
        a fraction of the machine's memory, or ``"auto"``. For slurm/pbs use ``memory``.
    queue, cores, memory, walltime
        slurm/pbs job settings (partition/queue, cores per job, memory per job such as
        ``"8GB"``, walltime ``"01:00:00"``), passed to dask-jobqueue only when given: otherwise
        ``jobqueue.<kind>.*`` in dask's config decides, as it does for every other job setting.
    jobs
        slurm/pbs: how many jobs to submit (default: enough for ``workers``, else 1).
    interface
        Network interface for the scheduler and workers (slurm, pbs, mpi), e.g. ``"ib0"``;
        ``"lo"`` keeps everything on loopback.
    dashboard
        Start the dashboard where we start a scheduler (if bokeh is installed) and announce its
        link when there is one; ``None`` (default) does so without a word where it cannot,
        ``True`` warns there (asked for, e.g. by ``--dashboard``), ``False`` starts none.
    timeout
        Seconds to wait to reach a scheduler; also how long a lost scheduler is retried
        (default: dask's ``distributed.comm.timeouts.connect``, 30 s unless configured).
    worker_timeout
        Seconds to wait for the first worker (slurm/pbs jobs may queue: default 600; else 60),
        and for any worker once all are lost during the work: on a scheduler started here
        always, on someone else's (``scheduler``, ``scheduler_file``) only when given, for as
        long as the block runs (its ``no-workers-timeout`` is theirs otherwise).
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
    asked_dashboard, dashboard = dashboard is True, dashboard is not False
    if timeout is None:
        timeout = connect_timeout()
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
        yield current_client()
        return

    stack = contextlib.ExitStack()
    hopeless = None  # a check that says when waiting for workers cannot help (jobqueue kinds)
    wait = (worker_timeout if worker_timeout is not None
            else 600.0 if kind in _JOBQUEUE_KINDS else 60.0)  # fmt: skip
    with stack:
        stack.enter_context(_log_levels_kept())  # left last: after the cluster has closed
        if kind in ("local", "mpi", *_JOBQUEUE_KINDS):  # a scheduler of ours
            stack.enter_context(failing_without_workers(wait))
        if kind == "address":
            where = f"the dask scheduler at {scheduler}"
            check_address(scheduler)  # type: ignore[arg-type]
            client = _client(stack, timeout, where, address=scheduler)
        elif kind == "file":
            path = os.fspath(scheduler_file)  # type: ignore[arg-type]
            where = f"the dask scheduler of {path}"
            address = _read_scheduler_file(path, timeout)
            check_address(address)
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
            client, hopeless = _start_jobqueue(
                stack, kind, workers, queue, cores, memory, walltime, jobs, interface,
                dashboard, timeout,
            )  # fmt: skip

        if kind in ("address", "file", "mpi", "slurm", "pbs"):
            _wait_for_workers(client, kind, wait, where, hopeless)
        if kind in ("address", "file") and worker_timeout is not None:
            stack.enter_context(theirs_failing_without_workers(client, worker_timeout, where))
        link = client.dashboard_link
        if dashboard and link:
            # A scheduler serves dashboard pages only where bokeh is installed (there: asked)
            if _serves_dashboard(client, remote=kind in ("address", "file")):
                say(f"dask dashboard at {link}")
            else:
                (_log.warning if asked_dashboard else _log.info)(
                    "no dask dashboard: install bokeh where the scheduler runs"
                )
        try:
            yield client
        except KeyboardInterrupt:
            _quiet_shutdown(client, ours=kind != "address" and kind != "file")
            raise
        except BosarisError:
            raise
        except Exception as exc:
            from distributed.scheduler import NoValidWorkerError, NoWorkerError

            if isinstance(exc, NoWorkerError | NoValidWorkerError):
                waited = getattr(exc, "timeout", wait)
                raise ClusterError(
                    f"every worker of {where} was lost during the work and none came back "
                    f"within {waited:g} s (killed for memory, or their jobs ended?); nothing "
                    "is reported"
                ) from None
            if client.status != "running":
                raise ClusterError(
                    f"lost the connection to {where} ({type(exc).__name__}: {exc}); "
                    "did the scheduler die, or its job end?"
                ) from exc
            raise


def _serves_dashboard(client: Any, *, remote: bool) -> bool:
    """Whether the scheduler has bokeh, which its dashboard pages need: this process's for a
    scheduler started here, else asked of the scheduler (yes where it cannot say)."""
    if not remote:
        return _has_bokeh()
    try:
        return bool(client.run_on_scheduler(_has_bokeh))
    except Exception:  # noqa: BLE001 - a scheduler that runs no code of ours: show the link
        return True


def _has_bokeh() -> bool:
    return importlib.util.find_spec("bokeh") is not None


#: The loggers that report work cut short by a Ctrl-C.
_SHUTDOWN_LOGGERS = ("distributed", "asyncio", "tornado")


@contextlib.contextmanager
def _log_levels_kept() -> Iterator[None]:
    """The levels of :data:`_SHUTDOWN_LOGGERS` as they were before the block, after it."""
    import logging

    levels = {name: logging.getLogger(name).level for name in _SHUTDOWN_LOGGERS}
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def _quiet_shutdown(client: Any, *, ours: bool) -> None:
    """After a Ctrl-C, close without the tracebacks of work cut short: the client's cancelled
    gathers (asyncio's 'Task exception was never retrieved ... AllExit') and, on workers this
    program started, their failed heartbeats once the scheduler is gone (this process's levels
    come back when :func:`connect` has closed the cluster)."""
    import logging

    def quiet() -> None:
        for name in _SHUTDOWN_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)

    quiet()
    if ours:
        with contextlib.suppress(Exception):
            client.run(quiet)  # (a few ms: the workers are idle or cancelling)


def connect_timeout() -> float:
    """Seconds to wait to reach a scheduler when not told: dask's own
    ``distributed.comm.timeouts.connect`` (30 s by default), so the package keeps no copy.

    Examples
    --------
    >>> import dask
    >>> with dask.config.set({"distributed.comm.timeouts.connect": "45s"}):
    ...     connect_timeout()
    45.0
    """
    import dask
    from dask.utils import parse_timedelta

    return float(parse_timedelta(dask.config.get("distributed.comm.timeouts.connect", "30s")))


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
    >>> from bosaris_dask.cluster import add_cluster_arguments
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
    kind = _choose_kind(kwargs.get("scheduler"), kwargs.get("scheduler_file"),
                        kwargs.get("cluster"), kwargs.get("size_hint"))  # fmt: skip
    check_cluster_options(args, kind)
    return connect(**kwargs)


#: Each cluster option of the command line, its destination, and the kinds of run it acts on
#: ("address": --scheduler, "file": --scheduler-file, "existing": a client already running).
_APPLIES = (
    ("--threads-per-worker", "threads_per_worker", ("local", "mpi")),
    ("--memory-limit", "memory_limit", ("local", "mpi")),
    ("--queue", "queue", _JOBQUEUE_KINDS),
    ("--cores", "cores", _JOBQUEUE_KINDS),
    ("--memory", "memory", _JOBQUEUE_KINDS),
    ("--walltime", "walltime", _JOBQUEUE_KINDS),
    ("--jobs", "jobs", _JOBQUEUE_KINDS),
    ("--interface", "interface", (*_JOBQUEUE_KINDS, "mpi")),
    ("--scheduler-timeout", "timeout", ("address", "file", "local", "mpi", *_JOBQUEUE_KINDS)),
    ("--worker-timeout", "worker_timeout", ("address", "file", "local", "mpi", *_JOBQUEUE_KINDS)),
    ("--dashboard", "dashboard", ("address", "file", "local", "mpi", *_JOBQUEUE_KINDS)),
)

_RUNS = {
    "threads": "the threaded scheduler (no worker processes)",
    "existing": "the dask client already running",
    "address": "a running scheduler (--scheduler)",
    "file": "a running scheduler (--scheduler-file)",
}


def check_cluster_options(args: argparse.Namespace, kind: str) -> None:
    """A ClusterError naming a command-line cluster option that the run of ``kind`` would not
    use (``--memory-limit`` with the threaded scheduler, ``--interface`` on this machine...):
    options are not silently ignored.

    Examples
    --------
    >>> try:
    ...     check_cluster_options(argparse.Namespace(memory_limit="4GB"), "threads")
    ... except ClusterError as exc:
    ...     print(str(exc)[:63])
    --memory-limit acts on --cluster local or mpi; this run uses th
    """
    for flag, dest, kinds in _APPLIES:
        value = getattr(args, dest, None)
        if value is None or value is False or kind in kinds:  # --no-dashboard: nothing to do
            continue
        where = " or ".join(k for k in kinds if k in CLUSTER_KINDS)
        run = _RUNS.get(kind, f"--cluster {kind}")
        chosen = kind == "threads" and getattr(args, "cluster", None) is None
        hint = " (chosen for a small job: --cluster local starts worker processes)" * chosen
        raise ClusterError(f"{flag} acts on --cluster {where}"
                           + (" or a running scheduler" if "address" in kinds else "")
                           + f"; this run uses {run}{hint}")  # fmt: skip


def _choose_kind(scheduler, scheduler_file, cluster, size_hint) -> str:
    given = [n for n, v in (("scheduler", scheduler), ("scheduler_file", scheduler_file),
                            ("cluster", cluster)) if v is not None]  # fmt: skip
    if len(given) > 1:
        raise ClusterError(f"give only one of {_named(['scheduler', 'scheduler_file', 'cluster'])}"
                           f" (got {', '.join(given)})")  # fmt: skip
    if scheduler is not None:
        return "address"
    if scheduler_file is not None:
        return "file"
    if cluster is None:
        if current_client() is not None:
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
        raise ClusterError(f"{_named(bad)} only apply to {option('cluster')} slurm or pbs")
    if kind in _JOBQUEUE_KINDS and memory_limit is not None:
        raise ClusterError(f"with slurm/pbs give the memory per job ({option('memory')}), not "
                           f"{option('memory_limit')}")  # fmt: skip
    if kind == "mpi" and workers is not None:
        raise ClusterError("with mpi the number of workers is set by 'mpirun -n N' (N - 2)")
    ours = {"workers": workers, "threads_per_worker": threads_per_worker,
            "memory_limit": memory_limit}  # fmt: skip
    given = [n for n, v in ours.items() if v is not None]
    if kind in ("address", "file", "existing") and given:
        running = {"address": f"a running scheduler ({option('scheduler')})",
                   "file": f"a running scheduler ({option('scheduler_file')})",
                   "existing": "the client already running"}[kind]  # fmt: skip
        raise ClusterError(f"{_named(given)} only apply to a cluster this program starts "
                           f"({option('cluster')}), not to {running}")  # fmt: skip


def _named(names: list[str]) -> str:
    """Python parameters with the command line's options for them.

    >>> _named(["workers", "memory_limit"])
    'workers (--workers), memory_limit (--memory-limit)'
    """
    return ", ".join(map(option, names))


def _announcer(announce):
    def say(message: str) -> None:
        _log.info(message)
        if announce is not None:
            announce(message)

    return say
