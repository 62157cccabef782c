"""Getting a dask client: locally by default, or on any cluster.

One small package used by the command line and the Python API. :func:`connect` is a context
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

from bosaris_dask.cluster.arguments import add_cluster_arguments
from bosaris_dask.cluster.hpc import jobqueue_job_script
from bosaris_dask.cluster.scheduler import CLUSTER_KINDS, SMALL_JOB_TRIALS
from bosaris_dask.cluster.session import connect, connect_from_args
from bosaris_dask.progress import current_client

__all__ = [
    "CLUSTER_KINDS",
    "SMALL_JOB_TRIALS",
    "add_cluster_arguments",
    "connect",
    "connect_from_args",
    "current_client",
    "jobqueue_job_script",
]
