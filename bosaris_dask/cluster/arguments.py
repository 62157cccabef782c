"""Command-line options that choose where the work runs, and their value parsers."""

from __future__ import annotations

import argparse
import math

from bosaris_dask.cluster.scheduler import CLUSTER_KINDS


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
        help="how many dask workers compute in parallel, in all: worker processes (local; "
        "slurm/pbs: whole jobs of jobqueue.<kind>.processes each, or N/JOBS per job with "
        "--jobs); threads (threads); mpi: not given, mpirun -n N makes N-2",
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
    g.add_argument("--memory", type=_job_memory, metavar="BYTES",
                   help="slurm/pbs: memory per job, e.g. 16GB")  # fmt: skip
    g.add_argument("--walltime", metavar="HH:MM:SS", help="slurm/pbs: walltime per job")
    g.add_argument(
        "--jobs", type=_positive_int, metavar="N",
        help="slurm/pbs: worker jobs to submit (default: enough for --workers, else 1)",
    )  # fmt: skip
    g.add_argument(
        "--interface", metavar="NAME",
        help="network interface for scheduler and workers (slurm, pbs, mpi), e.g. ib0",
    )  # fmt: skip
    g.add_argument(
        "--dashboard", action=argparse.BooleanOptionalAction, default=None,
        help="start the dask dashboard of a distributed cluster and print its link (default: "
        "yes; the threaded scheduler has none)",
    )  # fmt: skip
    g.add_argument(
        "--scheduler-timeout", dest="timeout", type=_positive_float, metavar="SECONDS",
        help="how long to try to reach the scheduler (default: dask's "
        "distributed.comm.timeouts.connect, 30)",
    )  # fmt: skip
    g.add_argument(
        "--scratch-dir", metavar="DIR",
        help="where large text inputs and realigned scores are staged for the workers; on a "
        "cluster of several hosts a directory they all share (default: the temporary folder, "
        "refused when workers run on other hosts)",
    )  # fmt: skip
    g.add_argument(
        "--worker-timeout", type=_positive_float, metavar="SECONDS",
        help="how long to wait for the first worker, and for any worker once all are lost "
        "mid-run on a cluster this program starts (default 600 for slurm/pbs, else 60); given "
        "with --scheduler/--scheduler-file, that scheduler also fails the run's tasks after it "
        "(for the run's duration, where its config sets no no-workers-timeout)",
    )  # fmt: skip


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
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"expected a positive finite number, got {text!r}")
    return value


def _job_memory(value: str) -> str:
    """A job's memory as dask-jobqueue takes it: bytes with a unit (``16GB``), checked here.

    >>> _job_memory("16GB")
    '16GB'
    >>> _job_memory("banana")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: invalid job memory 'banana': use bytes with a unit, e.g. 16GB
    """
    from dask.utils import parse_bytes

    try:
        ok = 2**20 <= parse_bytes(value) < math.inf
    except (ValueError, TypeError):
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(f"invalid job memory {value!r}: use bytes with a unit, "
                                         "e.g. 16GB")  # fmt: skip
    return value


def _memory_limit(value: str | int | float) -> str | int | float:
    """Validate a memory limit as distributed understands it; return it in its typed form."""
    from dask.utils import parse_bytes

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        ok = 0 < value <= 1 or 2**20 <= value < math.inf  # a fraction, or bytes
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
                    ok = 2**20 <= parse_bytes(text) < math.inf
                except ValueError:
                    ok = False
            else:  # a fraction of the machine's memory, or bytes (at least a mebibyte)
                ok = 0 < number <= 1 or 2**20 <= number < math.inf
                parsed = number if not ok or number <= 1 else int(number)
    else:
        ok = False
        parsed = value
    if not ok:
        message = (f"invalid memory limit {value!r}: use bytes (at least 1MiB), e.g. 4GB, a "
                   "fraction of the machine's memory in (0, 1], or 'auto'")  # fmt: skip
        raise argparse.ArgumentTypeError(message)
    return parsed
