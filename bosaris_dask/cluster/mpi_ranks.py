"""Which MPI rank reports an error for the job, from the launcher's environment.

Under ``mpirun ... bosaris-dask ... --cluster mpi`` every rank runs the same command line, so
an error met before the cluster starts (a bad option, a missing input, a wrong interface, too
few ranks) is met by every rank. Only the rank that runs the command (rank 1, dask-mpi's
client; rank 0 in a job of one rank) prints it at once; the others wait
:data:`QUIET_RANK_WAIT` seconds first, and ``mpirun`` stops them meanwhile once the reporting
rank has exited. An error of one rank alone is still printed, late.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence

__all__ = [
    "QUIET_RANK_WAIT",
    "reporting_rank",
    "reports_for_the_job",
    "wait_for_the_reporting_rank",
]

#: Seconds a rank that does not report waits before it prints an error and exits.
QUIET_RANK_WAIT = 3.0

#: The environment variables that give a process's rank and the job's size: Open MPI, MPICH
#: and Intel MPI (PMI), MVAPICH, then Slurm's ``srun`` (per task, not per rank of an
#: ``mpirun`` it starts: the last resort).
_RANK_AND_SIZE = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
)


def reporting_rank(size: int) -> int:
    """The rank that reports for a job of ``size`` ranks: 1 (dask-mpi's client), or 0 alone.

    >>> reporting_rank(18), reporting_rank(1)
    (1, 0)
    """
    return min(1, size - 1)


def reports_for_the_job(argv: Sequence[str], environ: Mapping[str, str] = os.environ) -> bool:
    """Whether this process prints an error at once: with ``--cluster mpi`` in ``argv`` and a
    rank given by the launcher (``environ``), only the :func:`reporting_rank` does; anywhere
    else, yes.

    >>> ranks = [{"OMPI_COMM_WORLD_RANK": str(r), "OMPI_COMM_WORLD_SIZE": "3"} for r in range(3)]
    >>> [reports_for_the_job(["evaluate", "--cluster", "mpi"], env) for env in ranks]
    [False, True, False]
    >>> reports_for_the_job(["evaluate"], ranks[0]), reports_for_the_job(["--cluster=mpi"], {})
    (True, True)
    """
    args = list(argv)
    mpi = "--cluster=mpi" in args or any(
        a == "--cluster" and b == "mpi" for a, b in zip(args, args[1:], strict=False)
    )
    if not mpi:
        return True
    for rank_name, size_name in _RANK_AND_SIZE:
        rank, size = environ.get(rank_name, ""), environ.get(size_name, "")
        if rank.isdigit() and size.isdigit():
            return int(rank) == reporting_rank(int(size))
    return True


def wait_for_the_reporting_rank(argv: Sequence[str]) -> None:
    """Before an error is printed: wait :data:`QUIET_RANK_WAIT` seconds on a rank that does not
    report for the job (:func:`reports_for_the_job`)."""
    if not reports_for_the_job(argv):
        time.sleep(QUIET_RANK_WAIT)
