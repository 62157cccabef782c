"""Clusters on batch systems: dask-jobqueue (SLURM, PBS) worker jobs and dask-mpi ranks.

The optional dependencies (``bosaris-dask[hpc]``) are imported only here, and only when one
of these clusters is asked for.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import signal
import subprocess
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from bosaris_dask.cluster.mpi_ranks import QUIET_RANK_WAIT, reporting_rank
from bosaris_dask.cluster.scheduler import _JOBQUEUE_KINDS, _client, _close_quietly, _log
from bosaris_dask.errors import ClusterError

if TYPE_CHECKING:
    from distributed import Client


_HPC_EXTRA = "pip install 'bosaris-dask[hpc]'"


def jobqueue_job_script(
    cluster: str,
    *,
    workers: int | None = None,
    jobs: int | None = None,
    queue: str | None = None,
    cores: int | None = None,
    memory: str | None = None,
    walltime: str | None = None,
    interface: str | None = None,
) -> str:
    """Return the batch script dask-jobqueue would submit for one worker job.

    Settings come from dask's config (``jobqueue.<cluster>.*``) with the arguments given here
    overriding them, exactly as :func:`connect` does; nothing is submitted (a short-lived
    scheduler is started on loopback to fill in its address). ``workers`` (worker processes in
    all) changes one job's script only together with ``jobs``: each job then runs
    ``workers / jobs`` of them.

    Parameters
    ----------
    cluster : {"slurm", "pbs"}
        The job system.
    workers, jobs, queue, cores, memory, walltime, interface
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
    kwargs = _jobqueue_kwargs(cluster, workers, jobs, queue, cores, memory, walltime, interface)
    kwargs.setdefault("scheduler_options", {"host": "127.0.0.1", **_NO_DASHBOARD})
    with _jobqueue_cluster(cls, cluster, kwargs) as jq:
        return str(jq.job_script())


#: A scheduler without dashboard pages: its HTTP routes (health, metrics) on a free port, so
#: that it neither takes 8787 nor warns that another process has it.
_NO_DASHBOARD = {"dashboard": False, "dashboard_address": ":0"}


def _start_mpi(stack, threads_per_worker, memory_limit, interface, dashboard, timeout) -> Client:
    dask_mpi = _import_optional("dask_mpi", "cluster='mpi'")
    _import_optional("mpi4py", "cluster='mpi'")
    # on every rank (a bad name stopped rank 0, the others waited), and before MPI starts: an
    # error then stops the job at once, printed by one rank (cluster.mpi_ranks)
    check_interface(interface)
    try:
        from mpi4py import MPI
    except RuntimeError as exc:  # mpi4py installed, its MPI library not found
        raise ClusterError(f"cluster='mpi': mpi4py cannot load the MPI library ({exc}); load "
                           "the MPI that mpi4py was built with (module load ...), or "
                           "reinstall mpi4py against this one") from None  # fmt: skip

    if MPI.COMM_WORLD.Get_rank() != 1:
        # The scheduler and worker ranks log every connection (and tracebacks of the closed
        # connections at shutdown) at INFO: keep their output to warnings and errors.
        logging.getLogger("distributed").setLevel(logging.WARNING)
    # Only what was given: dask-mpi's own defaults decide the rest (1 thread, memory "auto").
    given = {"interface": interface, "nthreads": threads_per_worker, "memory_limit": memory_limit}
    kwargs = {k: v for k, v in given.items() if v is not None}
    if not dashboard:
        kwargs["dashboard_address"] = _NO_DASHBOARD["dashboard_address"]
    try:
        is_client = dask_mpi.initialize(dashboard=dashboard, exit=False, **kwargs)
    except dask_mpi.WorldTooSmallException as exc:
        world = MPI.COMM_WORLD
        if world.Get_rank() != reporting_rank(world.Get_size()):  # every rank meets it
            time.sleep(QUIET_RANK_WAIT)  # (an exit makes mpirun stop the others)
            raise SystemExit(1) from None
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


def _jobqueue_kwargs(kind, workers, jobs, queue, cores, memory, walltime, interface) -> dict:
    """The dask-jobqueue constructor arguments that were given; dask's config has the rest.

    ``workers`` is the number of worker processes in all; only with ``jobs`` does it set the
    worker processes per job (``processes = workers / jobs``, which must be a whole number).
    """
    processes = None
    if workers is not None and jobs is not None:
        if workers % jobs:
            raise ClusterError(
                f"{workers} workers do not split evenly over {jobs} {kind} jobs: give a "
                "multiple of the jobs, or only one of workers and jobs"
            )
        processes = workers // jobs
    overrides = {"processes": processes, "queue": queue, "cores": cores, "memory": memory,
                 "walltime": walltime, "interface": interface}  # fmt: skip
    return {k: v for k, v in overrides.items() if v is not None}


def check_interface(interface: str | None) -> None:
    """A :class:`ClusterError` unless ``interface`` (if given) is a network interface of this
    host, where the scheduler listens on it.

    >>> check_interface("no-such-nic")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.ClusterError: --interface no-such-nic: this host has no such network ...
    """
    if interface is None:
        return
    import psutil

    names = sorted(psutil.net_if_addrs())
    if interface not in names:
        raise ClusterError(f"--interface {interface}: this host has no such network interface "
                           f"(it has {', '.join(names)}): the scheduler listens on it "
                           "here")  # fmt: skip


@contextlib.contextmanager
def _jobqueue_cluster(cls, kind: str, kwargs: dict):
    check_interface(kwargs.get("interface"))
    try:
        with warnings.catch_warnings():  # 8787 taken: a free port, said in four lines (as local)
            warnings.filterwarnings("ignore", "Port .* is already in use", UserWarning)
            jq = cls(**kwargs)
    except ValueError as exc:
        raise ClusterError(
            f"cannot configure the {kind} cluster: {exc}. Set jobqueue.{kind}.cores and "
            f"jobqueue.{kind}.memory in dask's config (~/.config/dask/jobqueue.yaml) or pass "
            "--cores/--memory."
        ) from exc
    except (OSError, TimeoutError, RuntimeError) as exc:  # (distributed's wrapped errors)
        raise ClusterError(f"could not start the {kind} cluster's scheduler: {exc}") from exc
    try:
        _check_threads(jq._dummy_job, kind)
        yield jq
    finally:
        _close_quietly(jq)


def _check_threads(job, kind: str) -> None:
    """A ClusterError where a job's cores do not give each of its worker processes a thread:
    dask-jobqueue writes ``--nthreads 0``, which distributed reads as the node's CPU count
    shared out, oversubscribing a large node."""
    cores, processes = job.worker_cores, job.worker_processes
    if cores is not None and processes and cores < processes:
        raise ClusterError(
            f"{kind} jobs of {cores} core{'s' * (cores != 1)} cannot run {processes} worker "
            f"processes each (a thread each at least): give --cores {processes} or more, or "
            "fewer workers per job (--workers / --jobs, or jobqueue."
            f"{kind}.processes)"
        )


def _start_jobqueue(stack, kind, workers, queue, cores, memory, walltime, jobs, interface,
                    dashboard, timeout) -> tuple[Client, Callable[[], str | None]]:  # fmt: skip
    """Start a dask-jobqueue cluster, submit its worker jobs; return the client and a check for
    :func:`~bosaris_dask.cluster.scheduler._wait_for_workers` (see :func:`_jobs_left_queue`)."""
    cls = _jobqueue_class(kind)
    kwargs = _jobqueue_kwargs(kind, workers, jobs, queue, cores, memory, walltime, interface)
    if not dashboard:
        kwargs["scheduler_options"] = dict(_NO_DASHBOARD)
    jq = stack.enter_context(_jobqueue_cluster(cls, kind, kwargs))
    per_job = jq._dummy_job.worker_processes  # as dask-jobqueue's own scale(n=...) reads it
    if jobs is None and workers is not None and workers % per_job:
        raise ClusterError(
            f"{workers} workers are not whole {kind} jobs of {per_job} worker processes "
            f"(jobqueue.{kind}.processes): give a multiple of {per_job}, or jobs as well"
        )
    client = _client(stack, timeout, f"the {kind} cluster's scheduler", address=jq)
    try:
        with _refusals_not_logged():
            if jobs is None and workers is not None:
                jq.scale(n=workers)
            else:
                jq.scale(jobs=jobs or 1)  # nothing given: one job
            _submit_now(jq)
    except Exception as exc:
        raise ClusterError(
            f"could not submit {kind} worker jobs: {_submission_error(exc)}\njob script:\n"
            f"{jq.job_script()}"
        ) from exc
    return client, _jobs_left_queue(jq, kind)


def _submit_now(jq) -> None:
    """Submit the jobs ``scale`` asked for and wait for the submissions (not for the jobs).

    ``scale`` only schedules the submission on the cluster's event loop, where a refused
    ``sbatch``/``qsub`` (too much memory for any node, an unknown partition) is logged and
    forgotten: the run then waited the whole worker timeout (10 minutes by default) and blamed
    a queue. Here the refusal raises, with the batch system's own message. A job whose
    submission failed before this waited on it (the event loop may run ``scale``'s callback
    first) has no job id; it is submitted once more, which fails with the message again.
    """
    jq.sync(jq._correct_state)
    for job in list(jq.workers.values()):
        if getattr(job, "job_id", "") is None:
            jq.sync(job.start)


@contextlib.contextmanager
def _refusals_not_logged() -> Iterator[None]:
    """Keep tornado from logging a refused submission's traceback (its event loop ran
    ``scale``'s callback, whose error nobody awaited) while :func:`_submit_now` reports it."""

    def not_a_refusal(record: logging.LogRecord) -> bool:
        # the refusal's text, or a submission command missing (sbatch on a PBS site)
        missing = record.exc_info is not None and isinstance(record.exc_info[1],
                                                             FileNotFoundError)  # fmt: skip
        return _REFUSAL not in record.getMessage() and not missing

    logger = logging.getLogger("tornado.application")
    logger.addFilter(not_a_refusal)
    try:
        yield
    finally:
        logger.removeFilter(not_a_refusal)


#: How dask-jobqueue's error for a failed sbatch/qsub/scancel begins.
_REFUSAL = "Command exited with non-zero exit code"


def _submission_error(exc: BaseException) -> str:
    """What the batch system said: dask-jobqueue's error holds the command, stdout and stderr."""
    text = str(exc)
    said = text.partition("stderr:")[2].strip()
    return said or f"{type(exc).__name__}: {text}"


#: Reasons SLURM gives a pending job that cannot start however long it waits (the job asks for
#: more than its partition allows, or what does not exist), unless an administrator steps in.
NEVER_STARTS = ("PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints",
                "InvalidQOS", "InvalidAccount")  # fmt: skip


def _jobs_left_queue(jq, kind: str) -> Callable[[], str | None]:
    """A check for the wait for workers: a message once every submitted SLURM job has left the
    queue (``squeue -j`` lists none of them), or waits for a reason that no wait ends
    (:data:`NEVER_STARTS`), when waiting longer cannot bring a worker; None while any is
    pending otherwise or running, when ``squeue`` cannot tell, and for PBS (not checked)."""
    ids = [str(job.job_id) for job in jq.workers.values() if getattr(job, "job_id", None)]
    if kind != "slurm" or not ids:
        return lambda: None
    logs = getattr(jq._dummy_job, "log_directory", None)
    where = f" in {logs}" if logs else " (sbatch's default: slurm-<id>.out in the working folder)"

    def check() -> str | None:
        command = ["squeue", "-h", "-o", "%i %T %r", "-j", ",".join(ids)]
        try:
            out = subprocess.run(command, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        listed = [line.split() for line in out.stdout.splitlines() if line.strip()]
        if (
            out.returncode == 0
            and listed
            and all(
                len(job) == 3 and job[1] == "PENDING" and job[2] in NEVER_STARTS for job in listed
            )
        ):
            reasons = ", ".join(sorted({job[2] for job in listed}))
            return (
                f"the slurm worker job(s) {', '.join(ids)} cannot start: squeue says {reasons} "
                "(they ask for more than the partition allows, or for what it does not have: "
                "check --queue, --cores, --memory and --walltime against 'sinfo' and 'scontrol "
                "show partition'); they are cancelled"
            )
        gone = out.returncode == 0 and not listed
        if not (gone or "Invalid job id" in out.stderr):
            return None
        return (
            f"the slurm worker job(s) {', '.join(ids)} ended before any dask worker joined; "
            f"see their output files{where}"
        )

    return check


def _import_optional(module: str, feature: str):
    """``module``, imported with this process's SIGINT and SIGTERM handlers kept: importing
    ``dask_jobqueue`` installs a SIGINT handler that calls ``sys.exit()``, so a Ctrl-C of a
    ``--cluster slurm`` run ended it with status 0, no message and no output."""
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ClusterError(
            f"{feature} needs the Python package {module!r} ({exc}); install it with {_HPC_EXTRA}"
        ) from exc
    finally:
        if threading.current_thread() is threading.main_thread():
            for sig, handler in kept.items():
                if handler is not None and signal.getsignal(sig) is not handler:
                    signal.signal(sig, handler)
