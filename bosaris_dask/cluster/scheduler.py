"""Reaching a dask scheduler: clients, scheduler files, a local cluster, the first worker.

The building blocks :func:`bosaris_dask.cluster.connect` uses for every kind of cluster: each
turns a failure into a :class:`~bosaris_dask.errors.ClusterError` and registers what it started
on an :class:`contextlib.ExitStack` so that only that is closed.
"""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from bosaris_dask.errors import ClusterError

if TYPE_CHECKING:
    from distributed import Client


#: The values ``cluster`` (``--cluster``) accepts.
CLUSTER_KINDS = ("local", "threads", "slurm", "pbs", "mpi")

#: Below this many trials, ``cluster=None`` picks the threaded scheduler. Measured on a 2-core
#: machine, threads beat a 2-process LocalCluster even at 1e9 trials: warm, the cluster took
#: 1.03-1.05x the threads' time, and a fresh one adds its start-up and the workers' first
#: imports (2-3 s); identical results (``benchmarks/README.md``).
SMALL_JOB_TRIALS = 10_000_000_000

_JOBQUEUE_KINDS = ("slurm", "pbs")
#: Seconds between two looks at the batch jobs while waiting for their first worker.
HOPELESS_POLL_S = 5.0

_log = logging.getLogger("bosaris_dask.cluster")


#: Seconds beyond ``timeout`` that a connection may take before it is given up: a server
#: that accepts it but is no dask scheduler (a dashboard's port, a web server) never answers
#: distributed's handshake, which then waits without end.
_HANDSHAKE_GRACE = 5.0


def _client(stack: contextlib.ExitStack, timeout: float, what: str, **kwargs) -> Client:
    import threading

    from distributed import Client

    made: dict[str, Any] = {}
    given_up = threading.Event()

    def connect() -> None:
        # not set_as_default: an attempt given up below may still be connecting, and must not
        # become dask's scheduler whenever it gets that far (every later compute in this
        # process then failed with "no Client active", or waited on it)
        try:
            made["client"] = Client(timeout=timeout, set_as_default=False, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - reported below, in the caller's thread
            made["error"] = exc
            return
        if given_up.is_set():  # connected after all, too late: nobody will close it
            _close_quietly(made["client"])

    attempt = threading.Thread(target=connect, name="bosaris-dask-connect", daemon=True)
    attempt.start()
    attempt.join(timeout + _HANDSHAKE_GRACE)
    if attempt.is_alive():
        given_up.set()
        raise ClusterError(
            f"cannot reach {what} within {timeout:g} s: something accepts the connection but "
            "does not answer as a dask scheduler (a dashboard's port? the scheduler's is "
            "usually 8786)"
        )
    exc = made.pop("error", None)
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        raise exc
    if exc is not None:
        # not chained: the error's frames hold the half-made client, whose finalizer then
        # waited 10 s at exit and printed a traceback
        _forget_client(exc)
        raise ClusterError(_connect_error(exc, what, timeout)) from None
    client = made["client"]
    stack.callback(_close_quietly, client)
    stack.enter_context(_as_default(client))
    return client


@contextlib.contextmanager
def _as_default(client: Client) -> Iterator[None]:
    """Make ``client`` dask's scheduler for the block, as ``Client(set_as_default=True)`` does
    (closing the client takes it out of distributed's default clients)."""
    import dask
    from distributed.client import ensure_default_client

    ensure_default_client(client)
    with dask.config.set(scheduler="dask.distributed"):
        yield


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


def _connect_error(exc: BaseException, what: str, timeout: float) -> str:
    """What a failed connection to ``what`` says: refused or timed out, a malformed address, or
    something that answers but is no dask scheduler."""
    if isinstance(exc, MemoryError):  # another protocol's bytes read as a message's length
        return (f"cannot connect to {what}: something answers there, but not as a dask "
                "scheduler (another service on that port? the scheduler's is usually "
                "8786)")  # fmt: skip
    if isinstance(exc, TypeError) and "identity()" in str(exc):  # a worker's or nanny's port
        return (f"cannot connect to {what}: a dask worker (or nanny) answers there, not the "
                "scheduler: give the scheduler's address (the workers were started with "
                "it)")  # fmt: skip
    if isinstance(exc, OSError | TimeoutError):  # refused, unreachable, timed out
        return f"cannot reach {what} within {timeout:g} s ({type(exc).__name__}: {exc})"
    return f"cannot connect to {what} ({type(exc).__name__}: {exc})"


def check_address(address: str) -> None:
    """A ClusterError for a scheduler address that no connection could use: an unknown scheme
    (``http://``), or a port that is no number; before any attempt, which took the whole
    timeout and more to say so.

    Examples
    --------
    >>> check_address("tcp://10.0.0.5:8786")
    >>> check_address("http://10.0.0.5:8787")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bosaris_dask.errors.ClusterError: http://10.0.0.5:8787 is no dask scheduler address (scheme \
'http'; dask's are inproc, tcp, tls, ...): give tcp://HOST:PORT
    """
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import backends

    try:
        scheme, location = parse_address(address)
    except ValueError as exc:
        raise ClusterError(f"{address} is no dask scheduler address ({exc}): give "
                           "tcp://HOST:PORT") from None  # fmt: skip
    schemes = sorted(backends)  # (inproc: a scheduler of this process, from Python)
    if scheme not in schemes:
        raise ClusterError(f"{address} is no dask scheduler address (scheme {scheme!r}; dask's "
                           f"are {', '.join(schemes)}): give tcp://HOST:PORT")  # fmt: skip
    try:
        if scheme != "inproc":
            parse_host_port(location)
    except ValueError as exc:
        raise ClusterError(f"{address} is no dask scheduler address ({exc}): give "
                           "tcp://HOST:PORT") from None  # fmt: skip


def _forget_client(exc: BaseException) -> None:
    """Close the client that a failed ``Client()`` left half made (found in ``exc``'s frames),
    so that it neither waits at exit nor prints a traceback there."""
    from distributed import Client

    tb = exc.__traceback__
    while tb is not None:
        made = tb.tb_frame.f_locals.get("self")
        if isinstance(made, Client):
            _close_quietly(made)
            return
        tb = tb.tb_next


def _close_quietly(closable) -> None:
    try:
        closable.close()
    except Exception as exc:  # a dead scheduler must not hide the block's own error
        _log.debug("closing %r failed: %s", closable, exc)
        # nor keep the program from ending: distributed's atexit hook closes the clusters it
        # still knows of, waiting 10 s on one that never started (a refused job submission)
        instances = getattr(type(closable), "_instances", None)
        if instances is not None:
            instances.discard(closable)


def _loopback_dashboard() -> str:
    """The dashboard address of a local cluster: loopback, on the port of dask's own
    ``distributed.scheduler.dashboard.address`` (8787 unless configured; no copy here).

    Examples
    --------
    >>> import dask
    >>> with dask.config.set({"distributed.scheduler.dashboard.address": ":9999"}):
    ...     _loopback_dashboard()
    '127.0.0.1:9999'
    """
    import dask

    address = str(dask.config.get("distributed.scheduler.dashboard.address", ":8787"))
    return f"127.0.0.1:{address.rsplit(':', 1)[-1] or '8787'}"


#: The dask config key through which distributed starts every worker process with glibc's
#: ``MALLOC_TRIM_THRESHOLD_=65536`` (its default, below).
TRIM_KEY = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"
_DISTRIBUTED_TRIM = 65536


def worker_environ() -> dict[str, Any]:
    """The dask config our local workers start with: distributed's ``MALLOC_TRIM_THRESHOLD_``
    left out, unless the user set a value of their own.

    Setting any glibc ``MALLOC_*`` threshold switches off glibc's dynamic mmap threshold: every
    temporary array over 128 KiB of a pass's kernels is then a fresh ``mmap`` whose pages fault
    on first touch. On this project's 2-core machine, that made a 2-process LocalCluster take
    2.2x the threaded scheduler's time at 1e8 trials; without it, the same (1.47 s vs 1.40 s;
    ``benchmarks/README.md``). The workers then manage memory as the threaded scheduler's
    process does (glibc's defaults).

    Examples
    --------
    >>> worker_environ()
    {'distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_': None}
    >>> import dask
    >>> with dask.config.set({TRIM_KEY: 0}):
    ...     worker_environ()
    {}
    """
    import dask
    import distributed  # noqa: F401  (registers distributed's config defaults)

    value = dask.config.get(TRIM_KEY, None)
    return {TRIM_KEY: None} if str(value) == str(_DISTRIBUTED_TRIM) else {}


#: The dask config key of distributed's statistical profiler in each worker.
PROFILE_KEY = "distributed.worker.profile.enabled"


def worker_config(dashboard: bool) -> dict[str, Any]:
    """The dask config our local workers start with: :func:`worker_environ`, and without
    distributed's statistical profiler when no dashboard will show it.

    Each worker's profiler samples every thread's stack 100 times a second and merges the
    samples every second, on the worker's event loop: on this project's 2-core machine,
    time taken from the compute threads (a warm 1e9 evaluation on a 2-process LocalCluster:
    35.1 s without it, 40.9 s with it, dask's threaded scheduler 32.0-33.9 s;
    ``benchmarks/README.md``).
    Its only readers are the dashboard's profile pages and ``Client.profile``, so it stays on
    where the dashboard is served (``dashboard`` true and bokeh installed).

    Examples
    --------
    >>> worker_config(dashboard=False)[PROFILE_KEY]
    False
    """
    import importlib.util

    config = worker_environ()
    if not (dashboard and importlib.util.find_spec("bokeh") is not None):
        config[PROFILE_KEY] = False
    return config


@contextlib.contextmanager
def _unfinished_start_forgotten() -> Iterator[None]:
    """Take a cluster whose start the block's Ctrl-C or SIGTERM cut short off distributed's
    exit hook, which closed it and printed ``Exception ignored in atexit callback ...
    AssertionError`` (a half-started cluster's state fails its close's checks); its worker
    processes end with this one."""
    from distributed.deploy.spec import SpecCluster

    before = set(SpecCluster._instances)
    try:
        yield
    except KeyboardInterrupt:
        for cluster in set(SpecCluster._instances) - before:
            SpecCluster._instances.discard(cluster)
        raise


def _start_local(stack, workers, threads_per_worker, memory_limit, dashboard, timeout) -> Client:
    import dask
    from distributed import LocalCluster

    kwargs: dict[str, Any] = {
        "processes": True,
        "host": "127.0.0.1",
        "dashboard_address": _loopback_dashboard() if dashboard else None,
    }
    if not dashboard:  # the scheduler's HTTP routes on a free port: 8787 stays free (and quiet)
        kwargs["scheduler_kwargs"] = {"dashboard": False, "dashboard_address": "127.0.0.1:0"}
    if workers is not None:
        kwargs["n_workers"] = workers
    if threads_per_worker is not None:
        kwargs["threads_per_worker"] = threads_per_worker
    if memory_limit is not None:
        kwargs["memory_limit"] = memory_limit
    try:
        with (
            dask.config.set(worker_config(dashboard)),
            _workers_ignore_ctrl_c(),
            _unfinished_start_forgotten(),
            warnings.catch_warnings(),
        ):
            # 8787 taken (another cluster): distributed serves on a free port, and says so in a
            # warning of four lines; the dashboard's link, where shown, is the port it took
            warnings.filterwarnings("ignore", "Port .* is already in use", UserWarning)
            local = LocalCluster(**kwargs)  # each worker's nanny copies the config
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"could not start a local dask cluster: {exc}") from exc
    stack.callback(_close_quietly, local)
    client = _client(stack, timeout, "the local dask cluster", address=local)
    from bosaris_dask.cluster.worker_logs import TaskErrorsToTheClient

    try:
        client.register_plugin(TaskErrorsToTheClient())
    except (OSError, TimeoutError) as exc:  # a CommClosedError: the workers went away
        limit = f" (--memory-limit {memory_limit}" if memory_limit is not None else " ("
        raise ClusterError(
            f"the local dask cluster's workers went away while it started{limit}: a worker "
            "needs about 150-250 MB just to start, and one over its limit is restarted: give "
            "more memory per worker, or fewer workers)"
        ) from exc
    return client


@contextlib.contextmanager
def _workers_ignore_ctrl_c() -> Iterator[None]:
    """Start worker processes with SIGINT ignored (a process inherits an ignored signal, and
    Python then leaves it so): a Ctrl-C in the terminal reaches every process of its group,
    and each worker printed its own KeyboardInterrupt traceback before this program said
    "interrupted" and closed the cluster. A Ctrl-C while the workers start is lost with them:
    an ignored signal is discarded, not held (blocking SIGINT instead, as the standard library
    starts its resource tracker, does not reach the workers: distributed starts them from
    threads of its own, which do not block it)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _wait_for_workers(
    client: Client,
    kind: str,
    timeout: float,
    where: str,
    hopeless: Callable[[], str | None] | None = None,
) -> None:
    """Wait up to ``timeout`` seconds for the first worker (all ranks' workers under MPI).

    ``hopeless``, polled every few seconds, returns a message where waiting longer cannot bring
    a worker (every batch job that would run one has ended); the wait then ends at once with it.
    """
    n = 1
    if kind == "mpi":
        from mpi4py import MPI

        n = max(MPI.COMM_WORLD.Get_size() - 2, 1)
    hint = {
        "slurm": " (are the jobs still queued? see 'squeue' and the jobs' output files)",
        "pbs": " (are the jobs still queued? see 'qstat' and the jobs' output files)",
    }.get(kind, "")
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        step = left if hopeless is None else min(left, HOPELESS_POLL_S)
        try:
            client.wait_for_workers(n, timeout=max(step, 0.001))
            return
        except TimeoutError as exc:  # before OSError, its base class
            said = hopeless() if hopeless is not None else None
            if said is not None:
                raise ClusterError(f"no dask worker joined {where}: {said}") from exc
            if time.monotonic() >= deadline:
                raise ClusterError(
                    f"no dask worker joined {where} within {timeout:g} s{hint}"
                ) from exc
        except OSError as exc:
            raise ClusterError(f"no dask worker joined {where} ({exc}){hint}") from exc
